"""The AppWrapper phase machine, step by step on a fake clock (AppWrapper's controller tests, as tables).

Each test drives ``PhaseMachine.reconcile`` against ``FakeCluster`` the way the controller does
(reconcile the stored object again after every write) and checks phase, conditions (type, status,
reason, message exactly as the AppWrapper operator writes them), requeue delays and API calls.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from appwrapper.faulttolerance import FaultTolerance
from appwrapper.model import (
    DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION,
    FAILURE_GRACE_PERIOD_ANNOTATION,
    FINALIZER,
    FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION,
    RETRY_LIMIT_ANNOTATION,
    RETRY_PAUSE_PERIOD_ANNOTATION,
    SUCCESS_TTL_ANNOTATION,
    TERMINAL_EXIT_CODES_ANNOTATION,
)
from appwrapper.phases import PhaseMachine
from shared.kube import Conflict, FakeClock, Invalid, NotFound, ServiceUnavailable
from tests.unit.appwrapper.fakes import (
    START,
    FakeCluster,
    RecordedEvents,
    appwrapper,
    batch_job,
    config_map,
    pod,
)

INFOS = [
    {
        "labels": {"kueue.x-k8s.io/podset": "aw-0"},
        "nodeSelector": {"instance-type": "spot"},
        "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
    }
]


class Harness:
    def __init__(self, aw: dict[str, Any], **cluster: Any) -> None:
        self.clock = FakeClock(wall_start=START)
        self.cluster = FakeCluster(aw=aw, **cluster)
        self.events = RecordedEvents()
        self.machine = self.new_machine()

    def new_machine(self) -> PhaseMachine:
        return PhaseMachine(
            port=self.cluster,
            events=self.events,
            config=FaultTolerance(),
            clock=self.clock.wall,
            on_phase=self.cluster.on_phase,
        )

    async def step(self) -> float | None:
        return await self.machine.reconcile(self.cluster.aw)

    async def until(self, phase: str, *, steps: int = 10) -> float | None:
        result = None
        for _ in range(steps):
            if self.cluster.phase == phase:
                return result
            result = await self.step()
        assert self.cluster.phase == phase, f"stuck in {self.cluster.phase!r}, wanted {phase!r}"
        return result

    async def advance(self, seconds: float) -> None:
        await self.clock.advance(seconds)

    def condition(self, condition_type: str) -> tuple[str, str, str] | None:
        found = self.cluster.condition(condition_type)
        return (found["status"], found["reason"], found["message"]) if found else None

    def admit(self, infos: list[dict[str, Any]] | None = None) -> None:
        spec = self.cluster.aw["spec"]
        spec["suspend"] = False
        for component, info in zip(spec["components"], [infos or INFOS, []], strict=False):
            if info:
                component["podSetInfos"] = info

    def suspend(self) -> None:
        spec = self.cluster.aw["spec"]
        spec["suspend"] = True
        for component in spec["components"]:
            component.pop("podSetInfos", None)

    async def running(self) -> None:
        self.admit()
        await self.until("Running")


def job_and_config(**annotations: str) -> dict[str, Any]:
    return appwrapper(batch_job(), config_map(), annotations=annotations or None)


# --- Empty / Suspended ---------------------------------------------------------------------------


async def test_empty_resolves_pod_sets_into_status_then_waits_suspended() -> None:
    h = Harness(job_and_config())
    assert await h.step() is None
    status = h.cluster.aw["status"]
    assert status["phase"] == "Suspended"
    assert status["componentStatus"] == [
        {
            "name": "",
            "kind": "",
            "apiVersion": "",
            "podSets": [
                {
                    "replicas": 2,
                    "path": "template.spec.template",
                    "annotations": {
                        "workload.codeflare.dev.appwrapper/tas-pod-index-label": "batch.kubernetes.io/job-completion-index"
                    },
                }
            ],
        },
        {"name": "", "kind": "", "apiVersion": "", "podSets": []},
    ]
    writes = len(h.cluster.writes)
    assert await h.step() is None  # still suspended: nothing to do
    assert len(h.cluster.writes) == writes
    assert h.cluster.phases == ["Suspended"]


async def test_declared_pod_sets_are_copied_as_declared() -> None:
    declared = [{"path": "template.spec.template", "replicas": 2}]
    h = Harness(appwrapper(batch_job(), podSets=declared))
    await h.step()
    assert h.cluster.aw["status"]["componentStatus"][0]["podSets"] == declared


@pytest.mark.parametrize(
    ("component", "named"),
    [
        (
            {"apiVersion": "v1", "metadata": {"name": "x"}},
            "spec.components[0].template: Object 'Kind' is missing",
        ),
        ({"kind": "Job"}, "spec.components[0].template: Object 'apiVersion' is missing"),
        (
            {**batch_job(), "spec": {"template": "nope"}},
            "spec.components[0].template: path 'template.spec.template' does not refer to a v1.PodSpecTemplate",
        ),
    ],
)
async def test_a_component_that_cannot_be_resolved_fails_naming_it(
    component: dict[str, Any], named: str
) -> None:
    h = Harness(appwrapper(component))
    await h.step()
    assert h.cluster.phase == "Failed"
    status, reason, message = h.condition("Unhealthy")  # type: ignore[misc]
    assert (status, reason) == ("True", "CreateFailed")
    assert message.startswith(f"error creating components: {named}")
    assert h.events.items[0][:2] == ("Normal", "Unhealthy")
    await h.step()  # Failed: nothing deployed, quota released, and it stays so
    assert h.condition("QuotaReserved") == ("False", "Failed", "No resources deployed")
    writes = len(h.cluster.writes)
    assert await h.step() is None
    assert len(h.cluster.writes) == writes


async def test_a_declared_path_that_does_not_exist_fails() -> None:
    h = Harness(appwrapper(config_map(), podSets=[{"path": "template.spec.template"}]))
    await h.step()
    assert h.cluster.phase == "Failed"
    assert "spec.components[0].template: path 'template.spec.template'" in h.condition("Unhealthy")[2]  # type: ignore[index]


async def test_unsuspend_adds_the_finalizer_first_then_sets_the_four_conditions() -> None:
    h = Harness(job_and_config())
    await h.step()
    h.admit()
    await h.step()
    assert h.cluster.writes[1] == ("set_finalizers", [FINALIZER])
    assert h.cluster.phase == "Resuming"
    for condition_type, status in (
        ("QuotaReserved", "True"),
        ("ResourcesDeployed", "True"),
        ("PodsReady", "False"),
        ("Unhealthy", "False"),
    ):
        assert h.condition(condition_type) == (status, "Resuming", "Suspend is false")


# --- Resuming ------------------------------------------------------------------------------------


async def test_resuming_creates_components_with_admission_data_owner_and_labels() -> None:
    h = Harness(job_and_config())
    await h.running()
    job = h.cluster.job()
    assert job["metadata"]["labels"] == {"workload.codeflare.dev/appwrapper": "aw"}
    assert job["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "workload.codeflare.dev/v1beta2",
            "kind": "AppWrapper",
            "name": "aw",
            "uid": "aw-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    template = job["spec"]["template"]
    assert template["metadata"]["labels"] == {
        "kueue.x-k8s.io/podset": "aw-0",
        "workload.codeflare.dev/appwrapper": "aw",
    }
    assert template["spec"]["nodeSelector"] == {"instance-type": "spot"}
    assert template["spec"]["tolerations"] == INFOS[0]["tolerations"]
    configmap = h.cluster.objects[("v1", "ConfigMap", "ns", "cfg")]
    assert configmap["metadata"]["labels"] == {"workload.codeflare.dev/appwrapper": "aw"}
    statuses = h.cluster.aw["status"]["componentStatus"]
    assert [(s["name"], s["kind"], s["apiVersion"]) for s in statuses] == [
        ("job", "Job", "batch/v1"),
        ("cfg", "ConfigMap", "v1"),
    ]
    assert [(c["status"], c["reason"]) for s in statuses for c in s["conditions"]] == [
        ("True", "ComponentCreatedSuccessfully"),
        ("True", "ComponentCreatedSuccessfully"),
    ]
    # the intent is recorded before each create
    kinds = [w[0] for w in h.cluster.writes]
    assert kinds[kinds.index("create") - 1] == "patch_status"
    assert h.cluster.phases == ["Suspended", "Resuming", "Running"]


async def test_resuming_aborts_when_suspended_again() -> None:
    h = Harness(job_and_config())
    await h.step()
    h.admit()
    await h.step()
    h.suspend()
    await h.step()
    assert h.cluster.phase == "Suspending"
    assert h.events.items == [("Normal", "Suspending", "Externally suspended while in the Resuming phase")]
    await h.step()
    assert h.cluster.phase == "Suspended"


async def test_an_event_is_recorded_once_its_status_is_written() -> None:
    """A pass whose status write loses a conflict records nothing: the retried pass makes the same
    decision and records its event once (recording before the write counted one failure twice)."""
    h = Harness(job_and_config())
    await h.step()
    h.admit()
    await h.step()
    h.suspend()
    h.cluster.status_error = Conflict(code=409, message="the object has been modified")
    with pytest.raises(Conflict):
        await h.step()
    assert h.cluster.phase == "Resuming"
    assert h.events.items == []
    await h.step()
    assert h.cluster.phase == "Suspending"
    assert h.events.items == [("Normal", "Suspending", "Externally suspended while in the Resuming phase")]


async def test_a_missing_crd_fails_at_once_naming_the_component() -> None:
    h = Harness(job_and_config(), served={("batch/v1", "Job")})
    h.admit()
    await h.until("Failed")
    status, reason, message = h.condition("Unhealthy")  # type: ignore[misc]
    assert (status, reason) == ("True", "CreateFailed")
    assert message.startswith(
        "error creating components: spec.components[1]: no resource is served for /v1, Kind=ConfigMap"
    )
    assert (
        h.cluster.aw["status"]["componentStatus"][1]["conditions"][0]["reason"] == "ComponentCreationErrored"
    )
    assert await h.step() == 5.0  # Failed deletes what was created; gone on the next look
    assert ("batch/v1", "Job", "ns", "job") not in h.cluster.objects
    await h.step()
    assert h.condition("ResourcesDeployed") == ("False", "Failed", "Resources deleted for failed AppWrapper")
    assert h.condition("QuotaReserved") == ("False", "Failed", "No resources deployed")


async def test_an_invalid_object_fails_at_once() -> None:
    h = Harness(job_and_config())
    h.cluster.create_errors["job"] = Invalid(code=422, message='Job.batch "job" is invalid: spec.x: bad')
    h.admit()
    await h.until("Failed")
    assert h.condition("Unhealthy")[2] == (  # type: ignore[index]
        'error creating components: spec.components[0]: Job.batch "job" is invalid: spec.x: bad'
    )


async def test_a_transient_create_error_is_retried_every_second_until_the_admission_grace_period() -> None:
    h = Harness(job_and_config())
    await h.step()
    h.admit()
    await h.step()
    h.cluster.create_errors["job"] = ServiceUnavailable(code=503, message="etcd is down")
    assert await h.step() == 1.0
    assert h.cluster.phase == "Resuming"
    await h.advance(61)
    h.cluster.create_errors["job"] = ServiceUnavailable(code=503, message="etcd is down")
    await h.step()
    assert h.cluster.phase == "Resetting"
    assert h.cluster.aw["status"]["resettingCount"] == 1
    assert h.condition("Unhealthy") == (
        "True",
        "CreateFailed",
        "error creating components: spec.components[0]: etcd is down",
    )


async def test_label_conflict_with_admission_data_is_fatal() -> None:
    job = batch_job()
    job["spec"]["template"]["metadata"] = {"labels": {"kueue.x-k8s.io/podset": "mine"}}
    h = Harness(appwrapper(job))
    h.admit()
    await h.until("Failed")
    assert h.condition("Unhealthy")[2] == (  # type: ignore[index]
        "error creating components: spec.components[0].template: conflict updating labels: "
        "conflict for key=kueue.x-k8s.io/podset, value1=mine, value2=aw-0"
    )


async def test_an_existing_object_not_controlled_by_the_appwrapper_is_fatal() -> None:
    h = Harness(job_and_config())
    h.cluster.objects[("batch/v1", "Job", "ns", "job")] = {**batch_job(), "metadata": {"name": "job"}}
    h.admit()
    await h.until("Failed")
    assert h.condition("Unhealthy")[2] == (  # type: ignore[index]
        "error creating components: spec.components[0]: resource job exists, but is not controlled by appwrapper"
    )


def _deletes(h: Harness) -> list[Any]:
    return [detail for verb, detail in h.cluster.writes if verb == "delete"]


async def test_a_same_named_object_of_someone_else_survives_the_failure_and_the_deletion() -> None:
    """AppWrapper's operator deletes such an object by name on the failure path; we never do."""
    h = Harness(job_and_config())
    users = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "uid": "users-uid"}}
    h.cluster.objects[("v1", "ConfigMap", "ns", "cfg")] = users
    h.admit()
    await h.until("Failed")
    assert h.condition("Unhealthy")[2] == (  # type: ignore[index]
        "error creating components: spec.components[1]: resource cfg exists, but is not controlled by appwrapper"
    )
    deployed = h.cluster.aw["status"]["componentStatus"][1]["conditions"][0]
    assert (deployed["type"], deployed["status"]) == ("ResourcesDeployed", "False")
    for _ in range(5):  # the failure path deletes what was deployed
        await h.step()
    assert h.condition("ResourcesDeployed")[:2] == ("False", "Failed")  # type: ignore[index]
    assert [d[:4] for d in _deletes(h)] == [("batch/v1", "Job", "ns", "job")]
    # and the AppWrapper's deletion does not touch the ConfigMap either
    h.cluster.aw["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    h.cluster.aw["metadata"]["finalizers"] = ["workload.codeflare.dev/finalizer"]
    for _ in range(5):
        await h.step()
    assert h.cluster.objects[("v1", "ConfigMap", "ns", "cfg")] is users
    assert all(d[:4] != ("v1", "ConfigMap", "ns", "cfg") for d in _deletes(h))


async def test_a_failed_appwrapper_is_one_warning_with_its_reason(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="appwrapper")
    h = Harness(job_and_config())
    h.cluster.objects[("v1", "ConfigMap", "ns", "cfg")] = {"metadata": {"name": "cfg", "uid": "u"}}
    h.admit()
    await h.until("Failed")
    for _ in range(5):
        await h.step()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "AppWrapper ns/aw failed: CreateFailed: error creating components: spec.components[1]: "
        "resource cfg exists, but is not controlled by appwrapper"
    ]


