"""Self-signed serving certificates, made in memory at start.

As client-go's cert.GenerateSelfSignedCertKey (k8s.io/client-go/util/cert/cert.go), which both
kube-apiserver and kube-scheduler use when they are given no certificate: one ECDSA P-256 key, a
certificate valid from five minutes ago (clock skew) for one year, flagged as a CA so that a
client can trust it directly (certificate-authority-data), for server authentication, with the
DNS names and IP addresses the caller names. Who names what:
- kubesim (kubesim/tls.py): CN "kubesim", localhost, 127.0.0.1, ::1 and the host it serves on;
  its kubeconfig carries the certificate so kubectl and clients verify the server;
- the scheduler's secure port (scheduler/server/certificate.py): CN "localhost@<unix seconds>"
  as client-go names it, localhost, the host name, 127.0.0.1 and the bound address.

Python's ssl module loads a key only from a file, so `server_context` writes the PEM files to a
private temporary directory for the instant of loading and removes them at once.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: How long a generated certificate is valid (client-go's maxAge for it: one year).
VALIDITY = datetime.timedelta(days=365)
#: How far back a certificate is valid from, so a peer whose clock is a little behind accepts it.
BACKDATE = datetime.timedelta(minutes=5)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class ServingCertificate:
    """A PEM certificate and its PEM (PKCS#8) private key."""

    cert_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        """A server TLS context serving this certificate."""
        return server_context(self.cert_pem, self.key_pem)

    def client_context(self) -> ssl.SSLContext:
        """A client TLS context that trusts this (self-signed) certificate."""
        return ssl.create_default_context(cadata=self.cert_pem.decode())


def self_signed(
    common_name: str,
    dns_names: Iterable[str],
    ip_addresses: Iterable[IPAddress],
    now: datetime.datetime | None = None,
) -> ServingCertificate:
    """A fresh key and a CA-flagged serving certificate for the names and addresses given."""
    moment = now or datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    names += [x509.IPAddress(address) for address in ip_addresses]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(moment - BACKDATE)
        .not_valid_after(moment + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return ServingCertificate(certificate.public_bytes(serialization.Encoding.PEM), key_pem)


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
