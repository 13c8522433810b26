"""scheduler_perf workloads: upstream's names, parameters, thresholds and object templates.

Sources, all under kubernetes/kubernetes test/integration/scheduler_perf/:

- misc/performance-config.yaml, SchedulingBasic: createNodes $initNodes, createPods $initPods,
  createPods $measurePods with collectMetrics; templates node-default.yaml and pod-default.yaml.
- affinity/performance-config.yaml: SchedulingPodAntiAffinity, SchedulingPodAffinity,
  SchedulingPreferredPodAffinity, SchedulingPreferredPodAntiAffinity, SchedulingNodeAffinity.
- topology_spreading/performance-config.yaml: TopologySpreading, PreferredTopologySpreading.
- default_preemption/performance-config.yaml: PreemptionBasic, PreemptionAsync, Unschedulable
  (their `churn` op creates a high-priority pod every 200 ms while the measured pods are created).
  Upstream's integration API server runs without the Priority admission plugin, so its
  templates set `spec.priority: 10`; kubesim admits priority as kube-apiserver does, so the
  bench creates a PriorityClass `scheduler-perf-high` (value 10) and names it instead.
- volumes/performance-config.yaml: SchedulingInTreePVs, SchedulingCSIPVs, PreemptionPVs. Each
  pod gets its own PV (templates/pv-aws.yaml or pv-csi.yaml: 1Gi, ReadOnlyMany, Retain; a CSI
  volume's handle is the PV's name) and PVC (templates/pvc.yaml: 1Gi, ReadOnlyMany), created
  bound to each other with Bound phases, as scheduler_perf's CreatePodWithPersistentVolume does;
  SchedulingCSIPVs's nodes also get a CSINode allowing 39 ebs.csi.aws.com volumes and the
  matching `attachable-volumes-csi-ebs.csi.aws.com` allocatable (nodeAllocatableStrategy).
  SchedulingMigratedInTreePVs needs CSI migration of in-tree volumes, which aiosched's
  NodeVolumeLimits does not do, so it is not ported.
- templates/*.yaml: the node and pod templates named below (pod labels, affinity and spread
  terms copied exactly; every pod template requests 100m CPU and 500Mi, with port 80).
- dra/performance-config.yaml (issue 24): SchedulingWithResourceClaimTemplate and
  SteadyStateClusterResourceClaimTemplate; dra/prioritizedlist/performance-config.yaml:
  FirstAvailable (formerly SteadyStateClusterResourceClaimTemplateFirstAvailable, a steady-state
  test whose sub-request named a class that does not exist, which DynamicResources' PreFilter
  rejects; upstream replaced it by this one with templates/deviceclass-no-devices.yaml).
  Templates under dra/templates/: node-with-dra-test-driver.yaml (node-default.yaml named
  scheduler-perf-dra-<index>, the index counting on from the nodes created before),
  deviceclass.yaml, resourceclaimtemplate.yaml (rendered with its defaults: one request req-0),
  resourceclaim.yaml, resourceclaimtemplate-first-available.yaml, pod-with-claim-template.yaml.
  The ops are in bench/dra.py. scheduler_perf runs the resourceclaim controller for these
  tests, so the bench's cluster runs kubesim's controllers for them (the others run none).
  SchedulingWithResourceClaim (shared claims) and the variants needing gates aiosched refuses
  (device taints, partitionable devices, binding conditions, extended resources, consumable
  capacity) are not ported.

- podgroup/gangscheduling/performance-config.yaml (issue 25): GangScheduling, one PodGroup per
  gang (templates/podgroup.yaml: gang policy, minCount = pods per group) and its members
  (templates/gang-pod.yaml); the createPodGroups op is in bench/gang.py.

Upstream's `_QueueingHintsEnabled` variants run the same parameters under a feature gate we do
not have, so they are not ported. The DRA tests' twins are skipped alike; aiosched has no
SchedulerQueueingHints gate and always runs queueing hints, so the twins' floors (higher for
some DRA cases) are noted beside the ported cases' in the DRA section below.
`SchedulingBasic/Smoke` is ours: small enough for tests; each other shape's upstream `5Nodes`
case serves the same purpose.

Node labels follow upstream's node preparer (test/integration/framework/perf_utils.go
IntegrationTestNodePreparer.PrepareNodes): every node gets `kubernetes.io/hostname` = its name,
then a createNodes op's labelNodePrepareStrategy (test/utils/runners.go LabelNodePrepareStrategy)
gives the nodes its labelValues round robin, in the order the nodes are listed. Our nodes are
named by index, so we go round robin by index (the same count per value, deterministic).
SchedulingBasic keeps its unlabelled nodes, as before (its pods look at no node label).
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from bench.suggest import unknown_workload_message

# scheduler_perf names a createPods op's namespace after the op's index in the workload template
# unless the op names one ("namespace-%d" in scheduler_perf.go): namespace-1 and namespace-2 for
# createNodes, createPods, createPods. The affinity shapes create "sched-0" and "sched-1"
# (createNamespaces prefix sched, count 2) and name them in their createPods ops.
INIT_NAMESPACE = "namespace-1"
MEASURE_NAMESPACE = "namespace-2"
SCHED_INIT_NAMESPACE = "sched-0"
SCHED_MEASURE_NAMESPACE = "sched-1"

NODE_CAPACITY = {"pods": "110", "cpu": "4", "memory": "32Gi"}
POD_REQUESTS = {"cpu": "100m", "memory": "500Mi"}
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"  # upstream's templates vary (3.10, 3.10.1, 3.10.2)

HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"

MISC_CONFIG = "misc/performance-config.yaml"
AFFINITY_CONFIG = "affinity/performance-config.yaml"
TOPOLOGY_CONFIG = "topology_spreading/performance-config.yaml"
PREEMPTION_CONFIG = "default_preemption/performance-config.yaml"
VOLUMES_CONFIG = "volumes/performance-config.yaml"

HIGH_PRIORITY_CLASS = "scheduler-perf-high"
HIGH_PRIORITY = 10
CHURN_NAMESPACE = "churn"


@dataclass(frozen=True, slots=True)
class NodeTemplate:
    """templates/node-default.yaml plus the labels a createNodes op gives each node."""

    hostname_label: bool = True  # as upstream's node preparer; False keeps SchedulingBasic as was
    label_key: str | None = None  # labelNodePrepareStrategy.labelKey
    label_values: tuple[str, ...] = ()  # labelNodePrepareStrategy.labelValues, round robin
    # nodeAllocatableStrategy.csiNodeAllocatable: CSI driver -> volumes a node may attach
    csi_attach_limits: tuple[tuple[str, int], ...] = ()

    def labels(self, index: int, name: str) -> dict[str, str]:
        labels: dict[str, str] = {}
        if self.hostname_label:
            labels[HOSTNAME_LABEL] = name
        if self.label_key is not None and self.label_values:
            labels[self.label_key] = self.label_values[index % len(self.label_values)]
        return labels


@dataclass(frozen=True, slots=True)
class PodTemplate:
    """One of upstream's pod templates: its labels and the spec fields beyond pod-default.yaml."""

    path: str  # upstream's file, under test/integration/scheduler_perf/
    labels: dict[str, str] = field(default_factory=dict, hash=False)
    spec: dict[str, Any] = field(default_factory=dict, hash=False)  # affinity, spread terms
    requests: dict[str, str] = field(default_factory=lambda: dict(POD_REQUESTS), hash=False)
    with_limits: bool = True  # limits equal to the requests, as most templates set
    high_priority: bool = False  # spec.priority 10 upstream; our PriorityClass here
    # the container's ports; most templates expose 80, a few none or a hostPort
    ports: list[dict[str, int]] = field(default_factory=lambda: [{"containerPort": 80}], hash=False)
    scheduling_gates: tuple[str, ...] = ()  # spec.schedulingGates names
    # the container's resources.claims: names of the pod's spec.resourceClaims entries it uses
    container_claims: tuple[str, ...] = ()


