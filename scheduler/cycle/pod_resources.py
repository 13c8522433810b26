"""Pods → the amounts /metrics/resources reports (observability.resource_metrics.PodResources).

Upstream computes them with resourcehelper.PodRequests / PodLimits
(staging/src/k8s.io/component-helpers/resource/helpers.go): the sum over containers, then the
maximum with each init container (restartable init containers, i.e. sidecars, add to the sum
and to every later init container), then spec.overhead (for limits only on resources that have
a limit). Pod-level spec.resources replaces the container totals of the resources it names
(cpu, memory, hugepages-*). Terminal pods are skipped, as upstream skips them.

Parsing happens at scrape time; results are kept per pod uid and resourceVersion, so a scrape
re-parses only pods that changed since the last one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from observability.resource_metrics import PodResources
from scheduler.api.objects import MalformedObject, PodView
from scheduler.api.resources import parse_resource_list

log = logging.getLogger(__name__)

_NANO = 1e-9
_POD_LEVEL_RESOURCES = ("cpu", "memory")

_Amounts = dict[str, int]  # resource name → nano units


def _add(total: _Amounts, amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount


def _max_into(total: _Amounts, amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        if amount > total.get(name, 0):
            total[name] = amount


def _container_amounts(container: Any, kind: str, path: str) -> _Amounts:
    resources = container.get("resources") if isinstance(container, Mapping) else None
    if not isinstance(resources, Mapping) or resources.get(kind) is None:
        return {}
    return parse_resource_list(resources[kind], f"{path}.resources.{kind}")


def pod_amounts(spec: Mapping[str, Any], kind: str) -> _Amounts:
    """Effective ``kind`` ("requests" or "limits") of a pod spec, in nano units."""
    total: _Amounts = {}
    for i, container in enumerate(spec.get("containers") or ()):
        _add(total, _container_amounts(container, kind, f"spec.containers[{i}]"))
    sidecars: _Amounts = {}
    init_max: _Amounts = {}
    for i, container in enumerate(spec.get("initContainers") or ()):
        amounts = _container_amounts(container, kind, f"spec.initContainers[{i}]")
        if isinstance(container, Mapping) and container.get("restartPolicy") == "Always":
            _add(total, amounts)
            _add(sidecars, amounts)
            effective = dict(sidecars)
        else:
            effective = dict(amounts)
            _add(effective, sidecars)
        _max_into(init_max, effective)
    _max_into(total, init_max)
    pod_level = spec.get("resources")
    if isinstance(pod_level, Mapping) and pod_level.get(kind) is not None:
        for name, amount in parse_resource_list(pod_level[kind], f"spec.resources.{kind}").items():
            if name in _POD_LEVEL_RESOURCES or name.startswith("hugepages-"):
                total[name] = amount
    overhead = spec.get("overhead")
    if isinstance(overhead, Mapping):
        for name, amount in parse_resource_list(overhead, "spec.overhead").items():
            if kind == "requests" or name in total:
                total[name] = total.get(name, 0) + amount
    return total


def _as_floats(amounts: Mapping[str, int]) -> dict[str, float]:
    return {name: nanos * _NANO for name, nanos in amounts.items()}


def pod_resources(pod: PodView) -> PodResources:
    spec = pod.raw.get("spec") or {}
    priority = spec.get("priority")
    return PodResources(
        namespace=pod.namespace,
        name=pod.name,
        node=pod.node_name,
        scheduler=pod.scheduler_name,
        priority="" if priority is None else str(priority),
        requests=_as_floats(pod_amounts(spec, "requests")),
        limits=_as_floats(pod_amounts(spec, "limits")),
    )


class PodResourcesSource:
    """Callable source for PodResourceMetrics.set_source over the scheduler's pods."""

    def __init__(self, pods: Callable[[], Iterable[PodView]]) -> None:
        self._pods = pods
        self._cache: dict[str, tuple[str, PodResources]] = {}

    def __call__(self) -> Iterator[PodResources]:
        previous = self._cache
        current: dict[str, tuple[str, PodResources]] = {}
        self._cache = current
        for pod in list(self._pods()):
            if pod.is_terminal:
                continue
            cached = previous.get(pod.uid)
            if cached is not None and cached[0] == pod.resource_version:
                resources = cached[1]
            else:
                try:
                    resources = pod_resources(pod)
                except MalformedObject as err:
                    log.debug("pod %s left out of /metrics/resources: %s", pod.key, err)
                    continue
            current[pod.uid] = (pod.resource_version, resources)
            yield resources
