"""Every Kueue label, annotation, finalizer, condition type, reason and event name we use.

Users debug kueue-bridge with ``kubectl describe`` and Kueue's documentation, so these strings must be
byte-for-byte Kueue's (``pkg/controller/constants``, ``apis/kueue/v1beta2``,
``pkg/controller/jobframework``). Nothing else in the code base spells them out: import them from
here, so a rename in Kueue is one edit and a typo is impossible to hide.
"""

from __future__ import annotations

from typing import Final

from shared.kube import GroupVersionKind

__all__ = [
    "ADMISSION_CHECK_GVK",
    "ADMISSION_GATED_BY_ANNOTATION",
    "API_GROUP",
    "API_VERSION",
    "API_VERSION_V1BETA1",
    "BATCH_JOB_COMPLETION_INDEX_ANNOTATION",
    "BATCH_JOB_MANAGED_LABELS",
    "CLUSTER_QUEUE_GVK",
    "CLUSTER_QUEUE_LABEL",
    "COHORT_GVK",
    "DEFAULT_LOCAL_QUEUE_NAME",
    "DEFAULT_PODSET_NAME",
    "DEFAULT_PRIORITY",
    "DEFAULT_WORKLOAD_PRIORITY_CLASS_NAME",
    "ELASTIC_JOB_ANNOTATION",
    "ELASTIC_JOB_ANNOTATION_VALUE",
    "ELASTIC_JOB_SCHEDULING_GATE",
    "EVICTED_ON_MANAGER_CLUSTER",
    "JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION",
    "JOB_MIN_PARALLELISM_ANNOTATION",
    "JOB_OWNER_GVK_ANNOTATION",
    "JOB_OWNER_NAME_ANNOTATION",
    "JOB_UID_LABEL",
    "KUBERNETES_JOB_CONTROLLER",
    "LOCAL_QUEUE_GVK",
    "LOCAL_QUEUE_LABEL",
    "LONG_MAX_WORKLOAD_NAME_LENGTH",
    "MANAGED_OWNERS_CHAIN_LIMIT",
    "MAX_EXEC_TIME_SECONDS_LABEL",
    "MAX_PODSETS",
    "MULTIKUEUE_CLUSTER_ACTIVE",
    "MULTIKUEUE_CLUSTER_GVK",
    "MULTIKUEUE_CONFIG_GVK",
    "MULTIKUEUE_CONFIG_SECRET_KEY",
    "MULTIKUEUE_CONTROLLER_NAME",
    "MULTIKUEUE_DISPATCHER_ALL_AT_ONCE",
    "MULTIKUEUE_DISPATCHER_INCREMENTAL",
    "MULTIKUEUE_EVENT_REASON",
    "MULTIKUEUE_ORIGIN_LABEL",
    "MULTIKUEUE_WORKER_WORKLOAD_POD_LABEL",
    "MULTIKUEUE_WORKER_WORKLOAD_POD_VALUE",
    "PODSET_GROUP_NAME_ANNOTATION",
    "PODSET_LABEL",
    "PODSET_PREFERRED_TOPOLOGY_ANNOTATION",
    "PODSET_REQUIRED_TOPOLOGY_ANNOTATION",
    "PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION",
    "PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION",
    "PODSET_SLICE_SIZE_ANNOTATION",
    "PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION",
    "POD_PRIORITY_CLASS_GROUP",
    "POD_PRIORITY_CLASS_KIND",
    "PREBUILT_WORKLOAD_ANNOTATION",
    "PREBUILT_WORKLOAD_LABEL",
    "PRIORITY_BOOST_ANNOTATION",
    "PROVREQ_ANNOTATION_PREFIX",
    "QUEUE_LABEL",
    "RESOURCE_FLAVOR_GVK",
    "RESOURCE_IN_USE_FINALIZER",
    "SHORT_MAX_WORKLOAD_NAME_LENGTH",
    "STOPPING_ANNOTATION",
    "TOPOLOGY_SCHEDULING_GATE",
    "WORKLOAD_ANNOTATION",
    "WORKLOAD_GVK",
    "WORKLOAD_NAME_HASH_LENGTH",
    "WORKLOAD_PRIORITY_CLASS_GROUP",
    "WORKLOAD_PRIORITY_CLASS_GVK",
    "WORKLOAD_PRIORITY_CLASS_KIND",
    "WORKLOAD_PRIORITY_CLASS_LABEL",
    "WORKLOAD_SLICE_NAME_ANNOTATION",
    "WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION",
    "CheckState",
    "Condition",
    "EventReason",
    "Reason",
    "StopReason",
]

