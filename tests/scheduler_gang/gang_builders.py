"""PodGroups and gang members for the GangScheduling tests (scheduling.k8s.io/v1beta1)."""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import PodView
from scheduler.api.workload import PodGroupView
from scheduler.testing import MakePod


def pod_group(
    name: str,
    min_count: int | None = None,
    *,
    namespace: str = "default",
    resource_version: str = "1",
    topology_key: str = "",
) -> PodGroupView:
    """A gang of `min_count`, or a basic group when it is None."""
    policy: dict[str, Any] = (
        {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    )
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if topology_key:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    return PodGroupView.from_dict(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"pg-{name}",
                "resourceVersion": resource_version,
            },
            "spec": spec,
        }
    )


def member(name: str, group: str | None, *, namespace: str = "default", node: str = "") -> PodView:
    """A pod of `group` (spec.schedulingGroup.podGroupName), bound to `node` if given."""
    builder = MakePod(name, namespace).uid(f"uid-{name}")
    if node:
        builder = builder.node(node)
    raw = builder.obj().raw
    spec = dict(raw["spec"])
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return PodView.from_dict({**raw, "spec": spec})
