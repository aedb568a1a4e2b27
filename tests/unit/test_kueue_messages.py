"""Every user-visible message of the webhook and the reconciler, pinned to Kueue's text in one place.

Each row names where Kueue (ff69552) or the library it relies on produces the expected string; the
text must be Kueue's byte for byte, including quoting, the ``field.Error`` rendering
(``<path>: <Type>: <bad value>: <detail>``, several errors as ``[a, b]``) and, for denials, the
``status.code``/``status.reason`` controller-runtime puts around it:

* ``admission.Denied(err.Error())`` (a plain error or a ``field.ErrorList.ToAggregate()``):
  code 403, reason ``Forbidden``;
* an error wrapping an API StatusError (``errors.As(err, &apiStatus)`` in ``defaulter_custom.go``):
  that Status as is (the cached client's NotFound: 404 ``NotFound`` with ``details``);
* ``admission.Errored(400, err)`` (the object cannot be decoded): code 400, no reason.

Rows marked ``OURS`` have no Kueue equivalent (Kueue decodes into Go structs first; we read the raw
object) and deliberately keep our own wording.

Paths below: ``jobframework/`` is ``pkg/controller/jobframework/``, ``jobs/job/`` is
``pkg/controller/jobs/job/``; ``cr:`` is sigs.k8s.io/controller-runtime v0.24, ``am:`` is
k8s.io/apimachinery v0.36.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from reconciler.ancestry import OwnerKinds
from reconciler.event_reporting import kueue_controller_name
from reconciler.job_reconciler import JobReconciler, ReconcilerSettings
from reconciler.workload_sync import NoMatchingWorkloadsError, PrebuiltWorkloadNotFoundError
from shared.constants import (
    ADMISSION_GATED_BY_ANNOTATION,
    ELASTIC_JOB_ANNOTATION,
    JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION,
    JOB_MIN_PARALLELISM_ANNOTATION,
    MAX_EXEC_TIME_SECONDS_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    QUEUE_LABEL,
    WORKLOAD_PRIORITY_CLASS_LABEL,
    Reason,
)
from shared.kube import GroupVersionKind
from shared.kube.events import Reporter
from shared.labelselector import LabelSelector
from shared.workload_state import truncate_condition_message, truncate_event_message
from tests.unit.reconciler.conftest import Adapters, FakeClock, admit, golden_job, job_key, set_condition
from tests.unit.reconciler.fakes import FakeCluster
from tests.unit.webhook.helpers import BATCH_JOB, job, review
from webhook.rules.lookups import InMemoryLookups
from webhook.rules.settings import Framework, WebhookSettings
from webhook.serving.admission_review import AdmissionHandler
from webhook.serving.metrics import WebhookMetrics

# A CRD kind Kueue has no built-in integration for (the batch adapter reads it; only the GVK matters)
OTHER = Framework(
    name="Widget.v1.example.com",
    gvk=GroupVersionKind("example.com", "v1", "Widget"),
    plural="widgets",
    adapter=BATCH_JOB.adapter,
)
JOBSET = ("jobset.x-k8s.io/v1alpha2", "JobSet")
APPWRAPPER = ("workload.codeflare.dev/v1beta2", "AppWrapper")

Q = f"metadata.labels[{QUEUE_LABEL}]"
MAX_EXEC = f"metadata.labels[{MAX_EXEC_TIME_SECONDS_LABEL}]"
WPC = f"metadata.labels[{WORKLOAD_PRIORITY_CLASS_LABEL}]"
PREBUILT_LABEL = f"metadata.labels[{PREBUILT_WORKLOAD_LABEL}]"
PREBUILT_ANNOTATION = f"metadata.annotations[{PREBUILT_WORKLOAD_LABEL}]"
ELASTIC = f"metadata.annotations[{ELASTIC_JOB_ANNOTATION}]"
GATES = f"metadata.annotations[{ADMISSION_GATED_BY_ANNOTATION}]"
MIN_PAR = f"metadata.annotations[{JOB_MIN_PARALLELISM_ANNOTATION}]"
SYNC = f"metadata.annotations[{JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION}]"
SUBDOMAIN_ERROR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def forbidden(message: str) -> dict[str, Any]:
    """``admission.Denied(message)`` (cr: webhook/admission/response.go ``ValidationResponse``)."""
    return {"code": 403, "reason": "Forbidden", "message": message}


def not_found(message: str, **details: str) -> dict[str, Any]:
    """``apierrors.NewNotFound(...).Status()`` passed through by ``validationResponseFromStatus``."""
    return {"status": "Failure", "message": message, "reason": "NotFound", "details": details, "code": 404}


def errored_400(message: str) -> dict[str, Any]:
    """``admission.Errored(http.StatusBadRequest, err)``: code and message only."""
    return {"code": 400, "message": message}


def labelled(obj: dict[str, Any], **labels: str) -> dict[str, Any]:
    obj["metadata"].setdefault("labels", {}).update(labels)
    return obj


def annotated(obj: dict[str, Any], **annotations: str) -> dict[str, Any]:
    obj["metadata"].setdefault("annotations", {}).update(annotations)
    return obj


def owned_by(obj: dict[str, Any], owner: tuple[str, str], name: str, uid: str) -> dict[str, Any]:
    api_version, kind = owner
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}
    ]
    return obj


def owner_object(owner: tuple[str, str], name: str, uid: str) -> dict[str, Any]:
    api_version, kind = owner
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "uid": uid},
    }


def queued(name: str = "j", **labels: str) -> dict[str, Any]:
    return job(name, labels={QUEUE_LABEL: "q", **labels})


@dataclass
class Case:
    id: str
    webhook: str  # "mutate" | "validate"
    obj: dict[str, Any] | None
    expected: dict[str, Any]
    old: dict[str, Any] | None = None
    operation: str = "CREATE"
    framework: Framework = BATCH_JOB
    owners: list[dict[str, Any]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    default_local_queue: bool = False


def chain_of_jobs(length: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A queued job whose controller chain is ``length`` existing Jobs long."""
    child = owned_by(queued("j0"), ("batch/v1", "Job"), "j1", "u1")
    child["metadata"]["uid"] = "u0"
    owners = []
    for index in range(1, length + 1):
        parent = owner_object(("batch/v1", "Job"), f"j{index}", f"u{index}")
        if index < length:
            owned_by(parent, ("batch/v1", "Job"), f"j{index + 1}", f"u{index + 1}")
        owners.append(parent)
    return child, owners