async def test_a_crash_record_naming_a_foreign_object_deletes_nothing() -> None:
    """``ResourcesDeployed=Unknown`` with a name (the create may or may not have happened) and, at that
    name, an object this AppWrapper does not control: the deletion leaves it alone."""
    h = Harness(job_and_config())
    await h.running()
    del h.cluster.objects[("v1", "ConfigMap", "ns", "cfg")]
    foreign = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "uid": "other"}}
    h.cluster.objects[("v1", "ConfigMap", "ns", "cfg")] = foreign
    h.cluster.aw["status"]["componentStatus"][1]["conditions"][0].update(status="Unknown")
    h.suspend()
    await h.until("Suspended")
    assert h.cluster.objects[("v1", "ConfigMap", "ns", "cfg")] is foreign
    assert [d[:4] for d in _deletes(h)] == [("batch/v1", "Job", "ns", "job")]


async def test_a_component_replaced_between_the_read_and_the_delete_is_not_deleted() -> None:
    """The delete carries the UID just read: an object put in its place meanwhile gets a Conflict."""
    h = Harness(job_and_config())
    await h.running()
    key = ("v1", "ConfigMap", "ns", "cfg")
    original_get = h.cluster.get
    replacement = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "uid": "other"}}

    async def get_then_replace(**where: str) -> dict[str, Any] | None:
        found = await original_get(**where)
        if where["kind"] == "ConfigMap":
            h.cluster.objects[key] = replacement
        return found

    h.cluster.get = get_then_replace  # type: ignore[method-assign]
    h.suspend()
    for _ in range(3):
        await h.step()
    assert h.cluster.phase == "Suspended", "the object at that name is not ours: ours is gone"
    assert h.cluster.objects[key] is replacement
    assert all(d[:4] != key for d in _deletes(h))


