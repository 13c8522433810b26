"""The in-tree plugins, by name: upstream's pkg/scheduler/framework/plugins/registry.go.

It lives beside the plugins rather than in the framework so that the framework never imports a
plugin (plugins import the framework, never the reverse).
"""

from __future__ import annotations

from scheduler.framework.registry import PluginEntry, Registry
from scheduler.plugins import (
    balancedallocation,
    coscheduling,
    defaultpreemption,
    dynamicresources,
    gangscheduling,
    gpushare,
    imagelocality,
    interpodaffinity,
    nodeaffinity,
    nodedeclaredfeatures,
    nodename,
    nodeports,
    nodevolumelimits,
    podgrouppodscount,
    podtopologyspread,
    tainttoleration,
    topologyplacementgenerator,
    volumebinding,
    volumerestrictions,
    volumezone,
)
from scheduler.plugins.defaultbinder import DefaultBinder
from scheduler.plugins.noderesources.args import decode_node_resources_fit_args
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.prioritysort import PrioritySort
from scheduler.plugins.schedulinggates import SchedulingGates


def in_tree_registry() -> Registry:
    """Every in-tree plugin this scheduler ships."""

    registry = Registry()
    registry.register(PluginEntry(PrioritySort.name, PrioritySort))
    registry.register(PluginEntry(SchedulingGates.name, SchedulingGates))
    registry.register(PluginEntry(NodeUnschedulable.name, NodeUnschedulable))
    registry.register(
        PluginEntry(NodeResourcesFit.name, NodeResourcesFit, decode_node_resources_fit_args)
    )
    registry.register(PluginEntry(DefaultBinder.name, DefaultBinder))
    for entry in (
        nodename.PLUGIN_ENTRY,
        nodeports.PLUGIN_ENTRY,
        nodeaffinity.PLUGIN_ENTRY,
        tainttoleration.PLUGIN_ENTRY,
        imagelocality.PLUGIN_ENTRY,
        balancedallocation.PLUGIN_ENTRY,
        podtopologyspread.PLUGIN_ENTRY,
        interpodaffinity.PLUGIN_ENTRY,
        dynamicresources.PLUGIN_ENTRY,
        gangscheduling.PLUGIN_ENTRY,
        defaultpreemption.PLUGIN_ENTRY,
        volumerestrictions.PLUGIN_ENTRY,
        nodevolumelimits.PLUGIN_ENTRY,
        volumebinding.PLUGIN_ENTRY,
        volumezone.PLUGIN_ENTRY,
        nodedeclaredfeatures.PLUGIN_ENTRY,
        topologyplacementgenerator.PLUGIN_ENTRY,
        podgrouppodscount.PLUGIN_ENTRY,
        # scheduler-plugins' Coscheduling: registered, in no default profile.
        coscheduling.PLUGIN_ENTRY,
        # The GPU-sharing policies of the FGD paper (docs/policy-lab.md): in no default profile.
        *gpushare.PLUGIN_ENTRIES,
    ):
        registry.register(entry)
    return registry
