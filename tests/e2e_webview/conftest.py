"""Lets the tests here import e2e_scheduler's processes (pytest runs in importlib mode)."""

import sys
from pathlib import Path

_PROCESSES = str(Path(__file__).parent.parent / "e2e_scheduler")
if _PROCESSES not in sys.path:
    sys.path.insert(0, _PROCESSES)
