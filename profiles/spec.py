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
)

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
