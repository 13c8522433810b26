"""Run scheduler_perf-style workloads against `aiosched run` and report throughput, latency, RSS.

Each workload starts `aiosched cluster` and `aiosched run` as separate processes, creates the
nodes and init pods, then measures the scheduling of the measured pods as upstream's
scheduler_perf does: pods/s sampled each second (average, p50, p90, p99), per-pod latency from the
create request to the pod being seen bound, and the scheduler's peak RSS (VmHWM).

    aiosched bench SchedulingBasic/5000Nodes_10000Pods --json results.json
    aiosched bench SchedulingBasic/ --scheduler-arg=--v=0     (every SchedulingBasic workload)
    aiosched bench SchedulingBasic/500Nodes --otlp-sink        (with every pod traced)
    aiosched bench SchedulingBasic/500Nodes --plot run.svg     (throughput and latency CDF)
    aiosched bench SchedulingBasic/500Nodes --parallelism 1,2,4 --plot sweep.svg

Two schedulers side by side: run the other with --scheduler-command and --json, then aiosched
with --compare that file and --plot; or plot saved results alone with --compare and --plot.

Progress goes to stderr while each workload runs (one redrawn line on a terminal, a line every
few seconds otherwise; --quiet turns it off), after one line that calibrates the machine (a
fixed pure-Python task's time, also stored in the JSON: compare pods/s across machines by
pods/s * calibration seconds).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from apimachinery.eventloop import run_event_loop
from bench.calibrate import calibrate
from bench.plot import check_plot_path, write_plot
from bench.progress import ProgressReporter, watch
from bench.results import BenchResult, format_table, write_json
from bench.runner import RunOptions, WorkloadRun, run_workloads
from bench.workloads import WORKLOADS, UnknownWorkload, resolve


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "workloads",
        nargs="*",
        metavar="WORKLOAD",
        help="workload names as upstream's (e.g. SchedulingBasic/500Nodes); NAME/ runs them all",
    )
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the results here")
    parser.add_argument(
        "--scheduler-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for `aiosched run` (repeat; write --scheduler-arg=--v=0 for flags)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="seconds allowed per workload, setup included (default %(default)s)",
    )
    parser.add_argument(
        "--create-concurrency",
        type=int,
        default=32,
        metavar="N",
        help="pod create requests in flight (default %(default)s)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        metavar="DIR",
        help="keep logs and kubeconfigs here (default: a temporary directory, kept on failure)",
    )
    parser.add_argument(
        "--otlp-sink",
        action="store_true",
        help="trace every pod into a local OTLP/HTTP receiver process and report the spans it "
        "got (compare with a run without it for the cost of tracing; add "
        "--scheduler-arg=--otel-sampler-arg=0.1 --scheduler-arg=--otel-sampler=traceidratio "
        "for sampled tracing)",
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        metavar="PATH",
        help="run against this existing cluster instead of starting `aiosched cluster`: the "
        "bench creates its simulated nodes (Node objects no kubelet runs), namespaces and pods "
        "there and deletes them afterwards. Pods bound to those nodes never start, and a "
        "cluster's node lifecycle controller taints nodes without heartbeats after about 40s, so "
        "keep runs short or use KWOK-managed nodes",
    )
    parser.add_argument(
        "--scheduler-command",
        metavar="CMD",
        help="benchmark another scheduler instead of `aiosched run`: its command line, split "
        "like a shell's, with {kubeconfig}, {config} (the bench's KubeSchedulerConfiguration: "
        "the cluster's kubeconfig, qps/burst 5000, no leader election) and {port} (a free port "
        'for its endpoints) filled in, e.g. "kube-scheduler --config {config} --secure-port '
        "{port} --authentication-kubeconfig {kubeconfig} --authorization-kubeconfig "
        '{kubeconfig}" ({feature_gates}: the gates the workload turns on, e.g. for '
        "GangScheduling/); its CPU and peak RSS are measured as aiosched's are",
    )
    parser.add_argument(
        "--label",
        metavar="NAME",
        help="the scheduler's name in the JSON (`scheduler`) and the plot's legend (default: "
        "aiosched, or the program of --scheduler-command)",
    )
    parser.add_argument(
        "--plot",
        type=Path,
        metavar="FILE.svg",
        help="write an SVG of each workload's throughput over time and latency distribution "
        "(CDF), with the --compare results on the same axes",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="results of another run (its --json, e.g. of another scheduler with "
        "--scheduler-command) to draw beside this run's in --plot (repeat); with no WORKLOAD, "
        "plot only these",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress on stderr while the workloads run",
    )
    parser.add_argument(
        "--parallelism",
        type=parallelism_values,
        metavar="N,N,...",
        help="run each workload once per value with the configuration's parallelism set to it "
        "(e.g. 1,2,4,8; default: the scheduler's own); --plot then also draws pods/s against "
        "parallelism",
    )
    parser.add_argument(
        "--scheduler-profile",
        type=Path,
        metavar="PATH",
        help="run the scheduler under cProfile and write its stats here (last workload wins)",
    )


def parallelism_values(text: str) -> list[int]:
    """--parallelism's comma-separated positive integers, each once, in the order given."""
    values: list[int] = []
    for part in text.split(","):
        try:
            value = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {part!r} in {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be greater than 0: {value} in {text!r}")
        if value not in values:
            values.append(value)
    return values


def _list_workloads() -> str:
    lines = []
    width = max(len(name) for name in WORKLOADS)
    for w in WORKLOADS.values():
        floor = f"  (upstream floor {w.threshold:g} pods/s)" if w.threshold else ""
        extra = ""
        if w.dra is not None and w.dra.init_claims:
            extra += f", {w.dra.init_claims} claims allocated"
        if w.gang is not None:
            extra += f", {w.gang.pod_groups} gangs of {w.gang.pods_per_group}"
        if w.dra is not None and w.dra.steady_seconds:
            extra += f", kept pending for {w.dra.steady_seconds:g}s"
        lines.append(
            f"{w.name:{width}} {w.init_nodes:>5} nodes {w.init_pods:>5} init {w.measure_pods:>6} "
            f"measured{extra}{floor}"
        )
    return "\n".join(lines)


def scheduler_label(args: argparse.Namespace) -> str:
    """--label, else the program --scheduler-command runs (kube-scheduler), else aiosched."""
    if args.label:
        return str(args.label)
    command = shlex.split(args.scheduler_command or "")
    return os.path.basename(command[0]) if command else "aiosched"


def load_results(paths: list[Path]) -> list[dict[str, Any]]:
    """The result objects of --json files, in order; ValueError says which file is wrong."""
    results: list[dict[str, Any]] = []
    for path in paths:
        try:
            doc = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise ValueError(f"--compare {path}: {exc}") from exc
        if not isinstance(doc, list) or not all(isinstance(r, dict) for r in doc):
            raise ValueError(f"--compare {path}: not the results `aiosched bench --json` writes")
        results.extend(doc)
    return results


def _error(message: str) -> int:
    print(f"aiosched bench: {message}", file=sys.stderr)
    return 2


def main(args: argparse.Namespace) -> int:
    if args.list:
        print(_list_workloads())
        return 0
    try:
        compared = load_results(args.compare)
        if args.plot is not None:
            check_plot_path(args.plot)
            if not args.workloads and compared:  # saved results only
                write_plot(args.plot, compared)
                print(f"aiosched bench: plot written to {args.plot}", file=sys.stderr)
                return 0
    except (ValueError, OSError) as exc:
        return _error(str(exc))
    if not args.workloads:
        return _error("name at least one workload (see --list)")
    try:
        chosen = resolve(args.workloads)
    except UnknownWorkload as exc:
        return _error(str(exc))
    calibration = calibrate()
    print(f"aiosched bench: {calibration.describe()}", file=sys.stderr, flush=True)
    reporter = ProgressReporter(sys.stderr, enabled=not args.quiet)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="aiosched-bench-"))
    results: list[BenchResult] = []
    for parallelism in args.parallelism or [None]:
        options = RunOptions(
            workdir=workdir if parallelism is None else workdir / f"parallelism-{parallelism}",
            timeout=args.timeout,
            scheduler_args=tuple(args.scheduler_arg),
            create_concurrency=max(1, args.create_concurrency),
            scheduler_profile=args.scheduler_profile,
            otlp_sink=args.otlp_sink,
            kubeconfig=args.kubeconfig,
            scheduler_command=tuple(shlex.split(args.scheduler_command or "")),
            parallelism=parallelism,
        )

        async def watch_run(run: WorkloadRun) -> None:
            await watch(run, reporter)

        results += run_event_loop(run_workloads(chosen, options, log=reporter.log, watch=watch_run))
    label = scheduler_label(args)
    for result in results:
        result.scheduler, result.machine = label, calibration.to_json()
    print(format_table(results))
    if args.json:
        write_json(args.json, results)
    if args.plot is not None:
        write_plot(args.plot, [*(r.to_json() for r in results), *compared])
        print(f"aiosched bench: plot written to {args.plot}", file=sys.stderr)
    all_ok = all(r.ok for r in results)
    if all_ok and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    elif not all_ok:
        print(f"aiosched bench: logs kept in {workdir}", file=sys.stderr)
    return 0 if all_ok else 1


if __name__ == "__main__":
    cli = argparse.ArgumentParser(
        prog="aiosched bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(cli)
    sys.exit(main(cli.parse_args()))
