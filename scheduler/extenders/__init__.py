"""Scheduler extenders: KubeSchedulerConfiguration.extenders called over HTTP, as upstream.

See http.py (one extender and its verbs), types.py (the extender/v1 wire format), cycle.py
(where an attempt calls them) and tls.py (their TLS settings).
"""

from scheduler.extenders.cycle import (
    CallRecorder,
    ExtenderSet,
    TracedPreemptingExtender,
    extender_scores,
    extenders_binding,
    find_nodes_that_pass_extenders,
    ignored_resources,
)
from scheduler.extenders.http import DEFAULT_EXTENDER_TIMEOUT, ExtenderError, HTTPExtender
from scheduler.extenders.tls import ExtenderConfigError
from scheduler.extenders.types import (
    EXTENDER_NAME,
    MAX_EXTENDER_PRIORITY,
    HostPriority,
    MetaVictims,
)
from scheduler.framework.extender import Victims

__all__ = [
    "DEFAULT_EXTENDER_TIMEOUT",
    "EXTENDER_NAME",
    "MAX_EXTENDER_PRIORITY",
    "CallRecorder",
    "ExtenderConfigError",
    "ExtenderError",
    "ExtenderSet",
    "HTTPExtender",
    "HostPriority",
    "MetaVictims",
    "TracedPreemptingExtender",
    "Victims",
    "extender_scores",
    "extenders_binding",
    "find_nodes_that_pass_extenders",
    "ignored_resources",
]