def cyclic() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    child = owned_by(queued("j"), JOBSET, "a", "ua")
    a = owned_by(owner_object(JOBSET, "a", "ua"), JOBSET, "b", "ub")
    b = owned_by(owner_object(JOBSET, "b", "ub"), JOBSET, "a", "ua")
    return child, [a, b]


DEEP_CHILD, DEEP_OWNERS = chain_of_jobs(12)
CYCLIC_CHILD, CYCLIC_OWNERS = cyclic()
NS_SELECTOR = LabelSelector.model_validate({"matchLabels": {"team": "a"}})


def running(obj: dict[str, Any]) -> dict[str, Any]:
    obj["spec"]["suspend"] = False
    return obj


def suspended(obj: dict[str, Any]) -> dict[str, Any]:
    obj["spec"]["suspend"] = True
    return obj


CASES = [
    # --- defaulting denials: jobframework/reconciler.go FindAncestorJobManagedByKueue via
    # utils.go WorkloadShouldBeSuspended, cr: cache/internal/cache_reader.go Get (NotFound with the
    # Kind as resource) and webhook/admission/defaulter_custom.go Handle (errors.As -> Status)
    Case(
        "owner-not-found",
        "mutate",
        owned_by(queued(), ("batch/v1", "Job"), "ghost", "g"),
        not_found('Job.batch "ghost" not found', name="ghost", group="batch", kind="Job"),
    ),
    Case(
        "owner-of-owner-not-found",
        "mutate",
        owned_by(queued(), JOBSET, "js", "ujs"),
        not_found(
            'AppWrapper.workload.codeflare.dev "aw" not found',
            name="aw",
            group="workload.codeflare.dev",
            kind="AppWrapper",
        ),
        owners=[owned_by(owner_object(JOBSET, "js", "ujs"), APPWRAPPER, "aw", "uaw")],
    ),
    Case(
        "unmanaged-known-owner-not-found",  # ReplicaSet: PartialObjectMetadata through the cache
        "mutate",
        owned_by(queued(), ("apps/v1", "ReplicaSet"), "rs", "urs"),
        not_found('ReplicaSet.apps "rs" not found', name="rs", group="apps", kind="ReplicaSet"),
    ),
    Case(
        "owner-name-quoted-like-go",  # %q in apierrors.NewNotFound
        "mutate",
        owned_by(queued(), ("batch/v1", "Job"), 'a"b\x01', "g"),
        not_found('Job.batch "a\\"b\\x01" not found', name='a"b\x01', group="batch", kind="Job"),
    ),
    Case(
        "cyclic-ownership",  # reconciler.go ErrCyclicOwnership -> admission.Denied
        "mutate",
        CYCLIC_CHILD,
        forbidden("cyclic ownership"),
        owners=CYCLIC_OWNERS,
    ),
    Case(
        "chain-too-deep",  # reconciler.go ErrManagedOwnersChainLimitReached (managedOwnersChainLimit 10)
        "mutate",
        DEEP_CHILD,
        forbidden("managed owner chain limit reached"),
        owners=DEEP_OWNERS,
    ),
    Case(
        "namespace-not-found",  # utils.go namespaceMatchesSelector: "failed to get namespace: %w"
        "mutate",
        job(),
        not_found('Namespace "ns" not found', name="ns", kind="Namespace"),
        settings={"manage_jobs_without_queue_name": True, "managed_jobs_namespace_selector": NS_SELECTOR},
    ),
    # --- decode failures: cr: webhook/admission/validator_custom.go Handle -> Errored(400)
    Case(
        "update-without-old-object",  # cr: webhook/admission/decode.go DecodeRaw
        "validate",
        job(),
        errored_400("there is no content to decode"),
        operation="UPDATE",
    ),
    Case(
        "malformed-labels",  # OURS: Kueue answers Go's JSON decoder error text; we name the field
        "validate",
        job(labels={"a": 1}),
        errored_400("metadata.labels[a]: Invalid value: null: must be a string"),
    ),
    Case(
        "malformed-suspend",  # OURS, as above
        "validate",
        job(suspend="yes"),
        errored_400("spec.suspend: expected a boolean, got string"),
    ),
    # --- create: jobframework/validation.go ValidateJobOnCreate
    Case(
        "queue-name-not-a-subdomain",  # ValidateQueueName / ValidateLabelAsCRDName
        "validate",
        job(labels={QUEUE_LABEL: "Bad_Q"}),
        forbidden(f'{Q}: Invalid value: "Bad_Q": {SUBDOMAIN_ERROR}'),
    ),
    Case(
        "prebuilt-annotation-not-a-subdomain",  # ValidatePrebuiltWorkloadName (WorkloadIdentifierAnnotations)
        "validate",
        annotated(job(), **{PREBUILT_WORKLOAD_LABEL: "Not_Valid"}),
        forbidden(f'{PREBUILT_ANNOTATION}: Invalid value: "Not_Valid": {SUBDOMAIN_ERROR}'),
    ),
    Case(
        "prebuilt-not-supported",  # validateCreateForPrebuiltWorkload: %q of GroupVersionKind.String()
        "validate",
        job(labels={PREBUILT_WORKLOAD_LABEL: "wl"}),
        forbidden(f'{PREBUILT_LABEL}: Forbidden: Is not supported for "example.com/v1, Kind=Widget"'),
        framework=OTHER,
    ),
    Case(
        "max-exec-time-not-an-int",  # validateCreateForMaxExecTime: strconv.Atoi's error
        "validate",
        job(labels={MAX_EXEC_TIME_SECONDS_LABEL: "ten"}),
        forbidden(f'{MAX_EXEC}: Invalid value: "ten": strconv.Atoi: parsing "ten": invalid syntax'),
    ),
    Case(
        "max-exec-time-out-of-range",
        "validate",
        job(labels={MAX_EXEC_TIME_SECONDS_LABEL: "99999999999999999999"}),
        forbidden(
            f'{MAX_EXEC}: Invalid value: "99999999999999999999": '
            'strconv.Atoi: parsing "99999999999999999999": value out of range'
        ),
    ),
    Case(
        "max-exec-time-not-positive",  # the bad value is the parsed int: %v
        "validate",
        job(labels={MAX_EXEC_TIME_SECONDS_LABEL: "-5"}),
        forbidden(f"{MAX_EXEC}: Invalid value: -5: should be greater than 0"),
    ),
    Case(
        "elastic-not-supported",  # ValidateElasticJobAnnotation
        "validate",
        annotated(job(), **{ELASTIC_JOB_ANNOTATION: "true"}),
        forbidden(f'{ELASTIC}: Forbidden: elastic job is not supported for "example.com/v1, Kind=Widget"'),
        framework=OTHER,
    ),
    # pkg/util/webhook/validation_admissiongatedby.go validateAdmissionGatedByAnnotationFormat
    Case(
        "gates-empty-name",
        "validate",
        annotated(job(), **{ADMISSION_GATED_BY_ANNOTATION: "a.io/x,,b.io/y"}),
        forbidden(f'{GATES}: Invalid value: "a.io/x,,b.io/y": cannot contain empty gate names'),
    ),
    Case(
        "gates-duplicate-and-not-a-path",  # two errors: ToAggregate's "[a, b]"
        "validate",
        annotated(job(), **{ADMISSION_GATED_BY_ANNOTATION: "a.io/x, a.io/x,nope"}),
        forbidden(
            f'[{GATES}: Invalid value: "a.io/x, a.io/x,nope": duplicate gate name: a.io/x, '
            f'{GATES}: Invalid value: "nope": must be a domain-prefixed path (such as "acme.io/foo")]'
        ),
    ),
    Case(
        "gates-too-long",  # field.TooLong: no bad value
        "validate",
        annotated(job(), **{ADMISSION_GATED_BY_ANNOTATION: "a.io/" + "x" * 60}),
        forbidden(f"{GATES}: Too long: may not be more than 63 bytes"),
    ),
    # --- update: jobframework/validation.go ValidateJobOnUpdate
    Case(
        "queue-name-immutable-while-running",  # apivalidation.ValidateImmutableField
        "validate",
        running(queued(**{QUEUE_LABEL: "other"})),
        forbidden(f'{Q}: Invalid value: "other": field is immutable'),
        old=running(queued()),
        operation="UPDATE",
    ),
    Case(
        "queue-name-removed-with-default-queue",  # validateUpdateForQueueName
        "validate",
        suspended(job()),
        forbidden(f'{Q}: Invalid value: "": queue-name must not be empty in namespace with default queue'),
        old=suspended(queued()),
        operation="UPDATE",
        default_local_queue=True,
    ),
    Case(
        "prebuilt-immutable-while-running",  # validateUpdateForPrebuiltWorkload
        "validate",
        running(job(labels={PREBUILT_WORKLOAD_LABEL: "b"})),
        forbidden(f'{PREBUILT_LABEL}: Invalid value: "b": field is immutable'),
        old=running(job(labels={PREBUILT_WORKLOAD_LABEL: "a"})),
        operation="UPDATE",
    ),
    Case(
        "max-exec-time-immutable-unless-suspended",  # validateUpdateForMaxExecTime
        "validate",
        running(job(labels={MAX_EXEC_TIME_SECONDS_LABEL: "20"})),
        forbidden(f'{MAX_EXEC}: Invalid value: "20": field is immutable'),
        old=running(job(labels={MAX_EXEC_TIME_SECONDS_LABEL: "10"})),
        operation="UPDATE",
    ),
    Case(
        "priority-class-added-while-running",  # ValidateUpdateForWorkloadPriorityClassName
        "validate",
        running(job(labels={WORKLOAD_PRIORITY_CLASS_LABEL: "high"})),
        forbidden(
            f'{WPC}: Invalid value: "high": WorkloadPriorityClass cannot be added to a non-suspended workload'
        ),
        old=running(job()),
        operation="UPDATE",
    ),
    Case(
        "priority-class-removed",
        "validate",
        suspended(job()),
        forbidden(f'{WPC}: Invalid value: "": WorkloadPriorityClass cannot be removed from a workload'),
        old=suspended(job(labels={WORKLOAD_PRIORITY_CLASS_LABEL: "high"})),
        operation="UPDATE",
    ),
    Case(
        "elastic-flag-immutable",  # validatedUpdateForEnabledWorkloadSlice: the bad value is a bool
        "validate",
        annotated(suspended(job()), **{ELASTIC_JOB_ANNOTATION: "true"}),
        forbidden(f"{ELASTIC}: Invalid value: true: field is immutable"),
        old=suspended(job()),
        operation="UPDATE",
    ),
    Case(
        "gate-added-after-creation",  # ValidateAdmissionGatedByAnnotationOnUpdate
        "validate",
        annotated(suspended(job()), **{ADMISSION_GATED_BY_ANNOTATION: "a.io/x"}),
        forbidden(f"{GATES}: Forbidden: cannot add admission gate after creation"),
        old=suspended(job()),
        operation="UPDATE",
    ),
    Case(
        "gate-swapped",
        "validate",
        annotated(suspended(job()), **{ADMISSION_GATED_BY_ANNOTATION: "b.io/y"}),
        forbidden(f"{GATES}: Forbidden: can only remove gates, not add new ones"),
        old=annotated(suspended(job()), **{ADMISSION_GATED_BY_ANNOTATION: "a.io/x"}),
        operation="UPDATE",
    ),
    Case(
        "managed-by-immutable",  # OURS for CRDs; batch Jobs get Kubernetes' identical text first
        "validate",
        suspended(job(managedBy="b.io/x")),
        forbidden('spec.managedBy: Invalid value: "b.io/x": field is immutable'),
        old=suspended(job(managedBy="a.io/x")),
        operation="UPDATE",
        framework=OTHER,
    ),
    # --- batch Job only: jobs/job/job_webhook.go
    Case(
        "min-parallelism-not-an-int",  # validatePartialAdmissionCreate
        "validate",
        annotated(job(parallelism=3), **{JOB_MIN_PARALLELISM_ANNOTATION: "x"}),
        forbidden(f'{MIN_PAR}: Invalid value: "x": strconv.Atoi: parsing "x": invalid syntax'),
    ),
    Case(
        "min-parallelism-out-of-range",
        "validate",
        annotated(job(parallelism=3, completions=3), **{JOB_MIN_PARALLELISM_ANNOTATION: "3"}),
        forbidden(f"{MIN_PAR}: Invalid value: 3: should be between 0 and 2"),
    ),
    Case(
        "min-parallelism-with-elastic",
        "validate",
        annotated(
            job(parallelism=3, completions=3),
            **{JOB_MIN_PARALLELISM_ANNOTATION: "1", ELASTIC_JOB_ANNOTATION: "true"},
        ),
        forbidden(
            f'{MIN_PAR}: Invalid value: "1": partial admission and elastic job cannot be used together'
        ),
    ),
    Case(
        "sync-completions-not-a-bool",  # validateSyncCompletionCreate: strconv.ParseBool's error
        "validate",
        annotated(job(), **{JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION: "yes"}),
        forbidden(f'{SYNC}: Invalid value: "yes": strconv.ParseBool: parsing "yes": invalid syntax'),
    ),
    Case(
        "sync-completions-non-indexed-and-unequal",  # completions is *int32: json.Marshal -> 3 / null
        "validate",
        annotated(
            job(parallelism=2, completions=3), **{JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION: "true"}
        ),
        forbidden(
            f'[{SYNC}: Invalid value: "true": should not be enabled for NonIndexed jobs, '
            f"spec.completions: Invalid value: 3: should be equal to parallelism when "
            f"{JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION} annotation is true]"
        ),
    ),
    Case(
        "parallelism-frozen-with-partial-admission",  # validatePartialAdmissionUpdate
        "validate",
        annotated(running(job(parallelism=4, completions=4)), **{JOB_MIN_PARALLELISM_ANNOTATION: "1"}),
        forbidden(
            "spec.parallelism: Forbidden: cannot change when partial admission is enabled and the job is not suspended"
        ),
        old=annotated(running(job(parallelism=3, completions=4)), **{JOB_MIN_PARALLELISM_ANNOTATION: "1"}),
        operation="UPDATE",
    ),
    Case(
        "sync-completions-immutable-while-running",
        "validate",
        annotated(
            running(job(completionMode="Indexed")), **{JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION: "true"}
        ),
        forbidden(f"{SYNC}: Forbidden: field is immutable while the job is not suspended"),
        old=running(job(completionMode="Indexed")),
        operation="UPDATE",
    ),
    Case(
        "batch-job-update-error-order",  # JobWebhook.validateUpdate: job create rules, then generic update
        "validate",
        annotated(
            running(job(labels={QUEUE_LABEL: "other"}, parallelism=3)),
            **{JOB_MIN_PARALLELISM_ANNOTATION: "7"},
        ),
        forbidden(
            f"[{MIN_PAR}: Invalid value: 7: should be between 0 and 0, "
            f'{Q}: Invalid value: "other": field is immutable]'
        ),
        old=running(queued()),
        operation="UPDATE",
    ),
]


