"""The scheduler's accounting and /metrics/resources agree on every pod's requests.

Both read scheduler.api.requests. For random pods (containers, init containers and sidecars,
overhead, pod-level resources) the requests PodView carries (what NodeResourcesFit, the cache,
BalancedAllocation and preemption count, and so what explain's verdicts are computed from)
equal kube_pod_resource_request's values. Mid-resize they may differ, as upstream's do: the
metric reports the desired amounts (PodRequests with default options), the scheduler the larger
of desired and allocated/actuated.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apimachinery.quantity import nanos_to_milli, nanos_to_value
from scheduler.api.pod import PodView
from scheduler.cycle.pod_resources import pod_amounts, pod_resources

CPU = st.sampled_from(["0", "1m", "100m", "250m", "1", "1500m", "2"])
MEMORY = st.sampled_from(["0", "1Mi", "200Mi", "1Gi", "1G", "3Gi"])


def _requests() -> st.SearchStrategy[dict[str, str]]:
    return st.fixed_dictionaries({}, optional={"cpu": CPU, "memory": MEMORY})


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    containers = [
        {"name": f"c{i}", "image": "i", "resources": {"requests": draw(_requests())}}
        for i in range(draw(st.integers(1, 3)))
    ]
    inits = [
        {
            "name": f"i{i}",
            "image": "i",
            "resources": {"requests": draw(_requests())},
            **({"restartPolicy": "Always"} if draw(st.booleans()) else {}),
        }
        for i in range(draw(st.integers(0, 3)))
    ]
    spec: dict[str, Any] = {"containers": containers, "initContainers": inits, "nodeName": "n"}
    if draw(st.booleans()):
        spec["resources"] = {"requests": draw(_requests())}
    if draw(st.booleans()):
        spec["overhead"] = draw(_requests())
    return {
        "metadata": {"name": "p", "namespace": "d", "uid": "u", "resourceVersion": "1"},
        "spec": spec,
        "status": {"phase": "Running"},
    }


@settings(max_examples=300, deadline=None)
@given(pods())
def test_scheduler_and_metrics_agree(raw: dict[str, Any]) -> None:
    view = PodView.from_dict(raw)
    exact = pod_amounts(raw["spec"], "requests")  # what the metric renders, in nano units
    assert view.requests.milli_cpu == nanos_to_milli(exact.get("cpu", 0))
    assert view.requests.memory == nanos_to_value(exact.get("memory", 0))
    metric = pod_resources(view).requests
    assert metric == {name: nanos / 10**9 for name, nanos in exact.items()}
