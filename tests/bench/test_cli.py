"""`aiosched bench`: argument handling, and one real run of the smoke workload end to end."""

from __future__ import annotations

import argparse
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench import cli
from bench.calibrate import Calibration
from bench.processes import aiosched_command
from bench.results import BenchResult, write_json
from bench.runner import RunOptions, scheduler_config
from bench.stats import quantiles, summarize_throughput
from bench.workloads import WORKLOADS

SVG = "{http://www.w3.org/2000/svg}"


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


def test_unknown_workload_gets_did_you_mean_not_every_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(_parse(["SchedulingBasic/Smok"])) == 2
    err = capsys.readouterr().err
    assert err.startswith("aiosched bench: unknown workload 'SchedulingBasic/Smok'\n")
    assert "Did you mean this?\n\tSchedulingBasic/Smoke\n" in err
    assert "--list" in err and "SchedulingPodAffinity" not in err


def _fake_calibration() -> Calibration:
    return Calibration(0.5, "3.11.7", "cpython", "x86_64", 2)


def _fake_results(bound: int) -> list[BenchResult]:
    run = BenchResult(workload=WORKLOADS["SchedulingBasic/Smoke"], scheduled=bound)
    run.throughput_samples = [400.0, 420.0]
    run.throughput = summarize_throughput(run.throughput_samples)
    run.latency_quantiles = quantiles([0.01 * (i + 1) for i in range(bound)])
    return [run]


@pytest.fixture
def no_processes(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """cli.main with the workloads' processes and the calibration faked; the calls recorded."""
    calls: list[dict[str, Any]] = []

    async def run_workloads(
        chosen: list[Any], options: RunOptions, log: Any = None, watch: Any = None
    ) -> list[BenchResult]:
        calls.append({"chosen": chosen, "options": options, "log": log, "watch": watch})
        return _fake_results(200)

    monkeypatch.setattr(cli, "run_workloads", run_workloads)
    monkeypatch.setattr(cli, "calibrate", _fake_calibration)
    return calls


def test_a_run_prints_calibration_and_units_and_stores_both(
    tmp_path: Path, no_processes: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    argv = ["SchedulingBasic/Smoke", "--json", str(out), "--workdir", str(tmp_path / "w")]
    assert cli.main(_parse(argv)) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith("aiosched bench: machine calibration: 0.500 s")
    header, units = captured.out.splitlines()[:2]
    assert header.split()[:3] == ["workload", "pods", "avg"]
    assert units.split()[:2] == ["bound", "pods/s"]
    (doc,) = orjson.loads(out.read_bytes())
    assert doc["machine"]["seconds"] == 0.5
    assert doc["scheduler"] == "aiosched"
    assert len(doc["latency_quantiles_seconds"]) == 101
    assert no_processes[0]["watch"] is not None  # progress beside each run


def test_plot_of_another_scheduler_beside_this_run(
    tmp_path: Path, no_processes: list[dict[str, Any]]
) -> None:
    """The other scheduler's run (--scheduler-command, its name as its label), then aiosched's
    with --compare: one plot, both on the same axes."""
    other = tmp_path / "kube-scheduler.json"
    argv = ["SchedulingBasic/Smoke", "--json", str(other), "--workdir", str(tmp_path / "w")]
    argv += ["--scheduler-command", "/usr/local/bin/kube-scheduler --config {config}", "-q"]
    assert cli.main(_parse(argv)) == 0
    assert orjson.loads(other.read_bytes())[0]["scheduler"] == "kube-scheduler"
    plot = tmp_path / "compare.svg"
    argv = ["SchedulingBasic/Smoke", "--compare", str(other), "--plot", str(plot)]
    assert cli.main(_parse([*argv, "--workdir", str(tmp_path / "w")])) == 0
    root = ET.fromstring(plot.read_text())
    titles = [p.findtext(f"{SVG}title") for p in root.iter(f"{SVG}polyline")]
    assert titles == ["aiosched", "kube-scheduler"] * 2


def test_saved_results_plot_without_a_run(
    tmp_path: Path, no_processes: list[dict[str, Any]]
) -> None:
    saved = tmp_path / "a.json"
    write_json(saved, _fake_results(100))
    plot = tmp_path / "saved.svg"
    assert cli.main(_parse(["--compare", str(saved), "--plot", str(plot)])) == 0
    assert not no_processes  # nothing ran
    assert ET.fromstring(plot.read_text()).tag == f"{SVG}svg"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["SchedulingBasic/Smoke", "--plot", "out.png"], "--plot writes SVG"),
        (["SchedulingBasic/Smoke", "--compare", "missing.json"], "--compare missing.json"),
    ],
)
def test_plot_and_compare_mistakes_fail_before_running(
    argv: list[str],
    message: str,
    no_processes: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(_parse(argv)) == 2
    assert message in capsys.readouterr().err
    assert not no_processes


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
    # a run under two sampling ticks reports its overall rate and says so ("source")
    assert set(result["pods_per_second"]) - {"source"} == {"average", "p50", "p90", "p99"}
    assert result["pods_per_second"]["average"] > 0
    assert set(result["latency_seconds"]) == {"p50", "p90", "p99"}
    latency = result["latency_seconds"]
    assert 0 <= latency["p50"] <= latency["p90"] <= latency["p99"]
    assert result["peak_rss_bytes"] > 10 * 2**20
    assert result["scheduler_exit_code"] == 0
    assert 0 < result["scheduler_cpu_seconds"] < 180
    # CPU per process of the scheduler's tree: its own PID is the critical path
    critical = [p for p in result["scheduler_processes"] if p["critical_path"]]
    assert len(critical) == 1 and 0 < critical[0]["cpu_seconds"] <= result["scheduler_cpu_seconds"]
    assert result["critical_path_cpu_seconds"] == critical[0]["cpu_seconds"]
    assert "CPU per process of the scheduler" in proc.stdout
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


def test_parallelism_sweep_values_are_parsed_and_checked() -> None:
    assert _parse(["SchedulingBasic/Smoke", "--parallelism", "1,2,4,2"]).parallelism == [1, 2, 4]
    assert _parse(["SchedulingBasic/Smoke"]).parallelism is None
    for bad in ("0", "1,x", "-2"):
        with pytest.raises(SystemExit):
            _parse(["SchedulingBasic/Smoke", "--parallelism", bad])


def test_generated_scheduler_config_sets_the_sweeps_parallelism() -> None:
    from bench.runner import scheduler_config_for
    from profiles.load import parse_text

    workload = WORKLOADS["SchedulingBasic/Smoke"]
    assert parse_text(scheduler_config_for(workload, 4)).parallelism == 4
    assert parse_text(scheduler_config_for(workload)).parallelism is None
