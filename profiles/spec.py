"""What profiles/ needs from the plugin registry it is handed (kept minimal on purpose)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

MULTI_POINT = "multiPoint"

# Extension points by their KubeSchedulerConfiguration v1 names, in the order the scheduling
# cycle reaches them (also the order check-config prints them in).
EXTENSION_POINTS: tuple[str, ...] = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    # The PodGroup (workload) cycle's points, after the per-pod ones as in upstream's Plugins
    # struct (staging/src/k8s.io/kube-scheduler/config/v1/types.go): placements generated,
    # each one's feasibility checked member by member, the feasible ones scored, and the
    # group's PostFilter (workload-aware preemption) when none is feasible.
    "placementGenerate",
    "placementScore",
    "placementFeasible",
    "podGroupPostFilter",
)

#: Points whose plugins carry a weight (upstream's Plugin.Weight: "only used for Score and
#: PlacementScore plugins").
WEIGHTED_POINTS: tuple[str, ...] = ("score", "placementScore")

# Every key accepted under `plugins:`.
PLUGIN_SET_KEYS: tuple[str, ...] = (*EXTENSION_POINTS, MULTI_POINT)


class PluginSpec(Protocol):
    """One registered plugin as seen by configuration: its name, points and args decoder."""

    @property
    def name(self) -> str: ...

    @property
    def extension_points(self) -> frozenset[str]: ...

    def decode_args(self, raw: Mapping[str, Any] | None) -> Any:
        """Return the plugin's defaulted, validated args (``raw`` is None when not configured).

        Raises ValueError, or any exception with ``.path`` (relative to ``args``, a dotted
        string or a sequence of segments) and ``.message`` attributes, for bad args.
        """
        ...


PluginRegistry = Mapping[str, PluginSpec]
