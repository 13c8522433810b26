"""The cluster's identity (bearer token, serving certificate) kept in --data-dir.

A real API server keeps its certificates and tokens across restarts; so does kubesim when it
persists data, so clients holding the kubeconfig it wrote keep working after a restart.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from kubesim import tls
from kubesim.private_files import write_private

TOKEN_FILE = "token"
CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"


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
    write_private(token_path, token.encode())
    if not use_tls:
        return token, None
    cert_path, key_path = data_dir / CERT_FILE, data_dir / KEY_FILE
    if cert_path.exists() and key_path.exists():
        return token, tls.ServingCertificate(cert_path.read_bytes(), key_path.read_bytes())
    cert = tls.self_signed(host)
    write_private(key_path, cert.key_pem)
    write_private(cert_path, cert.cert_pem)
    return token, cert