BASIC_NODE = NodeTemplate(hostname_label=False)
EBS_CSI_DRIVER = "ebs.csi.aws.com"
CSI_NODE = NodeTemplate(csi_attach_limits=((EBS_CSI_DRIVER, 39),))
NODE = NodeTemplate()  # node-default.yaml with upstream's hostname label
ZONE1_NODE = NodeTemplate(label_key=ZONE_LABEL, label_values=("zone1",))
MOON_NODE = NodeTemplate(label_key=ZONE_LABEL, label_values=("moon-1", "moon-2", "moon-3"))

POD_DEFAULT = PodTemplate("templates/pod-default.yaml")

_BOTH_SCHED_NAMESPACES = [SCHED_MEASURE_NAMESPACE, SCHED_INIT_NAMESPACE]  # as the templates list


def _term(color: str, topology_key: str) -> dict[str, Any]:
    return {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": topology_key,
        "namespaces": list(_BOTH_SCHED_NAMESPACES),
    }


POD_WITH_POD_ANTI_AFFINITY = PodTemplate(
    "templates/pod-with-pod-anti-affinity.yaml",
    labels={"color": "green"},
    spec={
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [_term("green", HOSTNAME_LABEL)]
            }
        }
    },
)
POD_WITH_POD_AFFINITY = PodTemplate(
    "templates/pod-with-pod-affinity.yaml",
    labels={"color": "blue"},
    spec={
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [_term("blue", ZONE_LABEL)]
            }
        }
    },
)
POD_WITH_PREFERRED_POD_AFFINITY = PodTemplate(
    "templates/pod-with-preferred-pod-affinity.yaml",
    labels={"color": "red"},
    spec={
        "affinity": {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"podAffinityTerm": _term("red", HOSTNAME_LABEL), "weight": 1}
                ]
            }
        }
    },
)
POD_WITH_PREFERRED_POD_ANTI_AFFINITY = PodTemplate(
    "templates/pod-with-preferred-pod-anti-affinity.yaml",
    labels={"color": "yellow"},
    spec={
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"podAffinityTerm": _term("yellow", HOSTNAME_LABEL), "weight": 1}
                ]
            }
        }
    },
)
POD_WITH_NODE_AFFINITY = PodTemplate(
    "templates/pod-with-node-affinity.yaml",
    spec={
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": ZONE_LABEL,
                                    "operator": "In",
                                    "values": ["zone1", "zone2"],
                                }
                            ]
                        }
                    ]
                }
            }
        }
    },
)


POD_LOW_PRIORITY = PodTemplate(
    "config/pod-low-priority.yaml",
    spec={"terminationGracePeriodSeconds": 0},
    requests={"cpu": "900m", "memory": "500Mi"},
)
POD_HIGH_PRIORITY = PodTemplate(
    "config/pod-high-priority.yaml",
    requests={"cpu": "3000m", "memory": "500Mi"},
    high_priority=True,
)
POD_HIGH_PRIORITY_LARGE_CPU = PodTemplate(
    "templates/pod-high-priority-large-cpu.yaml",
    requests={"cpu": "9", "memory": "500Mi"},
    with_limits=False,
    high_priority=True,
)


def _spread(when_unsatisfiable: str) -> dict[str, Any]:
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": 5,
                "topologyKey": ZONE_LABEL,
                "whenUnsatisfiable": when_unsatisfiable,
                "labelSelector": {"matchLabels": {"color": "blue"}},
            }
        ]
    }


POD_WITH_TOPOLOGY_SPREADING = PodTemplate(
    "templates/pod-with-topology-spreading.yaml",
    labels={"color": "blue"},
    spec=_spread("DoNotSchedule"),
)
POD_WITH_PREFERRED_TOPOLOGY_SPREADING = PodTemplate(
    "templates/pod-with-preferred-topology-spreading.yaml",
    labels={"color": "blue"},
    spec=_spread("ScheduleAnyway"),
)


@dataclass(frozen=True, slots=True)
class VolumeTemplate:
    """A createPods op's persistentVolumeTemplatePath: the PV each pod gets (its claim is
    templates/pvc.yaml)."""

    path: str
    source: str  # "csi" or "awsElasticBlockStore"


PV_AWS = VolumeTemplate("templates/pv-aws.yaml", "awsElasticBlockStore")
PV_CSI = VolumeTemplate("templates/pv-csi.yaml", "csi")


@dataclass(frozen=True, slots=True)
class DraSetup:
    """What a dra/ test does besides nodes and pods (its workloadTemplate's DRA ops)."""

    # createNodes with templates/node-with-dra-test-driver.yaml: the last this many of the
    # workload's init_nodes (the first are node-default.yaml: nodesWithoutDRA)
    nodes_with_dra: int
    # createResourceDriver maxClaimsPerNode: devices per DRA node's ResourceSlice
    max_claims_per_node: int
    # createAny: the DeviceClass templates, in order
    device_classes: tuple[str, ...] = ("dra/templates/deviceclass.yaml",)
    # createAny: the ResourceClaimTemplate and the namespaces it is created in
    claim_template: str = "dra/templates/resourceclaimtemplate.yaml"
    claim_template_namespaces: tuple[str, ...] = ("test",)
    # createAny templates/resourceclaim.yaml countParam $initClaims, then allocResourceClaims
    init_claims: int = 0
    # createPods steadyState with durationParam: the measured pods are kept at measure_pods,
    # each deleted once scheduled and replaced, for this many seconds; 0: not steady
    steady_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class GangSetup:
    """A podgroup/ test's createPodGroups op: `pod_groups` PodGroups gang-<i>, each with a gang
    policy of minCount `pods_per_group`; the measured pods are their members, pod i naming
    gang-<i // pods_per_group> (createPods countParam $initPodGroups, countMultiplierParam
    $podsPerGroup)."""

    pod_groups: int
    pods_per_group: int


@dataclass(frozen=True, slots=True)
class Workload:
    """One test case: nodes, pods scheduled before measuring, pods measured."""

    name: str
    init_nodes: int
    init_pods: int
    measure_pods: int
    threshold: float | None = None  # upstream's CI floor for the average, pods/s
    description: str = ""
    node_template: NodeTemplate = BASIC_NODE
    init_pod_template: PodTemplate = POD_DEFAULT
    measure_pod_template: PodTemplate = POD_DEFAULT
    init_namespace: str = INIT_NAMESPACE
    measure_namespace: str = MEASURE_NAMESPACE
    source: str = MISC_CONFIG  # upstream's config file, under test/integration/scheduler_perf/
    # upstream's churn op: one such pod every `churn_interval` seconds while measuring
    churn_pod_template: PodTemplate | None = None
    churn_interval: float = 0.2
    # each init / measured pod gets its own bound PV and PVC from this template
    init_volume: VolumeTemplate | None = None
    measure_volume: VolumeTemplate | None = None
    # The shapes below come from upstream ops the first shapes did not use; each is off by
    # default, so the workloads above are unchanged.
    # createNodes count 1 with templates/node-with-name.yaml, before the init_nodes
    named_node: bool = False
    # createPods with skipWaitToCompletion, then a barrier with stageRequirement Attempted:
    # these pods never pass their scheduling gate; the scheduler only has to hold them
    gated_pods: int = 0
    gated_pod_template: PodTemplate | None = None
    gated_namespace: str = INIT_NAMESPACE
    # createPodSets: init_pods split evenly over init_pod_sets namespaces init-ns-<i>
    init_pod_sets: int = 0
    # namespaceTemplatePath templates/namespace-with-labels.yaml: every namespace's labels
    namespace_labels: dict[str, str] = field(default_factory=dict, hash=False)
    # deletePods (skipWaitToCompletion) on the init namespace while the measured pods go in
    delete_init_pods_per_second: int = 0
    # churn mode recreate, number 1: each interval create, then next interval delete, one node
    # (templates/churn/node-default.yaml), one high-priority pod and one Service
    recreate_churn: bool = False
    recreate_churn_namespace: str = INIT_NAMESPACE
    # createPods signatureBatchSize: every batch of this many pods shares a "signature" label
    signature_batch_size: int = 0
    # schedulerConfigPath: the profiles: block of the scheduler's configuration
    scheduler_profiles: str = ""
    # the dra/ shapes' ops (createResourceDriver, DeviceClasses, claim templates, init claims
    # with allocResourceClaims, steady-state pods); None for every other shape
    dra: DraSetup | None = None
    # the podgroup/ shapes' createPodGroups op; None for every other shape
    gang: GangSetup | None = None
    # the test's featureGates turned on, plus those aiosched needs for the same behaviour;
    # given to `aiosched run --feature-gates`
    feature_gates: tuple[str, ...] = ()

    @property
    def namespaces(self) -> tuple[str, ...]:
        names: list[str] = []
        if self.gated_pods:
            names.append(self.gated_namespace)
        if self.init_pod_sets:
            names += [pod_set_namespace(i) for i in range(self.init_pod_sets)]
        else:
            names.append(self.init_namespace)
        names.append(self.measure_namespace)
        if self.churn_pod_template is not None:
            names.append(CHURN_NAMESPACE)
        if self.recreate_churn:
            names.append(self.recreate_churn_namespace)
        return tuple(dict.fromkeys(names))  # in order, once each

    @property
    def needs_high_priority(self) -> bool:
        if self.recreate_churn:  # its pod is pod-high-priority-large-cpu.yaml
            return True
        templates = (self.init_pod_template, self.measure_pod_template, self.churn_pod_template)
        return any(t is not None and t.high_priority for t in templates)

    @property
    def pods_per_set(self) -> int:
        return self.init_pods // self.init_pod_sets if self.init_pod_sets else self.init_pods


