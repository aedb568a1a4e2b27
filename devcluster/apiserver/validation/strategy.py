"""Built-in decoding, defaulting and strategy steps, and the dispatch to per-kind validation.

kube-apiserver decodes every write into Go types, defaults it (``SetDefaults_*`` in
``pkg/apis/*/v1``) and then runs the kind's strategy (``PrepareForCreate``). Code under test reads
fields such as ``spec.suspend`` or ``spec.template.metadata.labels["batch.kubernetes.io/controller-uid"]``
back from the server and would misbehave against the devcluster if we skipped them, so the Job, Pod
and pod-template defaults are reproduced field by field (checked against a create response captured
from a real server). Decoding into Go types drops empty maps and lists (:mod:`.empty_collections`;
for custom resources only in ``metadata``, which is coerced through ``ObjectMeta``): a merge patch
removing the last label leaves no ``labels`` at all.
The Job strategy generates the selector and template labels without overriding ones the user set
(validation then rejects a conflict). Everything here mutates the dict it is given, which the
caller owns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from devcluster.apiserver.errors import Cause
from devcluster.apiserver.validation.empty_collections import drop_empty_collections
from devcluster.apiserver.validation.event import validate_event
from devcluster.apiserver.validation.job import (
    CONTROLLER_UID_LABEL,
    JOB_KEY,
    JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
    validate_job_create,
    validate_job_update,
)
from devcluster.apiserver.validation.job_status import validate_job_status_update
from devcluster.apiserver.validation.pod import validate_pod
from devcluster.apiserver.validation.webhook_configuration import validate_webhook_configuration

__all__ = ["apply_defaults", "drop_empty_collections", "prepare_create", "validate_kind"]

EVENT_KEY = ("", "events")
_WEBHOOK_CONFIGURATION_KEYS = frozenset(
    {
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    }
)


def _default_container(container: dict[str, Any]) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    if "imagePullPolicy" not in container:
        image = str(container.get("image", ""))
        tag = image.rsplit("/", 1)[-1]
        if "@" in tag:
            container["imagePullPolicy"] = "IfNotPresent"
        elif ":" not in tag or tag.endswith(":latest"):
            container["imagePullPolicy"] = "Always"
        else:
            container["imagePullPolicy"] = "IfNotPresent"
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in container.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")


def default_pod_spec(spec: dict[str, Any]) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                _default_container(container)


def _default_job(job: dict[str, Any]) -> None:
    spec = job.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault(
        "podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    )
    spec.setdefault("manualSelector", False)
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        default_pod_spec(template["spec"])


def _default_pod(pod: dict[str, Any]) -> None:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    default_pod_spec(spec)
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.setdefault("tolerations", [])
    if isinstance(tolerations, list):
        present = {t.get("key") for t in tolerations if isinstance(t, dict)}
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            if key not in present:
                tolerations.append(
                    {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
                )


def _default_namespace(namespace: dict[str, Any]) -> None:
    meta = namespace["metadata"]
    name = meta.get("name")
    if name:
        meta.setdefault("labels", {})
        if isinstance(meta["labels"], dict):
            meta["labels"]["kubernetes.io/metadata.name"] = name
    spec = namespace.setdefault("spec", {})
    if isinstance(spec, dict):
        spec.setdefault("finalizers", ["kubernetes"])


def _default_webhooks(config: dict[str, Any], *, mutating: bool) -> None:
    for hook in config.get("webhooks") or []:
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", 10)
        if mutating:
            hook.setdefault("reinvocationPolicy", "Never")
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")
        service = (hook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)


def _default_crd(crd: dict[str, Any]) -> None:
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("conversion", {"strategy": "None"})
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")


_DEFAULTERS: dict[tuple[str, str], Callable[[dict[str, Any]], None]] = {
    ("batch", "jobs"): _default_job,
    ("", "pods"): _default_pod,
    ("", "namespaces"): _default_namespace,
    ("", "secrets"): lambda obj: obj.setdefault("type", "Opaque") and None,
    ("scheduling.k8s.io", "priorityclasses"): lambda obj: (
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority") and None
    ),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): lambda obj: _default_webhooks(
        obj, mutating=True
    ),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): lambda obj: _default_webhooks(
        obj, mutating=False
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"): _default_crd,
}


def apply_defaults(key: tuple[str, str], obj: dict[str, Any], *, builtin: bool) -> None:
    """Decoding and defaulting applied to every write body (create, update, patch result)."""
    drop_empty_collections(key, obj, builtin=builtin)
    defaulter = _DEFAULTERS.get(key)
    if defaulter is not None:
        defaulter(obj)


def _qos_class(spec: dict[str, Any]) -> str:
    requests_seen = limits_equal = False
    all_guaranteed = True
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {} if isinstance(container, dict) else {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        if requests or limits:
            requests_seen = True
        limits_equal = bool(limits) and all(requests.get(k, v) == v for k, v in limits.items())
        if not (limits_equal and {"cpu", "memory"} <= set(limits)):
            all_guaranteed = False
    if not requests_seen:
        return "BestEffort"
    return "Guaranteed" if all_guaranteed else "Burstable"


def _generate_job_selector(spec: dict[str, Any], *, uid: str, name: str) -> None:
    """``generateSelector``: add the pod labels and the controller-uid selector; keep what is set."""
    template = spec.setdefault("template", {})
    if isinstance(template, dict):
        if not isinstance(template.get("metadata"), dict):
            template["metadata"] = {}
        if not isinstance(template["metadata"].get("labels"), dict):
            template["metadata"]["labels"] = {}
        labels = template["metadata"]["labels"]
        for label in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
            labels.setdefault(label, name)
        for label in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
            labels.setdefault(label, uid)
    selector = spec.setdefault("selector", {})
    if selector is None:
        selector = spec["selector"] = {}
    if isinstance(selector, dict):
        if selector.get("matchLabels") is None:
            selector["matchLabels"] = {}
        if isinstance(selector["matchLabels"], dict):
            selector["matchLabels"].setdefault(CONTROLLER_UID_LABEL, uid)


def prepare_create(key: tuple[str, str], obj: dict[str, Any]) -> None:
    """Strategy ``PrepareForCreate``: fields the server owns at creation (uid already set)."""
    meta = obj["metadata"]
    if key == JOB_KEY:
        spec = obj.get("spec")
        if isinstance(spec, dict) and spec.get("manualSelector") is not True:
            _generate_job_selector(spec, uid=meta["uid"], name=meta.get("name") or "")
        obj["status"] = {}
    elif key == ("", "pods"):
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec or {})}
    elif key == ("", "namespaces"):
        obj["status"] = {"phase": "Active"}


def validate_kind(
    key: tuple[str, str],
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    *,
    subresource: str = "",
    served_group: str = "",
) -> list[Cause]:
    """The kind's strategy validation (metadata excepted): create, update, or a ``/status`` write;
    ``served_group`` is the API group the request came through."""
    if key == EVENT_KEY:
        return validate_event(obj, old, served_group=served_group)
    if key == JOB_KEY:
        if old is None:
            return validate_job_create(obj)
        if subresource == "status":
            return validate_job_status_update(obj, old)
        return validate_job_update(obj, old)
    if key == ("", "pods") and subresource != "status":
        return validate_pod(obj, old)
    if key in _WEBHOOK_CONFIGURATION_KEYS:
        return validate_webhook_configuration(obj)
    return []
