"""Taint helpers; cases after upstream's component-helpers/scheduling/corev1/helpers_test.go
(TestFindMatchingUntoleratedTaint) and core/v1 toleration_test.go."""

from __future__ import annotations

import pytest

from scheduler.api.objects import Taint, Toleration
from scheduler.api.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    find_matching_untolerated_taint,
    tolerations_tolerate_taint,
)

T = Taint("dedicated", "user1", NO_SCHEDULE)


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        (Toleration("dedicated", "Equal", "user1", NO_SCHEDULE), True),
        (Toleration("dedicated", "Equal", "user2", NO_SCHEDULE), False),
        (Toleration("dedicated", "Exists", "", NO_SCHEDULE), True),
        (Toleration("dedicated", "Exists", "", ""), True),  # empty effect: every effect
        (Toleration("dedicated", "Exists", "", NO_EXECUTE), False),
        (Toleration("", "Exists", "", ""), True),  # tolerates everything
        (Toleration("other", "Exists", "", ""), False),
        (Toleration("dedicated", "", "user1", ""), True),  # operator defaults to Equal
        (Toleration("dedicated", "Bogus", "user1", ""), False),
    ],
)
def test_tolerates(toleration: Toleration, expected: bool) -> None:
    assert tolerations_tolerate_taint([toleration], T) is expected


NO_SCHED = Taint("a", "1", NO_SCHEDULE)
PREFER = Taint("b", "2", PREFER_NO_SCHEDULE)
EXEC = Taint("c", "3", NO_EXECUTE)


@pytest.mark.parametrize(
    ("taints", "tolerations", "effects", "expected"),
    [
        ((), (), None, None),
        ((NO_SCHED,), (), None, NO_SCHED),
        ((PREFER, NO_SCHED), (), {NO_SCHEDULE, NO_EXECUTE}, NO_SCHED),
        ((PREFER,), (), {NO_SCHEDULE, NO_EXECUTE}, None),
        ((NO_SCHED, EXEC), (Toleration("a", "Exists", "", ""),), None, EXEC),
        ((NO_SCHED, EXEC), (Toleration("", "Exists", "", ""),), None, None),
        ((NO_SCHED, EXEC), (Toleration("a", "Equal", "2", ""),), None, NO_SCHED),
    ],
)
def test_find_matching_untolerated_taint(
    taints: tuple[Taint, ...],
    tolerations: tuple[Toleration, ...],
    effects: set[str] | None,
    expected: Taint | None,
) -> None:
    assert find_matching_untolerated_taint(taints, tolerations, effects) == expected
