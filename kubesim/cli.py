"""`aiosched cluster`: run kubesim standalone until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import signal
import sys
from pathlib import Path
from typing import Any

from apimachinery.eventloop import run_event_loop
from kubesim.cluster import Cluster, ClusterConfig, RemoteBindRefused
from kubesim.controllers.options import ControllerOptions
from kubesim.dra import DRIVER_NAME, MODEL_LABEL, DraOptions
from kubesim.events import DEFAULT_EVENT_TTL
from kubesim.nodes import NodeTemplate
from kubesim.process_names import set_process_name
from kubesim.storage.controllers import StorageOptions
from kubesim.store import DEFAULT_HISTORY
from kubesim.workers import STORE_NAME, FrontendFailed, Workers, default_workers


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    parser.add_argument(
        "--allow-remote-bind",
        action="store_true",
        help="allow listening on a non-loopback address (a warning is printed: anyone who can "
        "reach it and holds the token controls the cluster; with --insecure-http the token "
        "and every object travel unencrypted)",
    )
    parser.add_argument("--nodes", type=int, default=0, help="simulated nodes to create")
    parser.add_argument("--kubeconfig-out", type=Path, help="write a kubeconfig here")
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="persist every write here, fsynced before it is acknowledged or visible "
        "(files 0600; the directory is created 0700; default: memory)",
    )
    parser.add_argument(
        "--pod-start-delay", type=float, default=0.0, help="seconds before a bound pod runs"
    )
    parser.add_argument("--node-cpu", default="4")
    parser.add_argument("--node-memory", default="32Gi")
    parser.add_argument("--node-pods", default="110")
    parser.add_argument(
        "--zones",
        type=int,
        default=0,
        help="label simulated nodes round robin with this many zones "
        "(topology.kubernetes.io/zone=zone-a, zone-b, ...); 0: no zone labels",
    )
    parser.add_argument(
        "--heartbeat-interval", type=float, default=10.0, help="node lease renewal, seconds"
    )
    parser.add_argument(
        "--watch-history",
        type=int,
        default=DEFAULT_HISTORY,
        help="watch events kept per resource type (older resourceVersions answer 410 Gone)",
    )
    parser.add_argument(
        "--insecure-http",
        action="store_true",
        help="serve plain http instead of https (kubectl then sends no token and gets 401)",
    )
    parser.add_argument(
        "--bookmark-interval", type=float, default=60.0, help="seconds between watch bookmarks"
    )
    parser.add_argument(
        "--event-ttl",
        type=float,
        default=DEFAULT_EVENT_TTL,
        help="seconds an Event is kept after its last write, as kube-apiserver's --event-ttl "
        "(default 3600; 0: kept forever)",
    )
    parser.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        metavar="N",
        help="API processes: 1 serves everything in this one process; N > 1 makes this "
        "process kubesim-store (ordering, resourceVersions, the write-ahead log, controllers, "
        "simulated kubelets) with N front-end processes kubesim-api-1 ... N serving the API "
        "on the same port (default: 1 on machines with 1-2 cores, else a third of the "
        "cores, 2 to 6)",
    )
    add_storage_arguments(parser)
    add_controller_arguments(parser)
    add_dra_arguments(parser)


def add_dra_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of the simulated DRA driver (`aiosched run --embedded` has its own copy)."""
    parser.add_argument(
        "--dra-devices",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help=f"simulate the DRA driver {DRIVER_NAME}: a DeviceClass {DRIVER_NAME} and one "
        "ResourceSlice per node with N devices gpu-0 ... gpu-(N-1) (attributes model and index, "
        "capacity memory 80Gi); default 0: no driver",
    )
    parser.add_argument(
        "--dra-models",
        type=_names,
        default=("a100",),
        metavar="MODEL,...",
        help="the devices' `model` attribute, given round robin by node number (node-0 the "
        f"first, node-1 the second, ...); a node label {MODEL_LABEL}=MODEL overrides it "
        "(default a100)",
    )
    parser.add_argument(
        "--dra-sharing",
        action="store_true",
        help="the devices are shared by capacity (DRAConsumableCapacity): each allows multiple "
        "allocations and publishes capacity memory (the device's, claimed in whole Gi) and "
        "compute (1000 for the whole GPU, claimed in steps of 1); a claim takes what its "
        "request's capacity.requests name, all of a capacity it does not name",
    )
    parser.add_argument(
        "--dra-binding-delay",
        type=float,
        default=None,
        metavar="SECONDS",
        help="the devices have a binding condition (gpu.kubesim.io/attached): the driver "
        "sets it in a claim's status.devices SECONDS after the claim is allocated, and the "
        "scheduler waits for it in PreBind (DRADeviceBindingConditions); default: none",
    )


