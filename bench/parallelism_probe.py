"""Would threads make Filter faster? One Filter pass over every node, serial and split in chunks
over a thread pool, for the two ways aiosched filters: the row pass (NumPy over the NodeTable)
and the per-node pass (each plugin's Python `filter` on each NodeInfo).

This is the measurement behind `parallelism` having no effect: on CPython with the GIL, the
per-node pass holds the GIL throughout, and the row pass's arrays (a few thousand rows) are too
small for NumPy's GIL release to outweigh handing chunks to threads.

    .venv/bin/python -m bench.parallelism_probe [--nodes 5000] [--threads 1,2,4]

Wall time per pass, best of --repeat; the same feasible nodes are checked for every split.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import numpy as np

from bench import cycle_microbench as micro
from scheduler.cache.node_info import NodeInfo
from scheduler.cycle.algorithm import StartIndex, schedule_pod
from scheduler.framework.interface import CycleState
from scheduler.testing import build_framework


def _cycle(
    fwk: Any, state: CycleState, pod: Any, snapshot: Any, start: StartIndex, cycle: int
) -> Any:
    return schedule_pod(
        fwk, state, pod, snapshot, percentage_of_nodes_to_score=None, next_start_index=start,
        rng=random.Random(1), cycle=cycle,
    )  # fmt: skip


def _best(run: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - began)
    return best


def probe(shape: str, nodes: int, threads: list[int], repeat: int) -> list[str]:
    cache, snapshot = micro.build_cache(nodes)
    fwk = build_framework(micro.PLUGINS, micro._deps(snapshot, 1), weights=micro.WEIGHTS)
    start = StartIndex()
    for index in range(200):  # some pods placed, so the plugins have something to count
        pod = micro.SHAPES[shape](index, nodes)
        cache.update_snapshot(snapshot)
        result = micro.drive(_cycle(fwk, CycleState(), pod, snapshot, start, index + 1))
        cache.assume_pod(pod.with_node(result.suggested_host))
    cache.update_snapshot(snapshot)
    pod = micro.SHAPES[shape](200, nodes)
    state = CycleState()
    micro.drive(_cycle(fwk, state, pod, snapshot, StartIndex(), 201))
    table = snapshot.node_table()
    infos = list(snapshot.node_info_list)
    all_rows = np.arange(len(table), dtype=np.intp)

    def rows_pass(chunk: np.ndarray) -> np.ndarray:
        alive, _rejections = fwk.run_filter_plugins_rows(state, pod, table, chunk)
        return chunk[alive]

    def nodes_pass(chunk: Sequence[NodeInfo]) -> list[str]:
        return [i.node_name for i in chunk if fwk.run_filter_plugins(state, pod, i).is_success]

    def rows_in_threads(pool: ThreadPoolExecutor, chunks: list[Any]) -> list[Any]:
        return list(pool.map(rows_pass, chunks))

    def nodes_in_threads(pool: ThreadPoolExecutor, chunks: list[Any]) -> list[Any]:
        return list(pool.map(nodes_pass, chunks))

    lines = []
    serial_rows = rows_pass(all_rows)
    serial_nodes = nodes_pass(infos)
    for count in threads:
        row_chunks = np.array_split(all_rows, count)
        size = -(-len(infos) // count)
        node_chunks = [infos[i : i + size] for i in range(0, len(infos), size)]
        with ThreadPoolExecutor(count) as pool:
            got_rows = np.concatenate(list(pool.map(rows_pass, row_chunks)))
            got_nodes = [n for part in pool.map(nodes_pass, node_chunks) for n in part]
            assert np.array_equal(got_rows, serial_rows) and got_nodes == serial_nodes
            if count == 1:
                row_s = _best(lambda: rows_pass(all_rows), repeat)
                node_s = _best(lambda: nodes_pass(infos), repeat)
            else:
                row_s = _best(partial(rows_in_threads, pool, row_chunks), repeat)
                node_s = _best(partial(nodes_in_threads, pool, node_chunks), repeat)
        lines.append(
            f"{shape:13} {nodes:5} nodes  threads {count}:  row pass {row_s * 1e3:7.3f} ms  "
            f"per-node pass {node_s * 1e3:8.3f} ms  ({len(serial_rows)} feasible)"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--threads", type=micro._ints, default=[1, 2, 4])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--shapes", default="basic,spread,anti-affinity")
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        for line in probe(shape, args.nodes, args.threads, args.repeat):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
