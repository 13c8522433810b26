"""Runs one workload the way scheduler_perf does, against separate processes over HTTP.

1. `aiosched cluster --nodes 0` in its own process; namespaces and nodes created through the API.
2. `aiosched run` with a generated config (clientConnection qps/burst 5000, as scheduler_perf
   sets on its client), waited for at /readyz.
3. Init pods created and waited for until all are bound.
4. Measured pods created as fast as the API takes them while a watch notes when each is first
   seen bound; a sampler turns the bound count into one pods/s sample per second.
5. Both processes stopped (SIGTERM, then SIGKILL), whatever happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import anyio.abc
import orjson

from bench import dra, gang
from bench import workloads as wl
from bench.kubeapi import ApiError, Endpoint, KubeApi, bulk, read_kubeconfig, wait_http_ok
from bench.processes import ManagedProcess, aiosched_command, free_port
from bench.proctree import ProcessTreeCpu
from bench.results import BenchResult
from bench.scheduler_setup import (
    SCHEDULER_CLIENT,
    feature_gates_args,
    gated_pending_pods,
    per_pod_requests,
    scheduler_config,
    scheduler_config_for,
)
from bench.stats import (
    Checkpoint,
    ThroughputSampler,
    ThroughputSummary,
    histogram_summary,
    parse_histogram,
    quantiles,
    subtract_buckets,
    summarize_latencies,
    summarize_throughput,
)
from bench.tracker import PodTracker
from kubesim.request_metrics import Key, parse_exposition

__all__ = [  # the helpers' old home: callers import them from here too
    "SCHEDULER_CLIENT",
    "RunOptions",
    "WorkloadRun",
    "feature_gates_args",
    "gated_pending_pods",
    "per_pod_requests",
    "run_workloads",
    "scheduler_config",
    "scheduler_config_for",
]

SLI_METRIC = "scheduler_pod_scheduling_sli_duration_seconds"
REQUESTS_SETTLE_SECONDS = 1.0  # events are written after the binding they report
Clock = Callable[[], float]
Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class RunOptions:
    workdir: Path
    timeout: float = 600.0  # per workload, setup included
    scheduler_args: tuple[str, ...] = ()
    command: tuple[str, ...] = ()  # how to run aiosched; empty: find it
    setup_concurrency: int = 64
    create_concurrency: int = 32
    startup_timeout: float = 60.0
    scheduler_profile: Path | None = None  # write a cProfile of the scheduler here
    otlp_sink: bool = False  # trace into a local OTLP receiver (the cost of tracing)
    # An existing cluster to run against instead of starting `aiosched cluster`.
    kubeconfig: Path | None = None
    # Another scheduler to start instead of `aiosched run`: its argv, where {kubeconfig},
    # {config}, {port} and {feature_gates} stand for the cluster's kubeconfig, the scheduler
    # configuration the bench writes, a free port for its endpoints and the workload's feature
    # gates (NAME=true,...; empty for most workloads).
    scheduler_command: tuple[str, ...] = ()
    # KubeSchedulerConfiguration parallelism written into the scheduler's config (None: its
    # default); `aiosched bench --parallelism 1,2,4` runs each workload once per value.
    parallelism: int | None = None


def workdir_name(workload: wl.Workload) -> str:
    return workload.name.replace("/", "_")


class WorkloadRun:
    """The processes, client and measurements of one workload run."""

    def __init__(
        self,
        workload: wl.Workload,
        options: RunOptions,
        clock: Clock = time.monotonic,
        log: Log = _stderr,
    ) -> None:
        self.workload = workload
        self.options = options
        self.clock = clock
        self.log = log
        self.dir = options.workdir / workdir_name(workload)
        self.kubeconfig = options.kubeconfig or self.dir / "kubeconfig"
        self.result = BenchResult(workload, parallelism=options.parallelism)
        self.command = list(options.command) or aiosched_command()
        # Ports are never picked, released and raced for (another process, kubesim, once took
        # the scheduler's): aiosched and the sink bind port 0 and report theirs, read once they
        # are up; another scheduler's {port} is picked only once kubesim and the sink hold theirs.
        self.metrics_port = 0
        self.sink_port = 0
        self.cluster: ManagedProcess | None = None  # None: an existing cluster (--kubeconfig)
        if options.kubeconfig is None:
            self.cluster = ManagedProcess("cluster", self._cluster_argv(), self.dir / "cluster.log")
        self.scheduler = ManagedProcess(
            "scheduler", self._scheduler_argv(), self.dir / "scheduler.log"
        )
        self.sink: ManagedProcess | None = None
        if options.otlp_sink:
            self.sink = ManagedProcess(
                "otlp-sink",
                [sys.executable, "-m", "bench.otlp_sink", "--port", "0"],
                self.dir / "otlp-sink.log",
            )
        self.tracker: PodTracker | None = None  # of the pod phase under way
        self.created = 0  # pods created in that phase
        self.expected = 0  # pods that phase creates (bench/progress.py reads these counters)
        self.nodes_created = 0
        self.measuring = False
        self.phase = "not started"
        self._measure_started = 0.0  # when the first measured pod was created
        # CPU of the scheduler's process tree while measuring (bench/proctree.py)
        self.cpu_tree: ProcessTreeCpu | None = None

    # ---- argv ------------------------------------------------------------------------------
    def _cluster_argv(self) -> list[str]:
        argv = bare_cluster_argv(self.command, self.kubeconfig)
        if self.workload.dra is not None:
            # scheduler_perf starts the resourceclaim controller for its DRA tests (claims
            # from the pods' templates, deallocation once their pods are gone); kubesim runs
            # it with its other controllers, which find nothing else to do here
            argv.remove("--no-controllers")
        return argv

    def _scheduler_argv(self) -> list[str]:
        config = self.dir / "scheduler-config.yaml"
        if self.options.scheduler_command:
            values = {
                "kubeconfig": str(self.kubeconfig),
                "config": str(config),
                "port": str(self.metrics_port),
                # the gates the workload turns on, as `--feature-gates` takes them
                "feature_gates": ",".join(f"{g}=true" for g in self.workload.feature_gates),
            }
            return [arg.format(**values) for arg in self.options.scheduler_command]
        argv = [
            *self.command,
            "run",
            "--kubeconfig",
            str(self.kubeconfig),
            "--http-address",
            "127.0.0.1:0",  # it binds a free port and prints it (reported_port)
            "--insecure-http",  # the bench scrapes /metrics on loopback, without a token
            "--config",
            str(config),
            *feature_gates_args(self.workload),
            *self.options.scheduler_args,  # after the workload's: a repeated flag wins
        ]
        if self.options.otlp_sink:
            argv += ["--otel-endpoint", self.sink_url]
        profile = self.options.scheduler_profile
        if profile is not None:
            if argv[0] == sys.executable:
                raise ValueError("--scheduler-profile needs the aiosched console script")
            argv = [sys.executable, "-m", "cProfile", "-o", str(profile), *argv]
        return argv

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}"

    @property
    def sink_url(self) -> str:
        return f"http://127.0.0.1:{self.sink_port}"

    # ---- the run ---------------------------------------------------------------------------
    async def run(self) -> BenchResult:
        self.dir.mkdir(parents=True, exist_ok=True)
        config = scheduler_config_for(
            self.workload, self.options.parallelism, self.kubeconfig.absolute()
        )
        (self.dir / "scheduler-config.yaml").write_text(config)
        if self.cluster is not None:
            self.kubeconfig.unlink(missing_ok=True)  # ours: its reappearance says the cluster is up
        try:
            async with asyncio.timeout(self.options.timeout):
                await self._run()
        except TimeoutError as exc:
            detail = str(exc) or f"timed out after {self.options.timeout:.0f}s"
            self.result.error = f"{detail} while {self.phase}{self._progress()}"
        except Exception as exc:
            self.result.error = f"{_describe(exc)} (while {self.phase})"
        finally:
            await self._shutdown()
        if self.result.error:
            for proc in self._processes():
                tail = proc.log_tail()
                if tail:
                    self.log(f"--- last lines of {proc.log_path}:\n{tail}")
        return self.result

    def _processes(self) -> list[ManagedProcess]:
        """The processes this run started (the scheduler, and the cluster unless given one)."""
        return [self.scheduler] if self.cluster is None else [self.scheduler, self.cluster]

    def _progress(self) -> str:
        if self.tracker is None:
            return ""
        return f" ({self.created} created, {self.tracker.bound_count} seen bound)"

    async def _shutdown(self) -> None:
        # the scheduler first: it must not see the API server vanish and log a storm of errors
        self.result.scheduler_exit_code = await asyncio.shield(self.scheduler.stop())
        self.result.peak_rss_bytes = self.scheduler.peak_rss_bytes
        if self.sink is not None and self.sink.alive():
            # read after the scheduler stopped: it flushes its last spans on the way out
            self.result.spans_exported = await asyncio.shield(self._sink_spans())
            await asyncio.shield(self.sink.stop())
        if self.cluster is not None:
            await asyncio.shield(self.cluster.stop())

    async def _run(self) -> None:
        w = self.workload
        started = self.clock()
        if self.cluster is None:
            endpoint = read_kubeconfig(self.kubeconfig)
        else:
            self.phase = "starting aiosched cluster"
            await self.cluster.start()
            endpoint = await self._wait_for_kubeconfig()
        api = KubeApi(endpoint, connections=max(self.options.setup_concurrency, 8))
        try:
            await wait_http_ok(
                api.session,
                f"{api.base_url}/readyz",
                self.options.startup_timeout,
                self.cluster.alive if self.cluster is not None else _always,
            )
            async with aiohttp.ClientSession() as probe:
                self.phase = f"creating {w.init_nodes} nodes"
                await self._create_namespaces(api)
                await self._create_named_node(api)
                await bulk(w.init_nodes, self.options.setup_concurrency, self._node_creator(api))
                if w.dra is not None:
                    self.phase = "creating the DRA driver's slices, classes and claims"
                    await dra.create_dra_objects(api, w, self.options.setup_concurrency)
                if w.gang is not None:
                    self.phase = f"creating {w.gang.pod_groups} PodGroups"
                    await gang.create_pod_groups(api, w, self.options.setup_concurrency)
                self.log(f"{w.name}: cluster up with {w.init_nodes} nodes")
                if self.sink is not None:
                    self.phase = "starting the OTLP sink"
                    await self.sink.start()
                    self.sink_port = await reported_port(
                        self.sink, SINK_LISTENING, self.options.startup_timeout
                    )
                    await wait_http_ok(
                        probe,
                        f"{self.sink_url}/stats",
                        self.options.startup_timeout,
                        self.sink.alive,
                    )
                self.phase = "starting the scheduler"
                if self.options.scheduler_command:
                    self.metrics_port = free_port()  # kubesim and the sink hold theirs now
                self.scheduler.argv = self._scheduler_argv()
                await self.scheduler.start()
                if not self.options.scheduler_command:
                    self.metrics_port = await reported_port(
                        self.scheduler, SCHEDULER_SERVING, self.options.startup_timeout
                    )
                    # another scheduler's endpoints may need TLS and a token: the init pods
                    # being bound is its readiness check then
                    await wait_http_ok(
                        probe,
                        f"{self.metrics_url}/readyz",
                        self.options.startup_timeout,
                        self.scheduler.alive,
                    )
                self.scheduler.sample_rss()
                self.phase = f"scheduling {w.init_pods} init pods"
                await self._schedule_init_pods(api, probe)
                self.result.setup_seconds = self.clock() - started
                self.log(f"{w.name}: {w.init_pods} init pods scheduled; measuring {w.measure_pods}")
                before = await self._scrape_metrics(probe)
                requests_before = await self._api_requests(api)
                self.phase = f"measuring {w.measure_pods} pods"
                self.measuring = True
                self.cpu_tree = ProcessTreeCpu(self.scheduler.pid)
                self.cpu_tree.sample()
                if w.dra is not None and w.dra.steady_seconds:
                    await self._schedule_steadily(api, w.measure_pods, w.dra.steady_seconds)
                else:
                    await self._schedule_pods(api, w.measure_pods, measure=True)
                self.cpu_tree.sample()
                self.result.processes = self.cpu_tree.processes()
                self.result.scheduler_cpu_seconds = self.cpu_tree.total_seconds()
                await asyncio.sleep(REQUESTS_SETTLE_SECONDS)
                self.result.scheduler_requests_per_pod = per_pod_requests(
                    requests_before, await self._api_requests(api), self.result.measured_pods
                )
                after = await self._scrape_metrics(probe)
                if before is not None and after is not None:
                    (self.dir / "scheduler-metrics.txt").write_text(after)
                    self.result.sli_latency = histogram_summary(
                        subtract_buckets(
                            parse_histogram(after, SLI_METRIC), parse_histogram(before, SLI_METRIC)
                        )
                    )
        finally:
            self.scheduler.sample_rss()
            if self.cluster is None:
                await self._clean_up(api)
            await api.close()

    async def _clean_up(self, api: KubeApi) -> None:
        """On an existing cluster, delete what the run created: its namespaces (and so its
        pods, claims) and its simulated nodes; PVs and the PriorityClass are cluster-wide."""
        self.phase = "cleaning up the cluster"
        w = self.workload
        paths = [f"/api/v1/namespaces/{name}" for name in w.namespaces]
        nodes = [wl.workload_node_name(w, i) for i in range(w.init_nodes)]
        paths += [f"/api/v1/nodes/{name}" for name in nodes]
        if w.dra is not None:  # the slices are named after their nodes
            paths += [
                f"{dra.SLICES}/{name}" for name in nodes if name.startswith("scheduler-perf-dra-")
            ]
            paths += [
                f"{dra.CLASSES}/{wl.device_class_manifest(t)['metadata']['name']}"
                for t in w.dra.device_classes
            ]
        if w.named_node:
            paths.append(f"/api/v1/nodes/{wl.SCHEDULER_PERF_NODE}")
        if w.needs_high_priority:
            paths.append(f"/apis/scheduling.k8s.io/v1/priorityclasses/{wl.HIGH_PRIORITY_CLASS}")
        for phase, volume in (
            (w.init_namespace, w.init_volume),
            (w.measure_namespace, w.measure_volume),
        ):
            if volume is not None:
                count = w.init_pods if phase == w.init_namespace else w.measure_pods
                paths += [f"/api/v1/persistentvolumes/{phase}-pv-{i}" for i in range(count)]
        if w.node_template.csi_attach_limits:
            paths += [
                f"/apis/storage.k8s.io/v1/csinodes/{wl.node_name(i)}" for i in range(w.init_nodes)
            ]

        async def delete(index: int) -> None:
            await api.delete(paths[index])

        try:
            await bulk(len(paths), self.options.setup_concurrency, delete)
        except Exception as exc:  # the results stand; say what may be left behind
            self.log(f"{w.name}: cleaning up the cluster failed: {_describe(exc)}")

    async def _wait_for_kubeconfig(self) -> Endpoint:
        assert self.cluster is not None  # only for a cluster this run started
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.options.startup_timeout
        while not self.kubeconfig.exists():
            if not self.cluster.alive():
                raise RuntimeError("aiosched cluster exited during startup")
            if loop.time() > deadline:
                raise TimeoutError("aiosched cluster wrote no kubeconfig")
            await asyncio.sleep(0.05)
        return read_kubeconfig(self.kubeconfig)

    async def _create_namespaces(self, api: KubeApi) -> None:
        for name in self.workload.namespaces:
            body = orjson.dumps(wl.namespace_manifest(name, self.workload.namespace_labels))
            await api.create("/api/v1/namespaces", body, exist_ok=True)
        if self.workload.needs_high_priority:
            body = orjson.dumps(wl.priority_class_manifest())
            await api.create("/apis/scheduling.k8s.io/v1/priorityclasses", body, exist_ok=True)

    async def _churn(self, api: KubeApi) -> None:
        """Upstream's churn op (mode create): one more pod every interval until cancelled."""
        w = self.workload
        path = f"/api/v1/namespaces/{wl.CHURN_NAMESPACE}/pods"
        index = 0
        while True:
            await api.create(path, orjson.dumps(wl.churn_pod_manifest(w, index)))
            index += 1
            await asyncio.sleep(w.churn_interval)

    # ---- ops of the shapes added for issue 22 (gated pods, pod sets, deletions, churn) ---------
    async def _create_named_node(self, api: KubeApi) -> None:
        """createNodes count 1 with templates/node-with-name.yaml, when the shape has it."""
        if self.workload.named_node:
            await api.create("/api/v1/nodes", orjson.dumps(wl.named_node_manifest()))

    async def _schedule_init_pods(self, api: KubeApi, probe: aiohttp.ClientSession) -> None:
        """The ops before the measured pods: gated pods and their barrier first, then the init
        pods, in one namespace or as createPodSets over several."""
        w = self.workload
        if w.gated_pods:
            self.phase = f"creating {w.gated_pods} gated pods"
            await self._create_gated_pods(api)
            self.phase = f"waiting for the scheduler to hold {w.gated_pods} gated pods"
            await self._wait_for_gated_pods(probe, w.gated_pods)
        self.phase = f"scheduling {w.init_pods} init pods"
        if not w.init_pod_sets:
            await self._schedule_pods(api, w.init_pods, measure=False)
            return
        for index in range(w.init_pod_sets):  # one createPods op after the other, as upstream
            await self._schedule_pod_set(api, wl.pod_set_namespace(index), w.pods_per_set)

    async def _create_gated_pods(self, api: KubeApi) -> None:
        """createPods with skipWaitToCompletion: the pods stay gated to the end."""
        w = self.workload
        path = f"/api/v1/namespaces/{w.gated_namespace}/pods"

        async def create(index: int) -> None:
            await api.create(path, orjson.dumps(wl.gated_pod_manifest(w, index)))

        await bulk(w.gated_pods, self.options.create_concurrency, create)

    async def _wait_for_gated_pods(self, probe: aiohttp.ClientSession, count: int) -> None:
        """barrier stageRequirement Attempted for gated pods: upstream waits for their
        PodScheduled=False condition, which the API server writes at creation; kubesim does not
        write it, so the scheduler's scheduler_pending_pods{queue="gated"} says they are held."""
        while True:
            metrics = await self._scrape_metrics(probe)
            if metrics is None:
                self.log(f"{self.workload.name}: no scheduler metrics; not waiting for gated pods")
                return
            if gated_pending_pods(metrics) >= count:
                return
            await asyncio.sleep(0.2)

    async def _schedule_pod_set(self, api: KubeApi, namespace: str, count: int) -> None:
        """One createPods op of a createPodSets: `count` init pods in `namespace`, waited for."""
        w = self.workload
        tracker = PodTracker(api, namespace, self.clock)
        self.tracker, self.created, self.expected = tracker, 0, count
        path = f"/api/v1/namespaces/{namespace}/pods"

        async def create(index: int) -> None:
            await api.create(path, orjson.dumps(wl.pod_set_manifest(w, namespace, index)))
            self.created += 1

        async with anyio.create_task_group() as background:
            background.start_soon(tracker.run, name="pod tracker")
            await tracker.wait_synced()
            background.start_soon(self._watchdog, name="watchdog")
            await bulk(count, self.options.create_concurrency, create)
            await tracker.wait_for(count)
            background.cancel_scope.cancel()

    def _start_shape_background(self, background: anyio.abc.TaskGroup, api: KubeApi) -> None:
        """The ops that run alongside the measured pods (started just before them)."""
        w = self.workload
        if w.recreate_churn:
            background.start_soon(self._recreate_churn, api, name="recreate churn")
        if w.delete_init_pods_per_second:
            background.start_soon(self._delete_init_pods, api, name="delete pods")

    async def _delete_init_pods(self, api: KubeApi) -> None:
        """deletePods with deletePodsPerSecond: one init pod per tick, default delete options."""
        w = self.workload
        interval = 1.0 / w.delete_init_pods_per_second
        for index in range(w.init_pods):
            await asyncio.sleep(interval)  # a ticker: the first delete one interval in
            await api.delete(f"/api/v1/namespaces/{w.init_namespace}/pods/{wl.pod_name(index)}")

    async def _recreate_churn(self, api: KubeApi) -> None:
        """churn mode recreate, number 1 (executor.go runChurnOp): each tick, every template's
        object is created if it is absent, else deleted. Create errors are ignored as
        upstream's; whatever is left is deleted when the measurement ends."""
        namespace = self.workload.recreate_churn_namespace
        collections = (
            "/api/v1/nodes",
            f"/api/v1/namespaces/{namespace}/pods",
            f"/api/v1/namespaces/{namespace}/services",
        )
        manifests = [orjson.dumps(m) for m in wl.recreate_churn_manifests()]
        live: list[str | None] = [None] * len(collections)
        try:
            while True:
                await asyncio.sleep(wl.RECREATE_CHURN_INTERVAL)
                for slot, (collection, body) in enumerate(zip(collections, manifests, strict=True)):
                    name = live[slot]
                    if name is not None:
                        await api.delete(f"{collection}/{name}")
                        live[slot] = None
                        continue
                    try:
                        created = await api.create(collection, body)
                    except ApiError:
                        continue
                    live[slot] = (created.get("metadata") or {}).get("name")
        finally:
            with anyio.CancelScope(shield=True):
                for collection, name in zip(collections, live, strict=True):
                    if name is not None:
                        with contextlib.suppress(ApiError, aiohttp.ClientError):
                            await api.delete(f"{collection}/{name}")

    def _node_creator(self, api: KubeApi) -> Callable[[int], Awaitable[None]]:
        async def create(index: int) -> None:
            body = orjson.dumps(wl.node_manifest(self.workload, index))
            await api.create("/api/v1/nodes", body)
            self.nodes_created += 1
            csi_node = wl.csi_node_manifest(self.workload, index)
            if csi_node is not None:
                path = "/apis/storage.k8s.io/v1/csinodes"
                await api.create(path, orjson.dumps(csi_node), exist_ok=True)

        return create

    @staticmethod
    async def _create_bound_volume(
        api: KubeApi, template: wl.VolumeTemplate, index: int, namespace: str
    ) -> None:
        """Pod `index`'s PVC and PV, bound, as CreatePodWithPersistentVolume: each is created,
        then its status set (creation resets it)."""
        claim, volume = wl.volume_manifests(template, index, namespace)
        claims = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
        created = await api.create(claims, orjson.dumps(claim))
        claim["metadata"] = created.get("metadata", claim["metadata"])
        await api.replace(f"{claims}/{claim['metadata']['name']}/status", orjson.dumps(claim))
        created = await api.create("/api/v1/persistentvolumes", orjson.dumps(volume))
        volume["metadata"] = created.get("metadata", volume["metadata"])
        path = f"/api/v1/persistentvolumes/{volume['metadata']['name']}/status"
        await api.replace(path, orjson.dumps(volume))

    async def _schedule_pods(self, api: KubeApi, count: int, measure: bool) -> None:
        """Create `count` init or measured pods and wait until all are seen bound."""
        if count <= 0:
            return
        w = self.workload
        namespace = w.measure_namespace if measure else w.init_namespace
        tracker = PodTracker(api, namespace, self.clock)
        self.tracker, self.created, self.expected = tracker, 0, count
        sampler = ThroughputSampler()
        created_at: dict[str, float] = {}
        path = f"/api/v1/namespaces/{namespace}/pods"
        volume = w.measure_volume if measure else w.init_volume

        async def create(index: int) -> None:
            if volume is not None:
                await self._create_bound_volume(api, volume, index, namespace)
            pod = wl.pod_manifest(w, index, measured=measure)
            body = orjson.dumps(pod)
            created_at[pod["metadata"]["name"]] = self.clock()
            await api.create(path, body)
            self.created += 1

        first_created = self.clock()
        try:
            async with anyio.create_task_group() as background:
                background.start_soon(tracker.run, name="pod tracker")
                await tracker.wait_synced()
                background.start_soon(self._sample_rss, name="rss sampler")
                background.start_soon(self._watchdog, name="watchdog")
                if measure:
                    background.start_soon(self._sample, tracker, sampler, name="throughput")
                    if w.churn_pod_template is not None:
                        background.start_soon(self._churn, api, name="churn")
                    self._start_shape_background(background, api)
                first_created = self.clock()
                if measure:
                    self._measure_started = first_created
                    self._checkpoint(0)
                await bulk(count, self.options.create_concurrency, create)
                if measure:  # what is bound later is the backlog's drain (bench/stats.py)
                    self.result.bound_while_creating = tracker.bound_count
                await tracker.wait_for(count)
                background.cancel_scope.cancel()  # every pod is bound: the helpers' work is done
        finally:
            if measure:  # also on failure: what was measured until then
                self._record(tracker, sampler, created_at, first_created)

    async def _schedule_steadily(self, api: KubeApi, count: int, seconds: float) -> None:
        """createPods with steadyState (executor.go createPodsSteadily): `count` pods, each
        deleted (grace period 0, background propagation) as soon as it is seen bound and
        replaced by a new one, until `seconds` after the op began; at least one pod must have
        been scheduled by then."""
        w = self.workload
        namespace = w.measure_namespace
        bound: asyncio.Queue[str] = asyncio.Queue()
        tracker = PodTracker(api, namespace, self.clock, on_bound=bound.put_nowait)
        self.tracker, self.created, self.expected = tracker, 0, count
        sampler = ThroughputSampler()
        created_at: dict[str, float] = {}
        path = f"/api/v1/namespaces/{namespace}/pods"

        async def create_next() -> None:
            index = self.created
            self.created += 1
            name = wl.pod_name(index)
            created_at[name] = self.clock()
            await api.create(path, orjson.dumps(wl.pod_manifest(w, index, measured=True)))

        async def replace_bound() -> None:
            while True:  # one at a time, as upstream's loop
                name = await bound.get()
                await api.delete(f"{path}/{name}?gracePeriodSeconds=0&propagationPolicy=Background")
                await create_next()

        first_created = self.clock()
        try:
            async with anyio.create_task_group() as background:
                background.start_soon(tracker.run, name="pod tracker")
                await tracker.wait_synced()
                background.start_soon(self._sample_rss, name="rss sampler")
                background.start_soon(self._watchdog, name="watchdog")
                background.start_soon(self._sample, tracker, sampler, name="throughput")
                first_created = self._measure_started = self.clock()
                self._checkpoint(0)
                for _ in range(count):  # the backlog the scheduler starts from
                    await create_next()
                background.start_soon(replace_bound, name="steady state")
                await asyncio.sleep(max(0.0, first_created + seconds - self.clock()))
                background.cancel_scope.cancel()
        finally:
            self._record(tracker, sampler, created_at, first_created)
        if not tracker.bound_count:
            raise RuntimeError(
                "no pod at all got scheduled, either because of a problem or because the test "
                "interval was too small"
            )

    def _record(
        self,
        tracker: PodTracker,
        sampler: ThroughputSampler,
        created_at: dict[str, float],
        first_created: float,
    ) -> None:
        r = self.result
        bound = tracker.bound_at
        self._checkpoint(len(bound))
        r.scheduled = len(bound)
        r.duration_seconds = max(bound.values(), default=first_created) - first_created
        r.throughput_samples = sampler.samples
        r.throughput_scheduled_at = sampler.scheduled_at
        r.throughput = summarize_throughput(r.throughput_samples)
        if r.throughput is None and r.duration_seconds > 0:
            # shorter than two samples (upstream then reports nothing): the overall rate, and
            # no percentiles, rather than p50 = p90 = p99 = the average
            r.throughput = ThroughputSummary.overall(r.scheduled, r.duration_seconds)
        latencies = sorted(
            max(0.0, at - created_at[name]) for name, at in bound.items() if name in created_at
        )
        r.latency = summarize_latencies(latencies)
        r.latency_quantiles = quantiles(latencies)
        if self.workload.gang is not None:
            r.gangs = gang.measure_gangs(self.workload, created_at, bound, first_created)

    async def _sample(self, tracker: PodTracker, sampler: ThroughputSampler) -> None:
        next_tick = self.clock() + 1.0
        while True:
            await asyncio.sleep(max(0.0, next_tick - self.clock()))
            sampler.observe(self.clock(), tracker.bound_count)
            self._checkpoint(tracker.bound_count)
            next_tick += 1.0

    def _checkpoint(self, scheduled: int) -> None:
        """Note the scheduler's CPU time and RSS with the measured pods bound so far."""
        self.result.checkpoints.append(
            Checkpoint(
                self.clock() - self._measure_started,
                scheduled,
                self._tree_cpu_seconds(),
                self.scheduler.rss_bytes(),
            )
        )

    def _tree_cpu_seconds(self) -> float | None:
        """The CPU of the scheduler and its descendants since measuring began."""
        if self.cpu_tree is None:
            return None
        self.cpu_tree.sample()
        return self.cpu_tree.total_seconds()

    async def _watchdog(self) -> None:
        """Fail fast when a child dies instead of waiting for pods until the timeout."""
        while True:
            for proc in self._processes():
                if not proc.alive():
                    raise RuntimeError(f"{proc.name} process exited (code {proc.exit_code()})")
            await asyncio.sleep(0.5)

    async def _sample_rss(self) -> None:
        while True:
            self.scheduler.sample_rss()
            await asyncio.sleep(1.0)

    async def _sink_spans(self) -> int | None:
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"{self.sink_url}/stats") as resp,
            ):
                return int((await resp.json())["spans"])
        except (aiohttp.ClientError, KeyError, ValueError):
            return None

    @staticmethod
    async def _api_requests(api: KubeApi) -> dict[Key, int]:
        """kubesim's request counts (empty from an API server that does not serve them)."""
        try:
            return parse_exposition(await api.get_text("/metrics"))
        except (ApiError, aiohttp.ClientError):
            return {}

    async def _scrape_metrics(self, probe: aiohttp.ClientSession) -> str | None:
        """The scheduler's /metrics text; None if it serves none."""
        try:
            async with probe.get(f"{self.metrics_url}/metrics") as resp:
                return await resp.text() if resp.status == 200 else None
        except aiohttp.ClientError:
            return None


