"""internalCertManagement's API client authenticates with the kubeconfig's bearer token.

The kubernetes library keeps a kubeconfig's (and an in-cluster ServiceAccount's) token under the
``BearerToken`` key; the certificate rotator read only ``authorization``, sent no token and was
refused (anonymous: 403) on the real kube-apiserver of the kit (tests/real/test_manifests.py).
"""

from __future__ import annotations

from pathlib import Path

import httpx
import yaml

from certs.kubeapi import KubeAPI


async def test_the_token_of_a_kubeconfig_is_sent(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True},
                    }
                ],
                "users": [{"name": "u", "user": {"token": "sa-token"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    api = KubeAPI.from_kubeconfig(kubeconfig=str(kubeconfig))
    try:
        request = httpx.Request("GET", "https://127.0.0.1:6443/api/v1/namespaces/ns/secrets/s")
        auth = api._http.auth  # the client's auth: every request goes through it
        assert auth is not None
        flow = auth.auth_flow(request)
        assert next(flow).headers["Authorization"] == "Bearer sa-token"
    finally:
        await api.aclose()
