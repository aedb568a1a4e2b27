"""devrun.real_cluster without the kit running: finding it, ports, environments, the sweeps.

The kit's scripts are replaced by small shell scripts in a temporary folder that record what they
were asked, so nothing here starts etcd, kube-apiserver or Kueue.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devrun.real_cluster import (
    DEFAULT_KUEUE_VERSION,
    Kit,
    KitError,
    RealCluster,
    RealClusterPorts,
    find_kit,
    free_ports,
    processes_below,
    run_kueuectl,
    stop_all_below,
    stop_processes_below,
)


def fake_kit(tmp_path: Path, *, script: str = "exit 0") -> Kit:
    """A kit whose apiserver.sh and kueue.sh append ``<script name> <command> <REALAPI_STATE>`` to
    ``calls.txt`` and then run ``script``."""
    directory = tmp_path / "shared" / "real-cluster"
    directory.mkdir(parents=True)
    for name in ("apiserver.sh", "kueue.sh"):
        (directory / name).write_text(
            f'echo "{name} $1 $REALAPI_STATE" >> "{tmp_path}/calls.txt"\n{script}\n'
        )
    return Kit(directory=directory)


def calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls.txt"
    return path.read_text().splitlines() if path.exists() else []


# --- find_kit -------------------------------------------------------------------------------------


def test_a_missing_kit_names_the_folder_and_the_variable(tmp_path: Path) -> None:
    with pytest.raises(KitError) as caught:
        find_kit(shared_dir=tmp_path / "nowhere")
    message = str(caught.value)
    assert str(tmp_path / "nowhere" / "real-cluster") in message
    assert "KUEUE_BRIDGE_SHARED_DIR" in message


def test_the_kit_is_found_in_the_shared_folder(tmp_path: Path) -> None:
    kit = fake_kit(tmp_path)
    assert find_kit(shared_dir=tmp_path / "shared") == kit


def test_the_shared_folder_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kit = fake_kit(tmp_path)
    monkeypatch.setenv("KUEUE_BRIDGE_SHARED_DIR", str(tmp_path / "shared"))
    assert find_kit() == kit


@pytest.mark.parametrize("installed_by_the_kit", ["unshare", "curl", "openssl", "etcd"])
def test_only_bash_is_needed_up_front_the_kit_installs_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed_by_the_kit: str
) -> None:
    fake_kit(tmp_path)
    real_which = __import__("shutil").which
    monkeypatch.setattr(
        "devrun.real_cluster.shutil.which",
        lambda name: None if name == installed_by_the_kit else real_which(name),
    )
    assert find_kit(shared_dir=tmp_path / "shared").directory == tmp_path / "shared" / "real-cluster"
    monkeypatch.setattr("devrun.real_cluster.shutil.which", lambda name: None)
    with pytest.raises(KitError, match=r"needs `bash` on PATH \(Debian: apt-get install bash\)"):
        find_kit(shared_dir=tmp_path / "shared")


# --- ports, environment, kueuectl -----------------------------------------------------------------


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(6)
    assert len(set(ports)) == 6
    assert all(1024 <= port <= 65535 for port in ports)
    cluster_ports = RealClusterPorts.free()
    values = [getattr(cluster_ports, name) for name in RealClusterPorts.__dataclass_fields__]
    assert len(set(values)) == 6


def test_the_environment_is_this_clusters_and_drops_a_developers_kueue_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "REALKUEUE_CONFIG",
        "REALKUEUE_CONFIG_EXTRA",
        "KUEUE_FRAMEWORKS",
        "KUEUE_EXTERNAL_FRAMEWORKS",
    ):
        monkeypatch.setenv(name, "the developer's own")
    ports = RealClusterPorts(
        api=1, etcd_client=2, etcd_peer=3, kueue_webhook=4, kueue_health=5, kueue_metrics=6
    )
    cluster = RealCluster(
        kit=fake_kit(tmp_path),
        name="c",
        state=tmp_path / "c",
        ports=ports,
        kueue_version="v0.19.2",
        watch_cache=False,
    )
    env = cluster.environment(external_frameworks=("Job.v1.batch", "JobGroup.v1alpha1.e2e.kueue-bridge.dev"))
    assert env["REALAPI_STATE"] == str(tmp_path / "c" / "realapi")
    assert env["REALKUEUE_STATE"] == str(tmp_path / "c" / "realkueue")
    assert (env["API_PORT"], env["ETCD_CLIENT_PORT"], env["WEBHOOK_PORT"]) == ("1", "2", "4")
    assert env["HEALTH_ADDR"] == "127.0.0.1:5"
    assert env["KUEUE_VERSION"] == "v0.19.2"
    assert env["KUBE_APISERVER_EXTRA_ARGS"] == "--watch-cache=false"
    assert env["KUEUE_EXTERNAL_FRAMEWORKS"] == "Job.v1.batch,JobGroup.v1alpha1.e2e.kueue-bridge.dev"
    for name in ("REALKUEUE_CONFIG", "REALKUEUE_CONFIG_EXTRA", "KUEUE_FRAMEWORKS"):
        assert name not in env


def test_kueuectl_on_an_empty_cache_is_unpacked_by_the_kit_first(
    shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new machine: ``$REAL_CLUSTER_HOME`` empty, no cluster started. The kit ships kueuectl of
    its default version only; a version it lacks gets that one."""
    home = tmp_path / "home"
    monkeypatch.setenv("REAL_CLUSTER_HOME", str(home))
    monkeypatch.delenv("KUEUECTL", raising=False)
    kit = find_kit(shared_dir=shared_dir)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    for version in ("v0.19.2", DEFAULT_KUEUE_VERSION):
        assert "kueuectl" in kit.kueuectl("--help", kubeconfig=kubeconfig, version=version)
    assert sorted(p.name for p in (home / "bin").iterdir()) == [f"kueuectl-{DEFAULT_KUEUE_VERSION}"]


