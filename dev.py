#!/usr/bin/env python3
"""Bootstrap and run aiosched from a fresh clone with nothing but Python 3.11+ and pip.

    python3 dev.py run [ARGS...]   install into .venv, then `aiosched run ARGS...` (default:
                                   --embedded --insecure-http, the local demo)
    python3 dev.py test [ARGS...]  install into .venv (with the dev extra), then ruff, mypy,
                                   lint-imports, pytest
    python3 dev.py bench [ARGS...] install into .venv, then `aiosched bench ARGS...`

The virtualenv lives in .venv beside this file; it is reinstalled when pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
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
    _run(PYTHON, "-m", "pip", "install", "--quiet", "-e", spec)
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


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test", "bench"}:
        print(__doc__, file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    if command == "test":
        ensure_installed("dev")
        ensure_otlp_backend()
        _run(BIN / "ruff", "check", ".")
        _run(BIN / "mypy")
        # the import contracts in pyproject.toml; --no-cache: its cache once kept reporting an
        # import that `git checkout` had reverted, and the whole check takes a fraction of a second
        _run(BIN / "lint-imports", "--no-cache")
        _run(PYTHON, "-m", "pytest", *rest)
        return 0
    ensure_installed("")
    if command == "run":
        # the local demo: the embedded cluster, /metrics and /debug on loopback over plain HTTP
        args = rest or ["--embedded", "--insecure-http"]
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
