"""Lets the tests here import the process helpers of tests/e2e_scheduler (pytest runs with
--import-mode=importlib)."""

import sys
from pathlib import Path

_HELPERS = str(Path(__file__).parent.parent / "e2e_scheduler")
if _HELPERS not in sys.path:
    sys.path.insert(0, _HELPERS)
