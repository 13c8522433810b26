"""InterPodAffinity: required and preferred inter-pod affinity and anti-affinity.

Upstream: pkg/scheduler/framework/plugins/interpodaffinity/ (plugin.go, filtering.go,
scoring.go). Modules: args (InterPodAffinityArgs), terms (namespace merging, matching), state
(cycle-state values), filtering, scoring, hints (queueing hints), plugin (extension points).
"""

from __future__ import annotations

from scheduler.framework.registry import PluginEntry
from scheduler.plugins.interpodaffinity.args import (
    InterPodAffinityArgs,
    decode_interpod_affinity_args,
)
from scheduler.plugins.interpodaffinity.plugin import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    InterPodAffinity,
)

PLUGIN_ENTRY = PluginEntry(NAME, InterPodAffinity, decode_interpod_affinity_args)

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "NAME",
    "PLUGIN_ENTRY",
    "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY",
    "InterPodAffinity",
    "InterPodAffinityArgs",
    "decode_interpod_affinity_args",
]
