"""Lets the tests here import tests/e2e_scheduler/processes.py (pytest runs with
--import-mode=importlib), for the e2e tests that apply the manifests to `aiosched cluster`."""

import sys
from pathlib import Path

_PROCESSES = str(Path(__file__).resolve().parents[1] / "e2e_scheduler")
if _PROCESSES not in sys.path:
    sys.path.insert(0, _PROCESSES)
