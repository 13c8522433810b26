"""/metrics/resources: kube_pod_resource_request / kube_pod_resource_limit per pod and resource.

Facts from upstream pkg/scheduler/metrics/resources/resources.go (labels, units, zero and
terminal pods skipped) and component-helpers resource.PodRequests / PodLimits (init containers,
sidecars, overhead, pod-level resources).
"""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from observability.metrics import SchedulerMetrics
from observability.resource_metrics import PodResources, resource_unit
from scheduler.api.objects import PodView
from scheduler.cycle.pod_resources import PodResourcesSource, pod_amounts


def container(
    requests: dict[str, str] | None = None, limits: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    resources = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": "c", "image": "i", "resources": resources, **extra}


def cores(spec: dict[str, Any], kind: str = "requests") -> float:
    return pod_amounts(spec, kind).get("cpu", 0) / 1e9


@pytest.mark.parametrize(
    ("spec", "kind", "expected"),
    [
        ({"containers": [container({"cpu": "100m"}), container({"cpu": "200m"})]}, "requests", 0.3),
        # The largest init container wins over the sum of the containers.
        (
            {
                "containers": [container({"cpu": "300m"})],
                "initContainers": [container({"cpu": "500m"})],
            },
            "requests",
            0.5,
        ),
        # A sidecar runs beside the containers and every later init container.
        (
            {
                "containers": [container({"cpu": "200m"})],
                "initContainers": [
                    container({"cpu": "100m"}, restartPolicy="Always"),
                    container({"cpu": "250m"}),
                ],
            },
            "requests",
            0.35,
        ),
        # Overhead adds to requests, and to limits only where a limit is set.
        (
            {"containers": [container({"cpu": "100m"})], "overhead": {"cpu": "50m"}},
            "requests",
            0.15,
        ),
        ({"containers": [container({"cpu": "100m"})], "overhead": {"cpu": "50m"}}, "limits", 0),
        (
            {
                "containers": [container({"cpu": "100m"}, {"cpu": "1"})],
                "overhead": {"cpu": "50m"},
            },
            "limits",
            1.05,
        ),
        # Pod-level resources replace the container totals.
        (
            {
                "containers": [container({"cpu": "100m"})],
                "resources": {"requests": {"cpu": "2"}},
            },
            "requests",
            2,
        ),
    ],
)
def test_pod_amounts(spec: dict[str, Any], kind: str, expected: float) -> None:
    assert cores(spec, kind) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("resource", "unit"),
    [
        ("cpu", "cores"),
        ("memory", "bytes"),
        ("ephemeral-storage", "bytes"),
        ("storage", "bytes"),
        ("hugepages-2Mi", "bytes"),
        ("attachable-volumes-aws-ebs", "integer"),
        ("example.com/gpu", ""),
    ],
)
def test_units(resource: str, unit: str) -> None:
    assert resource_unit(resource) == unit


def pod(
    name: str,
    *,
    node: str = "",
    phase: str = "Running",
    priority: int | None = None,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
) -> PodView:
    spec: dict[str, Any] = {
        "nodeName": node,
        "schedulerName": "default-scheduler",
        "containers": [container(requests, limits)],
    }
    if priority is not None:
        spec["priority"] = priority
    return PodView.from_dict(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": f"u-{name}",
                "resourceVersion": "1",
            },
            "spec": spec,
            "status": {"phase": phase},
        }
    )


def scrape(pods: list[PodView]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    metrics = SchedulerMetrics()
    metrics.pod_resources.set_source(PodResourcesSource(lambda: pods))
    text = metrics.resources_exposition().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def labels(
    pod_name: str, node: str, priority: str, resource: str, unit: str
) -> tuple[tuple[str, str], ...]:
    return tuple(
        sorted(
            {
                "namespace": "ns",
                "pod": pod_name,
                "node": node,
                "scheduler": "default-scheduler",
                "priority": priority,
                "resource": resource,
                "unit": unit,
            }.items()
        )
    )


def test_series_per_pod_resource_and_kind() -> None:
    got = scrape(
        [
            pod(
                "bound",
                node="n1",
                priority=10,
                requests={"cpu": "250m", "memory": "1Gi"},
                limits={"cpu": "1"},
            ),
            pod("pending", requests={"cpu": "100m"}),
            pod("done", node="n1", phase="Succeeded", requests={"cpu": "1"}),
            pod("nothing", node="n1"),
        ]
    )
    assert got == {
        ("kube_pod_resource_request", labels("bound", "n1", "10", "cpu", "cores")): 0.25,
        ("kube_pod_resource_request", labels("bound", "n1", "10", "memory", "bytes")): 2**30,
        ("kube_pod_resource_limit", labels("bound", "n1", "10", "cpu", "cores")): 1,
        ("kube_pod_resource_request", labels("pending", "", "", "cpu", "cores")): 0.1,
    }


def test_a_failing_source_gives_an_empty_answer() -> None:
    metrics = SchedulerMetrics()

    def broken() -> list[PodResources]:
        raise RuntimeError("boom")

    metrics.pod_resources.set_source(broken)
    text = metrics.resources_exposition().decode()
    assert "# TYPE kube_pod_resource_request gauge" in text
    assert "kube_pod_resource_request{" not in text


def test_label_values_are_escaped() -> None:
    metrics = SchedulerMetrics()
    odd = 'a"b\\c\nd'
    metrics.pod_resources.set_source(
        lambda: [PodResources("ns", "p", "", odd, "", {"example.com/gpu": 2}, {})]
    )
    text = metrics.resources_exposition().decode()
    [sample] = [s for f in text_string_to_metric_families(text) for s in f.samples]
    assert (sample.labels["scheduler"], sample.labels["unit"], sample.value) == (odd, "", 2)


@pytest.mark.parametrize(
    ("requests", "text"),
    [
        ({"cpu": "1k"}, "1000"),
        ({"cpu": "1000"}, "1000"),
        ({"cpu": "100m"}, "0.1"),
        ({"cpu": "3"}, "3"),
        ({"cpu": "1"}, "1"),
        ({"cpu": "1100m"}, "1.1"),
        ({"memory": "1Gi"}, "1.073741824e+09"),
        ({"memory": "1M"}, "1e+06"),
        ({"memory": "999999"}, "999999"),
        ({"cpu": "1n"}, "1e-09"),
    ],
)
def test_values_are_written_as_upstream_writes_them(requests: dict[str, str], text: str) -> None:
    """Quantity.AsApproximateFloat64 of "1k" cores is 1000, not 1000.0000000000001 (nanos
    times 1e-9 rounded twice), written as client_golang writes it: Go's
    strconv.FormatFloat(v, 'g', -1, 64), not prometheus_client's "1000.0"."""
    metrics = SchedulerMetrics()
    pods = [pod("p", node="n1", requests=requests)]
    metrics.pod_resources.set_source(PodResourcesSource(lambda: pods))
    exposition = metrics.resources_exposition().decode()
    request = next(
        line for line in exposition.splitlines() if line.startswith("kube_pod_resource_request{")
    )
    assert request.endswith(f"}} {text}")