def run_case(case: Case) -> dict[str, Any]:
    lookups = InMemoryLookups(local_queues={("ns", "default"): "cq"} if case.default_local_queue else {})
    for owner in case.owners:
        lookups.put_owner(owner)
    settings = WebhookSettings(
        frameworks=(BATCH_JOB, OTHER),
        extra_managed_owner_kinds=frozenset({JOBSET, APPWRAPPER}),
        **case.settings,
    )
    handler = AdmissionHandler(settings=settings, lookups=lookups, metrics=WebhookMetrics())
    gvk = case.framework.gvk
    body = review(case.obj, operation=case.operation, old=case.old, kind=(gvk.group, gvk.version, gvk.kind))
    status, payload = getattr(handler, case.webhook)(body)
    assert status == 200
    answer: dict[str, Any] = orjson.loads(payload)["response"]
    assert answer["allowed"] is False, answer
    return answer


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_denial_is_kueues(case: Case) -> None:
    answer = run_case(case)
    assert answer["status"] == case.expected
    assert "warnings" not in answer  # Kueue's job webhooks never warn


# --- the reconciler ------------------------------------------------------------------------------


def golden_job_events(golden_dir: Path) -> list[tuple[str, str, str, str]]:
    """(type, reason, action, note) of every event real Kueue recorded on the golden Job, in order."""
    items = yaml.safe_load((golden_dir / "events.yaml").read_text())["items"]
    on_job = sorted((e for e in items if e["involvedObject"]["kind"] == "Job"), key=lambda e: e["eventTime"])
    return [(e["type"], e["reason"], e["action"], e["message"]) for e in on_job]


