"""VolumeBinding: binds a pod's PersistentVolumeClaims as part of scheduling it.

Upstream: pkg/scheduler/framework/plugins/volumebinding/. Modules: args (VolumeBindingArgs),
assume_cache (assumed PVs and PVCs over the informer's objects), helpers (PV / claim matching,
node affinity, capacity), binder (find, assume, bind and wait), hints (queueing hints), plugin
(extension points), testing (fakes for tests: an API server that also plays the PV controller).
"""

from __future__ import annotations

from scheduler.framework.registry import PluginEntry
from scheduler.plugins.volumebinding.args import (
    VolumeBindingArgs,
    decode_volume_binding_args,
)
from scheduler.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    VolumeBinder,
)
from scheduler.plugins.volumebinding.plugin import NAME, STATE_KEY, VolumeBinding

PLUGIN_ENTRY = PluginEntry(NAME, VolumeBinding, decode_volume_binding_args)

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "NAME",
    "PLUGIN_ENTRY",
    "STATE_KEY",
    "VolumeBinder",
    "VolumeBinding",
    "VolumeBindingArgs",
    "decode_volume_binding_args",
]
