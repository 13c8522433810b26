"""Lets the tests here import otlp_receiver and e2e_scheduler's processes (importlib mode)."""

import sys
from pathlib import Path

import pytest

for _dir in (Path(__file__).parent, Path(__file__).parent.parent / "e2e_scheduler"):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "otlp_backend: exports to a real OTLP backend (Arize Phoenix, .venv-otlp-backend)",
    )
