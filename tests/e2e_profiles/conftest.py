"""Lets the tests here import tests/e2e_scheduler/processes.py (--import-mode=importlib)."""

import sys
from pathlib import Path

_PROCESSES = str(Path(__file__).parents[1] / "e2e_scheduler")
if _PROCESSES not in sys.path:
    sys.path.insert(0, _PROCESSES)