async def test_a_create_retried_after_a_crash_adopts_its_own_object() -> None:
    h = Harness(job_and_config())
    await h.running()
    # the controller crashed after the create, before recording it
    h.cluster.aw["status"]["componentStatus"][0]["conditions"][0].update(status="Unknown")
    h.cluster.aw["status"]["phase"] = "Resuming"
    await h.step()
    assert h.cluster.phase == "Running"
    assert (
        h.cluster.aw["status"]["componentStatus"][0]["conditions"][0]["reason"]
        == "ComponentCreatedSuccessfully"
    )


# --- Running -------------------------------------------------------------------------------------


async def test_ready_pods_make_pods_ready_and_a_minute_poll() -> None:
    h = Harness(job_and_config())
    await h.running()
    h.cluster.set_job_status({"active": 2, "ready": 2})
    assert await h.step() == 60.0
    assert h.condition("PodsReady") == ("True", "SufficientPodsReady", "2 pods running; 0 pods succeeded")


async def test_all_pods_succeeded_is_success_and_releases_quota_at_once() -> None:
    h = Harness(job_and_config())
    await h.running()
    h.cluster.set_job_status({"succeeded": 2, "ready": 0})
    await h.step()
    assert h.cluster.phase == "Succeeded"
    message = "2 pods succeeded and no running, pending, or failed pods"
    assert h.condition("QuotaReserved") == ("False", "Succeeded", message)
    assert h.condition("ResourcesDeployed") == ("True", "Succeeded", message)


