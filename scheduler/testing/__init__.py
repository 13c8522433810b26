"""The public test kit for plugin authors and for aiosched's own tests (upstream's
pkg/scheduler/testing and framework/runtime test helpers, in Python).

What it gives:

- builders: `make_pod` / `make_node` (one call) and `MakePod` / `MakeNode` (upstream's fluent
  wrappers) returning the scheduler's own `PodView` / `NodeView`, and the JSON fragments they
  take (`expr`, `exists`, `match_labels`, `term`, `weighted`, `pod_affinity`,
  `required_node_affinity`, `spread`, `pvc_volume`, `ephemeral_volume`, `csi_volume`,
  `empty_dir_volume`);
- a cluster: `make_node_info`, `node_infos`, `make_snapshot` (the scheduler's Snapshot),
  `snapshot_of` / `make_list_snapshot` (a plain lister), `cluster_objects`, `namespace`,
  `cluster_with_namespaces`, `service`, and `FakeHandle`, the framework Handle from fixed
  values, with `RecordingClient` and `StaticNominator`;
- a framework runner: `build_framework` (plugins by in-tree name, class or PluginEntry),
  `framework_from_config` (a profile of a KubeSchedulerConfiguration) and `run_cycle`
  (PreFilter → Filter → PreScore → Score for one pod, every status and score; the scores
  are `NodePluginScores`, each a list of `PluginScore`);
- the whole algorithm and the queue's hints: `schedule` (the scheduler's own algorithm for one
  pod: host selection, the row path, batching; a `ScheduleOutcome`) and `queueing_hint` (what
  a plugin's registered `QueueingHintFn`s, `(pod, old, new) -> QueueingHint`, say about a
  `ClusterEvent`).

Plugin-family fakes live in submodules: `scheduler.testing.volumes` (storage objects and a
fake API server with the PV controller's part) and `scheduler.testing.preemption`
(DefaultPreemption in a real framework, PDBs).

Stability: the names exported here and the submodules' public names are the kit's API, kept
compatible within a minor release (new keyword arguments may appear; existing ones keep their
meaning and defaults). Anything under a leading underscore is not. docs/plugin-authors.md
lists the rest of the out-of-tree plugin API.
"""

from scheduler.framework.events import ClusterEvent, QueueingHint, QueueingHintFn
from scheduler.framework.results import NodePluginScores, PluginScore
from scheduler.testing.algorithm import ScheduleOutcome, queueing_hint, schedule
from scheduler.testing.builders import (
    MakeNode,
    MakePod,
    csi_volume,
    empty_dir_volume,
    ephemeral_volume,
    exists,
    expr,
    make_node,
    make_pod,
    match_labels,
    pod_affinity,
    pvc_volume,
    required_node_affinity,
    spread,
    term,
    weighted,
)
from scheduler.testing.cluster import (
    FakeHandle,
    ListSnapshot,
    RecordingClient,
    StaticNominator,
    cluster_objects,
    cluster_with_namespaces,
    make_list_snapshot,
    make_node_info,
    make_snapshot,
    namespace,
    node_infos,
    service,
    snapshot_of,
)
from scheduler.testing.runner import (
    CycleResult,
    build_framework,
    framework_from_config,
    handle_deps,
    run_cycle,
)

__all__ = [
    "ClusterEvent",
    "CycleResult",
    "FakeHandle",
    "ListSnapshot",
    "MakeNode",
    "MakePod",
    "NodePluginScores",
    "PluginScore",
    "QueueingHint",
    "QueueingHintFn",
    "RecordingClient",
    "ScheduleOutcome",
    "StaticNominator",
    "build_framework",
    "cluster_objects",
    "cluster_with_namespaces",
    "csi_volume",
    "empty_dir_volume",
    "ephemeral_volume",
    "exists",
    "expr",
    "framework_from_config",
    "handle_deps",
    "make_list_snapshot",
    "make_node",
    "make_node_info",
    "make_pod",
    "make_snapshot",
    "match_labels",
    "namespace",
    "node_infos",
    "pod_affinity",
    "pvc_volume",
    "queueing_hint",
    "required_node_affinity",
    "run_cycle",
    "schedule",
    "service",
    "snapshot_of",
    "spread",
    "term",
    "weighted",
]
