"""Coscheduling: kubernetes-sigs/scheduler-plugins' gang scheduling over its PodGroup CRD
(scheduling.x-k8s.io/v1alpha1), so that clusters running it can switch to aiosched with their
manifests unchanged. Not in the default profile (upstream's neither): a profile enables it.

Modules and the upstream files they port (kubernetes-sigs/scheduler-plugins):
- `plugin.py`: pkg/coscheduling/coscheduling.go (QueueSort, PreFilter, PostFilter, Permit,
  Reserve/Unreserve, EventsToRegister);
- `core.py`: pkg/coscheduling/core/core.go (PodGroupManager) and pkg/util/podgroup.go;
- `args.py`: apis/config (CoschedulingArgs, defaults, validation).
The PodGroup view is `scheduler/api/podgroup.py`; the listers and the PodGroup status controller
are `scheduler/listers/pod_groups.py`.
"""

from scheduler.framework.registry import PluginEntry
from scheduler.plugins.coscheduling.args import CoschedulingArgs, decode_coscheduling_args
from scheduler.plugins.coscheduling.plugin import NAME, Coscheduling

PLUGIN_ENTRY = PluginEntry(NAME, Coscheduling, decode_coscheduling_args)

__all__ = ["NAME", "PLUGIN_ENTRY", "Coscheduling", "CoschedulingArgs"]
