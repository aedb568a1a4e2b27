"""kube-apiserver's built-in write strategy and validation, with its rules and texts: ObjectMeta,
batch/v1 Job and its status, Pod, Event, and the per-kind dispatch (``strategy``).

Modules:

* ``empty_collections`` -- what kube-apiserver's Go types do to empty maps and lists of built-in
  kinds
* ``event`` -- event validation, core ``v1`` and ``events.k8s.io/v1``, with kube-apiserver's rules
  and texts
* ``job`` -- batch/v1 Job validation on create and on update of the main resource: kube-apiserver
  1.36's rules
* ``job_status`` -- batch/v1 Job ``/status`` validation: kube-apiserver 1.36's
  ``ValidateJobUpdateStatus``
* ``objectmeta`` -- ObjectMeta validation with kube-apiserver's rules and message texts
* ``pod`` -- pod validation: what kube-apiserver 1.36 lets a create and an update of a Pod do
* ``strategy`` -- built-in decoding, defaulting and strategy steps, and the dispatch to per-kind
  validation
* ``webhook_configuration`` -- mutating/ValidatingWebhookConfiguration validation: the
  ``matchConditions`` rules of ``pkg/apis/admissionregistration/validation``, with kube-apiserver's
  field paths and texts
"""

__all__: list[str] = []
