"""The two feature gates that change what a pod is counted as requesting, process-wide.

kube-scheduler reads PodLevelResources and InPlacePodLevelResourcesVerticalScaling from its
process-wide feature gate (utilfeature.DefaultFeatureGate): the plugins copy them into their
feature.Features when they are built (pkg/scheduler/framework/plugins/feature/feature.go) and the
cache reads them in PodInfo.CalculateResource (pkg/scheduler/framework/types.go). Every profile
of one process therefore counts pods the same way, and so does aiosched: the gates are set once
at start-up (`aiosched run`, a filter worker), before the first pod is read, and every path that
computes a pod's requests (scheduler.api.requests, PodView, NodeResourcesFit,
NodeResourcesBalancedAllocation, the queue's scale-down events) reads them here.

A PodView keeps the requests computed when it was built, as upstream's PodInfo caches them
(cachedResource): tests that change the gates build their pods inside :func:`gates_set`, which
restores the previous values on exit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

POD_LEVEL_RESOURCES: Final = "PodLevelResources"
POD_LEVEL_RESIZE: Final = "InPlacePodLevelResourcesVerticalScaling"


@dataclass(frozen=True, slots=True)
class RequestGates:
    """The gates' values (both beta and on by default in kube-scheduler v1.36 and v1.37)."""

    # PodLevelResources: spec.resources replaces the containers' totals (SkipPodLevelResources
    # is its negation in the callers upstream).
    pod_level_resources: bool = True
    # InPlacePodLevelResourcesVerticalScaling: the pod-level status (status.allocatedResources,
    # status.resources) counts with UseStatusResources (InPlacePodLevelResourcesVerticalScaling-
    # Enabled in component-helpers/resource/helpers.go PodResourcesOptions).
    pod_level_status: bool = True

    @classmethod
    def from_feature_gates(cls, gates: Mapping[str, bool]) -> RequestGates:
        return cls(
            pod_level_resources=gates.get(POD_LEVEL_RESOURCES, True),
            pod_level_status=gates.get(POD_LEVEL_RESIZE, True),
        )

    def as_feature_gates(self) -> dict[str, bool]:
        return {
            POD_LEVEL_RESOURCES: self.pod_level_resources,
            POD_LEVEL_RESIZE: self.pod_level_status,
        }

    def as_argument(self) -> str:
        """`A=true,B=false`, for a worker process's command line."""
        return ",".join(
            f"{name}={'true' if value else 'false'}"
            for name, value in self.as_feature_gates().items()
        )

    @classmethod
    def from_argument(cls, text: str) -> RequestGates:
        """The inverse of :meth:`as_argument`; raises ValueError on anything else."""
        values: dict[str, bool] = {}
        for item in filter(None, text.split(",")):
            name, sep, value = item.partition("=")
            if not sep or name not in (POD_LEVEL_RESOURCES, POD_LEVEL_RESIZE):
                raise ValueError(f"request gates: unexpected item {item!r}")
            if value not in ("true", "false"):
                raise ValueError(f"request gates: {name}={value!r} is not true or false")
            values[name] = value == "true"
        return cls.from_feature_gates(values)


_current = RequestGates()


def request_gates() -> RequestGates:
    """The process's values."""
    return _current


def set_request_gates(gates: RequestGates) -> RequestGates:
    """Sets the process's values (start-up only); returns the previous ones."""
    global _current
    previous, _current = _current, gates
    return previous


@contextmanager
def gates_set(
    *, pod_level_resources: bool = True, pod_level_status: bool = True
) -> Iterator[RequestGates]:
    """The gates at the given values for the block, the previous ones after (tests)."""
    gates = RequestGates(pod_level_resources, pod_level_status)
    previous = set_request_gates(gates)
    try:
        yield gates
    finally:
        set_request_gates(previous)