def make_reconciler(cluster: FakeCluster) -> JobReconciler:
    kinds = {("batch/v1", "Job")}
    return JobReconciler(
        adapters=Adapters(),
        reader=cluster,
        writer=cluster,
        events=cluster,
        settings=ReconcilerSettings(owner_kinds=OwnerKinds(known=kinds, managed=kinds)),
        clock=FakeClock(),
    )


def golden_cluster() -> FakeCluster:
    cluster = FakeCluster()
    cluster.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "golden"}})
    cluster.add(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "golden-spot"},
            "spec": {"nodeLabels": {"instance-type": "spot"}},
        }
    )
    return cluster


@pytest.mark.needs_shared
async def test_job_events_of_the_golden_run_are_kueues(golden_dir: Path) -> None:
    """The golden run replayed (create, admit, deactivate, reactivate, complete): the Job's events are
    real Kueue's, in order (jobframework/reconciler.go: CreatedWorkload "Created Workload: %v",
    Started "Admitted by clusterQueue %v", Stopped with the eviction message, FinishedWorkload
    "Workload '%s' is declared finished"; the action is the reason). A repeat is one Event (series)."""
    cluster = golden_cluster()
    reconciler = make_reconciler(cluster)

    async def converge() -> None:
        for _ in range(6):
            await reconciler.reconcile(job_key())

    cluster.add(golden_job())
    await converge()
    workload = next(k[3] for k in cluster.objects if k[1] == "Workload")
    admit(cluster, workload)
    await converge()
    evicted = {
        "type": "Evicted",
        "status": "True",
        "reason": "Deactivated",
        "message": "The workload is deactivated",
    }
    set_condition(cluster, workload, evicted | {"lastTransitionTime": "2026-11-22T02:34:14Z"})
    await converge()
    set_condition(cluster, workload, evicted | {"status": "False", "reason": "QuotaReserved"})
    admit(cluster, workload)
    await converge()
    job_id = next(k for k in cluster.objects if k[1] == "Job")
    cluster.objects[job_id]["status"] = {
        "conditions": [
            {"type": "Complete", "status": "True", "message": "Reached expected number of succeeded pods"}
        ]
    }
    await converge()

    ours: list[tuple[str, str, str, str]] = []
    for event in cluster.events:
        entry = (event.event_type, event.reason, event.reason, event.message)
        if not ours or ours[-1] != entry:
            ours.append(entry)
    assert ours == golden_job_events(golden_dir)


