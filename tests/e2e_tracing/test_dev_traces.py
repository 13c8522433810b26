"""`python3 dev.py traces`: the local trace UI without Docker (Arize Phoenix) starts, prints the
flags that point aiosched at it, and those flags deliver traces to it over OTLP/HTTP and
OTLP/gRPC; stopping the command stops Phoenix.

Needs ``.venv-otlp-backend`` (``python3 dev.py test`` installs it).
"""

from __future__ import annotations

import itertools
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from otlp_backend import PHOENIX, ROOT, Phoenix, free_port
from processes import wait_until

from observability.tracing import setup_tracing

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.otlp_backend,
    pytest.mark.skipif(
        not PHOENIX.exists(), reason=f"no {PHOENIX}: `python3 dev.py test` installs it"
    ),
]


def read_banner(proc: subprocess.Popen[str], timeout: float = 120) -> str:
    """dev.py traces' output up to its last line, printed once Phoenix answers."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"dev.py traces ended: {''.join(lines)}{proc.stderr}")
        lines.append(line)
        if "OTEL_EXPORTER_OTLP_PROTOCOL=grpc" in line:
            return "".join(lines)
    raise AssertionError(f"no banner in {timeout} s: {''.join(lines)}")


def flags(banner: str, *prefix: str) -> dict[str, str]:
    """The --otel-* flags of the printed command line that starts with ``prefix``."""
    for line in banner.splitlines():
        words = shlex.split(line)
        if words[: len(prefix)] == list(prefix):
            pairs = itertools.pairwise(words)
            return {
                flag.removeprefix("--otel-"): value
                for flag, value in pairs
                if flag.startswith("--otel-")
            }
    raise AssertionError(f"no `{' '.join(prefix)}` line in:\n{banner}")


def record_pod(name: str, **overrides: str) -> None:
    tracing = setup_tracing(environ={"OTEL_BSP_SCHEDULE_DELAY": "100"}, **overrides)  # type: ignore[arg-type]
    pod = tracing.pod_span(f"default/{name}", f"uid-{name}", "default", name)
    attempt = tracing.attempt(pod, "default-scheduler", 1)
    with attempt.extension_point("Filter"):
        pass
    attempt.end("scheduled", node="n1")
    pod.bound("n1", attempts=1)
    tracing.shutdown()


def test_dev_traces_starts_phoenix_and_prints_flags_that_reach_it(tmp_path: Path) -> None:
    port, grpc_port = free_port(), free_port()
    proc = subprocess.Popen(
        [sys.executable, "dev.py", "traces", "--port", str(port), "--grpc-port", str(grpc_port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = read_banner(proc)
        ui = f"http://127.0.0.1:{port}"
        assert re.search(rf"UI:\s+{re.escape(ui)}\b", banner)
        assert f"--otel-endpoint {ui}\n" in banner
        http = flags(banner, "aiosched", "run", "[FLAGS]", "--otel-endpoint")
        grpc = flags(banner, "aiosched", "run", "[FLAGS]", "--otel-protocol")
        assert http == {"endpoint": ui}
        assert grpc == {"protocol": "grpc", "endpoint": f"http://127.0.0.1:{grpc_port}"}
        assert flags(banner, "python3", "dev.py", "run") == {"endpoint": ui}

        phoenix = Phoenix(proc, ui, tmp_path / "unused.log")  # type: ignore[arg-type]
        for name, overrides in (("over-http", http), ("over-grpc", grpc)):
            record_pod(name, **overrides)
            spans: list[dict[str, Any]] = wait_until(
                lambda name=name: phoenix.spans(attribute=f"k8s.pod.name:{name}"),  # type: ignore[misc]
                timeout=30,
                what=f"{name}'s spans in Phoenix",
            )
            assert {"PodScheduling", "SchedulingAttempt"} <= {span["name"] for span in spans}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    # Phoenix went with it: its ports are free again.
    wait_until(
        lambda: _nothing_listens(port) and _nothing_listens(grpc_port),
        timeout=15,
        what="Phoenix stopped",
    )


def _nothing_listens(port: int) -> bool:
    """(A bind test would fail on the connections in TIME_WAIT the test left behind.)"""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return True
    return False
