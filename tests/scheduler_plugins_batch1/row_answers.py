"""A plugin's row methods asked about NodeInfos, in the per-node methods' terms, so that a test
can assert that the row fast path answers as the per-node specification does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from scheduler.api.objects import PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.node_table import NodeTable
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Status


def _table(infos: Sequence[NodeInfo]) -> tuple[NodeTable, Any]:
    return NodeTable(infos), np.arange(len(infos), dtype=np.intp)


def filter_rows_of(
    plugin: Any, state: CycleState, pod: PodView, infos: Sequence[NodeInfo]
) -> list[Status | None]:
    """`plugin.filter_rows` over a table of `infos`: None where a row passed, else its status."""
    table, rows = _table(infos)
    verdict = plugin.filter_rows(state, pod, table, rows)
    assert verdict is not None, "the plugin declined its row path"
    return [
        None if passed else verdict.reject(int(row))
        for row, passed in zip(rows.tolist(), verdict.passed.tolist(), strict=True)
    ]


def score_rows_of(
    plugin: Any, state: CycleState, pod: PodView, infos: Sequence[NodeInfo]
) -> list[int]:
    """`plugin.score_rows` over a table of `infos` (raw scores, before NormalizeScore); where
    the plugin declines the row path for this pod, the row pass scores it per node, as here."""
    table, rows = _table(infos)
    values = plugin.score_rows(state, pod, table, rows)
    if values is None:
        out = []
        for info in infos:
            value, status = plugin.score(state, pod, info)
            assert status.is_success
            out.append(value)
        return out
    return [int(value) for value in values.tolist()]


def normalize_rows_of(
    plugin: Any, state: CycleState, pod: PodView, raw: Sequence[int]
) -> list[int]:
    """`plugin.normalize_rows` of raw scores."""
    normalized = plugin.normalize_rows(state, pod, np.array(raw, dtype=np.int64))
    return [int(value) for value in normalized.tolist()]
