"""A real OTLP backend for the e2e tests: Arize Phoenix, started headless on free ports.

Phoenix lives in its own virtualenv (``.venv-otlp-backend``, installed by ``python3 dev.py
test``) so that its OpenTelemetry packages never meet the project's. It takes OTLP/HTTP at
``/v1/traces`` and answers span queries over its REST API (``/v1/projects/{project}/spans``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PHOENIX = ROOT / ".venv-otlp-backend" / "bin" / "phoenix"
PROJECT = "default"  # where spans without openinference.project.name land
STARTUP_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Phoenix:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    @property
    def otlp_endpoint(self) -> str:
        """The base URL for OTEL_EXPORTER_OTLP_ENDPOINT (``/v1/traces`` is appended)."""
        return self.url

    def healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"Phoenix exited:\n{self.log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def wait_healthy(self, timeout: float = STARTUP_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not self.healthy():
            if time.monotonic() > deadline:
                raise RuntimeError(f"Phoenix did not start:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.2)

    def spans(self, **filters: str | list[str]) -> list[dict[str, Any]]:
        """Spans stored in the backend, filtered as its REST API does: ``trace_id``,
        ``parent_id`` ("null" for root spans), ``name``, ``attribute`` ("key:value")..."""
        query = urllib.parse.urlencode({**filters, "limit": "1000"}, doseq=True)
        url = f"{self.url}/v1/projects/{PROJECT}/spans?{query}"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                found: list[dict[str, Any]] = json.load(response)["data"]
                return found
        except urllib.error.HTTPError as exc:
            if exc.code == 404:  # no span yet: the project is created by the first one
                return []
            raise

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def start_phoenix(workdir: Path) -> Phoenix:
    """Start Phoenix in the background; call :meth:`Phoenix.wait_healthy` before querying."""
    port = free_port()
    home = workdir / "phoenix"
    home.mkdir()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(home),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    for name in [n for n in env if n.startswith("OTEL_")]:
        del env[name]  # Phoenix must not trace itself into the test's backend
    log = workdir / "phoenix.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(PHOENIX), "serve"], stdout=out, stderr=subprocess.STDOUT, env=env
        )
    return Phoenix(proc, f"http://127.0.0.1:{port}", log)
