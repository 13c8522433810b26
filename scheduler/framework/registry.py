"""The plugin registry: plugin name → class and args decoder (upstream's runtime.Registry).

In-tree plugins come from `scheduler.plugins.registry.in_tree_registry()`, beside the plugins,
so that the framework never imports a plugin; out-of-tree plugins are Python entry points in
the group "aiosched.plugins", each naming a `PluginEntry` or a plugin class (a class may carry a
static `decode_args`). Names are unique: registering one twice raises.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework.interface import EXTENSION_POINT_METHODS

ArgsDecoder = Callable[[Mapping[str, Any] | None], Any]


class ArgsError(ValueError):
    """Bad plugin args; `path` is relative to the args object ("scoringStrategy.type")."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


def check_known_fields(obj: Mapping[str, Any], allowed: Collection[str], path: str = "") -> None:
    """Raise ArgsError "unknown field" for the first key of `obj` not in `allowed`; `path` is
    where `obj` sits in the args ("" for the args themselves)."""
    for key in obj:
        if key not in allowed:
            raise ArgsError(f"{path}.{key}" if path else str(key), "unknown field")


def check_args_kind(raw: Mapping[str, Any], kind: str) -> None:
    """Args may name their own kind; it must be `kind` ("NodeAffinityArgs", ...)."""
    if raw.get("kind", kind) != kind:
        raise ArgsError("kind", f'expected "{kind}", got "{raw["kind"]}"')


def extension_points(cls: type) -> frozenset[str]:
    """The extension points (configuration names) a plugin class implements."""
    return frozenset(
        point
        for point, method in EXTENSION_POINT_METHODS.items()
        if callable(getattr(cls, method, None))
    )


@dataclass(frozen=True, slots=True)
class PluginEntry:
    name: str
    cls: type
    decode_args: ArgsDecoder | None = None

    @property
    def extension_points(self) -> frozenset[str]:
        return extension_points(self.cls)

    def decode(self, raw: Mapping[str, Any] | None) -> Any:
        """Defaulted, validated args; `None` for plugins that take none (raw must be empty)."""
        if self.decode_args is not None:
            return self.decode_args(raw)
        if raw:
            raise ArgsError("", f"plugin {self.name} does not take args")
        return None


class Registry(Mapping[str, PluginEntry]):
    def __init__(self, entries: Mapping[str, PluginEntry] | None = None) -> None:
        self._entries: dict[str, PluginEntry] = {}
        for entry in (entries or {}).values():
            self.register(entry)

    def register(self, entry: PluginEntry) -> None:
        if entry.name in self._entries:
            raise ValueError(f"a plugin named {entry.name} already exists")
        self._entries[entry.name] = entry

    def merge(self, other: Mapping[str, PluginEntry]) -> None:
        for entry in other.values():
            self.register(entry)

    def __getitem__(self, name: str) -> PluginEntry:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def entry_from_object(name: str, obj: object) -> PluginEntry:
    """An entry point's target as a PluginEntry (a PluginEntry, or a plugin class)."""
    if isinstance(obj, PluginEntry):
        return obj
    if isinstance(obj, type):
        decoder = getattr(obj, "decode_args", None)
        return PluginEntry(getattr(obj, "name", name), obj, decoder if callable(decoder) else None)
    raise TypeError(f"entry point {name} is neither a PluginEntry nor a plugin class")


def load_entry_point_plugins(registry: Registry, group: str = "aiosched.plugins") -> list[str]:
    """Register out-of-tree plugins from installed entry points; returns their names."""
    loaded = []
    for entry_point in importlib.metadata.entry_points(group=group):
        entry = entry_from_object(entry_point.name, entry_point.load())
        registry.register(entry)
        loaded.append(entry.name)
    return loaded
