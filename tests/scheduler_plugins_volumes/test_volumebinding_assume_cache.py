"""The PV / PVC assume cache.

Ported from upstream's pkg/scheduler/framework/plugins/volumebinding/assume_cache_test.go
(TestAssumePV, TestRestorePV, TestBasicPVCache, TestPVCacheWithStorageClasses,
TestAssumeUpdatePVCache, TestAssumePVC, TestRestorePVC, TestAssumeUpdatePVCCache) and the
semantics of pkg/scheduler/util/assumecache/assume_cache.go: the informer's store here is the
`KeyedStore` of `StorageObjects` (upstream's AddTestObject / UpdateTestObject /
DeleteTestObject are the store's on_add / on_update / on_delete).
"""

from __future__ import annotations

import pytest

from scheduler.api.storage import PersistentVolumeClaimView, PersistentVolumeView
from scheduler.listers.storage_objects import StorageObjects
from scheduler.plugins.volumebinding.assume_cache import (
    PV_DESCRIPTION,
    PVC_DESCRIPTION,
    AssumeCache,
    AssumeCacheError,
    NotFoundError,
)
from scheduler.testing.volumes import make_pv, make_pvc


def _pv_cache() -> tuple[StorageObjects, AssumeCache[PersistentVolumeView]]:
    storage = StorageObjects()
    return storage, AssumeCache(storage.volumes, PV_DESCRIPTION)


def _pvc_cache() -> tuple[StorageObjects, AssumeCache[PersistentVolumeClaimView]]:
    storage = StorageObjects()
    return storage, AssumeCache(storage.claims, PVC_DESCRIPTION)


def _claim(name: str, version: str, namespace: str) -> PersistentVolumeClaimView:
    return make_pvc(name, namespace=namespace, resource_version=version)


@pytest.mark.parametrize(
    ("old", "new", "succeeds"),
    [
        ("pv1/5/", "pv1/5/", True),  # success-same-version
        ("pv1/5/class1", "pv1/5/class1", True),  # success-storageclass-same-version
        ("pv1/5/", "pv1/6/", True),  # success-new-higher-version
        ("pv2/5/", "pv1/5/", False),  # fail-old-not-found
        ("pv1/5/", "pv1/4/", False),  # fail-new-lower-version
        ("pv1/5/", "pv1/a/", False),  # fail-new-bad-version
        ("pv1/a/", "pv1/5/", False),  # fail-old-bad-version
    ],
)
def test_assume_pv(old: str, new: str, succeeds: bool) -> None:
    storage, cache = _pv_cache()
    name, version, klass = old.split("/")
    old_pv = make_pv(name, klass, resource_version=version)
    name, version, klass = new.split("/")
    new_pv = make_pv(name, klass, resource_version=version)
    storage.volumes.on_add(old_pv)
    assert cache.get(old_pv.name) is old_pv
    if succeeds:
        cache.assume(new_pv)
    else:
        with pytest.raises(AssumeCacheError):
            cache.assume(new_pv)
    assert cache.get(old_pv.name) is (new_pv if succeeds else old_pv)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (("pv2", "5"), ("pv1", "5"), 'could not find v1.PersistentVolume "pv1"'),
        (
            ("pv1", "5"),
            ("pv1", "4"),
            'v1.PersistentVolume "pv1" is out of sync (stored: 5, assume: 4)',
        ),
        (
            ("pv1", "5"),
            ("pv1", "a"),
            'error parsing ResourceVersion "a" for v1.PersistentVolume "pv1": '
            'strconv.ParseInt: parsing "a": invalid syntax',
        ),
    ],
)
def test_assume_pv_errors(old: tuple[str, str], new: tuple[str, str], message: str) -> None:
    storage, cache = _pv_cache()
    storage.volumes.on_add(make_pv(old[0], resource_version=old[1]))
    with pytest.raises(AssumeCacheError) as info:
        cache.assume(make_pv(new[0], resource_version=new[1]))
    assert str(info.value) == message


def test_restore_pv() -> None:
    storage, cache = _pv_cache()
    old_pv = make_pv("pv1", resource_version="5")
    new_pv = make_pv("pv1", resource_version="5")
    cache.restore("nothing")  # restoring what does not exist is fine
    storage.volumes.on_add(old_pv)
    assert cache.get("pv1") is old_pv
    cache.restore("pv1")
    assert cache.get("pv1") is old_pv
    cache.assume(new_pv)
    assert cache.get("pv1") is new_pv
    assert cache.get_api("pv1") is old_pv
    cache.restore("pv1")
    assert cache.get("pv1") is old_pv


def test_basic_pv_cache() -> None:
    storage, cache = _pv_cache()
    with pytest.raises(NotFoundError):
        cache.get("nothere")
    pvs = {}
    for i in range(10):
        pv = make_pv(f"test-pv{i}", resource_version="1")
        pvs[pv.name] = pv
        storage.volumes.on_add(pv)
    assert {pv.name: pv for pv in cache.list()} == pvs
    updated = make_pv("test-pv3", resource_version="2")
    storage.volumes.on_update(pvs["test-pv3"], updated)
    pvs["test-pv3"] = updated
    assert {pv.name: pv for pv in cache.list()} == pvs
    deleted = pvs.pop("test-pv7")
    storage.volumes.on_delete(deleted)
    assert {pv.name: pv for pv in cache.list()} == pvs


