"""``kueue-bridge manifests`` and ``make release-manifests``: the objects that deploy kueue-bridge.

``render`` builds the manifests for one configuration, ``cli`` is the command, ``release_bundle``
resolves ``deploy/``'s kustomizations into one YAML per install flavour.

Modules:

* ``chart_tables`` -- ``charts/kueue-bridge/files/kinds.yaml``: the kind tables the Helm chart's
  templates read to derive its RBAC
* ``cli`` -- ``kueue-bridge manifests --config FILE [--part deploy|worker|kueue-config] [--image
  IMAGE]``
* ``release_bundle`` -- ``make release-manifests``: one YAML per install flavour, built from
  ``deploy/``, image tag pinned
* ``render`` -- ``kueue-bridge manifests``: the objects that deploy kueue-bridge with one
  configuration
"""

__all__: list[str] = []