def test_kueuectl_runs_through_kueue_sh_and_a_failure_is_a_kit_error_with_its_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUEUE_MODE", "not-a-mode")
    kit = fake_kit(
        tmp_path,
        script='[ "$2" = ok ] || { echo "error: no such workload" >&2; exit 1; }\n'
        'echo "${KUEUE_MODE:-unset} $KUEUE_VERSION $REALKUEUE_KUBECONFIG $*"',
    )
    kubeconfig = tmp_path / "kubeconfig"
    output = run_kueuectl(kit, "ok", kubeconfig=kubeconfig, version="v0.19.2")
    assert output.strip() == f"unset v0.19.2 {kubeconfig} kueuectl ok"
    with pytest.raises(KitError, match=r"kueuectl stop workload x \(.*\): error: no such workload"):
        run_kueuectl(kit, "stop", "workload", "x", kubeconfig=kubeconfig)
    assert [line.split()[:2] for line in calls(tmp_path)] == [["kueue.sh", "kueuectl"]] * 2


# --- the kit's scripts, and the sweeps ------------------------------------------------------------


def test_a_failed_start_says_which_script_failed_with_its_output(tmp_path: Path) -> None:
    kit = fake_kit(tmp_path, script='echo "etcd: address already in use" >&2; exit 3')
    cluster = RealCluster(kit=kit, name="broken", state=tmp_path / "broken")
    with pytest.raises(KitError) as caught:
        cluster.start_apiserver()
    assert "apiserver.sh start (broken) exited with code 3" in str(caught.value)
    assert "etcd: address already in use" in str(caught.value)


def test_stop_stops_kueue_before_its_apiserver_and_tries_both(tmp_path: Path) -> None:
    kit = fake_kit(tmp_path, script='[ "$1" = stop ] && [ "$0" != "${0%kueue.sh}" ] && exit 1; exit 0')
    cluster = RealCluster(kit=kit, name="c", state=tmp_path / "c")
    cluster.kueue_state.mkdir(parents=True)
    cluster.apiserver_state.mkdir(parents=True)
    with pytest.raises(KitError, match=r"kueue\.sh stop"):
        cluster.stop()
    assert [line.split()[:2] for line in calls(tmp_path)] == [["kueue.sh", "stop"], ["apiserver.sh", "stop"]]


@pytest.mark.parametrize("root", ["missing", "empty"])
def test_sweeping_a_missing_or_empty_root_does_nothing(tmp_path: Path, root: str) -> None:
    kit = fake_kit(tmp_path)
    if root == "empty":
        (tmp_path / root).mkdir()
    assert stop_all_below(tmp_path / root, kit=kit) == []
    assert calls(tmp_path) == []


def test_the_sweep_stops_every_cluster_below_the_root_and_reports_failures(tmp_path: Path) -> None:
    kit = fake_kit(tmp_path, script='case "$REALAPI_STATE" in *bad*) echo "cannot stop" >&2; exit 1;; esac')
    root = tmp_path / "run"
    (root / "good" / "realapi").mkdir(parents=True)
    (root / "good" / "realkueue").mkdir()
    (root / "bad" / "realapi").mkdir(parents=True)  # Kueue never started there
    (root / "not-a-cluster").mkdir()
    failures = stop_all_below(root, kit=kit)
    assert calls(tmp_path) == [
        f"apiserver.sh stop {root / 'bad' / 'realapi'}",
        f"kueue.sh stop {root / 'good' / 'realapi'}",
        f"apiserver.sh stop {root / 'good' / 'realapi'}",
    ]
    assert len(failures) == 1
    assert failures[0].startswith("apiserver.sh stop (bad): ") and "cannot stop" in failures[0]


def test_processes_below_match_a_path_inside_the_root_only(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    root = tmp_path / "run"
    commands = {
        "100": [
            sys.executable,
            "-m",
            "kueue_bridge.cli",
            "webhook",
            "--config",
            f"{root}/bridge/config.yaml",
        ],
        "101": ["/usr/bin/etcd", f"--data-dir={root}/c/realapi/etcd"],
        "102": ["/usr/bin/etcd", f"--data-dir={root}-other/c/realapi/etcd"],  # another run's folder
        "103": ["/usr/bin/etcd", "--data-dir=/tmp/realapi/etcd"],
        "self": ["not", "a", "pid"],
        str(os.getpid()): ["pytest", f"{root}/x"],  # never this process
    }
    for pid, argv in commands.items():
        (proc / pid).mkdir(parents=True)
        (proc / pid / "cmdline").write_bytes(b"\0".join(arg.encode() for arg in argv) + b"\0")
    (proc / "104").mkdir()  # gone before its cmdline could be read
    found = processes_below(root, proc=proc)
    assert sorted(found) == [100, 101]
    assert found[101] == f"/usr/bin/etcd --data-dir={root}/c/realapi/etcd"


def test_stop_processes_below_ends_a_process_left_behind(tmp_path: Path) -> None:
    root = tmp_path / "run"
    marker = root / "bridge" / "config.yaml"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", str(marker)])
    try:
        # until the child has exec'd, /proc shows the forked copy of this process's command line
        deadline = time.monotonic() + 30
        while child.pid not in processes_below(root):
            assert time.monotonic() < deadline, "the child's command line never named the run's folder"
            time.sleep(0.01)
        stopped = stop_processes_below(root, grace=0.5)
        assert stopped == [f"pid {child.pid}: {sys.executable} -c import time; time.sleep(120) {marker}"]
        assert child.wait(timeout=30) != 0
    finally:
        child.kill()
        child.wait()
    assert stop_processes_below(root, grace=0.5) == []
