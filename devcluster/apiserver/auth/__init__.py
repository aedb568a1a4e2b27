"""Who is asking and what they may do: bearer-token authentication, SubjectAccessReview answers from a
static policy and RBAC.

Modules:

* ``authz`` -- authentication by bearer token, and SubjectAccessReview answers from a static policy
  and RBAC
* ``impersonation`` -- user impersonation (``Impersonate-User``/``-Group``/``-Uid``/``-Extra-<key>``
  headers), authorized
* ``rbac`` -- RBAC evaluation for SubjectAccessReviews: Roles, ClusterRoles and their bindings, as
  kube's authorizer
"""

__all__: list[str] = []
