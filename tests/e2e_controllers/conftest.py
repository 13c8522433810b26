"""Lets the tests here import tests/e2e_scheduler/processes.py (pytest runs with
--import-mode=importlib, so it is not on sys.path by itself)."""

import sys
from pathlib import Path

_PROCESSES = str(Path(__file__).parent.parent / "e2e_scheduler")
if _PROCESSES not in sys.path:
    sys.path.insert(0, _PROCESSES)
