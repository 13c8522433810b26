"""check-config output on the shipped examples and on broken files."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from profiles_testkit import in_tree_registry

from profiles import load_config
from profiles.render import check_config_main, render_profiles

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "profiles" / "examples").glob("*.yaml"))
BAD = sorted((Path(__file__).parent / "bad").glob("*.yaml"))
REGISTRY = in_tree_registry("VolumeBinding", "VolumeZone")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_pass_check_config(path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert check_config_main(path, REGISTRY, out, err) == 0
    assert err.getvalue() == ""
    doc = yaml.safe_load(out.getvalue())
    assert doc["profiles"]


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_broken_files_fail_with_explanations(path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert check_config_main(path, REGISTRY, out, err) == 1
    assert out.getvalue() == ""
    lines = err.getvalue().splitlines()
    assert lines[0].startswith(f"{path}: invalid KubeSchedulerConfiguration")
    assert all(line.startswith(f"  {path}: ") for line in lines[1:]) and len(lines) > 1


def test_missing_file() -> None:
    err = io.StringIO()
    assert check_config_main("/nonexistent/x.yaml", REGISTRY, io.StringIO(), err) == 1
    assert "cannot read file" in err.getvalue()


def test_spread_and_pack_rendering() -> None:
    cfg = load_config(ROOT / "profiles/examples/spread-and-pack.yaml", REGISTRY)
    doc = yaml.safe_load(render_profiles(cfg))
    spread, pack = doc["profiles"]
    assert spread["schedulerName"] == "default-scheduler"
    assert pack["schedulerName"] == "bin-packing"
    assert pack["plugins"]["score"][0] == "NodeResourcesFit (weight 5)"
    assert "NodeResourcesBalancedAllocation (weight 1)" in spread["plugins"]["score"]
    assert not any("BalancedAllocation" in s for s in pack["plugins"]["score"])
    assert spread["pluginConfig"]["NodeResourcesFit"]["strategy"] == "LeastAllocated"
    assert pack["pluginConfig"]["NodeResourcesFit"]["strategy"] == "MostAllocated"
    assert pack["plugins"]["queueSort"] == spread["plugins"]["queueSort"] == ["PrioritySort"]
    assert "default plugin VolumeBinding is not implemented yet; left out" in pack["notes"]
    assert doc["leaderElection"]["leaseDuration"] == "15s"
