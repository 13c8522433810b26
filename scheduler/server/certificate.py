"""The secure port's certificate when none is given: self-signed, as kube-scheduler's.

kube-scheduler (k8s.io/apiserver SecureServingOptions.MaybeDefaultWithSelfSignedCerts, via
client-go's cert.GenerateSelfSignedCertKeyWithFixtures) serves a certificate it generates at
start for "localhost" and 127.0.0.1 plus the address it binds, valid one year, when
--tls-cert-file and --tls-private-key-file are not given and --cert-dir holds none. aiosched does
the same, in memory, with apimachinery.certificates (kubesim's generator too); this module
names what the certificate covers.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl

from apimachinery.certificates import IPAddress, self_signed, server_context

__all__ = ["self_signed_context", "self_signed_pem"]


def _names(bind_address: str) -> tuple[list[str], list[IPAddress]]:
    """(DNS names, IP addresses): localhost, the host name, 127.0.0.1 and the bound address."""
    names = ["localhost"]
    hostname = socket.gethostname()
    if hostname and hostname != "localhost":
        names.append(hostname)
    addresses: set[IPAddress] = {ipaddress.ip_address("127.0.0.1")}
    try:
        bound = ipaddress.ip_address(bind_address)
    except ValueError:  # a host name: it is covered only if it is one of the names above
        bound = None
    if bound is not None and not bound.is_unspecified:
        addresses.add(bound)
    return names, sorted(addresses, key=str)


def self_signed_pem(bind_address: str, now: datetime.datetime | None = None) -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM) for the secure port."""
    moment = now or datetime.datetime.now(datetime.UTC)
    names, addresses = _names(bind_address)
    # "host@unix-seconds", as client-go names the certificates it generates
    certificate = self_signed(f"localhost@{int(moment.timestamp())}", names, addresses, moment)
    return certificate.cert_pem, certificate.key_pem


def self_signed_context(bind_address: str) -> tuple[ssl.SSLContext, bytes]:
    """The secure port's context with a fresh self-signed certificate, and that certificate
    (PEM) for whoever wants to trust it."""
    cert_pem, key_pem = self_signed_pem(bind_address)
    return server_context(cert_pem, key_pem), cert_pem
