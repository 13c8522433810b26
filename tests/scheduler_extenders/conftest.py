"""Lets the tests here import fake_extender and scheduler_core's harness
(pytest runs with --import-mode=importlib)."""

import sys
from pathlib import Path

for _dir in (Path(__file__).parent, Path(__file__).parent.parent / "scheduler_core"):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))
