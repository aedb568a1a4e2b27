"""The common package of kueue-bridge: everything two components need, written once.

The webhook, the reconciler, the MultiKueue controller and the AppWrapper controller (and the
operator tools and the devcluster) share code only through this package. It is built in floors,
each a folder that imports only the floors below it (docs/architecture.md; the import contracts
of ``pyproject.toml`` hold it): process start-up, configuration, the job framework adapters,
Kueue's rules, the models, the Kubernetes client runtime. Plain helpers sit beside them.

Modules:

* ``runtime/`` -- process start-up: ``ControllerManager``, leader election, probes, the event loop;
* ``config/`` -- Kueue's Configuration with our section, loaded and validated as Kueue does;
* ``frameworks/`` -- Kueue's jobframework: ``GenericJob``, the adapters, the Workload builder;
* ``kueue/`` -- Kueue's job and Workload rules: names, PodSetInfo, equivalence, Workload state;
* ``models/`` -- the typed Kueue and Kubernetes objects (pydantic);
* ``kube/`` -- the async Kubernetes client runtime, a leaf library;
* ``preflight/`` -- the checks ``kueue-bridge preflight`` runs and the components run at start-up;
* ``constants`` -- every Kueue label, annotation, condition, reason and event name we use;
* ``validation_k8s`` -- Kubernetes' name and label validators, with apimachinery's texts;
* ``labelselector`` -- Kubernetes label selectors, as objects and as query strings;
* ``jsontree`` -- deep copies of decoded JSON;
* ``merge_patch`` -- RFC 7386 JSON merge patches from a before/after pair;
* ``durations`` -- Go duration strings <-> ``timedelta``;
* ``asgi_body`` -- reading an ASGI request body under a size limit;
* ``https_probe`` -- one HTTPS GET verified against a CA, the name not checked;
* ``identities`` -- who kueue-bridge's processes are on the API server;
* ``component_access`` -- what each of those identities may do, for one configuration;
* ``webhook_configurations`` -- the webhook configurations for the configured frameworks.

Invariant: ``shared`` imports none of the component packages; they import it.
"""

__all__: list[str] = []
