"""``KIND/NAME`` arguments: which configured kind a user means, spelled the way kubectl accepts.

``kueue-bridge explain`` works for every kind the configuration manages (built-in frameworks and
declarative adapters), so the kind is looked up in the configuration's ``FrameworkRegistry``, not
in the API server's discovery: a kind kueue-bridge does not manage has nothing to explain, and the
error says which kinds it does manage.

Accepted spellings, case-insensitive: the kind (``job``, ``TrainingRun``), its plural (``jobs``),
``kind.group`` / ``plural.group`` (``job.batch``, ``trainingruns.ml.example.com``), Kueue's
``Kind.version.group`` (``Job.v1.batch``) and a built-in framework's name (``batch/job``). A short
spelling that two configured kinds share is an error asking for ``kind.group``.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.frameworks.registry import Framework, FrameworkRegistry

__all__ = ["KindError", "ObjectRef", "parse_object_ref", "resolve_kind", "spellings"]


class KindError(ValueError):
    """The argument names no configured kind, or more than one."""


@dataclass(frozen=True)
class ObjectRef:
    """A resolved ``KIND/NAME``: the configured framework of the kind and the object's name."""

    framework: Framework
    name: str


def spellings(framework: Framework) -> set[str]:
    """Every lower-case spelling that names ``framework`` (see the module docstring)."""
    kind, plural, group = framework.gvk.kind.lower(), framework.plural.lower(), framework.gvk.group.lower()
    names = {kind, plural, framework.gvk.kind_arg.lower(), framework.name.lower()}
    if group:
        names |= {f"{kind}.{group}", f"{plural}.{group}"}
    return names


def _known(registry: FrameworkRegistry) -> str:
    return ", ".join(sorted(framework.gvk.kind_arg for framework in registry))


def resolve_kind(text: str, registry: FrameworkRegistry) -> Framework:
    """The configured framework ``text`` names; ``KindError`` when none or several do."""
    wanted = text.strip().lower()
    matches = [framework for framework in registry if wanted in spellings(framework)]
    if not matches:
        raise KindError(
            f'kind "{text}" is not managed by this configuration (it manages: {_known(registry)})'
        )
    if len(matches) > 1:
        choices = ", ".join(sorted(f"{f.gvk.kind.lower()}.{f.gvk.group}" for f in matches))
        raise KindError(f'kind "{text}" is ambiguous: say one of {choices}')
    return matches[0]


def parse_object_ref(text: str, registry: FrameworkRegistry) -> ObjectRef:
    """``KIND/NAME`` (the kind may itself contain a slash: ``batch/job/hello``)."""
    kind, slash, name = text.rpartition("/")
    if not slash or not kind or not name:
        raise KindError(f'expected KIND/NAME (e.g. job/hello), got "{text}"')
    return ObjectRef(framework=resolve_kind(kind, registry), name=name)
