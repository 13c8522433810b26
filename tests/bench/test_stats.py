"""bench.stats: upstream's throughput sampling and percentiles, latency and histogram summaries."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.stats import (
    Checkpoint,
    LatencySummary,
    ThroughputSampler,
    ThroughputSummary,
    histogram_quantile,
    histogram_summary,
    nearest_rank,
    parse_histogram,
    segment_bounds,
    segment_size,
    subtract_buckets,
    summarize_latencies,
    summarize_throughput,
)
from bench.stats import flatness as judge_flatness


@pytest.mark.parametrize(
    ("values", "percent", "expected"),
    [
        ([5.0], 50, 5.0),
        ([5.0], 99, 5.0),
        ([1.0, 2.0], 50, 1.0),  # ceil(2*0.5)=1 -> first
        ([1.0, 2.0], 90, 2.0),
        ([float(i) for i in range(1, 11)], 50, 5.0),
        ([float(i) for i in range(1, 11)], 90, 9.0),
        ([float(i) for i in range(1, 11)], 99, 10.0),
        ([float(i) for i in range(1, 101)], 99, 99.0),
    ],
)
def test_nearest_rank_matches_upstreams_index(
    values: list[float], percent: float, expected: float
) -> None:
    assert nearest_rank(values, percent) == expected


def test_nearest_rank_refuses_empty() -> None:
    with pytest.raises(ValueError):
        nearest_rank([], 50)


@pytest.mark.parametrize(
    ("samples", "expected"),
    [
        ([], None),
        ([300.0], ThroughputSummary(300.0, 300.0, 300.0, 300.0)),
        ([400.0, 100.0, 300.0, 200.0], ThroughputSummary(250.0, 200.0, 400.0, 400.0)),
    ],
)
def test_summarize_throughput(samples: list[float], expected: ThroughputSummary | None) -> None:
    assert summarize_throughput(samples) == expected


@pytest.mark.parametrize(
    ("observations", "expected_samples"),
    [
        # nothing scheduled yet: no baseline, no samples
        ([(1.0, 0), (2.0, 0)], []),
        # the first tick with pods is the baseline only (upstream skips it as an outlier)
        ([(1.0, 50)], []),
        ([(1.0, 50), (2.0, 350), (3.0, 650)], [300.0, 300.0]),
        # a tick with no new pod is merged into the next: its rate repeated once per interval
        ([(1.0, 10), (2.0, 10), (3.0, 10), (4.0, 310)], [100.0, 100.0, 100.0]),
        # late ticks are measured by their real duration
        ([(0.0, 1), (1.5, 301)], [200.0]),
        # a sample needs some elapsed time
        ([(1.0, 1), (1.0, 5)], []),
    ],
)
def test_throughput_sampler_follows_upstreams_collector(
    observations: list[tuple[float, int]], expected_samples: list[float]
) -> None:
    sampler = ThroughputSampler()
    for now, scheduled in observations:
        sampler.observe(now, scheduled)
    assert sampler.samples == pytest.approx(expected_samples)


@given(st.lists(st.integers(min_value=0, max_value=500), min_size=1, max_size=60))
def test_sampler_accounts_for_every_pod_after_the_baseline(increments: list[int]) -> None:
    """Sum of samples (each 1 s long) equals the pods scheduled after the baseline, up to pods
    still pending in a trailing run of empty intervals (which upstream never records)."""
    sampler = ThroughputSampler()
    total = 0
    baseline: int | None = None
    last_recorded = 0
    for second, new in enumerate(increments, start=1):
        total += new
        sampler.observe(float(second), total)
        if total and baseline is None:
            baseline = total
            last_recorded = total
        elif baseline is not None and total != last_recorded:
            last_recorded = total
    if baseline is None:
        assert sampler.samples == []
    else:
        assert math.isclose(sum(sampler.samples), last_recorded - baseline, abs_tol=1e-6)


@pytest.mark.parametrize(
    ("latencies", "expected"),
    [
        ([], None),
        ([0.5], LatencySummary(0.5, 0.5, 0.5)),
        ([float(i) / 100 for i in range(100, 0, -1)], LatencySummary(0.5, 0.9, 0.99)),
    ],
)
def test_summarize_latencies(latencies: list[float], expected: LatencySummary | None) -> None:
    assert summarize_latencies(latencies) == expected


METRICS = """\
# HELP scheduler_pod_scheduling_sli_duration_seconds E2e latency
# TYPE scheduler_pod_scheduling_sli_duration_seconds histogram
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="1",le="0.01"} 10.0
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="1",le="0.02"} 60.0
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="1",le="0.04"} 90.0
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="1",le="+Inf"} 90.0
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="2",le="0.01"} 0.0
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="2",le="0.02"} 0.0
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="2",le="0.04"} 5.0
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="2",le="+Inf"} 10.0
scheduler_pod_scheduling_sli_duration_seconds_count{attempts="1"} 90.0
scheduler_pod_scheduling_attempts_bucket{le="1.0"} 3.0
"""


def test_parse_histogram_sums_series_and_ignores_other_metrics() -> None:
    buckets = parse_histogram(METRICS, "scheduler_pod_scheduling_sli_duration_seconds")
    assert buckets == {0.01: 10.0, 0.02: 60.0, 0.04: 95.0, math.inf: 100.0}
    assert parse_histogram(METRICS, "missing_metric") == {}


@pytest.mark.parametrize(
    ("quantile", "expected"),
    [
        (0.05, 0.005),  # inside the first bucket, interpolated from 0
        (0.5, 0.018),  # 50th of 100: 40 into the (0.01, 0.02] bucket of 50
        (0.9, 0.037143),  # (90-60)/35 of the way through (0.02, 0.04]
        (0.99, 0.04),  # in +Inf: the highest finite bound, as PromQL answers
    ],
)
def test_histogram_quantile_interpolates_like_promql(quantile: float, expected: float) -> None:
    buckets = parse_histogram(METRICS, "scheduler_pod_scheduling_sli_duration_seconds")
    assert histogram_quantile(quantile, buckets) == pytest.approx(expected, rel=1e-3)


def test_histogram_of_a_phase_is_the_difference_of_two_scrapes() -> None:
    before = {0.01: 10.0, 0.02: 10.0, math.inf: 10.0}
    after = {0.01: 10.0, 0.02: 110.0, math.inf: 110.0}
    phase = subtract_buckets(after, before)
    assert phase == {0.01: 0.0, 0.02: 100.0, math.inf: 100.0}
    summary = histogram_summary(phase)
    assert summary is not None
    assert (summary.p50, summary.p90, summary.p99) == pytest.approx((0.015, 0.019, 0.0199))


@pytest.mark.parametrize("buckets", [{}, {0.1: 0.0, math.inf: 0.0}])
def test_histogram_without_observations_has_no_summary(buckets: dict[float, float]) -> None:
    assert histogram_quantile(0.5, buckets) is None
    assert histogram_summary(buckets) is None


# ---- flatness (issue 22) ----------------------------------------------------------------------


def _steady(
    pods: int, rate: float, cpu_ms: float, *, slow_after: int | None = None, slow_rate: float = 0
) -> tuple[list[Checkpoint], list[float], list[int]]:
    """Checkpoints and samples of a run binding `rate` pods/s at `cpu_ms` per pod, dropping to
    `slow_rate` pods/s at 5x the CPU once `slow_after` pods are bound."""
    checkpoints = [Checkpoint(0.0, 0, 0.0)]
    samples: list[float] = []
    at: list[int] = []
    scheduled, cpu, second = 0, 0.0, 0.0
    while scheduled < pods:
        slow = slow_after is not None and scheduled >= slow_after
        new = min(int(slow_rate if slow else rate), pods - scheduled)
        cpu += new * (cpu_ms * (5 if slow else 1)) / 1000
        scheduled += new
        second += 1
        checkpoints.append(Checkpoint(second, scheduled, cpu))
        samples.append(float(new))
        at.append(scheduled)
    return checkpoints, samples, at


@pytest.mark.parametrize(
    ("measured", "size"), [(200, 40), (10_000, 2000), (19_999, 4000), (50_000, 10_000)]
)
def test_segment_size(measured: int, size: int) -> None:
    assert segment_size(measured) == size


def test_steady_run_is_flat() -> None:
    checkpoints, samples, at = _steady(100_000, 400, 2.0)
    result = judge_flatness(checkpoints, samples, at, 10_000)
    assert [(s.first_pod, s.last_pod) for s in result.segments] == [
        (i * 10_000, (i + 1) * 10_000) for i in range(10)
    ]
    for segment in result.segments:
        assert segment.cpu_per_pod_ms == pytest.approx(2.0)
        assert segment.seconds == pytest.approx(25.0)
        assert segment.throughput is not None and segment.throughput.p50 == 400
    assert result.cpu_ratio == pytest.approx(1.0)
    assert result.p50_ratio == pytest.approx(1.0)
    assert result.flat is True


def test_a_cliff_fails_both_criteria() -> None:
    """The issue's cliff: 330 pods/s, then 28 pods/s from 40,000 pods on."""
    checkpoints, samples, at = _steady(50_000, 330, 3.0, slow_after=40_000, slow_rate=28)
    result = judge_flatness(checkpoints, samples, at, 10_000)
    assert result.cpu_ratio == pytest.approx(5.0, rel=0.05)
    assert result.p50_ratio is not None and result.p50_ratio < 0.8
    assert result.flat is False


