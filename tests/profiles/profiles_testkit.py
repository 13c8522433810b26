"""A fake plugin registry mirroring upstream in-tree plugins' extension points."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ALL_POINTS = frozenset(
    {
        "queueSort", "preFilter", "filter", "postFilter", "preScore", "score", "reserve",
        "permit", "preBind", "bind", "postBind",
    }
)  # fmt: skip


class ArgsError(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


@dataclass(frozen=True)
class FitArgs:
    strategy: str = "LeastAllocated"
    resources: tuple[tuple[str, int], ...] = (("cpu", 1), ("memory", 1))


def decode_fit_args(raw: Mapping[str, Any] | None) -> FitArgs:
    if raw is None:
        return FitArgs()
    unknown = set(raw) - {"scoringStrategy", "ignoredResources", "ignoredResourceGroups"}
    if unknown:
        raise ArgsError(sorted(unknown)[0], "unknown field")
    strategy = raw.get("scoringStrategy") or {}
    kind = strategy.get("type", "LeastAllocated")
    if kind not in ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"):
        raise ArgsError(
            "scoringStrategy.type",
            f'expected one of "LeastAllocated", "MostAllocated", '
            f'"RequestedToCapacityRatio", got {kind!r}',
        )
    resources = (
        tuple((r["name"], int(r.get("weight", 1))) for r in strategy.get("resources", ()))
        or FitArgs.resources
    )
    return FitArgs(kind, resources)


@dataclass(frozen=True)
class FakeSpec:
    name: str
    extension_points: frozenset[str]
    args_default: Any = None
    decoder: Any = field(default=None, compare=False)

    def decode_args(self, raw: Mapping[str, Any] | None) -> Any:
        if self.decoder is not None:
            return self.decoder(raw)
        if raw:
            return dict(raw)
        return self.args_default


def spec(name: str, *points: str, **kw: Any) -> FakeSpec:
    return FakeSpec(name, frozenset(points), **kw)


def in_tree_registry(*missing: str) -> dict[str, FakeSpec]:
    """Upstream in-tree plugins and their points (framework/plugins/*), minus ``missing``."""
    specs = [
        spec("SchedulingGates", "preEnqueue"),
        spec("PrioritySort", "queueSort"),
        spec("NodeUnschedulable", "filter"),
        spec("NodeName", "filter"),
        spec("TaintToleration", "filter", "preScore", "score"),
        spec("NodeAffinity", "preFilter", "filter", "preScore", "score"),
        spec("NodePorts", "preFilter", "filter"),
        spec("NodeResourcesFit", "preFilter", "filter", "preScore", "score",
             decoder=decode_fit_args),
        spec("VolumeRestrictions", "preFilter", "filter"),
        spec("NodeVolumeLimits", "preFilter", "filter"),
        spec("VolumeBinding", "preFilter", "filter", "reserve", "preBind", "preScore", "score"),
        spec("VolumeZone", "preFilter", "filter"),
        spec("PodTopologySpread", "preFilter", "filter", "preScore", "score",
             args_default={"defaultingType": "System"}),
        spec("InterPodAffinity", "preFilter", "filter", "preScore", "score",
             args_default={"hardPodAffinityWeight": 1}),
        spec("DynamicResources", "preEnqueue", "preFilter", "filter", "postFilter", "score",
             "reserve", "preBind", args_default={"filterTimeout": "10s"}),
        spec("DefaultPreemption", "postFilter",
             args_default={"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}),
        spec("NodeResourcesBalancedAllocation", "preScore", "score"),
        spec("ImageLocality", "score"),
        spec("DefaultBinder", "bind"),
        spec("NodeDeclaredFeatures", "preFilter", "filter"),
    ]  # fmt: skip
    return {s.name: s for s in specs if s.name not in missing}
