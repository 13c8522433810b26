"""Fixtures for the Coscheduling tests: PodGroups, a framework with the plugin, pods in groups
(scheduler-plugins' test/util MakePG, MakePodGroup, NewFakeSharedLister, in Python)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.api.objects import NodeView, PodView
from scheduler.api.podgroup import POD_GROUP_LABEL, PodGroupView, make_pod_group
from scheduler.framework.runtime import Framework
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.plugins.coscheduling import Coscheduling
from scheduler.testing import MakePod, build_framework, handle_deps, make_list_snapshot


def pod_group(name: str, namespace: str, min_member: int, **more: Any) -> PodGroupView:
    return PodGroupView.from_dict(make_pod_group(name, namespace, min_member=min_member, **more))


def member(name: str, namespace: str, group: str) -> MakePod:
    return MakePod(name, namespace).uid(name).label(POD_GROUP_LABEL, group)


def framework(
    *,
    groups: Iterable[PodGroupView] = (),
    members: Iterable[PodView] = (),
    nodes: Iterable[NodeView] = (),
    snapshot_pods: Iterable[PodView] = (),
    args: Mapping[str, Any] | None = None,
) -> tuple[Framework, Coscheduling]:
    """A framework with Coscheduling at all its points (queueSort too), the PodGroups and the
    labelled pods in its listers, and `nodes` with `snapshot_pods` as the snapshot."""
    objects = ClusterObjects()
    objects.pod_groups.add(*groups, *members)
    snapshot = make_list_snapshot(list(nodes), list(snapshot_pods))
    deps = handle_deps(snapshot, cluster_objects=objects)
    fwk = build_framework(
        ["Coscheduling"],
        deps,
        args={"Coscheduling": dict(args or {})},
        points=["queueSort", "preFilter", "postFilter", "permit", "reserve"],
    )
    plugin = fwk.plugins["Coscheduling"]
    assert isinstance(plugin, Coscheduling)
    plugin.queue_clock_to_epoch = 0.0
    return fwk, plugin
