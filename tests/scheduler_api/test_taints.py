"""Taint helpers; cases after upstream's component-helpers/scheduling/corev1/helpers_test.go
(TestFindMatchingUntoleratedTaint) and core/v1 toleration_test.go."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apimachinery.decimal_int import compare_numeric_values
from kubesim.controllers.common import tolerates as kubesim_tolerates
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


# The Lt / Gt rows of core/v1 toleration_test.go (TestTolerationToleratesTaint), each run with
# TaintTolerationComparisonOperators at the value upstream's row sets and, for the comparison
# rows, also with the gate off, where an Lt / Gt toleration tolerates nothing.
SLA = "node.kubernetes.io/sla"
TOLERATES_TAINT_CASES: list[tuple[str, Toleration, Taint, bool]] = [
    (
        "Gt, taint value less than toleration value",
        Toleration(SLA, "Gt", "950", NO_SCHEDULE),
        Taint(SLA, "800", NO_SCHEDULE),
        False,
    ),
    (
        "Gt, taint value greater than toleration value",
        Toleration(SLA, "Gt", "750", NO_SCHEDULE),
        Taint(SLA, "950", NO_SCHEDULE),
        True,
    ),
    (
        "Lt, taint value greater than toleration value",
        Toleration(SLA, "Lt", "800", NO_SCHEDULE),
        Taint(SLA, "950", NO_SCHEDULE),
        False,
    ),
    (
        "Lt, taint value less than toleration value",
        Toleration(SLA, "Lt", "950", NO_SCHEDULE),
        Taint(SLA, "800", NO_SCHEDULE),
        True,
    ),
    (
        "Gt, equal numeric values",
        Toleration(SLA, "Gt", "950", NO_SCHEDULE),
        Taint(SLA, "950", NO_SCHEDULE),
        False,
    ),
    (
        "Gt, non-numeric taint value",
        Toleration(SLA, "Gt", "950", NO_SCHEDULE),
        Taint(SLA, "high", NO_SCHEDULE),
        False,
    ),
    (
        "Gt, negative values, taint below the threshold",
        Toleration("test-key", "Gt", "-100", NO_SCHEDULE),
        Taint("test-key", "-200", NO_SCHEDULE),
        False,
    ),
    (
        "Gt, large int64 threshold",
        Toleration("test-key", "Gt", "9223372036854775806", NO_SCHEDULE),
        Taint("test-key", "100", NO_SCHEDULE),
        False,
    ),
    # Not in upstream's table: the key and effect still have to match.
    (
        "Gt, other key",
        Toleration("other", "Gt", "1", NO_SCHEDULE),
        Taint(SLA, "950", NO_SCHEDULE),
        False,
    ),
    (
        "Lt, empty effect matches every effect",
        Toleration(SLA, "Lt", "950", ""),
        Taint(SLA, "800", NO_EXECUTE),
        True,
    ),
]


@pytest.mark.parametrize(
    ("name", "toleration", "taint", "expected"),
    TOLERATES_TAINT_CASES,
    ids=[c[0] for c in TOLERATES_TAINT_CASES],
)
@pytest.mark.parametrize("gate", [True, False], ids=["gate-on", "gate-off"])
def test_comparison_operators(
    name: str, toleration: Toleration, taint: Taint, expected: bool, gate: bool
) -> None:
    assert toleration.tolerates(taint, gate) is (expected and gate)
    assert tolerations_tolerate_taint([toleration], taint, gate) is (expected and gate)
    untolerated = find_matching_untolerated_taint([taint], [toleration], None, gate)
    assert (untolerated is None) is (expected and gate)


# core/v1 toleration_test.go, TestCompareNumericValues: (toleration value, taint value,
# operator, expected).
COMPARE_CASES: list[tuple[str, str, str, str, bool]] = [
    ("Gt, taint greater", "100", "200", "Gt", True),
    ("Gt, taint less", "200", "100", "Gt", False),
    ("Gt, equal", "100", "100", "Gt", False),
    ("Gt, negative numbers, taint greater", "-100", "-50", "Gt", True),
    ("Gt, negative numbers, taint less", "-50", "-100", "Gt", False),
    ("Gt, zero and positive", "0", "1", "Gt", True),
    ("Gt, large int64 values", "9223372036854775806", "9223372036854775807", "Gt", True),
    ("Lt, taint less", "200", "100", "Lt", True),
    ("Lt, taint greater", "100", "200", "Lt", False),
    ("Lt, equal", "100", "100", "Lt", False),
    ("Lt, negative numbers, taint less", "-50", "-100", "Lt", True),
    ("Lt, negative numbers, taint greater", "-100", "-50", "Lt", False),
    ("Lt, zero and negative", "0", "-1", "Lt", True),
    ("Gt, non-numeric toleration value", "abc", "100", "Gt", False),
    ("Gt, empty toleration value", "", "100", "Gt", False),
    ("Gt, toleration value with a leading zero", "0100", "200", "Gt", False),
    ("Gt, toleration value with a plus sign", "+100", "200", "Gt", False),
    ("Gt, floating-point toleration value", "100.5", "200", "Gt", False),
    ("Gt, toleration value just a minus sign", "-", "100", "Gt", False),
    ("Gt, non-numeric taint value", "100", "xyz", "Gt", False),
    ("Gt, empty taint value", "100", "", "Gt", False),
    ("Gt, taint value with a leading zero", "100", "0200", "Gt", False),
    ("Lt, taint value with a plus sign", "100", "+200", "Lt", False),
    ("Lt, taint value with spaces", "100", " 200 ", "Lt", False),
    ("Equal is no numeric comparison", "100", "100", "Equal", False),
    ("Exists is no numeric comparison", "100", "100", "Exists", False),
    ("Gt, both zero", "0", "0", "Gt", False),
    ("Lt, both zero", "0", "0", "Lt", False),
    ("Gt, max int64 as taint", "0", "9223372036854775807", "Gt", True),
    ("Lt, min int64 as taint", "0", "-9223372036854775808", "Lt", True),
    # Not in upstream's table: strconv.ParseInt's range and "-0", which IsDecimalInteger
    # refuses.
    ("Gt, taint value past int64", "0", "9223372036854775808", "Gt", False),
    ("Lt, taint value below int64", "0", "-9223372036854775809", "Lt", False),
    ("Lt, toleration value -0", "-0", "-1", "Lt", False),
]


@pytest.mark.parametrize(
    ("name", "toleration_value", "taint_value", "operator", "expected"),
    COMPARE_CASES,
    ids=[c[0] for c in COMPARE_CASES],
)
def test_compare_numeric_values(
    name: str, toleration_value: str, taint_value: str, operator: str, expected: bool
) -> None:
    assert compare_numeric_values(toleration_value, taint_value, operator) is expected


@given(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1))
def test_compare_numeric_values_agrees_with_integers(threshold: int, actual: int) -> None:
    """Canonical int64 strings compare as the numbers do, whatever their length."""
    assert compare_numeric_values(str(threshold), str(actual), "Lt") is (actual < threshold)
    assert compare_numeric_values(str(threshold), str(actual), "Gt") is (actual > threshold)


_VALUES = st.sampled_from(["", "0", "1", "-1", "800", "950", "0950", "+5", "high", "9" * 19])
_TOLERATIONS = st.builds(
    Toleration,
    key=st.sampled_from(["", "sla", "other"]),
    operator=st.sampled_from(["", "Equal", "Exists", "Lt", "Gt", "Ge"]),
    value=_VALUES,
    effect=st.sampled_from(["", NO_SCHEDULE, NO_EXECUTE]),
)
_TAINTS = st.builds(
    Taint,
    key=st.sampled_from(["sla", "other"]),
    value=_VALUES,
    effect=st.sampled_from([NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE]),
)


@given(_TOLERATIONS, _TAINTS, st.booleans())
def test_kubesims_controllers_tolerate_as_the_scheduler_does(
    toleration: Toleration, taint: Taint, gate: bool
) -> None:
    """The two ToleratesTaint ports (the scheduler's over parsed views, kubesim's controllers'
    over raw JSON) agree, at both values of the comparison gate."""
    raw_toleration = {
        "key": toleration.key,
        "operator": toleration.operator,
        "value": toleration.value,
        "effect": toleration.effect,
    }
    raw_taint = {"key": taint.key, "value": taint.value, "effect": taint.effect}
    assert kubesim_tolerates(raw_toleration, raw_taint, gate) is toleration.tolerates(taint, gate)
