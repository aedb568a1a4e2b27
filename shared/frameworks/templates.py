"""Pod templates inside job objects: copying them into pod sets, and run/restore of admission data.

Every adapter whose pods come from ``PodTemplateSpec`` fields (batch Job, JobSet, the declarative
adapter) does the same three things, so they live here once:

* ``template_at`` reads a template and checks **its shape** (metadata/labels/annotations are maps,
  nodeSelector is a map, tolerations and schedulingGates are lists) so the podset merge/restore code
  never meets a ``str`` where it expects a ``dict``: a malformed template is an ``AdapterError`` naming
  the exact field.
* ``merge_infos`` / ``restore_infos`` pair pod-set infos **by position** with template paths, as Kueue
  does, and delegate the merge rules to ``shared.kueue.podset`` (no-conflict merge, exact restore).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shared.frameworks.base import AdapterError
from shared.frameworks.paths import FieldPath, describe_type
from shared.jsontree import json_tree_copy
from shared.kueue.podset import PodSetInfo, bad_pod_sets_info_len_error, merge_into_template, restore_template

__all__ = [
    "PodSetsAtTemplatePaths",
    "merge_infos",
    "restore_infos",
    "restore_pod_template",
    "template_at",
    "template_copy",
]

_MAP_FIELDS = (("metadata", "labels"), ("metadata", "annotations"), ("spec", "nodeSelector"))
_LIST_FIELDS = (("spec", "tolerations"), ("spec", "schedulingGates"))


def template_at(obj: dict[str, Any], path: FieldPath) -> dict[str, Any]:
    """The ``PodTemplateSpec`` dict at ``path`` (live, not a copy), shape-checked."""
    template = path.get_typed(obj, dict)
    for section in ("metadata", "spec"):
        value = template.get(section)
        if value is not None and not isinstance(value, dict):
            raise AdapterError(path.key(section).text, f"expected an object, got {describe_type(value)}")
    for section, name in _MAP_FIELDS:
        value = (template.get(section) or {}).get(name)
        if value is not None and not isinstance(value, dict):
            raise AdapterError(
                path.key(section).key(name).text, f"expected an object, got {describe_type(value)}"
            )
        for key, item in (value or {}).items():
            if not isinstance(item, str):
                raise AdapterError(
                    path.key(section).key(name).key(key).text, f"expected a string, got {describe_type(item)}"
                )
    for section, name in _LIST_FIELDS:
        value = (template.get(section) or {}).get(name)
        if value is not None and not isinstance(value, list):
            raise AdapterError(
                path.key(section).key(name).text, f"expected an array, got {describe_type(value)}"
            )
    return template


def template_copy(obj: dict[str, Any], path: FieldPath) -> dict[str, Any]:
    """A deep copy of the template at ``path``, for a Workload pod set.

    A copy is needed: callers strip labels from it, and pydantic's ``PodSet(template=...)`` keeps
    the nested dicts, which a later start (``merge_into_template`` on the job) would otherwise alter.
    """
    return json_tree_copy(template_at(obj, path))


def merge_infos(obj: dict[str, Any], paths: Sequence[FieldPath], infos: Sequence[PodSetInfo]) -> None:
    """Merge ``infos[i]`` into the template at ``paths[i]``; the counts must match exactly."""
    if len(infos) != len(paths):
        raise bad_pod_sets_info_len_error(want=len(paths), got=len(infos))
    templates = [template_at(obj, path) for path in paths]  # check every shape before writing any
    for template, info in zip(templates, infos, strict=True):
        merge_into_template(template, info)


def restore_pod_template(
    template: dict[str, Any], info: PodSetInfo, *, keep_labels: Sequence[str] = ()
) -> bool:
    """``restore_template``, plus: a ``metadata`` map that only admission data filled is removed again.

    A template written without ``metadata`` gets one when labels are merged in on start; dropping it
    when the restore empties it makes run-then-restore give back the exact original object.
    """
    metadata = template.get("metadata")
    had_metadata = bool(metadata)
    changed = restore_template(template, info, keep_labels=keep_labels)
    if had_metadata and template.get("metadata") == {}:
        del template["metadata"]
    return changed


def restore_infos(obj: dict[str, Any], paths: Sequence[FieldPath], infos: Sequence[PodSetInfo]) -> bool:
    """Restore each template from its info; a count mismatch changes nothing (Kueue logs and skips)."""
    if not infos or len(infos) != len(paths):
        return False
    templates = [template_at(obj, path) for path in paths]
    changed = False
    for template, info in zip(templates, infos, strict=True):
        changed = restore_pod_template(template, info) or changed
    return changed


class PodSetsAtTemplatePaths:
    """Kueue's ``RunWithPodSetsInfo`` / ``RestorePodSetsInfo`` for a kind whose pod sets are the
    templates at ``_template_paths()`` (JobSet, declarative adapters): unsuspend, then merge each
    info into its template; restore puts the templates back."""

    _obj: dict[str, Any]

    def _template_paths(self) -> list[FieldPath]:
        raise NotImplementedError

    def _unsuspend(self) -> None:
        raise NotImplementedError

    def run_with_pod_sets_info(self, infos: Sequence[PodSetInfo]) -> None:
        self._unsuspend()
        merge_infos(self._obj, self._template_paths(), infos)

    def restore_pod_sets_info(self, infos: Sequence[PodSetInfo]) -> bool:
        return restore_infos(self._obj, self._template_paths(), infos)
