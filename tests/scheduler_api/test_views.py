"""PodView / NodeView construction. Request rules follow upstream's
component-helpers/resource/helpers_test.go (TestPodRequests, sidecar cases) and
pkg/scheduler/framework/types_test.go (calculateResource, non-zero requests)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.api.objects import (
    HostPort,
    MalformedObject,
    NodeView,
    PodView,
    Resource,
    Taint,
    Toleration,
)
from scheduler.api.pod import (
    _same_spec_but_node,
    normalized_image_name,
    pod_has_affinity,
    pod_has_required_anti_affinity,
)

Mi = 2**20
Gi = 2**30


def container(
    requests: dict[str, str] | None = None, image: str = "img", **extra: Any
) -> dict[str, Any]:
    result: dict[str, Any] = {"name": "c", "image": image, **extra}
    if requests is not None:
        result["resources"] = {"requests": requests}
    return result


def pod(
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": containers or [], **spec}
    if init is not None:
        body["initContainers"] = init
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
        "spec": body,
    }


SIDECAR = {"restartPolicy": "Always"}


@pytest.mark.parametrize(
    ("obj", "cpu", "memory", "nz_cpu", "nz_memory"),
    [
        (pod([container({"cpu": "100m", "memory": "1Gi"})]), 100, Gi, 100, Gi),
        (
            pod([container({"cpu": "1", "memory": "1Gi"}), container({"cpu": "500m"})]),
            1500,
            Gi,
            1500,
            Gi + 200 * Mi,
        ),
        # No requests: zero for fit, defaults for scoring.
        (pod([container()]), 0, 0, 100, 200 * Mi),
        (pod([container(), container()]), 0, 0, 200, 400 * Mi),
        # An explicit zero stays zero even for scoring.
        (pod([container({"cpu": "0", "memory": "0"})]), 0, 0, 0, 0),
        # Init containers: the largest one counts when larger than the containers' sum.
        (
            pod([container({"cpu": "1"})], init=[container({"cpu": "2"}), container({"cpu": "3"})]),
            3000,
            0,
            3000,
            200 * Mi,
        ),
        (pod([container({"cpu": "2"})], init=[container({"cpu": "1"})]), 2000, 0, 2000, 200 * Mi),
        # Sidecar (restartable init container) adds to the sum and to later init containers.
        (
            pod([container({"cpu": "1"})], init=[container({"cpu": "1"}, **SIDECAR)]),
            2000,
            0,
            2000,
            400 * Mi,
        ),
        (
            pod(
                [container({"cpu": "1"})],
                init=[container({"cpu": "1"}, **SIDECAR), container({"cpu": "3"})],
            ),
            4000,
            0,
            4000,
            400 * Mi,
        ),
        (
            pod(
                [container({"cpu": "5"})],
                init=[container({"cpu": "1"}, **SIDECAR), container({"cpu": "3"})],
            ),
            6000,
            0,
            6000,
            400 * Mi,
        ),
        # Init container before the sidecar does not include it.
        (
            pod(
                [container({"cpu": "1"})],
                init=[container({"cpu": "3"}), container({"cpu": "1"}, **SIDECAR)],
            ),
            3000,
            0,
            3000,
            400 * Mi,
        ),
        # Overhead is added to both.
        (
            pod([container({"cpu": "1"})], overhead={"cpu": "250m", "memory": "100Mi"}),
            1250,
            100 * Mi,
            1250,
            300 * Mi,
        ),
        # Sums are exact before rounding: 2 x 0.5m = 1m, not 2m.
        (pod([container({"cpu": "0.5m"}), container({"cpu": "500u"})]), 1, 0, 1, 400 * Mi),
    ],
)
def test_requests(obj: dict[str, Any], cpu: int, memory: int, nz_cpu: int, nz_memory: int) -> None:
    view = PodView.from_dict(obj)
    assert (view.requests.milli_cpu, view.requests.memory) == (cpu, memory)
    assert (view.non_zero_milli_cpu, view.non_zero_memory) == (nz_cpu, nz_memory)


def test_other_resources() -> None:
    view = PodView.from_dict(
        pod(
            [
                container(
                    {
                        "ephemeral-storage": "1Gi",
                        "nvidia.com/gpu": "2",
                        "hugepages-2Mi": "4Mi",
                        "example.com/foo": "1",
                        "unprefixed": "5",
                    }
                )
            ]
        )
    )
    assert view.requests == Resource(
        ephemeral_storage=Gi,
        scalar={"nvidia.com/gpu": 2, "hugepages-2Mi": 4 * Mi, "example.com/foo": 1},
    )


def test_host_ports_defaults_and_sidecars() -> None:
    view = PodView.from_dict(
        pod(
            [
                container(
                    ports=[
                        {"containerPort": 80, "hostPort": 8080},
                        {"containerPort": 81},
                        {
                            "containerPort": 53,
                            "hostPort": 53,
                            "protocol": "UDP",
                            "hostIP": "10.0.0.1",
                        },
                    ]
                )
            ],
            init=[
                container(ports=[{"containerPort": 1, "hostPort": 9000}], **SIDECAR),
                container(ports=[{"containerPort": 1, "hostPort": 9001}]),
            ],
        )
    )
    assert set(view.host_ports) == {
        HostPort("0.0.0.0", "TCP", 8080),
        HostPort("10.0.0.1", "UDP", 53),
        HostPort("0.0.0.0", "TCP", 9000),
    }


def test_scheduling_fields() -> None:
    obj = pod(
        [container(image="nginx"), container(image="registry:5000/app@sha256:abc")],
        init=[container(image="busybox:1.36")],
        nodeSelector={"disk": "ssd"},
        priority=1000,
        preemptionPolicy="Never",
        schedulerName="custom",
        schedulingGates=[{"name": "example.com/wait"}],
        tolerations=[
            {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
            {"key": "k2", "value": "v"},
        ],
        volumes=[
            {"name": "data", "persistentVolumeClaim": {"claimName": "claim-1"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
            {"name": "cfg", "configMap": {"name": "x"}},
        ],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 5,
                        "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]},
                    },
                    {
                        "weight": 0,
                        "preference": {"matchExpressions": [{"key": "x", "operator": "Exists"}]},
                    },
                    {"weight": 3, "preference": {}},
                ],
            }
        },
    )
    obj["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "rs",
            "uid": "r1",
            "controller": True,
        }
    ]
    obj["metadata"]["labels"] = {"app": "web"}
    view = PodView.from_dict(obj)
    assert view.key == "ns/p"
    assert view.images == (
        "busybox:1.36",
        "nginx:latest",
        "registry:5000/app@sha256:abc",
    )
    assert view.node_selector == {"disk": "ssd"}
    assert (view.priority, view.preemption_policy, view.scheduler_name) == (1000, "Never", "custom")
    assert view.scheduling_gates == ("example.com/wait",)
    assert view.tolerations == (
        Toleration("k", "Exists", "", "NoExecute", 30),
        Toleration("k2", "Equal", "v", ""),
    )
    assert view.pvc_names == ("claim-1", "p-scratch")
    assert view.required_node_affinity is not None
    assert view.required_node_affinity.matches({"zone": "a"}, "n")
    assert not view.required_node_affinity.matches({"zone": "b"}, "n")
    (preferred,) = view.preferred_node_affinity
    assert preferred.weight == 5 and preferred.preference.matches({"disk": "x"}, "n")
    assert view.owner_references[0].controller
    assert view.labels == {"app": "web"}
    assert not view.is_bound


def test_defaults_for_a_minimal_pod() -> None:
    view = PodView.from_dict({"metadata": {"name": "p", "uid": "u"}, "spec": {}})
    assert view.namespace == "default"
    assert view.scheduler_name == "default-scheduler"
    assert view.preemption_policy == "PreemptLowerPriority"
    assert view.priority == 0
    assert view.required_node_affinity is None
    assert view.requests == Resource()
    assert view.deletion_timestamp is None


def test_with_node() -> None:
    view = PodView.from_dict(pod([container({"cpu": "1"})]))
    bound = view.with_node("n1")
    assert bound.node_name == "n1" and bound.is_bound
    assert bound.raw["spec"]["nodeName"] == "n1"
    assert "nodeName" not in view.raw["spec"]
    assert bound.requests == view.requests and bound == view


@pytest.mark.parametrize(
    ("affinity", "with_affinity", "with_required_anti"),
    [
        (None, False, False),
        ({"nodeAffinity": {}}, False, False),
        ({"podAffinity": {}}, True, False),
        ({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}, True, False),
        ({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{}]}}, True, True),
    ],
)
def test_affinity_flags(
    affinity: dict[str, Any] | None, with_affinity: bool, with_required_anti: bool
) -> None:
    view = PodView.from_dict(pod([container()], **({"affinity": affinity} if affinity else {})))
    assert pod_has_affinity(view) is with_affinity
    assert pod_has_required_anti_affinity(view) is with_required_anti


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.2", "nginx:1.2"),
        ("gcr.io/a/b", "gcr.io/a/b:latest"),
        ("localhost:5000/app", "localhost:5000/app:latest"),
        ("localhost:5000/app:v1", "localhost:5000/app:v1"),
        ("app@sha256:abc", "app@sha256:abc"),
    ],
)
def test_normalized_image_name(name: str, normalized: str) -> None:
    assert normalized_image_name(name) == normalized


def _set(obj: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return obj


BASE = pod([container({"cpu": "1"}), container({"cpu": "1"})])


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ["spec", "containers", 1, "resources", "requests", "cpu"],
            "1x",
            r"^spec\.containers\[1\]\.resources\.requests\.cpu: quantities must match",
        ),
        (
            ["spec", "containers", 1, "resources", "requests", "cpu"],
            1,
            r"^spec\.containers\[1\]\.resources\.requests\.cpu: expected a quantity string",
        ),
        (["spec", "containers"], {}, r"^spec\.containers: expected a list"),
        (["spec", "containers", 0], "c", r"^spec\.containers\[0\]: expected an object"),
        (["metadata", "labels"], {"a": 1}, r"^metadata\.labels\.a: expected a string"),
        (["metadata", "name"], 5, r"^metadata\.name: expected a string"),
        (["spec", "priority"], "high", r"^spec\.priority: expected an integer"),
        (["spec", "tolerations"], [{"key": 1}], r"^spec\.tolerations\[0\]\.key"),
        (["spec", "overhead"], {"cpu": "?"}, r"^spec\.overhead\.cpu"),
        (
            ["spec", "affinity"],
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": 3}
                }
            },
            r"^spec\.affinity\.nodeAffinity\.requiredDuringSchedulingIgnoredDuringExecution"
            r"\.nodeSelectorTerms: expected a list",
        ),
        (["spec"], [], r"^spec: expected an object"),
    ],
)
def test_malformed_pod_names_the_field(path: list[Any], value: Any, message: str) -> None:
    with pytest.raises(MalformedObject, match=message):
        PodView.from_dict(_set(BASE, path, value))


NODE = {
    "metadata": {"name": "n1", "uid": "nu", "resourceVersion": "3", "labels": {"zone": "a"}},
    "spec": {
        "unschedulable": True,
        "taints": [
            {"key": "k", "value": "v", "effect": "NoSchedule"},
            {"key": "e", "effect": "NoExecute"},
        ],
    },
    "status": {
        "allocatable": {"cpu": "3900m", "memory": "15Gi", "pods": "110", "nvidia.com/gpu": "1"},
        "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        "images": [{"names": ["docker.io/library/nginx:latest", "nginx:latest"], "sizeBytes": 100}],
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}


def test_node_view() -> None:
    view = NodeView.from_dict(NODE)
    assert view.name == "n1" and view.labels == {"zone": "a"}
    assert view.allocatable == Resource(3900, 15 * Gi, 0, 110, {"nvidia.com/gpu": 1})
    assert view.unschedulable
    assert view.taints == (Taint("k", "v", "NoSchedule"), Taint("e", "", "NoExecute"))
    assert view.images[0].names == ("docker.io/library/nginx:latest", "nginx:latest")
    assert view.images[0].size_bytes == 100
    assert view.conditions == {"Ready": "True"}


def test_node_allocatable_falls_back_to_capacity() -> None:
    obj = _set(NODE, ["status", "allocatable"], None)
    assert NodeView.from_dict(obj).allocatable == Resource(4000, 16 * Gi, 0, 110)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["status", "allocatable", "cpu"], "four", r"^status\.allocatable\.cpu: "),
        (["spec", "taints"], [{"key": 3}], r"^spec\.taints\[0\]\.key"),
        (["spec", "unschedulable"], "yes", r"^spec\.unschedulable"),
        (["status", "images"], [{"names": [1]}], r"^status\.images\[0\]\.names\[0\]"),
    ],
)
def test_malformed_node_names_the_field(path: list[Any], value: Any, message: str) -> None:
    with pytest.raises(MalformedObject, match=message):
        NodeView.from_dict(_set(NODE, path, value))


# --- updates reuse what the previous view derived from an unchanged spec ---------------------


def _rich_pod() -> dict[str, Any]:
    obj = pod(
        [container({"cpu": "250m", "memory": "1Gi"}, image="nginx", ports=[{"hostPort": 80}])],
        init=[container({"cpu": "1"}, image="busybox:1.36")],
        nodeSelector={"disk": "ssd"},
        priority=10,
        tolerations=[{"key": "k", "operator": "Exists"}],
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "claim-1"}}],
        affinity={
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 5,
                        "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]},
                    }
                ]
            }
        },
    )
    obj["status"] = {"phase": "Pending"}
    return obj


def _bind(obj: dict[str, Any]) -> None:
    obj["spec"]["nodeName"] = "node-1"
    obj["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]


def _run(obj: dict[str, Any]) -> None:
    _bind(obj)
    obj["status"]["phase"] = "Running"


def _more_cpu(obj: dict[str, Any]) -> None:
    obj["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"


def _new_toleration(obj: dict[str, Any]) -> None:
    obj["spec"]["tolerations"].append({"key": "gpu", "operator": "Exists"})


def _drop_gates_and_label(obj: dict[str, Any]) -> None:
    obj["spec"].pop("nodeSelector")
    obj["metadata"]["labels"] = {"app": "web"}
    obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"


def _unbind(obj: dict[str, Any]) -> None:
    _bind(obj)  # the old version is bound below; this one is not
    del obj["spec"]["nodeName"]


@pytest.mark.parametrize(
    "change",
    [_bind, _run, _more_cpu, _new_toleration, _drop_gates_and_label, _unbind],
)
def test_an_update_parsed_with_the_previous_view_equals_a_fresh_parse(change: Any) -> None:
    old = _rich_pod()
    if change is _unbind:
        _bind(old)
    new = copy.deepcopy(old)
    new["metadata"]["resourceVersion"] = "8"
    change(new)
    reused = PodView.from_dict(new, PodView.from_dict(old))
    fresh = PodView.from_dict(new)
    for field in dataclasses.fields(PodView):
        assert getattr(reused, field.name) == getattr(fresh, field.name), field.name
    assert reused.raw is new


def test_an_unchanged_spec_shares_the_derived_fields_of_the_previous_view() -> None:
    old = _rich_pod()
    new = copy.deepcopy(old)
    _run(new)
    previous = PodView.from_dict(old)
    updated = PodView.from_dict(new, previous)
    assert updated.tolerations is previous.tolerations
    assert updated.requests is previous.requests
    assert (updated.node_name, updated.phase) == ("node-1", "Running")


_spec_values = st.one_of(st.none(), st.integers(0, 2), st.text("ab", max_size=2))
_specs = st.dictionaries(st.sampled_from(["nodeName", "priority", "containers", "x"]), _spec_values)


@given(_specs, _specs)
def test_same_spec_but_node_compares_every_field_but_the_node_name(
    spec: dict[str, Any], old: dict[str, Any]
) -> None:
    rest = {key: value for key, value in spec.items() if key != "nodeName"}
    old_rest = {key: value for key, value in old.items() if key != "nodeName"}
    assert _same_spec_but_node(spec, old) == (rest == old_rest)
    assert _same_spec_but_node(spec, {**old, **rest}) == (rest.keys() >= old_rest.keys())
