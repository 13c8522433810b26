"""DynamicResources: scheduling pods that use ResourceClaims (Dynamic Resource Allocation,
resource.k8s.io/v1), as upstream's pkg/scheduler/framework/plugins/dynamicresources.

`allocator` is upstream's structured allocator (k8s.io/dynamic-resource-allocation/structured):
given a node, the claims still to allocate and what is allocated already, it picks devices from
the ResourceSlices. `cel` compiles and evaluates the device selectors. The plugin drives both
from the framework's extension points.
"""
