"""The Scheduler sets PodLevelResources / InPlacePodLevelResourcesVerticalScaling process-wide
from its --feature-gates before it reads a pod, as kube-scheduler reads them from
DefaultFeatureGate (pkg/scheduler/framework/types.go CalculateResource), and a filter worker
gets the same values on its command line."""

from __future__ import annotations

from typing import Any

import pytest

from profiles.api import load_config_text
from scheduler.api.objects import PodView
from scheduler.api.request_gates import RequestGates, gates_set, request_gates
from scheduler.cycle.profile_set import registry_for_config
from scheduler.cycle.scheduler import Scheduler, SchedulerOptions
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import make_node

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
"""


class QuietClient:
    """Enough of a client to build a Scheduler that never runs."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self


def build(feature_gates: dict[str, bool]) -> Scheduler:
    registry = in_tree_registry()
    resolved = load_config_text(CONFIG, registry_for_config(registry))
    options = SchedulerOptions(seed=1, feature_gates=feature_gates)
    return Scheduler(QuietClient(), resolved, registry, options)  # type: ignore[arg-type]


def pod_level_pod() -> PodView:
    return PodView.from_dict(
        {
            "metadata": {"name": "p", "namespace": "d", "uid": "p"},
            "spec": {
                "nodeName": "n",
                "resources": {"requests": {"cpu": "3"}},
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            },
            "status": {"phase": "Running"},
        }
    )


@pytest.mark.parametrize(
    ("feature_gates", "expected", "counted_cpu"),
    [
        ({}, RequestGates(True, True), 3000),
        (
            {"PodLevelResources": False, "InPlacePodLevelResourcesVerticalScaling": False},
            RequestGates(False, False),
            1000,
        ),
        ({"InPlacePodLevelResourcesVerticalScaling": False}, RequestGates(True, False), 3000),
    ],
)
def test_scheduler_sets_the_request_gates(
    feature_gates: dict[str, bool], expected: RequestGates, counted_cpu: int
) -> None:
    with gates_set():
        scheduler = build(feature_gates)
        assert request_gates() == expected
        scheduler.cache.add_node(make_node("n", {"cpu": "4", "pods": "10"}))
        scheduler.cache.add_pod(pod_level_pod())
        info = scheduler.cache.get_node_info("n")
        assert info is not None
        assert info.requested.milli_cpu == counted_cpu
        # the filter workers' command line carries them
        assert RequestGates.from_argument(request_gates().as_argument()) == expected
    assert request_gates() == RequestGates()
