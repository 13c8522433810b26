"""Lets the tests here import their helpers and the scheduler harness (--import-mode=importlib)."""

import sys
from pathlib import Path

for _path in (Path(__file__).parent, Path(__file__).parents[1] / "scheduler_core"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
