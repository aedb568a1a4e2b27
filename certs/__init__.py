"""Certificate tooling: CA, serving certificates, rotation and caBundle injection.

The simple API (used by the devcluster for its own serving certificate, and by the webhook)::

    ca = generate_ca(common_name="my-ca", valid_for=timedelta(days=3650))
    pair = issue_serving_cert(ca=ca, dns_names=["localhost"], ip_addresses=["127.0.0.1"],
                              valid_for=timedelta(days=365))
    write_cert_dir(Path("certs"), serving=pair, ca_cert_pem=ca.cert_pem)   # tls.crt, tls.key, ca.crt

``KeyPair.cert_pem``/``key_pem`` are PEM bytes; ``CertificateAuthority.cert_pem`` is the caBundle.

Modules:

* ``__main__`` -- ``kueue-bridge certs generate|inject``: certificates for local runs and manual
  installs
* ``authority`` -- a private CA and the webhook's serving certificate, as PEM bytes
* ``bundle`` -- where certificates live: a certificate directory and the Secret that backs it
* ``kubeapi`` -- the Secret store and caBundle injector on the process's ``shared.kube`` client
* ``rotation`` -- keep the webhook's certificates valid: issue, store, inject, rotate before expiry
"""

from certs.authority import (
    DEFAULT_CA_VALIDITY,
    DEFAULT_SERVING_VALIDITY,
    LOOKAHEAD,
    ROTATION_CHECK_INTERVAL,
    CertificateAuthority,
    CertificateError,
    KeyPair,
    generate_ca,
    issue_serving_cert,
    service_dns_names,
)
from certs.bundle import (
    CA_CERT_FILE,
    TLS_CERT_FILE,
    TLS_KEY_FILE,
    CertBundle,
    read_cert_dir,
    write_cert_dir,
)
from certs.rotation import (
    CABundleInjector,
    CertRotator,
    ConflictError,
    RotationDecision,
    RotationSettings,
    SecretStore,
    StoredSecret,
    decide_rotation,
)

__all__ = [
    "CA_CERT_FILE",
    "DEFAULT_CA_VALIDITY",
    "DEFAULT_SERVING_VALIDITY",
    "LOOKAHEAD",
    "ROTATION_CHECK_INTERVAL",
    "TLS_CERT_FILE",
    "TLS_KEY_FILE",
    "CABundleInjector",
    "CertBundle",
    "CertRotator",
    "CertificateAuthority",
    "CertificateError",
    "ConflictError",
    "KeyPair",
    "RotationDecision",
    "RotationSettings",
    "SecretStore",
    "StoredSecret",
    "decide_rotation",
    "generate_ca",
    "issue_serving_cert",
    "read_cert_dir",
    "service_dns_names",
    "write_cert_dir",
]