@pytest.mark.parametrize(
    ("job_status", "grace", "details"),
    [
        ({}, 60, "0 pods pending; 0 pods running; 0 pods succeeded"),
        ({"active": 1, "ready": 0}, 60, "1 pods pending; 0 pods running; 0 pods succeeded"),
        ({"active": 2, "ready": 1}, 300, "1 pods pending; 1 pods running; 0 pods succeeded"),
    ],
)
async def test_too_few_ready_pods_reset_after_the_admission_or_warmup_grace_period(
    job_status: dict[str, Any], grace: int, details: str
) -> None:
    h = Harness(job_and_config())
    await h.running()
    h.cluster.set_job_status(job_status)
    await h.advance(grace - 1)
    assert await h.step() == 5.0
    assert h.cluster.phase == "Running"
    await h.advance(2)
    await h.step()
    assert h.cluster.phase == "Resetting"
    assert h.condition("Unhealthy") == ("True", "InsufficientPodsReady", details)
    assert ("Normal", "Unhealthy", f"InsufficientPodsReady: {details}") in h.events.items


async def test_not_ready_again_clears_pods_ready_with_the_counts() -> None:
    h = Harness(job_and_config())
    await h.running()
    h.cluster.set_job_status({"active": 2, "ready": 2})
    await h.step()
    h.cluster.set_job_status({"active": 2, "ready": 1})
    await h.step()
    assert h.condition("PodsReady") == (
        "False",
        "InsufficientPodsReady",
        "1 pods pending; 1 pods running; 0 pods succeeded",
    )


