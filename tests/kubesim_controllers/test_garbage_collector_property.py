"""Property tests of kubesim's garbage collector, in process: random owner graphs of ConfigMaps,
random deletions with every propagation policy, then the collector run to quiescence.

Invariants: no orphan is left behind (an object whose owners were all deleted in the background
or the foreground is gone, as are its own dependents), and no live object is deleted (whatever
still has an owner, was never deleted, or was orphaned stays).
"""

from __future__ import annotations

import asyncio
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim.api import Api
from kubesim.controllers.garbagecollector import GarbageCollector
from kubesim.controllers.manager import ControllerManager
from kubesim.controllers.options import ControllerOptions
from kubesim.resources import RESOURCES
from kubesim.store import Store

CONFIGMAPS = next(r for r in RESOURCES if r.key == "configmaps")
POLICIES = ("Background", "Foreground", "Orphan")


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[list[int]], list[tuple[int, str]]]:
    size = draw(st.integers(min_value=1, max_value=10))
    owners = [
        sorted(set(draw(st.lists(st.integers(0, i - 1), max_size=3)))) if i else []
        for i in range(size)
    ]
    deletes = draw(
        st.lists(
            st.tuples(st.integers(0, size - 1), st.sampled_from(POLICIES)),
            max_size=4,
            unique_by=lambda d: d[0],
        )
    )
    return owners, deletes


def expected_survivors(owners: list[list[int]], deletes: list[tuple[int, str]]) -> set[int]:
    live = set(range(len(owners)))
    refs = {i: set(o) for i, o in enumerate(owners)}
    for target, policy in deletes:
        if target not in live:
            continue
        live.discard(target)
        if policy == "Orphan":
            for deps in refs.values():
                deps.discard(target)
        changed = True
        while changed:  # background and foreground both end with every lost dependent gone
            changed = False
            for i in sorted(live):
                if refs[i] and not refs[i] & live:
                    live.discard(i)
                    changed = True
        # A dependent kept alive by another owner loses its references to the gone ones, as
        # upstream's attemptToDeleteItem patches out dangling owner references.
        for i in live:
            refs[i] &= live
    return live


async def run(owners: list[list[int]], deletes: list[tuple[int, str]]) -> set[int]:
    api = Api(Store(), rng=random.Random(0))
    await api.create(
        next(r for r in RESOURCES if r.key == "namespaces"), "", {"metadata": {"name": "default"}}
    )
    manager = ControllerManager(api, ControllerOptions(), [GarbageCollector(api)])
    await manager.start()
    uids: dict[int, str] = {}
    for i, mine in enumerate(owners):
        refs = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": f"cm-{o}",
                "uid": uids[o],
                "blockOwnerDeletion": True,
            }
            for o in mine
        ]
        created = await api.create(
            CONFIGMAPS,
            "default",
            {"metadata": {"name": f"cm-{i}", **({"ownerReferences": refs} if refs else {})}},
        )
        uids[i] = created["metadata"]["uid"]
    for target, policy in deletes:
        if api.store.get("configmaps", "default", f"cm-{target}") is not None:
            await api.delete(CONFIGMAPS, "default", f"cm-{target}", {"propagationPolicy": policy})
        await settle(manager)
    await settle(manager)
    await manager.stop()
    left = {int(o["metadata"]["name"][3:]) for o in api.store.items("configmaps", "default")}
    for obj in api.store.items("configmaps", "default"):
        assert not obj["metadata"].get("deletionTimestamp"), obj["metadata"]
    return left


async def settle(manager: ControllerManager) -> None:
    for _ in range(2000):
        await asyncio.sleep(0)
        if manager.idle and not manager._heap:
            return


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_no_orphan_left_and_no_live_object_deleted(
    scenario: tuple[list[list[int]], list[tuple[int, str]]],
) -> None:
    owners, deletes = scenario
    assert asyncio.run(run(owners, deletes)) == expected_survivors(owners, deletes)
