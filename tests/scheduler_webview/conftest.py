"""Lets the tests here import tracing_harness and scheduler_core's harness (importlib mode)."""

import sys
from pathlib import Path

_TESTS = Path(__file__).parent.parent
for _dir in (_TESTS / "scheduler_tracing", _TESTS / "scheduler_core"):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))
