"""The PV binder over HTTP: which volume an Immediate claim gets, what a binding writes, how a
bind the scheduler started is completed, and the phases of volumes whose claims go away."""

from __future__ import annotations

from typing import Any

import pytest
from storage_harness import CORE, NS, StorageKube, eventually, running

from kubesim.storage.controllers import StorageOptions

FAST = "fast"  # Immediate, provisioned by no one: only static volumes bind
SLOW = "slow"  # WaitForFirstConsumer, same


async def _classes(kube: StorageKube) -> None:
    await kube.create_class(FAST, "kubernetes.io/no-provisioner", "Immediate")
    await kube.create_class(SLOW, "kubernetes.io/no-provisioner", "WaitForFirstConsumer")


async def _bound_volume(kube: StorageKube, claim: str) -> str | None:
    await kube.settle()
    found = await kube.claim(claim)
    return found["spec"].get("volumeName") if found["status"]["phase"] == "Bound" else None


def pv(size: str, cls: str = FAST, **spec: Any) -> dict[str, Any]:
    """create_volume's keywords: spec fields, and `labels`."""
    return {"capacity": {"storage": size}, "storageClassName": cls, **spec}


RWO_RWX = ["ReadWriteOnce", "ReadWriteMany"]
SIZE_1500MI = {"resources": {"requests": {"storage": "1500Mi"}}}
SIZE_2GI = {"resources": {"requests": {"storage": "2Gi"}}}
GOLD_EXPRESSION = {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}


@pytest.mark.parametrize(
    ("volumes", "claim", "expected"),
    [
        pytest.param(
            {"big": pv("10Gi"), "small": pv("2Gi"), "tiny": pv("1Gi")},
            SIZE_1500MI,
            "small",
            id="smallest-that-fits",
        ),
        pytest.param(
            {"other": pv("1Gi", cls="gold"), "mine": pv("5Gi")},
            {},
            "mine",
            id="class-mismatch-skipped",
        ),
        pytest.param({"small": pv("1Gi")}, SIZE_2GI, None, id="too-small"),
        pytest.param(
            {"rwo": pv("1Gi"), "rwx": pv("5Gi", accessModes=RWO_RWX)},
            {"accessModes": ["ReadWriteMany"]},
            "rwx",
            id="access-modes-must-include",
        ),
        pytest.param(
            {"both": pv("1Gi", accessModes=RWO_RWX), "one": pv("5Gi")},
            {},
            "one",
            id="fewest-access-modes-first",
        ),
        pytest.param(
            {"fs": pv("1Gi"), "block": pv("5Gi", volumeMode="Block")},
            {"volumeMode": "Block"},
            "block",
            id="volume-mode-block",
        ),
        pytest.param({"block": pv("1Gi", volumeMode="Block")}, {}, None, id="volume-mode-mismatch"),
        pytest.param(
            {"plain": pv("1Gi"), "gold": pv("5Gi", labels={"tier": "gold"})},
            {"selector": {"matchLabels": {"tier": "gold"}}},
            "gold",
            id="selector-match",
        ),
        pytest.param(
            {"silver": pv("1Gi", labels={"tier": "silver"})},
            {"selector": GOLD_EXPRESSION},
            None,
            id="selector-mismatch",
        ),
        pytest.param(
            {"classy": pv("1Gi"), "plain": pv("5Gi", cls="")},
            {"storageClassName": ""},
            "plain",
            id="empty-class-only-classless",
        ),
        pytest.param(
            {"ghostly": pv("1Gi", cls="ghost")},
            {"storageClassName": "ghost"},
            "ghostly",
            id="missing-class-binds-like-immediate",
        ),
        pytest.param(
            {"free": pv("1Gi", cls=SLOW)},
            {"storageClassName": SLOW},
            None,
            id="wait-for-first-consumer-waits",
        ),
    ],
)
async def test_immediate_claim_binds_the_smallest_matching_volume(
    volumes: dict[str, dict[str, Any]], claim: dict[str, Any], expected: str | None
) -> None:
    async with running(storage=StorageOptions(csi_driver=False)) as kube:
        await _classes(kube)
        for name, volume in volumes.items():
            await kube.create_volume(name, **volume)
        await kube.create_claim("data", **{"storageClassName": FAST, **claim})
        assert await _bound_volume(kube, "data") == expected
        if expected is None:
            assert (await kube.claim("data"))["status"]["phase"] == "Pending"


