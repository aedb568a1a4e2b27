"""What kube-apiserver's Go types do to empty maps and lists of built-in kinds.

kube-apiserver decodes every write of a built-in kind into its Go struct, stores it as protobuf and
serves it by encoding the struct back to JSON. A map or slice that is empty, ``null`` or absent
comes out of that round trip nil, so (checked on a real 1.36.2 server):

* a field tagged ``omitempty`` (nearly all of them) disappears: a ConfigMap written with
  ``data: {}``, ``binaryData: {}`` and empty ``labels``/``annotations`` comes back with none of
  them; a pod template's ``nodeSelector: {}``, ``tolerations: []``, ``volumes: []``, a
  container's ``env: []``, ``args: []`` and ``resources.requests: {}`` are gone;
* a slice *without* ``omitempty`` is served as ``null``, given empty or not given at all: a Role's
  ``rules`` (``json:"rules"``), a Job's ``podFailurePolicy.rules`` -- the table below, per kind,
  from ``k8s.io/api`` (rbac/v1, batch/v1, core/v1, admissionregistration/v1);
* structs, pointer or not, stay: ``resources: {}``, ``securityContext: {}``, ``affinity: {}``,
  ``namespaceSelector: {}`` (after its ``matchLabels: {}`` is dropped) all survive.

JSON cannot tell a Go map from a struct, so the rule needs to know which fields are maps: in the
kinds the devcluster serves, the fields named in :data:`_MAP_FIELDS` are always string-keyed maps
(and every other object is a struct); their values are scalars and are left alone. A list is
always a Go slice. Opaque subtrees are not walked: ``managedFields`` (field sets, where ``{}``
means "this field") and a CRD's version ``schema`` (JSONSchemaProps, whose ``default``/``example``
are raw JSON). Custom resources are stored as the JSON they were written with, so only their
``metadata`` (coerced through ObjectMeta) loses empty maps and lists; ``{}`` in a custom
resource's ``spec`` survives on the real server too.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["drop_empty_collections"]

#: field names that are Go maps wherever they appear in the devcluster's built-in kinds
_MAP_FIELDS: Final = frozenset(
    {
        "labels",
        "annotations",
        "data",
        "binaryData",
        "stringData",
        "nodeSelector",
        "matchLabels",
        "requests",
        "limits",
        "overhead",
        "allocatedResources",
        "volumeAttributes",
        "capacity",
        "allocatable",
    }
)
#: subtrees decoded as opaque values, never walked
_OPAQUE_FIELDS: Final = frozenset({"managedFields", "schema", "fieldsV1"})

_POD_SPEC_NULLS: Final = (
    ("containers",),
    ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"),
)
_ROLE_NULLS: Final = (("rules",), ("rules", "*", "verbs"))
#: slices without ``omitempty`` (served as ``null`` when empty or absent), by (group, plural);
#: a path's ``*`` is every item of a list. CRDs are left out: empty ``versions`` is invalid anyway.
_NULL_WHEN_EMPTY: Final[dict[tuple[str, str], tuple[tuple[str, ...], ...]]] = {
    ("rbac.authorization.k8s.io", "roles"): _ROLE_NULLS,
    ("rbac.authorization.k8s.io", "clusterroles"): _ROLE_NULLS,
    ("batch", "jobs"): (
        ("spec", "podFailurePolicy", "rules"),
        ("spec", "podFailurePolicy", "rules", "*", "onExitCodes", "values"),
        ("spec", "successPolicy", "rules"),
        *(("spec", "template", "spec", *path) for path in _POD_SPEC_NULLS),
    ),
    ("", "pods"): tuple(("spec", *path) for path in _POD_SPEC_NULLS),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): (
        ("webhooks", "*", "admissionReviewVersions"),
    ),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): (
        ("webhooks", "*", "admissionReviewVersions"),
    ),
}


def _drop_in(struct: dict[str, Any]) -> None:
    """Drop the empty maps and lists of ``struct`` and of every struct under it."""
    for name in list(struct):
        value = struct[name]
        if name in _OPAQUE_FIELDS:
            continue
        if name in _MAP_FIELDS:
            if value is None or value == {}:
                del struct[name]
        elif isinstance(value, list):
            if not value:
                del struct[name]
                continue
            for item in value:
                if isinstance(item, dict):
                    _drop_in(item)
        elif isinstance(value, dict):
            _drop_in(value)


def _parents(node: Any, path: tuple[str, ...]) -> list[dict[str, Any]]:
    """The structs at ``path`` under ``node`` (``*`` fans out over list items)."""
    if not path:
        return [node] if isinstance(node, dict) else []
    head, rest = path[0], path[1:]
    if head == "*":
        items = node if isinstance(node, list) else []
        return [found for item in items for found in _parents(item, rest)]
    return _parents(node.get(head), rest) if isinstance(node, dict) else []


def drop_empty_collections(key: tuple[str, str], obj: dict[str, Any], *, builtin: bool) -> None:
    """What the Go round trip does to ``obj``'s empty maps and lists (module docstring).

    ``builtin``: a kind kube-apiserver compiles in; otherwise only ``metadata`` is touched.
    """
    if not builtin:
        if isinstance(obj.get("metadata"), dict):
            _drop_in(obj["metadata"])
        return
    _drop_in(obj)
    for path in _NULL_WHEN_EMPTY.get(key, ()):
        for parent in _parents(obj, path[:-1]):
            if not parent.get(path[-1]):
                parent[path[-1]] = None
