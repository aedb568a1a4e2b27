"""kube-apiserver's own table columns for the built-in kinds the devcluster serves.

Each printer mirrors ``pkg/printers/internalversion/printers.go``: the same column names, types,
formats and priorities, and the same cell values computed from the object. The server prints as
``-o wide`` always does (``GenerateOptions{Wide: true}``): every column is sent, and kubectl hides
those of priority > 0 unless asked for ``-o wide``. Ages are ``HumanDuration`` of now minus the
timestamp (``shared.kube.times.human_duration``).

Kinds and their columns (priority-1 columns in brackets):

* Namespace: Name, Status, Age. ConfigMap: Name, Data, Age. Secret: Name, Type, Data, Age.
  ServiceAccount: Name, Secrets, Age. Lease: Name, Holder, Age.
* Job: Name, Status (Complete, Failed, Terminating, Suspended, FailureTarget or Running),
  Completions (``1/2``, ``0/1 of 3``), Duration, Age, [Containers, Images, Selector].
* Event (core and events.k8s.io, one printer as in kube): Last Seen, Type, Reason, Object
  (``kind/name``, lower-cased kind), [Subobject, Source], Message, [First Seen, Count, Name].
* Pod: Name, Ready, Status, Restarts, Age, [IP, Node, Nominated Node, Readiness Gates]; nothing runs
  pods here, so Status is the phase (or reason, or Terminating) and restarts never carry a time.
* PriorityClass: Name, Value, Global-Default, Age, PreemptionPolicy. Mutating- and
  ValidatingWebhookConfiguration: Name, Webhooks, Age. CustomResourceDefinition (and any kind
  without a printer): kube's default table, Name and Created At (RFC 3339).

Column descriptions: those of ObjectMeta, Event and the literal ones of printers.go are kube's;
the other swagger-derived descriptions are shortened (kubectl never shows them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from shared.kube.conditions import is_condition_true
from shared.kube.times import age_since, format_time, human_duration, parse_time

__all__ = [
    "AGE_DESCRIPTION",
    "NAME_DESCRIPTION",
    "PRINTERS",
    "Printer",
    "age",
    "column",
    "default_printer",
    "format_label_selector",
]

NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name automatically. "
    "Name is primarily intended for creation idempotence and configuration definition. Cannot be "
    "updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
AGE_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is "
    "not guaranteed to be set in happens-before order across separate operations. Clients may not set "
    "this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. "
    "Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_CONTAINERS = "Names of each container in the template."
_IMAGES = "Images referenced by each container in the template."

Cells = Callable[[Mapping[str, Any], datetime], list[Any]]


def column(
    name: str, type_: str, description: str, *, priority: int = 0, format_: str = ""
) -> dict[str, Any]:
    """A ``metav1.TableColumnDefinition`` (every field is always present in kube's JSON)."""
    return {"name": name, "type": type_, "format": format_, "description": description, "priority": priority}


_NAME = column("Name", "string", NAME_DESCRIPTION, format_="name")
_AGE = column("Age", "string", AGE_DESCRIPTION)


class Printer:
    """Column definitions and the function computing one object's cells."""

    __slots__ = ("cells", "columns")

    def __init__(self, columns: list[dict[str, Any]], cells: Cells) -> None:
        self.columns = columns
        self.cells = cells


# --- time ----------------------------------------------------------------------------------------


def age(value: Any, now: datetime) -> str:
    """``translateTimestampSince``: ``<unknown>`` without a timestamp."""
    return age_since(value, now=now)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _created(obj: Mapping[str, Any], now: datetime) -> str:
    return age(_meta(obj).get("creationTimestamp"), now)


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")


# --- label selectors (metav1.FormatLabelSelector) ------------------------------------------------


def format_label_selector(selector: Any) -> str:
    if not isinstance(selector, Mapping):
        return "<none>"
    requirements: list[tuple[str, str]] = []
    for key, value in sorted(_dict(selector.get("matchLabels")).items()):
        requirements.append((str(key), f"{key}={value}"))
    for expression in _list(selector.get("matchExpressions")):
        if not isinstance(expression, Mapping):
            return "<error>"
        key, operator = str(expression.get("key", "")), expression.get("operator")
        values = ",".join(sorted(str(v) for v in _list(expression.get("values"))))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(str(operator))
        if text is None:
            return "<error>"
        requirements.append((key, text))
    requirements.sort(key=lambda item: item[0])
    return ",".join(text for _, text in requirements) or "<none>"


def _containers(template_spec: Mapping[str, Any]) -> tuple[str, str]:
    containers = [c for c in _list(template_spec.get("containers")) if isinstance(c, Mapping)]
    return (
        ",".join(str(c.get("name") or "") for c in containers),
        ",".join(str(c.get("image") or "") for c in containers),
    )


# --- the printers --------------------------------------------------------------------------------


def _namespace(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    return [_name(obj), str(_dict(obj.get("status")).get("phase") or ""), _created(obj, now)]


def _configmap(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    count = len(_dict(obj.get("data"))) + len(_dict(obj.get("binaryData")))
    return [_name(obj), count, _created(obj, now)]


def _secret(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    keys = set(_dict(obj.get("data"))) | set(_dict(obj.get("stringData")))
    return [_name(obj), str(obj.get("type") or ""), len(keys), _created(obj, now)]


def _service_account(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    return [_name(obj), len(_list(obj.get("secrets"))), _created(obj, now)]


def _lease(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    return [_name(obj), str(_dict(obj.get("spec")).get("holderIdentity") or ""), _created(obj, now)]


def _job(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    succeeded = _int(status.get("succeeded"))
    if isinstance(spec.get("completions"), int):
        completions = f"{succeeded}/{spec['completions']}"
    else:
        parallelism = _int(spec.get("parallelism"))
        completions = f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"
    started, completed = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    duration = ""
    if started is not None:
        duration = human_duration(((completed or now) - started).total_seconds())
    if is_condition_true(status.get("conditions"), "Complete"):
        state = "Complete"
    elif is_condition_true(status.get("conditions"), "Failed"):
        state = "Failed"
    elif _meta(obj).get("deletionTimestamp"):
        state = "Terminating"
    elif is_condition_true(status.get("conditions"), "Suspended"):
        state = "Suspended"
    elif is_condition_true(status.get("conditions"), "FailureTarget"):
        state = "FailureTarget"
    else:
        state = "Running"
    names, images = _containers(_dict(_dict(spec.get("template")).get("spec")))
    selector = format_label_selector(spec.get("selector"))
    return [_name(obj), state, completions, duration, _created(obj, now), names, images, selector]


def _event(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    first = age(obj.get("firstTimestamp"), now)
    if parse_time(obj.get("firstTimestamp")) is None:
        first = age(obj.get("eventTime"), now)
    last = age(obj.get("lastTimestamp"), now) if parse_time(obj.get("lastTimestamp")) else first
    count = _int(obj.get("count"))
    series = obj.get("series")
    if isinstance(series, Mapping):
        last = age(series.get("lastObservedTime"), now)
        count = _int(series.get("count"))
    elif count == 0:
        count = 1  # singleton events of the new API carry no count
    involved = _dict(obj.get("involvedObject"))
    kind, name = str(involved.get("kind") or "").lower(), str(involved.get("name") or "")
    target = f"{kind}/{name}" if name else kind
    source = _dict(obj.get("source"))
    component = str(source.get("component") or obj.get("reportingComponent") or "")
    instance = str(source.get("host") or obj.get("reportingInstance") or "")
    return [
        last,
        str(obj.get("type") or ""),
        str(obj.get("reason") or ""),
        target,
        str(involved.get("fieldPath") or ""),
        f"{component}, {instance}" if instance else component,
        str(obj.get("message") or "").strip(),
        first,
        count,
        _name(obj),
    ]


def _pod(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    containers = _list(spec.get("containers"))
    statuses = [s for s in _list(status.get("containerStatuses")) if isinstance(s, Mapping)]
    ready = sum(1 for s in statuses if s.get("ready") is True)
    restarts = sum(_int(s.get("restartCount")) for s in statuses)
    reason = str(status.get("reason") or status.get("phase") or "")
    if _meta(obj).get("deletionTimestamp"):
        reason = "Terminating"
    gates = _list(spec.get("readinessGates"))
    return [
        _name(obj),
        f"{ready}/{len(containers)}",
        reason,
        str(restarts),
        _created(obj, now),
        str(status.get("podIP") or "<none>"),
        str(spec.get("nodeName") or "<none>"),
        str(status.get("nominatedNodeName") or "<none>"),
        f"0/{len(gates)}" if gates else "<none>",
    ]


def _priority_class(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    return [
        _name(obj),
        _int(obj.get("value")),
        obj.get("globalDefault") is True,
        _created(obj, now),
        str(obj.get("preemptionPolicy") or ""),
    ]


def _webhook_configuration(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    return [_name(obj), len(_list(obj.get("webhooks"))), _created(obj, now)]


def _default_cells(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    created = parse_time(_meta(obj).get("creationTimestamp"))
    return [_name(obj), format_time(created) if created else None]


_WEBHOOKS = Printer(
    [
        _NAME,
        column(
            "Webhooks",
            "integer",
            "Webhooks indicates the number of webhooks registered in this configuration",
        ),
        _AGE,
    ],
    _webhook_configuration,
)
_EVENT_DOC = {
    "lastTimestamp": "The time at which the most recent occurrence of this event was recorded.",
    "type": "Type of this event (Normal, Warning), new types could be added in the future",
    "reason": (
        "This should be a short, machine understandable string that gives the reason for the "
        "transition into the object's current status."
    ),
    "involvedObject": "The object that this event is about.",
    "source": "The component reporting this event. Should be a short machine understandable string.",
    "message": "A human-readable description of the status of this operation.",
    "firstTimestamp": "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
    "count": "The number of times this event has occurred.",
}
_FIELD_PATH_DOC = (
    "If referring to a piece of an object instead of an entire object, this string should contain a valid "
    "JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object "
    'reference is to a container within a pod, this would take on a value like: "spec.containers{name}" '
    '(where "name" refers to the name of the container that triggered the event) or if no container name is '
    'specified "spec.containers[2]" (container with index 2 in this pod). This syntax is chosen only to have '
    "some well-defined way of referencing a part of an object."
)

#: (group, plural) of the stored resource -> its printer
PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "namespaces"): Printer(
        [_NAME, column("Status", "string", "The status of the namespace"), _AGE], _namespace
    ),
    ("", "configmaps"): Printer(
        [_NAME, column("Data", "string", "Data contains the configuration data."), _AGE], _configmap
    ),
    ("", "secrets"): Printer(
        [
            _NAME,
            column("Type", "string", "Used to facilitate programmatic handling of secret data."),
            column("Data", "string", "Data contains the secret data."),
            _AGE,
        ],
        _secret,
    ),
    ("", "serviceaccounts"): Printer(
        [_NAME, column("Secrets", "string", "Secrets of the service account."), _AGE], _service_account
    ),
    ("coordination.k8s.io", "leases"): Printer(
        [
            _NAME,
            column(
                "Holder", "string", "holderIdentity contains the identity of the holder of a current lease."
            ),
            _AGE,
        ],
        _lease,
    ),
    ("batch", "jobs"): Printer(
        [
            _NAME,
            column("Status", "string", "Status of the job."),
            column("Completions", "string", "The number of pods which reached phase Succeeded."),
            column("Duration", "string", "Time required to complete the job."),
            _AGE,
            column("Containers", "string", _CONTAINERS, priority=1),
            column("Images", "string", _IMAGES, priority=1),
            column(
                "Selector", "string", "A label query over pods that should match the pod count.", priority=1
            ),
        ],
        _job,
    ),
    ("", "events"): Printer(
        [
            column("Last Seen", "string", _EVENT_DOC["lastTimestamp"]),
            column("Type", "string", _EVENT_DOC["type"]),
            column("Reason", "string", _EVENT_DOC["reason"]),
            column("Object", "string", _EVENT_DOC["involvedObject"]),
            column("Subobject", "string", _FIELD_PATH_DOC, priority=1),
            column("Source", "string", _EVENT_DOC["source"], priority=1),
            column("Message", "string", _EVENT_DOC["message"]),
            column("First Seen", "string", _EVENT_DOC["firstTimestamp"], priority=1),
            column("Count", "string", _EVENT_DOC["count"], priority=1),
            column("Name", "string", NAME_DESCRIPTION, priority=1, format_="name"),
        ],
        _event,
    ),
    ("", "pods"): Printer(
        [
            _NAME,
            column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
            column("Status", "string", "The aggregate status of the containers in this pod."),
            column(
                "Restarts",
                "string",
                "The number of times the containers in this pod have been restarted and when the last "
                "container in this pod has restarted.",
            ),
            _AGE,
            column("IP", "string", "IP address allocated to the pod.", priority=1),
            column("Node", "string", "The name of the node the pod is scheduled to.", priority=1),
            column("Nominated Node", "string", "The node the pod is nominated to run on.", priority=1),
            column("Readiness Gates", "string", "The pod's readiness gates.", priority=1),
        ],
        _pod,
    ),
    ("scheduling.k8s.io", "priorityclasses"): Printer(
        [
            _NAME,
            column("Value", "integer", "The value of this priority class."),
            column("Global-Default", "boolean", "Whether this priority class is the cluster's default."),
            _AGE,
            column("PreemptionPolicy", "string", "The policy for preempting pods with lower priority."),
        ],
        _priority_class,
    ),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): _WEBHOOKS,
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): _WEBHOOKS,
}


def default_printer() -> Printer:
    """``rest.NewDefaultTableConvertor``: Name and Created At (CRDs and kinds without a printer)."""
    return Printer([_NAME, column("Created At", "date", AGE_DESCRIPTION)], _default_cells)
