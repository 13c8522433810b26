"""`aiosched bench`: argument handling, and one real run of the smoke workload end to end."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import orjson
import pytest

from bench import cli
from bench.processes import aiosched_command
from bench.runner import scheduler_config


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="aiosched bench")
    cli.add_arguments(parser)
    return parser.parse_args(argv)


@pytest.mark.parametrize(
    ("name", "threshold"),
    [
        ("SchedulingBasic/5000Nodes_10000Pods", 680),
        ("SchedulingPodAntiAffinity/5000Nodes_2000Pods", 60),
        ("SchedulingPodAffinity/5000Nodes_5000Pods", 35),
        ("SchedulingPreferredPodAffinity/5000Nodes_5000Pods", 90),
        ("SchedulingPreferredPodAntiAffinity/5000Nodes_5000Pods", 90),
        ("SchedulingNodeAffinity/5000Nodes_10000Pods", 220),
        ("TopologySpreading/5000Nodes_5000Pods", 460),
        ("PreferredTopologySpreading/5000Nodes_5000Pods", 340),
    ],
)
def test_list_shows_upstreams_workloads(
    name: str, threshold: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(_parse(["--list"])) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith(name + " ")]
    assert line.endswith(f"(upstream floor {threshold} pods/s)")


@pytest.mark.parametrize(
    ("argv", "message"),
    [([], "name at least one workload"), (["SchedulingBasic/7Nodes"], "unknown workload")],
)
def test_bad_workload_arguments_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(_parse(argv)) == 2
    assert message in capsys.readouterr().err


def test_scheduler_args_are_collected_in_order() -> None:
    args = _parse(["SchedulingBasic/Smoke", "--scheduler-arg=--v=0", "--scheduler-arg", "x"])
    assert args.scheduler_arg == ["--v=0", "x"]


def test_generated_scheduler_config_is_accepted_by_the_config_loader() -> None:
    from profiles.load import parse_text

    spec = parse_text(scheduler_config())
    assert spec.client_connection.qps == 5000
    assert spec.client_connection.burst == 5000


@pytest.mark.e2e
def test_smoke_workload_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    argv = ["bench", "SchedulingBasic/Smoke", "--json", str(out), "--timeout", "120"]
    argv += ["--otlp-sink"]  # every pod traced into a receiver process
    argv += ["--workdir", str(tmp_path / "work")]  # logs kept for a failure's post-mortem
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
    assert result["workload"] == "SchedulingBasic/Smoke"
    assert result["error"] is None
    assert result["scheduled"] == result["pods"] == 200
    assert set(result["pods_per_second"]) == {"average", "p50", "p90", "p99"}
    assert result["pods_per_second"]["average"] > 0
    assert set(result["latency_seconds"]) == {"p50", "p90", "p99"}
    latency = result["latency_seconds"]
    assert 0 <= latency["p50"] <= latency["p90"] <= latency["p99"]
    assert result["peak_rss_bytes"] > 10 * 2**20
    assert result["scheduler_exit_code"] == 0
    assert 0 < result["scheduler_cpu_seconds"] < 180
    # Every pod of both phases: its pod span, its attempt and the default profile's 11 points.
    assert result["spans_exported"] >= 13 * (result["init_pods"] + result["pods"])
    assert "SchedulingBasic/Smoke" in proc.stdout and "200/200" in proc.stdout


@pytest.mark.e2e
def test_existing_cluster_and_another_scheduler_command(tmp_path: Path) -> None:
    """`--kubeconfig` runs against a cluster the bench did not start, `--scheduler-command`
    starts the scheduler it is given (here aiosched itself, as a user would give
    kube-scheduler), and what the run created is deleted from the cluster afterwards."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "e2e_scheduler"))
    from processes import Kubectl, start_cluster, stopping

    cluster = start_cluster(tmp_path, 0, 0, "--no-controllers", "--no-storage-controllers")
    with stopping(cluster):
        command = (
            f"{' '.join(aiosched_command())} run --kubeconfig {{kubeconfig}} --config {{config}} "
            "--http-address 127.0.0.1:{port} --insecure-http"
        )
        out = tmp_path / "out.json"
        argv = ["bench", "SchedulingBasic/5Nodes", "--json", str(out), "--timeout", "120"]
        argv += ["--kubeconfig", str(tmp_path / "kubeconfig"), "--scheduler-command", command]
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
        assert result["peak_rss_bytes"] > 10 * 2**20
        kubectl = Kubectl(tmp_path)
        assert "scheduler-perf" not in kubectl("get", "nodes", "-o", "name")
        assert "namespace-1" not in kubectl("get", "namespaces", "-o", "name")
