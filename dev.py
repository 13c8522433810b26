#!/usr/bin/env python3
"""Bootstrap and run aiosched from a fresh clone with nothing but Python 3.11+ and pip.

    python3 dev.py run [ARGS...]   install into .venv, then `aiosched run ARGS...`; without
                                   --kubeconfig, --master or --embedded among ARGS, the local
                                   demo: --embedded --insecure-http ARGS
    python3 dev.py test [ARGS...]  install into .venv (with the dev extra), then ruff, mypy,
                                   lint-imports, pytest (test files spread over one worker
                                   per core; AIOSCHED_TEST_WORKERS=N sets how many, 0 runs
                                   them in this process, as do `-n`/`-p no:xdist` in ARGS)
    python3 dev.py bench [ARGS...] install into .venv, then `aiosched bench ARGS...`
    python3 dev.py traces [--port P] [--grpc-port G]
                                   a local trace UI without Docker: Arize Phoenix, the OTLP
                                   backend the tests use, on 127.0.0.1:6006 (UI and OTLP/HTTP)
                                   and :4317 (OTLP/gRPC); prints how to point aiosched at it

The virtualenv lives in .venv beside this file; it is reinstalled when pyproject.toml changes.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / "python"
#: The real OTLP backend tests/e2e_tracing/test_otlp_backend.py exports traces to (Arize
#: Phoenix), in a virtualenv of its own so that its OpenTelemetry packages never meet .venv's.
OTLP_BACKEND_VENV = ROOT / ".venv-otlp-backend"
OTLP_BACKEND = "arize-phoenix==20.26.1"


def _run(*cmd: str | Path) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], cwd=ROOT, check=True)


def ensure_installed(extra: str) -> None:
    """Create .venv and install the project (editable) once per pyproject.toml content."""
    if not PYTHON.exists():
        print(f"creating virtualenv {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    spec = f".[{extra}]" if extra else "."
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + spec.encode()).hexdigest()
    stamp = VENV / f".installed-{extra or 'base'}"
    if stamp.exists() and stamp.read_text() == digest:
        return
    _run(PYTHON, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    # compat: the editable install is the repository's path in a .pth file, which mypy and
    # other static tools follow (the default, an import hook, they cannot: ARCHITECTURE.md,
    # "Why not one namespace")
    _run(
        PYTHON, "-m", "pip", "install", "--quiet", "-e", spec,
        "--config-settings", "editable_mode=compat",
    )  # fmt: skip
    stamp.write_text(digest)


def ensure_otlp_backend() -> None:
    """Create .venv-otlp-backend and install OTLP_BACKEND into it once per pinned version."""
    python = OTLP_BACKEND_VENV / BIN.name / "python"
    stamp = OTLP_BACKEND_VENV / ".installed"
    if python.exists() and stamp.exists() and stamp.read_text() == OTLP_BACKEND:
        return
    print(f"installing {OTLP_BACKEND} into {OTLP_BACKEND_VENV} (tracing e2e test)", flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(OTLP_BACKEND_VENV)
    _run(python, "-m", "pip", "install", "--quiet", OTLP_BACKEND)
    stamp.write_text(OTLP_BACKEND)


def _port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def traces(argv: list[str]) -> int:
    """Run Phoenix in the foreground until Ctrl-C, and say how to send it aiosched's traces.

    A dev.py command rather than an `aiosched` one: Phoenix lives in a virtualenv of its own
    (.venv-otlp-backend; its OpenTelemetry pins would clash with aiosched's), which dev.py
    already installs and pins for the tests, and a scheduler's image should not carry a trace
    UI. Its traces stay in .venv-otlp-backend/phoenix-data between runs."""
    parser = argparse.ArgumentParser(prog="python3 dev.py traces", description=traces.__doc__)
    parser.add_argument("--port", type=int, default=6006, help="UI and OTLP/HTTP (default 6006)")
    parser.add_argument("--grpc-port", type=int, default=4317, help="OTLP/gRPC (default 4317)")
    args = parser.parse_args(argv)
    for flag, port in (("--port", args.port), ("--grpc-port", args.grpc_port)):
        if not _port_is_free(port):
            message = f"dev.py traces: port {port} is in use; pick another with {flag}"
            print(message, file=sys.stderr)
            return 1
    ensure_otlp_backend()
    # a `kill` stops Phoenix too: SystemExit runs the `finally` below
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    data = OTLP_BACKEND_VENV / "phoenix-data"
    data.mkdir(exist_ok=True)
    env = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    env.update(  # Phoenix's settings; no OTEL_*: it must not trace itself
        PHOENIX_HOST="127.0.0.1",
        PHOENIX_PORT=str(args.port),
        PHOENIX_GRPC_PORT=str(args.grpc_port),
        PHOENIX_WORKING_DIR=str(data),
        PHOENIX_TELEMETRY_ENABLED="false",
    )
    log = OTLP_BACKEND_VENV / "phoenix.log"
    ui = f"http://127.0.0.1:{args.port}"
    grpc = f"http://127.0.0.1:{args.grpc_port}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(OTLP_BACKEND_VENV / BIN.name / "phoenix"), "serve"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        if not _wait_healthy(proc, f"{ui}/healthz"):
            print(f"dev.py traces: Phoenix did not start; its log ({log}):", file=sys.stderr)
            print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
            return 1
        print(
            f"""
Phoenix, a trace UI, is running (Ctrl-C stops it; its log: {log}).

  UI:         {ui}   (project "default"; find a pod with the span filter
              attributes["k8s.pod.name"] == "NAME")
  OTLP/HTTP:  {ui}   (/v1/traces is appended)
  OTLP/gRPC:  {grpc}

Point aiosched at it, in another shell:
  python3 dev.py run --embedded --insecure-http --otel-endpoint {ui}
  aiosched run [FLAGS] --otel-endpoint {ui}
  aiosched run [FLAGS] --otel-protocol grpc --otel-endpoint {grpc}
or with the standard variables (the flags win over them):
  export OTEL_EXPORTER_OTLP_ENDPOINT={ui}
  export OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_EXPORTER_OTLP_ENDPOINT={grpc}
""",
            flush=True,
        )
        return proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.3)
    return False


#: Flags that say which cluster to schedule on: given any, dev.py adds no demo flag.
CLUSTER_FLAGS = ("--kubeconfig", "--master", "--embedded")
#: Flags that configure the secure port's TLS: given any, dev.py does not add --insecure-http.
TLS_FLAGS = ("--tls-cert-file", "--tls-private-key-file", "--insecure-http")


def _has_flag(args: list[str], names: tuple[str, ...]) -> bool:
    return any(arg == name or arg.startswith(name + "=") for arg in args for name in names)


def _usable_cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)  # Linux: the cores this process may use
    return len(affinity(0)) if affinity else (os.cpu_count() or 1)


def pytest_arguments(rest: list[str]) -> list[str]:
    """pytest's arguments for `dev.py test REST`: REST, spread over pytest-xdist workers unless
    REST or AIOSCHED_TEST_WORKERS chooses. `--dist loadfile` keeps each file on one worker, so a
    module's shared cluster is started once; tests/conftest.py starts the longest files first."""
    if _has_flag(rest, ("-n", "--numprocesses")) or "no:xdist" in rest:
        return list(rest)
    workers = os.environ.get("AIOSCHED_TEST_WORKERS", "").strip()
    if workers and not workers.isdigit():
        sys.exit(f"dev.py: AIOSCHED_TEST_WORKERS={workers!r} is not a number of workers (0 up)")
    count = int(workers) if workers else _usable_cores()
    if count <= 1:
        return list(rest)
    return ["-n", str(count), "--dist", "loadfile", *rest]


def run_arguments(rest: list[str]) -> list[str]:
    """`aiosched run`'s arguments for `dev.py run REST`: the local demo (the embedded cluster,
    /metrics and /debug on loopback over plain HTTP) unless REST names a cluster itself, so
    that `dev.py run --otel-exporter console` is the demo with tracing, not a scheduler looking
    for ~/.kube/config."""
    if _has_flag(rest, CLUSTER_FLAGS):
        return list(rest)
    demo = ["--embedded"] if _has_flag(rest, TLS_FLAGS) else ["--embedded", "--insecure-http"]
    return [*demo, *rest]


def main(argv: list[str]) -> int:
    if argv and argv[0] == "traces":
        return traces(argv[1:])
    if not argv or argv[0] not in {"run", "test", "bench"}:
        print(__doc__, file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    if command == "test":
        ensure_installed("dev")
        ensure_otlp_backend()
        _run(BIN / "ruff", "check", ".")
        _run(BIN / "ruff", "format", "--check", ".")
        _run(BIN / "mypy")
        # the import contracts in pyproject.toml; --no-cache: its cache once kept reporting an
        # import that `git checkout` had reverted, and the whole check takes a fraction of a second
        _run(BIN / "lint-imports", "--no-cache")
        _run(PYTHON, "-m", "pytest", *pytest_arguments(rest))
        return 0
    ensure_installed("")
    if command == "run":
        args = run_arguments(rest)
        print(
            f"aiosched is {BIN / 'aiosched'}: run `source {BIN / 'activate'}` in another shell "
            "for the README's `aiosched ...` commands",
            flush=True,
        )
        os.execv(BIN / "aiosched", [str(BIN / "aiosched"), "run", *args])
    os.execv(BIN / "aiosched", [str(BIN / "aiosched"), "bench", *rest])
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except subprocess.CalledProcessError as exc:
        sys.exit(exc.returncode)