def dra_options_from_args(args: argparse.Namespace) -> DraOptions:
    return DraOptions(
        devices=args.dra_devices,
        models=args.dra_models or ("a100",),
        sharing=args.dra_sharing,
        binding_delay=args.dra_binding_delay,
    )


def add_controller_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of kubesim's workload controllers (kubesim/controllers)."""
    parser.add_argument(
        "--no-controllers",
        dest="controllers",
        action="store_false",
        help="run no workload controllers (Deployments, ReplicaSets, DaemonSets, Jobs, "
        "StatefulSets, garbage collector, node lifecycle, disruption budgets)",
    )
    parser.add_argument(
        "--controller-delay",
        type=_non_negative_float,
        default=0.0,
        metavar="SECONDS",
        help="how long the workload controllers wait before acting on a change (default 0)",
    )
    parser.add_argument(
        "--node-monitor-grace-period",
        type=_non_negative_float,
        default=40.0,
        metavar="SECONDS",
        help="a node whose lease is not renewed for this long turns Unknown and is tainted "
        "node.kubernetes.io/unreachable (default 40, as upstream)",
    )
    parser.add_argument(
        "--node-monitor-period",
        type=_non_negative_float,
        default=5.0,
        metavar="SECONDS",
        help="how often node health is checked (default 5, as upstream)",
    )
    parser.add_argument(
        "--job-duration",
        type=_non_negative_float,
        default=5.0,
        metavar="SECONDS",
        help="how long a Job's pod runs before it Succeeds (a pod template annotation "
        "kubesim.io/job-duration-seconds overrides it; default 5)",
    )
    parser.add_argument(
        "--feature-gates",
        type=_feature_gates,
        default={},
        metavar="NAME=BOOL,...",
        help="feature gates of kube-apiserver and kube-controller-manager that kubesim "
        "honours: WorkloadWithJob (default false, alpha upstream): the Job controller creates a "
        "scheduling.k8s.io/v1beta1 Workload and PodGroup for each new Job; "
        "TaintTolerationComparisonOperators (default false, alpha upstream): tolerations with "
        "the Lt and Gt operators are accepted and compare taint values as integers",
    )
    parser.add_argument(
        "--stopped-nodes",
        type=_names,
        default=(),
        metavar="NAME,...",
        help="simulated nodes whose kubelet starts stopped (no heartbeats); "
        "POST /kubesim/nodes/NAME/start and /stop switch a kubelet at run time",
    )


KUBESIM_FEATURE_GATES = ("WorkloadWithJob", "TaintTolerationComparisonOperators")


def _feature_gates(text: str) -> dict[str, bool]:
    """--feature-gates as component-base parses it: NAME=true|false, comma separated."""
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.lower() not in ("true", "false"):
            raise argparse.ArgumentTypeError(f"invalid feature gate {item!r}: want NAME=BOOL")
        if name not in KUBESIM_FEATURE_GATES:
            raise argparse.ArgumentTypeError(
                f"unrecognized feature gate: {name} (known: {', '.join(KUBESIM_FEATURE_GATES)})"
            )
        gates[name] = value.lower() == "true"
    return gates


def controller_options_from_args(args: argparse.Namespace) -> ControllerOptions:
    return ControllerOptions(
        enabled=args.controllers,
        sync_delay=args.controller_delay,
        node_monitor_grace_period=args.node_monitor_grace_period,
        node_monitor_period=args.node_monitor_period,
        job_duration=args.job_duration,
        workload_with_job=args.feature_gates.get("WorkloadWithJob", False),
    )


