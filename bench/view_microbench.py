"""CPU per watch event the pod informer turns into a view, in process.

SchedulingBasic's pods as kubesim serves them (bench/memory_per_pod.py): each decoded from its
JSON, then parsed three ways: alone (`pod_view_from_dict`, what a new pod cost before the
informer kept templates), by the informer's `PodParser` (a new pod takes the previous pod's
spec-derived fields), and as the bound update of the pending pod's view. Decoding is timed
apart. CPU time; run as a program, the collector is tuned as `aiosched run` tunes it.

    .venv/bin/python -m bench.view_microbench [--pods 20000] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable
from typing import Any

import orjson

from bench.memory_per_pod import bound_pod_json
from scheduler.api.pod import PodParser, pod_view_from_dict
from scheduler.app import gc_tuning


def _pending_json(index: int) -> bytes:
    pod = orjson.loads(bound_pod_json(index, 5000))
    del pod["spec"]["nodeName"]
    pod["status"].pop("conditions", None)
    return orjson.dumps(pod)


def _per_event_us(lines: list[bytes], parse: Callable[[dict[str, Any]], object]) -> float:
    objects = [orjson.loads(line) for line in lines]
    start = time.process_time()
    for obj in objects:
        parse(obj)
    return (time.process_time() - start) / len(lines) * 1e6


def measure(pods: int) -> dict[str, float]:
    """µs per event: decoding, a new pod's view alone and through PodParser, a bound update."""
    pending = [_pending_json(index) for index in range(pods)]
    bound = [bound_pod_json(index, 5000) for index in range(pods)]
    start = time.process_time()
    for line in pending:
        orjson.loads(line)
    decode = (time.process_time() - start) / pods * 1e6
    alone = _per_event_us(pending, pod_view_from_dict)
    templates = _per_event_us(pending, PodParser())
    views = iter([pod_view_from_dict(orjson.loads(line)) for line in pending])
    update = _per_event_us(bound, lambda obj: pod_view_from_dict(obj, next(views)))
    gc.collect()
    return {"decode_us": decode, "new_alone_us": alone, "new_pod_parser_us": templates,
            "bound_update_us": update}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="one JSON object per round")
    args = parser.parse_args(argv)
    for _ in range(args.rounds):
        result = measure(args.pods)
        if args.json:
            print(json.dumps(result))
            continue
        print(
            f"decode {result['decode_us']:5.1f} µs   new pod: alone {result['new_alone_us']:5.1f}"
            f" µs, PodParser {result['new_pod_parser_us']:5.1f} µs   bound update "
            f"{result['bound_update_us']:5.1f} µs"
        )
    return 0


if __name__ == "__main__":
    gc_tuning.tune_for_service()
    raise SystemExit(main())
