"""Generated and mutated AdmissionReviews for fuzzing ``/mutate`` and ``/validate``.

One generator serves both the property test (``tests/unit/webhook/test_admission_fuzz.py``, a bounded
number of examples in ``make test``) and the fuzz run (``tests/fuzz/webhook_fuzz.py``, 100,000 cases
against a webhook process), so what the test proves on a few hundred cases is what the fuzz run
hammers at scale.

A case starts from a **seed** (``tests.fuzz.admission_seeds.seed_reviews``: a well-formed AdmissionReview
for every kind the fuzz webhook serves and operation; callers may pass captured reviews instead,
e.g. the real one in ``../shared/fixtures``). Then up to a few **mutations**, each one of:

* the envelope: a top-level or ``request`` field replaced by a value of any JSON type (``operation``
  as a list, ``kind`` as a string, ``uid`` as a number, ...), set to null or removed;
* deep inside ``object``/``oldObject``: any node replaced by a value of the wrong type, null, a huge
  or odd string, removed, or a map turned into a list and back;
* metadata the rules read: labels and annotations under Kueue's own keys (queue-name, priority
  class, prebuilt workload, max-exec-time, elastic-job, admission-gated-by) and odd keys, with odd
  string or non-string values; ``ownerReferences`` with controller owners of every shape;
* the bytes: truncated, garbage appended, not JSON at all, another top-level JSON type.

What a correct answer is lives in ``tests.fuzz.admission_answers``; the webhook under test in
``tests.fuzz.admission_seeds.fuzz_handler``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson
from hypothesis import strategies as st

from shared.constants import (
    ADMISSION_GATED_BY_ANNOTATION,
    ELASTIC_JOB_ANNOTATION,
    MAX_EXEC_TIME_SECONDS_LABEL,
    PREBUILT_WORKLOAD_ANNOTATION,
    PREBUILT_WORKLOAD_LABEL,
    QUEUE_LABEL,
    WORKLOAD_PRIORITY_CLASS_LABEL,
)
from tests.fuzz.admission_seeds import seed_reviews

__all__ = ["Case", "cases"]


# --- values ---------------------------------------------------------------------------------------

_KUEUE_KEYS: Final = (
    QUEUE_LABEL,
    WORKLOAD_PRIORITY_CLASS_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    PREBUILT_WORKLOAD_ANNOTATION,
    MAX_EXEC_TIME_SECONDS_LABEL,
    ELASTIC_JOB_ANNOTATION,
    ADMISSION_GATED_BY_ANNOTATION,
)
_ODD_STRINGS: Final = (
    "",
    " ",
    "true",
    "false",
    "0",
    "-1",
    "+7",
    "2147483648",
    "99999999999999999999",
    "1e3",
    "a" * 63,
    "a" * 64,
    "a" * 254,
    "UPPER",
    "a/b",
    "a.io/b,a.io/b",
    " , ,",
    "a.io/" + "x" * 70,
    "kueue.x-k8s.io/multikueue",
    "default",
    "-leading",
    "trailing-",
    "\x00\x01\x7f",
    "\u2028\ud7ff\U0001f600",
    "caf\u00e9",
    "${x}",
    '"quoted"',
    "\\",
)
_SCALARS: Final = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)


#: built once: constructing strategies inside a draw costs more than drawing from them
_HUGE_STRINGS: Final = st.one_of(
    st.builds(
        lambda char, size: char * size, st.sampled_from("x\u00e9\U0001f600,/"), st.integers(1_000, 300_000)
    ),
    # lists of names (admission-gated-by): one repeated, or thousands each given twice
    st.builds(
        lambda name, size: ",".join([name] * size),
        st.sampled_from(("a.io/b", " ", "UP")),
        st.integers(1_000, 50_000),
    ),
    st.builds(lambda size: ",".join([f"a.io/g{i}" for i in range(size)] * 2), st.integers(1_000, 20_000)),
)
#: empty, numeric-looking, boundary-length, non-ASCII, control characters, huge
_ODD: Final = st.one_of(st.sampled_from(_ODD_STRINGS), st.text(max_size=80), _HUGE_STRINGS)
#: any JSON value, small containers included (what a wrong type looks like)
_JSON: Final = st.recursive(
    st.one_of(_SCALARS, _ODD),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(_KUEUE_KEYS), st.text(max_size=12)), children, max_size=4),
    ),
    max_leaves=8,
)
_OWNER_REFERENCE: Final = st.fixed_dictionaries(
    {},
    optional={
        "apiVersion": st.one_of(st.sampled_from(("batch/v1", "jobset.x-k8s.io/v1alpha2", "apps/v1")), _JSON),
        "kind": st.one_of(st.sampled_from(("Job", "JobSet", "ReplicaSet")), _JSON),
        "name": st.one_of(st.sampled_from(("owner", "missing")), _JSON),
        "uid": st.one_of(st.sampled_from(("owner-uid", "job-uid")), _JSON),
        "controller": st.one_of(st.just(True), _JSON),
    },
)
_LABEL_KEYS: Final = st.one_of(st.sampled_from(_KUEUE_KEYS), _ODD)
_LABEL_VALUES: Final = st.one_of(_ODD, _ODD, _JSON)
_VALUES: Final = {"value": _JSON, "null": st.none(), "huge": _HUGE_STRINGS, "odd": _ODD}


# --- mutations ------------------------------------------------------------------------------------

Path = tuple[str | int, ...]

_ENVELOPE_PATHS: Final[tuple[Path, ...]] = (
    ("request", "operation"),
    ("request", "object"),
    ("request", "oldObject"),
    ("request", "kind", "kind"),
    ("request", "kind", "group"),
    ("request", "kind", "version"),
    ("request", "uid"),
    ("request", "kind"),
    ("request", "namespace"),
    ("request", "dryRun"),
    ("request",),
    ("apiVersion",),
    ("kind",),
)


def _paths(node: Any, prefix: Path) -> list[Path]:
    """Every path to a node under ``prefix`` (containers and leaves), parents first."""
    found = [prefix]
    if isinstance(node, dict):
        for key, child in node.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found += _paths(child, (*prefix, index))
    return found


def _holds(node: Any, step: str | int) -> bool:
    """Whether ``node[step]`` exists (a key of a map, an index of a list)."""
    if isinstance(node, dict):
        return isinstance(step, str) and step in node
    return isinstance(node, list) and isinstance(step, int) and step < len(node)


def _parent(review: Any, path: Path) -> Any:
    node = review
    for step in path[:-1]:
        if not _holds(node, step):
            return None
        node = node[step]
    return node


def _set(review: Any, path: Path, value: Any) -> None:
    parent, last = _parent(review, path), path[-1]
    if _holds(parent, last) or (isinstance(parent, dict) and isinstance(last, str)):
        parent[last] = value


def _remove(review: Any, path: Path) -> None:
    parent, last = _parent(review, path), path[-1]
    if _holds(parent, last):
        del parent[last]


def _get(review: Any, path: Path) -> Any:
    parent, last = _parent(review, path), path[-1]
    return parent[last] if _holds(parent, last) else None


def _flipped(value: Any) -> Any:
    """A map as a list of its values, a list as a map of its indexes, a scalar in a list."""
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return {str(index): item for index, item in enumerate(value)}
    return [value]


@st.composite
def _mutated(draw: st.DrawFn, review: dict[str, Any]) -> dict[str, Any]:
    """Apply one mutation to ``review`` (in place) and return it."""
    where = draw(
        st.sampled_from(("deep", "metadata", "deep", "metadata", "deep", "metadata", "owner", "envelope"))
    )
    request = review.get("request")
    objects = [
        key
        for key in ("object", "oldObject")
        if isinstance(request, dict) and isinstance(request.get(key), dict)
    ]
    if where == "envelope" or not objects:
        path = draw(st.sampled_from(_ENVELOPE_PATHS))
    else:
        target: Path = ("request", draw(st.sampled_from(objects)))
        if where == "metadata":
            section = draw(st.sampled_from(("labels", "annotations")))
            key = draw(_LABEL_KEYS)
            metadata = _get(review, (*target, "metadata"))
            if isinstance(metadata, dict) and not isinstance(metadata.get(section), dict):
                metadata[section] = {}
            path = (*target, "metadata", section, key)
            _set(review, path, draw(_LABEL_VALUES))
            return review
        if where == "owner":
            reference = draw(_OWNER_REFERENCE)
            shape = draw(st.sampled_from(("list", "list", "bare", "other")))
            value = [reference] if shape == "list" else reference if shape == "bare" else draw(_JSON)
            _set(review, (*target, "metadata", "ownerReferences"), value)
            return review
        path = draw(st.sampled_from(_paths(_get(review, target), target)))
    action = draw(st.sampled_from(("value", "null", "remove", "huge", "odd", "flip")))
    if action == "remove":
        _remove(review, path)
    elif action == "flip":
        _set(review, path, _flipped(_get(review, path)))
    else:
        _set(review, path, draw(_VALUES[action]))
    return review


def _as_bytes(review: dict[str, Any]) -> bytes:
    return orjson.dumps(review)


@st.composite
def _raw_bytes(draw: st.DrawFn, body: bytes) -> bytes:
    """A body that is not a well-formed AdmissionReview at the byte level."""
    how = draw(st.sampled_from(("truncate", "append", "splice", "other-json", "binary")))
    if how == "truncate":
        return body[: draw(st.integers(0, max(0, len(body) - 1)))]
    if how == "append":
        return body + draw(st.binary(min_size=1, max_size=16))
    if how == "splice":
        at = draw(st.integers(0, len(body)))
        return body[:at] + draw(st.binary(min_size=1, max_size=8)) + body[at + 1 :]
    if how == "other-json":
        return orjson.dumps(draw(_JSON))
    return draw(st.binary(max_size=64))


_RAW_ONE_IN_20: Final = (False,) * 19 + (True,)


@dataclass(frozen=True)
class Case:
    """One request: the route, the body, and (for a reader of a failure) the review before bytes."""

    path: str
    body: bytes

    def __repr__(self) -> str:
        shown = self.body if len(self.body) <= 2000 else self.body[:2000] + b"...(%d bytes)" % len(self.body)
        return f"Case(path={self.path!r}, body={shown!r})"


@st.composite
def _case(draw: st.DrawFn, seeds: Sequence[dict[str, Any]]) -> Case:
    review = copy.deepcopy(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, 4))):
        review = draw(_mutated(review))
    body = _as_bytes(review)
    # hypothesis favours the first element and boundary integers: the rare branch goes last
    if draw(st.sampled_from(_RAW_ONE_IN_20)):
        body = draw(_raw_bytes(body))
    return Case(path=draw(st.sampled_from(("/mutate", "/validate"))), body=body)


def cases(*, seeds: Sequence[dict[str, Any]] | None = None) -> st.SearchStrategy[Case]:
    """Fuzz cases mutated from ``seeds`` (default: ``seed_reviews()``; e.g. a captured review)."""
    return _case(list(seed_reviews() if seeds is None else seeds))
