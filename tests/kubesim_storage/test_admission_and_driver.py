"""DefaultStorageClass admission, the simulated driver's objects and CSINodes, --no-csi-driver,
and the price bare pods pay for all of it (none)."""

from __future__ import annotations

from typing import Any

import pytest
from storage_harness import CORE, NS, STORAGE, StorageKube, eventually, running

from kubesim import defaults
from kubesim.storage.controllers import StorageOptions

DEFAULT = {"storageclass.kubernetes.io/is-default-class": "true"}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, "standard"),
        ({"storageClassName": None}, "standard"),
        ({"storageClassName": ""}, ""),
        ({"storageClassName": "fast"}, "fast"),
    ],
    ids=["absent", "null", "empty-means-none", "explicit"],
)
async def test_default_storage_class_admission(spec: dict[str, Any], expected: str) -> None:
    async with running() as kube:
        claim = await kube.create_claim("data", **spec)
        assert claim["spec"]["storageClassName"] == expected


def _class(name: str, created: str, default: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created}
    if default:
        meta["annotations"] = DEFAULT
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("classes", "expected"),
    [
        ([], None),
        ([_class("a", "2024-01-01T00:00:00Z", False)], None),
        (
            [
                _class("old", "2024-01-01T00:00:00Z", True),
                _class("new", "2024-02-01T00:00:00Z", True),
            ],
            "new",
        ),
        (
            [_class("b", "2024-01-01T00:00:00Z", True), _class("a", "2024-01-01T00:00:00Z", True)],
            "a",
        ),
        (
            [
                {
                    "metadata": {
                        "name": "beta",
                        "annotations": {"storageclass.beta.kubernetes.io/is-default-class": "true"},
                    }
                }
            ],
            "beta",
        ),
    ],
    ids=["none", "not-marked", "newest-wins", "tie-by-name", "beta-annotation"],
)
def test_which_class_is_the_default(classes: list[dict[str, Any]], expected: str | None) -> None:
    assert defaults.default_storage_class(classes) == expected


async def test_driver_objects_and_a_users_standard_class_is_kept(tmp_path: Any) -> None:
    async with running(data_dir=tmp_path) as kube:
        driver = await kube.get(f"{STORAGE}/csidrivers/csi.kubesim.io")
        assert driver["spec"]["attachRequired"] is True
        assert driver["spec"]["storageCapacity"] is False
        standard = await kube.get(f"{STORAGE}/storageclasses/standard")
        assert standard["metadata"]["annotations"] == DEFAULT
        assert (
            standard["provisioner"],
            standard["volumeBindingMode"],
            standard["reclaimPolicy"],
        ) == ("csi.kubesim.io", "WaitForFirstConsumer", "Delete")
        await kube.delete(f"{STORAGE}/storageclasses/standard")
        await kube.create_class("standard", "example.com/mine", "Immediate")
    async with running(data_dir=tmp_path) as kube:
        standard = await kube.get(f"{STORAGE}/storageclasses/standard")
        assert standard["provisioner"] == "example.com/mine"


async def _csinode(kube: StorageKube, name: str) -> Any:
    return await kube.get(f"{STORAGE}/csinodes/{name}")


@pytest.mark.parametrize(("limit", "allocatable"), [(0, None), (16, {"count": 16})])
async def test_a_node_made_through_the_api_gets_a_csinode_and_takes_it_along(
    limit: int, allocatable: dict[str, int] | None
) -> None:
    async with running(storage=StorageOptions(attach_limit=limit)) as kube:
        node = await kube.create(
            f"{CORE}/nodes",
            {
                "metadata": {
                    "name": "extra",
                    "labels": {
                        "kubernetes.io/hostname": "extra",
                        "topology.kubernetes.io/zone": "zone-x",
                    },
                }
            },
        )
        csinode = await eventually(lambda: _csinode(kube, "extra"))
        assert csinode["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": "extra", "uid": node["metadata"]["uid"]}
        ]
        [driver] = csinode["spec"]["drivers"]
        assert (driver["name"], driver["nodeID"]) == ("csi.kubesim.io", "extra")
        assert driver["topologyKeys"] == ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]
        assert driver.get("allocatable") == allocatable
        await kube.delete(f"{CORE}/nodes/extra")
        await eventually(lambda: _no_csinode(kube, "extra"))


