"""Lets the tests here import lab_traces and e2e_scheduler's processes (importlib mode)."""

import sys
from pathlib import Path

for _dir in (Path(__file__).parent, Path(__file__).parent.parent / "e2e_scheduler"):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))
