"""An extender's TLS settings → an ssl.SSLContext, as upstream's makeTransport builds them.

Upstream copies tlsConfig into a client-go rest.Config, forces ``insecure`` when enableHTTPS is
set without a CA, and asks restclient.TLSConfigFor: no TLS option at all means Go's default
transport (system roots, full verification), which here is aiohttp's default (None).
certData / keyData / caData are base64 in the file, as every []byte field of the config API.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator

from profiles.config import Extender, ExtenderTLS
from scheduler.framework.errors import FrameworkError


class ExtenderConfigError(FrameworkError):
    """An extender cannot be built from its configuration (bad TLS material, args...)."""


def ssl_context_for(extender: Extender, where: str = "extenders") -> ssl.SSLContext | None:
    """The context for requests to `extender`; None: aiohttp's default verification."""
    tls = extender.tls_config or ExtenderTLS()
    where = f"{where}.tlsConfig"
    ca_data = _decode(tls.ca_data, f"{where}.caData")
    cert_data = _decode(tls.cert_data, f"{where}.certData")
    key_data = _decode(tls.key_data, f"{where}.keyData")
    has_ca = bool(tls.ca_file or ca_data)
    has_cert = bool(tls.cert_file or cert_data)
    has_key = bool(tls.key_file or key_data)
    insecure = tls.insecure or (extender.enable_https and not has_ca)
    if not (has_ca or has_cert or has_key or insecure or tls.server_name):
        return None
    if insecure and has_ca:
        # client-go's TLSConfigFor refuses this combination.
        raise ExtenderConfigError(
            f"{where}: specifying a root certificates file with the insecure flag is not supported"
        )
    if has_cert != has_key:
        raise ExtenderConfigError(f"{where}: a client certificate requires its key, and back")
    try:
        if has_ca:
            context = ssl.create_default_context(
                cafile=tls.ca_file or None,
                cadata=ca_data.decode("ascii", "replace") if ca_data else None,
            )
        else:
            context = ssl.create_default_context()
        if has_cert:
            with (
                _pem_file(tls.cert_file, cert_data) as cert,
                _pem_file(tls.key_file, key_data) as key,
            ):
                context.load_cert_chain(cert, keyfile=key)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise ExtenderConfigError(f"{where}: {exc}") from exc
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _decode(data: str, where: str) -> bytes:
    if not data:
        return b""
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ExtenderConfigError(f"{where}: not valid base64: {exc}") from exc


@contextlib.contextmanager
def _pem_file(path: str, data: bytes) -> Iterator[str]:
    """`path`, or `data` in a private temporary file (ssl loads key pairs from files only)."""
    if path:
        yield path
        return
    fd, name = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        yield name
    finally:
        os.unlink(name)
