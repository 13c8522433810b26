"""`aiosched bench --scheduler-command` as the docs show it for kube-scheduler: the generated
config names the cluster (kube-scheduler ignores --kubeconfig with --config), the secure port
gets the review kubeconfigs, kubesim serves everything kube-scheduler v1.36 lists before its
first cycle (kube_scheduler_stand_in.py), and no port is picked, released and raced for."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import yaml

from bench.processes import aiosched_command
from bench.runner import RunOptions, WorkloadRun, scheduler_config_for
from bench.workloads import WORKLOADS

STAND_IN = Path(__file__).with_name("kube_scheduler_stand_in.py")


def test_the_generated_config_names_the_cluster_s_kubeconfig(tmp_path: Path) -> None:
    config = yaml.safe_load(
        scheduler_config_for(WORKLOADS["SchedulingBasic/5Nodes"], None, tmp_path / "kubeconfig")
    )

    assert config["clientConnection"] == {
        "kubeconfig": str(tmp_path / "kubeconfig"),
        "qps": 5000,
        "burst": 5000,
    }


def test_aiosched_binds_port_zero_and_no_port_is_picked_before_the_cluster_runs() -> None:
    run = WorkloadRun(WORKLOADS["SchedulingBasic/5Nodes"], RunOptions(workdir=Path("/w")))

    address = run.scheduler.argv[run.scheduler.argv.index("--http-address") + 1]
    assert address == "127.0.0.1:0"
    assert run.metrics_port == 0 and run.sink_port == 0  # read from the processes once up


@pytest.mark.e2e
def test_a_kube_scheduler_started_as_the_docs_show_schedules_the_workload(tmp_path: Path) -> None:
    command = shlex.join([sys.executable, str(STAND_IN), "--kubeconfig", "/nonexistent"]) + (
        " --config {config} --secure-port {port} --authentication-kubeconfig {kubeconfig}"
        " --authorization-kubeconfig {kubeconfig}"
    )
    out = tmp_path / "out.json"
    argv = [
        "bench",
        "SchedulingBasic/5Nodes",
        "--json",
        str(out),
        "--timeout",
        "120",
        "--workdir",
        str(tmp_path / "work"),
        "--scheduler-command",
        command,
        "--quiet",
    ]
    proc = subprocess.run(
        [*aiosched_command(), *argv],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=tmp_path,
    )

    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = orjson.loads(out.read_bytes())
    assert result["error"] is None
    assert result["scheduled"] == result["pods"] == 10
    log = (tmp_path / "work" / "SchedulingBasic_5Nodes" / "scheduler.log").read_text()
    assert "all informers synced" in log
