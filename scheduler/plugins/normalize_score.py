"""Upstream's helper.DefaultNormalizeScore (plugins/helper/normalize_score.go).

Scales scores in place so the highest becomes `max_priority` (integer arithmetic, truncating
as Go does; scores are never negative here), optionally reversed so that the lowest raw score
wins. Shared by NodeAffinity and TaintToleration.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.framework.interface import NodeScore
from scheduler.framework.status import Status


def default_normalize_score(
    max_priority: int, reverse: bool, scores: Sequence[NodeScore]
) -> Status:
    max_count = 0
    for node_score in scores:
        if node_score.score > max_count:
            max_count = node_score.score
    if max_count == 0:
        if reverse:
            for node_score in scores:
                node_score.score = max_priority
        return Status.OK
    for node_score in scores:
        score = max_priority * node_score.score // max_count
        node_score.score = max_priority - score if reverse else score
    return Status.OK
