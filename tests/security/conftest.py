"""Lets the tests here import security_harness and the e2e helpers in
tests/e2e_scheduler/processes.py (pytest runs with --import-mode=importlib)."""

import sys
from pathlib import Path

for folder in (Path(__file__).parent, Path(__file__).parents[1] / "e2e_scheduler"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
