"""GangScheduling: all-or-nothing scheduling of the pods of a PodGroup with a gang policy.

Upstream: pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go as of v1.37 (the
newest release; PodGroup in scheduling.k8s.io/v1beta1, pods naming it in
spec.schedulingGroup.podGroupName). Modules:

- `plugin.py`: the plugin: PreEnqueue, PlacementFeasible, its queueing hints;
- `features.py`: the workload-aware scheduling feature gates.

The PodGroup scheduling cycle (all members assumed or none) is the cycle's, not the plugin's:
scheduler/cycle/podgroup_cycle.py.
"""

from scheduler.plugins.gangscheduling.plugin import NAME, PLUGIN_ENTRY, GangScheduling

__all__ = ["NAME", "PLUGIN_ENTRY", "GangScheduling"]
