"""The simulated CSI driver's provisioner: WaitForFirstConsumer claims once the scheduler picked
a node, Immediate claims at once, extra provisioner names, and deletion with the claim."""

from __future__ import annotations

from typing import Any

import pytest
from storage_harness import CORE, NS, StorageKube, eventually, running

from kubesim.storage.controllers import StorageOptions

SELECTED_NODE = "volume.kubernetes.io/selected-node"


async def _select_node(kube: StorageKube, claim: str, node: str) -> None:
    """What VolumeBinding's PreBind writes for a claim to provision."""
    await kube.patch(
        f"{CORE}/namespaces/{NS}/persistentvolumeclaims/{claim}",
        {"metadata": {"annotations": {SELECTED_NODE: node}}},
    )


async def _bound(kube: StorageKube, claim: str) -> Any:
    found = await kube.claim(claim)
    return found if found["status"]["phase"] == "Bound" else None


@pytest.mark.parametrize(
    ("zones", "topology"),
    [(2, ("topology.kubernetes.io/zone", "zone-b")), (0, ("kubernetes.io/hostname", "node-1"))],
    ids=["zone", "hostname"],
)
async def test_wait_for_first_consumer_provisions_on_the_selected_node(
    zones: int, topology: tuple[str, str]
) -> None:
    async with running(nodes=2, zones=zones) as kube:
        claim = await kube.create_claim(
            "data", accessModes=["ReadWriteOnce"], resources={"requests": {"storage": "3Gi"}}
        )
        assert claim["spec"]["storageClassName"] == "standard"  # the default class
        await kube.settle()
        waiting = await kube.claim("data")
        assert waiting["status"]["phase"] == "Pending"
        assert "volume.kubernetes.io/storage-provisioner" not in (
            waiting["metadata"].get("annotations") or {}
        )
        assert await kube.volumes() == []

        await _select_node(kube, "data", "node-1")
        bound = await eventually(lambda: _bound(kube, "data"))
        uid = claim["metadata"]["uid"]
        assert bound["spec"]["volumeName"] == f"pvc-{uid}"
        assert (
            bound["metadata"]["annotations"]
            | {
                "volume.kubernetes.io/storage-provisioner": "csi.kubesim.io",
                "volume.beta.kubernetes.io/storage-provisioner": "csi.kubesim.io",
                "pv.kubernetes.io/bind-completed": "yes",
                "pv.kubernetes.io/bound-by-controller": "yes",
            }
            == bound["metadata"]["annotations"]
        )
        assert bound["status"]["capacity"] == {"storage": "3Gi"}
        [volume] = await kube.volumes()
        assert volume["metadata"]["name"] == f"pvc-{uid}"
        assert volume["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == (
            "csi.kubesim.io"
        )
        spec = volume["spec"]
        assert spec["capacity"] == {"storage": "3Gi"}
        assert spec["accessModes"] == ["ReadWriteOnce"]
        assert (spec["volumeMode"], spec["storageClassName"]) == ("Filesystem", "standard")
        assert spec["persistentVolumeReclaimPolicy"] == "Delete"
        assert spec["csi"]["driver"] == "csi.kubesim.io" and spec["csi"]["volumeHandle"]
        assert (spec["claimRef"]["name"], spec["claimRef"]["uid"]) == ("data", uid)
        key, value = topology
        assert spec["nodeAffinity"] == {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
                ]
            }
        }
        assert volume["status"]["phase"] == "Bound"


async def test_immediate_class_provisions_at_once_within_allowed_topologies() -> None:
    async with running(nodes=1) as kube:
        await kube.create_class(
            "now",
            "csi.kubesim.io",
            "Immediate",
            reclaimPolicy="Retain",
            allowedTopologies=[
                {
                    "matchLabelExpressions": [
                        {"key": "topology.kubernetes.io/zone", "values": ["zone-c", "zone-d"]}
                    ]
                },
                {
                    "matchLabelExpressions": [
                        {"key": "topology.kubernetes.io/zone", "values": ["zone-e"]}
                    ]
                },
            ],
        )
        await kube.create_claim("data", storageClassName="now", volumeMode="Block")
        bound = await eventually(lambda: _bound(kube, "data"))
        volume = await kube.volume(bound["spec"]["volumeName"])
        assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
        assert volume["spec"]["volumeMode"] == "Block"
        assert volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
            {
                "matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-c"]}
                ]
            }
        ]


async def test_extra_provisioners_and_foreign_ones() -> None:
    options = StorageOptions(extra_provisioners=("ebs.csi.aws.com",))
    async with running(storage=options) as kube:
        await kube.create_class("ebs", "ebs.csi.aws.com", "Immediate")
        await kube.create_class("nfs", "nfs.csi.k8s.io", "Immediate")
        await kube.create_claim("on-ebs", storageClassName="ebs")
        await kube.create_claim("on-nfs", storageClassName="nfs")
        bound = await eventually(lambda: _bound(kube, "on-ebs"))
        volume = await kube.volume(bound["spec"]["volumeName"])
        assert volume["spec"]["csi"]["driver"] == "ebs.csi.aws.com"
        assert "nodeAffinity" not in volume["spec"]
        await kube.settle()
        foreign = await kube.claim("on-nfs")  # handed to a provisioner no one runs here
        assert foreign["status"]["phase"] == "Pending"
        assert foreign["metadata"]["annotations"]["volume.kubernetes.io/storage-provisioner"] == (
            "nfs.csi.k8s.io"
        )
        assert len(await kube.volumes()) == 1


async def test_a_provisioned_volume_goes_with_its_claim() -> None:
    async with running(nodes=1) as kube:
        await kube.create_claim("data")
        await _select_node(kube, "data", "node-0")
        bound = await eventually(lambda: _bound(kube, "data"))
        await kube.delete(f"{CORE}/namespaces/{NS}/persistentvolumeclaims/data")
        await eventually(lambda: _gone(kube, bound["spec"]["volumeName"]))


async def _gone(kube: StorageKube, volume: str) -> bool:
    return await kube.volume(volume) is None


async def test_a_missing_selected_node_provisions_nothing_yet() -> None:
    async with running(nodes=1) as kube:
        await kube.create_claim("data")
        await _select_node(kube, "data", "no-such-node")
        await kube.settle()
        assert await kube.volumes() == []
        assert (await kube.claim("data"))["status"]["phase"] == "Pending"


async def test_storage_delay_postpones_the_reaction() -> None:
    async with running(nodes=1, storage=StorageOptions(delay=0.3)) as kube:
        await kube.create_claim("data")
        await _select_node(kube, "data", "node-0")
        start = kube.cluster.api.clock()
        await eventually(lambda: _bound(kube, "data"))
        assert kube.cluster.api.clock() - start >= 0.3
