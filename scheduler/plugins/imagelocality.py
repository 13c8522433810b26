"""ImageLocality (Score): favour nodes that already have the pod's container images.

Upstream: pkg/scheduler/framework/plugins/imagelocality/image_locality.go. Each image present on
the node contributes its size scaled by the fraction of all nodes that have it (so an image
everywhere does not pull pods together); the sum is clamped to [23Mi, 1000Mi x containers] and
mapped linearly onto [0, 100].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.api.objects import PodView
from scheduler.cache.node_table import IntArray, NodeTable
from scheduler.cache.rows import Rows
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    ScoreExtensions,
    SignFragment,
)
from scheduler.framework.registry import PluginEntry
from scheduler.framework.runtime import batch as signers
from scheduler.framework.status import Status

if TYPE_CHECKING:
    from scheduler.cache.node_info import ImageStateSummary, NodeInfo

NAME = "ImageLocality"
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def scaled_image_score(state: ImageStateSummary, total_num_nodes: int) -> int:
    spread = float(state.num_nodes) / float(total_num_nodes)
    return int(float(state.size) * spread)  # Go's int64() truncates toward zero, as int()


def sum_image_scores(
    images: Sequence[str], image_states: Mapping[str, ImageStateSummary], total_num_nodes: int
) -> int:
    total = 0
    for image in images:
        state = image_states.get(image)
        if state is not None:
            total += scaled_image_score(state, total_num_nodes)
    return total


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    # The numerator is 0 whenever max_threshold <= MIN_THRESHOLD (no containers).
    numerator = MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD)
    return numerator // (max_threshold - MIN_THRESHOLD) if numerator else 0


class ImageLocality:
    name = NAME

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Scoring reads the pod's images (upstream SignPod)."""
        return [signers.image_names_fragment(pod)], Status.OK

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def _total_nodes(self) -> int | None:
        if self._handle is None:
            return None
        return len(self._handle.snapshot().list())

    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]:
        total = self._total_nodes()
        if not total:
            return 0, _no_snapshot()
        return _node_score(pod, node_info, total), Status.OK

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        """Zero everywhere when no node has any of the pod's images; else per node."""
        total = self._total_nodes()
        if not total:
            return None
        counts = table.image_node_counts
        if not any(image in counts for image in pod.images):
            return np.zeros(len(rows), dtype=np.int64)
        infos = table.infos
        return np.fromiter(
            (_node_score(pod, infos[row], total) for row in rows.tolist()),
            dtype=np.int64,
            count=len(rows),
        )

    def score_extensions(self) -> ScoreExtensions | None:
        return None


def _node_score(pod: PodView, node_info: NodeInfo, total_num_nodes: int) -> int:
    images = pod.images  # init containers first, then containers; one entry per container
    if not node_info.image_states:
        return calculate_priority(0, len(images))
    return calculate_priority(
        sum_image_scores(images, node_info.image_states, total_num_nodes), len(images)
    )


def _no_snapshot() -> Status:
    return Status.error("ImageLocality needs the snapshot's nodes through the framework handle")


PLUGIN_ENTRY = PluginEntry(NAME, ImageLocality)