def add_storage_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of the storage controllers (`aiosched run --embedded` has its own copy: the
    scheduler never imports kubesim)."""
    parser.add_argument(
        "--no-storage-controllers",
        dest="storage_controllers",
        action="store_false",
        help="run no storage control loops: no PV binder, no simulated CSI driver (as "
        "scheduler_perf's API server, which has no controller manager; the bench uses it)",
    )
    parser.add_argument(
        "--no-csi-driver",
        dest="csi_driver",
        action="store_false",
        help="do not simulate the csi.kubesim.io CSI driver: no CSIDriver, no default "
        "StorageClass `standard`, no CSINodes, no provisioning for it (the PV binder still runs)",
    )
    parser.add_argument(
        "--csi-attach-limit",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help="volumes of csi.kubesim.io attachable per node, reported in each CSINode's "
        "allocatable.count (default 0: no limit reported)",
    )
    parser.add_argument(
        "--storage-provisioners",
        type=_names,
        default=(),
        metavar="NAME,...",
        help="more provisioner names to provision volumes for, as if their CSI drivers were "
        "installed (e.g. ebs.csi.aws.com, so StorageClasses written for a cloud work unchanged)",
    )
    parser.add_argument(
        "--storage-delay",
        type=_non_negative_float,
        default=0.0,
        metavar="SECONDS",
        help="how long the PV binder and provisioner wait before acting on a change (default 0)",
    )


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def storage_options_from_args(args: argparse.Namespace) -> StorageOptions:
    return StorageOptions(
        enabled=args.storage_controllers,
        csi_driver=args.csi_driver,
        attach_limit=args.csi_attach_limit,
        extra_provisioners=args.storage_provisioners,
        delay=args.storage_delay,
    )


def config_from_args(args: argparse.Namespace) -> ClusterConfig:
    return ClusterConfig(
        host=args.host,
        port=args.port,
        allow_remote_bind=args.allow_remote_bind,
        nodes=args.nodes,
        node_template=NodeTemplate(
            cpu=args.node_cpu, memory=args.node_memory, pods=args.node_pods, zones=args.zones
        ),
        pod_start_delay=args.pod_start_delay,
        heartbeat_interval=args.heartbeat_interval,
        watch_history=args.watch_history,
        bookmark_interval=args.bookmark_interval,
        data_dir=args.data_dir,
        kubeconfig_out=args.kubeconfig_out,
        tls=not args.insecure_http,
        storage=storage_options_from_args(args),
        controllers=controller_options_from_args(args),
        dra=dra_options_from_args(args),
        stopped_nodes=args.stopped_nodes,
        event_ttl=args.event_ttl,
        taint_comparison_operators=args.feature_gates.get(
            "TaintTolerationComparisonOperators", False
        ),
    )


# gen0 threshold (allocations) and the gen0 / gen1 collections that trigger the next generation.
# Every request allocates a few hundred short-lived objects that reference counting frees; with
# CPython's default (700, 10, 10) the collector ran every couple of requests and rescanned the
# store's surviving objects, a tenth of kubesim's CPU in py-spy under the bench. The scheduler
# runs with the same figures (scheduler/app/gc_tuning.py).
GC_THRESHOLDS = (50_000, 20, 20)


def tune_garbage_collector() -> None:
    """Freeze what start-up built (imports, bootstrap objects, schemas) out of the collector's
    sight and collect less often: the store's objects are acyclic dicts freed by refcounts."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


async def serve(config: ClusterConfig, workers: int = 1) -> int:
    """Serve until SIGINT/SIGTERM (exit status 0), or until a front-end keeps dying (1)."""
    cluster = Cluster(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    frontends = Workers(cluster, workers) if workers > 1 else None
    if frontends is not None:
        set_process_name(STORE_NAME)
    try:
        await (frontends.start() if frontends is not None else cluster.start())
        tune_garbage_collector()
        shown = cluster.kubeconfig_path or "not written"
        if frontends is not None:  # on stderr: the serving line's form is what scripts read
            names = f"kubesim-api-1 to {workers}" if workers > 2 else "kubesim-api-1 and 2"
            print(f"kubesim: kubesim-store serves the API through {names}", file=sys.stderr)
        print(f"kubesim: serving on {cluster.url} (kubeconfig {shown})", flush=True)
        stopping = asyncio.ensure_future(stop.wait())
        waits: list[asyncio.Future[Any]] = [stopping]
        if frontends is not None:
            waits.append(frontends.failed)
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if frontends is not None and frontends.failed.done():
            print(f"kubesim: stopping: {frontends.failed.result()}", file=sys.stderr, flush=True)
            return 1
        return 0
    except FrontendFailed as exc:
        print(f"kubesim: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        await (frontends.stop() if frontends is not None else cluster.stop())


def main(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
        workers = args.workers if args.workers is not None else default_workers()
        return run_event_loop(serve(config, workers))
    except RemoteBindRefused as exc:
        print(f"kubesim: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"kubesim: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="kubesim")
    add_arguments(parser)
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main(parser.parse_args()))