async def test_a_binding_writes_what_upstream_writes() -> None:
    async with running(storage=StorageOptions(csi_driver=False)) as kube:
        await _classes(kube)
        await kube.create_volume("vol", **pv("10Gi"))
        claim = await kube.create_claim("data", storageClassName=FAST)
        await eventually(lambda: _bound_volume(kube, "data"))
        volume, bound = await kube.volume("vol"), await kube.claim("data")
        ref = volume["spec"]["claimRef"]
        assert (ref["kind"], ref["namespace"], ref["name"], ref["uid"]) == (
            "PersistentVolumeClaim",
            NS,
            "data",
            claim["metadata"]["uid"],
        )
        assert ref["apiVersion"] == "v1" and ref["resourceVersion"]
        assert volume["status"]["phase"] == "Bound"
        assert volume["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
        assert bound["spec"]["volumeName"] == "vol"
        assert bound["metadata"]["annotations"] == {
            "pv.kubernetes.io/bind-completed": "yes",
            "pv.kubernetes.io/bound-by-controller": "yes",
        }
        assert bound["status"] == {
            "phase": "Bound",
            "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "10Gi"},
        }


async def test_phases_of_volumes_and_a_claim_that_waits_for_a_volume() -> None:
    async with running(storage=StorageOptions(csi_driver=False)) as kube:
        await _classes(kube)
        await kube.create_volume("small", **pv("1Gi"))
        await kube.create_claim(
            "data", storageClassName=FAST, resources={"requests": {"storage": "3Gi"}}
        )
        await kube.settle()
        assert (await kube.volume("small"))["status"]["phase"] == "Available"
        assert (await kube.claim("data"))["status"]["phase"] == "Pending"
        await kube.create_volume("large", **pv("4Gi"))  # a new volume: claims retry
        assert await eventually(lambda: _bound_volume(kube, "data")) == "large"
        assert (await kube.volume("large"))["status"]["phase"] == "Bound"


async def test_a_prebound_volume_wins_and_is_not_marked_bound_by_controller() -> None:
    async with running(storage=StorageOptions(csi_driver=False)) as kube:
        await _classes(kube)
        await kube.create_volume("smaller", **pv("1Gi"))
        await kube.create_volume(
            "reserved", **pv("5Gi", claimRef={"namespace": NS, "name": "data"})
        )
        await kube.create_claim("data", storageClassName=FAST)
        assert await eventually(lambda: _bound_volume(kube, "data")) == "reserved"
        volume = await kube.volume("reserved")
        assert "pv.kubernetes.io/bound-by-controller" not in (
            volume["metadata"].get("annotations") or {}
        )
        assert volume["spec"]["claimRef"]["uid"] == (await kube.claim("data"))["metadata"]["uid"]
        assert (await kube.volume("smaller"))["status"]["phase"] == "Available"


@pytest.mark.parametrize(
    ("volume", "expected"),
    [(pv("5Gi"), "named"), (pv("512Mi"), None), (pv("5Gi", cls="gold"), None)],
    ids=["fits", "too-small", "other-class"],
)
async def test_a_claim_naming_its_volume_binds_to_it_if_it_fits(
    volume: dict[str, Any], expected: str | None
) -> None:
    async with running(storage=StorageOptions(csi_driver=False)) as kube:
        await _classes(kube)
        await kube.create_volume("bigger", **pv("9Gi"))
        await kube.create_volume("named", **volume)
        await kube.create_claim("data", storageClassName=FAST, volumeName="named")
        assert await _bound_volume(kube, "data") == expected
        bound = await kube.claim("data")
        # the user chose the volume: the controller did not bind the claim
        assert (
            "pv.kubernetes.io/bound-by-controller" in (bound["metadata"].get("annotations") or {})
        ) is False


async def test_completes_a_static_bind_the_scheduler_started() -> None:
    async with running(storage=StorageOptions(csi_driver=False)) as kube:
        await _classes(kube)
        await kube.create_volume("local", **pv("2Gi", cls=SLOW))
        claim = await kube.create_claim("data", storageClassName=SLOW)
        await kube.settle()
        assert (await kube.claim("data"))["status"]["phase"] == "Pending"  # never on its own
        await kube.patch(  # what VolumeBinding's PreBind writes for a static binding
            f"{CORE}/persistentvolumes/local",
            {
                "metadata": {"annotations": {"pv.kubernetes.io/bound-by-controller": "yes"}},
                "spec": {
                    "claimRef": {
                        "kind": "PersistentVolumeClaim",
                        "apiVersion": "v1",
                        "namespace": NS,
                        "name": "data",
                        "uid": claim["metadata"]["uid"],
                    }
                },
            },
        )
        assert await eventually(lambda: _bound_volume(kube, "data")) == "local"
        bound = await kube.claim("data")
        assert bound["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
        assert (await kube.volume("local"))["status"]["phase"] == "Bound"


@pytest.mark.parametrize(("policy", "left"), [("Retain", "Released"), ("Delete", None)])
async def test_a_volume_whose_claim_is_deleted_is_released_then_reclaimed(
    policy: str, left: str | None
) -> None:
    async with running(storage=StorageOptions(csi_driver=False)) as kube:
        await _classes(kube)
        await kube.create_volume("vol", **pv("1Gi", persistentVolumeReclaimPolicy=policy))
        await kube.create_claim("data", storageClassName=FAST)
        await eventually(lambda: _bound_volume(kube, "data"))
        await kube.delete(f"{CORE}/namespaces/{NS}/persistentvolumeclaims/data")
        await kube.settle()
        volume = await kube.volume("vol")
        assert (volume and volume["status"]["phase"]) == (left or None)
        if left:  # a Released volume is nobody's to bind again
            await kube.create_claim("again", storageClassName=FAST)
            assert await _bound_volume(kube, "again") is None


async def test_a_bound_claim_whose_volume_is_deleted_is_lost() -> None:
    async with running(storage=StorageOptions(csi_driver=False)) as kube:
        await _classes(kube)
        await kube.create_volume("vol", **pv("1Gi"))
        await kube.create_claim("data", storageClassName=FAST)
        await eventually(lambda: _bound_volume(kube, "data"))
        await kube.delete(f"{CORE}/persistentvolumes/vol")
        await kube.settle()
        lost = await kube.claim("data")
        assert lost["status"] == {"phase": "Lost"}
        assert lost["spec"]["volumeName"] == "vol"


async def test_a_volume_being_deleted_is_not_bound() -> None:
    async with running(storage=StorageOptions(csi_driver=False)) as kube:
        await _classes(kube)
        await kube.create(
            f"{CORE}/persistentvolumes",
            {
                "metadata": {"name": "going", "finalizers": ["example.com/hold"]},
                "spec": pv("1Gi") | {"accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"}},
            },
        )
        await kube.delete(f"{CORE}/persistentvolumes/going")
        await kube.create_claim("data", storageClassName=FAST)
        assert await _bound_volume(kube, "data") is None


async def _stored_unchecked(kube: StorageKube, key: str, name: str, spec: dict[str, Any]) -> None:
    """Write an object the API server would refuse straight into kubesim's store."""
    namespaced = key == "persistentvolumeclaims"
    meta = {"name": name, "uid": f"uid-{name}", **({"namespace": "default"} if namespaced else {})}
    obj = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim" if namespaced else "PersistentVolume",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Pending"},
    }
    await kube.cluster.api.store.put(key, obj, None)