# --- API -------------------------------------------------------------------------------------------
API_GROUP: Final = "kueue.x-k8s.io"
API_VERSION: Final = "kueue.x-k8s.io/v1beta2"
API_VERSION_V1BETA1: Final = "kueue.x-k8s.io/v1beta1"

#: Kueue's kinds, in the version the components read and write
WORKLOAD_GVK: Final = GroupVersionKind(API_GROUP, "v1beta2", "Workload")
LOCAL_QUEUE_GVK: Final = GroupVersionKind(API_GROUP, "v1beta2", "LocalQueue")
CLUSTER_QUEUE_GVK: Final = GroupVersionKind(API_GROUP, "v1beta2", "ClusterQueue")
COHORT_GVK: Final = GroupVersionKind(API_GROUP, "v1beta2", "Cohort")
RESOURCE_FLAVOR_GVK: Final = GroupVersionKind(API_GROUP, "v1beta2", "ResourceFlavor")
ADMISSION_CHECK_GVK: Final = GroupVersionKind(API_GROUP, "v1beta2", "AdmissionCheck")
WORKLOAD_PRIORITY_CLASS_GVK: Final = GroupVersionKind(API_GROUP, "v1beta2", "WorkloadPriorityClass")
MULTIKUEUE_CONFIG_GVK: Final = GroupVersionKind(API_GROUP, "v1beta2", "MultiKueueConfig")
MULTIKUEUE_CLUSTER_GVK: Final = GroupVersionKind(API_GROUP, "v1beta2", "MultiKueueCluster")

# --- job labels and annotations ------------------------------------------------------------------
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
DEFAULT_LOCAL_QUEUE_NAME: Final = "default"
PREBUILT_WORKLOAD_LABEL: Final = "kueue.x-k8s.io/prebuilt-workload-name"  # label or annotation
PREBUILT_WORKLOAD_ANNOTATION: Final = PREBUILT_WORKLOAD_LABEL  # Kueue uses the same key for both
WORKLOAD_PRIORITY_CLASS_LABEL: Final = "kueue.x-k8s.io/priority-class"
DEFAULT_WORKLOAD_PRIORITY_CLASS_NAME: Final = "default"
MAX_EXEC_TIME_SECONDS_LABEL: Final = "kueue.x-k8s.io/max-exec-time-seconds"
ELASTIC_JOB_ANNOTATION: Final = "kueue.x-k8s.io/elastic-job"
ELASTIC_JOB_ANNOTATION_VALUE: Final = "true"
ELASTIC_JOB_SCHEDULING_GATE: Final = "kueue.x-k8s.io/elastic-job"
ADMISSION_GATED_BY_ANNOTATION: Final = "kueue.x-k8s.io/admission-gated-by"
PROVREQ_ANNOTATION_PREFIX: Final = "provreq.kueue.x-k8s.io/"
# batch/v1 Job only
JOB_MIN_PARALLELISM_ANNOTATION: Final = "kueue.x-k8s.io/job-min-parallelism"
JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION: Final = "kueue.x-k8s.io/job-completions-equal-parallelism"
STOPPING_ANNOTATION: Final = "kueue.x-k8s.io/stopping"
BATCH_JOB_COMPLETION_INDEX_ANNOTATION: Final = "batch.kubernetes.io/job-completion-index"
#: ``batchv1.JobControllerName``: the only ``spec.managedBy`` the job controller acts on
KUBERNETES_JOB_CONTROLLER: Final = "kubernetes.io/job-controller"
# Pod template labels owned by the Kubernetes job controller (``job_controller.go: managedLabels``).
BATCH_JOB_MANAGED_LABELS: Final = (
    "controller-uid",
    "job-name",
    "batch.kubernetes.io/controller-uid",
    "batch.kubernetes.io/job-name",
)

# --- Workload metadata -----------------------------------------------------------------------------
JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"
RESOURCE_IN_USE_FINALIZER: Final = "kueue.x-k8s.io/resource-in-use"
WORKLOAD_SLICE_NAME_ANNOTATION: Final = "kueue.x-k8s.io/workload-slice-name"
WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION: Final = "kueue.x-k8s.io/workload-slice-replacement-for"

# --- Workload naming (``jobframework/workload_names.go``) ------------------------------------------
WORKLOAD_NAME_HASH_LENGTH: Final = 5
LONG_MAX_WORKLOAD_NAME_LENGTH: Final = 253
SHORT_MAX_WORKLOAD_NAME_LENGTH: Final = 63  # feature gate ShortWorkloadNames