@dataclass(frozen=True, slots=True)
class _Shape:
    """One upstream test (a workloadTemplate): what its cases share."""

    test: str
    source: str
    node_template: NodeTemplate
    init_pod_template: PodTemplate
    measure_pod_template: PodTemplate
    init_namespace: str = INIT_NAMESPACE
    measure_namespace: str = MEASURE_NAMESPACE
    churn_pod_template: PodTemplate | None = None
    init_volume: VolumeTemplate | None = None
    measure_volume: VolumeTemplate | None = None

    def case(
        self,
        name: str,
        nodes: int,
        init_pods: int,
        measure_pods: int,
        threshold: float | None = None,
    ) -> Workload:
        return Workload(
            f"{self.test}/{name}",
            nodes,
            init_pods,
            measure_pods,
            threshold=threshold,
            node_template=self.node_template,
            init_pod_template=self.init_pod_template,
            measure_pod_template=self.measure_pod_template,
            init_namespace=self.init_namespace,
            measure_namespace=self.measure_namespace,
            source=self.source,
            churn_pod_template=self.churn_pod_template,
            init_volume=self.init_volume,
            measure_volume=self.measure_volume,
        )


def _sched_shape(test: str, nodes: NodeTemplate, pods: PodTemplate) -> _Shape:
    """affinity/performance-config.yaml's pod-affinity tests: sched-0 and sched-1, one template."""
    return _Shape(
        test, AFFINITY_CONFIG, nodes, pods, pods, SCHED_INIT_NAMESPACE, SCHED_MEASURE_NAMESPACE
    )


_ANTI = _sched_shape("SchedulingPodAntiAffinity", NODE, POD_WITH_POD_ANTI_AFFINITY)
_AFFINITY = _sched_shape("SchedulingPodAffinity", ZONE1_NODE, POD_WITH_POD_AFFINITY)
_PREFERRED_AFFINITY = _sched_shape(
    "SchedulingPreferredPodAffinity", NODE, POD_WITH_PREFERRED_POD_AFFINITY
)
_PREFERRED_ANTI = _sched_shape(
    "SchedulingPreferredPodAntiAffinity", NODE, POD_WITH_PREFERRED_POD_ANTI_AFFINITY
)
# no createNamespaces: the createPods ops' namespaces are namespace-1 and namespace-2
_NODE_AFFINITY = _Shape(
    "SchedulingNodeAffinity",
    AFFINITY_CONFIG,
    ZONE1_NODE,
    POD_WITH_NODE_AFFINITY,
    POD_WITH_NODE_AFFINITY,
)
# init pods are pod-default.yaml; only the measured pods carry the spread constraint
_SPREAD = _Shape(
    "TopologySpreading", TOPOLOGY_CONFIG, MOON_NODE, POD_DEFAULT, POD_WITH_TOPOLOGY_SPREADING
)
_PREFERRED_SPREAD = _Shape(
    "PreferredTopologySpreading",
    TOPOLOGY_CONFIG,
    MOON_NODE,
    POD_DEFAULT,
    POD_WITH_PREFERRED_TOPOLOGY_SPREADING,
)

_PREEMPTION_BASIC = _Shape(
    "PreemptionBasic", PREEMPTION_CONFIG, BASIC_NODE, POD_LOW_PRIORITY, POD_HIGH_PRIORITY
)
_PREEMPTION_ASYNC = _Shape(
    "PreemptionAsync",
    PREEMPTION_CONFIG,
    BASIC_NODE,
    POD_LOW_PRIORITY,
    POD_DEFAULT,
    churn_pod_template=POD_HIGH_PRIORITY,
)
_UNSCHEDULABLE = _Shape(
    "Unschedulable",
    PREEMPTION_CONFIG,
    BASIC_NODE,
    POD_DEFAULT,
    POD_DEFAULT,
    churn_pod_template=POD_HIGH_PRIORITY_LARGE_CPU,
)

_IN_TREE_PVS = _Shape(
    "SchedulingInTreePVs",
    VOLUMES_CONFIG,
    BASIC_NODE,
    POD_DEFAULT,
    POD_DEFAULT,
    init_volume=PV_AWS,
    measure_volume=PV_AWS,
)
_CSI_PVS = _Shape(
    "SchedulingCSIPVs",
    VOLUMES_CONFIG,
    CSI_NODE,
    POD_DEFAULT,
    POD_DEFAULT,
    init_volume=PV_CSI,
    measure_volume=PV_CSI,
)
_PREEMPTION_PVS = _Shape(
    "PreemptionPVs",
    VOLUMES_CONFIG,
    BASIC_NODE,
    POD_LOW_PRIORITY,
    POD_HIGH_PRIORITY,
    measure_volume=PV_AWS,
)

# ---- the shapes ported for issue 22 ------------------------------------------------------
# Upstream files (test/integration/scheduler_perf/), newest versions the search index stores:
# misc/performance-config.yaml (SchedulingDaemonset, SchedulingWithMixedChurn,
# SchedulingWhileGated), affinity/performance-config.yaml (the four *WithNSSelector tests and
# SchedulingGatedPodsWithPodAffinityImpactForThroughput), batching/performance-config.yaml
# (HostPortConflict, ResourceSaturation) and the templates each names.

SCHEDULER_PERF_NODE = "scheduler-perf-node"  # templates/node-with-name.yaml
NAMED_NODE_PODS = "90000"
RECREATE_CHURN_INTERVAL = 1.0  # SchedulingWithMixedChurn's intervalMilliseconds: 1000
MEASURE_NS_SELECTOR_NAMESPACE = "measure-ns-0"  # createNamespaces prefix measure-ns, count 1
TEAM_DEVOPS = {"team": "devops"}  # templates/namespace-with-labels.yaml
SIGNATURE_LABEL = "signature"
BATCHING_CONFIG = "batching/performance-config.yaml"
# batching/scheduler-config-no-topology.yaml: no default spread constraints, so the pods'
# signature is not spoilt by PodTopologySpread's system defaults
NO_DEFAULT_TOPOLOGY_PROFILES = (
    "profiles:\n"
    "- schedulerName: default-scheduler\n"
    "  pluginConfig:\n"
    "  - name: PodTopologySpread\n"
    "    args:\n"
    "      defaultingType: List\n"
    "      defaultConstraints: []\n"
)

# templates/daemonset-pod.yaml: no resources, no ports; node affinity on the node's name
DAEMONSET_POD = PodTemplate(
    "templates/daemonset-pod.yaml",
    spec={
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {
                                    "key": "metadata.name",
                                    "operator": "In",
                                    "values": [SCHEDULER_PERF_NODE],
                                }
                            ]
                        }
                    ]
                }
            }
        }
    },
    requests={},
    ports=[],
)


def _ns_selector_term(color: str, topology_key: str) -> dict[str, Any]:
    return {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": topology_key,
        "namespaceSelector": {"matchLabels": dict(TEAM_DEVOPS)},
    }


