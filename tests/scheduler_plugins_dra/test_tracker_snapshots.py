"""The claim tracker's per-pool snapshots (PooledSet, PooledCapacity) against the counts they
are kept from: after any sequence of allocations added and removed, a snapshot holds exactly
the devices, shares and capacity the counts say, and one taken earlier does not change; the
per-pool versions and change log name every pool a change touched."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.resource import AllocatedDevice
from scheduler.listers.resource_objects import AllocatedDevices

results = st.builds(
    AllocatedDevice,
    request=st.just("r"),
    driver=st.sampled_from(["gpu", "nic"]),
    pool=st.sampled_from(["n1", "n2", "n3"]),
    device=st.sampled_from(["d0", "d1"]),
    admin_access=st.booleans(),
    share_id=st.sampled_from(["", "", "s1", "s2"]),
    consumed_capacity=st.sampled_from([{}, {"milli": 250}, {"milli": 500}]),
)


def _expected(allocated: AllocatedDevices) -> tuple[set, set, dict]:
    return (
        set(allocated.devices),
        set(allocated.shared),
        {device: dict(consumed) for device, consumed in allocated.capacity.items()},
    )


def _seen(snapshot: tuple) -> tuple[set, set, dict]:
    devices, shared, capacity = snapshot
    return set(devices), set(shared), {device: dict(c) for device, c in capacity.items()}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.lists(results, max_size=3)), max_size=12))
def test_snapshots_match_the_counts_and_never_change(
    changes: list[tuple[bool, list[AllocatedDevice]]],
) -> None:
    allocated = AllocatedDevices()
    added: list[list[AllocatedDevice]] = []
    taken: list[tuple[tuple[set, set, dict], tuple]] = []
    for remove, batch in changes:
        before = allocated.version
        if remove and added:
            batch = added.pop(0)
            allocated.remove(batch)
        else:
            allocated.add(batch)
            added.append(batch)
        touched = {r.device_id[:2] for r in batch if not r.admin_access}
        assert allocated.pools_changed_since(before) == touched
        for pool in touched:
            assert allocated.pool_versions[pool] > before
        snapshot = allocated.snapshot()
        expected = _expected(allocated)
        assert _seen(snapshot) == expected
        devices, shared, capacity = snapshot
        for device in expected[0]:
            assert device in devices
        for share in expected[1]:
            assert share in shared
        for device, consumed in expected[2].items():
            assert capacity.get(device) == consumed
        assert ("gpu", "n9", "d0") not in devices and capacity.get(("gpu", "n9", "d0")) is None
        taken.append((expected, snapshot))
    for expected, snapshot in taken:
        assert _seen(snapshot) == expected
