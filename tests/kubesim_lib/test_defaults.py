"""kubesim.defaults: API server defaulting and create-time admission.

Facts from pkg/apis/core/v1/defaults.go (+ defaults_test.go), pkg/apis/core/v1/helper/qos,
plugin/pkg/admission/priority and plugin/pkg/admission/defaulttolerationseconds.
"""

from typing import Any

import pytest

from kubesim.defaults import AdmissionError, admit_create, admit_update, apply_defaults


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "c", "image": "nginx:1.25", **fields}


def defaulted_pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    pod = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": list(containers) or [container()], **spec},
    }
    apply_defaults("Pod", pod)
    return pod


def test_pod_spec_defaults() -> None:
    pod = defaulted_pod()
    spec = pod["spec"]
    assert spec["restartPolicy"] == "Always"
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["securityContext"] == {}
    assert spec["enableServiceLinks"] is True
    c = spec["containers"][0]
    assert c["terminationMessagePath"] == "/dev/termination-log"
    assert c["terminationMessagePolicy"] == "File"
    assert c["imagePullPolicy"] == "IfNotPresent"
    assert c["resources"] == {}
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_given_values_are_kept() -> None:
    spec = defaulted_pod(restartPolicy="Never", schedulerName="mine")["spec"]
    assert (spec["restartPolicy"], spec["schedulerName"]) == ("Never", "mine")


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("registry:5000/nginx", "Always"),
        ("registry:5000/nginx:1", "IfNotPresent"),
        ("nginx@sha256:abc", "IfNotPresent"),
    ],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    assert (
        defaulted_pod(container(image=image))["spec"]["containers"][0]["imagePullPolicy"] == policy
    )


def test_ports_default_tcp() -> None:
    c = defaulted_pod(container(ports=[{"containerPort": 80}]))["spec"]["containers"][0]
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


def test_requests_default_to_limits_and_are_canonical() -> None:
    c = defaulted_pod(
        container(
            resources={"limits": {"cpu": "0.5", "memory": "1Gi"}, "requests": {"cpu": "100m"}}
        )
    )["spec"]["containers"][0]
    assert c["resources"] == {
        "limits": {"cpu": "500m", "memory": "1Gi"},
        "requests": {"cpu": "100m", "memory": "1Gi"},
    }


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        ({}, "BestEffort"),
        ({"requests": {"cpu": "100m"}}, "Burstable"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}, "Burstable"),
        ({"limits": {"cpu": "1"}}, "Burstable"),
        ({"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}}, "BestEffort"),
    ],
)
def test_qos_class(resources: dict[str, Any], qos: str) -> None:
    assert defaulted_pod(container(resources=resources))["status"]["qosClass"] == qos


def test_node_allocatable_defaults_to_capacity() -> None:
    node = {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4", "memory": "32Gi"}}}
    apply_defaults("Node", node)
    assert node["status"]["allocatable"] == {"cpu": "4", "memory": "32Gi"}


def test_namespace_defaults() -> None:
    ns: dict[str, Any] = {"metadata": {"name": "team"}}
    apply_defaults("Namespace", ns)
    assert ns["spec"] == {"finalizers": ["kubernetes"]}
    assert ns["status"] == {"phase": "Active"}
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}


def test_replicaset_template_gets_pod_defaults() -> None:
    rs: dict[str, Any] = {
        "metadata": {"name": "r"},
        "spec": {"template": {"spec": {"containers": [container()]}}},
    }
    apply_defaults("ReplicaSet", rs)
    assert rs["spec"]["replicas"] == 1
    assert rs["spec"]["template"]["spec"]["schedulerName"] == "default-scheduler"


def test_priority_class_default_policy() -> None:
    pc: dict[str, Any] = {"metadata": {"name": "x"}, "value": 5}
    apply_defaults("PriorityClass", pc)
    assert pc["preemptionPolicy"] == "PreemptLowerPriority"


# --- admission ---------------------------------------------------------------------------------

STORE: dict[tuple[str, str, str], dict[str, Any]] = {
    ("namespaces", "", "default"): {"metadata": {"name": "default"}, "status": {"phase": "Active"}},
    ("namespaces", "", "dying"): {
        "metadata": {"name": "dying"},
        "status": {"phase": "Terminating"},
    },
    ("scheduling.k8s.io/priorityclasses", "", "high"): {
        "metadata": {"name": "high"},
        "value": 1000,
        "preemptionPolicy": "Never",
    },
}


def lookup(key: str, namespace: str, name: str) -> dict[str, Any] | None:
    return STORE.get((key, namespace, name))


def new_pod(namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": namespace},
        "spec": {"containers": [container()], **spec},
    }