async def test_failed_pods_reset_after_the_failure_grace_period_measured_from_unhealthy() -> None:
    h = Harness(job_and_config())
    await h.running()
    h.cluster.set_job_status({"active": 2, "ready": 1, "failed": 1})
    assert await h.step() == 60.0
    assert h.condition("Unhealthy") == ("True", "FoundFailedPods", "")
    await h.advance(30)
    assert await h.step() == 30.0  # the transition time did not move
    await h.advance(31)
    await h.step()
    assert h.cluster.phase == "Resetting"
    assert ("Normal", "Unhealthy", "FoundFailedPods: 1 failed pods") in h.events.items


async def test_a_failed_component_resets_without_grace_and_fails_at_the_retry_limit() -> None:
    h = Harness(job_and_config(**{RETRY_LIMIT_ANNOTATION: "1", RETRY_PAUSE_PERIOD_ANNOTATION: "10s"}))
    await h.running()
    failed = {
        "failed": 2,
        "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}],
    }
    h.cluster.set_job_status(failed)
    await h.step()
    assert h.cluster.phase == "Resetting"
    assert h.condition("Unhealthy") == ("True", "FailedComponent", "Found 1 failed components")
    assert h.cluster.aw["status"]["resettingCount"] == 1
    # Resetting: components deleted (confirmed gone on the next look, as the operator does),
    # quota kept, then the pause measured from Unhealthy's transition
    assert await h.step() == 5.0
    assert h.condition("DeletingResources") == ("True", "DeletionInitiated", "")
    assert await h.step() == 10.0
    assert ("batch/v1", "Job", "ns", "job") not in h.cluster.objects
    assert h.condition("ResourcesDeployed") == (
        "False",
        "Resetting",
        "Resources deleted for resetting AppWrapper",
    )
    assert h.condition("QuotaReserved") == ("True", "Resuming", "Suspend is false")
    assert h.condition("DeletingResources") == ("False", "DeletionComplete", "")
    await h.advance(10)
    await h.step()
    assert h.cluster.phase == "Resuming"
    assert h.condition("ResourcesDeployed") == ("True", "Resuming", "Reset complete; resuming")
    await h.until("Running")
    assert (
        h.cluster.aw["status"]["componentStatus"][0]["conditions"][0]["reason"]
        == "ComponentCreatedSuccessfully"
    )
    h.cluster.set_job_status(failed)
    await h.step()
    assert h.cluster.phase == "Failed"  # resettingCount 1 is not below retryLimit 1
    await h.step()
    await h.step()
    assert h.condition("ResourcesDeployed") == ("False", "Failed", "Resources deleted for failed AppWrapper")
    assert h.condition("QuotaReserved") == ("False", "Failed", "No resources deployed")
    assert h.cluster.objects == {}


