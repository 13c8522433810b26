"""The six policies' formulas and the fragmentation measure, as tables: the simulator's own test
vectors where it has them (hkust-adsl/kubernetes-scheduler-simulator
pkg/simulator/plugin/gpu_packing_score_test.go, pkg/utils/frag_test.go), else values worked
out by hand from its score functions."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.plugins.gpushare.draws import draws_below
from scheduler.plugins.gpushare.frag import FragMeasure, TypicalPod, task_frag, typical_pods
from scheduler.plugins.gpushare.gpus import GpuRequest
from scheduler.plugins.gpushare.scores import (
    affinity_tag,
    best_fit_gpu,
    best_fit_raw,
    dot_product_score,
    fgd_score,
    gpu_clustering_score,
    gpu_packing_score,
    random_gpu,
)


def req(cpu: int, milli: int, count: int, models: tuple[str, ...] = ()) -> GpuRequest:
    return GpuRequest(cpu, milli, count, frozenset(models))


@pytest.mark.parametrize(
    ("name", "left", "pod", "want"),
    [
        # gpu_packing_score_test.go
        ("case-2: a free GPU taken on a used node", (200, 1000, 1000, 500), req(100, 1000, 2), 48),
        ("case-3: idle 4-GPU node", (1000,) * 4, req(100, 1000, 2), 29),
        ("case-3: idle 8-GPU node", (1000,) * 8, req(100, 1000, 2), 25),
        ("case-1: only used GPUs", (200, 1000, 1000, 500), req(100, 200, 2), 93),
        ("CPU-only pod", (1000,) * 4, req(100, 0, 0), 0),
    ],
)
def test_gpu_packing(name: str, left: tuple[int, ...], pod: GpuRequest, want: int) -> None:
    assert gpu_packing_score(pod, left) == want


@pytest.mark.parametrize(
    ("name", "pod", "left", "tags", "want"),
    [
        # base = 25 * (8000 - Σleft) / 8000, integer division
        ("CPU-only pod", req(1000, 0, 0), (1000,) * 8, {}, 0),
        ("idle node", req(1000, 500, 1), (1000,) * 8, {}, 0 + 25),
        ("same tag only", req(1000, 500, 1), (500, 0, 1000, 1000), {"share-gpu": 2}, 17 + 75),
        ("same tag among others", req(1000, 500, 1), (500, 0), {"share-gpu": 1, "1-gpu": 1},
         23 + 50),
        ("other tags only", req(1000, 1000, 2), (500, 1000), {"share-gpu": 1}, 20),
    ],
)  # fmt: skip
def test_gpu_clustering(
    name: str, pod: GpuRequest, left: tuple[int, ...], tags: dict[str, int], want: int
) -> None:
    assert gpu_clustering_score(pod, left, tags) == want


@pytest.mark.parametrize(
    ("pod", "tag"),
    [(req(1, 0, 0), "no-gpu"), (req(1, 300, 1), "share-gpu"), (req(1, 1000, 1), "1-gpu"),
     (req(1, 1000, 4), "4-gpu")],
)  # fmt: skip
def test_affinity_tags(pod: GpuRequest, tag: str) -> None:
    assert affinity_tag(pod) == tag


@pytest.mark.parametrize(
    ("pod", "cpu_left", "left", "want"),
    [
        # 100 * (1 - ([c/128000, g/8000] . [pc/128000, pg/8000]) / 2), truncated
        (req(64000, 1000, 4), 128000, (1000,) * 8, int(100 * (1 - (0.5 + 0.5) / 2))),
        (req(32000, 500, 1), 64000, (1000, 500), int(100 * (1 - (0.125 + 1500 * 500 / 64e6) / 2))),
        (req(8000, 0, 0), 4000, (1000,), 0),  # not enough CPU
    ],
)
def test_dot_product(pod: GpuRequest, cpu_left: int, left: tuple[int, ...], want: int) -> None:
    assert dot_product_score(pod, cpu_left, left) == want


def test_best_fit_prefers_the_tightest_node() -> None:
    pod = req(8000, 1000, 1)
    tight = best_fit_raw(pod, 8000, (1000,))
    loose = best_fit_raw(pod, 96000, (1000,) * 8)
    assert tight == 100  # nothing left over
    assert loose == int(100 * (1 - (0.5 * 88000 / 128000 + 0.5 * 7000 / 8000)))
    assert tight > loose


@pytest.mark.parametrize(
    ("left", "milli", "want"),
    [((1000, 400, 700), 300, 1), ((1000, 400, 700), 500, 2), ((300, 300), 300, 0),
     ((200, 100), 300, None)],
)  # fmt: skip
def test_best_fit_gpu(left: tuple[int, ...], milli: int, want: int | None) -> None:
    assert best_fit_gpu(req(100, milli, 1), left) == want


def test_random_gpu_draws_only_gpus_that_fit() -> None:
    rng = random.Random(3)
    drawn = {random_gpu(req(100, 500, 1), (1000, 200, 600, 499), rng) for _ in range(200)}
    assert drawn == {0, 2}


# frag_test.go's typical pods, weights as there (percentages, not renormalised).
SIMULATOR_TYPICAL = [
    (6000, 465, 1, "", 9.33), (8000, 440, 1, "2080", 9.15), (8000, 475, 1, "T4", 8.76),
    (8000, 440, 1, "P100", 8.72), (2000, 465, 1, "", 8.68), (12000, 900, 1, "", 8.65),
    (4000, 900, 1, "", 8.43), (16000, 678, 1, "T4", 8.36), (8000, 500, 1, "", 8.29),
    (6000, 511, 1, "", 8.11), (14000, 1000, 2, "2080", 0.54), (4000, 1000, 1, "2080", 0.43),
    (32000, 1000, 2, "T4", 0.43), (16000, 1000, 1, "V100M16", 0.40), (64000, 1000, 2, "", 0.40),
    (10000, 1000, 2, "", 0.40), (11400, 1000, 1, "T4", 0.36), (16000, 1000, 1, "T4", 0.36),
    (4000, 1000, 2, "", 0.36), (14000, 1000, 2, "V100M16", 0.36), (8000, 1000, 4, "", 0.36),
    (16000, 1000, 2, "", 0.32), (2000, 1000, 1, "T4", 0.32), (6000, 1000, 1, "", 0.32),
    (4000, 1000, 1, "", 0.32), (5000, 1000, 1, "", 0.32), (32000, 1000, 4, "V100M16", 0.32),
    (32000, 1000, 2, "", 0.32), (24000, 1000, 8, "2080", 0.32), (40000, 1000, 4, "", 0.29),
    (32000, 1000, 8, "", 0.29), (32000, 1000, 1, "T4", 0.29), (16000, 1000, 1, "", 0.25),
    (7000, 1000, 1, "V100M16", 0.25), (24000, 1000, 1, "T4", 0.25),
]  # fmt: skip
SIMULATOR_TYPICAL_WITH_CPU = [
    (15700, 1000, 1, 28.69), (11900, 1000, 1, 18.93), (11400, 1000, 1, 12.27), (1000, 0, 0, 7.36),
    (18710, 1000, 1, 4.85), (8200, 1000, 1, 3.79), (16400, 1000, 1, 3.31), (9810, 1000, 1, 1.97),
    (15200, 1000, 1, 1.87), (11200, 1000, 1, 1.81), (14200, 1000, 1, 1.76), (12000, 0, 0, 1.65),
    (14900, 1000, 1, 1.39), (60200, 1000, 4, 1.23), (64200, 1000, 8, 1.07), (32200, 1000, 4, 1.01),
    (17400, 1000, 2, 0.91), (30200, 1000, 2, 0.69), (16000, 1000, 1, 0.64), (15000, 1000, 1, 0.59),
    (64000, 1000, 8, 0.53), (15000, 0, 0, 0.53), (11910, 1000, 1, 0.53), (120200, 1000, 8, 0.48),
    (11300, 1000, 1, 0.37), (30000, 1000, 2, 0.32), (9800, 1000, 1, 0.32), (8000, 1000, 1, 0.32),
    (2000, 1000, 1, 0.27), (2000, 80, 1, 0.27), (1000, 1000, 1, 0.27),
]  # fmt: skip


def _typical(rows: list[tuple[int, int, int, str, float]]) -> FragMeasure:
    return FragMeasure(
        [TypicalPod(req(c, m, n, (t,) if t else ()), w / 100) for c, m, n, t, w in rows]
    )


@pytest.mark.parametrize(
    ("name", "rows", "cpu_left", "left", "model", "want"),
    [
        # TestNodeGpuShareFragAmountScore
        ("4x1080 used", SIMULATOR_TYPICAL, 1000, (200, 1000, 1000, 500), "1080", 2566.62),
        ("4x1080 full", SIMULATOR_TYPICAL, 1000, (1000,) * 4, "1080", 3802.40),
        ("8x1080 full", SIMULATOR_TYPICAL, 1000, (1000,) * 8, "1080", 7604.80),
        ("lack CPU", SIMULATOR_TYPICAL[:1], 1000, (200, 1000, 1000, 500), "1080", 251.91),
        # TestNodeGpuShareFragAmountWithNonGpu
        ("8xP100 empty", [(*r[:3], "", r[3]) for r in SIMULATOR_TYPICAL_WITH_CPU], 64000,
         (1000,) * 8, "P100", 887.20),
        ("8xP100 halved", [(*r[:3], "", r[3]) for r in SIMULATOR_TYPICAL_WITH_CPU], 32000,
         (1000,) * 4 + (0,) * 4, "P100", 554.4),
    ],
)  # fmt: skip
def test_fragmentation_as_the_simulator(
    name: str,
    rows: list[tuple[int, int, int, str, float]],
    cpu_left: int,
    left: tuple[int, ...],
    model: str,
    want: float,
) -> None:
    assert _typical(rows).node(cpu_left, left, model) == pytest.approx(want, abs=0.01)


@pytest.mark.parametrize(
    ("shape", "cpu_left", "left", "model", "want"),
    [
        (req(1000, 0, 0), 64000, (1000, 300), "A10", 1300),  # CPU-only: no GPU usable
        (req(1000, 500, 1, ("T4",)), 64000, (1000, 300), "A10", 1300),  # model excluded
        (req(1000, 500, 1), 64000, (1000, 300), "A10", 300),  # fits: 300 stranded
        (req(1000, 500, 2), 64000, (1000, 300), "A10", 1300),  # lacks a GPU
        (req(99000, 500, 1), 64000, (1000, 300), "A10", 1300),  # lacks CPU
    ],
)
def test_task_fragmentation(
    shape: GpuRequest, cpu_left: int, left: tuple[int, ...], model: str, want: int
) -> None:
    assert task_frag(cpu_left, left, model, shape) == want


def test_typical_pods_cover_95_percent_by_popularity() -> None:
    shapes = [req(1000, 500, 1)] * 60 + [req(2000, 1000, 1)] * 36 + [req(4000, 0, 0)] * 4
    typical = typical_pods(shapes)
    # 60 % then 96 %: the second shape crosses 95 % and is the last one taken
    assert [t.shape for t in typical] == [req(1000, 500, 1), req(2000, 1000, 1)]
    assert [t.weight for t in typical] == pytest.approx([60 / 96, 36 / 96])


def test_fgd_picks_the_gpu_that_fragments_least() -> None:
    # Target workload: shares of 600. A 400 share on the GPU with 700 left (best fit's pick)
    # would strand its last 300; on the free GPU it leaves 600 and 700, both still usable:
    # FGD takes the free one (index 0), at sigmoid(0); the other would score sigmoid(-0.3).
    measure = FragMeasure([TypicalPod(req(1000, 600, 1), 1.0)])
    pod = req(1000, 400, 1)
    score, gpu = fgd_score(pod, 64000, (1000, 700), "A10", measure)
    assert (score, gpu) == (50, 0)
    assert best_fit_gpu(pod, (1000, 700)) == 1
    assert fgd_score(pod, 64000, (0, 700), "A10", measure) == (int(100 / (1 + math.exp(0.3))), 1)


def test_fgd_whole_gpu_takes_the_lowest_free_ones() -> None:
    measure = FragMeasure([TypicalPod(req(1000, 1000, 1), 1.0)])
    score, gpu = fgd_score(req(1000, 1000, 2), 64000, (1000, 1000, 1000), "A10", measure)
    assert gpu is None
    assert score == 50  # nothing stranded before or after: sigmoid(0)


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    bound=st.sampled_from([1, 2, 3, 100, 101, 128, 129, 1000, 2**31]),
    count=st.integers(0, 1500),
    earlier=st.integers(0, 5),
)
def test_draws_below_are_randrange_one_by_one(
    seed: int, bound: int, count: int, earlier: int
) -> None:
    """RandomFit's draws for a whole cluster at once (draws.py): the numbers `randrange`
    gives one by one, and the generator where those leave it."""
    batch, single = random.Random(seed), random.Random(seed)
    for rng in (batch, single):
        for _ in range(earlier):
            rng.random()
    drawn = draws_below(batch, bound, count).tolist()
    assert drawn == [single.randrange(bound) for _ in range(count)]
    assert batch.getstate() == single.getstate()


class _Counted(random.Random):
    pass


def test_draws_below_a_subclassed_generator_one_by_one() -> None:
    """A generator that may override its methods is asked `randrange` itself."""
    batch, single = _Counted(5), _Counted(5)
    assert draws_below(batch, 101, 50).tolist() == [single.randrange(101) for _ in range(50)]
