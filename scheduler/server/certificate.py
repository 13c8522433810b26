"""The secure port's certificate when none is given: self-signed, as kube-scheduler's.

kube-scheduler (k8s.io/apiserver SecureServingOptions.MaybeDefaultWithSelfSignedCerts, via
client-go's cert.GenerateSelfSignedCertKeyWithFixtures) serves a certificate it generates at
start for "localhost" and 127.0.0.1 plus the address it binds, valid one year, when
--tls-cert-file and --tls-private-key-file are not given and --cert-dir holds none. aiosched does
the same, in memory: Python's ssl module loads a key only from a file, so the PEM files live in a
private temporary directory for the instant of loading and are removed at once.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

#: How long the generated certificate is valid (client-go's maxAge for it: one year).
VALIDITY = datetime.timedelta(days=365)


def _alternative_names(bind_address: str) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    hostname = socket.gethostname()
    if hostname and hostname != "localhost":
        names.append(x509.DNSName(hostname))
    addresses = {ipaddress.ip_address("127.0.0.1")}
    try:
        bound = ipaddress.ip_address(bind_address)
    except ValueError:  # a host name: it is covered only if it is one of the names above
        bound = None
    if bound is not None and not bound.is_unspecified:
        addresses.add(bound)
    names += [x509.IPAddress(address) for address in sorted(addresses, key=str)]
    return names


def self_signed_pem(
    bind_address: str, now: datetime.datetime | None = None
) -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM) for the secure port."""
    moment = now or datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    # "host@unix-seconds", as client-go names the certificates it generates
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                            f"localhost@{int(moment.timestamp())}")])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(moment - datetime.timedelta(minutes=5))
        .not_valid_after(moment + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(_alternative_names(bind_address)),
                       critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_encipherment=False,
                          content_commitment=False, data_encipherment=False, key_agreement=False,
                          key_cert_sign=True, crl_sign=False, encipher_only=False,
                          decipher_only=False),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                       critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def server_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """A server TLS context for a PEM certificate and key held in memory."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory(prefix="aiosched-serving-") as directory:
        cert_path, key_path = Path(directory) / "tls.crt", Path(directory) / "tls.key"
        for path, data in ((cert_path, cert_pem), (key_path, key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        context.load_cert_chain(cert_path, key_path)
    return context


def self_signed_context(bind_address: str) -> tuple[ssl.SSLContext, bytes]:
    """The secure port's context with a fresh self-signed certificate, and that certificate
    (PEM) for whoever wants to trust it."""
    cert_pem, key_pem = self_signed_pem(bind_address)
    return server_context(cert_pem, key_pem), cert_pem
