"""kube-scheduler's /metrics/resources: each pod's resource requests and limits as gauges.

Upstream: pkg/scheduler/metrics/resources/resources.go. The values are computed on every scrape
from the scheduler's informer pods (a source the scheduler plugs in), never stored: one series
per pod, resource and kind (request or limit), skipping zero amounts and terminal pods. Labels
and units are upstream's; ``priority`` is empty for a pod without spec.priority.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

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
    """A sample value as upstream writes it: client_golang's text format
    (prometheus/common expfmt writeFloat) is Go's strconv.FormatFloat(f, 'g', -1, 64), so
    1000 cores is "1000", 0.25 is "0.25" and 1Gi is "1.073741824e+09"."""
    return go_float(amount)


def go_float(value: float) -> str:
    """Go's strconv.FormatFloat(value, 'g', -1, 64): the shortest digits that read back as
    `value` (Python's repr finds the same ones), in %e form when the decimal exponent is below
    -4 or at least 6 (Go's precision for the shortest form), else in %f form."""
    if value == 1:
        return "1"  # writeFloat's shortcuts for 1, 0 and -1 agree with FormatFloat
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    shortest = Decimal(repr(abs(value))).normalize()
    _, digit_tuple, exponent = shortest.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # where the decimal point falls in `digits`
    exponent10 = point - 1
    if exponent10 < -4 or exponent10 >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent10 < 0 else '+'}{abs(exponent10):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


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
