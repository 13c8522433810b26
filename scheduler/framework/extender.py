"""What the framework and its plugins may ask of a scheduler extender: upstream's
framework.Extender (pkg/scheduler/framework/extender.go), narrowed to what preemption uses, and
extenderv1.Victims, the value preemption and the extenders exchange.

It lives in the framework's contract, below both the plugins and `scheduler.extenders` (whose
HTTPExtender satisfies it), so that neither imports the other and the Handle can name the type
without importing the extenders' HTTP client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from scheduler.api.objects import PodView


@dataclass(frozen=True, slots=True)
class Victims:
    """Pods to preempt on one node (most important first) and how many of them violate a PDB
    (upstream's extenderv1.Victims)."""

    pods: tuple[PodView, ...]
    num_pdb_violations: int = 0


class Extender(Protocol):
    """An extender as preemption sees it (upstream's framework.Extender: SupportsPreemption,
    IsInterested, IsIgnorable, ProcessPreemption)."""

    def supports_preemption(self) -> bool: ...

    def is_interested(self, pod: PodView) -> bool: ...

    def is_ignorable(self) -> bool: ...

    async def process_preemption(
        self, pod: PodView, victims: Mapping[str, Victims], node_infos: Any
    ) -> Mapping[str, Victims]:
        """The candidates (node → victims) the extender keeps, possibly with other victims;
        `node_infos` is the cycle's snapshot (a SnapshotLister)."""
        ...
