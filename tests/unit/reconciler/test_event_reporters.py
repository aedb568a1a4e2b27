"""The reconciler reports job events as Kueue's job reconciler for that kind would.

Kueue (ff69552) names the recorder of each framework's job reconciler
``fmt.Sprintf("%s-%s-controller", name, options.ManagerName)`` (jobframework/setup.go
``setupControllerAndWebhook``) with ``ManagerName`` ``kueue`` (cmd/kueue/main.go); client-go's
``NewRecorder`` makes the instance ``<controller>-<hostname>``. The golden events
(``../shared/fixtures/real-kueue/events.yaml``) show ``batch/job-kueue-controller`` /
``batch/job-kueue-controller-vm`` for a batch Job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from reconciler.event_reporting import (
    RecorderSink,
    kueue_controller_name,
    reporters_for,
    workload_event_counter,
)
from shared.config import load_config
from shared.kube.events import Reporter

REPO = Path(__file__).resolve().parents[3]


class _Recorder:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def event(self, regarding: dict[str, Any], **fields: Any) -> bool:
        self.events.append({"regarding": regarding, **fields})
        return True


def test_controller_names_follow_kueues_recorder_names() -> None:
    assert kueue_controller_name("batch/job") == "batch/job-kueue-controller"
    assert kueue_controller_name("Widget.v1.example.com") == "Widget.v1.example.com-kueue-controller"


def test_every_managed_kind_of_the_dev_configuration_gets_kueues_reporter() -> None:
    reporters = reporters_for(load_config(REPO / "examples/dev/config.yaml"), host="vm")
    assert reporters == {
        ("batch/v1", "Job"): Reporter("batch/job-kueue-controller", "batch/job-kueue-controller-vm"),
        ("workload.codeflare.dev/v1beta2", "AppWrapper"): Reporter(
            "workload.codeflare.dev/appwrapper-kueue-controller",
            "workload.codeflare.dev/appwrapper-kueue-controller-vm",
        ),
        ("samples.kueue-bridge.dev/v1alpha1", "SampleJob"): Reporter(
            "SampleJob.v1alpha1.samples.kueue-bridge.dev-kueue-controller",
            "SampleJob.v1alpha1.samples.kueue-bridge.dev-kueue-controller-vm",
        ),
    }


@pytest.mark.needs_shared
def test_the_batch_job_reporter_is_the_one_in_real_kueues_events(golden_dir: Path) -> None:
    golden = yaml.safe_load((golden_dir / "events.yaml").read_text())["items"]
    about_jobs = {
        (e["reportingComponent"], e["reportingInstance"])
        for e in golden
        if e["involvedObject"]["kind"] == "Job"
    }
    host = next(iter(about_jobs))[1].rsplit("-", 1)[1]
    reporters = reporters_for(load_config(REPO / "examples/dev/config.yaml"), host=host)
    assert about_jobs == {
        (reporters[("batch/v1", "Job")].controller, reporters[("batch/v1", "Job")].instance)
    }


def test_the_sink_records_each_event_as_the_reporter_of_its_kind() -> None:
    recorder = _Recorder()
    job_reporter = Reporter("batch/job-kueue-controller", "batch/job-kueue-controller-vm")
    sink = RecorderSink(
        recorder,  # type: ignore[arg-type]
        workload_events=workload_event_counter(CollectorRegistry()),
        reporters={("batch/v1", "Job"): job_reporter},
    )
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"}}
    other = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}}
    sink.record(regarding=job, event_type="Normal", reason="Started", message="m")
    sink.record(regarding=other, event_type="Normal", reason="Started", message="m")
    assert [e["reporter"] for e in recorder.events] == [job_reporter, None]
