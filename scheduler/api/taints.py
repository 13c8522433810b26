"""Taint / toleration helpers (k8s.io/component-helpers/scheduling/corev1/helpers.go)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from scheduler.api.values import Taint, Toleration

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"


def tolerations_tolerate_taint(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """Whether any toleration tolerates `taint` (upstream's TolerationsTolerateTaint)."""
    for toleration in tolerations:  # noqa: SIM110 (hot path: Filter calls this per node)
        if toleration.tolerates(taint):
            return True
    return False


def find_matching_untolerated_taint(
    taints: Sequence[Taint],
    tolerations: Sequence[Toleration],
    effects: Collection[str] | None = None,
) -> Taint | None:
    """The first taint with an effect in `effects` (all effects when None) that no toleration
    tolerates, or None (upstream's FindMatchingUntoleratedTaint with an effect filter)."""
    for taint in taints:
        if effects is not None and taint.effect not in effects:
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None
