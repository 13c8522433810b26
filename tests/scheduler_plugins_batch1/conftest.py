"""Lets the tests here import row_answers (--import-mode=importlib puts no test directory on
sys.path by itself)."""

import sys
from pathlib import Path

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
