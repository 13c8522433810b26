"""The queue's hint function built from plugins' registered events (upstream's queueingHintMap).

The scheduler hands the queue one function; this builds it from, per schedulerName, the events
each plugin registered (EnqueueExtensions.events_to_register). Only the plugins that rejected the
pod are asked, as upstream's isPodWorthRequeuing does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduler.framework.events import ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.queue.event_labels import event_label
from scheduler.queue.types import QueuedPodInfo

log = logging.getLogger(__name__)

# schedulerName → plugin name → the events it registered; None for an unknown schedulerName.
PluginEventsFor = Callable[[str], Mapping[str, Sequence[ClusterEventWithHint]] | None]


def make_hint_fn(
    plugin_events_for: PluginEventsFor,
) -> Callable[[QueuedPodInfo, ClusterEvent, Any, Any], QueueingHint]:
    def hint(pinfo: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> QueueingHint:
        registered = plugin_events_for(pinfo.pod.scheduler_name)
        if registered is None:
            return QueueingHint.QUEUE  # no profile to ask: never strand the pod
        for plugin in pinfo.unschedulable_plugins | pinfo.pending_plugins:
            for interest in registered.get(plugin, ()):
                if not event.matches(interest.event):
                    continue
                if interest.hint is None:
                    return QueueingHint.QUEUE
                try:
                    answer = interest.hint(pinfo.pod, old, new)
                except Exception:
                    # As upstream: a failing hint counts as Queue so the pod cannot get stuck.
                    log.exception("queueing hint of %s failed for %s", plugin, event_label(event))
                    return QueueingHint.QUEUE
                if answer is QueueingHint.QUEUE:
                    return QueueingHint.QUEUE
        return QueueingHint.SKIP

    return hint
