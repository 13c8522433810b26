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


def listener_uid(host: str, port: int) -> int | None:
    """The uid owning the socket that listens on this machine's `host`:`port` (a loopback
    address, or the wildcard that covers it), or None when none is found or the system says
    nothing (Linux's /proc/net/tcp and tcp6 list each socket's local address, state and uid)."""
    try:
        wanted = ipaddress.ip_address("127.0.0.1" if host == "localhost" else host)
    except ValueError:
        return None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as rows:
                lines = rows.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 8 or fields[3] != "0A":  # 0A: LISTEN
                continue
            address, _, port_hex = fields[1].partition(":")
            if int(port_hex, 16) != port:
                continue
            local = _proc_address(address)
            if local is not None and (local == wanted or local.is_unspecified):
                return int(fields[7])
    return None


def _proc_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An address as /proc/net/tcp* write it: hex, in host byte order per 32-bit word."""
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        return None
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(words)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address
