"""Network helpers both processes use when deciding how exposed a listening address is
(upstream: k8s.io/utils/net)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether `host` ("localhost" or an IP literal) only answers this machine; a name other
    than localhost is not known to be loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
