"""PodTopologySpread: spread pods over topology domains (hard and soft constraints).

Upstream: pkg/scheduler/framework/plugins/podtopologyspread/ (plugin.go, common.go,
filtering.go, scoring.go). Modules: args (PodTopologySpreadArgs), constraints (parsing and
per-node helpers), rows (NodeTable masks and counts for the fast paths), state, filtering,
scoring, hints, plugin (the plugin class).
"""

from scheduler.framework.registry import PluginEntry
from scheduler.plugins.podtopologyspread.args import (
    PodTopologySpreadArgs,
    decode_pod_topology_spread_args,
)
from scheduler.plugins.podtopologyspread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
)
from scheduler.plugins.podtopologyspread.plugin import NAME, PodTopologySpread

PLUGIN_ENTRY = PluginEntry(NAME, PodTopologySpread, decode_pod_topology_spread_args)

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "NAME",
    "PLUGIN_ENTRY",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
    "decode_pod_topology_spread_args",
]
