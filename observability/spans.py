"""The finished-span type aiosched builds for extension points: an SDK ``ReadableSpan`` whose
per-plugin events are kept as compact records.

An extension point has a "plugin" event for each plugin that ran, ~17 per traced pod. Making
each an SDK ``Event`` with its attribute dict, and encoding that generically, was a tenth of the
cost of tracing. Here they are tuples until someone reads ``events`` (another exporter, a test),
and :mod:`observability.otlp_encoding` writes them straight from the tuples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from opentelemetry.sdk.trace import Event, ReadableSpan

PLUGIN_EVENT_NAME: Final = "plugin"
PLUGIN_KEY: Final = "aiosched.plugin"
STATUS_KEY: Final = "aiosched.status"
DURATION_KEY: Final = "aiosched.duration_ms"


class PluginOutcome(NamedTuple):
    """One plugin's outcome at an extension point: a "plugin" event."""

    plugin: str
    status: str
    duration_ms: float
    timestamp_ns: int

    def event(self) -> Event:
        return Event(
            PLUGIN_EVENT_NAME,
            {PLUGIN_KEY: self.plugin, STATUS_KEY: self.status, DURATION_KEY: self.duration_ms},
            self.timestamp_ns,
        )


class ExtensionPointSpan(ReadableSpan):
    """A ``ReadableSpan`` whose ``events`` are its other events, then one per plugin outcome."""

    def __init__(
        self, *args: Any, plugin_outcomes: Sequence[PluginOutcome] = (), **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.plugin_outcomes = plugin_outcomes

    @property
    def other_events(self) -> Sequence[Event]:
        return super().events

    @property
    def events(self) -> Sequence[Event]:
        return (*super().events, *(outcome.event() for outcome in self.plugin_outcomes))
