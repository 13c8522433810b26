"""Record a trace of a live cluster for `aiosched replay`.

    aiosched record --kubeconfig PATH --out TRACE.yaml [--duration SECONDS]

Watches Nodes, DeviceClasses, ResourceSlices, ResourceClaims and Pods; what is there at the
start arrives at 0 s, pods created later when they appear, and pods leave when deleted or
finished. Stops after --duration, or on Ctrl-C, and writes the trace (YAML documents, or JSON
lines for a name ending in .jsonl). The format is described in docs/policy-lab.md.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from apimachinery.eventloop import run_event_loop
from scheduler.client.kubeconfig import KubeconfigError
from scheduler.client.rest import ClientSettings, KubeClient
from scheduler.lab.record import Recording
from scheduler.lab.trace import dump_objects


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", metavar="PATH", help="the cluster to record")
    parser.add_argument("--context", metavar="NAME", help="the kubeconfig context")
    parser.add_argument("--out", required=True, metavar="TRACE", help="the trace to write")
    parser.add_argument("--duration", type=float, default=None, metavar="SECONDS",
                        help="stop after this long (default: on Ctrl-C)")  # fmt: skip


async def _record(args: argparse.Namespace) -> int:
    settings = ClientSettings(kubeconfig=args.kubeconfig, context=args.context)
    client = await KubeClient.connect(settings)
    recording = Recording(client)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):  # stop, then write what was recorded
        loop.add_signal_handler(signum, stop.set)
    try:
        await recording.run(
            args.duration,
            stop,
            lambda: print("aiosched record: recording (Ctrl-C to stop)", file=sys.stderr,
                          flush=True),
        )  # fmt: skip
    finally:
        await client.close()
    objects = recording.objects()
    dump_objects(objects, args.out)
    pods = sum(o["kind"] == "Pod" for o in objects)
    print(f"aiosched record: {len(objects)} objects, {pods} pods, written to {args.out}",
          file=sys.stderr)  # fmt: skip
    return 0


def main(args: argparse.Namespace) -> int:
    if args.duration is not None and args.duration <= 0:
        print("aiosched record: --duration must be > 0", file=sys.stderr)
        return 2
    try:
        return run_event_loop(_record(args))
    except KubeconfigError as exc:
        print(f"aiosched record: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
