"""Taint / toleration helpers (k8s.io/component-helpers/scheduling/corev1/helpers.go).

`comparison_operators` is the TaintTolerationComparisonOperators gate (alpha, off by default in
v1.37), which upstream passes to each helper as enableComparisonOperators: with it on, `Lt` and
`Gt` tolerations compare the taint's value as a number.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from scheduler.api.values import Taint, Toleration

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"

TAINT_TOLERATION_COMPARISON_OPERATORS = "TaintTolerationComparisonOperators"


def comparison_operators_enabled(handle: object) -> bool:
    """The TaintTolerationComparisonOperators gate as a plugin's handle carries it (upstream's
    feature.Features.EnableTaintTolerationComparisonOperators); off without a handle."""
    gates: Mapping[str, bool] | None = getattr(handle, "feature_gates", None)
    return bool(gates and gates.get(TAINT_TOLERATION_COMPARISON_OPERATORS, False))


def tolerations_tolerate_taint(
    tolerations: Iterable[Toleration], taint: Taint, comparison_operators: bool = False
) -> bool:
    """Whether any toleration tolerates `taint` (upstream's TolerationsTolerateTaint)."""
    for toleration in tolerations:  # noqa: SIM110 (hot path: Filter calls this per node)
        if toleration.tolerates(taint, comparison_operators):
            return True
    return False


def find_matching_untolerated_taint(
    taints: Sequence[Taint],
    tolerations: Sequence[Toleration],
    effects: Collection[str] | None = None,
    comparison_operators: bool = False,
) -> Taint | None:
    """The first taint with an effect in `effects` (all effects when None) that no toleration
    tolerates, or None (upstream's FindMatchingUntoleratedTaint with an effect filter)."""
    for taint in taints:
        if effects is not None and taint.effect not in effects:
            continue
        if not tolerations_tolerate_taint(tolerations, taint, comparison_operators):
            return taint
    return None