POD_ANTI_AFFINITY_NS_SELECTOR = PodTemplate(
    "templates/pod-anti-affinity-ns-selector.yaml",
    labels={"color": "green"},
    spec={
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    _ns_selector_term("green", HOSTNAME_LABEL)
                ]
            }
        }
    },
)
POD_PREFERRED_ANTI_AFFINITY_NS_SELECTOR = PodTemplate(
    "templates/pod-preferred-anti-affinity-ns-selector.yaml",
    labels={"color": "green"},
    spec={
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"podAffinityTerm": _ns_selector_term("green", HOSTNAME_LABEL), "weight": 1}
                ]
            }
        }
    },
)
POD_AFFINITY_NS_SELECTOR = PodTemplate(
    "templates/pod-affinity-ns-selector.yaml",
    labels={"color": "blue"},
    spec={
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    _ns_selector_term("blue", ZONE_LABEL)
                ]
            }
        }
    },
)
POD_PREFERRED_AFFINITY_NS_SELECTOR = PodTemplate(
    "templates/pod-preferred-affinity-ns-selector.yaml",
    labels={"color": "red"},
    spec={
        "affinity": {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"podAffinityTerm": _ns_selector_term("red", HOSTNAME_LABEL), "weight": 1}
                ]
            }
        }
    },
)

SCHEDULER_PERF_APP = {"app": "scheduler-perf"}
POD_WITH_LABEL = PodTemplate(  # templates/pod-with-label.yaml: no resources, no ports
    "templates/pod-with-label.yaml", labels=dict(SCHEDULER_PERF_APP), requests={}, ports=[]
)
GATED_POD_WITH_POD_AFFINITY = PodTemplate(
    "templates/gated-pod-with-pod-affinity.yaml",
    labels=dict(SCHEDULER_PERF_APP),
    spec={
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": dict(SCHEDULER_PERF_APP)},
                        "topologyKey": HOSTNAME_LABEL,
                    }
                ]
            }
        }
    },
    requests={},
    ports=[],
    scheduling_gates=("scheduling-gate-1",),
)
GATED_POD = PodTemplate(
    "templates/gated-pod.yaml", requests={}, ports=[], scheduling_gates=("test.k8s.io/hold",)
)
LIGHT_POD = PodTemplate(
    "templates/light-pod.yaml", spec={"terminationGracePeriodSeconds": 0}, requests={}, ports=[]
)
POD_HOSTPORT_80 = PodTemplate(
    "templates/pod-hostport-80.yaml",
    requests={"cpu": "100m", "memory": "100Mi"},
    with_limits=False,
    ports=[{"containerPort": 80, "hostPort": 80}],
)
POD_SATURATION = PodTemplate(  # 3 of a node's 4 CPUs: one pod per node
    "templates/pod-saturation.yaml",
    requests={"cpu": "3", "memory": "1Gi"},
    with_limits=False,
    ports=[],
)


def _case(base: Workload, name: str, nodes: int, measure_pods: int, **params: Any) -> Workload:
    """One workload of a test whose shared shape is `base` (its name is the test's)."""
    return dataclasses.replace(
        base,
        name=f"{base.name}/{name}",
        init_nodes=nodes,
        measure_pods=measure_pods,
        **params,
    )


def _pod_sets(
    base: Workload,
    name: str,
    nodes: int,
    per_namespace: int,
    namespaces: int,
    measure_pods: int,
    threshold: float | None = None,
) -> Workload:
    """A *WithNSSelector case: initPodsPerNamespace pods in each of initNamespaces."""
    return _case(
        base,
        name,
        nodes,
        measure_pods,
        init_pods=per_namespace * namespaces,
        init_pod_sets=namespaces,
        threshold=threshold,
    )


# misc: createNodes 1 (node-with-name), createNodes $initNodes (node-default), createPods in
# namespace-2; every pod is pinned to scheduler-perf-node, and the other nodes are filtered out
# by NodeAffinity's PreFilterResult
_DAEMONSET = Workload(
    "SchedulingDaemonset",
    0,
    0,
    0,
    node_template=NODE,
    measure_pod_template=DAEMONSET_POD,
    measure_namespace=MEASURE_NAMESPACE,
    named_node=True,
    description="daemonset-style pods pinned to one node by node affinity on metadata.name",
)


def _ns_selector_shape(test: str, nodes: NodeTemplate, pods: PodTemplate, what: str) -> Workload:
    """affinity's *WithNSSelector tests: init-ns-<i> and measure-ns-0, all labelled
    team=devops, which the pods' terms select by namespaceSelector."""
    return Workload(
        test,
        0,
        0,
        0,
        node_template=nodes,
        init_pod_template=pods,
        measure_pod_template=pods,
        measure_namespace=MEASURE_NS_SELECTOR_NAMESPACE,
        source=AFFINITY_CONFIG,
        namespace_labels=dict(TEAM_DEVOPS),
        description=f"{what} across labelled namespaces (namespaceSelector)",
    )


_REQUIRED_ANTI_NS = _ns_selector_shape(
    "SchedulingRequiredPodAntiAffinityWithNSSelector",
    NODE,
    POD_ANTI_AFFINITY_NS_SELECTOR,
    "required pod anti-affinity",
)
_PREFERRED_ANTI_NS = _ns_selector_shape(
    "SchedulingPreferredAntiAffinityWithNSSelector",
    NODE,
    POD_PREFERRED_ANTI_AFFINITY_NS_SELECTOR,
    "preferred pod anti-affinity",
)
_REQUIRED_AFFINITY_NS = _ns_selector_shape(
    "SchedulingRequiredPodAffinityWithNSSelector",
    ZONE1_NODE,
    POD_AFFINITY_NS_SELECTOR,
    "required pod affinity",
)
_PREFERRED_AFFINITY_NS = _ns_selector_shape(
    "SchedulingPreferredAffinityWithNSSelector",
    NODE,
    POD_PREFERRED_AFFINITY_NS_SELECTOR,
    "preferred pod affinity",
)

# affinity: createNodes 1 (node-with-name), gated pods in namespace-1, barrier Attempted, then
# the measured pods (pod-with-label.yaml) in namespace-3; each bound one is an AssignedPodAdd
# event the queue checks against every gated pod's affinity
_GATED_AFFINITY = Workload(
    "SchedulingGatedPodsWithPodAffinityImpactForThroughput",
    0,
    0,
    0,
    node_template=NODE,
    measure_pod_template=POD_WITH_LABEL,
    measure_namespace="namespace-3",
    source=AFFINITY_CONFIG,
    named_node=True,
    gated_pod_template=GATED_POD_WITH_POD_AFFINITY,
    description="throughput while gated pods with pod affinity wait in the queue",
)
# misc: createNodes 1 (node-with-name), gated pods in namespace-1, barrier Attempted, pods in
# namespace-3 scheduled, then deleted at 50/s while the measured pods go into namespace-5
_WHILE_GATED = Workload(
    "SchedulingWhileGated",
    0,
    0,
    0,
    node_template=NODE,
    init_pod_template=LIGHT_POD,
    measure_pod_template=LIGHT_POD,
    init_namespace="namespace-3",
    measure_namespace="namespace-5",
    named_node=True,
    gated_pod_template=GATED_POD,
    delete_init_pods_per_second=50,
    description="throughput while gated pods wait and scheduled pods are deleted (50/s)",
)
# misc: createNodes (no template), churn recreate every 1000 ms in namespace-1, measured
# pod-default pods in namespace-2
_MIXED_CHURN = Workload(
    "SchedulingWithMixedChurn",
    0,
    0,
    0,
    recreate_churn=True,
    description="a node, an unschedulable high-priority pod and a Service come and go each second",
)


def _batching_shape(test: str, pods: PodTemplate, what: str) -> Workload:
    """batching's tests: nodes from node-default.yaml, the measured pods in namespace-1 (the
    op right after createNodes), the scheduler without default spread constraints."""
    return Workload(
        test,
        0,
        0,
        0,
        node_template=NODE,
        measure_pod_template=pods,
        measure_namespace=INIT_NAMESPACE,
        source=BATCHING_CONFIG,
        scheduler_profiles=NO_DEFAULT_TOPOLOGY_PROFILES,
        description=what,
    )


