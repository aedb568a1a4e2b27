"""Answers beyond plain JSON: server-side printing (``meta.k8s.io`` Tables, kube's printers for
built-in kinds, CRD columns by JSONPath) and metadata-only answers.

Modules:

* ``crd_printer`` -- the printer of a stored resource type: kube's own for built-in kinds
  (:mod:`.printers`), the version's ``additionalPrinterColumns`` for custom resources (apiextensions
  ``tableconvertor``)
* ``jsonpath`` -- JSONPath as kube-apiserver evaluates CRD ``additionalPrinterColumns`` (client-go
  ``util/jsonpath``)
* ``partial`` -- metadata-only answers (``meta.k8s.io`` PartialObjectMetadata) for clients that ask
  for them
* ``printers`` -- kube-apiserver's own table columns for the built-in kinds the devcluster serves
* ``tables`` -- server-side printing: ``meta.k8s.io`` Tables for clients that ask for them
  (``kubectl get``)
"""

__all__: list[str] = []
