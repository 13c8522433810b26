"""DynamicResources: scheduling pods that use ResourceClaims (Dynamic Resource Allocation,
resource.k8s.io/v1), as upstream's pkg/scheduler/framework/plugins/dynamicresources.

`allocator` is upstream's structured allocator (k8s.io/dynamic-resource-allocation/structured):
given a node, the claims still to allocate and what is allocated already, it picks devices from
the ResourceSlices; `diagnosis` says why it could not on a node (for explain and what-if
only; no upstream counterpart). `cel` compiles and evaluates the device selectors. The plugin
drives them from the framework's extension points: `plugin` (dynamicresources.go), `claims`
(a pod's claims: foreachPodResourceClaim), `hints` (its queueing hints), `args`
(DynamicResourcesArgs), `features` (the DRA feature gates and which values aiosched honours).
The claims' assume cache and in-flight allocations are shared by all profiles:
scheduler/listers/resource_objects.py.
"""

from __future__ import annotations

from scheduler.framework.registry import PluginEntry
from scheduler.plugins.dynamicresources.args import (
    DynamicResourcesArgs,
    decode_dynamic_resources_args,
)
from scheduler.plugins.dynamicresources.plugin import NAME, STATE_KEY, DynamicResources

PLUGIN_ENTRY = PluginEntry(NAME, DynamicResources, decode_dynamic_resources_args)

__all__ = [
    "NAME",
    "PLUGIN_ENTRY",
    "STATE_KEY",
    "DynamicResources",
    "DynamicResourcesArgs",
    "decode_dynamic_resources_args",
]
