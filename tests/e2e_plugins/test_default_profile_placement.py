"""The default profile decides like kube-scheduler: `aiosched cluster` and `aiosched run` as
separate processes, driven with kubectl apply of YAML manifests.

One cluster of six deliberately different nodes serves every case. Each placement case applies
one pod, waits for it to be bound or rejected, checks the outcome and deletes the pod, so every
case starts from the same cluster state and its expectation can be worked out by hand from
upstream's plugins and default weights (v1.30+, pkg/scheduler/apis/config/v1/default_plugins.go):

  total = 3 x TaintToleration + 2 x NodeAffinity + NodeResourcesFit (LeastAllocated)
          + NodeResourcesBalancedAllocation + ImageLocality

  LeastAllocated      = mean over cpu, memory of (allocatable - requested) * 100 // allocatable
  BalancedAllocation  = int((1 - |cpu fraction - memory fraction| / 2) * 100)
  TaintToleration     = 100 - 100 * untolerated PreferNoSchedule taints // max over nodes
                        (100 everywhere when no feasible node has one)
  NodeAffinity        = 100 * matched preferred weights // max over nodes (0 when max is 0)

Only cases with a unique best node are kept (selectHost breaks ties at random); the scores
behind each expectation are in the case's comment as "node total (fit + balanced + 3*taint +
2*affinity [+ image])".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from manifests import (
    PAUSE,
    expr,
    merge,
    node,
    pod,
    preferred,
    required,
    taint,
    to_yaml,
    toleration,
    tolerations,
)
from processes import Kubectl, start_cluster, start_scheduler, stopping, wait_until

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""

ZONE = "topology.kubernetes.io/zone"
MiB = 1024 * 1024
TRAINER = "registry.example.com/ml/trainer:2.1"
GPU = "example.com/gpu"

NODES = (
    node("n-small", "2", "4Gi", {ZONE: "a", "disktype": "hdd", "gen": "2"}),
    node("n-large", "8", "16Gi", {ZONE: "b", "disktype": "ssd", "gen": "4"}),
    # Same size and zone as n-large; it alone has the trainer image (800Mi) pulled.
    node(
        "n-gpu",
        "8",
        "16Gi",
        {ZONE: "b", "accelerator": "nvidia", "gen": "5"},
        taints=[taint("dedicated", "gpu", "NoSchedule")],
        images=[([TRAINER, "registry.example.com/ml/trainer@sha256:" + "ab" * 32], 800 * MiB)],
        extended={GPU: "2"},
    ),
    node(
        "n-spot",
        "16",
        "32Gi",
        {ZONE: "c", "gen": "3"},
        taints=[taint("spot", "true", "PreferNoSchedule")],
    ),
    node("n-cordoned", "32", "64Gi", {ZONE: "a", "gen": "6"}),  # `kubectl cordon`ed below
    node(
        "n-draining",
        "16",
        "32Gi",
        {ZONE: "d", "gen": "6"},
        taints=[taint("maintenance", "true", "NoExecute")],
    ),
)

# Bound by the user through spec.nodeName, never seen by the scheduler's queue; it holds
# hostPort 8080 and a little cpu and memory on n-spot, which every decision must account for.
PINNED = pod("pinned", cpu="100m", memory="128Mi", host_port=8080, nodeName="n-spot")

# Reasons every rejection message carries for the three nodes no ordinary pod may use.
CORDONED = "1 node(s) were unschedulable"
TAINTED = "2 node(s) had untolerated taint(s)"  # n-gpu and n-draining
TAINTED_AND_CORDONED = f"{CORDONED}, {TAINTED}"


@dataclass(frozen=True)
class PodCase:
    id: str
    spec: Mapping[str, Any] = field(default_factory=dict)
    cpu: str = "500m"
    memory: str = "512Mi"
    image: str = PAUSE
    host_port: int | None = None
    protocol: str = "TCP"
    extended: Mapping[str, str] = field(default_factory=dict)
    init_cpu: str | None = None

    def manifest(self, name: str | None = None) -> dict[str, Any]:
        return pod(
            name or self.id,
            cpu=self.cpu,
            memory=self.memory,
            image=self.image,
            host_port=self.host_port,
            protocol=self.protocol,
            extended=self.extended,
            init_cpu=self.init_cpu,
            **self.spec,
        )


@dataclass(frozen=True, kw_only=True)
class Placement(PodCase):
    expect: str


PLACEMENTS = [
    # ---- decided by filters: exactly one node passes ----
    Placement("selector-ssd", {"nodeSelector": {"disktype": "ssd"}}, expect="n-large"),
    # nodeSelector and required affinity must both match (n-gpu is zone b but has no disktype).
    Placement(
        "selector-and-affinity",
        merge({"nodeSelector": {ZONE: "b"}}, required([expr("disktype", "In", "ssd")])),
        expect="n-large",
    ),
    # PreferNoSchedule never filters: the only zone-c node takes the pod.
    Placement("required-in", required([expr(ZONE, "In", "c")]), expect="n-spot"),
    # Zones a and d: n-cordoned is unschedulable, n-draining's NoExecute taint is untolerated.
    Placement("required-notin", required([expr(ZONE, "NotIn", "b", "c")]), expect="n-small"),
    # A toleration with operator Exists and no effect tolerates the key with every effect.
    Placement(
        "required-exists-tolerated",
        merge(
            required([expr("accelerator", "Exists")]),
            tolerations(toleration("dedicated", "Exists")),
        ),
        expect="n-gpu",
    ),
    Placement(
        "required-doesnotexist", required([expr("disktype", "DoesNotExist")]), expect="n-spot"
    ),
    Placement("required-gt", required([expr("gen", "Gt", "3")]), expect="n-large"),
    Placement("required-lt", required([expr("gen", "Lt", "3")]), expect="n-small"),
    # Terms are ORed: n-small or n-large (n-cordoned is unschedulable); scores decide:
    # n-large 492 (94 + 98 + 300) > n-small 474 (81 + 93 + 300).
    Placement(
        "required-terms-ored",
        required([expr(ZONE, "In", "a")], [expr("disktype", "In", "ssd")]),
        expect="n-large",
    ),
    Placement(
        "toleration-equal",
        merge(
            {"nodeSelector": {"accelerator": "nvidia"}},
            tolerations(toleration("dedicated", "Equal", "gpu", "NoSchedule")),
        ),
        expect="n-gpu",
    ),
    Placement(
        "toleration-noexecute",
        merge(
            required([expr(ZONE, "In", "d")]),
            # tolerationSeconds limits how long the pod may stay, not whether it may come.
            tolerations(toleration("maintenance", "Exists", effect="NoExecute", seconds=300)),
        ),
        expect="n-draining",
    ),
    # An empty key with Exists tolerates every taint, node.kubernetes.io/unschedulable included,
    # so NodeUnschedulable lets the pod onto the cordoned node (as DaemonSet pods do); gen 6 leaves
    # n-cordoned 487 (87 + 100 + 300) > n-draining 475 (75 + 100 + 300).
    Placement(
        "toleration-wildcard",
        merge(required([expr("gen", "Gt", "5")]), tolerations(toleration(operator="Exists"))),
        cpu="4",
        memory="8Gi",
        expect="n-cordoned",
    ),
    Placement(
        "toleration-unschedulable",
        merge(
            {"nodeSelector": {"kubernetes.io/hostname": "n-cordoned"}},
            tolerations(
                toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule")
            ),
        ),
        expect="n-cordoned",
    ),
    # ---- decided by scores ----
    # Fits n-large and n-spot only. The bigger n-spot has more room but an untolerated
    # PreferNoSchedule taint: n-large 450 (50 + 100 + 300) > n-spot 173 (74 + 99 + 0).
    Placement("prefer-no-schedule-avoided", cpu="4", memory="8Gi", expect="n-large"),
    # Tolerated, the taint costs nothing: n-spot 473 (74 + 99 + 300) > n-large 450.
    Placement(
        "prefer-no-schedule-tolerated",
        tolerations(toleration("spot", "Equal", "true", "PreferNoSchedule")),
        cpu="4",
        memory="8Gi",
        expect="n-spot",
    ),
    Placement(
        "prefer-no-schedule-tolerated-any-effect",
        tolerations(toleration("spot", "Exists")),
        cpu="4",
        memory="8Gi",
        expect="n-spot",
    ),
    # A NoSchedule toleration does not tolerate a PreferNoSchedule taint.
    Placement(
        "prefer-no-schedule-wrong-effect",
        tolerations(toleration("spot", "Equal", "true", "NoSchedule")),
        cpu="4",
        memory="8Gi",
        expect="n-large",
    ),
    # n-spot would win (473 vs 450) but the nodeName pod holds hostPort 8080 there.
    Placement(
        "host-port-held-by-node-name-pod",
        tolerations(toleration("spot", "Exists")),
        cpu="4",
        memory="8Gi",
        host_port=8080,
        expect="n-large",
    ),
    # Ports conflict only for the same protocol: UDP 8080 is free on n-spot.
    Placement(
        "host-port-other-protocol",
        tolerations(toleration("spot", "Exists")),
        cpu="4",
        memory="8Gi",
        host_port=8080,
        protocol="UDP",
        expect="n-spot",
    ),
    # Only n-gpu has the extended resource.
    Placement(
        "extended-resource",
        tolerations(toleration("dedicated", "Exists")),
        extended={GPU: "1"},
        expect="n-gpu",
    ),
    # LeastAllocated + BalancedAllocation alone: n-large 492 > n-small 474 > n-spot 196.
    Placement("least-allocated", expect="n-large"),
    # n-small 674 (81 + 93 + 300 + 200) > n-large 492.
    Placement("preferred-in", preferred((100, [expr("disktype", "In", "hdd")])), expect="n-small"),
    Placement(
        "preferred-notin", preferred((100, [expr(ZONE, "NotIn", "b", "c")])), expect="n-small"
    ),
    # Affinity (weight 2) loses to an untolerated PreferNoSchedule taint (weight 3):
    # n-large 492 > n-small 474 > n-spot 396 (97 + 99 + 0 + 200).
    Placement("preferred-vs-taint", preferred((100, [expr(ZONE, "In", "c")])), expect="n-large"),
    # ... and wins once the taint is tolerated: n-spot 696 (97 + 99 + 300 + 200).
    Placement(
        "preferred-tolerated",
        merge(preferred((100, [expr(ZONE, "In", "c")])), tolerations(toleration("spot", "Exists"))),
        expect="n-spot",
    ),
    # Matched weights add up: n-small 30 + 30 = 60 -> 100, n-large 50 -> 83;
    # n-small 674 (81 + 93 + 300 + 200) > n-large 658 (94 + 98 + 300 + 166).
    Placement(
        "preferred-weights-sum",
        preferred(
            (50, [expr("disktype", "In", "ssd")]),
            (30, [expr(ZONE, "In", "a")]),
            (30, [expr("gen", "Lt", "3")]),
        ),
        expect="n-small",
    ),
    # n-gpu and n-large are equal in all but the image: 1 of 6 nodes has 800Mi of it, scaled to
    # 133Mi, so ImageLocality gives n-gpu (133 - 23) * 100 // (1000 - 23) = 11, n-large 0.
    Placement(
        "image-locality",
        merge(required([expr(ZONE, "In", "b")]), tolerations(toleration("dedicated", "Exists"))),
        cpu="1",
        memory="1Gi",
        image=TRAINER,
        expect="n-gpu",
    ),
]


@dataclass(frozen=True, kw_only=True)
class Rejection(PodCase):
    message: str


# Messages are upstream's FitError text (pkg/scheduler/framework/types.go): reasons counted over
# nodes and sorted as strings, then DefaultPreemption's own: every pod here has the priority of
# the pods already placed, so nodes that could pass Filter had "No preemption victims found for
# incoming pod", and nodes rejected as UnschedulableAndUnresolvable (affinity, taints,
# unschedulable, a request over the node's allocatable) "Preemption is not helpful for
# scheduling".


def preemption(no_victims: int, not_helpful: int) -> str:
    """DefaultPreemption's message for the six nodes (its reasons sorted as strings too)."""
    reasons = []
    if no_victims:
        reasons.append(f"{no_victims} No preemption victims found for incoming pod")
    if not_helpful:
        reasons.append(f"{not_helpful} Preemption is not helpful for scheduling")
    return (
        " no new claims to deallocate,"
        f" preemption: 0/6 nodes are available: {', '.join(sorted(reasons))}."
    )


