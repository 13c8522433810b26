"""A plugin author's mypy sees aiosched's packages, typed: each top-level package ships py.typed
(PEP 561), and dev.py's editable install is a path in a .pth file (setuptools' compat mode),
which static tools follow, not an import hook, which they cannot (ARCHITECTURE.md, "Why not
one namespace")."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("scheduler", "profiles", "observability", "apimachinery", "kubesim", "bench")


def test_every_package_ships_py_typed() -> None:
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]
    for package in PACKAGES:
        assert (REPO / package / "py.typed").is_file(), package
        assert "py.typed" in package_data[package], package


def _editable_path_entries() -> list[Path]:
    """The path lines of aiosched's editable-install .pth in this interpreter's site-packages
    (an import hook's .pth holds an `import` line instead)."""
    entries: list[Path] = []
    for pth in Path(sysconfig.get_paths()["purelib"]).glob("__editable__*aiosched*.pth"):
        lines = pth.read_text().splitlines()
        entries += [Path(line) for line in lines if line and not line.startswith("import")]
    return entries


def test_the_editable_install_is_a_path_static_tools_follow() -> None:
    entries = _editable_path_entries()
    if not entries and not (REPO / ".venv").exists():
        pytest.skip("aiosched is not installed in editable mode here")

    assert REPO in entries, f"expected {REPO} in the install's .pth, found {entries}"


def test_a_plugin_author_s_mypy_types_fake_handle_as_a_handle(tmp_path: Path) -> None:
    """mypy run outside the repository, as in a plugin's own project: it finds the packages
    and their annotations (a wrong type is an error, FakeHandle as a Handle is not)."""
    if REPO not in _editable_path_entries():
        pytest.skip("needs dev.py's editable install")
    (tmp_path / "plugin_test.py").write_text(
        "from scheduler.framework.interface import Handle\n"
        "from scheduler.testing import FakeHandle\n"
        "handle: Handle = FakeHandle()\n"
        "wrong: int = FakeHandle()\n"
    )
    cache = REPO / ".mypy_cache" / "plugin-author"  # warm after the first run
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), "plugin_test.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )

    assert result.stdout.splitlines()[:-1] == [
        "plugin_test.py:4: error: Incompatible types in assignment (expression has type "
        '"FakeHandle", variable has type "int")  [assignment]'
    ], result.stdout