def test_cpu_growth_just_past_the_tolerance_is_not_flat() -> None:
    checkpoints = [
        Checkpoint(0.0, 0, 0.0),
        Checkpoint(10.0, 1000, 1.0),
        Checkpoint(20.0, 2000, 2.25),
    ]
    result = judge_flatness(checkpoints, [100.0] * 20, [100 * i for i in range(1, 21)], 1000)
    assert result.cpu_ratio == pytest.approx(1.25)
    assert result.p50_ratio == pytest.approx(1.0)
    assert result.flat is False
    within = [Checkpoint(0.0, 0, 0.0), Checkpoint(10.0, 1000, 1.0), Checkpoint(20.0, 2000, 2.15)]
    assert judge_flatness(within, [100.0] * 20, [100 * i for i in range(1, 21)], 1000).flat


def test_throughput_p50_far_from_the_average_is_not_flat() -> None:
    """Same CPU per pod throughout, but half the seconds bind almost nothing (e.g. the API
    server stalls): the p50 is far from the average."""
    checkpoints = [Checkpoint(0.0, 0, 0.0)]
    samples: list[float] = []
    at: list[int] = []
    scheduled = 0
    for second in range(1, 101):
        new = 10 if second % 2 else 190
        scheduled += new
        checkpoints.append(Checkpoint(float(second), scheduled, scheduled / 1000))
        samples.append(float(new))
        at.append(scheduled)
    result = judge_flatness(checkpoints, samples, at, 2000)
    assert result.cpu_ratio == pytest.approx(1.0)
    assert result.p50_ratio == pytest.approx(0.1)
    assert result.flat is False