async def test_a_terminal_exit_code_fails_without_retry() -> None:
    h = Harness(job_and_config(**{TERMINAL_EXIT_CODES_ANNOTATION: "3,42"}))
    await h.running()
    uid = h.cluster.job()["metadata"]["uid"]
    h.cluster.pods.append(pod("p", "Failed", exit_code=42, owner_uid=uid))
    h.cluster.set_job_status({"failed": 1, "conditions": [{"type": "Failed", "status": "True"}]})
    await h.step()
    assert h.cluster.phase == "Failed"
    assert "resettingCount" not in h.cluster.aw["status"]


async def test_an_externally_deleted_component_fails_at_once() -> None:
    h = Harness(job_and_config())
    await h.running()
    del h.cluster.objects[("v1", "ConfigMap", "ns", "cfg")]
    await h.step()
    assert h.cluster.phase == "Failed"
    assert h.condition("Unhealthy") == (
        "True",
        "MissingComponent",
        "Only found 1 deployed components, but was expecting 2",
    )


async def test_labelled_pods_are_counted_by_phase() -> None:
    h = Harness(appwrapper(config_map(), podSets=[{"path": "template", "replicas": 2}]))
    h.cluster.aw["spec"]["components"][0]["template"] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    await h.running()
    h.cluster.pods += [pod("a", "Running"), pod("b", "Pending")]
    assert await h.step() == 5.0
    assert h.condition("PodsReady")[0] == "False"  # type: ignore[index]
    h.cluster.pods[1]["status"]["phase"] = "Running"
    assert await h.step() == 60.0


