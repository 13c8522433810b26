"""Restarts with --data-dir: the controllers pick up from the stored objects, provision nothing
twice and bind nothing twice."""

from __future__ import annotations

from pathlib import Path

from storage_harness import CORE, NS, STORAGE, StorageKube, eventually, running

from kubesim.storage.controllers import StorageOptions

ASLEEP = StorageOptions(delay=60.0)  # controllers that will not act while a test runs


async def _phase(kube: StorageKube, claim: str) -> str:
    return str((await kube.claim(claim))["status"]["phase"])


async def _is_bound(kube: StorageKube, claim: str) -> bool:
    return await _phase(kube, claim) == "Bound"


async def test_a_restart_duplicates_and_rewrites_nothing(tmp_path: Path) -> None:
    async with running(nodes=2, data_dir=tmp_path) as kube:
        await kube.create_claim("data")
        await kube.patch(
            f"{CORE}/namespaces/{NS}/persistentvolumeclaims/data",
            {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "node-0"}}},
        )
        await eventually(lambda: _is_bound(kube, "data"))
        await kube.settle()
        [volume] = await kube.volumes()
        claim = await kube.claim("data")
    for _ in range(2):
        async with running(nodes=2, data_dir=tmp_path) as kube:
            await kube.settle()
            assert await kube.volumes() == [volume]  # same object, same resourceVersion
            assert await kube.claim("data") == claim
            for kind, count in (("csidrivers", 1), ("storageclasses", 1), ("csinodes", 2)):
                assert len((await kube.get(f"{STORAGE}/{kind}"))["items"]) == count, kind
    async with running(nodes=2, data_dir=tmp_path, storage=StorageOptions(attach_limit=3)) as kube:
        await kube.settle()  # a new attach limit: the kubelets report it
        csinodes = (await kube.get(f"{STORAGE}/csinodes"))["items"]
        assert [c["spec"]["drivers"][0]["allocatable"] for c in csinodes] == [{"count": 3}] * 2


async def test_changes_made_while_the_controllers_slept_are_acted_on_at_start(
    tmp_path: Path,
) -> None:
    async with running(nodes=1, data_dir=tmp_path) as kube:
        await kube.create_class("fast", "kubernetes.io/no-provisioner", "Immediate")
        await kube.create_volume(
            "old",
            capacity={"storage": "1Gi"},
            storageClassName="fast",
            persistentVolumeReclaimPolicy="Delete",
        )
        await kube.create_claim("first", storageClassName="fast")
        await eventually(lambda: _is_bound(kube, "first"))
    async with running(nodes=1, data_dir=tmp_path, storage=ASLEEP) as kube:
        await kube.delete(f"{CORE}/namespaces/{NS}/persistentvolumeclaims/first")
        await kube.create_volume("new", capacity={"storage": "1Gi"}, storageClassName="fast")
        await kube.create_claim("second", storageClassName="fast")
        await kube.create(f"{CORE}/nodes", {"metadata": {"name": "late"}})
        await kube.delete(f"{CORE}/nodes/node-0")
    async with running(nodes=0, data_dir=tmp_path) as kube:
        await eventually(lambda: _is_bound(kube, "second"))
        assert (await kube.claim("second"))["spec"]["volumeName"] == "new"
        await kube.settle()
        assert await kube.volume("old") is None  # released while we were down, then deleted
        names = [c["metadata"]["name"] for c in (await kube.get(f"{STORAGE}/csinodes"))["items"]]
        assert names == ["late"]
