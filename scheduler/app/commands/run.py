"""Run the scheduler against a cluster (or an embedded one) until interrupted.

Takes kube-scheduler's flags where they apply (--config, --kubeconfig, --master, --leader-elect*,
--bind-address, --secure-port, --tls-*, -v, --logging-format); flags kube-scheduler removed stop
with one line naming their replacement. The API server is found through --kubeconfig, else the
config's clientConnection.kubeconfig, else --master alone, else the in-cluster service account,
else $KUBECONFIG or ~/.kube/config. With --embedded, starts kubesim in the same process first
(over HTTPS on loopback, like any other API server) and writes a kubeconfig for kubectl. The
configuration file (KubeSchedulerConfiguration v1) is reloaded when it changes and on SIGHUP; an
invalid new file is refused and the running profiles stay as they were.

The endpoints are served as kube-scheduler's secure port: HTTPS (a self-signed certificate unless
--tls-cert-file is given), /healthz, /livez and /readyz open, /metrics and /debug for bearer
tokens the API server authenticates and authorizes (delegated_auth.py; the reviews go to
--authentication-kubeconfig / --authorization-kubeconfig when given). --insecure-http serves
plain HTTP without checks, for local use.

Start-up problems (a kubeconfig that cannot be used, an API server that does not answer, a port
in use, TLS files that cannot be loaded, tracing settings) end the command with one line that
says what to do, and exit status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import signal
import ssl
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import anyio

from apimachinery.eventloop import run_event_loop
from apimachinery.netutil import is_loopback
from observability.tracing import TracingConfigError, resolve_tracing_config
from profiles.config import ConfigOverride, ResolvedConfig
from profiles.errors import ConfigInvalidError
from scheduler.app.commands.run_flags import (
    DEFAULT_BIND_ADDRESS,
    DEFAULT_POD_MAX_IN_UNSCHEDULABLE,
    DEFAULT_SECURE_PORT,
    LEADER_ELECT_FLAGS,
    comma_separated,
    tracing_overrides,
)

# re-exported: cli.py calls run.add_arguments (the flags are defined in run_flags.py), and
# deploy/'s tests read the default address here
from scheduler.app.commands.run_flags import DEFAULT_HTTP_ADDRESS as DEFAULT_HTTP_ADDRESS
from scheduler.app.commands.run_flags import add_arguments as add_arguments
from scheduler.app.commands.serving_flags import REFUSED, apply_tls_flags
from scheduler.app.commands.upstream_flags import (
    DEPRECATED_CLIENT_FLAGS,
    REMOVED,
    deprecation_message,
)
from scheduler.app.service import LeadershipLost, SchedulerService
from scheduler.app.startup import StartupError, check_api_server, load_serving_certificate
from scheduler.client.kubeconfig import KubeconfigError
from scheduler.client.process_transport import WorkersFailed
from scheduler.client.rest import ClientSettings, KubeClient
from scheduler.server.certificate import self_signed_context
from scheduler.server.delegated_auth import (
    CACHE_TTL,
    MAX_REVIEWS_IN_FLIGHT,
    REVIEW_BURST,
    REVIEW_QPS,
    DelegatedAuth,
)
from scheduler.server.zpages import flag_values

log = logging.getLogger("aiosched")
#: Where --embedded writes its kubeconfig unless --kubeconfig-out says: per user, beside
#: kubectl's own (a fixed name in the shared temporary directory could be another user's).
EMBEDDED_KUBECONFIG = Path.home() / ".kube" / "aiosched-embedded.kubeconfig"


def main(args: argparse.Namespace) -> int:
    try:
        return int(run_event_loop(_run(args)))
    except (
        ConfigInvalidError,
        LeadershipLost,
        StartupError,
        KubeconfigError,
        TracingConfigError,
        WorkersFailed,
    ) as exc:
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
        raise StartupError(f"--http-address must be HOST:PORT, got {address!r}")
    return host.strip("[]") or DEFAULT_BIND_ADDRESS, int(port)


def listen_address(args: argparse.Namespace) -> tuple[str, int]:
    """Where the endpoints listen: --bind-address/--secure-port, or --http-address."""
    if args.http_address is not None:
        if args.bind_address is not None or args.secure_port is not None:
            raise StartupError(
                "--http-address is --bind-address and --secure-port in one; give either it or "
                "them, not both"
            )
        return _parse_address(args.http_address)
    host = args.bind_address if args.bind_address is not None else DEFAULT_BIND_ADDRESS
    port = args.secure_port if args.secure_port is not None else DEFAULT_SECURE_PORT
    if not 0 <= port <= 65535:
        raise StartupError(f"--secure-port must be in 0..65535, got {port}")
    return host, port


def config_overrides(
    args: argparse.Namespace, kubeconfig: str | None
) -> tuple[tuple[ConfigOverride, ...], list[str]]:
    """The flags that override configuration fields, and the warnings they call for."""
    overrides: list[ConfigOverride] = []
    warnings: list[str] = []
    for flag, (dest, path) in LEADER_ELECT_FLAGS.items():
        value = getattr(args, dest)
        if value is not None:
            overrides.append(ConfigOverride(path, value, flag))
    if kubeconfig:
        flag = "--embedded" if args.embedded else "--kubeconfig"
        overrides.append(ConfigOverride("clientConnection.kubeconfig", kubeconfig, flag))
    for flag, path in DEPRECATED_CLIENT_FLAGS.items():
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is None:
            continue
        warnings.append(deprecation_message(flag, config_given=args.config is not None))
        if args.config is None:
            overrides.append(ConfigOverride(path, value, flag))
    if args.pod_max_in_unschedulable_pods_duration is not None:
        warnings.append(
            "--pod-max-in-unschedulable-pods-duration is deprecated in kube-scheduler (it still "
            "applies there and here)"
        )
    if args.insecure_http:
        for flag in ("--authentication-kubeconfig", "--authorization-kubeconfig"):
            if getattr(args, flag[2:].replace("-", "_")) is not None:
                warnings.append(f"{flag} is not used: --insecure-http checks no tokens")
    return tuple(overrides), warnings


def client_settings(
    config: ResolvedConfig, context: str | None, master: str | None
) -> ClientSettings:
    """The API client as clientConnection says (its kubeconfig already holds --kubeconfig's)."""
    cc = config.client_connection
    return ClientSettings(
        kubeconfig=cc.kubeconfig or None,
        context=context,
        master=master,
        qps=cc.qps,
        burst=cc.burst,
    )


def serving_context(args: argparse.Namespace, bind_address: str) -> ssl.SSLContext | None:
    """The secure port's TLS: the given certificate, else a self-signed one (None: plain HTTP,
    with --insecure-http)."""
    cert, key = args.tls_cert_file, args.tls_private_key_file
    if args.insecure_http:
        if cert or key:
            raise StartupError(
                "--insecure-http serves plain HTTP: drop it to serve HTTPS with "
                "--tls-cert-file and --tls-private-key-file"
            )
        return None
    if not cert and not key:
        return apply_tls_flags(self_signed_context(bind_address)[0], args)
    if not cert or not key:
        given, missing = (
            ("--tls-cert-file", "--tls-private-key-file")
            if cert
            else ("--tls-private-key-file", "--tls-cert-file")
        )
        raise StartupError(f"{given} needs {missing} as well")
    return apply_tls_flags(load_serving_certificate(cert, key), args)


def serving_note(args: argparse.Namespace, host: str) -> str:
    """How the endpoints are served, for the start-up line."""
    if args.insecure_http:
        exposed = "" if is_loopback(host) else f"; {host} is not loopback: anyone reaching it"
        return f"plain HTTP, no authentication: --insecure-http{exposed}"
    certificate = "given certificate" if args.tls_cert_file else "self-signed certificate"
    return (
        f"TLS, {certificate}; /metrics and /debug need a bearer token the API server "
        "authenticates and authorizes"
    )


async def delegated_auth(
    args: argparse.Namespace, settings: ClientSettings, stack: contextlib.AsyncExitStack
) -> DelegatedAuth | None:
    """The secure port's guard: reviews go to the API server aiosched schedules on, or to the
    ones --authentication-kubeconfig and --authorization-kubeconfig name (None with
    --insecure-http). Each through a client of its own, with its own connections and the
    delegating clientsets' rate (QPS 200, burst 400): callers without a valid token never spend
    the budget, or the connections, of the Lease and of binds."""
    if args.insecure_http:
        return None
    reviewers: list[KubeClient] = []
    for path, purpose in (
        (args.authentication_kubeconfig, "authentication"),
        (args.authorization_kubeconfig, "authorization"),
    ):
        own = dataclasses.replace(
            settings,
            qps=REVIEW_QPS,
            burst=REVIEW_BURST,
            user_agent=f"{settings.user_agent}/delegated-{purpose}",
            max_connections=MAX_REVIEWS_IN_FLIGHT,
        )
        if path is not None:
            own = dataclasses.replace(own, kubeconfig=path, context=None, master=None)
        reviewer = await KubeClient.connect(own)
        stack.push_async_callback(reviewer.close)
        reviewers.append(reviewer)
    return DelegatedAuth(
        reviewers[0],
        reviewers[1],
        ttl=_or(args.authentication_token_webhook_cache_ttl, CACHE_TTL),
        allowed_ttl=args.authorization_webhook_cache_authorized_ttl,
        denied_ttl=args.authorization_webhook_cache_unauthorized_ttl,
        always_allow=args.authorization_always_allow_paths,
    )


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def command_line_flags(args: argparse.Namespace) -> dict[str, str]:
    """/flagz's flags: every flag of `aiosched run`, as given or defaulted."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return flag_values(parser, args, removed=(*REMOVED, *REFUSED))


def _embedded_cluster_factory() -> Any:
    for entry in entry_points(group="aiosched.embedded"):
        return entry.load()
    raise StartupError("--embedded needs the kubesim package, which is not installed")


async def _run(args: argparse.Namespace) -> int:
    from observability.logs import setup_logging
    from scheduler.app import gc_tuning

    setup_logging(args.log_format, args.verbosity)
    overrides_of_tracing = tracing_overrides(args)
    resolve_tracing_config(**overrides_of_tracing)  # fail now, not after connecting
    http_host, http_port = listen_address(args)
    ssl_context = serving_context(args, http_host)
    kubeconfig: str | None = args.kubeconfig
    if args.embedded:
        kubeconfig = args.kubeconfig_out or str(EMBEDDED_KUBECONFIG)
    overrides, warnings = config_overrides(args, kubeconfig)
    for warning in warnings:
        log.warning(warning)
    gc_tuning.tune_for_service()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with contextlib.AsyncExitStack() as stack:
        service = SchedulerService(
            config_path=Path(args.config) if args.config else None,
            http_host=http_host,
            http_port=http_port,
            seed=args.seed,
            explain_every_attempt=args.explain_every_attempt,
            explain_recent_attempts=args.explain_recent_attempts,
            tune_gc=True,
            tracing_overrides=overrides_of_tracing,
            trace_export_process=args.trace_export_process,
            config_overrides=overrides,
            ssl_context=ssl_context,
            pod_max_in_unschedulable_seconds=(
                args.pod_max_in_unschedulable_pods_duration or DEFAULT_POD_MAX_IN_UNSCHEDULABLE
            ),
            feature_gates=args.feature_gates,
            flags=command_line_flags(args),
            trace_ui_url=args.trace_ui_url,
            filter_fanout_min_seconds=args.filter_fanout_min_ms / 1e3,
        )
        config = service.load_initial_config()
        if args.embedded:
            assert kubeconfig is not None
            cluster_cls = _embedded_cluster_factory()
            cluster = await stack.enter_async_context(
                cluster_cls(
                    port=args.cluster_port,
                    nodes=args.nodes,
                    zones=args.zones,
                    csi_driver=args.csi_driver,
                    csi_attach_limit=args.csi_attach_limit,
                    storage_provisioners=comma_separated(args.storage_provisioners),
                    storage_delay=args.storage_delay,
                    controllers=args.controllers,
                    job_duration=args.job_duration,
                    node_monitor_grace_period=args.node_monitor_grace_period,
                    dra_devices=args.dra_devices,
                    dra_models=comma_separated(args.dra_models),
                    kubeconfig_out=kubeconfig,
                    # one cluster, one gate: its API server accepts what the scheduler honours
                    taint_comparison_operators=args.feature_gates.get(
                        "TaintTolerationComparisonOperators", False
                    ),
                )
            )
            print(
                f"aiosched: embedded cluster at {cluster.url}; "
                f"kubectl --kubeconfig {kubeconfig} get nodes",
                flush=True,
            )
        master = None if args.embedded else args.master
        settings = client_settings(config, args.context, master)
        client = await KubeClient.connect(settings, api_workers=args.api_workers)
        stack.push_async_callback(client.close)
        await check_api_server(client)
        guard = await delegated_auth(args, settings, stack)
        loop.add_signal_handler(signal.SIGHUP, service.request_reload)
        failure: BaseExceptionGroup[BaseException] | None = None
        try:
            # the service and the stop signal race: whichever ends first cancels the other
            async with anyio.create_task_group() as group:

                async def serve() -> None:
                    await service.run(
                        client,
                        config,
                        http_guard=None if guard is None else guard.guard,
                        serving_note=serving_note(args, http_host),
                    )
                    group.cancel_scope.cancel()

                async def stop_on_signal() -> None:
                    await stop.wait()
                    group.cancel_scope.cancel()

                async def api_workers_failed() -> None:
                    await client.transport.failed()  # raises when workers cannot restart

                group.start_soon(serve, name="scheduler service")
                group.start_soon(api_workers_failed, name="API I/O workers")
                group.start_soon(stop_on_signal, name="stop on SIGINT/SIGTERM")
        except BaseExceptionGroup as exc:
            failure = exc
        if failure is not None:  # raised here, outside the handler, so it carries no context
            raise _first_cause(failure)
        log.info("stopped")
    return 0