# --- priority (``apis/kueue/v1beta2``, ``pkg/constants``) ------------------------------------------
#: ``kueue.x-k8s.io/priority-boost``: added to a Workload's priority in queue order (PriorityBoost gate)
PRIORITY_BOOST_ANNOTATION: Final = "kueue.x-k8s.io/priority-boost"
WORKLOAD_PRIORITY_CLASS_GROUP: Final = "kueue.x-k8s.io"
WORKLOAD_PRIORITY_CLASS_KIND: Final = "WorkloadPriorityClass"
POD_PRIORITY_CLASS_GROUP: Final = "scheduling.k8s.io"
POD_PRIORITY_CLASS_KIND: Final = "PriorityClass"
DEFAULT_PRIORITY: Final = 0

# --- pod template labels/annotations injected on start ------------------------------------------
PODSET_LABEL: Final = "kueue.x-k8s.io/podset"
LOCAL_QUEUE_LABEL: Final = "kueue.x-k8s.io/local-queue-name"
CLUSTER_QUEUE_LABEL: Final = "kueue.x-k8s.io/cluster-queue-name"
WORKLOAD_ANNOTATION: Final = "kueue.x-k8s.io/workload"
TOPOLOGY_SCHEDULING_GATE: Final = "kueue.x-k8s.io/topology"

# --- pod template annotations of Topology Aware Scheduling (``apis/kueue/v1beta2/topology_types.go``)
PODSET_REQUIRED_TOPOLOGY_ANNOTATION: Final = "kueue.x-k8s.io/podset-required-topology"
PODSET_PREFERRED_TOPOLOGY_ANNOTATION: Final = "kueue.x-k8s.io/podset-preferred-topology"
PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION: Final = "kueue.x-k8s.io/podset-unconstrained-topology"
PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION: Final = "kueue.x-k8s.io/podset-slice-required-topology"
PODSET_SLICE_SIZE_ANNOTATION: Final = "kueue.x-k8s.io/podset-slice-size"
PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION: Final = (
    "kueue.x-k8s.io/podset-slice-required-topology-constraints"
)
PODSET_GROUP_NAME_ANNOTATION: Final = "kueue.x-k8s.io/podset-group-name"

# --- MultiKueue ------------------------------------------------------------------------------------
MULTIKUEUE_CONTROLLER_NAME: Final = "kueue.x-k8s.io/multikueue"
MULTIKUEUE_ORIGIN_LABEL: Final = "kueue.x-k8s.io/multikueue-origin"
MULTIKUEUE_WORKER_WORKLOAD_POD_LABEL: Final = "kueue.x-k8s.io/multikueue-worker-workload-pod"
MULTIKUEUE_WORKER_WORKLOAD_POD_VALUE: Final = "true"
MULTIKUEUE_CONFIG_SECRET_KEY: Final = "kubeconfig"  # the Secret data key holding a worker's kubeconfig
MULTIKUEUE_CLUSTER_ACTIVE: Final = "Active"  # condition type of MultiKueueCluster and AdmissionCheck
MULTIKUEUE_EVENT_REASON: Final = "MultiKueue"  # reason (and action) of the workload events
EVICTED_ON_MANAGER_CLUSTER: Final = "EvictedOnManagerCluster"  # DeactivationTarget reason on a remote
JOB_OWNER_GVK_ANNOTATION: Final = "kueue.x-k8s.io/job-owner-gvk"  # multi-owner Workloads (LWS)
JOB_OWNER_NAME_ANNOTATION: Final = "kueue.x-k8s.io/job-owner-name"
MULTIKUEUE_DISPATCHER_ALL_AT_ONCE: Final = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
MULTIKUEUE_DISPATCHER_INCREMENTAL: Final = "kueue.x-k8s.io/multikueue-dispatcher-incremental"

# --- limits ----------------------------------------------------------------------------------------
DEFAULT_PODSET_NAME: Final = "main"
MAX_PODSETS: Final = 18
MANAGED_OWNERS_CHAIN_LIMIT: Final = 10


class Condition:
    """Workload condition types (``apis/kueue/v1beta2/workload_types.go``)."""

    QUOTA_RESERVED: Final = "QuotaReserved"
    ADMITTED: Final = "Admitted"
    FINISHED: Final = "Finished"
    PODS_READY: Final = "PodsReady"
    EVICTED: Final = "Evicted"
    PREEMPTED: Final = "Preempted"
    REQUEUED: Final = "Requeued"
    DEACTIVATION_TARGET: Final = "DeactivationTarget"


