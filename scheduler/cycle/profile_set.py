"""Profiles at run time: one Framework per schedulerName, built from a resolved configuration.

The configuration package (profiles/) knows plugins only through the small PluginSpec view the
registry adapter below gives it; this module turns its ResolvedConfig into running frameworks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from profiles.config import ResolvedConfig, ResolvedProfile
from scheduler.framework.events import ClusterEvent, QueueingHint
from scheduler.framework.registry import PluginEntry, Registry, load_entry_point_plugins
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.plugins.registry import in_tree_registry
from scheduler.queue.types import QueuedPodInfo, SortKey


class PluginSpecAdapter:
    """A registry entry as profiles/ sees it (name, extension points, args decoder)."""

    __slots__ = ("_entry",)

    def __init__(self, entry: PluginEntry) -> None:
        self._entry = entry

    @property
    def name(self) -> str:
        return self._entry.name

    @property
    def extension_points(self) -> frozenset[str]:
        return self._entry.extension_points

    def decode_args(self, raw: Mapping[str, Any] | None) -> Any:
        return self._entry.decode(raw)


def full_registry() -> Registry:
    """In-tree plugins plus out-of-tree ones installed under the aiosched.plugins group."""
    registry = in_tree_registry()
    load_entry_point_plugins(registry)
    return registry


def registry_for_config(registry: Registry | None = None) -> dict[str, PluginSpecAdapter]:
    registry = registry if registry is not None else full_registry()
    return {name: PluginSpecAdapter(entry) for name, entry in registry.items()}


@dataclass(slots=True)
class SchedulingProfile:
    name: str
    framework: Framework
    percentage_of_nodes_to_score: int | None
    config: ResolvedProfile

    def queueing_hint(
        self, pinfo: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any
    ) -> QueueingHint:
        return self.framework.queueing_hint(pinfo, event, old, new)


class ProfileSet(Mapping[str, SchedulingProfile]):
    """The running profiles by schedulerName. Immutable: a reload builds a new set."""

    def __init__(self, profiles: Mapping[str, SchedulingProfile], config: ResolvedConfig):
        if not profiles:
            raise ValueError("at least one profile is required")
        self._profiles = dict(profiles)
        self.config = config
        # Every profile uses the same QueueSort (validated by profiles/), so any one orders all.
        self._less_framework = next(iter(self._profiles.values())).framework

    @classmethod
    def build(
        cls,
        config: ResolvedConfig,
        registry: Registry,
        deps_for: Callable[[str], HandleDeps],
    ) -> ProfileSet:
        """Frameworks for every profile; `deps_for(schedulerName)` wires each to the scheduler."""
        built: dict[str, SchedulingProfile] = {}
        for profile in config.profiles:
            enabled = {
                point: [(plugin.name, plugin.weight) for plugin in plugins]
                for point, plugins in profile.plugins.items()
                if plugins
            }
            framework = Framework.build(
                profile.scheduler_name,
                registry,
                enabled,
                dict(profile.args),
                deps_for(profile.scheduler_name),
            )
            built[profile.scheduler_name] = SchedulingProfile(
                profile.scheduler_name, framework, profile.percentage_of_nodes_to_score, profile
            )
        return cls(built, config)

    def queue_sort_less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self._less_framework.queue_sort_less(a, b)

    def queue_sort_key(self) -> SortKey | None:
        return self._less_framework.queue_sort_key()

    def names(self) -> list[str]:
        return list(self._profiles)

    def __getitem__(self, name: str) -> SchedulingProfile:
        return self._profiles[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._profiles)

    def __len__(self) -> int:
        return len(self._profiles)

    def __contains__(self, name: object) -> bool:
        return name in self._profiles
