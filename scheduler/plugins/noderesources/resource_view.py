"""What NodeResourcesFit and its shortcuts (fit_alone, preemption's resource shortcut) share:
the view of a node's resources that fitting a request reads, and the filter that reads it.

It sits below both fit.py and fit_alone.py so that neither imports the other's module to
name these: fit.py defines the plugin, fit_alone.py decides when the plugin alone decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from scheduler.api.objects import PodView, Resource

if TYPE_CHECKING:
    from scheduler.framework.interface import CycleState
    from scheduler.framework.status import Status

FIT = "NodeResourcesFit"


class ResourceView(Protocol):
    """What fitting a request reads of a node: a NodeInfo, or what is left of one once
    preemption's victims are gone."""

    @property
    def allocatable(self) -> Resource: ...

    @property
    def requested(self) -> Resource: ...

    @property
    def pods(self) -> Sequence[PodView]: ...

    @property
    def num_pods(self) -> int: ...


@dataclass(frozen=True, slots=True)
class RemainingResources:
    """What NodeResourcesFit reads of a node with some pods added or removed."""

    allocatable: Resource
    requested: Resource
    pods: Sequence[PodView]

    @property
    def num_pods(self) -> int:
        return len(self.pods)


def requested_by(pods: Sequence[PodView]) -> Resource:
    requested = Resource()
    for other in pods:
        requested.add(other.requests)
    return requested


class ResourceFilter:
    """NodeResourcesFit as its shortcuts call it: its Filter on any ResourceView, with the
    PreFilter state of the cycle."""

    name: str

    def filter_resources(self, state: CycleState, node_info: ResourceView) -> Status:
        raise NotImplementedError
