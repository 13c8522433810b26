"""The flags of `aiosched run`: kube-scheduler's where they apply, then aiosched's own.

They live apart from run.py, which reads as what the command does, because they change for
another reason: following kube-scheduler's flag set (cmd/kube-scheduler/app/options) and its
removals (upstream_flags.py). `aiosched run --help` prints them in the order added here.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from observability.tracing.export_processor import default_trace_export_process
from scheduler.app.cli import add_version_flag
from scheduler.app.commands.serving_flags import add_serving_flags
from scheduler.app.commands.upstream_flags import (
    FEATURE_GATES,
    add_removed_flags,
    feature_gates,
    go_bool,
    go_duration,
)
from scheduler.app.feature_gates import feature_gates_help
from scheduler.client.process_transport import default_api_workers
from scheduler.parallel.pool import DEFAULT_MIN_SECONDS

DEFAULT_BIND_ADDRESS = "127.0.0.1"
DEFAULT_SECURE_PORT = 10259  # kube-scheduler's (kubeschedulerconfig.DefaultKubeSchedulerPort)
DEFAULT_HTTP_ADDRESS = f"{DEFAULT_BIND_ADDRESS}:{DEFAULT_SECURE_PORT}"
DEFAULT_POD_MAX_IN_UNSCHEDULABLE = 300.0

# --leader-elect* flag -> (argparse dest, config field), as component-base's
# BindLeaderElectionFlags names them.
LEADER_ELECT_FLAGS: dict[str, tuple[str, str]] = {
    "--leader-elect": ("leader_elect", "leaderElection.leaderElect"),
    "--leader-elect-lease-duration": (
        "leader_elect_lease_duration",
        "leaderElection.leaseDuration",
    ),
    "--leader-elect-renew-deadline": (
        "leader_elect_renew_deadline",
        "leaderElection.renewDeadline",
    ),
    "--leader-elect-retry-period": ("leader_elect_retry_period", "leaderElection.retryPeriod"),
    "--leader-elect-resource-lock": ("leader_elect_resource_lock", "leaderElection.resourceLock"),
    "--leader-elect-resource-name": ("leader_elect_resource_name", "leaderElection.resourceName"),
    "--leader-elect-resource-namespace": (
        "leader_elect_resource_namespace",
        "leaderElection.resourceNamespace",
    ),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_version_flag(parser)  # kube-scheduler --version
    parser.add_argument(
        "--config", metavar="FILE", help="KubeSchedulerConfiguration (YAML/JSON) to run with"
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig of the cluster to use; wins over clientConnection.kubeconfig (which "
        "kube-scheduler would keep, ignoring this flag when --config is given)",
    )
    parser.add_argument(
        "--master",
        metavar="URL",
        help="the API server's address, overriding the kubeconfig's (alone: that URL without "
        "credentials, as kube-scheduler)",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (default: current)")

    serving = parser.add_argument_group(
        "serving /metrics, /healthz, /livez, /readyz and /debug",
        "As kube-scheduler's secure port: HTTPS (with a self-signed certificate unless "
        "--tls-cert-file is given); /healthz, /livez and /readyz are open, /metrics and /debug "
        "need a bearer token that the API server authenticates (TokenReview) and allows to GET "
        "the path (SubjectAccessReview). --insecure-http serves plain HTTP without any check, "
        "for local use only.",
    )
    serving.add_argument(
        "--bind-address",
        metavar="IP",
        help=f"address to listen on (default {DEFAULT_BIND_ADDRESS})",
    )
    serving.add_argument(
        "--secure-port",
        type=int,
        metavar="PORT",
        help=f"port to listen on (default {DEFAULT_SECURE_PORT}; 0 picks a free port and logs it, "
        "where kube-scheduler would serve nothing)",
    )
    serving.add_argument(
        "--http-address",
        metavar="HOST:PORT",
        help="--bind-address and --secure-port in one (aiosched's older flag; give one or "
        "the others)",
    )
    serving.add_argument(
        "--tls-cert-file",
        metavar="FILE",
        help="PEM certificate (chain) to serve HTTPS with (default: a self-signed one, "
        "generated at start)",
    )
    serving.add_argument(
        "--tls-private-key-file", metavar="FILE", help="PEM private key of --tls-cert-file"
    )
    serving.add_argument(
        "--authentication-kubeconfig",
        metavar="PATH",
        help="kubeconfig of the API server that reviews bearer tokens (TokenReview; default: "
        "the cluster aiosched schedules on)",
    )
    serving.add_argument(
        "--authorization-kubeconfig",
        metavar="PATH",
        help="kubeconfig of the API server that authorizes requests (SubjectAccessReview; "
        "default: the cluster aiosched schedules on)",
    )
    serving.add_argument(
        "--insecure-http",
        action="store_true",
        help="serve plain HTTP with no authentication or authorization, for local use (the "
        "embedded demo, tests); anyone who reaches the port reads /metrics and /debug",
    )
    add_serving_flags(serving)

    election = parser.add_argument_group(
        "leader election (each flag given overrides the configuration's leaderElection, with or "
        "without --config, as kube-scheduler)"
    )
    election.add_argument(
        "--leader-elect",
        type=go_bool,
        nargs="?",
        const=True,
        metavar="BOOL",
        help="schedule only while holding the Lease (configuration default: true)",
    )
    election.add_argument(
        "--leader-elect-lease-duration",
        type=go_duration,
        metavar="DURATION",
        help="how long standbys wait after the last renewal before taking over (default 15s)",
    )
    election.add_argument(
        "--leader-elect-renew-deadline",
        type=go_duration,
        metavar="DURATION",
        help="how long the leader keeps retrying a renewal before it stops leading (default 10s)",
    )
    election.add_argument(
        "--leader-elect-retry-period",
        type=go_duration,
        metavar="DURATION",
        help="the wait between attempts to acquire or renew (default 2s)",
    )
    election.add_argument(
        "--leader-elect-resource-lock",
        metavar="KIND",
        help='lock object kind; only "leases" (default) is supported, as upstream since v1.24',
    )
    election.add_argument(
        "--leader-elect-resource-name",
        metavar="NAME",
        help="the Lease's name (default kube-scheduler: set your own when running beside "
        "kube-scheduler, or only one of the two will schedule)",
    )
    election.add_argument(
        "--leader-elect-resource-namespace",
        metavar="NAMESPACE",
        help="the Lease's namespace (default kube-system)",
    )

    logs = parser.add_argument_group("logs")
    logs.add_argument(
        "--logging-format",
        "--log-format",
        dest="log_format",
        choices=("text", "json"),
        default="text",
        help="text (klog-like lines, default) or json (one object per line)",
    )
    logs.add_argument(
        "-v",
        "--v",
        dest="verbosity",
        type=int,
        default=0,
        help="log verbosity, as klog's -v (default 0 as kube-scheduler; 2 logs every binding "
        "and failure, 3 every attempt)",
    )

    deprecated = parser.add_argument_group(
        "deprecated kube-scheduler flags (each logs a warning; the client and profiling ones "
        "apply only without --config, as upstream)"
    )
    deprecated.add_argument(
        "--kube-api-qps", type=float, metavar="QPS", help="clientConnection.qps"
    )
    deprecated.add_argument(
        "--kube-api-burst", type=int, metavar="N", help="clientConnection.burst"
    )
    deprecated.add_argument(
        "--kube-api-content-type",
        metavar="TYPE",
        help="clientConnection.contentType (only application/json is supported)",
    )
    deprecated.add_argument(
        "--profiling",
        type=go_bool,
        nargs="?",
        const=True,
        metavar="BOOL",
        help="enableProfiling (true is refused: aiosched serves no profiling)",
    )
    deprecated.add_argument(
        "--contention-profiling",
        type=go_bool,
        nargs="?",
        const=True,
        metavar="BOOL",
        help="enableContentionProfiling (true is refused)",
    )
    deprecated.add_argument(
        "--pod-max-in-unschedulable-pods-duration",
        type=go_duration,
        metavar="DURATION",
        help="longest time a pod stays unschedulable before it is retried anyway (default 5m; "
        "applies with or without --config)",
    )
    # Removed upstream: recognised only to say so in one line (see upstream_flags.REMOVED).
    add_removed_flags(parser)

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
        "(default: ~/.kube/aiosched-embedded.kubeconfig)",
    )
    embedded.add_argument(
        "--cluster-port", type=int, default=0, help="embedded API server port (0: any free port)"
    )
    embedded.add_argument(
        "--no-csi-driver",
        dest="csi_driver",
        action="store_false",
        help="do not simulate the csi.kubesim.io CSI driver (no CSIDriver, default StorageClass, "
        "CSINodes or provisioning for it; the PV binder still runs)",
    )
    embedded.add_argument(
        "--csi-attach-limit",
        type=int,
        default=0,
        metavar="N",
        help="volumes of csi.kubesim.io attachable per node, in each CSINode's allocatable.count "
        "(default 0: no limit reported)",
    )
    embedded.add_argument(
        "--storage-provisioners",
        default="",
        metavar="NAME,...",
        help="more provisioner names the embedded cluster provisions volumes for",
    )
    embedded.add_argument(
        "--storage-delay",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="how long the embedded PV binder and provisioner wait before acting (default 0)",
    )
    embedded.add_argument(
        "--no-controllers",
        dest="controllers",
        action="store_false",
        help="run none of the embedded cluster's workload, garbage-collection and node "
        "lifecycle controllers (Deployments, ReplicaSets, DaemonSets, Jobs, ... then stay "
        "stored objects, as on an API server without kube-controller-manager)",
    )
    embedded.add_argument(
        "--job-duration",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how long a Job's pod runs on a simulated node before it succeeds (default 5)",
    )
    embedded.add_argument(
        "--node-monitor-grace-period",
        type=float,
        default=40.0,
        metavar="SECONDS",
        help="how long a simulated node may miss heartbeats before it is NotReady/Unknown "
        "and tainted (default 40, as kube-controller-manager)",
    )
    embedded.add_argument(
        "--dra-devices",
        type=int,
        default=0,
        metavar="N",
        help="simulate the DRA driver gpu.kubesim.io: a DeviceClass and one ResourceSlice per "
        "node with N devices gpu-0 ... gpu-(N-1) (default 0: no driver)",
    )
    embedded.add_argument(
        "--dra-models",
        default="",
        metavar="MODEL,...",
        help="the simulated devices' `model` attribute, round robin by node number "
        "(default a100; a node label gpu.kubesim.io/model overrides it)",
    )
    parser.add_argument(
        "--explain-every-attempt",
        action="store_true",
        help="compress `aiosched explain` data of every successful attempt at once and keep it "
        "per pod (up to 1000 pods, with the failed ones), not only of successes that follow a "
        "failure; without it, first-attempt successes are kept by reference in the "
        "--explain-recent-attempts ring and compressed only when asked (compressing costs "
        "about 50 us per pod at 5000 nodes)",
    )
    parser.add_argument(
        "--explain-recent-attempts",
        type=_non_negative_int,
        default=100,
        metavar="N",
        help="how many recent first-attempt successes per profile `aiosched explain` can "
        "explain, so that it works for bound pods; each keeps references to its attempt's "
        "scores, about 25 KiB with 500 nodes scored (5000-node clusters), and costs a few "
        "microseconds to record. 0 keeps only failed attempts and the success that follows "
        "one, as before (default %(default)s)",
    )
    parser.add_argument(
        "--feature-gates",
        type=feature_gates,
        default=dict(FEATURE_GATES),
        metavar="GATES",
        help=feature_gates_help(),
    )
    parser.add_argument("--seed", type=int, help="seed tie-breaking randomness (reproducible runs)")
    parser.add_argument(
        "--api-workers",
        type=_non_negative_int,
        default=default_api_workers(os.cpu_count()),
        metavar="N",
        help="API I/O worker processes (aiosched-io-0 ... in ps) that carry the requests and "
        "watches to the API server (HTTP, TLS, reading watch streams), so that the process "
        "running scheduling cycles spends its core on scheduling; 0 keeps all of it in one "
        "process. The default follows the machine's cores: 0 on one core, else one per 4 "
        "cores, at least 1 and at most 4 (here %(default)s; see docs/processes.md)",
    )
    parser.add_argument(
        "--filter-fanout-min-ms",
        type=_non_negative_float,
        default=DEFAULT_MIN_SECONDS * 1e3,
        metavar="MS",
        help="split a scheduling cycle's Filter pass across the filter worker processes "
        "(aiosched-filter-0 ... in ps; min(parallelism, cores) - 1 of them) only when its "
        "estimated cost, learnt from the cycles filtered in process, is above this many "
        "milliseconds; 0 splits every pass, to measure it (default %(default)s; see "
        "docs/processes.md)",
    )
    tracing = parser.add_argument_group(
        "tracing (each flag wins over its OTEL_* environment variables)"
    )
    tracing.add_argument(
        "--otel-exporter",
        metavar="LIST",
        help="otlp, console or none, comma-separated (OTEL_TRACES_EXPORTER; default: otlp when "
        "an OTLP endpoint is set, else tracing is off)",
    )
    tracing.add_argument(
        "--otel-endpoint",
        metavar="URL",
        help="OTLP endpoint; turns the otlp exporter on (OTEL_EXPORTER_OTLP_ENDPOINT; "
        "http/protobuf: /v1/traces is appended to a URL without a path)",
    )
    tracing.add_argument(
        "--otel-protocol",
        metavar="PROTO",
        help="http/protobuf (default, port 4318) or grpc (port 4317) (OTEL_EXPORTER_OTLP_PROTOCOL)",
    )
    tracing.add_argument("--otel-service-name", metavar="NAME", help="(OTEL_SERVICE_NAME)")
    tracing.add_argument(
        "--otel-sampler",
        metavar="SAMPLER",
        help="e.g. parentbased_traceidratio (OTEL_TRACES_SAMPLER)",
    )
    tracing.add_argument("--otel-sampler-arg", metavar="ARG", help="(OTEL_TRACES_SAMPLER_ARG)")
    tracing.add_argument(
        "--trace-export-process",
        action=argparse.BooleanOptionalAction,
        default=default_trace_export_process(os.cpu_count()),
        help="encode and send spans from a process of their own (aiosched-trace-export in ps) "
        "instead of a thread of the scheduling process, whose core they would share; the "
        "default follows the machine's cores: on from 4 cores (here %(default)s; see "
        "docs/processes.md)",
    )
    tracing.add_argument(
        "--trace-ui-url",
        metavar="URL",
        type=_trace_ui_url,
        default=os.environ.get("AIOSCHED_TRACE_UI_URL") or None,
        help="a trace UI's page for one trace, with {trace_id} where the 32-hex-digit id goes "
        "(e.g. Jaeger's http://localhost:16686/trace/{trace_id}): the web view (/debug/view) "
        "links traced attempts there (AIOSCHED_TRACE_UI_URL)",
    )


def _trace_ui_url(value: str) -> str:
    if "{trace_id}" not in value:
        raise argparse.ArgumentTypeError(f"{value!r} has no {{trace_id}} placeholder")
    return value


def tracing_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The tracing flags as observability.tracing.setup_tracing's keyword arguments."""
    return {
        "exporter": args.otel_exporter,
        "endpoint": args.otel_endpoint,
        "protocol": args.otel_protocol,
        "service_name": args.otel_service_name,
        "sampler": args.otel_sampler,
        "sampler_arg": args.otel_sampler_arg,
    }


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def comma_separated(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())