#: The lines aiosched run and the OTLP sink print once they listen (group 1: the port).
def bare_cluster_argv(command: Sequence[str], kubeconfig: Path) -> list[str]:
    """`aiosched cluster` on a free port with no nodes and, as scheduler_perf's API server, no
    controllers (no PV binder, no CSI driver: the volume shapes create their PVs and PVCs bound,
    and their CSINodes, themselves; nor workload, lifecycle or garbage-collection controllers)."""
    return [
        *command,
        "cluster",
        "--port",
        "0",
        "--nodes",
        "0",
        "--kubeconfig-out",
        str(kubeconfig),
        "--no-storage-controllers",
        "--no-controllers",
    ]


SCHEDULER_SERVING = re.compile(r"serving /metrics, .+? on https?://[\d.]+:(\d+)")
SINK_LISTENING = re.compile(r"otlp sink listening on http://[\d.]+:(\d+)")


async def reported_port(process: ManagedProcess, line: re.Pattern[str], timeout: float) -> int:
    """The port a process bound (port 0) and printed in its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = line.search(process.log_text())
        if found:
            return int(found.group(1))
        if not process.alive():
            break
        await asyncio.sleep(0.05)
    raise RuntimeError(f"{process.name} did not say which port it listens on")


def _always() -> bool:
    return True


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, ApiError | RuntimeError | TimeoutError | ValueError | OSError):
        return str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {exc}"


async def run_workloads(
    workloads: list[wl.Workload],
    options: RunOptions,
    log: Log = _stderr,
    watch: Callable[[WorkloadRun], Coroutine[Any, Any, None]] | None = None,
) -> list[BenchResult]:
    """Run the workloads one after the other; `watch(run)` runs beside each (progress)."""
    results = []
    for workload in workloads:
        log(f"{workload.name}: starting (logs in {options.workdir / workdir_name(workload)})")
        run = WorkloadRun(workload, options, log=log)
        if watch is None:
            result = await run.run()
        else:
            async with anyio.create_task_group() as watching:
                watching.start_soon(watch, run, name="progress")
                result = await run.run()
                watching.cancel_scope.cancel()
        results.append(result)
        status = "ok" if result.ok else f"FAILED: {result.error or 'incomplete'}"
        log(f"{workload.name}: {status}")
    return results
