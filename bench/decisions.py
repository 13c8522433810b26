"""Decide as kube-scheduler does, pod by pod: run a seed's random workload
(bench/decisions_workload.py) once against a reference scheduler (the real kube-scheduler) and
once against `aiosched run`, each on a fresh API server with the same objects, creating the pods
one at a time and waiting for each to be bound or marked unschedulable before the next, and
compare every decision
(bench/decisions_compare.py).

    python -m bench.decisions --scheduler-command "kube-scheduler --config {config}" --seeds 1-4

Without --kubeconfig each run gets its own `aiosched cluster`; with one, both runs share that API
server (a real kube-apiserver) and each removes its pods, nodes and PriorityClasses afterwards.
When aiosched scores the reference's node as high as its best and another node as high too (its
what-if answer), the pod is created bound to the reference's node, a tie, so that the two clusters
stay the same.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench import decisions_compare as cmp
from bench.decisions_workload import DecisionWorkload, generate
from bench.kubeapi import KubeApi, read_kubeconfig, wait_http_ok
from bench.processes import ManagedProcess, aiosched_command, free_port
from bench.runner import SCHEDULER_SERVING, bare_cluster_argv, reported_port
from bench.scheduler_setup import scheduler_config
from scheduler.app.commands.replay import seeds as parse_seeds

POLL_SECONDS = 0.02
SETTLE_POLL_SECONDS = 0.1
FIRST_DECISION_TIMEOUT = 90.0  # the scheduler is still starting (informers, caches)
DECISION_TIMEOUT = 30.0
SETTLE_SECONDS = 1.0  # without the scheduler's /metrics: a fixed wait after each pod
SETTLE_TIMEOUT = 60.0
BACKOFF_SECONDS = 1
REFERENCE, AIOSCHED = "kube-scheduler", "aiosched"


class SideRun:
    """One scheduler deciding one workload on one API server."""

    def __init__(
        self,
        workload: DecisionWorkload,
        side: str,
        workdir: Path,
        scheduler_argv: list[str],
        kubeconfig: Path | None,
        reference: Sequence[cmp.PodOutcome] | None = None,
    ) -> None:
        self.workload = workload
        self.side = side
        self.dir = workdir / f"seed-{workload.seed}" / side
        self.shared_cluster = kubeconfig is not None
        self.kubeconfig = kubeconfig or self.dir / "kubeconfig"
        self.scheduler_argv = scheduler_argv
        self.reference = {o.pod: o for o in reference or ()}
        # a run on a shared API server gets a namespace of its own: a deleted namespace stays
        # Terminating there (no namespace controller), so a name is never reused
        suffix = f"-{side}-{int(time.time() * 1000) % 10**8}" if self.shared_cluster else ""
        self.namespace = workload.namespace + suffix
        self.explain_url: str | None = None
        self.metrics_url: str | None = None  # where to see the queue empty (see _settle)
        self.what_if_url: str | None = None
        self._failed_attempts = 0.0  # scheduler_schedule_attempts_total{result="unschedulable"}
        self.pods: dict[str, str | None] = {}  # the pods that exist now -> their node

    def _pod_manifest(self, pod: dict[str, Any], node: str | None = None) -> bytes:
        manifest = copy.deepcopy(pod)
        manifest["metadata"]["namespace"] = self.namespace
        if node is not None:
            manifest["spec"]["nodeName"] = node
        return orjson.dumps(manifest)

    @property
    def pods_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"

    async def run(self) -> list[cmp.PodOutcome]:
        self.dir.mkdir(parents=True, exist_ok=True)
        cluster: ManagedProcess | None = None
        if not self.shared_cluster:
            self.kubeconfig.unlink(missing_ok=True)
            cluster = ManagedProcess(
                "cluster",
                bare_cluster_argv(aiosched_command(), self.kubeconfig),
                self.dir / "cluster.log",
            )
            await cluster.start()
        config = self.dir / "scheduler-config.yaml"
        config.write_text(
            scheduler_config(kubeconfig=self.kubeconfig.absolute())
            # every backoff one second: _settle waits it out after a failed attempt, so that a
            # later event moves the pending pods to activeQ (priority, then the time each
            # failed, the same on both sides) rather than to backoffQ, which the wall-clock
            # times of earlier failures order
            + f"podInitialBackoffSeconds: {BACKOFF_SECONDS}\n"
            + f"podMaxBackoffSeconds: {BACKOFF_SECONDS}\n"
        )
        port = free_port()
        values = {
            "kubeconfig": str(self.kubeconfig.absolute()),
            "config": str(config.absolute()),
            "port": str(port),
        }
        if any("{port}" in arg for arg in self.scheduler_argv):
            # kube-scheduler serves its /metrics over TLS with a certificate of its own
            self.metrics_url = f"https://127.0.0.1:{port}/metrics"
        scheduler = ManagedProcess(
            "scheduler",
            [arg.format(**values) for arg in self.scheduler_argv],
            self.dir / "scheduler.log",
        )
        api: KubeApi | None = None
        try:
            while not self.kubeconfig.exists():
                if cluster is not None and not cluster.alive():
                    raise RuntimeError(f"aiosched cluster exited: {cluster.log_tail()}")
                await asyncio.sleep(0.05)
            api = KubeApi(read_kubeconfig(self.kubeconfig), connections=8)
            await wait_http_ok(api.session, f"{api.base_url}/readyz", 60, lambda: True)
            await self._create_cluster_objects(api)
            await scheduler.start()
            if self.side == AIOSCHED:
                port = await reported_port(scheduler, SCHEDULER_SERVING, 60)
                self.explain_url = f"http://127.0.0.1:{port}/debug/explain/{self.namespace}"
                self.metrics_url = f"http://127.0.0.1:{port}/metrics"
                self.what_if_url = f"http://127.0.0.1:{port}/debug/what-if"
                # the first what-if must see every node, or a tie on the first pod goes unseen
                await self._wait_for_cache(api, "nodes", len(self.workload.nodes))
            outcomes = []
            for index, pod in enumerate(self.workload.pods):
                if not scheduler.alive():
                    raise RuntimeError(f"{self.side} exited: {scheduler.log_tail()}")
                timeout = FIRST_DECISION_TIMEOUT if index == 0 else DECISION_TIMEOUT
                outcomes.append(await self._decide(api, pod, timeout))
            return outcomes
        finally:
            await scheduler.stop()
            if api is not None:
                if self.shared_cluster:
                    await self._clean_up(api)
                await api.close()
            if cluster is not None:
                await cluster.stop()

    async def _create_cluster_objects(self, api: KubeApi) -> None:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
        await api.create("/api/v1/namespaces", orjson.dumps(namespace), exist_ok=True)
        for priority_class in self.workload.priority_classes:
            path = "/apis/scheduling.k8s.io/v1/priorityclasses"
            await api.create(path, orjson.dumps(priority_class), exist_ok=True)
        for budget in self.workload.pod_disruption_budgets:
            manifest = copy.deepcopy(budget)
            manifest["metadata"]["namespace"] = self.namespace
            path = f"/apis/policy/v1/namespaces/{self.namespace}/poddisruptionbudgets"
            await api.create(path, orjson.dumps(manifest))
        for node in self.workload.nodes:
            created = await api.create("/api/v1/nodes", orjson.dumps(node))
            if not (created.get("status") or {}).get("allocatable"):
                # an API server that drops the status on create: set it on the subresource
                created["status"] = node["status"]
                name = node["metadata"]["name"]
                await api.replace(f"/api/v1/nodes/{name}/status", orjson.dumps(created))

    async def _clean_up(self, api: KubeApi) -> None:
        listing = await api.get(self.pods_path)
        for item in listing.get("items") or []:
            await api.delete(f"{self.pods_path}/{item['metadata']['name']}?gracePeriodSeconds=0")
        for budget in self.workload.pod_disruption_budgets:
            name = budget["metadata"]["name"]
            path = f"/apis/policy/v1/namespaces/{self.namespace}/poddisruptionbudgets/{name}"
            await api.delete(path)
        for node in self.workload.nodes:
            await api.delete(f"/api/v1/nodes/{node['metadata']['name']}")
        for priority_class in self.workload.priority_classes:
            name = priority_class["metadata"]["name"]
            await api.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")

    async def _list_pods(self, api: KubeApi) -> dict[str, str | None]:
        listing = await api.get(self.pods_path)
        return {
            item["metadata"]["name"]: (item.get("spec") or {}).get("nodeName")
            for item in listing.get("items") or []
        }

    async def _decide(self, api: KubeApi, pod: dict[str, Any], timeout: float) -> cmp.PodOutcome:
        name = pod["metadata"]["name"]
        outcome = cmp.PodOutcome(pod=name)
        before = dict(self.pods)
        reference = self.reference.get(name)
        tied = await self._tied_with_reference(api, pod, reference)
        if tied is not None and reference is not None:
            # aiosched scores the reference's node as high as its best and so may pick either:
            # the pod goes there, as on the reference, so that the two clusters stay the same
            await api.create(self.pods_path, self._pod_manifest(pod, reference.node))
            outcome.pinned, outcome.totals = True, tied
            # the scheduler learns of a pod it did not bind through its watch only: the pods
            # that pod lets in (required affinity to it) are moved once its cache has it
            await self._wait_for_cache(api, "pods", sum(1 for node in before.values() if node) + 1)
        else:
            await api.create(self.pods_path, self._pod_manifest(pod))
            await self._wait_for_decision(api, outcome, timeout)
        await self._settle(api)
        if outcome.node and not outcome.pinned and self.explain_url is not None:
            outcome.totals = await self._explain_totals(api, name)
        self.pods = await self._list_pods(api)
        outcome.node = self.pods.get(name)
        outcome.victims = sorted(set(before) - set(self.pods))
        outcome.others_bound = {
            other: node
            for other, node in self.pods.items()
            if other != name and node and other in before and not before[other]
        }
        if outcome.victims:
            # the next pod must not be tried while the scheduler still holds a victim the API
            # server has deleted (a slow watch under load): it would see that node full
            bound = sum(1 for node in self.pods.values() if node)
            await self._wait_for_cache(api, "pods", bound, exact=True)
        return outcome

    async def _wait_for_decision(
        self, api: KubeApi, outcome: cmp.PodOutcome, timeout: float
    ) -> None:
        """Poll the pod until it is bound, or marked unschedulable with no preemption under way."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            current = await api.get(f"{self.pods_path}/{outcome.pod}")
            status = current.get("status") or {}
            outcome.node = (current.get("spec") or {}).get("nodeName")
            condition = next(
                (c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"),
                None,
            )
            if outcome.node:
                return
            if condition is not None and condition.get("status") == "False":
                if outcome.message is None:
                    outcome.message = condition.get("message")
                    outcome.nominated = status.get("nominatedNodeName")
                if not outcome.nominated:
                    return  # no preemption: the pod stays pending
            if loop.time() > deadline:
                outcome.timed_out = True
                return
            await asyncio.sleep(POLL_SECONDS)

    async def _wait_for_cache(
        self, api: KubeApi, kind: str, count: int, *, exact: bool = False
    ) -> None:
        """Wait until the scheduler's cache holds at least `count` of `kind` (nodes, pods:
        scheduler_cache_size, refreshed every second), or exactly `count` with `exact`."""
        if self.metrics_url is None:
            await asyncio.sleep(SETTLE_SECONDS)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_TIMEOUT
        while loop.time() < deadline:
            text = await self._metrics_text(api)
            cached = _samples(text, "scheduler_cache_size", (f'type="{kind}"',))
            if cached and (sum(cached) == count if exact else sum(cached) >= count):
                return
            await asyncio.sleep(SETTLE_POLL_SECONDS)
        raise TimeoutError(f"{self.side}: the scheduler's cache did not reach {count} {kind}")

    async def _metrics_text(self, api: KubeApi) -> str:
        assert self.metrics_url is not None
        try:
            async with api.session.get(self.metrics_url, ssl=False) as resp:
                return await resp.text()
        except aiohttp.ClientError:
            return ""

    async def _settle(self, api: KubeApi) -> None:
        """Wait until the scheduler has nothing left to try: no pod in its activeQ or backoffQ
        (pods an event moved there, such as the pods pending before a preemption's victims were
        deleted) and no attempt finished for a poll's time, so that the pods listed next are
        the same on every run whatever the backoffs' timing."""
        if self.metrics_url is None:
            await asyncio.sleep(SETTLE_SECONDS)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_TIMEOUT
        previous: float | None = None
        failed_before = self._failed_attempts
        while loop.time() < deadline:
            text = await self._metrics_text(api)
            queued = sum(
                _samples(text, "scheduler_pending_pods", ('queue="active"', 'queue="backoff"'))
            )
            attempts = sum(_samples(text, "scheduler_schedule_attempts_total"))
            if text and queued == 0 and attempts == previous:
                self._failed_attempts = sum(
                    _samples(text, "scheduler_schedule_attempts_total", ('result="unschedulable"',))
                )
                if self._failed_attempts != failed_before:
                    await asyncio.sleep(BACKOFF_SECONDS + 0.1)  # the failed pods' backoff ends
                return
            previous = attempts if text and queued == 0 else None
            await asyncio.sleep(SETTLE_POLL_SECONDS)
        raise TimeoutError(f"{self.side}: the scheduling queue did not empty in {SETTLE_TIMEOUT}s")

    async def _explain_totals(self, api: KubeApi, name: str) -> dict[str, float] | None:
        async with api.session.get(f"{self.explain_url}/{name}") as resp:
            if resp.status != 200:
                return None
            body = await resp.json()
        return {entry["node"]: float(entry["total"]) for entry in body.get("topNodes") or []}

    async def _tied_with_reference(
        self, api: KubeApi, pod: dict[str, Any], reference: cmp.PodOutcome | None
    ) -> dict[str, float] | None:
        """aiosched's what-if totals for `pod` when the reference bound it to a node that
        aiosched scores as high as its best while another node scores as high too; else None."""
        if self.what_if_url is None or reference is None or reference.node is None:
            return None
        for _ in range(50):
            async with api.session.post(self.what_if_url, data=self._pod_manifest(pod)) as resp:
                if resp.status == 429:  # one what-if at a time
                    await asyncio.sleep(0.1)
                    continue
                if resp.status != 200:
                    raise RuntimeError(f"what-if {resp.status}: {(await resp.text())[:300]}")
                body = await resp.json()
                break
        else:
            raise RuntimeError("what-if stayed busy")
        totals = {entry["node"]: float(entry["total"]) for entry in body.get("topNodes") or []}
        return totals if cmp.is_tie(totals, reference.node) else None


def _samples(metrics: str, name: str, labels: Sequence[str] = ()) -> list[float]:
    """The values of `name`'s samples in a /metrics text (with one of `labels`, if given)."""
    values = []
    for line in metrics.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if labels and not any(label in line for label in labels):
            continue
        values.append(float(line.rsplit(" ", 1)[1]))
    return values


def priorities(workload: DecisionWorkload) -> dict[str, int]:
    values = {pc["metadata"]["name"]: int(pc["value"]) for pc in workload.priority_classes}
    return {p["metadata"]["name"]: values[p["spec"]["priorityClassName"]] for p in workload.pods}


async def run_seed(args: argparse.Namespace, seed: int) -> dict[str, Any]:
    workload = generate(seed, args.pods, args.nodes)
    reference = await SideRun(
        workload, REFERENCE, args.workdir, shlex.split(args.scheduler_command), args.kubeconfig
    ).run()
    ours_argv = [
        *aiosched_command(),
        "run",
        "--kubeconfig",
        "{kubeconfig}",
        "--config",
        "{config}",
        "--http-address",
        "127.0.0.1:0",
        "--insecure-http",
        "--seed",
        str(seed),
        *shlex.split(args.aiosched_args),
    ]
    ours = await SideRun(
        workload, AIOSCHED, args.workdir, ours_argv, args.kubeconfig, reference
    ).run()
    rows = cmp.compare(reference, ours, priorities(workload))
    print(cmp.table(seed, rows), flush=True)
    return {
        "seed": seed,
        "apiServer": str(args.kubeconfig) if args.kubeconfig else "kubesim",
        "summary": cmp.summary(rows),
        "rows": [row.to_json() for row in rows],
        "reference": [o.to_json() for o in reference],
        "aiosched": [o.to_json() for o in ours],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.decisions", description=__doc__)
    parser.add_argument(
        "--scheduler-command",
        required=True,
        help="the reference scheduler's command line; {kubeconfig} and {config} stand for the "
        "API server's kubeconfig and a KubeSchedulerConfiguration written for it, {port} for a "
        "free port where it serves /metrics over HTTPS without authentication (to see its "
        "queue empty after each pod; without {port}, a fixed wait)",
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        help="an existing API server to run both schedulers on, one after the other "
        "(default: a fresh `aiosched cluster` per run)",
    )
    parser.add_argument("--seeds", type=parse_seeds, default=parse_seeds("1-4"))
    parser.add_argument("--pods", type=int, default=50)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--aiosched-args", default="", help="more flags for `aiosched run`")
    parser.add_argument("--workdir", type=Path, default=Path("decisions-out"))
    parser.add_argument("--json", type=Path, help="write every seed's rows and outcomes here")
    args = parser.parse_args(argv)
    if args.pods < 1 or args.nodes < 1:
        parser.error("--pods and --nodes must be at least 1")
    results = [asyncio.run(run_seed(args, seed)) for seed in args.seeds]
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    total = {key: sum(r["summary"][key] for r in results) for key in results[0]["summary"]}
    print(
        f"all seeds: {total['pods']} pods, {total['agree']} agree, {total['tie']} ties, "
        f"{total['differ']} differ"
    )
    return 1 if total["differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
