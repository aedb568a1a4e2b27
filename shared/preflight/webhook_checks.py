"""Are our admission webhooks registered for exactly the configured kinds, reachable and trusted?

Per configuration (``kueue-bridge-{mutating,validating}-webhook-configuration``):

* **rules**: one webhook per configured kind, covering its group, version and plural
  (:mod:`shared.webhook_configurations` renders what should be there); a kind without a mutating
  webhook is never suspended on create, so it runs before Kueue sees it (``fail``); a webhook for a
  kind not configured is only called for nothing (``warn``);
* **settings**: ``failurePolicy: Fail`` (with ``Ignore`` a job created while the webhook is down is
  not queued), a ``timeoutSeconds`` of at least :data:`MIN_TIMEOUT_SECONDS` (on a busy API server a
  short timeout fails creates: tekton-kueue #539), ``kube-system`` excluded by the namespace selector;
* **caBundle**: present, PEM certificates, valid now (and for :data:`EXPIRY_WARNING` more unless the
  webhook renews its own certificate);
* **live**: a Service target must exist with the port and have ready endpoints (EndpointSlices); a
  URL target (local runs) is connected to with the caBundle as the only trust root and must answer
  ``/readyz``;
* **end to end**: a server-side **dry-run** create of a probe object of each kind
  (:mod:`shared.preflight.webhook_probe`).

Invariant: nothing is written (the probe is a dry run); an API error that prevents one check is a
``warn`` naming it, never a crash.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import ssl
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

import httpx
from cryptography import x509

from shared.config import Configuration
from shared.frameworks.registry import Framework, FrameworkRegistry
from shared.kube import (
    ENDPOINT_SLICE_GVK,
    SERVICE_GVK,
    ApiError,
    GroupVersionKind,
    KubeClient,
    KubeError,
    NotFound,
    UnknownKindError,
)
from shared.labelselector import KUBE_SYSTEM, NAMESPACE_NAME_LABEL, LabelSelector
from shared.preflight.findings import Finding, Verdict
from shared.preflight.webhook_probe import dry_run_probe, local_queue_in, probe_namespace
from shared.webhook_configurations import (
    MUTATING_CONFIGURATION_NAME,
    VALIDATING_CONFIGURATION_NAME,
    webhook_name,
)

__all__ = [
    "ENDPOINT_SLICE_GVK",
    "EXPIRY_WARNING",
    "MIN_TIMEOUT_SECONDS",
    "SERVICE_GVK",
    "check_webhooks",
]

_CONFIGURATIONS: Final = (
    (MUTATING_CONFIGURATION_NAME, "MutatingWebhookConfiguration", True),
    (VALIDATING_CONFIGURATION_NAME, "ValidatingWebhookConfiguration", False),
)
#: Below this an admission on a busy API server times out (the API server's default is 10 s).
MIN_TIMEOUT_SECONDS: Final = 5
EXPIRY_WARNING: Final = dt.timedelta(days=30)
_CONNECT_TIMEOUT: Final = 5.0
WireDict = dict[str, Any]


def _configuration_gvk(kind: str) -> GroupVersionKind:
    return GroupVersionKind("admissionregistration.k8s.io", "v1", kind)


def _short(exc: BaseException) -> str:
    if isinstance(exc, ApiError):
        return exc.message or f"{exc.reason or exc.code}"
    return str(exc) or type(exc).__name__


def _covers(hook: Mapping[str, Any], framework: Framework) -> bool:
    gvk = framework.gvk
    for rule in hook.get("rules") or []:
        if not isinstance(rule, dict):
            continue
        groups = rule.get("apiGroups") or []
        versions = rule.get("apiVersions") or []
        resources = rule.get("resources") or []
        if (
            (gvk.group in groups or "*" in groups)
            and (
                gvk.version in versions
                or "*" in versions
                or hook.get("matchPolicy", "Equivalent") == "Equivalent"
            )
            and (framework.plural in resources or "*" in resources)
        ):
            return True
    return False


def _hook_settings(hook: Mapping[str, Any], *, where: str) -> list[Finding]:
    findings: list[Finding] = []
    name = str(hook.get("name"))
    if hook.get("failurePolicy", "Fail") != "Fail":
        findings.append(
            Finding(
                f"webhook {name}",
                Verdict.WARN,
                f"failurePolicy is {hook.get('failurePolicy')} ({where}): a job created while the webhook is "
                "unreachable is admitted unsuspended and runs outside Kueue",
                "set failurePolicy: Fail (kueue-bridge manifests renders it)",
            )
        )
    timeout = hook.get("timeoutSeconds", 10)
    if isinstance(timeout, int) and timeout < MIN_TIMEOUT_SECONDS:
        findings.append(
            Finding(
                f"webhook {name}",
                Verdict.WARN,
                f"timeoutSeconds is {timeout} ({where}): on a busy API server admission calls this short "
                "time out and, with failurePolicy Fail, job creates fail",
                "set timeoutSeconds to the value kueue-bridge manifests renders",
            )
        )
    selector_raw = hook.get("namespaceSelector") or {}
    try:
        selector = LabelSelector.model_validate(selector_raw)
        kube_system = selector.matches({NAMESPACE_NAME_LABEL: KUBE_SYSTEM})
    except ValueError:
        kube_system = False
    if kube_system:
        findings.append(
            Finding(
                f"webhook {name}",
                Verdict.WARN,
                f"its namespaceSelector selects kube-system ({where}): a webhook outage could block the "
                "control plane's own jobs",
                "exclude kube-system (and kueue-bridge's namespace) in the namespaceSelector",
            )
        )
    return findings


def _ca_findings(hook: Mapping[str, Any], *, label: str, now: dt.datetime, renews: bool) -> list[Finding]:
    client_config = hook.get("clientConfig") or {}
    raw = client_config.get("caBundle")
    if not raw:
        return [
            Finding(
                label,
                Verdict.FAIL,
                "no caBundle: the API server cannot verify the webhook's serving certificate",
                "inject the CA (internalCertManagement does it at start; kueue-bridge certs inject)",
            )
        ]
    try:
        pem = base64.b64decode(raw, validate=True)
        certificates = x509.load_pem_x509_certificates(pem)
    except (binascii.Error, ValueError) as exc:
        return [
            Finding(
                label,
                Verdict.FAIL,
                f"caBundle is not PEM certificates ({exc})",
                "inject the webhook's CA again",
            )
        ]
    expired = [c for c in certificates if c.not_valid_after_utc <= now or c.not_valid_before_utc > now]
    if expired:
        bad = expired[0]
        return [
            Finding(
                label,
                Verdict.FAIL,
                f"caBundle certificate {bad.subject.rfc4514_string()} is valid only from "
                f"{bad.not_valid_before_utc:%Y-%m-%d} to {bad.not_valid_after_utc:%Y-%m-%d}",
                "issue and inject a new CA (kueue-bridge certs generate, then inject)",
            )
        ]
    soonest = min(certificates, key=lambda c: c.not_valid_after_utc)
    if not renews and soonest.not_valid_after_utc - now < EXPIRY_WARNING:
        return [
            Finding(
                label,
                Verdict.WARN,
                f"caBundle certificate {soonest.subject.rfc4514_string()} expires on "
                f"{soonest.not_valid_after_utc:%Y-%m-%d}",
                "renew it before then (or enable internalCertManagement)",
            )
        ]
    return []


async def _service_live(client: KubeClient, service: Mapping[str, Any]) -> tuple[Verdict, str, str]:
    namespace, name = str(service.get("namespace")), str(service.get("name"))
    port = int(service.get("port") or 443)
    try:
        found = await client.get(SERVICE_GVK, name, namespace=namespace)
    except UnknownKindError:
        return Verdict.OK, f"Service {namespace}/{name} (Services are not served here: not checked)", ""
    except NotFound:
        return (
            Verdict.FAIL,
            f"Service {namespace}/{name} does not exist: every admission of the configured kinds fails",
            "apply the manifests (kueue-bridge manifests) or fix clientConfig.service",
        )
    except KubeError as exc:
        return (
            Verdict.WARN,
            f"Service {namespace}/{name} cannot be read ({_short(exc)})",
            "grant get on services",
        )
    ports = [p.get("port") for p in (found.get("spec") or {}).get("ports") or [] if isinstance(p, dict)]
    if port not in ports:
        return (
            Verdict.FAIL,
            f"Service {namespace}/{name} has no port {port} (ports {ports})",
            "fix clientConfig.service.port or the Service",
        )
    try:
        slices = (
            await client.list_all(
                ENDPOINT_SLICE_GVK, namespace=namespace, label_selector=f"kubernetes.io/service-name={name}"
            )
        ).items
    except (UnknownKindError, NotFound):
        return Verdict.OK, f"Service {namespace}/{name} port {port}", ""
    except KubeError as exc:
        return (
            Verdict.WARN,
            f"Service {namespace}/{name}: EndpointSlices cannot be read ({_short(exc)})",
            "grant list on endpointslices.discovery.k8s.io",
        )
    ready = sum(
        1
        for item in slices
        for endpoint in item.get("endpoints") or []
        if isinstance(endpoint, dict) and (endpoint.get("conditions") or {}).get("ready", True) is not False
    )
    if not ready:
        return (
            Verdict.FAIL,
            f"Service {namespace}/{name} has no ready endpoint: the API server cannot reach the webhook",
            f"start the webhook (Deployment kueue-bridge-webhook in {namespace}) and wait for /readyz",
        )
    return Verdict.OK, f"Service {namespace}/{name} port {port}, {ready} ready endpoint(s)", ""


async def _url_live(url: str, ca_bundle: str | None) -> tuple[Verdict, str, str]:
    parts = urlsplit(url)
    base = f"{parts.scheme}://{parts.netloc}"
    try:
        context = ssl.create_default_context(
            cadata=base64.b64decode(ca_bundle).decode() if ca_bundle else None
        )
    except (ssl.SSLError, ValueError, binascii.Error):
        context = ssl.create_default_context()
    try:
        async with httpx.AsyncClient(verify=context, timeout=_CONNECT_TIMEOUT) as http:
            response = await http.get(f"{base}/readyz")
    except httpx.ConnectError as exc:
        reason = str(exc) or "connection failed"
        if "CERTIFICATE_VERIFY_FAILED" in reason or "certificate" in reason.lower():
            return (
                Verdict.FAIL,
                f"{base}: its serving certificate is not trusted by the caBundle ({reason})",
                "inject the CA that signed the webhook's serving certificate",
            )
        return (
            Verdict.FAIL,
            f"{base} is not reachable ({reason})",
            "start the webhook, or fix clientConfig.url",
        )
    except httpx.HTTPError as exc:
        return Verdict.FAIL, f"{base} did not answer ({type(exc).__name__}: {exc})", "check the webhook's log"
    if response.status_code != 200:
        return (
            Verdict.WARN,
            f"{base}/readyz answered {response.status_code}: the webhook is not ready",
            "check the webhook's log (its informers must sync, which needs Kueue's CRDs)",
        )
    return Verdict.OK, f"{base} answers /readyz with the caBundle as its only trust root", ""


async def check_webhooks(
    client: KubeClient,
    config: Configuration,
    *,
    now: dt.datetime,
    only_kind: str | None = None,
    namespace: str | None = None,
) -> list[Finding]:
    """Every check of the module docstring, for our two webhook configurations.

    ``only_kind`` (``Kind.version.group``) restricts the rule checks and the dry-run to that kind;
    ``namespace`` is where the dry-run probes (default: one the webhooks select).
    """
    registry = FrameworkRegistry.from_managed_kinds(config.managed_kinds())
    frameworks: Sequence[Framework] = [
        f for f in registry if only_kind is None or f.gvk.kind_arg == only_kind
    ]
    findings: list[Finding] = []
    targets: dict[str, WireDict] = {}
    mutating_selector: WireDict | None = None
    for configuration_name, kind, mutating in _CONFIGURATIONS:
        check = f"webhooks {configuration_name}"
        try:
            configuration = await client.get(_configuration_gvk(kind), configuration_name)
        except NotFound:
            findings.append(
                Finding(
                    check,
                    Verdict.FAIL,
                    f"{kind} {configuration_name} is not registered: "
                    + (
                        "jobs are not suspended on create and run before Kueue admits them"
                        if mutating
                        else "Kueue's job rules are not enforced"
                    ),
                    "apply the manifests (kueue-bridge manifests), or kueue-bridge webhook register",
                    kinds=tuple(f.gvk.kind_arg for f in frameworks),
                )
            )
            continue
        except KubeError as exc:
            findings.append(
                Finding(check, Verdict.WARN, f"cannot read it ({_short(exc)})", "grant get on it")
            )
            continue
        hooks = {str(h.get("name")): h for h in configuration.get("webhooks") or [] if isinstance(h, dict)}
        expected = {webhook_name(f.gvk, mutating=mutating): f for f in frameworks}
        if only_kind is not None:
            hooks = {name: hook for name, hook in hooks.items() if name in expected}
        problems = 0
        for hook_name, framework in expected.items():
            name = framework.gvk.kind_arg
            hook = hooks.get(hook_name)
            if hook is None or not _covers(hook, framework):
                problems += 1
                findings.append(
                    Finding(
                        check,
                        Verdict.FAIL,
                        f"no webhook covers {framework.plural}.{framework.gvk.group} {framework.gvk.version}"
                        f" (expected {hook_name})",
                        "apply the webhook configurations kueue-bridge manifests renders for this configuration",
                        kinds=(name,),
                    )
                )
                continue
            settings = _hook_settings(hook, where=configuration_name)
            problems += len(settings)
            findings += settings
            if mutating and mutating_selector is None:
                mutating_selector = hook.get("namespaceSelector") or {}
            client_config = hook.get("clientConfig") or {}
            target = client_config.get("url") or "service:{namespace}/{name}:{port}".format(
                **{"port": 443, **(client_config.get("service") or {})}
            )
            targets.setdefault(str(target), hook)
        for hook_name in sorted(set(hooks) - set(expected)):
            problems += 1
            findings.append(
                Finding(
                    check,
                    Verdict.WARN,
                    f"webhook {hook_name} is not for a configured kind: the API server calls it for nothing",
                    "apply the webhook configurations kueue-bridge manifests renders for this configuration",
                )
            )
        if not problems:
            findings.append(
                Finding(
                    check, Verdict.OK, f"{len(expected)} webhook(s), one per configured kind, settings sane"
                )
            )
    renews = config.internal_cert_management.enable
    for target, hook in targets.items():
        label = f"webhook endpoint {target}"
        trust = _ca_findings(hook, label=label, now=now, renews=renews)
        findings += trust
        if trust and trust[0].verdict is Verdict.FAIL:
            continue
        client_config = hook.get("clientConfig") or {}
        if client_config.get("url"):
            verdict, message, fix = await _url_live(str(client_config["url"]), client_config.get("caBundle"))
        else:
            verdict, message, fix = await _service_live(client, client_config.get("service") or {})
        findings.append(Finding(label, verdict, message, fix))
    if mutating_selector is not None:
        namespace = namespace or await probe_namespace(client, config, mutating_selector)
        if namespace is None:
            findings.append(
                Finding(
                    "webhook dry-run",
                    Verdict.WARN,
                    "no namespace is selected by both the webhooks and managedJobsNamespaceSelector: "
                    "nothing to probe",
                    "create a namespace for your jobs (with a LocalQueue) and run preflight again",
                )
            )
        else:
            queue = await local_queue_in(client, namespace) or "kueue-bridge-preflight"
            for framework in frameworks:
                findings.append(await dry_run_probe(client, framework, namespace=namespace, queue=queue))
    return findings