def test_pv_cache_with_storage_classes() -> None:
    storage, cache = _pv_cache()

    def listed(klass: str) -> dict[str, PersistentVolumeView]:
        return {pv.name: pv for pv in cache.list(lambda pv: pv.storage_class_name == klass)}

    pvs1 = {}
    pvs2 = {}
    for i in range(10):
        pv = make_pv(f"test-pv{i}", "class1", resource_version="1")
        pvs1[pv.name] = pv
        storage.volumes.on_add(pv)
    for i in range(10):
        pv = make_pv(f"test2-pv{i}", "class2", resource_version="1")
        pvs2[pv.name] = pv
        storage.volumes.on_add(pv)
    assert listed("class1") == pvs1
    assert listed("class2") == pvs2
    updated = make_pv("test-pv3", "class1", resource_version="2")
    storage.volumes.on_update(pvs1["test-pv3"], updated)
    pvs1["test-pv3"] = updated
    assert listed("class1") == pvs1
    assert listed("class2") == pvs2
    storage.volumes.on_delete(pvs1.pop("test-pv7"))
    assert listed("class1") == pvs1
    assert listed("class2") == pvs2


def test_assume_update_pv_cache() -> None:
    storage, cache = _pv_cache()
    pv = make_pv("test-pv0", resource_version="1")
    storage.volumes.on_add(pv)
    claim = make_pvc("test-claim")
    assumed = make_pv("test-pv0", resource_version="1", claim=claim)
    cache.assume(assumed)
    assert cache.get("test-pv0") is assumed
    # The informer delivers the old version again: the assumed one stays.
    storage.volumes.on_update(pv, make_pv("test-pv0", resource_version="1"))
    assert cache.get("test-pv0") is assumed


def test_newer_informer_version_replaces_assumed_object() -> None:
    # assume_cache.go add(): only a newer resourceVersion overrides the latest object.
    storage, cache = _pv_cache()
    pv = make_pv("pv1", resource_version="1")
    storage.volumes.on_add(pv)
    assumed = make_pv("pv1", resource_version="1", claim=make_pvc("c"))
    cache.assume(assumed)
    assert [p.name for p in cache.list(lambda p: p.claim_ref is not None)] == ["pv1"]
    newer = make_pv("pv1", resource_version="2")
    storage.volumes.on_update(pv, newer)
    assert cache.get("pv1") is newer
    assert not cache.is_assumed("pv1")
    # Restoring after the informer caught up is harmless.
    cache.restore("pv1")
    assert cache.get("pv1") is newer


def test_deleted_object_drops_its_assumption() -> None:
    storage, cache = _pv_cache()
    pv = make_pv("pv1", resource_version="1")
    storage.volumes.on_add(pv)
    cache.assume(make_pv("pv1", resource_version="1", claim=make_pvc("c")))
    storage.volumes.on_delete(pv)
    with pytest.raises(NotFoundError):
        cache.get("pv1")
    # Re-created with a lower version (a fresh object): nothing assumed survives.
    recreated = make_pv("pv1", resource_version="1")
    storage.volumes.on_add(recreated)
    assert cache.get("pv1") is recreated


@pytest.mark.parametrize(
    ("old", "new", "succeeds"),
    [
        (("pvc1", "5"), ("pvc1", "5"), True),  # success-same-version
        (("pvc1", "5"), ("pvc1", "6"), True),  # success-new-higher-version
        (("pvc2", "5"), ("pvc1", "5"), False),  # fail-old-not-found
        (("pvc1", "5"), ("pvc1", "4"), False),  # fail-new-lower-version
        (("pvc1", "5"), ("pvc1", "a"), False),  # fail-new-bad-version
        (("pvc1", "a"), ("pvc1", "5"), False),  # fail-old-bad-version
    ],
)
def test_assume_pvc(old: tuple[str, str], new: tuple[str, str], succeeds: bool) -> None:
    storage, cache = _pvc_cache()
    old_pvc = _claim(old[0], old[1], "ns1")
    new_pvc = _claim(new[0], new[1], "ns1")
    storage.claims.on_add(old_pvc)
    assert cache.get(old_pvc.key) is old_pvc
    if succeeds:
        cache.assume(new_pvc)
    else:
        with pytest.raises(AssumeCacheError):
            cache.assume(new_pvc)
    assert cache.get(old_pvc.key) is (new_pvc if succeeds else old_pvc)


def test_restore_pvc() -> None:
    storage, cache = _pvc_cache()
    old_pvc = _claim("pvc1", "5", "ns1")
    new_pvc = _claim("pvc1", "5", "ns1")
    cache.restore("nothing")
    storage.claims.on_add(old_pvc)
    assert cache.get("ns1/pvc1") is old_pvc
    cache.restore("ns1/pvc1")
    assert cache.get("ns1/pvc1") is old_pvc
    cache.assume(new_pvc)
    assert cache.get("ns1/pvc1") is new_pvc
    cache.restore("ns1/pvc1")
    assert cache.get("ns1/pvc1") is old_pvc


def test_assume_update_pvc_cache() -> None:
    storage, cache = _pvc_cache()
    pvc = _claim("test-pvc0", "1", "test-ns")
    storage.claims.on_add(pvc)
    assumed = make_pvc(
        "test-pvc0", namespace="test-ns", resource_version="1", selected_node="test-node"
    )
    cache.assume(assumed)
    assert cache.get("test-ns/test-pvc0") is assumed
    storage.claims.on_update(pvc, _claim("test-pvc0", "1", "test-ns"))
    assert cache.get("test-ns/test-pvc0") is assumed
    with pytest.raises(NotFoundError) as info:
        cache.get("test-ns/other")
    assert str(info.value) == 'could not find v1.PersistentVolumeClaim "test-ns/other"'
