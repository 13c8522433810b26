"""scheduler_core's embedded-cluster harness, with tracing into memory and an explain store."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from harness import MINIMAL_CONFIG, Api, BindingRecorder, Harness
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Sampler

from kubesim.embedded import EmbeddedCluster
from observability.explain import ExplainStore
from observability.tracing import NOOP_TRACING, Tracing, tracing_with_processor
from profiles.api import load_config_text
from scheduler.client.rest import ClientSettings, KubeClient
from scheduler.cycle.profile_set import registry_for_config
from scheduler.cycle.scheduler import Scheduler, SchedulerOptions
from scheduler.plugins.registry import in_tree_registry


@dataclass
class TracedHarness(Harness):
    exporter: InMemorySpanExporter
    explain: ExplainStore

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]

    def pod_span(self, pod: str) -> ReadableSpan | None:
        for span in self.spans("PodScheduling"):
            if (span.attributes or {}).get("k8s.pod.name") == pod:
                return span
        return None

    def attempts(self, pod: str) -> list[ReadableSpan]:
        spans = self.spans("SchedulingAttempt")
        found = [s for s in spans if (s.attributes or {}).get("k8s.pod.name") == pod]
        return sorted(found, key=lambda s: int((s.attributes or {})["aiosched.attempt"]))  # type: ignore[arg-type]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        assert parent.context is not None
        parent_id = parent.context.span_id
        return [s for s in self.spans() if s.parent is not None and s.parent.span_id == parent_id]


@contextlib.asynccontextmanager
async def traced_scheduler(
    tmp_path: Path,
    *,
    tracing_enabled: bool = True,
    sampler: Sampler | None = None,
    config_text: str = MINIMAL_CONFIG,
    explain: ExplainStore | None = None,
    configure: Callable[[Scheduler], None] | None = None,
) -> AsyncIterator[TracedHarness]:
    registry = in_tree_registry()
    exporter = InMemorySpanExporter()
    tracing: Tracing = (
        tracing_with_processor(SimpleSpanProcessor(exporter), sampler)
        if tracing_enabled
        else NOOP_TRACING
    )
    store = explain if explain is not None else ExplainStore()
    async with EmbeddedCluster(nodes=0, kubeconfig_out=tmp_path / "kubeconfig") as cluster:
        api = Api(cluster)
        client = await KubeClient.connect(
            ClientSettings(kubeconfig=str(cluster.kubeconfig_path), qps=0)
        )
        config = load_config_text(config_text, registry_for_config(registry))
        scheduler = Scheduler(
            client, config, registry, SchedulerOptions(seed=7), tracing=tracing, explain=store
        )
        if configure is not None:
            configure(scheduler)
        recorder = BindingRecorder()
        async with asyncio.TaskGroup() as group:
            watch = group.create_task(recorder.run(cluster))
            run = group.create_task(scheduler.run())
            await asyncio.wait_for(scheduler.wait_for_cache_sync(), 10)
            try:
                yield TracedHarness(cluster, api, scheduler, recorder, exporter, store)
            finally:
                run.cancel()
                watch.cancel()
                # Both must have ended before their client closes: a scheduler still stopping
                # (its event writers, say) would otherwise use a closed session.
                await asyncio.wait({run, watch})
                await client.close()
                await api.close()
                await tracing.aclose()