def test_segment_boundaries_are_interpolated_between_ticks() -> None:
    """A boundary between two ticks takes the CPU time in proportion to the pods bound."""
    checkpoints = [Checkpoint(0.0, 0, 0.0), Checkpoint(1.0, 150, 1.5), Checkpoint(2.0, 200, 3.5)]
    result = judge_flatness(checkpoints, [150.0, 50.0], [150, 200], 100)
    first, second = result.segments
    assert first.cpu_per_pod_ms == pytest.approx(10.0)  # 100 pods at 10 ms until 1.0 s
    assert second.cpu_per_pod_ms == pytest.approx((3.5 - 1.0) / 100 * 1000)
    assert first.seconds == pytest.approx(2 / 3)
    assert result.segments[-1].last_pod == 200


def test_verdict_cannot_be_told_without_cpu_or_with_one_segment() -> None:
    no_cpu = [Checkpoint(0.0, 0, None), Checkpoint(1.0, 100, None), Checkpoint(2.0, 200, None)]
    result = judge_flatness(no_cpu, [100.0, 100.0], [100, 200], 100)
    assert result.flat is None and result.segments[0].cpu_per_pod_ms is None
    assert result.undecided_reason == "no CPU readings of the scheduler"
    one = [Checkpoint(0.0, 0, 0.0), Checkpoint(1.0, 100, 1.0)]
    assert judge_flatness(one, [100.0], [100], 100).flat is None
    assert judge_flatness(one, [100.0], [100], 100).undecided_reason.startswith("fewer than two")
    # Two segments in under a second: no per-second sample to compare the p50 with.
    fast = [Checkpoint(0.0, 0, 0.0), Checkpoint(0.4, 200, 0.2)]
    quick = judge_flatness(fast, [], [], 100)
    assert quick.flat is None and quick.undecided_reason.startswith("no per-second throughput")
    assert judge_flatness([Checkpoint(0.0, 0, 0.0)], [], [], 100).segments == ()


