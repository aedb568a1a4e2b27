"""The Kubernetes built-in kinds the components read and write, named once.

Kueue's own kinds are in ``shared.constants`` (beside their API group); a framework adapter's kind is
its adapter's (``shared.frameworks``). ``LEASE`` lives with leader election and the two Event kinds
with the event recorder.
"""

from __future__ import annotations

from typing import Final

from shared.kube.gvk import GroupVersionKind

__all__ = [
    "CONFIG_MAP_GVK",
    "CRD_GVK",
    "DEPLOYMENT_GVK",
    "ENDPOINT_SLICE_GVK",
    "JOB_GVK",
    "MUTATING_WEBHOOK_CONFIGURATION_GVK",
    "NAMESPACE_GVK",
    "POD_GVK",
    "PRIORITY_CLASS_GVK",
    "SECRET_GVK",
    "SELF_SUBJECT_ACCESS_REVIEW_GVK",
    "SERVICE_ACCOUNT_GVK",
    "SERVICE_GVK",
    "SUBJECT_ACCESS_REVIEW_GVK",
    "VALIDATING_WEBHOOK_CONFIGURATION_GVK",
]

NAMESPACE_GVK: Final = GroupVersionKind("", "v1", "Namespace")
SECRET_GVK: Final = GroupVersionKind("", "v1", "Secret")
CONFIG_MAP_GVK: Final = GroupVersionKind("", "v1", "ConfigMap")
SERVICE_GVK: Final = GroupVersionKind("", "v1", "Service")
SERVICE_ACCOUNT_GVK: Final = GroupVersionKind("", "v1", "ServiceAccount")
POD_GVK: Final = GroupVersionKind("", "v1", "Pod")
JOB_GVK: Final = GroupVersionKind("batch", "v1", "Job")
DEPLOYMENT_GVK: Final = GroupVersionKind("apps", "v1", "Deployment")
ENDPOINT_SLICE_GVK: Final = GroupVersionKind("discovery.k8s.io", "v1", "EndpointSlice")
PRIORITY_CLASS_GVK: Final = GroupVersionKind("scheduling.k8s.io", "v1", "PriorityClass")
CRD_GVK: Final = GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
SUBJECT_ACCESS_REVIEW_GVK: Final = GroupVersionKind("authorization.k8s.io", "v1", "SubjectAccessReview")
SELF_SUBJECT_ACCESS_REVIEW_GVK: Final = GroupVersionKind(
    "authorization.k8s.io", "v1", "SelfSubjectAccessReview"
)
MUTATING_WEBHOOK_CONFIGURATION_GVK: Final = GroupVersionKind(
    "admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"
)
VALIDATING_WEBHOOK_CONFIGURATION_GVK: Final = GroupVersionKind(
    "admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"
)
