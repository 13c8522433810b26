"""bench/cycle_microbench.py, bench/parallelism_probe.py, bench/span_export_microbench.py and
bench/view_microbench.py: they run, and their figures say what they claim (the same hosts with
and without parallelism, the same feasible nodes serial and split over threads, a batch that
crosses unchanged)."""

from __future__ import annotations

import json
import zlib

import pytest

from bench import cycle_microbench, parallelism_probe, span_export_microbench, view_microbench
from observability.otlp_encoding import SpanEncoder
from observability.tracing import span_wire


@pytest.mark.parametrize("shape", sorted(cycle_microbench.SHAPES))
def test_cycle_microbench_places_every_pod_and_reports_cpu(
    shape: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cycle_microbench.main(
        [shape, "--nodes", "30", "--pods", "12", "--parallelism", "1,4", "--json"]
    )
    runs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["nodes"], r["pods"], r["parallelism"]) for r in runs] == [(30, 12, 1), (30, 12, 4)]
    assert all(r["cpu_per_pod_ms"] > 0 for r in runs)
    assert runs[0]["hosts_digest"] == runs[1]["hosts_digest"]


def test_daemonset_pods_land_on_the_node_each_is_pinned_to() -> None:
    run = cycle_microbench.run("daemonset", 5, 10)
    expected = " ".join(f"node-{index % 5}" for index in range(10))
    assert run["hosts_digest"] == zlib.crc32(expected.encode())


def test_parallelism_probe_finds_the_same_nodes_serial_and_in_threads() -> None:
    lines = parallelism_probe.probe("spread", 60, [1, 2], repeat=1)
    assert len(lines) == 2 and all("row pass" in line and "per-node pass" in line for line in lines)


def test_span_export_microbench_reports_each_process_share(
    capsys: pytest.CaptureFixture[str],
) -> None:
    span_export_microbench.main(["--attempts", "8", "--entries", "12", "--rounds", "1", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert (result["attempts"], result["entries"]) == (8, 12)
    assert all(result[key] > 0 for key in ("thread_encode_us", "process_handoff_us"))
    assert result["handoff_bytes_per_attempt"] > 0


def test_the_span_export_microbench_batch_crosses_unchanged() -> None:
    """What it measures is a real hand-off: the batch encodes alike after crossing."""
    spans = span_export_microbench.batch(4, 12)
    again = span_wire.loads(span_wire.dumps(spans))
    assert SpanEncoder().request(again) == SpanEncoder().request(spans)


def test_view_microbench_times_each_kind_of_event(capsys: pytest.CaptureFixture[str]) -> None:
    view_microbench.main(["--pods", "20", "--rounds", "1", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"decode_us", "new_alone_us", "new_pod_parser_us", "bound_update_us"}
    assert all(value > 0 for value in result.values())
