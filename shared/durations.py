"""Go duration strings (``"1m30s"``, ``"15m"``, ``"500ms"``) <-> ``datetime.timedelta``.

Kueue's configuration stores every duration as a ``metav1.Duration``, i.e. Go's
``time.ParseDuration`` syntax on input and ``time.Duration.String()`` on output. Python's standard
library has neither, so this module implements both, exactly enough that a value written by Kueue's
tooling reads back identically and a value we print (``config validate``) reads back in Kueue.

Invariants:

* **Grammar** is Go's: an optional sign, then one or more ``<decimal><unit>`` terms, units ``ns``,
  ``us`` (also ``µs``/``μs``), ``ms``, ``s``, ``m``, ``h``; ``"0"`` alone is allowed, nothing else
  unit-less. Whitespace is not allowed anywhere (Go rejects it too).
* **Exact arithmetic.** Terms are summed as integer nanoseconds (``Fraction`` for the fractional
  part), so ``"0.1s" + "0.2s"`` is exactly 300ms. Values outside Go's int64 nanosecond range are
  rejected, as Go does ("invalid duration").
* **No silent precision loss.** ``timedelta`` resolves microseconds; a value with a non-zero
  sub-microsecond remainder (``"1500ns"``) is an error rather than being rounded.
* ``format_go_duration`` is Go's ``Duration.String``: ``"0s"``, ``"1h0m0s"``, ``"1m30s"``,
  ``"1.5s"``, ``"500ms"``, ``"250µs"``; negative values carry a leading ``-``.
"""

from __future__ import annotations

import re
from datetime import timedelta
from fractions import Fraction
from typing import Final

__all__ = ["DurationError", "format_go_duration", "parse_go_duration"]

_NANOS_PER_UNIT: Final[dict[str, int]] = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek small letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_MAX_NANOS: Final = 2**63 - 1  # Go's time.Duration is an int64 of nanoseconds
_NANOS_PER_MICRO: Final = 1_000
_TERM = re.compile(r"(?P<whole>[0-9]*)(?:\.(?P<frac>[0-9]*))?(?P<unit>[^0-9.]*)")


class DurationError(ValueError):
    """The text is not a Go duration; the message quotes it and says what is wrong."""


def _parse_nanos(text: str) -> int:
    if not text:
        raise DurationError('invalid duration "": empty string')
    body = text
    negative = False
    if body[0] in "+-":
        negative = body[0] == "-"
        body = body[1:]
    if body == "0":
        return 0
    if not body:
        raise DurationError(f'invalid duration "{text}"')
    total = Fraction(0)
    position = 0
    while position < len(body):
        match = _TERM.match(body, position)
        if match is None or match.end() == position:  # pragma: no cover - the pattern always matches
            raise DurationError(f'invalid duration "{text}"')
        whole, frac, unit = match.group("whole"), match.group("frac"), match.group("unit")
        if not whole and not frac:
            raise DurationError(f'invalid duration "{text}": expected a number at offset {position}')
        if not unit:
            raise DurationError(f'missing unit in duration "{text}"')
        if unit not in _NANOS_PER_UNIT:
            raise DurationError(
                f'unknown unit "{unit}" in duration "{text}" (use ns, us, \u00b5s, ms, s, m or h)'
            )
        number = Fraction(int(whole or "0"))
        if frac:
            number += Fraction(int(frac), 10 ** len(frac))
        total += number * _NANOS_PER_UNIT[unit]
        if total > _MAX_NANOS:
            raise DurationError(f'invalid duration "{text}": out of range')
        position = match.end()
    nanos = int(total)  # Go truncates fractional nanoseconds
    return -nanos if negative else nanos


def parse_go_duration(text: str) -> timedelta:
    """Parse Go's ``time.ParseDuration`` syntax; raises ``DurationError`` (a ``ValueError``)."""
    nanos = _parse_nanos(text)
    micros, remainder = divmod(abs(nanos), _NANOS_PER_MICRO)
    if remainder:
        raise DurationError(f'duration "{text}" is finer than a microsecond, which is not supported')
    return timedelta(microseconds=-micros if nanos < 0 else micros)


def _format_fraction(value: int, digits: int) -> str:
    """``value`` scaled down by ``10**digits`` as Go prints it: no trailing zeros, no bare point."""
    whole, frac = divmod(value, 10**digits)
    if frac == 0:
        return str(whole)
    return f"{whole}.{str(frac).rjust(digits, '0').rstrip('0')}"


def format_go_duration(value: timedelta) -> str:
    """Go's ``time.Duration.String()`` for a ``timedelta`` (microsecond resolution)."""
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if micros < 0 else ""
    nanos = abs(micros) * _NANOS_PER_MICRO
    if nanos == 0:
        return "0s"
    if nanos < 1_000:  # pragma: no cover - timedelta cannot hold fewer than 1000ns
        return f"{sign}{nanos}ns"
    if nanos < 1_000_000:
        return f"{sign}{_format_fraction(nanos, 3)}\u00b5s"
    if nanos < 1_000_000_000:
        return f"{sign}{_format_fraction(nanos, 6)}ms"
    hours, rest = divmod(nanos, _NANOS_PER_UNIT["h"])
    minutes, rest = divmod(rest, _NANOS_PER_UNIT["m"])
    seconds = _format_fraction(rest, 9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return f"{sign}{seconds}"