_HOST_PORT_CONFLICT = _batching_shape(
    "HostPortConflict", POD_HOSTPORT_80, "opportunistic batching: hostPort 80, one pod per node"
)
_RESOURCE_SATURATION = _batching_shape(
    "ResourceSaturation", POD_SATURATION, "opportunistic batching: 3 CPUs, one pod per node"
)


def _batches(base: Workload, nodes: int, pods: int, sizes: tuple[int, ...]) -> list[Workload]:
    return [
        _case(
            base, f"{nodes}Nodes_{pods}Pods_{size}BatchSize", nodes, pods, signature_batch_size=size
        )
        for size in sizes
    ]


# Sizes that fit this machine in place of upstream's 15,000- and 20,000-node cases (ours; see
# the README): the same shape at 5000 nodes, the largest node count the other shapes use.
_OURS = "ours: the largest size for a 2-core machine in the bench's 600 s"


def _ours(workload: Workload) -> Workload:
    return dataclasses.replace(workload, description=f"{workload.description} ({_OURS})")


NEW_WORKLOADS: tuple[Workload, ...] = (
    _case(_DAEMONSET, "5Nodes", 5, 10),
    _ours(_case(_DAEMONSET, "5000Nodes_10000Pods", 5000, 10000)),
    _case(_DAEMONSET, "15000Nodes", 15000, 30000, threshold=1100),
    _pod_sets(_REQUIRED_ANTI_NS, "10Nodes", 10, 2, 2, 6),
    _pod_sets(_REQUIRED_ANTI_NS, "500Nodes", 500, 4, 10, 100),
    _pod_sets(_REQUIRED_ANTI_NS, "5000Nodes", 5000, 40, 100, 1000),
    # upstream's name says 5000 nodes; its parameters create 6000
    _pod_sets(_REQUIRED_ANTI_NS, "5000Nodes_2000Pods", 6000, 40, 100, 2000, threshold=24),
    _pod_sets(_PREFERRED_ANTI_NS, "10Nodes", 10, 2, 2, 10),
    _pod_sets(_PREFERRED_ANTI_NS, "500Nodes", 500, 4, 10, 100),
    _pod_sets(_PREFERRED_ANTI_NS, "5000Nodes", 5000, 40, 100, 1000),
    _pod_sets(_PREFERRED_ANTI_NS, "5000Nodes_2000Pods", 5000, 40, 100, 2000, threshold=55),
    _pod_sets(_REQUIRED_AFFINITY_NS, "10Nodes", 10, 2, 2, 10),
    _pod_sets(_REQUIRED_AFFINITY_NS, "500Nodes", 500, 4, 10, 100),
    _pod_sets(_REQUIRED_AFFINITY_NS, "5000Nodes", 5000, 50, 100, 1000),
    _pod_sets(_REQUIRED_AFFINITY_NS, "5000Nodes_2000Pods", 5000, 50, 100, 2000, threshold=35),
    _pod_sets(_PREFERRED_AFFINITY_NS, "10Nodes", 10, 2, 2, 10),
    _pod_sets(_PREFERRED_AFFINITY_NS, "500Nodes", 500, 4, 10, 100),
    _pod_sets(_PREFERRED_AFFINITY_NS, "5000Nodes", 5000, 50, 100, 1000),
    _pod_sets(_PREFERRED_AFFINITY_NS, "5000Nodes_5000Pods", 5000, 50, 100, 5000, threshold=90),
    _case(_GATED_AFFINITY, "1Node_10GatedPods", 0, 10, gated_pods=10),
    _case(_GATED_AFFINITY, "1Node_10000GatedPods", 0, 20000, gated_pods=10000, threshold=110),
    _case(_WHILE_GATED, "1Node_10GatedPods", 0, 10, gated_pods=10, init_pods=10),
    _case(
        _WHILE_GATED,
        "1Node_10000GatedPods",
        0,
        20000,
        gated_pods=10000,
        init_pods=20000,
        threshold=910,
    ),
    _case(_MIXED_CHURN, "10Nodes", 10, 100),
    _case(_MIXED_CHURN, "1000Nodes", 1000, 1000),
    _case(_MIXED_CHURN, "5000Nodes", 5000, 2000),
    _case(_MIXED_CHURN, "5000Nodes_10000Pods", 5000, 10000, threshold=710),
    # batching has no thresholds upstream; the _OpportunisticBatchingDisabled cases need the
    # OpportunisticBatching feature gate, which aiosched does not have yet
    *_batches(_HOST_PORT_CONFLICT, 10, 10, (10,)),
    *map(_ours, _batches(_HOST_PORT_CONFLICT, 5000, 5000, (1000,))),
    *_batches(_HOST_PORT_CONFLICT, 20000, 20000, (10, 100, 1000, 5000, 20000)),
    *_batches(_RESOURCE_SATURATION, 10, 10, (10,)),
    *map(_ours, _batches(_RESOURCE_SATURATION, 5000, 5000, (1000,))),
    *_batches(_RESOURCE_SATURATION, 20000, 20000, (10, 100, 1000, 5000, 20000)),
)

# ---- the DRA shapes (issue 24) ------------------------------------------------------------
# dra/performance-config.yaml and dra/prioritizedlist/performance-config.yaml, newest versions
# the search index stores; thresholds from the newest version that sets them. Their featureGates
# (DynamicResourceAllocation, DRAPrioritizedList) are aiosched's defaults.

DRA_CONFIG = "dra/performance-config.yaml"
PRIORITIZED_LIST_CONFIG = "dra/prioritizedlist/performance-config.yaml"
DRA_DRIVER = "test-driver.cdi.k8s.io"  # createResourceDriver driverName
DRA_NODE_GLOB = "scheduler-perf-dra-*"  # createResourceDriver nodes
DRA_INIT_NAMESPACE = "init"
DRA_TEST_NAMESPACE = "test"
DEVICE_CLASS = "test-class"  # templates/deviceclass.yaml
NO_DEVICES_CLASS = "no-devices-class"  # templates/deviceclass-no-devices.yaml
CLAIM_TEMPLATE = "test-claim-template"
FIRST_AVAILABLE_TEMPLATE = "dra/templates/resourceclaimtemplate-first-available.yaml"
DEVICE_CLASS_DRIVERS = {  # each DeviceClass template: its name and the driver it selects
    "dra/templates/deviceclass.yaml": (DEVICE_CLASS, DRA_DRIVER),
    "dra/templates/deviceclass-no-devices.yaml": (NO_DEVICES_CLASS, "no-such-driver.cdi.k8s.io"),
}

# templates/pod-with-claim-template.yaml: no resources but the claim, no ports
POD_WITH_CLAIM_TEMPLATE = PodTemplate(
    "dra/templates/pod-with-claim-template.yaml",
    spec={"resourceClaims": [{"name": "resource", "resourceClaimTemplateName": CLAIM_TEMPLATE}]},
    requests={},
    ports=[],
    container_claims=("resource",),
)


def _dra_shape(test: str, description: str, source: str = DRA_CONFIG) -> Workload:
    """A dra/ test: nodes from node-default.yaml and node-with-dra-test-driver.yaml, pods from
    pod-with-claim-template.yaml in the namespaces `init` and `test`."""
    return Workload(
        test,
        0,
        0,
        0,
        node_template=NODE,
        init_pod_template=POD_WITH_CLAIM_TEMPLATE,
        measure_pod_template=POD_WITH_CLAIM_TEMPLATE,
        init_namespace=DRA_INIT_NAMESPACE,
        measure_namespace=DRA_TEST_NAMESPACE,
        source=source,
        description=description,
        dra=DraSetup(0, 0),
    )


def _dra_case(
    base: Workload,
    name: str,
    *,
    with_dra: int,
    without_dra: int,
    max_claims: int,
    init_pods: int = 0,
    measure_pods: int = 10,
    init_claims: int = 0,
    seconds: float = 0.0,
    threshold: float | None = None,
) -> Workload:
    """One case with upstream's params (nodesWithDRA, nodesWithoutDRA, maxClaimsPerNode,
    initPods, measurePods, initClaims, duration)."""
    assert base.dra is not None
    setup = dataclasses.replace(
        base.dra,
        nodes_with_dra=with_dra,
        max_claims_per_node=max_claims,
        init_claims=init_claims,
        steady_seconds=seconds,
    )
    return _case(
        base,
        name,
        without_dra + with_dra,
        measure_pods,
        init_pods=init_pods,
        threshold=threshold,
        dra=setup,
    )


