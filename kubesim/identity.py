"""The cluster's identity (bearer token, serving certificate) kept in --data-dir.

A real API server keeps its certificates and tokens across restarts; so does kubesim when it
persists data, so clients holding the kubeconfig it wrote keep working after a restart.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from kubesim import tls

TOKEN_FILE = "token"
CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"


def _write_private(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def load_or_create(
    data_dir: Path, host: str, token: str | None, use_tls: bool
) -> tuple[str, tls.ServingCertificate | None]:
    """The token and certificate stored in `data_dir`, created (and stored) on first use.

    An explicit `token` wins over the stored one (and replaces it).
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    token_path = data_dir / TOKEN_FILE
    if token is None and token_path.exists():
        token = token_path.read_text().strip()
    if not token:
        token = secrets.token_urlsafe(32)
    _write_private(token_path, token.encode())
    if not use_tls:
        return token, None
    cert_path, key_path = data_dir / CERT_FILE, data_dir / KEY_FILE
    if cert_path.exists() and key_path.exists():
        return token, tls.ServingCertificate(cert_path.read_bytes(), key_path.read_bytes())
    cert = tls.self_signed(host)
    _write_private(key_path, cert.key_pem)
    _write_private(cert_path, cert.cert_pem)
    return token, cert
