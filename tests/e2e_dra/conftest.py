"""Lets the tests here import tests/e2e_scheduler/processes.py and tests/e2e_plugins/manifests.py
(pytest runs with --import-mode=importlib, so neither directory is on sys.path by itself)."""

import sys
from pathlib import Path

_HERE = Path(__file__).parent
for _path in (str(_HERE), str(_HERE.parent / "e2e_scheduler"), str(_HERE.parent / "e2e_plugins")):
    if _path not in sys.path:
        sys.path.insert(0, _path)