#
# Every node fails for its own reason.
EVERY_REASON = Rejection(
    "every-reason",
    required([expr(ZONE, "NotIn", "b")]),  # n-large: affinity
    cpu="3",  # n-small: 2 cpu
    host_port=8080,  # n-spot: held by the nodeName pod
    # n-small's 2 cpu are less than the 3 asked: no preemption there can help.
    message="0/6 nodes are available: 1 Insufficient cpu, "
    "1 node(s) didn't have free ports for the requested pod ports, "
    "1 node(s) didn't match Pod's node affinity/selector, "
    f"{TAINTED_AND_CORDONED}." + preemption(1, 5),
)

REJECTIONS = [
    EVERY_REASON,
    # A node short of two resources reports both.
    Rejection(
        "too-big",
        {},
        cpu="20",
        memory="40Gi",
        # More than any node's allocatable: UnschedulableAndUnresolvable everywhere.
        message=f"0/6 nodes are available: {TAINTED_AND_CORDONED}, "
        "3 Insufficient cpu, 3 Insufficient memory." + preemption(0, 6),
    ),
    Rejection(
        "toleration-wrong-value",
        merge(
            {"nodeSelector": {"accelerator": "nvidia"}},
            tolerations(toleration("dedicated", "Equal", "tpu", "NoSchedule")),
        ),
        message=f"0/6 nodes are available: {TAINTED_AND_CORDONED}, "
        "3 node(s) didn't match Pod's node affinity/selector." + preemption(0, 6),
    ),
    Rejection(
        "toleration-wrong-effect",
        merge(
            {"nodeSelector": {"accelerator": "nvidia"}},
            tolerations(toleration("dedicated", "Exists", effect="PreferNoSchedule")),
        ),
        message=f"0/6 nodes are available: {TAINTED_AND_CORDONED}, "
        "3 node(s) didn't match Pod's node affinity/selector." + preemption(0, 6),
    ),
    Rejection(
        "noexecute-needs-noexecute",
        merge(
            required([expr(ZONE, "In", "d")]),
            tolerations(toleration("maintenance", "Exists", effect="NoSchedule")),
        ),
        message=f"0/6 nodes are available: {TAINTED_AND_CORDONED}, "
        "3 node(s) didn't match Pod's node affinity/selector." + preemption(0, 6),
    ),
    # n-gpu has 2 of them, the other schedulable nodes none: no node can ever hold 3.
    Rejection(
        "extended-resource-short",
        tolerations(toleration("dedicated", "Exists")),
        extended={GPU: "3"},
        message="0/6 nodes are available: 1 node(s) had untolerated taint(s), "
        "1 node(s) were unschedulable, 4 Insufficient example.com/gpu." + preemption(0, 6),
    ),
    # The pod's cpu request is the larger of its init container's (3) and its containers' sum.
    Rejection(
        "init-container-counts",
        {"nodeSelector": {ZONE: "a"}},
        init_cpu="3",
        message="0/6 nodes are available: 1 Insufficient cpu, "
        f"{CORDONED}, 2 node(s) didn't match Pod's node affinity/selector, {TAINTED}."
        + preemption(0, 6),
    ),
    # Zone a holds n-small (too small) and n-cordoned; the rest do not match the selector.
    Rejection(
        "selector-leaves-too-small",
        {"nodeSelector": {ZONE: "a"}},
        cpu="3",
        message="0/6 nodes are available: 1 Insufficient cpu, "
        f"{CORDONED}, 2 node(s) didn't match Pod's node affinity/selector, {TAINTED}."
        + preemption(0, 6),
    ),
]


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    workdir: Path = tmp_path_factory.mktemp("plugins")
    cluster = start_cluster(workdir)
    with stopping(cluster):
        kubectl = Kubectl(workdir)
        # The cluster is complete before the scheduler starts, so its first list sees all of it.
        kubectl.apply(to_yaml(*NODES))
        kubectl("cordon", "n-cordoned")
        kubectl.apply(to_yaml(PINNED))
        scheduler = start_scheduler(workdir, CONFIG)
        with stopping(scheduler):
            yield kubectl


