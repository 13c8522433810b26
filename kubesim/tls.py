"""kubesim's self-signed serving certificate, made at start (apimachinery.certificates).

kubectl (client-go's clientcmd) sends a kubeconfig's bearer token only over TLS, so kubesim
serves https with a fresh key pair; the kubeconfig it writes carries the certificate as
certificate-authority-data so every client verifies the server without extra flags.
"""

from __future__ import annotations

import datetime
import ipaddress

from apimachinery.certificates import IPAddress, ServingCertificate
from apimachinery.certificates import self_signed as _self_signed

__all__ = ["ServingCertificate", "self_signed"]


def self_signed(host: str, now: datetime.datetime | None = None) -> ServingCertificate:
    """A certificate for host, 127.0.0.1, ::1 and localhost."""
    dns_names = ["localhost"]
    addresses: set[IPAddress] = {ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")}
    try:
        addresses.add(ipaddress.ip_address(host))
    except ValueError:
        dns_names.append(host)
    return _self_signed("kubesim", dns_names, sorted(addresses, key=str), now)