class Reason:
    """Condition reasons written on Workloads."""

    # Finished
    SUCCEEDED: Final = "Succeeded"
    FAILED: Final = "Failed"
    OUT_OF_SYNC: Final = "OutOfSync"
    OWNER_NOT_FOUND: Final = "OwnerNotFound"
    FAILED_TO_START: Final = "FailedToStart"
    WORKLOAD_SLICE_REPLACED: Final = "WorkloadSliceReplaced"
    # QuotaReserved / Admitted
    QUOTA_RESERVED: Final = "QuotaReserved"
    ADMITTED: Final = "Admitted"
    PENDING: Final = "Pending"  # deprecated: UnadmittedWorkloadsObservability off
    PENDING_EVALUATION: Final = "PendingEvaluation"
    # QuotaReserved=False, UnadmittedWorkloadsObservability (Beta, on by default since 0.19)
    WAITING_FOR_QUOTA: Final = "WaitingForQuota"
    EXCEEDS_MAX_QUOTA: Final = "ExceedsMaxQuota"
    NO_MATCHING_FLAVOR: Final = "NoMatchingFlavor"
    WAITING_FOR_PREEMPTED_WORKLOADS: Final = "WaitingForPreemptedWorkloads"
    MISCONFIGURED: Final = "Misconfigured"
    NO_RESERVATION: Final = "NoReservation"
    UNSATISFIED_ADMISSION_CHECKS: Final = "UnsatisfiedAdmissionChecks"
    ON_HOLD: Final = "OnHold"
    # Evicted
    PREEMPTED: Final = "Preempted"
    PODS_READY_TIMEOUT: Final = "PodsReadyTimeout"
    ADMISSION_CHECK: Final = "AdmissionCheck"
    CLUSTER_QUEUE_STOPPED: Final = "ClusterQueueStopped"
    LOCAL_QUEUE_STOPPED: Final = "LocalQueueStopped"
    DEACTIVATED: Final = "Deactivated"
    NODE_FAILURES: Final = "NodeFailures"
    # Preempted (``apis/kueue/v1beta2/workload_types.go``, the preemption's place)
    IN_CLUSTER_QUEUE: Final = "InClusterQueue"
    IN_COHORT_RECLAIM_WHILE_BORROWING: Final = "InCohortReclaimWhileBorrowing"
    # Requeued
    REACTIVATED: Final = "Reactivated"
    BACKOFF_FINISHED: Final = "BackoffFinished"
    # PodsReady
    WAIT_FOR_START: Final = "WaitForStart"
    WAIT_FOR_RECOVERY: Final = "WaitForRecovery"
    STARTED: Final = "Started"
    RECOVERED: Final = "Recovered"


class StopReason:
    """Why the reconciler stops a job (``jobframework.StopReason``)."""

    WORKLOAD_DELETED: Final = "WorkloadDeleted"
    WORKLOAD_EVICTED: Final = "WorkloadEvicted"
    NO_MATCHING_WORKLOAD: Final = "NoMatchingWorkload"
    NOT_ADMITTED: Final = "NotAdmitted"


class EventReason:
    """Event reasons recorded on jobs (``jobframework/events.go``)."""

    STARTED: Final = "Started"
    SUSPENDED: Final = "Suspended"
    STOPPED: Final = "Stopped"
    DELETED: Final = "Deleted"
    CREATED_WORKLOAD: Final = "CreatedWorkload"
    DELETED_WORKLOAD: Final = "DeletedWorkload"
    UPDATED_WORKLOAD: Final = "UpdatedWorkload"
    FINISHED_WORKLOAD: Final = "FinishedWorkload"
    ERR_WORKLOAD_COMPOSE: Final = "ErrWorkloadCompose"
    UPDATED_ADMISSION_CHECK: Final = "UpdatedAdmissionCheck"
    JOB_NESTING_TOO_DEEP: Final = "JobNestingTooDeep"
    WORKLOAD_PRIORITY_CLASS_NOT_FOUND: Final = "WorkloadPriorityClassNotFound"
    # kueue-bridge's own (Kueue only logs): a write the API server refused as invalid (422)
    WRITE_REJECTED: Final = "WriteRejected"


class CheckState:
    """Admission check states."""

    PENDING: Final = "Pending"
    READY: Final = "Ready"
    RETRY: Final = "Retry"
    REJECTED: Final = "Rejected"