def _created_then_drained(
    pods: int, bound_while_creating: int, rate: float, cpu_ms: float, drain_rate: float
) -> tuple[list[Checkpoint], list[float], list[int]]:
    """A steady run while pods are created; once creation stops, the backlog is drained at
    `drain_rate` pods/s and half the CPU per pod (no create requests to watch any more)."""
    checkpoints = [Checkpoint(0.0, 0, 0.0)]
    samples: list[float] = []
    at: list[int] = []
    scheduled, cpu, second = 0, 0.0, 0.0
    while scheduled < pods:
        draining = scheduled >= bound_while_creating
        limit = pods if draining else bound_while_creating
        new = min(int(drain_rate if draining else rate), limit - scheduled)
        cpu += new * (cpu_ms / 2 if draining else cpu_ms) / 1000
        scheduled += new
        second += 1
        checkpoints.append(Checkpoint(second, scheduled, cpu))
        samples.append(float(new))
        at.append(scheduled)
    return checkpoints, samples, at


def test_the_drain_after_creation_is_reported_but_not_judged() -> None:
    """SchedulingBasic/5000Nodes_100000Pods: 93,000 pods bound while creating at 400/s, then
    the backlog drains at 1500/s: the drain alone would fail both criteria."""
    checkpoints, samples, at = _created_then_drained(100_000, 93_000, 400, 2.0, 1500)
    everything = judge_flatness(checkpoints, samples, at, 10_000)
    assert everything.flat is False and everything.drain is None
    result = judge_flatness(checkpoints, samples, at, 10_000, bound_while_creating=93_000)
    assert [(s.first_pod, s.last_pod) for s in result.judged] == [
        *((i * 10_000, (i + 1) * 10_000) for i in range(8)),
        (80_000, 93_000),  # 3,000 pods are too few for a segment of their own
    ]
    drain = result.drain
    assert drain is not None and (drain.first_pod, drain.last_pod) == (93_000, 100_000)
    assert drain.cpu_per_pod_ms == pytest.approx(1.0)
    assert drain.throughput is not None and drain.throughput.p50 == 1500
    assert result.segments[-1] is drain and len(result.segments) == 10
    assert result.cpu_ratio == pytest.approx(1.0)
    assert result.p50_ratio == pytest.approx(1.0, abs=0.01)  # the last 200-pod second
    assert result.flat is True
    doc = result.to_json()
    assert doc["bound_while_creating"] == 93_000
    assert [s["drain"] for s in doc["segments"]] == [False] * 9 + [True]  # type: ignore[index]


def test_a_cliff_while_creating_is_still_not_flat() -> None:
    """The drain is left out, not the pods bound while the load lasted."""
    checkpoints, samples, at = _steady(50_000, 330, 3.0, slow_after=40_000, slow_rate=28)
    result = judge_flatness(checkpoints, samples, at, 10_000, bound_while_creating=49_000)
    assert result.drain is not None and result.drain.first_pod == 49_000
    assert result.cpu_ratio == pytest.approx(5.0, rel=0.05)
    assert result.flat is False


def test_no_pod_bound_while_creating_cannot_be_told() -> None:
    checkpoints, samples, at = _steady(1000, 100, 1.0)
    result = judge_flatness(checkpoints, samples, at, 200, bound_while_creating=0)
    assert result.judged == () and result.flat is None
    assert result.drain is not None and (result.drain.first_pod, result.drain.last_pod) == (
        0,
        1000,
    )


@pytest.mark.parametrize(
    ("pods", "size", "bounds"),
    [
        (0, 100, [0]),
        (100, 100, [0, 100]),
        (149, 100, [0, 149]),  # one short piece on its own stays
        (230, 100, [0, 100, 230]),  # 30 pods join the segment before
        (260, 100, [0, 100, 200, 260]),
    ],
)
def test_segment_bounds(pods: int, size: int, bounds: list[int]) -> None:
    assert segment_bounds(pods, size) == bounds


def test_sampler_notes_the_pods_bound_at_each_sample() -> None:
    sampler = ThroughputSampler()
    for second, scheduled in enumerate([5, 10, 10, 30]):
        sampler.observe(float(second), scheduled)
    assert sampler.samples == [5.0, 10.0, 10.0]
    assert sampler.scheduled_at == [10, 30, 30]


def test_quantiles_are_every_percent_by_nearest_rank() -> None:
    from bench.stats import quantiles

    values = [float(v) for v in range(1, 201)]  # 1..200
    q = quantiles(values)
    assert len(q) == 101
    assert (q[0], q[50], q[99], q[100]) == (1.0, 100.0, 198.0, 200.0)
    assert q == sorted(q)
    assert quantiles([]) == []
