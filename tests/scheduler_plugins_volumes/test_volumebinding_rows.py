"""VolumeBinding's row fast path: filter_rows passes all rows when no node can differ (every
claim bound to a PV without node affinity), and the framework then gets the per-node path's
outcome, Reserve included; anything node-dependent goes per node (None). score_rows answers
zeros where Score would answer zero on every node."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cache.snapshot import Snapshot
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import Registry
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.plugins.volumebinding import NAME, PLUGIN_ENTRY, VolumeBinding
from scheduler.testing import RecordingClient, make_pod, node_infos
from scheduler.testing.volumes import (
    HOSTNAME_LABEL,
    WAIT,
    hostname_node,
    make_class,
    make_pv,
    make_pvc,
)

BOUND = make_pvc("bound", "", bound_pv="pv-net", bind_completed=True, phase="Bound")
PINNED = make_pvc("pinned", "", bound_pv="pv-local", bind_completed=True, phase="Bound")
UNBOUND = make_pvc("waiting", "local")
MISSING_PV = make_pvc("lost-pv", "", bound_pv="pv-gone", bind_completed=True, phase="Bound")


def _framework() -> tuple[Framework, Snapshot]:
    objects = ClusterObjects()
    objects.storage.add(
        make_class("local", WAIT, "kubernetes.io/no-provisioner"),
        BOUND,
        PINNED,
        UNBOUND,
        MISSING_PV,
        make_pv("pv-net", "", phase="Bound", claim=BOUND),
        make_pv(
            "pv-local", "", phase="Bound", claim=PINNED, node_affinity={HOSTNAME_LABEL: ["node-a"]}
        ),
    )
    snapshot = Snapshot.from_node_infos(
        node_infos([hostname_node("node-a"), hostname_node("node-b")])
    )
    deps = HandleDeps(snapshot=lambda: snapshot, client=RecordingClient(), cluster_objects=objects)
    registry = Registry()
    registry.register(PLUGIN_ENTRY)
    enabled = {point: [(NAME, 1)] for point in ("preFilter", "filter", "reserve", "preBind")}
    return Framework.build("default-scheduler", registry, enabled, {}, deps), snapshot


@pytest.mark.parametrize(
    ("claim", "row_path"),
    [
        pytest.param("bound", True, id="bound to a PV without node affinity: rows"),
        pytest.param("pinned", False, id="bound PV with node affinity: per node"),
        pytest.param("waiting", False, id="unbound WaitForFirstConsumer claim: per node"),
        pytest.param("lost-pv", False, id="bound to a missing PV: per node"),
    ],
)
def test_rows_only_when_no_node_can_differ(claim: str, row_path: bool) -> None:
    fwk, snapshot = _framework()
    plugin = fwk.plugins[NAME]
    assert isinstance(plugin, VolumeBinding)
    pod = make_pod("web", pvcs=[claim])
    state = CycleState()
    _, status, _ = fwk.run_pre_filter_plugins(state, pod, snapshot.list())
    if not status.is_success:
        assert not row_path  # rejected before Filter: nothing to compare
        return
    table = snapshot.node_table()
    rows = np.arange(len(table), dtype=np.intp)
    verdict = plugin.filter_rows(state, pod, table, rows)
    assert (verdict is not None) == row_path
    per_node = [fwk.run_filter_plugins(state, pod, info).is_success for info in snapshot.list()]
    if verdict is None:
        return
    assert verdict.passed.tolist() == per_node == [True, True]
    # Filtered by rows only, the binding cycle still finds nothing to write: all claims bound.
    state = CycleState()
    fwk.run_pre_filter_plugins(state, pod, snapshot.list())
    plugin.filter_rows(state, pod, table, rows)
    assert fwk.run_reserve_plugins_reserve(state, pod, "node-b").is_success
    assert asyncio.run(fwk.run_pre_bind_plugins(state, pod, "node-b")).is_success


@settings(max_examples=40, deadline=None)
@given(claims=st.lists(st.sampled_from(["bound", "pinned", "waiting", "lost-pv"]), unique=True))
def test_score_rows_equal_the_per_node_scores(claims: list[str]) -> None:
    """score_rows (StorageCapacityScoring on, by default) answers only where Filter left no
    volume the scorer reads on any node, and then as Score does on every node; whichever way
    Filter ran."""
    fwk, snapshot = _framework()
    plugin = fwk.plugins[NAME]
    assert isinstance(plugin, VolumeBinding)
    pod = make_pod("web", pvcs=claims)
    table = snapshot.node_table()
    rows = np.arange(len(table), dtype=np.intp)
    for by_rows in (False, True):
        state = CycleState()
        _, status = plugin.pre_filter(state, pod, snapshot.list())
        if status.is_success and not (by_rows and plugin.filter_rows(state, pod, table, rows)):
            for info in snapshot.list():
                plugin.filter(state, pod, info)
        assert plugin.pre_score(state, pod, snapshot.list()).is_success
        per_node = [plugin.score(state, pod, info) for info in snapshot.list()]
        assert all(status.is_success for _, status in per_node)
        got = plugin.score_rows(state, pod, table, rows)
        if got is not None:
            assert got.tolist() == [score for score, _ in per_node]