# SchedulingWithResourceClaimTemplate: the claim template in `init` and `test`; counts chosen so
# that the cluster fills up completely
_CLAIM_TEMPLATE = dataclasses.replace(
    _dra_shape(
        "SchedulingWithResourceClaimTemplate",
        "a claim per pod from a template; the devices fill up",
    ),
    dra=DraSetup(0, 0, claim_template_namespaces=(DRA_INIT_NAMESPACE, DRA_TEST_NAMESPACE)),
)
# SteadyStateClusterResourceClaimTemplate: initClaims allocated out of band, then 10 pods kept
# pending for `duration`, each deleted once scheduled and replaced
_STEADY_STATE = _dra_shape(
    "SteadyStateClusterResourceClaimTemplate",
    "10 pods with claims kept pending: each deleted once scheduled, and replaced",
)
# FirstAvailable: a prioritized list whose first sub-request's class has no devices
_FIRST_AVAILABLE = dataclasses.replace(
    _dra_shape(
        "FirstAvailable",
        "a claim per pod whose firstAvailable list falls through to the second class",
        PRIORITIZED_LIST_CONFIG,
    ),
    dra=DraSetup(
        0,
        0,
        device_classes=(
            "dra/templates/deviceclass.yaml",
            "dra/templates/deviceclass-no-devices.yaml",
        ),
        claim_template=FIRST_AVAILABLE_TEMPLATE,
    ),
)


def _steady(name: str, nodes: int, init_claims: int, threshold: float | None = None) -> Workload:
    return _dra_case(
        _STEADY_STATE,
        name,
        with_dra=nodes,
        without_dra=0,
        max_claims=10,
        init_claims=init_claims,
        seconds=10.0,
        threshold=threshold,
    )


DRA_WORKLOADS: tuple[Workload, ...] = (
    _dra_case(_CLAIM_TEMPLATE, "fast", with_dra=1, without_dra=1, max_claims=10),
    _dra_case(
        _CLAIM_TEMPLATE,
        "2000pods_100nodes",
        with_dra=100,
        without_dra=0,
        max_claims=20,
        init_pods=1000,
        measure_pods=1000,
    ),
    _dra_case(
        _CLAIM_TEMPLATE,
        "2000pods_200nodes",
        with_dra=200,
        without_dra=0,
        max_claims=10,
        init_pods=1000,
        measure_pods=1000,
    ),
    # the _QueueingHintsEnabled twin's floor is 56
    _dra_case(
        _CLAIM_TEMPLATE,
        "5000pods_500nodes",
        with_dra=500,
        without_dra=0,
        max_claims=10,
        init_pods=2500,
        measure_pods=2500,
        threshold=40,
    ),
    _dra_case(_STEADY_STATE, "fast", with_dra=1, without_dra=1, max_claims=10, seconds=2.0),
    _steady("empty_100nodes", 100, 0),
    _steady("empty_200nodes", 200, 0),
    _steady("empty_500nodes", 500, 0, threshold=64),  # the twin's floor: 64
    # half of the devices in use
    _steady("half_100nodes", 100, 500),
    _steady("half_200nodes", 200, 1000),
    _steady("half_500nodes", 500, 2500, threshold=70),  # the twin's floor: 60
    # room for exactly 10 more pods
    _steady("full_100nodes", 100, 990),
    _steady("full_200nodes", 200, 1990),
    _steady("full_500nodes", 500, 4990, threshold=60),  # the twin's floor: 60
    _dra_case(_FIRST_AVAILABLE, "fast", with_dra=1, without_dra=1, max_claims=10),
)

# ---- the gang shapes (issue 25) -----------------------------------------------------------
# podgroup/gangscheduling/performance-config.yaml, the newest version the search index stores
# (no thresholds there): createNodes (node-default.yaml), createNamespaces gang-ns (1),
# createPodGroups then createPods with collectMetrics, both in gang-ns-0. Its featureGates:
# GenericWorkload. aiosched also needs GangScheduling (alpha, off by default here) and the
# plugin enabled in the profile, where upstream's v1.36+ default plugins include it. The
# _CompositePodGroupEnabled cases need gates aiosched does not have (CompositePodGroup), so
# they are not ported.

GANG_CONFIG = "podgroup/gangscheduling/performance-config.yaml"
GANG_NAMESPACE = "gang-ns-0"
GANG_FEATURE_GATES = ("GenericWorkload", "GangScheduling")
GANG_PROFILES = (
    "profiles:\n"
    "- schedulerName: default-scheduler\n"
    "  plugins:\n"
    "    multiPoint:\n"
    "      enabled:\n"
    "      - name: GangScheduling\n"
)
# templates/gang-pod.yaml: 100m CPU and 100Mi, no limits, no ports; its spec.schedulingGroup is
# added per pod (gang_pod_manifest)
GANG_POD = PodTemplate(
    "podgroup/gangscheduling/templates/gang-pod.yaml",
    requests={"cpu": "100m", "memory": "100Mi"},
    with_limits=False,
    ports=[],
)
_GANG = Workload(
    "GangScheduling",
    0,
    0,
    0,
    node_template=NODE,
    measure_pod_template=GANG_POD,
    init_namespace=GANG_NAMESPACE,
    measure_namespace=GANG_NAMESPACE,
    source=GANG_CONFIG,
    scheduler_profiles=GANG_PROFILES,
    feature_gates=GANG_FEATURE_GATES,
    description="gangs: one PodGroup (minCount = its size) per group of pods",
)


def _gangs(name: str, nodes: int, groups: int, per_group: int) -> Workload:
    """One case with upstream's params (initNodes, initPodGroups, podsPerGroup)."""
    return _case(_GANG, name, nodes, groups * per_group, gang=GangSetup(groups, per_group))


GANG_WORKLOADS: tuple[Workload, ...] = (
    _gangs("10Nodes_3Gangs", 10, 3, 3),
    _gangs("100Nodes_10Gangs", 100, 10, 3),
    _gangs("5000Nodes_1000Gangs_3000Pods", 5000, 1000, 3),
    _gangs("5000Nodes_2000Gangs_6000Pods", 5000, 2000, 3),
    _gangs("5000Nodes_3000Gangs_9000Pods", 5000, 3000, 3),
    _gangs("5000Nodes_3Gangs_3000Pods_1000PerGroup", 5000, 3, 1000),
    _gangs("5000Nodes_6Gangs_6000Pods_1000PerGroup", 5000, 6, 1000),
    _gangs("5000Nodes_9Gangs_9000Pods_1000PerGroup", 5000, 9, 1000),
    _gangs("5000Nodes_10Gangs_50000Pods_5000PerGroup", 5000, 10, 5000),
)

WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("SchedulingBasic/Smoke", 50, 20, 200, description="quick check (ours)"),
        Workload("SchedulingBasic/5Nodes", 5, 5, 10),
        Workload("SchedulingBasic/500Nodes", 500, 500, 1000),
        Workload("SchedulingBasic/5000Nodes", 5000, 1000, 1000),
        Workload("SchedulingBasic/5000Nodes_10000Pods", 5000, 1000, 10000, threshold=680),
        Workload("SchedulingBasic/5000Nodes_50000Pods", 5000, 5000, 50000, threshold=810),
        # Ours (issue 22): upstream stops at 50,000 pods. A cost per pod that is flat as the
        # cluster fills up must hold the 50,000-pod case's floor at twice the pods, hence its
        # threshold; the bench's segments (10,000 pods each) say whether it stayed flat.
        Workload(
            "SchedulingBasic/5000Nodes_100000Pods",
            5000,
            5000,
            100000,
            threshold=810,
            description="flat cost at 100,000 pods (ours; the 50,000-pod case's floor)",
        ),
        # affinity/performance-config.yaml
        _ANTI.case("5Nodes", 5, 1, 4),
        _ANTI.case("500Nodes", 500, 100, 400),
        _ANTI.case("5000Nodes", 5000, 1000, 1000),
        _ANTI.case("5000Nodes_2000Pods", 5000, 1000, 2000, threshold=60),
        _AFFINITY.case("5Nodes", 5, 5, 10),
        _AFFINITY.case("500Nodes", 500, 500, 1000),
        _AFFINITY.case("5000Nodes", 5000, 5000, 1000),
        _AFFINITY.case("5000Nodes_5000Pods", 5000, 5000, 5000, threshold=35),
        _PREFERRED_AFFINITY.case("5Nodes", 5, 5, 10),
        _PREFERRED_AFFINITY.case("500Nodes", 500, 500, 1000),
        _PREFERRED_AFFINITY.case("5000Nodes", 5000, 5000, 1000),
        _PREFERRED_AFFINITY.case("5000Nodes_5000Pods", 5000, 5000, 5000, threshold=90),
        _PREFERRED_ANTI.case("5Nodes", 5, 5, 10),
        _PREFERRED_ANTI.case("500Nodes", 500, 500, 1000),
        _PREFERRED_ANTI.case("5000Nodes", 5000, 5000, 1000),
        _PREFERRED_ANTI.case("5000Nodes_5000Pods", 5000, 5000, 5000, threshold=90),
        _NODE_AFFINITY.case("5Nodes", 5, 5, 10),
        _NODE_AFFINITY.case("500Nodes", 500, 500, 1000),
        _NODE_AFFINITY.case("5000Nodes", 5000, 5000, 1000),
        _NODE_AFFINITY.case("5000Nodes_10000Pods", 5000, 5000, 10000, threshold=220),
        # topology_spreading/performance-config.yaml
        _SPREAD.case("5Nodes", 5, 10, 10),
        _SPREAD.case("500Nodes", 500, 1000, 1000),
        _SPREAD.case("5000Nodes", 5000, 5000, 2000),
        _SPREAD.case("5000Nodes_5000Pods", 5000, 5000, 5000, threshold=460),
        _PREFERRED_SPREAD.case("5Nodes", 5, 10, 10),
        _PREFERRED_SPREAD.case("500Nodes", 500, 1000, 1000),
        _PREFERRED_SPREAD.case("5000Nodes", 5000, 5000, 2000),
        _PREFERRED_SPREAD.case("5000Nodes_5000Pods", 5000, 5000, 5000, threshold=340),
        # default_preemption/performance-config.yaml
        _PREEMPTION_BASIC.case("5Nodes", 5, 20, 5),
        _PREEMPTION_BASIC.case("1000Nodes", 1000, 4000, 1000),
        _PREEMPTION_ASYNC.case("5Nodes", 5, 20, 5),
        _PREEMPTION_ASYNC.case("500Nodes", 500, 2000, 500),
        _PREEMPTION_ASYNC.case("5000Nodes", 5000, 20000, 5000, threshold=570),
        _UNSCHEDULABLE.case("5Nodes/1Init/10Pods", 5, 1, 10),
        _UNSCHEDULABLE.case("500Nodes/10Init/1kPods", 500, 10, 1000),
        _UNSCHEDULABLE.case("5kNodes/100Init/1kPods", 5000, 100, 1000),
        _UNSCHEDULABLE.case("5kNodes/100Init/10kPods", 5000, 100, 10000, threshold=590),
        _UNSCHEDULABLE.case("5kNodes/20kInit/10kPods", 5000, 20000, 10000, threshold=600),
        # volumes/performance-config.yaml
        _IN_TREE_PVS.case("5Nodes", 5, 5, 10),
        _IN_TREE_PVS.case("500Nodes", 500, 500, 1000),
        _IN_TREE_PVS.case("5000Nodes", 5000, 5000, 1000),
        _IN_TREE_PVS.case("5000Nodes_2000Pods", 5000, 1000, 2000, threshold=290),
        _CSI_PVS.case("5Nodes", 5, 5, 10),
        _CSI_PVS.case("500Nodes", 500, 500, 1000),
        _CSI_PVS.case("5000Nodes", 5000, 5000, 1000),
        _CSI_PVS.case("5000Nodes_5000Pods", 5000, 5000, 5000, threshold=100),
        _PREEMPTION_PVS.case("5Nodes", 5, 20, 5),
        _PREEMPTION_PVS.case("1000Nodes", 1000, 4000, 1000),
        *NEW_WORKLOADS,
        *DRA_WORKLOADS,
        *GANG_WORKLOADS,
    )
}


class UnknownWorkload(ValueError):
    pass


def resolve(names: list[str]) -> list[Workload]:
    """The workloads named, in order; a name may also be a prefix ending in "/" (a whole test)."""
    chosen: list[Workload] = []
    for name in names:
        if name.endswith("/"):
            matched = [w for key, w in WORKLOADS.items() if key.startswith(name)]
        else:
            matched = [WORKLOADS[name]] if name in WORKLOADS else []
        if not matched:
            raise UnknownWorkload(unknown_workload_message(name, WORKLOADS))
        chosen.extend(matched)
    return chosen


def node_manifest(workload: Workload, index: int) -> dict[str, Any]:
    """templates/node-default.yaml with a fixed name (not generateName scheduler-perf-) and the
    workload's node labels; a dra/ test's last nodes are node-with-dra-test-driver.yaml."""
    name = workload_node_name(workload, index)
    metadata: dict[str, Any] = {"name": name}
    labels = workload.node_template.labels(index, name)
    if labels:
        metadata["labels"] = labels
    capacity = dict(NODE_CAPACITY)
    for driver, count in workload.node_template.csi_attach_limits:
        capacity[f"attachable-volumes-csi-{driver}"] = str(count)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": {},
        "status": {
            "capacity": capacity,
            "conditions": [{"status": "True", "type": "Ready"}],
            "phase": "Running",
        },
    }


def csi_node_manifest(workload: Workload, index: int) -> dict[str, Any] | None:
    """The CSINode nodeAllocatableStrategy creates for node `index`, if the template has one."""
    limits = workload.node_template.csi_attach_limits
    if not limits:
        return None
    name = node_name(index)
    drivers = [
        {"name": driver, "nodeID": name, "allocatable": {"count": count}}
        for driver, count in limits
    ]
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": drivers},
    }


def volume_manifests(
    template: VolumeTemplate, index: int, namespace: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(PVC, PV) for pod `index`, bound to each other as CreatePodWithPersistentVolume makes
    them: claim `pvc-<index>`, volume `<namespace>-pv-<index>`, both with Bound phases."""
    claim_name = f"pvc-{index}"
    volume_name = f"{namespace}-pv-{index}"
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim_name,
            "namespace": namespace,
            "annotations": {"pv.kubernetes.io/bind-completed": "true"},
        },
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": volume_name,
        },
        "status": {"phase": "Bound"},
    }
    source: dict[str, Any]
    if template.source == "csi":
        source = {"csi": {"driver": EBS_CSI_DRIVER, "volumeHandle": volume_name}}
    else:
        source = {"awsElasticBlockStore": {"volumeID": volume_name}}
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": volume_name},
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "capacity": {"storage": "1Gi"},
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": namespace,
                "name": claim_name,
            },
            **source,
        },
        "status": {"phase": "Bound"},
    }
    return claim, volume


def with_claim(pod: dict[str, Any], index: int) -> dict[str, Any]:
    """The pod with its claim `pvc-<index>` as volume "vol"."""
    pod["spec"]["volumes"] = [
        {"name": "vol", "persistentVolumeClaim": {"claimName": f"pvc-{index}"}}
    ]
    return pod


def pod_manifest(workload: Workload, index: int, *, measured: bool) -> dict[str, Any]:
    """The workload's init or measured pod template, with a fixed name (so creation times can be
    matched) in that phase's namespace, and its claim when the phase gives pods volumes."""
    template = workload.measure_pod_template if measured else workload.init_pod_template
    namespace = workload.measure_namespace if measured else workload.init_namespace
    if measured and workload.gang is not None:
        return gang_pod_manifest(workload, index)
    pod = template_manifest(template, pod_name(index), namespace)
    if measured and workload.signature_batch_size:
        # scheduler_perf's podTemplateWithParams.GetPodTemplate (executor.go)
        label = f"signature-label-{index // workload.signature_batch_size}"
        pod["metadata"].setdefault("labels", {})[SIGNATURE_LABEL] = label
    volume = workload.measure_volume if measured else workload.init_volume
    return pod if volume is None else with_claim(pod, index)