async def _no_csinode(kube: StorageKube, name: str) -> bool:
    return await _csinode(kube, name) is None


async def test_initial_nodes_get_csinodes_without_zone_keys_when_zoneless() -> None:
    async with running(nodes=3) as kube:
        await kube.settle()
        items = (await kube.get(f"{STORAGE}/csinodes"))["items"]
        assert [c["metadata"]["name"] for c in items] == ["node-0", "node-1", "node-2"]
        assert items[0]["spec"]["drivers"][0]["topologyKeys"] == ["kubernetes.io/hostname"]


async def test_no_csi_driver_leaves_the_driver_out_but_binds() -> None:
    async with running(nodes=2, storage=StorageOptions(csi_driver=False)) as kube:
        await kube.settle()
        assert (await kube.get(f"{STORAGE}/csinodes"))["items"] == []
        assert (await kube.get(f"{STORAGE}/csidrivers"))["items"] == []
        assert (await kube.get(f"{STORAGE}/storageclasses"))["items"] == []
        claim = await kube.create_claim("data")
        assert "storageClassName" not in claim["spec"]  # no default class to give it
        await kube.create_volume("vol", capacity={"storage": "1Gi"})
        await eventually(lambda: _phase_is(kube, "data", "Bound"))


async def test_no_storage_controllers_leave_claims_and_volumes_as_written() -> None:
    """As scheduler_perf's API server: the bench writes bound pairs itself, and nothing may
    change them under it (a status update after the create must not conflict)."""
    async with running(nodes=2, storage=StorageOptions(enabled=False)) as kube:
        assert (await kube.get(f"{STORAGE}/csinodes"))["items"] == []
        assert (await kube.get(f"{STORAGE}/storageclasses"))["items"] == []
        claim = await kube.create_claim("data", volumeName="vol")
        await kube.create_volume("vol", capacity={"storage": "1Gi"})
        await kube.settle()
        again = await kube.claim("data")
        assert again["metadata"]["resourceVersion"] == claim["metadata"]["resourceVersion"]
        assert again["status"]["phase"] == "Pending"


async def _phase_is(kube: StorageKube, claim: str, phase: str) -> bool:
    return bool((await kube.claim(claim))["status"]["phase"] == phase)


async def test_a_default_class_made_later_is_given_to_classless_claims() -> None:
    async with running(storage=StorageOptions(csi_driver=False)) as kube:
        await kube.create_claim("data")
        await kube.create(
            f"{STORAGE}/storageclasses",
            {
                "metadata": {"name": "late", "annotations": DEFAULT},
                "provisioner": "example.com/none",
            },
        )
        await eventually(lambda: _class_is(kube, "data", "late"))


async def _class_is(kube: StorageKube, claim: str, wanted: str) -> bool:
    return bool((await kube.claim(claim))["spec"].get("storageClassName") == wanted)


async def test_bare_pods_cost_the_storage_controllers_nothing() -> None:
    async with running(nodes=2) as kube:
        await kube.settle()
        before = kube.cluster.storage.synced
        for index in range(20):
            await kube.create_pod(f"pod-{index}", NS, nodeName="node-0")
        await eventually(lambda: _all_running(kube))
        await kube.settle()
        assert kube.cluster.storage.synced == before


async def _all_running(kube: StorageKube) -> bool:
    pods = (await kube.get(f"{CORE}/namespaces/{NS}/pods"))["items"]
    return all(p["status"]["phase"] == "Running" for p in pods)
