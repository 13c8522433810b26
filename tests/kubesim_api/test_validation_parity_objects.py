"""Validation parity with upstream for the other kinds the scheduler reads: nodes, persistent
volumes and claims, pod disruption budgets, priority classes.

Cases are ported from upstream's pkg/apis/core/validation/validation_test.go (TestValidateNode,
TestValidatePersistentVolumes, TestValidatePersistentVolumeClaim),
pkg/apis/policy/validation/validation_test.go (TestValidateMinAvailablePodDisruptionBudgetSpec,
TestValidatePodDisruptionBudgetSpec, TestValidateUnhealthyPodEvictionPolicyDisruptionBudgetSpec)
and pkg/apis/scheduling/validation/validation_test.go (TestValidatePriorityClass).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.validation import validate

INVALID, REQUIRED, FORBIDDEN = "FieldValueInvalid", "FieldValueRequired", "FieldValueForbidden"
NOT_SUPPORTED, DUPLICATE = "FieldValueNotSupported", "FieldValueDuplicate"


def found(kind: str, obj: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((cause.field, cause.reason) for cause in validate(kind, obj, None))


def errors(kind: str, obj: dict[str, Any]) -> list[str]:
    return [cause.error() for cause in validate(kind, obj, None)]


# --- nodes -------------------------------------------------------------------------------------


def node(taints: list[dict[str, Any]] | None = None, **capacity: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "n"},
        "spec": {"taints": taints or []},
        "status": {"capacity": capacity or {"cpu": "4"}, "allocatable": capacity or {"cpu": "4"}},
    }


NODE_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    (
        "valid",
        node(
            [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
            cpu="4",
            memory="8Gi",
            pods="110",
        ),
        [],
    ),
    (
        "missing-taint-effect",
        node([{"key": "k", "value": "v"}]),
        [("spec.taints[0].effect", REQUIRED)],
    ),
    (
        "invalid-taint-effect",
        node([{"key": "k", "value": "v", "effect": "NoScheduleNoAdmit"}]),
        [("spec.taints[0].effect", NOT_SUPPORTED)],
    ),
    (
        "missing-taint-key",
        node([{"value": "v", "effect": "NoSchedule"}]),
        [("spec.taints[0].key", INVALID), ("spec.taints[0].key", INVALID)],
    ),
    (
        "bad-taint-value",
        node([{"key": "k", "value": "some\\bad\\value", "effect": "NoSchedule"}]),
        [("spec.taints[0].value", INVALID)],
    ),
    (
        "duplicated-taints-with-same-key-effect",
        node(
            [
                {"key": "k", "value": "a", "effect": "NoSchedule"},
                {"key": "k", "value": "b", "effect": "NoSchedule"},
            ]
        ),
        [("spec.taints[1]", DUPLICATE)],
    ),
    (
        "negative-capacity",
        node(cpu="-1"),
        [("status.allocatable.cpu", INVALID), ("status.capacity.cpu", INVALID)],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected"), [c[1:] for c in NODE_CASES], ids=[c[0] for c in NODE_CASES]
)
def test_node(obj: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert found("Node", obj) == sorted(expected)


# --- persistent volumes ------------------------------------------------------------------------


def volume(**spec: Any) -> dict[str, Any]:
    body = {
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "10G"},
        "hostPath": {"path": "/foo"},
        **spec,
    }
    return {"metadata": {"name": "pv"}, "spec": {k: v for k, v in body.items() if v is not None}}


LOCAL = {"local": {"path": "/foo"}, "hostPath": None}
ZONE_AFFINITY = {
    "required": {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z1"]}
                ]
            }
        ]
    }
}
PV_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    ("good-volume", volume(persistentVolumeReclaimPolicy="Retain", volumeMode="Filesystem"), []),
    ("good-local-volume", volume(**LOCAL, nodeAffinity=ZONE_AFFINITY), []),
    ("invalid-accessmode", volume(accessModes=["fakemode"]), [("spec.accessModes", NOT_SUPPORTED)]),
    ("missing-accessmodes", volume(accessModes=[]), [("spec.accessModes", REQUIRED)]),
    (
        "ReadWriteOncePod with others",
        volume(accessModes=["ReadWriteOncePod", "ReadWriteMany"]),
        [("spec.accessModes", FORBIDDEN)],
    ),
    (
        "invalid-reclaimpolicy",
        volume(persistentVolumeReclaimPolicy="fakeReclaimPolicy"),
        [("spec.persistentVolumeReclaimPolicy", NOT_SUPPORTED)],
    ),
    (
        "unexpected-namespace",
        {**volume(), "metadata": {"name": "pv", "namespace": "ns"}},
        [("metadata.namespace", FORBIDDEN)],
    ),
    ("missing-volume-source", volume(hostPath=None), [("spec", REQUIRED)]),
    (
        "host mount of / with recycle reclaim policy",
        volume(hostPath={"path": "/"}, persistentVolumeReclaimPolicy="Recycle"),
        [("spec.persistentVolumeReclaimPolicy", FORBIDDEN)],
    ),
    (
        "second source named as upstream does",
        volume(cephfs={"monitors": ["m"]}),
        [("spec.cephFS", FORBIDDEN)],
    ),
    (
        "too-many-sources",
        volume(gcePersistentDisk={"pdName": "foo", "fsType": "ext4"}),
        [("spec.gcePersistentDisk", FORBIDDEN)],
    ),
    (
        "missing-capacity",
        volume(capacity={}),
        [("spec.capacity", NOT_SUPPORTED), ("spec.capacity", REQUIRED)],
    ),
    (
        "unexpected-capacity",
        volume(capacity={"storage": "10G", "cpu": "1"}),
        [("spec.capacity", NOT_SUPPORTED)],
    ),
    (
        "bad-volume-zero-capacity",
        volume(capacity={"storage": "0"}),
        [("spec.capacity[storage]", INVALID)],
    ),
    (
        "invalid-storage-class-name",
        volume(storageClassName="-invalid-"),
        [("spec.storageClassName", INVALID)],
    ),
    (
        "invalid-volume-mode",
        volume(volumeMode="fakeVolumeMode"),
        [("spec.volumeMode", NOT_SUPPORTED)],
    ),
    ("host path without path", volume(hostPath={}), [("spec.hostPath.path", REQUIRED)]),
    ("invalid-local-volume-no-node-affinity", volume(**LOCAL), [("spec.nodeAffinity", REQUIRED)]),
    (
        "invalid-local-volume-empty-path",
        volume(local={"path": ""}, hostPath=None, nodeAffinity=ZONE_AFFINITY),
        [("spec.local.path", REQUIRED)],
    ),
    (
        "invalid-node-affinity-required-nil",
        volume(nodeAffinity={}),
        [("spec.nodeAffinity.required", REQUIRED)],
    ),
    (
        "invalid-node-affinity-required-empty",
        volume(nodeAffinity={"required": {"nodeSelectorTerms": []}}),
        [("spec.nodeAffinity.required.nodeSelectorTerms", REQUIRED)],
    ),
    (
        "invalid-node-affinity-operator",
        volume(
            nodeAffinity={
                "required": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Bogus"}]}]
                }
            }
        ),
        [("spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator", INVALID)],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected"), [c[1:] for c in PV_CASES], ids=[c[0] for c in PV_CASES]
)
def test_persistent_volume(obj: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert found("PersistentVolume", obj) == sorted(expected)


def test_persistent_volume_messages() -> None:
    assert errors("PersistentVolume", volume(capacity={"storage": "0"}, accessModes=["x"])) == [
        'spec.accessModes: Unsupported value: "x": supported values: "ReadOnlyMany", '
        '"ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
        'spec.capacity[storage]: Invalid value: "0": must be greater than zero',
    ]


# --- persistent volume claims ------------------------------------------------------------------


def claim(**spec: Any) -> dict[str, Any]:
    body = {
        "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
        "resources": {"requests": {"storage": "10G"}},
        **spec,
    }
    return {
        "metadata": {"name": "pvc", "namespace": "default"},
        "spec": {k: v for k, v in body.items() if v is not None},
    }


PVC_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    (
        "good-claim",
        claim(
            storageClassName="fast",
            volumeMode="Block",
            selector={"matchExpressions": [{"key": "key2", "operator": "Exists"}]},
        ),
        [],
    ),
    (
        "invalid-label-selector",
        claim(
            selector={
                "matchExpressions": [{"key": "key2", "operator": "InvalidOp", "values": ["value1"]}]
            }
        ),
        [("spec.selector.matchExpressions[0].operator", INVALID)],
    ),
    ("invalid-accessmode", claim(accessModes=["fakemode"]), [("spec.accessModes", NOT_SUPPORTED)]),
    ("missing-access-modes", claim(accessModes=[]), [("spec.accessModes", REQUIRED)]),
    ("no-resource-requests", claim(resources={}), [("spec.resources[storage]", REQUIRED)]),
    (
        "invalid-resource-requests",
        claim(resources={"requests": {"memory": "10G"}}),
        [("spec.resources[storage]", REQUIRED)],
    ),
    (
        "negative-storage-request",
        claim(resources={"requests": {"storage": "-10G"}}),
        [("spec.resources[storage]", INVALID)],
    ),
    (
        "zero-storage-request",
        claim(resources={"requests": {"storage": "0G"}}),
        [("spec.resources[storage]", INVALID)],
    ),
    (
        "invalid-storage-class-name",
        claim(storageClassName="-invalid-"),
        [("spec.storageClassName", INVALID)],
    ),
    (
        "invalid-volume-mode",
        claim(volumeMode="fakeVolumeMode"),
        [("spec.volumeMode", NOT_SUPPORTED)],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected"), [c[1:] for c in PVC_CASES], ids=[c[0] for c in PVC_CASES]
)
def test_persistent_volume_claim(obj: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert found("PersistentVolumeClaim", obj) == sorted(expected)


def test_claim_messages() -> None:
    assert errors(
        "PersistentVolumeClaim", claim(accessModes=[], resources={"requests": {"storage": "0G"}})
    ) == [
        "spec.accessModes: Required value: at least 1 access mode is required",
        'spec.resources[storage]: Invalid value: "0": must be greater than zero',
    ]


# --- pod disruption budgets --------------------------------------------------------------------


def budget(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "pdb", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}, **spec},
    }


PERCENT = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. "
    "'1%',  or '93%', regex used for validation is '[0-9]+%')"
)
PDB_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    ("minAvailable 0", budget(minAvailable=0), []),
    ("minAvailable 10", budget(minAvailable=10), []),
    ("minAvailable 0%", budget(minAvailable="0%"), []),
    ("minAvailable 100%", budget(minAvailable="100%"), []),
    ("maxUnavailable 1", budget(maxUnavailable=1), []),
    ("minAvailable 101%", budget(minAvailable="101%"), [("spec.minAvailable", INVALID)]),
    ("minAvailable 1.1%", budget(minAvailable="1.1%"), [("spec.minAvailable", INVALID)]),
    ("minAvailable nope", budget(minAvailable="nope"), [("spec.minAvailable", INVALID)]),
    ("minAvailable -1", budget(minAvailable=-1), [("spec.minAvailable", INVALID)]),
    ("maxUnavailable -1%", budget(maxUnavailable="-1%"), [("spec.maxUnavailable", INVALID)]),
    ("both set", budget(minAvailable=1, maxUnavailable=1), [("spec", INVALID)]),
    (
        "bad selector",
        budget(selector={"matchExpressions": [{"key": "k", "operator": "Bogus"}]}),
        [("spec.selector.matchExpressions[0].operator", INVALID)],
    ),
    ("valid unhealthyPodEvictionPolicy", budget(unhealthyPodEvictionPolicy="AlwaysAllow"), []),
    (
        "invalid unhealthyPodEvictionPolicy",
        budget(unhealthyPodEvictionPolicy="Invalid"),
        [("spec.unhealthyPodEvictionPolicy", NOT_SUPPORTED)],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected"), [c[1:] for c in PDB_CASES], ids=[c[0] for c in PDB_CASES]
)
def test_pod_disruption_budget(obj: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert found("PodDisruptionBudget", obj) == sorted(expected)


def test_budget_messages() -> None:
    (both,) = errors("PodDisruptionBudget", budget(minAvailable=1, maxUnavailable=1))
    assert both.startswith(
        "spec: Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)("
    )
    assert both.endswith(
        "UnhealthyPodEvictionPolicy:(*policy.UnhealthyPodEvictionPolicyType)(nil)}: "
        "minAvailable and maxUnavailable cannot be both set"
    )
    assert errors("PodDisruptionBudget", budget(minAvailable="101%", maxUnavailable=-1))[1:] == [
        'spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"101%"}: '
        "must not be greater than 100%",
        "spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0",
    ]
    assert errors("PodDisruptionBudget", budget(minAvailable="x")) == [
        'spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"x"}: '
        + PERCENT
    ]


# --- priority classes --------------------------------------------------------------------------


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "value": value, "preemptionPolicy": "Never"}


PC_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    ("valid", priority_class("tier1", 100), []),
    ("system node critical", priority_class("system-node-critical", 2_000_001_000), []),
    ("invalid name", priority_class("tier&1", 100), [("metadata.name", INVALID)]),
    (
        "incorrect system class name",
        priority_class("system-something", 2_000_000_000),
        [("metadata.name", FORBIDDEN)],
    ),
    ("value above the user maximum", priority_class("high", 1_000_000_001), [("value", FORBIDDEN)]),
    (
        "invalid preemption policy",
        {**priority_class("p", 1), "preemptionPolicy": "Bogus"},
        [("preemptionPolicy", NOT_SUPPORTED)],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected"), [c[1:] for c in PC_CASES], ids=[c[0] for c in PC_CASES]
)
def test_priority_class(obj: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert found("PriorityClass", obj) == sorted(expected)