async def test_malformed_objects_are_skipped_and_the_rest_still_bind(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with running(storage=StorageOptions(csi_driver=False)) as kube:
        await _classes(kube)
        # The API refuses these (upstream's decoder answers 400), so they are put in the store
        # directly, as objects written by an older or foreign server would be.
        await _stored_unchecked(
            kube,
            "persistentvolumes",
            "broken",
            pv("lots", accessModes=["ReadWriteOnce"], hostPath={"path": "/mnt/broken"}),
        )
        await _stored_unchecked(
            kube,
            "persistentvolumeclaims",
            "odd",
            {
                "storageClassName": FAST,
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "a few"}},
            },
        )
        await _stored_unchecked(
            kube,
            "persistentvolumeclaims",
            "odd-selector",
            {
                "storageClassName": FAST,
                "accessModes": ["ReadWriteOnce"],
                "selector": "tier=gold",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        )
        await kube.create_volume("good", **pv("1Gi"))
        await kube.create_claim("data", storageClassName=FAST)
        assert await eventually(lambda: _bound_volume(kube, "data")) == "good"
        assert (await kube.claim("odd"))["status"]["phase"] == "Pending"
        assert kube.cluster.storage._tasks.running
        assert "storage request 'a few'" in caplog.text
        assert "PersistentVolume broken is offered to no claim" in caplog.text
