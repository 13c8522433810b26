"""kube-scheduler's /metrics/resources: each pod's resource requests and limits as gauges.

Upstream: pkg/scheduler/metrics/resources/resources.go. The values are computed on every scrape
from the scheduler's informer pods (a source the scheduler plugs in), never stored: one series
per pod, resource and kind (request or limit), skipping zero amounts and terminal pods. Labels
and units are upstream's; ``priority`` is empty for a pod without spec.priority.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from prometheus_client.utils import floatToGoString

log = logging.getLogger(__name__)

_REQUEST_HELP: Final = "Resources requested by workloads on the cluster, broken down by pod."
_LIMIT_HELP: Final = "Resources limit for workloads on the cluster, broken down by pod."

_BYTES_RESOURCES: Final = frozenset({"memory", "storage", "ephemeral-storage"})


@dataclass(frozen=True, slots=True)
class PodResources:
    """One pod's effective requests and limits (upstream's resourcehelper.PodRequests /
    PodLimits), amounts in base units: cores for cpu, bytes for memory."""

    namespace: str
    name: str
    node: str
    scheduler: str
    priority: str  # "" when spec.priority is unset
    requests: Mapping[str, float]
    limits: Mapping[str, float]


PodResourcesSource = Callable[[], Iterable[PodResources]]


def resource_unit(resource: str) -> str:
    """The ``unit`` label upstream gives a resource name ("" for extended resources)."""
    if resource == "cpu":
        return "cores"
    if resource in _BYTES_RESOURCES or resource.startswith("hugepages-"):
        return "bytes"
    if resource.startswith("attachable-volumes-"):
        return "integer"
    return ""


def _value(amount: float) -> str:
    """A sample value as prometheus_client writes it (e.g. "0.25", "1.073741824e+09")."""
    text: str = floatToGoString(amount)  # type: ignore[no-untyped-call]
    return text


def _escape(value: str) -> str:
    """A label value as the text format needs it (backslash, quote and newline escaped)."""
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


class PodResourceMetrics:
    """The /metrics/resources exposition; :meth:`set_source` plugs in the pods to report.

    The text is rendered here rather than through a prometheus_client registry: for 10,000
    pods the generic path spends most of a scrape formatting samples, and a scrape runs on the
    event loop. The output is the same text format (tests parse it with prometheus_client).
    """

    def __init__(self) -> None:
        self._source: PodResourcesSource = tuple

    def set_source(self, source: PodResourcesSource) -> None:
        self._source = source

    def exposition(self) -> bytes:
        try:
            pods = list(self._source())
        except Exception:  # a scrape must not fail the server; an empty answer says enough
            log.exception("listing pods for /metrics/resources failed")
            pods = []
        requests = [
            f"# HELP kube_pod_resource_request {_REQUEST_HELP}",
            "# TYPE kube_pod_resource_request gauge",
        ]
        limits = [
            f"# HELP kube_pod_resource_limit {_LIMIT_HELP}",
            "# TYPE kube_pod_resource_limit gauge",
        ]
        for pod in pods:
            # Labels in name order, as Go's and prometheus_client's expositions write them.
            common = (
                f'namespace="{_escape(pod.namespace)}",node="{_escape(pod.node)}",'
                f'pod="{_escape(pod.name)}",priority="{_escape(pod.priority)}",resource="'
            )
            scheduler = _escape(pod.scheduler)
            for lines, name, amounts in (
                (requests, "kube_pod_resource_request", pod.requests),
                (limits, "kube_pod_resource_limit", pod.limits),
            ):
                for resource, amount in amounts.items():
                    if amount == 0:
                        continue
                    lines.append(
                        f'{name}{{{common}{_escape(resource)}",scheduler="{scheduler}",'
                        f'unit="{resource_unit(resource)}"}} {_value(amount)}'
                    )
        return ("\n".join(requests + limits) + "\n").encode()
