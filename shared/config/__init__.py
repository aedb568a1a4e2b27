"""kueue-bridge's configuration: Kueue's ``config.kueue.x-k8s.io/v1beta2`` ``Configuration`` format.

One file configures all three components. It uses Kueue's field names, defaults and validation
messages (``apis/config/v1beta2``, ``pkg/config/validation.go``) so an operator who knows Kueue knows
this file, plus exactly one extension section, ``kueueBridge``, for settings Kueue has no place for.

Invariants:

* **Nothing is ignored silently.** Every model forbids unknown fields and accepts only the camelCase
  wire names; types are strict (``"300"`` is not an integer). Kueue fields kueue-bridge has no use
  for (``fairSharing``, ``resources``, ...) are accepted and preserved as opaque values, so a copy of
  Kueue's own file is a valid starting point.
* **Decode, default, validate** -- Kueue's order. Defaults that depend on other fields
  (``managedJobsNamespaceSelector`` and ``leaderElection.resourceNamespace`` from ``namespace``,
  ``waitForPodsReady.recoveryTimeout`` from ``timeout``) are filled before validation, so the
  normalised file printed by ``kueue-bridge config validate`` is exactly what the components run with.
* **All errors at once**, each a ``(field path, message)`` pair: pydantic's structural errors
  (translated to camelCase paths) and Kueue's semantic rules are collected together; when one
  section is structurally broken, the rules of the other sections still run.
* **Frozen.** Components receive the configuration explicitly and cannot change it.

Framework names: ``integrations.frameworks`` lists built-in adapters by Kueue's framework name;
``integrations.externalFrameworks`` lists kinds as ``Kind.version.group``. A plain string there is
accepted only when it names the kind of a built-in adapter (``PipelineRun.v1.tekton.dev`` is how
Kueue users already configure Tekton) and enables that adapter; any other kind needs the object form
with a declarative ``adapter`` (``shared.frameworks.spec``), since kueue-bridge would otherwise have
nothing to run for it. An empty ``frameworks`` list is allowed only when ``externalFrameworks`` is
not empty: kueue-bridge must manage at least one kind, but need not manage a built-in one.

Modules: ``model`` (the sections, their defaults and field names), ``rules`` (Kueue's semantic
validation), ``loading`` (a file or text to a validated ``Configuration``, or ``ConfigError``).
Import from ``shared.config``; the split is an internal layout.

Modules:

* ``loading`` -- reading a configuration file: YAML (duplicate keys refused), pydantic errors
  translated to camelCase field paths, Kueue's rules, and ``ConfigError`` carrying every issue at
  once
* ``model`` -- the ``Configuration`` document's models: Kueue's v1beta2 sections, defaults and field
  names
* ``rules`` -- Kueue's semantic validation rules (``pkg/config/validation.go``) over a decoded
  ``Configuration``
"""

from __future__ import annotations

from shared.config import model
from shared.config.loading import (
    ConfigError,
    default_config,
    dump_config,
    load_config,
    parse_config,
)
from shared.config.model import *  # noqa: F403  (re-exports model.__all__, listed there once)
from shared.config.rules import (
    ConfigIssue,
    validate_configuration,
)

__all__ = [
    "ConfigError",
    "ConfigIssue",
    "default_config",
    "dump_config",
    "load_config",
    "parse_config",
    "validate_configuration",
]
__all__ += model.__all__
