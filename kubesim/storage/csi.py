"""The simulated CSI driver's API objects: its CSIDriver, the default StorageClass, CSINodes.

A real cluster gets these from the driver's deployment (CSIDriver, StorageClass) and from each
node's kubelet, which writes the node's CSINode when the driver registers (ownerReference to the
Node, pkg/volume/csi/nodeinfomanager).
"""

from __future__ import annotations

from typing import Any

from kubesim.meta import Obj
from kubesim.storage.objects import (
    HOSTNAME_LABEL,
    WAIT_FOR_FIRST_CONSUMER,
    ZONE_LABEL,
    as_dict,
    meta,
    name_of,
    uid_of,
)

DRIVER_NAME = "csi.kubesim.io"
DEFAULT_CLASS_NAME = "standard"
IS_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"


def csi_driver() -> Obj:
    """The CSIDriver with every field upstream defaults (storage/v1 SetDefaults_CSIDriver)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": DRIVER_NAME},
        "spec": {
            "attachRequired": True,
            "podInfoOnMount": False,
            "storageCapacity": False,
            "requiresRepublish": False,
            "seLinuxMount": False,
            "fsGroupPolicy": "ReadWriteOnceWithFSType",
            "volumeLifecycleModes": ["Persistent"],
        },
    }


def default_storage_class() -> Obj:
    """`standard`, as kind and minikube ship one: the default, provisioned on first use."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": DEFAULT_CLASS_NAME, "annotations": {IS_DEFAULT_CLASS: "true"}},
        "provisioner": DRIVER_NAME,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": WAIT_FOR_FIRST_CONSUMER,
    }


def csinode(node: Obj, attach_limit: int) -> Obj:
    """The CSINode the node's kubelet writes once the simulated driver registers on it."""
    name = name_of(node)
    labels = as_dict(meta(node).get("labels"))
    topology_keys = [HOSTNAME_LABEL]
    if ZONE_LABEL in labels:  # a driver reports only segments the node carries as labels
        topology_keys.append(ZONE_LABEL)
    driver: dict[str, Any] = {"name": DRIVER_NAME, "nodeID": name, "topologyKeys": topology_keys}
    if attach_limit > 0:
        driver["allocatable"] = {"count": attach_limit}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {
            "name": name,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid_of(node)}
            ],
        },
        "spec": {"drivers": [driver]},
    }


def owner_node_uid(csinode_obj: Obj) -> str | None:
    """The uid of the Node owning a CSINode we wrote; None for one a user wrote."""
    for ref in meta(csinode_obj).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("kind") == "Node" and ref.get("apiVersion") == "v1":
            return str(ref.get("uid") or "")
    return None