def _get_pod(kubectl: Kubectl, name: str) -> dict[str, Any]:
    return dict(kubectl.json("pod", name))


def _running(kubectl: Kubectl, name: str) -> dict[str, Any] | None:
    pod_obj = _get_pod(kubectl, name)
    return pod_obj if pod_obj.get("status", {}).get("phase") == "Running" else None


def _scheduled_condition(pod_obj: Mapping[str, Any]) -> dict[str, Any]:
    for cond in pod_obj.get("status", {}).get("conditions", []):
        if cond["type"] == "PodScheduled":
            return dict(cond)
    return {}


def _outcome(kubectl: Kubectl, name: str) -> dict[str, Any] | None:
    """The pod once bound or rejected, else None."""
    pod_obj = _get_pod(kubectl, name)
    if pod_obj["spec"].get("nodeName"):
        return pod_obj
    return pod_obj if _scheduled_condition(pod_obj).get("status") == "False" else None


def _decide(kubectl: Kubectl, manifest: Mapping[str, Any]) -> dict[str, Any]:
    name = manifest["metadata"]["name"]
    kubectl.apply(to_yaml(manifest))
    outcome: dict[str, Any] = wait_until(lambda: _outcome(kubectl, name), what=f"{name} decided")
    return outcome


def _delete(kubectl: Kubectl, *names: str) -> None:
    # Waits until the pods are gone, so the next case sees the cluster without them.
    kubectl("delete", "pod", *names, "--wait=true")


