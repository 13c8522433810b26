"""NodeNamePrefix (Filter, Score): keep pods on nodes whose names start with given prefixes.

Args (pluginConfig, kind NodeNamePrefixArgs)::

    prefixes: [pool-a-, pool-b-]   # Filter: a node must start with one of these (empty: any node)
    preferredPrefix: pool-a-       # Score: 100 for nodes starting with it, 0 for the others

Written only against aiosched's public plugin interface: a class with `name`, built as
`NodeNamePrefix(args, handle)`, args decoded by the static `decode_args`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from scheduler.framework.interface import MAX_NODE_SCORE, MIN_NODE_SCORE, CycleState, Handle
from scheduler.framework.registry import ArgsError
from scheduler.framework.status import Status

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo

ERR_REASON_PREFIX_MISMATCH = "node(s) didn't match the allowed name prefixes"
_KNOWN_FIELDS = ("prefixes", "preferredPrefix")


@dataclass(frozen=True, slots=True)
class NodeNamePrefixArgs:
    prefixes: tuple[str, ...] = ()
    preferred_prefix: str = ""


def _decode_prefixes(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ArgsError("prefixes", f"must be a list of strings, got {type(raw).__name__}")
    for i, prefix in enumerate(raw):
        if not isinstance(prefix, str) or not prefix:
            raise ArgsError(f"prefixes[{i}]", f"must be a non-empty string, got {prefix!r}")
    return tuple(raw)


class NodeNamePrefix:
    name = "NodeNamePrefix"

    def __init__(self, args: NodeNamePrefixArgs | None, handle: Handle | None = None) -> None:
        self._args = args if args is not None else NodeNamePrefixArgs()

    @staticmethod
    def decode_args(raw: Mapping[str, Any] | None) -> NodeNamePrefixArgs:
        """Defaulted, validated args; ArgsError names the offending field."""
        if raw is None:
            return NodeNamePrefixArgs()
        for key in raw:
            if key not in _KNOWN_FIELDS:
                raise ArgsError(key, f"unknown field; expected one of {', '.join(_KNOWN_FIELDS)}")
        preferred = raw.get("preferredPrefix", "")
        if not isinstance(preferred, str):
            raise ArgsError("preferredPrefix", f"must be a string, got {preferred!r}")
        return NodeNamePrefixArgs(_decode_prefixes(raw.get("prefixes")), preferred)

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        prefixes = self._args.prefixes
        if prefixes and not node_info.node_name.startswith(prefixes):
            # A node's name never changes: preemption on this node cannot help.
            return Status.unresolvable(ERR_REASON_PREFIX_MISMATCH)
        return Status.OK

    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]:
        preferred = self._args.preferred_prefix
        if preferred and node_info.node_name.startswith(preferred):
            return MAX_NODE_SCORE, Status.OK
        return MIN_NODE_SCORE, Status.OK

    def score_extensions(self) -> None:
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # Only a new node can have a matching name; updates of existing nodes cannot help.
        return (ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),)
