"""DefaultPreemption: the in-tree PostFilter plugin that preempts lower-priority pods.

Upstream: pkg/scheduler/framework/plugins/defaultpreemption/ and
pkg/scheduler/framework/preemption/. Modules: args (DefaultPreemptionArgs), util (pod ordering,
start times, PDB accounting), evaluator (candidates, dry run, node selection), plugin (the
PostFilter plugin and its victim selection).
"""

from __future__ import annotations

from scheduler.framework.extender import Victims
from scheduler.framework.registry import PluginEntry
from scheduler.plugins.defaultpreemption.args import (
    DefaultPreemptionArgs,
    decode_default_preemption_args,
)
from scheduler.plugins.defaultpreemption.evaluator import Candidate, Evaluator
from scheduler.plugins.defaultpreemption.plugin import NAME, DefaultPreemption

PLUGIN_ENTRY = PluginEntry(NAME, DefaultPreemption, decode_default_preemption_args)

__all__ = [
    "NAME",
    "PLUGIN_ENTRY",
    "Candidate",
    "DefaultPreemption",
    "DefaultPreemptionArgs",
    "Evaluator",
    "Victims",
    "decode_default_preemption_args",
]
