"""The PersistentVolume a simulated CSI driver and external-provisioner create for a claim.

Follows kubernetes-csi/external-provisioner (pkg/controller/controller.go, Provision): the PV is
named pvc-<claim uid>, pre-bound to the claim, annotated with the provisioner's name, and pinned
to the topology the driver reports for the volume: the selected node's for WaitForFirstConsumer,
the class's first allowedTopologies term for Immediate.
"""

from __future__ import annotations

from typing import Any

from apimachinery.quantity import canonical_quantity
from kubesim.meta import Obj
from kubesim.storage.objects import (
    ANN_PROVISIONED_BY,
    HOSTNAME_LABEL,
    ZONE_LABEL,
    Malformed,
    as_dict,
    as_list,
    claim_class,
    meta,
    reference_to,
    spec,
    uid_of,
    volume_mode,
)


def volume_name(claim: Obj) -> str:
    return f"pvc-{uid_of(claim)}"


def _node_topology(node: Obj) -> list[dict[str, Any]]:
    labels = as_dict(meta(node).get("labels"))
    zone = labels.get(ZONE_LABEL)
    if zone:
        return [{"key": ZONE_LABEL, "operator": "In", "values": [str(zone)]}]
    hostname = labels.get(HOSTNAME_LABEL) or meta(node).get("name", "")
    return [{"key": HOSTNAME_LABEL, "operator": "In", "values": [str(hostname)]}]


def _allowed_topology(storage_class: Obj) -> list[dict[str, Any]]:
    """One segment of the class's first allowedTopologies term (the first value of each key)."""
    terms = as_list(storage_class.get("allowedTopologies"))
    if not terms:
        return []
    expressions = []
    for expression in as_list(as_dict(terms[0]).get("matchLabelExpressions")):
        expression = as_dict(expression)
        values = as_list(expression.get("values"))
        if expression.get("key") and values:
            expressions.append(
                {"key": str(expression["key"]), "operator": "In", "values": [str(values[0])]}
            )
    return expressions


def provisioned_volume(claim: Obj, storage_class: Obj, provisioner: str, node: Obj | None) -> Obj:
    """The PV for `claim`; `node` is the selected node (None: an Immediate class)."""
    storage = as_dict(as_dict(spec(claim).get("resources")).get("requests")).get("storage")
    if storage is None:
        raise Malformed("no spec.resources.requests.storage to provision")
    try:
        capacity = canonical_quantity(storage)
    except (ValueError, TypeError) as exc:
        raise Malformed(f"storage request {storage!r}: {exc}") from exc
    topology = _node_topology(node) if node is not None else _allowed_topology(storage_class)
    volume_spec: dict[str, Any] = {
        "accessModes": list(as_list(spec(claim).get("accessModes"))),
        "capacity": {"storage": capacity},
        "claimRef": reference_to(claim),
        "csi": {"driver": provisioner, "volumeHandle": f"kubesim-{uid_of(claim)}"},
        "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
        "storageClassName": claim_class(claim),
        "volumeMode": volume_mode(claim),
    }
    mount_options = as_list(storage_class.get("mountOptions"))
    if mount_options:
        volume_spec["mountOptions"] = mount_options
    if topology:
        volume_spec["nodeAffinity"] = {
            "required": {"nodeSelectorTerms": [{"matchExpressions": topology}]}
        }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": volume_name(claim),
            "annotations": {ANN_PROVISIONED_BY: provisioner},
        },
        "spec": volume_spec,
        "status": {"phase": "Pending"},
    }