# --- Suspending ----------------------------------------------------------------------------------


async def test_preemption_deletes_the_components_then_suspends_and_resumes_later() -> None:
    h = Harness(job_and_config())
    await h.running()
    h.suspend()
    await h.step()
    assert h.cluster.phase == "Suspending"
    assert h.events.items[-1] == ("Normal", "Suspending", "Externally suspended while in the Running phase")
    assert await h.step() == 5.0
    await h.step()
    assert h.cluster.phase == "Suspended"
    assert h.cluster.objects == {}
    assert ("delete", ("batch/v1", "Job", "ns", "job", "Background", None)) in h.cluster.writes
    assert h.condition("ResourcesDeployed") == ("False", "Suspended", "Suspend is true")
    assert h.condition("QuotaReserved") == ("False", "Suspended", "Suspend is true")
    assert h.condition("PodsReady") == ("False", "Resuming", "Suspend is false")  # was not True: unchanged
    assert [c["reason"] for s in h.cluster.aw["status"]["componentStatus"] for c in s["conditions"]] == [
        "CompononetDeleted",
        "CompononetDeleted",
    ]
    h.admit()
    await h.until("Running")
    assert ("batch/v1", "Job", "ns", "job") in h.cluster.objects


async def test_slow_deletion_waits_then_forces_pods_then_components_after_the_grace_period() -> None:
    h = Harness(job_and_config(**{FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION: "30s"}), slow_deletions={"job"})
    await h.running()
    h.cluster.pods.append(pod("p", "Running"))
    h.suspend()
    await h.step()
    assert await h.step() == 5.0
    assert h.cluster.phase == "Suspending"
    assert h.condition("DeletingResources") == ("True", "DeletionInitiated", "")
    assert h.condition("ResourcesDeployed")[0] == "True"  # type: ignore[index]
    await h.advance(31)
    assert await h.step() == 5.0
    assert ("delete_pod", ("p", 0)) in h.cluster.writes
    assert await h.step() == 5.0  # pods gone: now the components, with grace period 0
    assert ("delete", ("batch/v1", "Job", "ns", "job", None, 0)) in h.cluster.writes
    await h.step()
    assert h.cluster.phase == "Suspended"
    assert h.condition("DeletingResources") == ("False", "DeletionComplete", "")


# --- Failed / Succeeded --------------------------------------------------------------------------


async def test_deletion_on_failure_grace_keeps_resources_unless_kueue_suspends() -> None:
    h = Harness(
        job_and_config(**{DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION: "2m", RETRY_LIMIT_ANNOTATION: "0"})
    )
    await h.running()
    h.cluster.set_job_status({"conditions": [{"type": "Failed", "status": "True"}]})
    await h.step()
    assert h.cluster.phase == "Failed"
    assert await h.step() == 120.0
    assert h.condition("DeletingResources") == (
        "False",
        "DeletionPaused",
        "workload.codeflare.dev.appwrapper/deletionOnFailureGracePeriodDuration has value 2m0s",
    )
    assert h.cluster.objects
    h.suspend()
    await h.step()
    await h.step()
    assert h.condition("ResourcesDeployed") == (
        "False",
        "Failed",
        "Kueue forced resource deletion by suspending AppWrapper",
    )


