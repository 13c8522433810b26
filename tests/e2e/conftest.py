"""Fixtures that run `aiosched cluster` (kubesim) as a separate process.

`cluster` yields a RunningCluster (.kubeconfig, .url, .token, .proc) for one test;
`shared_cluster` is one cluster per test module; `launch_cluster` is the context manager behind
both, for other scopes or extra flags.
"""

from __future__ import annotations

import contextlib
import os
import signal
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


@dataclass(frozen=True)
class RunningCluster:
    kubeconfig: Path
    url: str
    token: str
    proc: subprocess.Popen[bytes]
    log: Path


def _cluster_command() -> list[str]:
    """`aiosched cluster` from this virtualenv; `python -m kubesim.cli` while the CLI is broken.
    KUBESIM_E2E_COMMAND (space-separated) overrides both, for debugging."""
    override = os.environ.get("KUBESIM_E2E_COMMAND")
    if override:
        return override.split()
    script = Path(sys.executable).with_name("aiosched")
    if script.exists():
        probe = subprocess.run([str(script), "cluster", "--help"], capture_output=True,
                               timeout=60, check=False)
        if probe.returncode == 0:
            return [str(script), "cluster"]
    return [sys.executable, "-m", "kubesim.cli"]


def _read_kubeconfig(path: Path) -> tuple[str, str]:
    config = yaml.safe_load(path.read_text())
    server = str(config["clusters"][0]["cluster"]["server"])
    token = str(config["users"][0]["user"]["token"])
    return server, token


def _ready(url: str, token: str) -> bool:
    request = urllib.request.Request(url + "/version", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@contextlib.contextmanager
def launch_cluster(directory: Path, *extra_args: str, nodes: int = 3) -> Iterator[RunningCluster]:
    """Start the embedded cluster on a free port and stop it (SIGTERM, then SIGKILL) afterwards."""
    directory.mkdir(parents=True, exist_ok=True)
    kubeconfig = directory / "kubeconfig"
    log = directory / "cluster.log"
    command = [*_cluster_command(), "--port", "0", "--nodes", str(nodes),
               "--kubeconfig-out", str(kubeconfig), *extra_args]
    with log.open("wb") as log_file:
        proc = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT,
                                cwd=directory)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"cluster exited with {proc.returncode}:\n{log.read_text()}")
            if kubeconfig.exists():
                with contextlib.suppress(KeyError, IndexError, TypeError, yaml.YAMLError):
                    url, token = _read_kubeconfig(kubeconfig)
                    if _ready(url, token):
                        break
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster not ready in {START_TIMEOUT}s:\n{log.read_text()}")
            time.sleep(0.1)
        yield RunningCluster(kubeconfig=kubeconfig, url=url, token=token, proc=proc, log=log)
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
