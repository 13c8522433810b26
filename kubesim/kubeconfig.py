"""The kubeconfig kubesim emits: plain http, a bearer token, one current context."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from kubesim.private_files import write_private

CONTEXT = "kubesim"


def render(url: str, token: str, ca_pem: bytes | None = None) -> str:
    cluster: dict[str, str] = {"server": url}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def write(path: Path, url: str, token: str, ca_pem: bytes | None = None) -> None:
    """Write atomically with mode 0600: the token is a credential (private_files.py)."""
    write_private(path, render(url, token, ca_pem).encode())