def pod_set_namespace(index: int) -> str:
    """createPodSets namespacePrefix init-ns: init-ns-<index>."""
    return f"init-ns-{index}"


def pod_set_manifest(workload: Workload, namespace: str, index: int) -> dict[str, Any]:
    """Pod `index` of a createPodSets set in `namespace`: the init template."""
    return template_manifest(workload.init_pod_template, pod_name(index), namespace)


def gated_pod_manifest(workload: Workload, index: int) -> dict[str, Any]:
    """Gated pod `index`, named gated-<index> (upstream: generateName from its template)."""
    assert workload.gated_pod_template is not None
    return template_manifest(
        workload.gated_pod_template, f"gated-{index}", workload.gated_namespace
    )


def named_node_manifest() -> dict[str, Any]:
    """templates/node-with-name.yaml: scheduler-perf-node, room for 90,000 pods."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": SCHEDULER_PERF_NODE,
            "labels": {HOSTNAME_LABEL: SCHEDULER_PERF_NODE},
        },
        "spec": {},
        "status": {
            "capacity": {"pods": NAMED_NODE_PODS, "cpu": "4", "memory": "32Gi"},
            "conditions": [{"status": "True", "type": "Ready"}],
            "phase": "Running",
        },
    }


def recreate_churn_manifests() -> tuple[dict[str, Any], ...]:
    """SchedulingWithMixedChurn's churn templatePaths, in order: templates/churn/node-default.yaml,
    templates/pod-high-priority-large-cpu.yaml, templates/churn/service-default.yaml, each with
    generateName as upstream's (the churn op creates them from the files unchanged)."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"generateName": "node-churn-"},
        "status": {
            "capacity": {"pods": "0"},
            "conditions": [{"status": "True", "type": "Ready"}],
            "phase": "Running",
        },
    }
    pod = template_manifest(POD_HIGH_PRIORITY_LARGE_CPU, "", "")
    pod["metadata"] = {"generateName": "pod-h-"}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"generateName": "service-churn-"},
        "spec": {
            "selector": {"app": "foo"},
            "ports": [{"protocol": "TCP", "port": 8080, "targetPort": 8080}],
        },
    }
    return node, pod, service


def churn_pod_manifest(workload: Workload, index: int) -> dict[str, Any]:
    """The churn op's pod number `index`."""
    assert workload.churn_pod_template is not None
    return template_manifest(workload.churn_pod_template, f"churn-{index}", CHURN_NAMESPACE)


def template_manifest(template: PodTemplate, name: str, namespace: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if template.labels:
        metadata["labels"] = dict(template.labels)
    spec: dict[str, Any] = copy.deepcopy(template.spec)
    if template.high_priority:
        spec["priorityClassName"] = HIGH_PRIORITY_CLASS
    if template.scheduling_gates:
        spec["schedulingGates"] = [{"name": gate} for gate in template.scheduling_gates]
    container: dict[str, Any] = {"image": PAUSE_IMAGE, "name": "pause"}
    if template.ports:
        container["ports"] = [dict(port) for port in template.ports]
    if template.requests:  # some templates (daemonset-pod, light-pod) set no resources
        resources: dict[str, Any] = {"requests": dict(template.requests)}
        if template.with_limits:
            resources = {"limits": dict(template.requests), **resources}
        container["resources"] = resources
    if template.container_claims:
        claims = [{"name": name} for name in template.container_claims]
        container.setdefault("resources", {})["claims"] = claims
    spec["containers"] = [container]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def priority_class_manifest() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": HIGH_PRIORITY_CLASS},
        "value": HIGH_PRIORITY,
    }


def namespace_manifest(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def node_name(index: int) -> str:
    return f"scheduler-perf-{index}"


def pod_name(index: int) -> str:
    return f"pod-{index}"


def workload_node_name(workload: Workload, index: int) -> str:
    """Node `index` of the workload: scheduler-perf-<index>, or for the nodes a dra/ test creates
    from node-with-dra-test-driver.yaml scheduler-perf-dra-<index> (its {{.Index}} counts on
    from the nodes created before, as scheduler_perf's node preparer starts at nextNodeIndex)."""
    dra = workload.dra
    if dra is not None and index >= workload.init_nodes - dra.nodes_with_dra:
        return f"scheduler-perf-dra-{index}"
    return node_name(index)


# ---- the DRA objects (dra/templates/) --------------------------------------------------------
RESOURCE_API = "resource.k8s.io/v1"


def device_class_manifest(template: str) -> dict[str, Any]:
    """templates/deviceclass.yaml or deviceclass-no-devices.yaml: a class selecting a driver."""
    name, driver = DEVICE_CLASS_DRIVERS[template]
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def claim_template_manifest(template: str, namespace: str) -> dict[str, Any]:
    """templates/resourceclaimtemplate.yaml rendered with its defaults (numRequests 1, no
    selectors, no constraints), or resourceclaimtemplate-first-available.yaml."""
    request: dict[str, Any]
    if template == FIRST_AVAILABLE_TEMPLATE:
        request = {
            "name": "req-0",
            "firstAvailable": [
                {"name": "sub-0", "deviceClassName": NO_DEVICES_CLASS},
                {"name": "sub-1", "deviceClassName": DEVICE_CLASS},
            ],
        }
    else:
        request = {"name": "req-0", "exactly": {"deviceClassName": DEVICE_CLASS}}
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": CLAIM_TEMPLATE, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def init_claim_manifest(index: int) -> dict[str, Any]:
    """templates/resourceclaim.yaml: test-claim-<index> in `init`, one device of test-class."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaim",
        "metadata": {"name": f"test-claim-{index}", "namespace": DRA_INIT_NAMESPACE},
        "spec": {
            "devices": {
                "requests": [{"name": "req-0", "exactly": {"deviceClassName": DEVICE_CLASS}}]
            }
        },
    }


def resource_slice_manifest(driver: str, node: str, devices: int) -> dict[str, Any]:
    """scheduler_perf's resourceSlice (dra.go): one slice named after the node, pool = the node's
    name, `devices` devices instance-<i> with attributes model, family, driverVersion and
    dra.example.com/numa = i and capacity memory 1Gi. Upstream also sets the binding-condition
    fields, which its API server drops while DRADeviceBindingConditions is off (as in these
    tests; aiosched refuses that gate), so they are left out here."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceSlice",
        "metadata": {"name": node},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"instance-{i}",
                    "attributes": {
                        "model": {"string": "A100"},
                        "family": {"string": "GPU"},
                        "driverVersion": {"version": "1.2.3"},
                        "dra.example.com/numa": {"int": i},
                    },
                    "capacity": {"memory": {"value": "1Gi"}},
                }
                for i in range(devices)
            ],
        },
    }


# ---- the gang objects (podgroup/gangscheduling/templates/) -----------------------------------
SCHEDULING_V1BETA1 = "scheduling.k8s.io/v1beta1"


def pod_group_name(index: int) -> str:
    return f"gang-{index}"


def pod_group_manifest(workload: Workload, index: int) -> dict[str, Any]:
    """templates/podgroup.yaml: gang-<index>, a gang policy of minCount podsPerGroup."""
    assert workload.gang is not None
    return {
        "apiVersion": SCHEDULING_V1BETA1,
        "kind": "PodGroup",
        "metadata": {"name": pod_group_name(index), "namespace": workload.measure_namespace},
        "spec": {"schedulingPolicy": {"gang": {"minCount": workload.gang.pods_per_group}}},
    }


def gang_member_group(workload: Workload, index: int) -> str:
    """The PodGroup measured pod `index` names: gang-<index / podsPerGroup> (DivideInt)."""
    assert workload.gang is not None
    return pod_group_name(index // workload.gang.pods_per_group)


def gang_pod_name(index: int) -> str:
    return f"test-gang-scheduling-{index}"


def gang_pod_manifest(workload: Workload, index: int) -> dict[str, Any]:
    """templates/gang-pod.yaml: test-gang-scheduling-<index>, naming its group in
    spec.schedulingGroup.podGroupName."""
    pod = template_manifest(
        workload.measure_pod_template, gang_pod_name(index), workload.measure_namespace
    )
    pod["spec"]["schedulingGroup"] = {"podGroupName": gang_member_group(workload, index)}
    return pod
