"""`aiosched check-config` with the real plugin registry: upstream-style files pass and print the
args as written; broken ones are explained (file, field path, what was expected)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.app.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "profiles" / "examples").glob("*.yaml"))
HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

# Fully specified args (as upstream's docs write them): check-config must print them back as is.
FIT_ARGS = {
    "ignoredResources": ["example.com/foo"],
    "scoringStrategy": {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
        "requestedToCapacityRatio": {
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
        },
    },
}
AFFINITY_ARGS = {
    "addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "pool", "operator": "In", "values": ["a", "b"]},
                        {"key": "gen", "operator": "Gt", "values": ["3"]},
                    ],
                    "matchFields": [
                        {"key": "metadata.name", "operator": "NotIn", "values": ["bad-node"]}
                    ],
                }
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 10,
                "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
            }
        ],
    }
}


def run(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["check-config", str(path)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_shipped_examples_pass(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(path, capsys)
    assert (code, err) == (0, "")
    assert yaml.safe_load(out)["profiles"]


def test_spread_and_pack_prints_upstream_field_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(ROOT / "profiles/examples/spread-and-pack.yaml", capsys)
    assert code == 0
    spread, pack = yaml.safe_load(out)["profiles"]
    resources = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    for profile, strategy in ((spread, "LeastAllocated"), (pack, "MostAllocated")):
        assert profile["pluginConfig"]["NodeResourcesFit"] == {
            "scoringStrategy": {"type": strategy, "resources": resources}
        }
    assert pack["plugins"]["score"][0] == "NodeResourcesFit (weight 5)"
    assert "scoring_strategy" not in out and "ignored_resources" not in out


def test_args_print_back_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "custom",
                "pluginConfig": [
                    {"name": "NodeResourcesFit", "args": FIT_ARGS},
                    {"name": "NodeAffinity", "args": AFFINITY_ARGS},
                ],
            }
        ],
    }
    path = tmp_path / "custom.yaml"
    path.write_text(yaml.safe_dump(config))
    code, out, err = run(path, capsys)
    assert (code, err) == (0, "")
    printed = yaml.safe_load(out)["profiles"][0]["pluginConfig"]
    assert printed["NodeResourcesFit"] == FIT_ARGS
    assert printed["NodeAffinity"] == AFFINITY_ARGS


@pytest.mark.parametrize(
    ("body", "path", "expected"),
    [
        (
            "profiles: [{schedulerName: a, plugins: {score: {enabled: [{name: Nope}]}}}]",
            "profiles[0].plugins.score.enabled[0]",
            "unknown plugin 'Nope'",
        ),
        (
            "profiles: [{schedulerName: a}, {schedulerName: a}]",
            "profiles[1].schedulerName",
            "duplicate scheduler name 'a'",
        ),
        (
            "profiles: [{schedulerName: a, pluginConfig: [{name: NodeResourcesFit, "
            "args: {scoringStrategy: {type: Bogus}}}]}]",
            "profiles[0].pluginConfig[0].args.scoringStrategy.type",
            'supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
        ),
        ("percentageOfNodesToScore: 300", "percentageOfNodesToScore", "range [0, 100]"),
        ("bogusField: 1", "bogusField", "unknown field; expected one of apiVersion"),
        (
            "profiles: [{schedulerName: a}, {schedulerName: b, plugins: {queueSort: "
            "{enabled: [{name: SchedulingGates}], disabled: [{name: '*'}]}}}]",
            "profiles[1].plugins.queueSort",
            "",
        ),
    ],
    ids=["unknown-plugin", "duplicate-name", "bad-args", "out-of-range", "unknown-field", "qsort"],
)
def test_broken_files_are_explained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, path: str, expected: str
) -> None:
    file = tmp_path / "broken.yaml"
    file.write_text(HEADER + body + "\n")
    code, out, err = run(file, capsys)
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert lines[0].startswith(f"{file}: invalid KubeSchedulerConfiguration")
    assert any(line.startswith(f"  {file}: {path}: ") and expected in line for line in lines[1:])