def _events(kubectl: Kubectl, pod_name: str, reason: str) -> list[dict[str, Any]]:
    return [
        e
        for e in kubectl.json("events")["items"]
        if e["involvedObject"]["name"] == pod_name and e["reason"] == reason
    ]


def _assert_rejected(kubectl: Kubectl, name: str, message: str) -> None:
    pod_obj = wait_until(lambda: _outcome(kubectl, name), what=f"{name} decided")
    assert pod_obj["spec"].get("nodeName", "") == ""
    cond = _scheduled_condition(pod_obj)
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", message)
    failed = wait_until(lambda: _events(kubectl, name, "FailedScheduling"), what="event")
    assert {(e["type"], e["message"]) for e in failed} == {("Warning", message)}


@pytest.mark.parametrize("case", PLACEMENTS, ids=lambda c: c.id)
def test_pod_lands_where_kube_scheduler_puts_it(kubectl: Kubectl, case: Placement) -> None:
    try:
        outcome = _decide(kubectl, case.manifest())
        assert outcome["spec"].get("nodeName") == case.expect, _scheduled_condition(outcome)
        scheduled = wait_until(lambda: _events(kubectl, case.id, "Scheduled"), what="event")
        assert (
            scheduled[0]["message"] == f"Successfully assigned default/{case.id} to {case.expect}"
        )
    finally:
        _delete(kubectl, case.id)


