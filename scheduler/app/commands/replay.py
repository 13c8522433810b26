"""Replay a trace through scheduler profiles in virtual time and compare them.

    aiosched replay --trace TRACE.yaml --config A.yaml [--config B.yaml ...] --seeds 42-51
    aiosched replay --openb-nodes NODES.csv --openb-pods PODS.csv --config A.yaml \\
        --seeds 42-51 --inflate 1.3 --json OUT.json [--csv OUT.csv] [--plot OUT.svg]

Every profile of every --config file runs with every seed, on every core (--jobs), with the
same framework, plugins, cache, queue and DRA allocator as `aiosched run`; the API server is
replaced by memory and time is virtual. The summary goes to stdout, progress to stderr. The
trace format and the openb CSVs are described in docs/policy-lab.md.
"""

from __future__ import annotations

import argparse
import sys

from profiles.errors import ConfigInvalidError
from scheduler.app.commands.upstream_flags import feature_gates
from scheduler.lab.experiment import RunSpec, TraceSource, load, run_all
from scheduler.lab.report import summary, write_csv, write_json, write_svg
from scheduler.lab.trace import TraceError

#: The most runs one command may ask for (profiles x seeds).
MAX_RUNS = 10_000


def seeds(text: str) -> list[int]:
    """ "42-51", "1,5,9" or a mix ("1-3,7")."""
    found: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part[1:]:
                low, high = part.split("-", 1) if not part.startswith("-") else (part, part)
                first, last = int(low), int(high)
                if last < first:
                    raise argparse.ArgumentTypeError(f"seed range {part!r} ends before it starts")
                found.extend(range(first, last + 1))
            else:
                found.append(int(part))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"seeds {text!r}: want numbers and ranges like 42-51,60"
            ) from None
        if len(found) > MAX_RUNS:
            raise argparse.ArgumentTypeError(f"seeds {text!r}: more than {MAX_RUNS} seeds")
    return found


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_argument_group("trace (one of)")
    source.add_argument("--trace", metavar="FILE", help="a trace file (YAML documents or .jsonl)")
    source.add_argument("--openb-nodes", metavar="CSV", help="openb node list")
    source.add_argument("--openb-pods", metavar="CSV", help="openb pod list")
    parser.add_argument(
        "--config", action="append", required=True, metavar="FILE",
        help="KubeSchedulerConfiguration; repeat to compare (each profile is run)",
    )  # fmt: skip
    parser.add_argument(
        "--seeds",
        type=seeds,
        default=[42],
        metavar="42-51",
        help="seeds: tie-breaking, and for openb the shuffle and sampling",
    )
    parser.add_argument(
        "--inflate",
        type=float,
        default=1.3,
        metavar="RATIO",
        help="openb: inflate the workload to RATIO x GPU capacity (1.3)",
    )
    parser.add_argument(
        "--gpu-share",
        action="store_true",
        help="openb: a share of a GPU is a capacity request on a shareable "
        "device (DRAConsumableCapacity); else it takes a whole GPU",
    )
    parser.add_argument(
        "--retry",
        choices=("auto", "yes", "no"),
        default="auto",
        help="keep unschedulable pods pending and retry them as a cluster "
        "would (yes), or give each pod one cycle and drop it (no, the paper); "
        "auto: no for openb, yes for a trace",
    )
    parser.add_argument(
        "--feature-gates",
        type=feature_gates,
        default=None,
        metavar="A=true,B=false",
        help="as `aiosched run --feature-gates`",
    )
    parser.add_argument(
        "--jobs", type=int, default=None, metavar="N", help="processes (default: one per core)"
    )
    parser.add_argument("--json", metavar="OUT", help="write the runs as JSON")
    parser.add_argument("--csv", metavar="OUT", help="write the curves as CSV")
    parser.add_argument("--plot", metavar="OUT.svg", help="write the SVG plot")
    parser.add_argument(
        "--placements",
        action="store_true",
        help="add each run's placements (pod → node) to the JSON",
    )
    parser.add_argument(
        "--plot-range",
        default="0-130",
        metavar="LOW-HIGH",
        help="arrived-workload percent range of the plot (0-130)",
    )


def _specs(args: argparse.Namespace) -> list[RunSpec]:
    if bool(args.trace) == bool(args.openb_nodes or args.openb_pods):
        raise ValueError("give --trace FILE, or --openb-nodes and --openb-pods")
    if not args.trace and not (args.openb_nodes and args.openb_pods):
        raise ValueError("openb needs both --openb-nodes and --openb-pods")
    if not 0 < args.inflate <= 10:
        raise ValueError(f"--inflate {args.inflate}: want a ratio in (0, 10]")
    source = TraceSource(
        trace=args.trace or "",
        openb_nodes=args.openb_nodes or "",
        openb_pods=args.openb_pods or "",
        inflate=args.inflate,
        shareable=args.gpu_share,
    )
    retry = args.retry == "yes" or (args.retry == "auto" and bool(args.trace))
    gates = tuple(sorted((args.feature_gates or {}).items()))
    specs = []
    for path in args.config:
        config = load(path, dict(gates))  # refused here, before any run starts
        for profile in config.profiles:
            for seed in args.seeds:
                specs.append(
                    RunSpec(
                        source, path, profile.scheduler_name, seed, retry, gates, args.placements
                    )
                )
    if len(specs) > MAX_RUNS:
        raise ValueError(f"{len(specs)} runs: more than {MAX_RUNS}")
    return specs


def main(args: argparse.Namespace) -> int:
    try:
        low, high = (int(v) for v in args.plot_range.split("-", 1))
        specs = _specs(args)
        records = run_all(specs, args.jobs)
    except (ConfigInvalidError, TraceError, ValueError, OSError) as exc:
        print(f"aiosched replay: {exc}", file=sys.stderr)
        return 2
    if args.json:
        write_json(records, args.json)
    if args.csv:
        write_csv(records, args.csv)
    if args.plot:
        write_svg(records, args.plot, (low, high))
    sys.stdout.write(summary(records))
    return 0
