"""The framework runtime for one profile (upstream's frameworkImpl, runtime/framework.go).

A `Framework` owns one instance of each enabled plugin (shared across the extension points it
implements), runs them in configured order with upstream's status semantics, and implements the
`Handle` plugins receive. Messages of wrapped errors follow upstream's wording so logs and
conditions read the same.

The package is split by reason to change: `core` (plugins by point, the handle's dependencies,
timing), `filtering` (PreFilter, Filter per node and over rows, PostFilter), `scoring`
(PreScore, Score, NormalizeScore), `binding` (Reserve, Permit, PreBind, Bind, PostBind) and
`framework` (construction, the Handle, the queueing points), `batch` (opportunistic batching:
pod signatures and the reused ranking). Import from here.
"""

from scheduler.framework.runtime.batch import (
    BatchMetrics,
    OpportunisticBatch,
    PodSignature,
    SortedScoredNodes,
)
from scheduler.framework.runtime.core import (
    ALL_EVENTS,
    MAX_PERMIT_TIMEOUT,
    CycleTracer,
    FrameworkObserver,
    HandleDeps,
    Nominator,
    NoopObserver,
)
from scheduler.framework.runtime.filtering import RowRejections
from scheduler.framework.runtime.framework import Framework
from scheduler.framework.runtime.scoring import RowScores

__all__ = [
    "ALL_EVENTS",
    "MAX_PERMIT_TIMEOUT",
    "BatchMetrics",
    "CycleTracer",
    "Framework",
    "FrameworkObserver",
    "HandleDeps",
    "Nominator",
    "NoopObserver",
    "OpportunisticBatch",
    "PodSignature",
    "RowRejections",
    "RowScores",
    "SortedScoredNodes",
]