@pytest.mark.parametrize("case", REJECTIONS, ids=lambda c: c.id)
def test_rejected_pod_is_explained_in_upstream_words(kubectl: Kubectl, case: Rejection) -> None:
    try:
        kubectl.apply(to_yaml(case.manifest()))
        _assert_rejected(kubectl, case.id, case.message)
    finally:
        _delete(kubectl, case.id)


def test_failed_scheduling_shows_in_kubectl_describe_and_get_events(kubectl: Kubectl) -> None:
    name = "described"
    manifest = EVERY_REASON.manifest(name)
    try:
        kubectl.apply(to_yaml(manifest))
        _assert_rejected(kubectl, name, EVERY_REASON.message)
        described = kubectl("describe", "pod", name)
        events_section = described.split("\nEvents:", 1)[1]
        row = next(line for line in events_section.splitlines() if "FailedScheduling" in line)
        assert row.split()[0] == "Warning"
        assert "default-scheduler" in row and row.rstrip().endswith(EVERY_REASON.message)
        listed = kubectl("get", "events", "--field-selector", f"involvedObject.name={name}")
        row = next(line for line in listed.splitlines() if "FailedScheduling" in line)
        assert f"pod/{name}" in row and row.rstrip().endswith(EVERY_REASON.message)
    finally:
        _delete(kubectl, name)


