"""`aiosched replay` decides as `aiosched run` on a cluster: for a small trace (nodes with twin
shapes, so that scores tie and the seed decides; GPUs as DRA devices, claims with a model
selector and a device count), the replay's placements equal those of `aiosched run --seed`
against `aiosched cluster`, real processes, with the pods created one after the other."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from lab_traces import gpu_cluster_objects
from processes import (
    Kubectl,
    aiosched,
    start_cluster,
    start_scheduler,
    stopping,
    wait_nodes_cached,
    wait_until,
)

from scheduler.lab.trace import dump_objects

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl"),
]

SEED = 7
PODS = 18
# Batching depends on wall time (a ranking lives 500 ms): off in both, so the cycles match.
GATES = "OpportunisticBatching=false"
CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: default-scheduler
"""


def _replay(tmp_path: Path, trace: Path, config: Path) -> dict[str, str]:
    out = tmp_path / "replay.json"
    subprocess.run(
        [*aiosched(), "replay", "--trace", str(trace), "--config", str(config),
         "--seeds", str(SEED), "--feature-gates", GATES, "--json", str(out),
         "--placements", "--jobs", "1"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    (record,) = json.loads(out.read_text())
    assert record["failed_pods"] == 0, record
    return dict(record["placements"])


def test_replay_places_pods_as_aiosched_run(tmp_path: Path) -> None:
    objects = gpu_cluster_objects(SEED, PODS)
    trace = tmp_path / "trace.yaml"
    dump_objects(objects, trace)
    config = tmp_path / "scheduler-config.yaml"
    config.write_text(CONFIG)
    replayed = _replay(tmp_path, trace, config)
    assert len(replayed) == PODS

    cluster = start_cluster(tmp_path)
    kubectl = Kubectl(tmp_path)
    with stopping(cluster):
        scheduler = start_scheduler(tmp_path, CONFIG, "--seed", str(SEED), "--feature-gates", GATES)
        with stopping(scheduler):
            setup = [o for o in objects if o["kind"] in ("DeviceClass", "ResourceSlice", "Node")]
            kubectl.apply(yaml.safe_dump_all(setup))
            wait_nodes_cached(scheduler.url, sum(o["kind"] == "Node" for o in setup))
            placed: dict[str, str] = {}
            claims = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceClaim"}
            for obj in objects:
                if obj["kind"] != "Pod":
                    continue
                refs = obj["spec"].get("resourceClaims") or []
                brought = [claims[r["resourceClaimName"]] for r in refs]
                kubectl.apply(yaml.safe_dump_all([*brought, obj]))
                name = obj["metadata"]["name"]
                node = wait_until(
                    lambda name=name: kubectl(
                        "get", "pod", name, "-o", "jsonpath={.spec.nodeName}"
                    ).strip(),
                    what=f"{name} bound",
                )
                placed[f"default/{name}"] = node
    assert placed == replayed
