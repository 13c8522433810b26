"""Extended resources backed by DeviceClasses (DRAExtendedResource): the claim's requests
per container (upstream's createRequestsAndMappings), which class backs a name, NodeResourcesFit
leaving the resource to DynamicResources, and a hypothesis property: a pod asking for
`example.com/gpu: n` lands on exactly the nodes where the same pod with a claim for n devices
of the class would."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.objects import PodView
from scheduler.api.resource import DeviceClassView, ResourceClaimView, ResourceSliceView
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.listers.resource_objects import ResourceObjects
from scheduler.plugins.dynamicresources import extended
from scheduler.testing import build_framework, handle_deps, make_list_snapshot, make_node, run_cycle
from tests.scheduler_plugins_dra.dra_plugin_kit import DRIVER, NAMESPACE

GPU = "example.com/gpu"


def device_class(name: str, resource: str = "", created: str = "2026-01-01T00:00:00Z") -> Any:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}
    if resource:
        spec["extendedResourceName"] = resource
    return DeviceClassView.from_dict(
        {"metadata": {"name": name, "uid": name, "creationTimestamp": created}, "spec": spec}
    )


def test_which_class_backs_a_name() -> None:
    resources = ResourceObjects()
    resources.add(device_class("old", GPU, "2026-01-01T00:00:00Z"),
                  device_class("new", GPU, "2026-02-01T00:00:00Z"),
                  device_class("plain"))  # fmt: skip
    assert resources.class_for_extended_resource(GPU).name == "new"  # the newest wins
    assert resources.class_for_extended_resource(
        "deviceclass.resource.kubernetes.io/plain"
    ).name == "plain"  # fmt: skip
    assert resources.class_for_extended_resource("example.com/other") is None
    resources.classes.on_delete(resources.classes.get("new"))
    assert resources.class_for_extended_resource(GPU).name == "old"
    same_time = ResourceObjects()
    same_time.add(device_class("b", GPU), device_class("a", GPU))
    assert same_time.class_for_extended_resource(GPU).name == "a"  # then the first name


def _container(name: str, gpus: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "resources": {"requests": {"cpu": "1", GPU: str(gpus)}}, **extra}


def test_requests_and_mappings_per_container() -> None:
    resources = ResourceObjects()
    resources.add(device_class("gpu-class", GPU))
    spec = {
        "initContainers": [_container("init-a", 1), _container("init-b", 4),
                           _container("sidecar", 1, restartPolicy="Always")],
        "containers": [_container("main", 2), {"name": "no-gpu"}],
    }  # fmt: skip
    requests, mappings = extended.requests_and_mappings(spec, {GPU: 6}, resources)

    def exact(name: str, count: int) -> dict[str, Any]:
        return {
            "name": name,
            "exactly": {
                "deviceClassName": "gpu-class",
                "allocationMode": "ExactCount",
                "count": count,
            },
        }

    # an init container reuses the devices of the long-lived containers after it (the
    # sidecar's and main's) and asks only for what they lack: init-a nothing, init-b one
    assert requests == [exact("container-1-request-1", 1), exact("container-2-request-1", 1),
                        exact("container-3-request-1", 2)]  # fmt: skip
    assert mappings == [
        {"containerName": "sidecar", "resourceName": GPU, "requestName": "container-2-request-1"},
        {"containerName": "main", "resourceName": GPU, "requestName": "container-3-request-1"},
        {"containerName": "init-a", "resourceName": GPU, "requestName": "container-2-request-1"},
        {"containerName": "init-b", "resourceName": GPU, "requestName": "container-2-request-1"},
        {"containerName": "init-b", "resourceName": GPU, "requestName": "container-3-request-1"},
        {"containerName": "init-b", "resourceName": GPU, "requestName": "container-1-request-1"},
    ]


def test_the_largest_init_request_stands_for_all_init_containers() -> None:
    resources = ResourceObjects()
    resources.add(device_class("gpu-class", GPU))
    spec = {"initContainers": [_container("a", 1), _container("b", 3)],
            "containers": [{"name": "main"}]}  # fmt: skip
    requests, mappings = extended.requests_and_mappings(spec, {GPU: 3}, resources)
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [("container-1-request-1", 3)]
    assert [m["requestName"] for m in mappings] == ["container-1-request-1"] * 2


def _slice(node: str, devices: int) -> ResourceSliceView:
    return ResourceSliceView.from_dict({
        "metadata": {"name": f"{node}-slice", "uid": f"{node}-slice", "resourceVersion": "1"},
        "spec": {"driver": DRIVER, "nodeName": node,
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": f"gpu-{i}"} for i in range(devices)]},
    })  # fmt: skip


def _pod(name: str, *, gpus: int = 0, claim: str = "") -> PodView:
    resources: dict[str, Any] = {"requests": {"cpu": "100m"}}
    if gpus:
        resources = {"requests": {"cpu": "100m", GPU: str(gpus)}, "limits": {GPU: str(gpus)}}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": resources}]}
    if claim:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    return PodView.from_dict({"metadata": {"name": name, "namespace": NAMESPACE,
                                           "uid": f"uid-{name}"}, "spec": spec})  # fmt: skip


def _claim(count: int) -> ResourceClaimView:
    return ResourceClaimView.from_dict({
        "metadata": {"name": "explicit", "namespace": NAMESPACE, "uid": "explicit"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu-class", "count": count}}]}},
    })  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(
    devices=st.lists(st.integers(0, 3), min_size=1, max_size=5),
    plugin_gpus=st.lists(st.booleans(), min_size=5, max_size=5),
    wanted=st.integers(1, 3),
)
def test_extended_and_explicit_forms_land_on_the_same_nodes(
    devices: list[int], plugin_gpus: list[bool], wanted: int
) -> None:
    """Nodes with a device plugin (allocatable example.com/gpu) serve the extended form
    through NodeResourcesFit and never the explicit claim; elsewhere both go through the
    devices of the slices."""
    names = [f"node-{i}" for i in range(len(devices))]
    objects = ClusterObjects()
    objects.resources.add(device_class("gpu-class", GPU), _claim(wanted),
                          *(_slice(n, d) for n, d in zip(names, devices, strict=True)))  # fmt: skip
    nodes = [
        make_node(n, {"cpu": "4", "memory": "8Gi", "pods": "110",
                      **({GPU: "2"} if plugin_gpus[i] else {})})
        for i, n in enumerate(names)
    ]  # fmt: skip
    deps = handle_deps(make_list_snapshot(nodes), cluster_objects=objects)
    framework = build_framework(["NodeResourcesFit", "DynamicResources"], deps)

    def feasible(pod: PodView) -> set[str]:
        result = run_cycle(framework, pod)
        return {name for name, status in result.filter.items() if status.is_success}

    by_resource = feasible(_pod("extended", gpus=wanted))
    by_claim = feasible(_pod("explicit", claim="explicit"))
    with_plugin = {n for i, n in enumerate(names) if plugin_gpus[i]}
    assert by_claim == {n for n, d in zip(names, devices, strict=True) if d >= wanted}
    assert by_resource - with_plugin == by_claim - with_plugin
    assert by_resource & with_plugin == ({n for n in with_plugin} if wanted <= 2 else set())