def test_node_name_pod_bypasses_the_scheduler(kubectl: Kubectl) -> None:
    """spec.nodeName binds without the scheduler, even to a cordoned node."""
    manifest = pod("pinned-cordoned", nodeName="n-cordoned")
    try:
        kubectl.apply(to_yaml(manifest))
        for name, where in (("pinned", "n-spot"), ("pinned-cordoned", "n-cordoned")):
            pod_obj = wait_until(lambda name=name: _running(kubectl, name), what=f"{name} runs")
            assert pod_obj["spec"]["nodeName"] == where
            assert _events(kubectl, name, "FailedScheduling") == []
            assert _events(kubectl, name, "Scheduled") == []
    finally:
        _delete(kubectl, "pinned-cordoned")


def test_same_host_port_spreads_and_the_odd_one_waits_for_a_free_port(kubectl: Kubectl) -> None:
    # disktype exists on n-small and n-large only.
    def web(name: str) -> dict[str, Any]:
        return pod(
            name,
            cpu="100m",
            memory="64Mi",
            host_port=9090,
            **required([expr("disktype", "Exists")]),
        )

    names = ("web-a", "web-b", "web-c")
    try:
        kubectl.apply(to_yaml(web("web-a"), web("web-b")))
        placed = {
            name: wait_until(
                lambda name=name: _get_pod(kubectl, name)["spec"].get("nodeName"),
                what=f"{name} bound",
            )
            for name in names[:2]
        }
        assert sorted(placed.values()) == ["n-large", "n-small"]
        kubectl.apply(to_yaml(web("web-c")))
        _assert_rejected(
            kubectl,
            "web-c",
            "0/6 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
            f"{CORDONED}, "
            f"2 node(s) didn't have free ports for the requested pod ports, {TAINTED}."
            + preemption(2, 4),
        )
        # Deleting a pod that held the port brings web-c back at once (NodePorts' pod-delete
        # event), not after the five-minute unschedulable timeout.
        _delete(kubectl, "web-a")
        wait_until(
            lambda: _get_pod(kubectl, "web-c")["spec"].get("nodeName") == placed["web-a"],
            timeout=5,
            what="web-c on the freed node",
        )
    finally:
        _delete(kubectl, *names, "--ignore-not-found")


# Last in the file on purpose: it cordons n-cordoned again on the way out, and a pod applied right
# after could reach the scheduler (pod watch) before that node update does (node watch).
def test_uncordon_brings_a_waiting_pod_to_the_node(kubectl: Kubectl) -> None:
    name = "wants-n-cordoned"
    manifest = pod(name, nodeSelector={"kubernetes.io/hostname": "n-cordoned"})
    try:
        kubectl.apply(to_yaml(manifest))
        _assert_rejected(
            kubectl,
            name,
            f"0/6 nodes are available: {TAINTED_AND_CORDONED}, "
            "3 node(s) didn't match Pod's node affinity/selector." + preemption(0, 6),
        )
        kubectl("uncordon", "n-cordoned")
        wait_until(
            lambda: _get_pod(kubectl, name)["spec"].get("nodeName") == "n-cordoned",
            timeout=5,
            what="pod on the uncordoned node",
        )
    finally:
        kubectl("cordon", "n-cordoned")
        _delete(kubectl, name)