@pytest.mark.parametrize(
    ("namespace", "code", "reason", "message"),
    [
        ("missing", 404, "NotFound", 'namespaces "missing" not found'),
        (
            "dying",
            403,
            "Forbidden",
            'pods "p" is forbidden: unable to create new content in '
            "namespace dying because it is being terminated",
        ),
    ],
)
def test_namespace_lifecycle(namespace: str, code: int, reason: str, message: str) -> None:
    with pytest.raises(AdmissionError) as err:
        admit_create("Pod", new_pod(namespace), lookup)
    assert (err.value.code, err.value.reason, err.value.message) == (code, reason, message)


@pytest.mark.parametrize(
    ("spec", "priority", "policy"),
    [
        ({}, 0, None),
        ({"priorityClassName": "high"}, 1000, "Never"),
        ({"priorityClassName": "high", "priority": 1000}, 1000, "Never"),
        ({"priorityClassName": "system-cluster-critical"}, 2_000_000_000, "PreemptLowerPriority"),
        ({"priorityClassName": "system-node-critical"}, 2_000_001_000, "PreemptLowerPriority"),
    ],
)
def test_priority(spec: dict[str, Any], priority: int, policy: str | None) -> None:
    pod = new_pod(**spec)
    admit_create("Pod", pod, lookup)
    assert pod["spec"]["priority"] == priority
    assert pod["spec"].get("preemptionPolicy") == policy


def test_priority_from_global_default() -> None:
    classes = [
        {
            "metadata": {"name": "dflt"},
            "value": 7,
            "globalDefault": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        {"metadata": {"name": "other"}, "value": 9},
    ]
    pod = new_pod()
    admit_create("Pod", pod, lookup, lambda key: classes)
    assert (pod["spec"]["priorityClassName"], pod["spec"]["priority"]) == ("dflt", 7)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"priorityClassName": "nope"},
            'pods "p" is forbidden: no PriorityClass with name nope was found',
        ),
        (
            {"priorityClassName": "high", "priority": 5},
            'pods "p" is forbidden: the integer value of priority (5) must not be provided in pod '
            "spec; priority admission controller computed 1000 from the given PriorityClass name",
        ),
        (
            {"priorityClassName": "high", "preemptionPolicy": "PreemptLowerPriority"},
            'pods "p" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) '
            "must not be provided in pod spec; priority admission controller computed Never from "
            "the given PriorityClass name",
        ),
    ],
)
def test_priority_rejections(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(AdmissionError) as err:
        admit_create("Pod", new_pod(**spec), lookup)
    assert (err.value.code, err.value.reason, err.value.message) == (403, "Forbidden", message)


def test_second_global_default_rejected() -> None:
    classes = [{"metadata": {"name": "dflt"}, "value": 7, "globalDefault": True}]
    with pytest.raises(AdmissionError) as err:
        admit_create(
            "PriorityClass",
            {"metadata": {"name": "x"}, "value": 1, "globalDefault": True},
            lookup,
            lambda key: classes,
        )
    assert err.value.message == (
        'priorityclasses.scheduling.k8s.io "x" is forbidden: PriorityClass dflt is already '
        "marked as default. Only one default can exist"
    )


NOT_READY = {
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
UNREACHABLE = {
    "key": "node.kubernetes.io/unreachable",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], [NOT_READY, UNREACHABLE]),
        (
            [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 60,
                }
            ],
            [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 60,
                },
                UNREACHABLE,
            ],
        ),
        ([{"operator": "Exists"}], [{"operator": "Exists"}]),
        (
            [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}],
            [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}, NOT_READY],
        ),
        (
            [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}],
            [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                },
                NOT_READY,
                UNREACHABLE,
            ],
        ),
    ],
)
def test_default_toleration_seconds(tolerations: list[Any], expected: list[Any]) -> None:
    pod = new_pod(tolerations=tolerations)
    admit_create("Pod", pod, lookup)
    assert pod["spec"]["tolerations"] == expected


def test_update_keeps_computed_priority() -> None:
    old = new_pod(priority=1000, preemptionPolicy="Never")
    new = new_pod()
    admit_update("Pod", new, old)
    assert (new["spec"]["priority"], new["spec"]["preemptionPolicy"]) == (1000, "Never")


# Simulated nodes' zone labels (`aiosched cluster --zones N`).
@pytest.mark.parametrize(
    ("zones", "index", "want"),
    [(0, 5, None), (3, 0, "zone-a"), (3, 4, "zone-b"), (30, 27, "zone-ab"), (1, 9, "zone-a")],
)
def test_simulated_node_zone_labels(zones: int, index: int, want: str | None) -> None:
    from kubesim.nodes import ZONE_LABEL, NodeTemplate, node_manifest

    labels = node_manifest(f"node-{index}", NodeTemplate(zones=zones), index)["metadata"]["labels"]
    assert labels.get(ZONE_LABEL) == want
    assert labels["kubernetes.io/hostname"] == f"node-{index}"
