"""The embedded Kubernetes API server (LOCAL RUNS AND TESTS ONLY).

Emulates what kueue-bridge's components and their tests see of kube-apiserver, with its texts
(``Status`` reasons, codes and messages; field-error causes; watch and discovery shapes) matched
exactly: discovery for the built-in kinds the project uses and for CRDs; get/list/watch/create/
update/patch/delete with server-owned metadata, generation, status subresources, optimistic
concurrency, finalizers and propagation policies; list pagination and watch resumption with 410
Expired; built-in defaulting and validation; CRDs with structural schema pruning, defaulting and
validation; the four patch types; server-side apply and ``managedFields``; mutating and validating
admission webhooks called like the real server calls them; the garbage collector, namespace and
CRD cleanup controllers; bearer-token authentication (no credentials: ``system:anonymous``,
forbidden) and SubjectAccessReview answers; server-side printing (the ``meta.k8s.io`` Tables
``kubectl get`` asks for) and metadata-only answers; optional SQLite persistence.

Its parts, in floors (a floor imports only the floors below it; ``pyproject.toml`` enforces it):

* ``app`` (the raw ASGI application: routing, authentication, responses; :class:`DevClusterApp`)
  and ``controllers`` (garbage collector, namespace and CRD cleanup);
* ``deletion`` (DELETE), then ``rest`` (get, list, create, update, patch: the write pipeline);
* ``core`` (:class:`Cluster`: the registry, the store, the indexes the controllers use);
* ``storage/`` (store, watch, pagination, SQLite persistence), ``customresources/`` (CRDs,
  structural schemas, ratcheting), ``output/`` (Tables, printers, JSONPath columns,
  metadata-only answers), ``auth/`` (authentication, SubjectAccessReviews, RBAC) and ``admission``
  (calling the webhooks);
* ``request/`` (bodies and media types, protobuf, query options, decoding, PATCH bodies);
* ``validation/`` (the built-in write strategy and per-kind validation) and ``fieldmanager/``
  (server-side apply, field sets and ownership);
* ``registry/`` (resource types and discovery, the built-in kinds, per-request views, Events,
  OpenAPI) and ``selectors``;
* ``errors`` (``Status`` errors) and ``options`` (:class:`ServerOptions`).

:mod:`devcluster.server` hosts the app.

Deliberately not done (known differences from kube-apiserver, each documented in its module):

* No RBAC enforcement: every authenticated user may do anything; SubjectAccessReviews are answered
  from a static policy (:attr:`ServerOptions.access_rules`), then from the stored RBAC objects
  (:mod:`.auth.rbac`; no ClusterRole aggregation, no bootstrap roles).
* Admission: ``matchPolicy: Equivalent`` is exact matching (one served version per resource). The
  built-in controllers' writes skip webhooks. ``matchConditions`` are evaluated as kube does
  (:mod:`.match_conditions`; ``authorizer`` answers from the devcluster's SubjectAccessReview rules,
  :mod:`.cel_authorizer`); configurations are checked for CEL syntax errors and undeclared
  variables, but kube's other type errors (unknown ``request`` fields or functions, overloads,
  non-bool results) surface per request as evaluation errors instead of a 422.
* Impersonation headers are authorized as kube 1.36 does (system:masters, RBAC, static access
  rules; :mod:`.auth.impersonation`).
* CRDs are Established at once; objects are stored once and served in every version with only
  ``apiVersion`` rewritten (a Webhook conversion strategy is treated as None).
* Structural schemas: ``x-kubernetes-validations`` (CEL) rules (hence their ratcheting),
  ``oneOf``/``not`` and formats other than ``date-time`` are not implemented; defaults are applied
  on write, and to stored objects when their CRD's schema changes (kube defaults on every read: a
  watch replaying history shows the old shape). Schema errors are ratcheted on update like 1.33+
  (:mod:`.customresources.ratcheting`).
* Built-in kinds: only those the project talks to, with only the defaulting and validation rules
  its tests depend on.
* Strategic merge patch knows the merge keys of the fields our kinds use. Server-side apply and
  ``managedFields`` follow structured-merge-diff (:mod:`.fieldmanager.managedfields`), with the built-in
  kinds' list and map strategies written down only for the kinds served
  (:mod:`.fieldmanager.builtin_fieldtypes`): an apply of an unknown field below a built-in kind's top
  level is not rejected, and entries of other apiVersions are compared in the request's version.
* Watch history is in memory only: after a restart a resuming watch gets 410 Expired.
* ``/openapi/v2`` is not served; ``/openapi/v3`` lists operations without schemas.
* No kubelet, scheduler or kube-controller-manager beyond the controllers above: nothing runs
  Pods, and Jobs only progress when :mod:`devcluster.standin`'s job runner is started.
* No cluster network: webhook Services are resolved through
  :attr:`ServerOptions.service_resolver`.

This package never imports :mod:`devcluster.standin` or :mod:`devrun`; clients reach it over HTTP.

Modules:

* ``admission`` -- dynamic admission webhooks, called exactly the way kube-apiserver calls them
* ``app`` -- the raw ASGI application: routing, request decoding, authentication and responses
* ``cel_authorizer`` -- the ``authorizer`` variable of admission CEL expressions (kube's
  ``library.Authz``)
* ``cel_checks`` -- the part of kube's CEL type check the devcluster can reproduce for webhook
  ``matchConditions``
* ``controllers`` -- controllers standing in for kube-controller-manager: garbage collector,
  namespace and CRD cleanup
* ``core`` -- the cluster state shared by the HTTP layer, the verbs and the controllers
* ``deletion`` -- DELETE: preconditions, finalizers, propagation policies and the delete response
* ``errors`` -- Kubernetes ``Status`` errors, with the reasons, codes and message formats
  kube-apiserver uses
* ``match_conditions`` -- webhook ``matchConditions``: compiled once, evaluated per request, judged
  as kube-apiserver does
* ``options`` -- server options: everything a devcluster instance is configured with, passed in
  explicitly
* ``rest`` -- the verbs: get, list, create, update and patch, with kube-apiserver's object semantics
* ``selectors`` -- label and field selectors with kube-apiserver's syntax and semantics
* ``webhook_answers`` -- what a webhook's answer means: response verification, denial texts and
  JSONPatch application
* ``auth/`` -- who is asking and what they may do: bearer-token authentication, SubjectAccessReview
  answers from a static policy and RBAC
* ``customresources/`` -- CustomResourceDefinitions: served resource types from CRD objects,
  structural schemas (pruning, defaulting, validation) and validation ratcheting
* ``fieldmanager/`` -- server-side apply and ``managedFields``: field sets, merge strategies,
  structured-merge-diff's operations, the field manager, and the request side of ownership
* ``output/`` -- answers beyond plain JSON: server-side printing (``meta.k8s.io`` Tables, kube's
  printers for built-in kinds, CRD columns by JSONPath) and metadata-only answers
* ``registry/`` -- which resources exist and how they are addressed: the resource registry and
  discovery documents, the built-in kinds, how a request sees its resource (served version, codec,
  Events), OpenAPI
* ``request/`` -- reading a request: bodies and media types (JSON, protobuf), query options,
  decoding a body into an object, and PATCH bodies
* ``storage/`` -- where objects live: the in-memory store (one table per resource, a global
  revision, bounded watch history), its optional SQLite write-through, watch streams and list
  pagination
* ``validation/`` -- kube-apiserver's built-in write strategy and validation, with its rules and
  texts: ObjectMeta, batch/v1 Job and its status, Pod, Event, and the per-kind dispatch
  (``strategy``)
"""

from devcluster.apiserver.app import DevClusterApp
from devcluster.apiserver.controllers import Controllers
from devcluster.apiserver.core import Cluster
from devcluster.apiserver.options import ADMIN_USER, ServerOptions

__all__ = ["ADMIN_USER", "Cluster", "Controllers", "DevClusterApp", "ServerOptions"]
