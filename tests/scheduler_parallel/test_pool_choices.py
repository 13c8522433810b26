"""Which cycles the filter workers may take, and how many workers `parallelism` asks for.
No worker process starts here."""

from __future__ import annotations

import argparse

import pytest

from scheduler.app.commands.run_flags import add_arguments
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.interface import CycleState
from scheduler.parallel.pool import MEASURE_EVERY, MIN_SAMPLES, FilterPool, filter_workers_for
from scheduler.testing import MakePod, make_node
from tests.scheduler_parallel.conftest import default_profiles


@pytest.mark.parametrize(
    ("parallelism", "cores", "workers"),
    [(16, 1, 0), (1, 16, 0), (16, 2, 1), (2, 16, 1), (4, 16, 3), (16, 16, 15)],
)
def test_workers_for_parallelism(parallelism: int, cores: int, workers: int) -> None:
    assert filter_workers_for(parallelism, cores) == workers


@pytest.mark.parametrize(("value", "error"), [("-1", "must be 0 or more"), ("nan", "0 or more"),
                                              ("x", "not a number")])  # fmt: skip
def test_fanout_threshold_flag_refuses_bad_values(
    value: str, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--filter-fanout-min-ms", value])
    assert "--filter-fanout-min-ms" in capsys.readouterr().err


def _pool_and_state(pod_builder: MakePod) -> tuple[FilterPool, object, CycleState, object]:
    snapshot = Snapshot()
    profiles = default_profiles(snapshot)
    pool = FilterPool(1)
    pool.cache.add_node(make_node("n1", {"cpu": "4", "memory": "8Gi", "pods": "10"}))
    pool.cache.update_snapshot(snapshot)
    pool.attach(lambda: profiles, snapshot)
    fwk = profiles["default-scheduler"].framework
    pod = pod_builder.obj()
    state = CycleState()
    fwk.run_pre_filter_plugins(state, pod, snapshot.list())
    return pool, fwk, state, pod


def _base() -> MakePod:
    return MakePod().name("p").namespace("default").container({"cpu": "100m"})


@pytest.mark.parametrize(
    ("pod", "eligible"),
    [
        (_base(), True),
        (_base().pod_anti_affinity_in("app", "kubernetes.io/hostname", ["x"]), True),
        (_base().container({"example.com/gpu": "1"}), False),  # extended: DRA may serve it
        (_base().pvc("claim"), False),  # the volume plugins read PVCs the workers lack
    ],
)
def test_only_cycles_the_replicas_can_answer_go_out(pod: MakePod, eligible: bool) -> None:
    pool, fwk, state, view = _pool_and_state(pod)
    table = pool._snapshot.node_table()  # type: ignore[union-attr]
    assert (pool.rows_filter(fwk, state, view, table) is not None) is eligible  # type: ignore[arg-type]
    pool.close()


def test_sampled_traced_or_stale_cycles_stay_in_process() -> None:
    pool, fwk, state, view = _pool_and_state(_base())
    table = pool._snapshot.node_table()  # type: ignore[union-attr]
    state.record_plugin_metrics = True
    assert pool.rows_filter(fwk, state, view, table) is None  # type: ignore[arg-type]
    state.record_plugin_metrics = False
    pool.cache.changes = []  # as while workers run: a change after the snapshot is seen
    pool.cache.add_node(make_node("n2", {"cpu": "4"}))
    assert pool.rows_filter(fwk, state, view, table) is None  # type: ignore[arg-type]
    pool.close()


def test_one_slow_pass_does_not_make_a_plugin_set_look_expensive() -> None:
    """A pass that a garbage collection landed in (40 times the others) moves the estimate by
    at most a bounded step, not over the split threshold; passes that stay dear raise it."""
    pool = FilterPool(1)
    key = (0, frozenset({"NodeResourcesFit"}))
    for _ in range(4):
        pool.learn(key, 5000, 0.0015)  # 1.5 ms over 5000 rows
    steady = pool.estimate(key)
    assert steady is not None
    pool.learn(key, 5000, 0.060)  # one 60 ms pass
    once = pool.estimate(key)
    assert once is not None and once * 5000 < pool.min_seconds
    for _ in range(10):
        pool.learn(key, 5000, 0.060)
    assert (pool.estimate(key) or 0.0) * 5000 > pool.min_seconds


def test_passes_are_measured_until_an_estimate_counts_then_one_in_sixteen() -> None:
    """Reading the thread's CPU clock is a system call: once the estimate counts, only every
    MEASURE_EVERY-th in-process pass is timed."""
    pool = FilterPool(1)
    key = (0, frozenset({"NodeResourcesFit"}))
    measured = []
    for index in range(1, 3 * MEASURE_EVERY + 1):
        if pool.measures(key):
            measured.append(index)
            pool.learn(key, 5000, 0.0015)
    assert measured[:MIN_SAMPLES] == list(range(1, MIN_SAMPLES + 1))
    assert measured[MIN_SAMPLES:] == [MEASURE_EVERY, 2 * MEASURE_EVERY, 3 * MEASURE_EVERY]
    assert pool.estimate(key) is not None
