"""Discovery on the devcluster: a CRD installed after the client started becomes mappable."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from shared.kube import GroupVersionKind, KubeClient, UnknownKindError
from tests.component.kube.conftest import CONFIGMAP, eventually

pytestmark = pytest.mark.needs_shared

CRD = GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
JOBSET = GroupVersionKind("jobset.x-k8s.io", "v1alpha2", "JobSet")


def jobset(name: str) -> dict[str, object]:
    pod = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox", "args": ["true"]}]}
    return {
        "apiVersion": JOBSET.api_version,
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {
            "suspend": True,
            "replicatedJobs": [
                {"name": "workers", "replicas": 1, "template": {"spec": {"template": {"spec": pod}}}}
            ],
        },
    }


async def test_crd_created_after_start_up_becomes_mappable(
    client: KubeClient, namespace: str, shared_dir: Path
) -> None:
    await client.resource(CONFIGMAP)  # the client is warm: discovery documents are cached
    with pytest.raises(UnknownKindError) as unknown:
        await client.resource(JOBSET)
    assert "jobset.x-k8s.io/v1alpha2" in str(unknown.value)

    document = yaml.safe_load((shared_dir / "crds" / "jobset" / "jobset.x-k8s.io_jobsets.yaml").read_text())
    await client.create(CRD, document)

    async def mappable() -> bool:
        try:
            await client.resource(JOBSET)
        except UnknownKindError:
            return False
        return True

    await eventually(mappable, what="JobSet to become mappable without a restart")
    info = await client.resource(JOBSET)
    assert info.namespaced and info.plural == "jobsets" and "status" in info.subresources

    created = await client.create(JOBSET, jobset("js"), namespace=namespace)
    assert created["metadata"]["uid"]
    patched = await client.patch_status(JOBSET, "js", {"status": {"restarts": 1}}, namespace=namespace)
    assert patched["status"]["restarts"] == 1
    listed = await client.list_all(JOBSET, namespace=namespace)
    assert [item["metadata"]["name"] for item in listed.items] == ["js"]
