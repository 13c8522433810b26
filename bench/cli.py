"""Run scheduler_perf-style workloads against `aiosched run` and report throughput, latency, RSS.

Each workload starts `aiosched cluster` and `aiosched run` as separate processes, creates the
nodes and init pods, then measures the scheduling of the measured pods as upstream's
scheduler_perf does: pods/s sampled each second (average, p50, p90, p99), per-pod latency from the
create request to the pod being seen bound, and the scheduler's peak RSS (VmHWM).

    aiosched bench SchedulingBasic/5000Nodes_10000Pods --json results.json
    aiosched bench SchedulingBasic/ --scheduler-arg=--v=0     (every SchedulingBasic workload)
    aiosched bench SchedulingBasic/500Nodes --otlp-sink        (with every pod traced)
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from apimachinery.eventloop import run_event_loop
from bench.results import format_table, write_json
from bench.runner import RunOptions, run_workloads
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
        "qps/burst 5000, no leader election) and {port} (a free port for its endpoints) filled "
        'in, e.g. "kube-scheduler --kubeconfig {kubeconfig} --config {config} --secure-port '
        '{port}" ({feature_gates}: the gates the workload turns on, e.g. for GangScheduling/); its '
        "CPU and peak RSS are measured as aiosched's are",
    )
    parser.add_argument(
        "--scheduler-profile",
        type=Path,
        metavar="PATH",
        help="run the scheduler under cProfile and write its stats here (last workload wins)",
    )


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


def main(args: argparse.Namespace) -> int:
    if args.list:
        print(_list_workloads())
        return 0
    if not args.workloads:
        print("aiosched bench: name at least one workload (see --list)", file=sys.stderr)
        return 2
    try:
        chosen = resolve(args.workloads)
    except UnknownWorkload as exc:
        print(f"aiosched bench: {exc}", file=sys.stderr)
        return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="aiosched-bench-"))
    options = RunOptions(
        workdir=workdir,
        timeout=args.timeout,
        scheduler_args=tuple(args.scheduler_arg),
        create_concurrency=max(1, args.create_concurrency),
        scheduler_profile=args.scheduler_profile,
        otlp_sink=args.otlp_sink,
        kubeconfig=args.kubeconfig,
        scheduler_command=tuple(shlex.split(args.scheduler_command or "")),
    )
    results = run_event_loop(run_workloads(chosen, options))
    print(format_table(results))
    if args.json:
        write_json(args.json, results)
    all_ok = all(r.ok for r in results)
    if all_ok and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    elif not all_ok:
        print(f"aiosched bench: logs kept in {workdir}", file=sys.stderr)
    return 0 if all_ok else 1


if __name__ == "__main__":
    cli = argparse.ArgumentParser(prog="aiosched bench", description=__doc__)
    add_arguments(cli)
    sys.exit(main(cli.parse_args()))