async def test_deletion_on_failure_grace_expires() -> None:
    h = Harness(
        job_and_config(**{DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION: "2m", RETRY_LIMIT_ANNOTATION: "0"})
    )
    await h.running()
    h.cluster.set_job_status({"conditions": [{"type": "Failed", "status": "True"}]})
    await h.step()
    await h.step()
    await h.advance(121)
    assert await h.step() == 5.0
    # deletion has begun: the pause is not entered again (the operator would wait a second time)
    assert await h.step() is None
    assert h.condition("ResourcesDeployed") == ("False", "Failed", "Resources deleted for failed AppWrapper")


async def test_success_ttl_then_resources_are_deleted() -> None:
    h = Harness(job_and_config(**{SUCCESS_TTL_ANNOTATION: "10s"}))
    await h.running()
    h.cluster.set_job_status({"succeeded": 2})
    await h.step()
    assert await h.step() == 10.0
    assert h.cluster.objects
    await h.advance(10)
    await h.step()
    assert h.cluster.objects == {}
    await h.step()
    assert h.condition("ResourcesDeployed") == (
        "False",
        "Succeeded",
        "Time to live after success of 10s expired",
    )
    assert await h.step() is None


# --- deletion, ownership, restarts ---------------------------------------------------------------


async def test_deleting_the_appwrapper_deletes_components_before_dropping_the_finalizer() -> None:
    h = Harness(job_and_config(), slow_deletions={"job"})
    await h.running()
    h.cluster.aw["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    assert await h.step() == 5.0
    assert h.cluster.phase == "Terminating"
    assert h.cluster.aw["metadata"]["finalizers"] == [FINALIZER]
    del h.cluster.objects[("batch/v1", "Job", "ns", "job")]  # its own finalizer is gone now
    await h.step()
    assert h.cluster.aw["metadata"]["finalizers"] == []
    assert h.condition("ResourcesDeployed") == ("False", "Terminating", "Resources successfully deleted")
    assert h.condition("QuotaReserved") == ("False", "Terminating", "No resources deployed")


async def test_an_appwrapper_gone_before_its_finalizer_is_dropped_ends_quietly() -> None:
    h = Harness(job_and_config())
    await h.running()
    h.cluster.aw["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    h.cluster.objects.clear()  # components already gone
    h.cluster.finalizer_error = NotFound(code=404, message='appwrappers "aw" not found')
    assert await h.step() is None  # done, not an error to retry
    assert h.cluster.finalizer_error is None  # the write was attempted


async def test_a_never_admitted_appwrapper_is_deleted_without_finalizer_work() -> None:
    h = Harness(job_and_config())
    await h.step()
    h.cluster.aw["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    writes = len(h.cluster.writes)
    assert await h.step() is None
    assert len(h.cluster.writes) == writes


async def test_an_appwrapper_managed_by_another_controller_is_left_alone() -> None:
    h = Harness(job_and_config())
    h.cluster.aw["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    assert await h.step() is None
    assert h.cluster.writes == []


async def test_a_restarted_controller_keeps_the_stored_deadlines() -> None:
    h = Harness(job_and_config(**{FAILURE_GRACE_PERIOD_ANNOTATION: "90s"}))
    await h.running()
    h.cluster.set_job_status({"active": 2, "failed": 1})
    assert await h.step() == 90.0
    await h.advance(50)
    h.machine = h.new_machine()  # a new process (or leader): nothing in memory
    assert await h.step() == 40.0
    await h.advance(40)
    await h.step()
    assert h.cluster.phase == "Resetting"


async def test_retry_pause_is_measured_from_the_stored_unhealthy_transition() -> None:
    h = Harness(job_and_config(**{RETRY_PAUSE_PERIOD_ANNOTATION: "90s"}))
    await h.running()
    h.cluster.set_job_status({"conditions": [{"type": "Failed", "status": "True"}]})
    await h.step()
    await h.step()  # the components are gone
    await h.advance(80)
    h.machine = h.new_machine()
    assert await h.step() == 10.0