TRUNCATION_CASES: list[tuple[str, Callable[[str], str], str, str]] = [
    # pkg/util/api/api.go truncateMessage: len() is bytes, the suffix is " ..."
    ("event-short", truncate_event_message, "x" * 1024, "x" * 1024),
    ("event-long", truncate_event_message, "x" * 1025, "x" * 1020 + " ..."),
    # a cut inside a 2-byte rune leaves one invalid byte: U+FFFD once Go's JSON encoder writes it
    ("event-multibyte", truncate_event_message, "x" + "é" * 600, "x" + "é" * 509 + "\ufffd" + " ..."),
    ("condition-long", truncate_condition_message, "y" * 40_000, "y" * (32 * 1024 - 4) + " ..."),
]


@pytest.mark.parametrize(
    ("truncate", "message", "expected"),
    [case[1:] for case in TRUNCATION_CASES],
    ids=[case[0] for case in TRUNCATION_CASES],
)
def test_truncation_is_kueues(truncate: Callable[[str], str], message: str, expected: str) -> None:
    assert truncate(message) == expected


# Reconciler scenarios whose events the golden run does not show; each returns the events recorded
# after its last step. Texts: jobframework/reconciler.go (function named per scenario).


async def converge(reconciler: JobReconciler, rounds: int = 6) -> None:
    for _ in range(rounds):
        await reconciler.reconcile(job_key())


