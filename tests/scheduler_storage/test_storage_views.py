"""The storage views (scheduler/api/storage.py): upstream's defaults, the beta class annotation
before spec.storageClassName, and malformed objects refused with the field named."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.errors import MalformedObject
from scheduler.api.storage import (
    CSIDriverView,
    CSINodeView,
    CSIStorageCapacityView,
    PersistentVolumeClaimView,
    PersistentVolumeView,
    StorageClassView,
)
from scheduler.framework.events import ActionType, ClusterEvent, EventResource
from scheduler.listers.storage_objects import StorageObjects


def claim(spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "data",
            "namespace": "db",
            "uid": "u1",
            "resourceVersion": "7",
            "annotations": annotations or {},
        },
        "spec": spec,
    }


def test_claim_defaults_and_fields() -> None:
    view = PersistentVolumeClaimView.from_dict(
        claim(
            {
                "storageClassName": "fast",
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "selector": {"matchLabels": {"tier": "gold"}},
            }
        )
    )
    assert (view.key, view.storage_class_name, view.requested_storage) == ("db/data", "fast", 2**30)
    assert (view.volume_mode, view.phase, view.volume_name, view.deleting) == (
        "Filesystem",
        "Pending",
        "",
        False,
    )
    assert view.selector is not None and view.selector.matches({"tier": "gold"})


def test_beta_class_annotation_wins_over_the_field() -> None:
    view = PersistentVolumeClaimView.from_dict(
        claim(
            {"storageClassName": "fast"},
            {"volume.beta.kubernetes.io/storage-class": "slow"},
        )
    )
    assert view.storage_class_name == "slow"


def test_volume_fields() -> None:
    view = PersistentVolumeView.from_dict(
        {
            "metadata": {"name": "pv1", "resourceVersion": "3", "labels": {"a": "b"}},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "claimRef": {"namespace": "db", "name": "data", "uid": "u1"},
                "csi": {"driver": "csi.kubesim.io", "volumeHandle": "h1"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "zone", "operator": "In", "values": ["z1"]}
                                ]
                            }
                        ]
                    }
                },
            },
            "status": {"phase": "Bound"},
        }
    )
    assert view.capacity == 10 * 2**30
    assert view.claim_ref is not None and view.claim_ref.name == "data"
    assert (view.csi_driver, view.csi_volume_handle, view.phase) == (
        "csi.kubesim.io",
        "h1",
        "Bound",
    )
    assert view.node_affinity is not None
    assert view.node_affinity.matches({"zone": "z1"}, "n1")
    assert not view.node_affinity.matches({"zone": "z2"}, "n1")


def test_class_node_and_driver_defaults() -> None:
    sc = StorageClassView.from_dict(
        {
            "metadata": {"name": "standard", "resourceVersion": "1"},
            "provisioner": "csi.kubesim.io",
            "allowedTopologies": [
                {"matchLabelExpressions": [{"key": "zone", "values": ["z1", "z2"]}]}
            ],
        }
    )
    assert sc.volume_binding_mode == "Immediate"
    assert sc.allowed_topologies[0].matches({"zone": "z2"})
    assert not sc.allowed_topologies[0].matches({"zone": "z3"})
    node = CSINodeView.from_dict(
        {
            "metadata": {"name": "n1", "resourceVersion": "1"},
            "spec": {"drivers": [{"name": "d", "nodeID": "n1", "allocatable": {"count": 3}}]},
        }
    )
    assert node.drivers["d"].allocatable_count == 3
    driver = CSIDriverView.from_dict({"metadata": {"name": "d", "resourceVersion": "1"}})
    assert (driver.attach_required, driver.storage_capacity) == (True, False)
    capacity = CSIStorageCapacityView.from_dict(
        {
            "metadata": {"name": "c", "namespace": "kube-system", "resourceVersion": "1"},
            "storageClassName": "standard",
            "capacity": "5Gi",
        }
    )
    assert (capacity.capacity, capacity.maximum_volume_size, capacity.node_topology) == (
        5 * 2**30,
        None,
        None,
    )


@pytest.mark.parametrize(
    ("parse", "obj", "message"),
    [
        (
            PersistentVolumeClaimView.from_dict,
            claim({"resources": {"requests": {"storage": "lots"}}}),
            "spec.resources.requests.storage",
        ),
        (PersistentVolumeClaimView.from_dict, claim({"accessModes": "RWO"}), "spec.accessModes"),
        (
            PersistentVolumeView.from_dict,
            {"metadata": {"name": "pv"}, "spec": {"claimRef": "db/data"}},
            "spec.claimRef",
        ),
        (
            CSINodeView.from_dict,
            {"metadata": {"name": "n"}, "spec": {"drivers": [{"allocatable": {"count": "3"}}]}},
            "spec.drivers[0].allocatable.count",
        ),
    ],
)
def test_malformed_objects_name_the_field(parse: Any, obj: dict[str, Any], message: str) -> None:
    with pytest.raises(MalformedObject, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse(obj)


def test_store_changes_reach_the_queue_as_upstream_events() -> None:
    storage = StorageObjects()
    seen: list[tuple[ClusterEvent, Any, Any]] = []
    storage.connect(lambda event, old, new: seen.append((event, old, new)))
    first = PersistentVolumeClaimView.from_dict(claim({}))
    second = PersistentVolumeClaimView.from_dict(claim({"volumeName": "pv1"}))
    storage.claims.on_add(first)
    storage.claims.on_update(first, second)
    assert storage.claim("db", "data") is second
    storage.claims.on_delete(second)
    assert storage.claim("db", "data") is None
    assert [(e.resource, e.action, e.label) for e, _, _ in seen] == [
        (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, "PvcAdd"),
        (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.UPDATE, "PvcUpdate"),
        (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.DELETE, "PvcDelete"),
    ]
