"""NodeDeclaredFeatures: upstream's pkg/scheduler/framework/plugins/nodedeclaredfeatures and the
part of k8s.io/component-helpers/nodedeclaredfeatures it uses.

`features.py` infers the features a pod's spec needs of its node (the library's registry);
`plugin.py` is the plugin (PreFilter, Filter, queueing hints, signing) and its feature gate.
"""

from scheduler.plugins.nodedeclaredfeatures.plugin import (
    GATE,
    GATE_DEFAULTS,
    NAME,
    PLUGIN_ENTRY,
    NodeDeclaredFeatures,
    gate_enabled,
    required_features,
)

__all__ = [
    "GATE",
    "GATE_DEFAULTS",
    "NAME",
    "PLUGIN_ENTRY",
    "NodeDeclaredFeatures",
    "gate_enabled",
    "required_features",
]
