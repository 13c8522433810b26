"""`aiosched what-if` and `aiosched explain` against `aiosched cluster` + `aiosched run` processes.

One cluster and one scheduler serve every test here (starting them is most of the cost); each
test uses its own pods.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
from processes import (
    Kubectl,
    aiosched,
    node_manifest,
    pod_manifest,
    start_cluster,
    start_scheduler,
    started,
    wait_nodes_cached,
    wait_until,
)

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: default-scheduler
- schedulerName: packer
  plugins:
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""
#: Not live: default-scheduler packing pods (MostAllocated) instead of spreading them.
CANDIDATE = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""


@dataclass
class Running:
    workdir: Path
    address: str  # HOST:PORT of the scheduler's endpoints
    kubectl: Kubectl

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*aiosched(), *args, "--http-address", self.address, "--insecure-http"],
            capture_output=True,
            text=True,
            timeout=30,
        )

    def write(self, name: str, text: str) -> str:
        path = self.workdir / name
        path.write_text(text)
        return str(path)


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    workdir = tmp_path_factory.mktemp("whatif")
    kubectl = Kubectl(workdir)
    with started(partial(start_cluster, workdir), partial(start_scheduler, workdir, CONFIG)) as (
        _,
        scheduler,
    ):
        kubectl.apply(node_manifest("n2", "2") + node_manifest("n8", "8"))
        wait_nodes_cached(scheduler.url, 2)
        yield Running(workdir, scheduler.url.removeprefix("http://"), kubectl)


def pods(kubectl: Kubectl) -> dict[str, str]:
    items = kubectl.json("pods")["items"]
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in items}


def test_what_if_live_profile_and_candidate_config_bind_nothing(running: Running) -> None:
    before = pods(running.kubectl)
    probe = running.write("probe.yaml", pod_manifest("probe", "1"))

    live = running.cli("what-if", probe, "-o", "json")
    assert live.returncode == 0, live.stderr
    answer = json.loads(live.stdout)
    # The live default-scheduler spreads (LeastAllocated): the emptier, bigger node.
    assert (answer["result"], answer["node"], answer["profile"]) == (
        "schedulable", "n8", "default-scheduler",
    )  # fmt: skip
    assert (answer["evaluatedNodes"], answer["feasibleNodes"]) == (2, 2)
    assert {t["node"] for t in answer["topNodes"]} == {"n2", "n8"}
    assert all(sum(t["plugins"].values()) == t["total"] for t in answer["topNodes"])
    assert answer["whatIf"]["configuration"] == "live"

    packer = running.cli("what-if", probe, "--scheduler-name", "packer", "-o", "json")
    assert json.loads(packer.stdout)["node"] == "n2", packer.stderr

    candidate = running.write("candidate.yaml", CANDIDATE)
    tried = running.cli("what-if", probe, "--config", candidate, "-o", "json")
    assert tried.returncode == 0, tried.stderr
    answer = json.loads(tried.stdout)
    assert (answer["node"], answer["whatIf"]["configuration"]) == ("n2", "candidate")

    # The candidate was not installed, and the probe was neither created nor bound.
    again = running.cli("what-if", probe, "-o", "json")
    assert json.loads(again.stdout)["node"] == "n8"
    assert pods(running.kubectl) == before


def test_what_if_text_says_when_preemption_would_be_needed(running: Running) -> None:
    huge = running.write("huge.yaml", pod_manifest("huge", "16"))
    result = running.cli("what-if", huge)
    assert result.returncode == 0, result.stderr
    assert "Result:   unschedulable\n" in result.stdout
    assert "Message:  0/2 nodes are available: 2 Insufficient cpu.\n" in result.stdout
    assert "would need preemption" in result.stdout


@pytest.mark.parametrize(
    ("files", "args", "code", "error"),
    [
        ({"p.yaml": "kind: Pod\nmetadata: {name: [x"}, ["p.yaml"], 2, "invalid YAML"),
        ({"p.yaml": "apiVersion: v1\nkind: Service\n"}, ["p.yaml"], 2, "expected kind Pod"),
        ({}, ["missing.yaml"], 2, "cannot read pod manifest"),
        (
            {"p.yaml": pod_manifest("p", "1")},
            ["p.yaml", "--scheduler-name", "nobody"],
            1,
            "no profile for schedulerName 'nobody' in the live configuration",
        ),
        (
            {"p.yaml": pod_manifest("p", "1"), "c.yaml": "apiVersion: nope\nkind: Nope\n"},
            ["p.yaml", "--config", "c.yaml"],
            1,
            "invalid configuration",
        ),
    ],
)
def test_bad_input_is_a_one_line_error(
    running: Running, files: dict[str, str], args: list[str], code: int, error: str
) -> None:
    paths = {name: running.write(name, text) for name, text in files.items()}
    result = running.cli("what-if", *[paths.get(a, a) for a in args])
    assert result.returncode == code
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("aiosched what-if: ")
    assert error in result.stderr


def test_explain_works_for_a_pod_bound_at_its_first_attempt(running: Running) -> None:
    running.kubectl.apply(pod_manifest("web", "500m"))
    node = wait_until(lambda: pods(running.kubectl).get("web"), what="web bound")
    result = running.cli("explain", "default/web", "-o", "json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert (answer["result"], answer["node"], answer["attempt"]) == ("scheduled", node, 1)
    assert node in {t["node"] for t in answer["topNodes"]}
    text = running.cli("explain", "default/web")
    assert f"Result:   scheduled on node {node}\n" in text.stdout
