"""Fixtures that run `aiosched cluster` (kubesim) as a separate process.

`cluster` yields a RunningCluster (.kubeconfig, .url, .token, .proc) for one test;
`shared_cluster` is one cluster per test module; `launch_cluster` is the context manager behind
both, for other scopes or extra flags.

kubesim serves https with a self-signed CA that it writes into the kubeconfig together with the
bearer token; readiness is probed exactly as kubectl would connect: that CA, that token.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

START_TIMEOUT = 30.0
SERVING_LINE = re.compile(r"kubesim: serving on (\S+)")


@dataclass(frozen=True)
class RunningCluster:
    kubeconfig: Path
    url: str
    token: str
    proc: subprocess.Popen[bytes]
    log: Path
    ca_pem: bytes | None = None

    def ssl_context(self) -> ssl.SSLContext | None:
        """What a client needs to verify this server (None: plain http)."""
        if self.ca_pem is None:
            return None
        return ssl.create_default_context(cadata=self.ca_pem.decode())


@dataclass(frozen=True)
class _Credentials:
    url: str
    token: str
    ca_pem: bytes | None


def _cluster_command() -> list[str]:
    """`aiosched cluster` from this virtualenv; KUBESIM_E2E_COMMAND (space-separated) overrides
    it, for debugging."""
    override = os.environ.get("KUBESIM_E2E_COMMAND")
    if override:
        return override.split()
    return [str(Path(sys.executable).with_name("aiosched")), "cluster"]


def _read_kubeconfig(path: Path) -> _Credentials:
    config = yaml.safe_load(path.read_text())
    cluster = config["clusters"][0]["cluster"]
    ca_data = cluster.get("certificate-authority-data")
    return _Credentials(
        url=str(cluster["server"]),
        token=str(config["users"][0]["user"]["token"]),
        ca_pem=base64.b64decode(ca_data) if ca_data else None,
    )


def _served_url(log: Path) -> str | None:
    """The URL from the `kubesim: serving on URL` line, printed once the port is open."""
    with contextlib.suppress(OSError):
        match = SERVING_LINE.search(log.read_text(errors="replace"))
        if match:
            return match.group(1)
    return None


def _ready(credentials: _Credentials) -> bool:
    request = urllib.request.Request(
        credentials.url + "/version", headers={"Authorization": f"Bearer {credentials.token}"}
    )
    context = (
        ssl.create_default_context(cadata=credentials.ca_pem.decode())
        if credentials.ca_pem is not None
        else None
    )
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _wait_ready(proc: subprocess.Popen[bytes], kubeconfig: Path, log: Path) -> _Credentials:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"cluster exited with {proc.returncode}:\n{log.read_text()}")
        url = _served_url(log)
        if url is not None and kubeconfig.exists():
            with contextlib.suppress(KeyError, IndexError, TypeError, yaml.YAMLError):
                credentials = _read_kubeconfig(kubeconfig)
                if credentials.url == url and _ready(credentials):
                    return credentials
        if time.monotonic() > deadline:
            raise RuntimeError(f"cluster not ready in {START_TIMEOUT}s:\n{log.read_text()}")
        time.sleep(0.05)


@contextlib.contextmanager
def launch_cluster(directory: Path, *extra_args: str, nodes: int = 3) -> Iterator[RunningCluster]:
    """Start the embedded cluster on a free port and stop it (SIGTERM, then SIGKILL) afterwards."""
    directory.mkdir(parents=True, exist_ok=True)
    kubeconfig = directory / "kubeconfig"
    log = directory / "cluster.log"
    command = [
        *_cluster_command(),
        "--port",
        "0",
        "--nodes",
        str(nodes),
        "--kubeconfig-out",
        str(kubeconfig),
        *extra_args,
    ]
    with log.open("wb") as log_file:
        proc = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, cwd=directory)
    try:
        credentials = _wait_ready(proc, kubeconfig, log)
        yield RunningCluster(
            kubeconfig=kubeconfig,
            url=credentials.url,
            token=credentials.token,
            proc=proc,
            log=log,
            ca_pem=credentials.ca_pem,
        )
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RunningCluster]:
    """A fresh 3-node cluster for one test."""
    with launch_cluster(tmp_path / "cluster") as running:
        yield running


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    """One 3-node cluster for a whole test module (tests keep to their own names)."""
    with launch_cluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running
