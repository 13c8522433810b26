"""Run the scheduler against a cluster (or an embedded one) until interrupted.

Without --kubeconfig, uses the in-cluster service account when running in a pod and
~/.kube/config otherwise. With --embedded, starts kubesim in the same process first (over HTTPS on
loopback, like any other API server) and writes a kubeconfig for kubectl. The configuration file
(KubeSchedulerConfiguration v1) is reloaded when it changes and on SIGHUP; an invalid new file is
refused and the running profiles stay as they were.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import tempfile
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from profiles.errors import ConfigInvalidError
from scheduler.client import ClientSettings, KubeClient
from scheduler.service import LeadershipLost, SchedulerService

log = logging.getLogger("aiosched")

DEFAULT_HTTP_ADDRESS = "127.0.0.1:10259"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="KubeSchedulerConfiguration (YAML/JSON)")
    parser.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig of the cluster to use")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (default: current)")
    embedded = parser.add_argument_group("embedded cluster")
    embedded.add_argument(
        "--embedded",
        action="store_true",
        help="start the embedded cluster (kubesim) in this process and schedule on it",
    )
    embedded.add_argument("--nodes", type=int, default=4, help="simulated nodes (default 4)")
    embedded.add_argument(
        "--zones",
        type=int,
        default=0,
        help="label the simulated nodes round robin with this many zones "
        "(topology.kubernetes.io/zone=zone-a, ...; default 0: none)",
    )
    embedded.add_argument(
        "--kubeconfig-out",
        metavar="PATH",
        help="where to write the embedded cluster's kubeconfig "
        "(default: <tmp>/aiosched-embedded.kubeconfig)",
    )
    embedded.add_argument(
        "--cluster-port", type=int, default=0, help="embedded API server port (0: any free port)"
    )
    parser.add_argument(
        "--http-address",
        default=DEFAULT_HTTP_ADDRESS,
        metavar="HOST:PORT",
        help="serve /metrics, /healthz, /readyz and /debug here (port 0 picks a free port; "
        "default %(default)s)",
    )
    parser.add_argument(
        "--explain-every-attempt",
        action="store_true",
        help="keep `aiosched explain` data for every attempt, not only failed ones and the "
        "success that follows them (costs a little per pod)",
    )
    parser.add_argument("--log-format", choices=("text", "json"), default="text")
    parser.add_argument(
        "-v",
        "--v",
        dest="verbosity",
        type=int,
        default=0,
        help="log verbosity, as klog's -v (default 0 as kube-scheduler; 2 logs every binding "
        "and failure, 3 every attempt)",
    )
    parser.add_argument("--seed", type=int, help="seed tie-breaking randomness (reproducible runs)")
    tracing = parser.add_argument_group("tracing (default: the OTEL_* environment variables)")
    tracing.add_argument(
        "--otel-endpoint", metavar="URL", help="OTLP endpoint (traces off if unset)"
    )
    tracing.add_argument("--otel-protocol", metavar="PROTO", help="http/protobuf")
    tracing.add_argument("--otel-service-name", metavar="NAME")
    tracing.add_argument("--otel-sampler", metavar="SAMPLER", help="e.g. parentbased_traceidratio")
    tracing.add_argument("--otel-sampler-arg", metavar="ARG")


def main(args: argparse.Namespace) -> int:
    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a dependency on every supported platform
        runner = asyncio.run
    try:
        return int(runner(_run(args)))
    except ConfigInvalidError as exc:
        print(f"aiosched run: {exc}", file=sys.stderr)
        return 1
    except LeadershipLost as exc:
        print(f"aiosched run: {exc}", file=sys.stderr)
        return 1


def _first_cause(exc: BaseException | None) -> BaseException:
    """The exception inside (nested) task-group wrappers, so callers can match its type."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    assert exc is not None
    return exc


def _parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise SystemExit(f"aiosched run: --http-address must be HOST:PORT, got {address!r}")
    return host or "127.0.0.1", int(port)


def _embedded_cluster_factory() -> Any:
    for entry in entry_points(group="aiosched.embedded"):
        return entry.load()
    raise SystemExit("aiosched run: --embedded needs the kubesim package, which is not installed")


async def _run(args: argparse.Namespace) -> int:
    from observability.logs import setup_logging
    from scheduler import gc_tuning

    setup_logging(args.log_format, args.verbosity)
    gc_tuning.tune_for_service()
    http_host, http_port = _parse_address(args.http_address)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with contextlib.AsyncExitStack() as stack:
        kubeconfig = args.kubeconfig
        if args.embedded:
            kubeconfig = args.kubeconfig_out or os.path.join(
                tempfile.gettempdir(), "aiosched-embedded.kubeconfig"
            )
            cluster_cls = _embedded_cluster_factory()
            cluster = await stack.enter_async_context(
                cluster_cls(
                    port=args.cluster_port,
                    nodes=args.nodes,
                    zones=args.zones,
                    kubeconfig_out=kubeconfig,
                )
            )
            print(
                f"aiosched: embedded cluster at {cluster.url}; "
                f"kubectl --kubeconfig {kubeconfig} get nodes",
                flush=True,
            )
        service = SchedulerService(
            config_path=Path(args.config) if args.config else None,
            http_host=http_host,
            http_port=http_port,
            seed=args.seed,
            explain_every_attempt=args.explain_every_attempt,
            tune_gc=True,
            tracing_overrides={
                "endpoint": args.otel_endpoint,
                "protocol": args.otel_protocol,
                "service_name": args.otel_service_name,
                "sampler": args.otel_sampler,
                "sampler_arg": args.otel_sampler_arg,
            },
        )
        config = service.load_initial_config()
        client = await KubeClient.connect(
            ClientSettings(
                kubeconfig=kubeconfig,
                context=args.context,
                qps=config.client_connection.qps,
                burst=config.client_connection.burst,
            )
        )
        stack.push_async_callback(client.close)
        loop.add_signal_handler(signal.SIGHUP, service.request_reload)
        runner = asyncio.create_task(service.run(client, config))
        stopper = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait({runner, stopper}, return_when=asyncio.FIRST_COMPLETED)
        for task in (runner, stopper):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runner
        if runner in done and runner.exception() is not None:
            raise _first_cause(runner.exception())
        log.info("stopped")
    return 0
