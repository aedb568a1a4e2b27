"""Build the webhook's settings from the shared configuration and framework registry.

Kept apart from the rules so they stay testable without a configuration file: the rules see only
``WebhookSettings``; this module is the one place that knows ``shared.config`` field names
(Kueue v1beta2: ``manageJobsWithoutQueueName``, ``managedJobsNamespaceSelector``,
``integrations.frameworks``/``externalFrameworks``) and our ``kueueBridge.multiKueueControllerNames``
plus ``kueueBridge.multiKueue.controllerName`` (kueue-bridge's own MultiKueue counts as one too).
"""

from __future__ import annotations

import functools

from shared.config import Configuration
from shared.frameworks.batch_job import BatchJobAdapter
from shared.frameworks.builtin_kinds import APPWRAPPER, BATCH_JOB, PIPELINERUN
from shared.frameworks.registry import FrameworkRegistry
from shared.kueue.workload_slicing import FEATURE_GATE, FEATURE_GATE_DEFAULT
from shared.labelselector import selector_from_label_selector
from webhook.rules.settings import Framework, WebhookSettings

__all__ = ["frameworks_from_config", "settings_from_config"]


def frameworks_from_config(config: Configuration) -> tuple[Framework, ...]:
    registry = FrameworkRegistry.from_managed_kinds(config.managed_kinds())
    elastic_jobs = config.feature_gate(FEATURE_GATE, default=FEATURE_GATE_DEFAULT)
    return tuple(
        Framework(
            name=entry.name,
            gvk=entry.gvk,
            plural=entry.plural,
            adapter=(
                functools.partial(BatchJobAdapter, elastic_jobs=elastic_jobs)
                if entry.name == BATCH_JOB.name
                else entry.factory
            ),
            revalidate_create_on_update=entry.name == BATCH_JOB.name,
            elastic_gate_template_path="spec.template" if entry.name == BATCH_JOB.name else None,
            elastic_jobs=elastic_jobs,
            appwrapper_rules=entry.gvk == APPWRAPPER.gvk,
            external_prebuilt_workloads=not entry.builtin or entry.gvk == PIPELINERUN.gvk,
        )
        for entry in registry
    )


def settings_from_config(config: Configuration) -> WebhookSettings:
    return WebhookSettings(
        frameworks=frameworks_from_config(config),
        manage_jobs_without_queue_name=config.manage_jobs_without_queue_name,
        # compiled once: matching a LabelSelector model rebuilds its requirements on every call
        managed_jobs_namespace_selector=selector_from_label_selector(config.managed_jobs_namespace_selector),
        multikueue_controller_names=config.kueue_bridge.all_multikueue_controller_names,
    )
