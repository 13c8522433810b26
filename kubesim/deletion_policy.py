"""Which garbage-collection finalizers a DELETE leaves on an object (its propagation policy).

Upstream: staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go
(deletionFinalizersForGarbageCollection). Orphan puts `orphan`, Foreground puts
`foregroundDeletion`, Background removes both; with no policy given, the resource's default
applies: batch/v1 Jobs orphan their pods (pkg/registry/batch/job/strategy.go
DefaultGarbageCollectionPolicy, kept for compatibility), everything else is deleted in the
background. kubesim/controllers/garbagecollector.py then acts on the finalizer.
"""

from __future__ import annotations

from typing import Any

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
_ORPHAN_BY_DEFAULT = frozenset({"batch/jobs"})


def finalizers_after_delete(
    resource_key: str, meta: dict[str, Any], options: dict[str, Any]
) -> list[str]:
    """The object's finalizers once this DELETE with `options` is applied."""
    current = [f for f in meta.get("finalizers") or [] if isinstance(f, str)]
    policy = options.get("propagationPolicy")
    orphan_dependents = options.get("orphanDependents")
    if policy is None and orphan_dependents is not None:
        policy = "Orphan" if orphan_dependents else "Background"
    if policy is None:
        if ORPHAN in current or FOREGROUND in current:
            return current  # a policy chosen by an earlier DELETE stays
        policy = "Orphan" if resource_key in _ORPHAN_BY_DEFAULT else "Background"
    kept = [f for f in current if f not in (ORPHAN, FOREGROUND)]
    if policy == "Orphan":
        return [*kept, ORPHAN]
    if policy == "Foreground":
        return [*kept, FOREGROUND]
    return kept
