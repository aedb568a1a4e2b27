"""``kueue-bridge adapter test``: the TrainingRun of docs/adapters.md, every built-in adapter's sample object,
and the errors (a broken adapter, an object that does not match), through the command itself.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from bridge_tools.adapter.cli import main
from tests.unit.frameworks.jobset_objects import make_jobset
from tests.unit.frameworks.test_appwrapper import batch_job as appwrapper_component_job
from tests.unit.frameworks.test_appwrapper import component, make_appwrapper
from tests.unit.frameworks.test_batch_job import make_job
from tests.unit.frameworks.test_docs_adapter_example import adapter_examples
from tests.unit.frameworks.test_tekton import make_run

HEADER = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}
TRAININGRUN = "TrainingRun.v1alpha1.ml.example.com"
BUILTINS = {
    "frameworks": [
        "batch/job",
        "jobset.x-k8s.io/jobset",
        "workload.codeflare.dev/appwrapper",
        "tekton.dev/pipelinerun",
    ]
}


def write(path: Path, document: Any) -> str:
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return str(path)


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def report_for(
    tmp_path: Path, *, integrations: dict[str, Any], kind: str, obj: dict[str, Any]
) -> dict[str, Any]:
    config = write(tmp_path / "config.yaml", {**HEADER, "integrations": integrations})
    code, out, err = run(
        ["test", "--config", config, "--kind", kind, write(tmp_path / "obj.yaml", obj), "-o", "json"]
    )
    assert code == 0, err
    assert err == ""
    report: dict[str, Any] = json.loads(out)
    return report


def apply(obj: dict[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = jsonpatch.apply_patch(obj, patch)
    return result


# --- the docs' TrainingRun -----------------------------------------------------------------------


@pytest.fixture
def trainingrun(tmp_path: Path) -> tuple[str, str]:
    blocks = adapter_examples()
    config = write(tmp_path / "trainingrun.yaml", {**HEADER, **blocks["trainingrun-config"]})
    return config, write(tmp_path / "resnet.yaml", blocks["trainingrun-object"])


def test_trainingrun_report(trainingrun: tuple[str, str]) -> None:
    config, obj = trainingrun
    code, out, err = run(["test", "--config", config, "--kind", TRAININGRUN, obj])
    assert (code, err) == (0, "")
    report = yaml.safe_load(out)
    assert report["adapter"] == f"declarative (integrations.externalFrameworks[{TRAININGRUN}].adapter)"
    assert (report["suspended"], report["queueName"], report["managedBy"]) == (True, "team-a", None)
    assert [(p["name"], p["count"], p["templatePath"], p["resourcesPerPod"]) for p in report["podSets"]] == [
        ("launcher", 1, "spec.launcher.template", {"cpu": "1"}),
        ("gpu", 4, "spec.workerGroups[0].template", {"cpu": "8", "nvidia.com/gpu": "1"}),
    ]
    assert report["state"] == {
        "finished": False,
        "succeeded": None,
        "message": None,
        "active": False,
        "podsReady": False,
    }
    workload = report["workload"]
    assert workload["metadata"]["name"].startswith("trainingrun-resnet-")
    assert [p["name"] for p in workload["spec"]["podSets"]] == ["launcher", "gpu"]
    assert workload["spec"]["queueName"] == "team-a"


def test_trainingrun_start_then_stop_gives_the_object_back(trainingrun: tuple[str, str]) -> None:
    config, obj_path = trainingrun
    code, out, _ = run(["test", "--config", config, "--kind", TRAININGRUN, obj_path, "-o", "json"])
    assert code == 0
    report = json.loads(out)
    original = yaml.safe_load(Path(obj_path).read_text())
    started = apply(original, report["start"]["patch"])
    assert started["spec"]["paused"] is False
    for template in (started["spec"]["launcher"]["template"], started["spec"]["workerGroups"][0]["template"]):
        assert template["spec"]["nodeSelector"] == {"example.com/pool": "sample"}
        assert template["spec"]["tolerations"] == [
            {"key": "example.com/pool", "operator": "Equal", "value": "sample", "effect": "NoSchedule"}
        ]
    assert (
        started["spec"]["workerGroups"][0]["template"]["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "gpu"
    )
    stopped = started
    for step in report["stop"]["steps"]:
        stopped = apply(stopped, step["patch"])
    assert stopped == original


def test_yaml_and_json_say_the_same(trainingrun: tuple[str, str]) -> None:
    config, obj = trainingrun
    _, as_yaml, _ = run(["test", "--config", config, "--kind", TRAININGRUN, obj])
    _, as_json, _ = run(["test", "--config", config, "--kind", TRAININGRUN, obj, "-o", "json"])
    assert yaml.safe_load(as_yaml) == json.loads(as_json)


# --- every built-in adapter's sample object -------------------------------------------------------


def test_batch_job(tmp_path: Path) -> None:
    job = make_job(parallelism=3, completions=6, annotations={"kueue.x-k8s.io/job-min-parallelism": "2"})
    job["metadata"]["uid"] = "0b5c2a31-1d1e-4f63-8a43-8e1b1e8b8a6f"
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a"}
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "250m"}}
    report = report_for(tmp_path, integrations=BUILTINS, kind="Job.v1.batch", obj=job)
    assert report["adapter"] == "built-in batch/job"
    assert report["suspended"] is False  # the webhook suspends it on create
    assert any("webhook suspends it" in note for note in report["notes"])
    [pod_set] = report["podSets"]
    assert pod_set["resourcesPerPod"] == {"cpu": "250m"}
    assert (pod_set["name"], pod_set["count"], pod_set["minCount"], pod_set["templatePath"]) == (
        "main",
        3,
        2,
        "spec.template",
    )
    assert pod_set["topologyRequest"] == {"podIndexLabel": "batch.kubernetes.io/job-completion-index"}
    assert report["workload"]["metadata"]["labels"] == {"kueue.x-k8s.io/job-uid": job["metadata"]["uid"]}
    # the batch Job stops in Kueue's steps: suspend (+ stopping mark), then restore the template
    first, second = report["stop"]["steps"]
    assert first["patch"] == [
        {"op": "add", "path": "/metadata/annotations/kueue.x-k8s.io~1stopping", "value": "true"},
        {"op": "replace", "path": "/spec/suspend", "value": True},
    ]
    assert {"op": "remove", "path": "/metadata/annotations/kueue.x-k8s.io~1stopping"} in second["patch"]
    assert {"op": "remove", "path": "/spec/template/spec/nodeSelector"} in second["patch"]


def test_jobset(tmp_path: Path) -> None:
    report = report_for(tmp_path, integrations=BUILTINS, kind="jobset", obj=make_jobset())
    assert [(p["name"], p["count"], p["templatePath"]) for p in report["podSets"]] == [
        ("driver", 1, "spec.replicatedJobs[0].template.spec.template"),
        ("workers", 6, "spec.replicatedJobs[1].template.spec.template"),
        ("ps", 4, "spec.replicatedJobs[2].template.spec.template"),
    ]
    assert report["podSets"][1]["topologyRequest"]["required"] == "cloud.com/rack"
    started = apply(make_jobset(), report["start"]["patch"])
    assert started["spec"]["suspend"] is False


def test_appwrapper(tmp_path: Path) -> None:
    wrapped = appwrapper_component_job(parallelism=2)
    wrapped["spec"]["template"]["spec"] = {
        **wrapped["spec"]["template"]["spec"],
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"memory": "1Gi"}}}],
    }
    obj = make_appwrapper(component(wrapped))
    report = report_for(
        tmp_path, integrations=BUILTINS, kind="AppWrapper.v1beta2.workload.codeflare.dev", obj=obj
    )
    assert [(p["name"], p["count"], p["templatePath"]) for p in report["podSets"]] == [
        ("aw-0", 2, "spec.components[0].template.spec.template")
    ]
    started = apply(obj, report["start"]["patch"])
    infos = started["spec"]["components"][0]["podSetInfos"]
    assert infos[0]["nodeSelector"] == {"example.com/pool": "sample"}


def test_tekton_pipelinerun(tmp_path: Path) -> None:
    obj = make_run(annotations={"kueue.konflux-ci.dev/requests-cpu": "2"}, spec_status="PipelineRunPending")
    report = report_for(tmp_path, integrations=BUILTINS, kind="PipelineRun.v1.tekton.dev", obj=obj)
    [pod_set] = report["podSets"]
    assert pod_set["templatePath"] is None
    assert pod_set["resourcesPerPod"] == {"cpu": "2", "tekton.dev/pipelineruns": "1"}
    assert any("synthetic" in note for note in report["notes"])
    assert report["start"]["patch"] == [{"op": "remove", "path": "/spec/status"}]


# --- errors ----------------------------------------------------------------------------------------


def test_a_broken_adapter_names_the_configuration_field(tmp_path: Path, trainingrun: tuple[str, str]) -> None:
    config = yaml.safe_load(Path(trainingrun[0]).read_text())
    config["integrations"]["externalFrameworks"][0]["adapter"]["podSets"][1]["minCount"] = {
        "expression": "element.min +"
    }
    code, out, err = run(
        ["test", "--config", write(tmp_path / "bad.yaml", config), "--kind", TRAININGRUN, trainingrun[1]]
    )
    assert (code, out) == (1, "")
    assert err.startswith(
        f"{tmp_path / 'bad.yaml'}: integrations.externalFrameworks[{TRAININGRUN}].adapter.podSets[1].minCount.expression: "
        "invalid CEL expression 'element.min +'"
    )


def test_an_object_that_does_not_match_names_the_path_and_the_adapter_field(
    tmp_path: Path, trainingrun: tuple[str, str]
) -> None:
    obj = yaml.safe_load(Path(trainingrun[1]).read_text())
    obj["spec"]["workerGroups"][0]["replicas"] = "four"
    obj["spec"]["paused"] = "yes"
    bad = write(tmp_path / "bad.yaml", obj)
    code, out, err = run(["test", "--config", trainingrun[0], "--kind", TRAININGRUN, bad])
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"{bad}: spec.workerGroups[0].replicas: expected an integer, got string "
        f"(adapter field integrations.externalFrameworks[{TRAININGRUN}].adapter.podSets[1].count)"
    ]


def test_a_cel_failure_names_the_adapter_field(tmp_path: Path, trainingrun: tuple[str, str]) -> None:
    obj = yaml.safe_load(Path(trainingrun[1]).read_text())
    obj["status"] = {"phase": "Succeeded", "message": 7}
    bad = write(tmp_path / "done.yaml", obj)
    code, _, err = run(["test", "--config", trainingrun[0], "--kind", TRAININGRUN, bad])
    assert code == 1
    [line] = err.splitlines()
    assert line.startswith(f"{bad}: (CEL over the object): ")
    assert line.endswith(f"(adapter field integrations.externalFrameworks[{TRAININGRUN}].adapter.message)")


def test_an_object_of_another_kind(tmp_path: Path, trainingrun: tuple[str, str]) -> None:
    job = write(tmp_path / "job.yaml", make_job())
    code, _, err = run(["test", "--config", trainingrun[0], "--kind", TRAININGRUN, job])
    assert code == 1
    assert err == (
        f"{job}: kind: the object is batch/v1, Kind=Job, not ml.example.com/v1alpha1, Kind=TrainingRun "
        f"(--kind {TRAININGRUN})\n"
    )


def test_a_kind_the_configuration_does_not_manage(trainingrun: tuple[str, str]) -> None:
    code, _, err = run(["test", "--config", trainingrun[0], "--kind", "jobset", trainingrun[1]])
    assert code == 1
    assert err == (
        f'{trainingrun[0]}: kind "jobset" is not managed by this configuration '
        f"(it manages: Job.v1.batch, {TRAININGRUN})\n"
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("a: [", "invalid YAML"),
        ("- 1\n- 2\n", "the object must be a mapping, not a list"),
        ("a: 1\n---\nb: 2\n", "expected exactly one object, found 2"),
    ],
)
def test_unreadable_object_files(
    tmp_path: Path, trainingrun: tuple[str, str], content: str, problem: str
) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text(content)
    code, _, err = run(["test", "--config", trainingrun[0], "--kind", TRAININGRUN, str(path)])
    assert code == 1
    assert err.startswith(f"{path}: {problem}")


def test_usage_errors_exit_2(trainingrun: tuple[str, str]) -> None:
    assert run(["test", trainingrun[1]])[0] == 2  # --config and --kind are required