async def started_golden_job(cluster: FakeCluster, reconciler: JobReconciler) -> str:
    cluster.add(golden_job())
    await converge(reconciler)
    workload = next(k[3] for k in cluster.objects if k[1] == "Workload")
    admit(cluster, workload)
    await converge(reconciler)
    return workload


async def workload_deleted(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    """ReconcileGenericJob step 1.1: stopJob(StopReasonWorkloadDeleted, "Workload is deleted")."""
    workload = await started_golden_job(cluster, reconciler)
    key = next(k for k in cluster.objects if k[1] == "Workload" and k[3] == workload)
    cluster.objects[key]["metadata"]["deletionTimestamp"] = "2026-11-22T02:35:00Z"
    cluster.events.clear()
    await reconciler.reconcile(job_key())


async def no_matching_workload(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    """ensureOneWorkload: stop with the one existing Workload's templates, then delete it."""
    await started_golden_job(cluster, reconciler)
    job_id = next(k for k in cluster.objects if k[1] == "Job")
    cluster.objects[job_id]["spec"]["parallelism"] = 3
    cluster.events.clear()
    with pytest.raises(NoMatchingWorkloadsError, match=r"^no matching workloads: deleted 1 workloads$"):
        await reconciler.reconcile(job_key())


async def pending_admission_checks(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    """recordAdmissionCheckUpdate: pending checks with a message, "; "-joined."""
    cluster.add(golden_job())
    await converge(reconciler)
    workload = next(k[3] for k in cluster.objects if k[1] == "Workload")
    admit(cluster, workload)
    key = next(k for k in cluster.objects if k[1] == "Workload")
    status = cluster.objects[key]["status"]
    status["conditions"] = [c for c in status["conditions"] if c["type"] != "Admitted"]
    status["admissionChecks"] = [
        {"name": "prov", "state": "Pending", "message": "waiting for capacity", "lastTransitionTime": "t"},
        {"name": "quiet", "state": "Pending", "message": "", "lastTransitionTime": "t"},
        {"name": "mk", "state": "Pending", "message": "dispatched", "lastTransitionTime": "t"},
        {"name": "done", "state": "Ready", "message": "ok", "lastTransitionTime": "t"},
    ]
    cluster.events.clear()
    await reconciler.reconcile(job_key())


async def prebuilt_workload_missing(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    """handleJobWithNoWorkload: stopJob(nil, StopReasonNoMatchingWorkload, "missing workload")."""
    obj = golden_job(suspend=False)
    obj["metadata"]["labels"][PREBUILT_WORKLOAD_LABEL] = "prebuilt"
    cluster.add(obj)
    with pytest.raises(PrebuiltWorkloadNotFoundError):
        await reconciler.reconcile(job_key())


async def admission_gate_removed(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    """UpdateAdmissionGatedBy / RecordAdmissionGatedByUpdateEvent: "Updated workload AdmissionGatedBy to %q"."""
    obj = golden_job()
    obj["metadata"]["annotations"] = {ADMISSION_GATED_BY_ANNOTATION: "a.io/x,b.io/y"}
    cluster.add(obj)
    await converge(reconciler)
    key = next(k for k in cluster.objects if k[1] == "Workload")
    assert cluster.objects[key]["metadata"]["annotations"][ADMISSION_GATED_BY_ANNOTATION] == "a.io/x,b.io/y"
    job_id = next(k for k in cluster.objects if k[1] == "Job")
    cluster.objects[job_id]["metadata"]["annotations"][ADMISSION_GATED_BY_ANNOTATION] = "b.io/y"
    cluster.events.clear()
    await converge(reconciler)
    assert cluster.objects[key]["metadata"]["annotations"][ADMISSION_GATED_BY_ANNOTATION] == "b.io/y"


RECONCILER_CASES: list[tuple[Callable[[FakeCluster, JobReconciler], Any], list[tuple[str, str, str]]]] = [
    (workload_deleted, [("Normal", "Stopped", "Workload is deleted")]),
    (
        no_matching_workload,
        [
            (
                "Normal",
                "Stopped",
                "No matching Workload; restoring pod templates according to existent Workload",
            ),
            ("Normal", "DeletedWorkload", "Deleted not matching Workload: golden/job-sample-43252"),
        ],
    ),
    (
        pending_admission_checks,
        [("Normal", "UpdatedAdmissionCheck", "prov: waiting for capacity; mk: dispatched")],
    ),
    (prebuilt_workload_missing, [("Normal", "Stopped", "missing workload")]),
    (
        admission_gate_removed,
        [("Normal", "UpdatedWorkload", 'Updated workload AdmissionGatedBy to "b.io/y"')],
    ),
]


@pytest.mark.parametrize(
    ("scenario", "expected"), RECONCILER_CASES, ids=[case[0].__name__ for case in RECONCILER_CASES]
)
async def test_reconciler_event_is_kueues(
    scenario: Callable[[FakeCluster, JobReconciler], Any], expected: list[tuple[str, str, str]]
) -> None:
    cluster = golden_cluster()
    await scenario(cluster, make_reconciler(cluster))
    assert [(e.event_type, e.reason, e.message) for e in cluster.events] == expected


# --- names the devcluster's Kueue stand-in and the reconciler's events carry -------------------------

#: apis/kueue/v1beta2/workload_types.go: QuotaReserved=False reasons with UnadmittedWorkloadsObservability
#: (pkg/features/kube_features.go: Beta, default true since 0.19); "Pending" / "Inadmissible" are the
#: deprecated ones written with the gate off.
QUOTA_RESERVED_FALSE_REASONS = [
    (Reason.WAITING_FOR_QUOTA, "WaitingForQuota"),  # scheduler.go: Preempt mode without targets, skipped
    (Reason.EXCEEDS_MAX_QUOTA, "ExceedsMaxQuota"),  # flavorassigner fitsResourceQuota: over max capacity
    (Reason.NO_MATCHING_FLAVOR, "NoMatchingFlavor"),  # resolveNoFitReason: no flavor attempt
    (Reason.WAITING_FOR_PREEMPTED_WORKLOADS, "WaitingForPreemptedWorkloads"),  # after issuePreemptions
    (Reason.MISCONFIGURED, "Misconfigured"),  # workload_controller getQueueBlocker: missing LQ/CQ
]


@pytest.mark.parametrize(("ours", "kueues"), QUOTA_RESERVED_FALSE_REASONS)
def test_quota_reserved_false_reasons_are_kueues(ours: str, kueues: str) -> None:
    assert ours == kueues


def test_job_events_are_reported_as_kueues_job_reconciler() -> None:
    """jobframework/setup.go: ``mgr.GetEventRecorder(fmt.Sprintf("%s-%s-controller", name,
    options.ManagerName))``, ManagerName ``kueue``; client-go NewRecorder: ``<controller>-<hostname>``."""
    assert kueue_controller_name("batch/job") == "batch/job-kueue-controller"
    assert Reporter.on_host(kueue_controller_name("batch/job"), host="vm") == Reporter(
        "batch/job-kueue-controller", "batch/job-kueue-controller-vm"
    )
