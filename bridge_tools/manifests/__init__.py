"""``kueue-bridge manifests`` and ``make release-manifests``: the objects that deploy kueue-bridge.

``render`` builds the manifests for one configuration, ``cli`` is the command, ``release_bundle``
resolves ``deploy/``'s kustomizations into one YAML per install flavour.
"""

__all__: list[str] = []
