"""Garbage-collector settings for a long-running scheduler with a large, stable heap.

CPython starts a young-generation collection every 700 net allocations, and every tenth of those
also scans the middle generation. A scheduler holding thousands of nodes and pods allocates
small objects at a high rate (parsed watch events, cycle state, spans), so with the defaults the
collector runs hundreds of times a second and scans survivors again and again. Nearly all of
these objects are freed by reference counting; cycles are rare. Fewer, larger young collections
and freezing the objects that live as long as the process (imports, then the informers' initial
lists) keep the collector's share small without letting garbage cycles pile up.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)

#: gen0 threshold (allocations), and how many gen0 / gen1 collections trigger the next one.
THRESHOLDS = (50_000, 20, 20)


def tune_for_service() -> None:
    """At start: freeze what imports created and raise the collection thresholds."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)


def freeze_long_lived() -> None:
    """After the initial lists: move the synced cache out of the collector's sight."""
    gc.collect()
    gc.freeze()
    log.debug("froze %d objects after the initial sync", gc.get_freeze_count())
