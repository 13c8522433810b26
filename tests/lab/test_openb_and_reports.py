"""The openb CSVs as a trace (columns as published; GPUs as DRA devices, a model constraint as
a CEL selector, several GPUs as a count, a share as a capacity request), the paper's seeded
workload inflation, and `aiosched replay`'s outputs: JSON with a value per arrived percent,
CSV, SVG, the summary on stdout and progress on stderr."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
from lab_traces import write_openb
from processes import aiosched

from scheduler.lab import openb
from scheduler.lab.trace import TraceError
from scheduler.plugins.gpushare.gpus import GPU_CLASS, model_selector

POLICY = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {name}
  percentageOfNodesToScore: 100
  plugins:
    score:
      disabled: [{{name: "*"}}]
      enabled: [{{name: {name}, weight: 1}}]
"""


def test_nodes_and_tasks_become_dra_objects(tmp_path: Path) -> None:
    nodes_csv, pods_csv = write_openb(tmp_path, seed=1)
    nodes, tasks = openb.read_nodes(nodes_csv), openb.read_tasks(pods_csv)
    trace = openb.openb_trace("t", nodes, tasks, shareable=True)
    assert len(trace.nodes) == len(nodes) == len(trace.resource_slices)
    first = trace.resource_slices[0]["spec"]
    assert first["nodeName"] == nodes[0].name
    assert len(first["devices"]) == nodes[0].gpus
    assert first["devices"][0]["attributes"]["model"] == {"string": nodes[0].model}
    assert first["devices"][0]["allowMultipleAllocations"] is True
    by_name = {a.pod["metadata"]["name"]: a for a in trace.pods}
    for task in tasks:
        arrival = by_name[task.name]
        if not task.num_gpu:
            assert arrival.claims == ()
            continue
        (claim,) = arrival.claims
        exactly = claim["spec"]["devices"]["requests"][0]["exactly"]
        assert (exactly["deviceClassName"], exactly["count"]) == (GPU_CLASS, task.num_gpu)
        share = task.gpu_milli < 1000
        assert ("capacity" in exactly) == share
        if share:
            assert exactly["capacity"]["requests"]["milli"] == str(task.gpu_milli)
        models = [m for m in task.gpu_spec.split("|") if m]
        if models:
            assert exactly["selectors"] == [{"cel": {"expression": model_selector(models)}}]


def test_workload_inflation_is_seeded_and_reaches_the_target(tmp_path: Path) -> None:
    nodes_csv, pods_csv = write_openb(tmp_path, seed=2, tasks=40)
    nodes, tasks = openb.read_nodes(nodes_csv), openb.read_tasks(pods_csv)
    capacity = openb.gpu_capacity_milli(nodes)
    one = openb.workload(tasks, capacity, 42, 1.3)
    assert [t.name for t in one] == [t.name for t in openb.workload(tasks, capacity, 42, 1.3)]
    assert [t.name for t in one] != [t.name for t in openb.workload(tasks, capacity, 43, 1.3)]
    # the originals first, shuffled, then sampled copies
    assert sorted(t.name for t in one[: len(tasks)]) == sorted(t.name for t in tasks)
    assert all("-tuned-" in t.name for t in one[len(tasks) :])
    total = sum(t.total_gpu_milli for t in one)
    assert 1.3 * capacity - 1000 < total <= 1.3 * capacity
    # above the target, tasks are removed instead
    fewer = openb.workload(tasks, capacity, 42, 0.2)
    assert sum(t.total_gpu_milli for t in fewer) <= 0.2 * capacity < len(fewer) * 10**6


def test_a_missing_column_is_named(tmp_path: Path) -> None:
    path = tmp_path / "nodes.csv"
    path.write_text("sn,cpu_milli,gpu\nn1,1000,2\n")
    with pytest.raises(TraceError, match="no column memory_mib, model"):
        openb.read_nodes(path)
    path.write_text("sn,cpu_milli,memory_mib,gpu,model\nn1,lots,1,2,T4\n")
    with pytest.raises(TraceError, match=r"nodes.csv:2: cpu_milli 'lots' is not a number"):
        openb.read_nodes(path)


def test_a_task_list_without_gpu_spec_reads_as_no_model_constraint(tmp_path: Path) -> None:
    """The multigpu variants of the openb trace have no gpu_spec column."""
    path = tmp_path / "pods.csv"
    path.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,12000,16384,2,1000\n")
    (task,) = openb.read_tasks(path)
    assert (task.num_gpu, task.gpu_milli, task.gpu_spec) == (2, 1000, "")
    path.write_text("name,cpu_milli,num_gpu,gpu_milli\np1,12000,2,1000\n")
    with pytest.raises(TraceError, match="no column memory_mib"):
        openb.read_tasks(path)


def test_replay_compares_policies_and_writes_its_reports(tmp_path: Path) -> None:
    nodes_csv, pods_csv = write_openb(tmp_path, seed=3, nodes=16)
    configs = []
    for name in ("FGD", "BestFit"):
        config = tmp_path / f"{name}.yaml"
        config.write_text(POLICY.format(name=name))
        configs += ["--config", str(config)]
    out = tmp_path / "out"
    done = subprocess.run(
        [*aiosched(), "replay", "--openb-nodes", str(nodes_csv), "--openb-pods", str(pods_csv),
         *configs, "--seeds", "42-43", "--inflate", "1.3", "--gpu-share", "--jobs", "2",
         "--json", f"{out}.json", "--csv", f"{out}.csv", "--plot", f"{out}.svg"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = json.loads(Path(f"{out}.json").read_text())
    assert [(r["profile"]["schedulerName"], r["seed"]) for r in records] == [
        ("FGD", 42), ("FGD", 43), ("BestFit", 42), ("BestFit", 43)]  # fmt: skip
    for record in records:
        assert record["trace"] == "pods.csv"
        assert record["profile"]["config"].endswith(f"{record['profile']['schedulerName']}.yaml")
        assert record["pods"] > 60 and 0 <= record["failed_pods"] < record["pods"]
        allocation = record["gpu_allocation_percent"]
        assert set(allocation) <= {str(p) for p in range(131)}
        assert all(0 <= value <= 100 for value in allocation.values())
        assert 0 < allocation["130"] <= 100  # the end of the trace: 1.3 x capacity arrived
        assert set(record["gpu_fragmentation_percent"]) == set(allocation)
    # one seed's workload is the same for both policies (paired comparison)
    assert records[0]["pods"] == records[2]["pods"]
    with Path(f"{out}.csv").open() as handle:
        rows = list(csv.reader(handle))
    assert rows[0][:8] == ["config", "schedulerName", "seed", "trace", "pods", "failed_pods",
                           "seconds", "metric"]  # fmt: skip
    assert len(rows) == 1 + 2 * len(records)
    svg = Path(f"{out}.svg").read_text()
    assert svg.startswith("<svg") and "FGD.yaml:FGD" in svg and "BestFit.yaml:BestFit" in svg
    assert "alloc@100%" in done.stdout and "FGD.yaml:FGD" in done.stdout
    assert "4 runs on 2 processes" in done.stderr and "[4/4]" in done.stderr


def test_replay_refuses_bad_arguments(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(POLICY.format(name="FGD"))
    done = subprocess.run(
        [*aiosched(), "replay", "--openb-nodes", str(tmp_path / "none.csv"), "--config",
         str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "openb needs both --openb-nodes and --openb-pods" in done.stderr
