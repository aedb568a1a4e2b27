"""The Kubernetes built-in kinds the components read and write, named once.

Kueue's own kinds are in ``shared.constants`` (beside their API group); a framework adapter's kind is
its adapter's (``shared.frameworks``). ``LEASE`` lives with leader election and the two Event kinds
with the event recorder.
"""

from __future__ import annotations

from typing import Final

from shared.kube.gvk import GroupVersionKind

__all__ = [
    "CRD_GVK",
    "JOB_GVK",
    "MUTATING_WEBHOOK_CONFIGURATION_GVK",
    "NAMESPACE_GVK",
    "POD_GVK",
    "PRIORITY_CLASS_GVK",
    "SECRET_GVK",
    "SUBJECT_ACCESS_REVIEW_GVK",
    "VALIDATING_WEBHOOK_CONFIGURATION_GVK",
]

NAMESPACE_GVK: Final = GroupVersionKind("", "v1", "Namespace")
SECRET_GVK: Final = GroupVersionKind("", "v1", "Secret")
POD_GVK: Final = GroupVersionKind("", "v1", "Pod")
JOB_GVK: Final = GroupVersionKind("batch", "v1", "Job")
PRIORITY_CLASS_GVK: Final = GroupVersionKind("scheduling.k8s.io", "v1", "PriorityClass")
CRD_GVK: Final = GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
SUBJECT_ACCESS_REVIEW_GVK: Final = GroupVersionKind("authorization.k8s.io", "v1", "SubjectAccessReview")
MUTATING_WEBHOOK_CONFIGURATION_GVK: Final = GroupVersionKind(
    "admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"
)
VALIDATING_WEBHOOK_CONFIGURATION_GVK: Final = GroupVersionKind(
    "admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"
)
