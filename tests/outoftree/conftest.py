"""Make the example plugin package discoverable without pip-installing it.

importlib.metadata finds distributions through `*.dist-info` directories on sys.path, so a
generated one (METADATA + entry_points.txt taken from the example's own pyproject.toml) next to
the package's source directory is what an installed package looks like to the registry.
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "aiosched-example-plugin"
EXAMPLE_SRC = EXAMPLE / "src"
GROUP = "aiosched.plugins"


@dataclass(frozen=True)
class ExampleOnPath:
    dist_dir: Path  # holds the generated *.dist-info
    src_dir: Path  # holds the aiosched_example_plugin package
    config: Path = EXAMPLE / "config.yaml"  # the example's KubeSchedulerConfiguration

    @property
    def pythonpath(self) -> str:
        return f"{self.dist_dir}:{self.src_dir}"


def write_dist_info(target: Path) -> Path:
    """A minimal installed-distribution record for the example, built from its pyproject."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    dist_info = target / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    lines = [f"[{GROUP}]"]
    lines += [f"{name} = {target}" for name, target in project["entry-points"][GROUP].items()]
    (dist_info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return dist_info


@pytest.fixture
def example_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ExampleOnPath:
    if any(ep.name == "NodeNamePrefix" for ep in importlib.metadata.entry_points(group=GROUP)):
        pytest.skip("the example plugin is installed in this environment already")
    dist_dir = tmp_path / "site"
    write_dist_info(dist_dir)
    monkeypatch.syspath_prepend(str(EXAMPLE_SRC))
    monkeypatch.syspath_prepend(str(dist_dir))
    return ExampleOnPath(dist_dir, EXAMPLE_SRC)
