"""kubesim's workload controllers end to end: `aiosched cluster` (3 simulated nodes in 3 zones,
short heartbeats and node grace) and `aiosched run` as processes, driven with kubectl as a user
would: Deployments (rollout status, set image, undo, scale), DaemonSets, Jobs, StatefulSets with
claims, drain through evictions and a PodDisruptionBudget, cascading deletion, a stopped node
turning NotReady and its pods evicted, and a restart with --data-dir that duplicates nothing.
"""

from __future__ import annotations

import json
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from processes import Kubectl, Process, start_cluster, start_scheduler, wait_until

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""
CLUSTER_FLAGS = (
    "--zones",
    "3",
    "--heartbeat-interval",
    "0.5",
    "--node-monitor-grace-period",
    "2",
    "--node-monitor-period",
    "0.3",
    "--job-duration",
    "1",
)

DAEMONSET = """apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers: [{name: agent, image: busybox}]
"""
STATEFULSET = """apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
"""


class Cluster:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.kubectl = Kubectl(workdir)
        self.process: Process | None = None
        self.scheduler: Process | None = None

    def start(self) -> None:
        self.process = start_cluster(self.workdir, 0, 3, *CLUSTER_FLAGS)
        self.scheduler = start_scheduler(self.workdir, CONFIG)

    def stop(self) -> None:
        for proc in (self.scheduler, self.process):
            if proc is not None:
                proc.stop()

    def node_kubelet(self, node: str, action: str) -> None:
        kubeconfig = (self.workdir / "kubeconfig").read_text()
        server = next(line.split()[-1] for line in kubeconfig.splitlines() if "server:" in line)
        token = next(line.split()[-1] for line in kubeconfig.splitlines() if "token:" in line)
        request = urllib.request.Request(
            f"{server}/kubesim/nodes/{node}/{action}",
            method="POST",
            headers={"Authorization": f"Bearer {token}"},
        )
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            assert response.status == 200


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("controllers"))
    running.start()
    try:
        yield running
    finally:
        running.stop()


def pods(kubectl: Kubectl, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = kubectl.json("pods", "-l", selector)["items"]
    return items


def running_nodes(kubectl: Kubectl, selector: str) -> list[str]:
    return sorted(
        p["spec"].get("nodeName", "")
        for p in pods(kubectl, selector)
        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    )


def test_deployment_rollout_undo_and_scale(cluster: Cluster) -> None:
    k = cluster.kubectl
    k("create", "deployment", "web", "--image=nginx", "--replicas=6")
    assert "successfully rolled out" in k("rollout", "status", "deployment/web", "--timeout=30s")
    # spread by the default topology spreading over nodes and zones: two pods on each node
    assert running_nodes(k, "app=web") == ["node-0"] * 2 + ["node-1"] * 2 + ["node-2"] * 2
    first_rs = {rs["metadata"]["name"] for rs in k.json("rs", "-l", "app=web")["items"]}
    k("set", "image", "deployment/web", "nginx=nginx:1.27")
    assert "successfully rolled out" in k("rollout", "status", "deployment/web", "--timeout=30s")
    history = k("rollout", "history", "deployment/web")
    assert "1 " in history and "2 " in history
    k("rollout", "undo", "deployment/web")
    k("rollout", "status", "deployment/web", "--timeout=30s")
    sets = {rs["metadata"]["name"]: rs for rs in k.json("rs", "-l", "app=web")["items"]}
    assert len(sets) == 2  # the undo reused the first ReplicaSet, now revision 3
    (original,) = first_rs
    assert sets[original]["spec"]["replicas"] == 6
    assert sets[original]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    for rs in sets.values():
        (ref,) = rs["metadata"]["ownerReferences"]
        assert ref["kind"] == "Deployment" and ref["controller"] is True
    k("scale", "deployment/web", "--replicas=3")
    wait_until(
        lambda: (
            len(running_nodes(k, "app=web")) == 3
            and k.json("deployment", "web")["status"].get("replicas") == 3
        ),
        what="scaled down to 3",
    )
    # kubectl's columns, as a real API server prints them
    header, row = wait_until(
        lambda: (
            (lines := k("get", "deployment", "web").splitlines())[1].split()[1] == "3/3" and lines
        ),
        what="3/3 ready",
    )
    assert header.split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert row.split()[:4] == ["web", "3/3", "3", "3"]
    assert k("get", "rs", original).split()[5:9] == [original, "3", "3", "3"]


def wide_events(kubectl: Kubectl) -> list[dict[str, str]]:
    """`kubectl get events -o wide` as rows of {column: text}, cut at the header's offsets
    (SOURCE and MESSAGE hold spaces)."""
    header, *lines = kubectl("get", "events", "-o", "wide").splitlines()
    names = [
        "LAST SEEN",
        "TYPE",
        "REASON",
        "OBJECT",
        "SUBOBJECT",
        "SOURCE",
        "MESSAGE",
        "FIRST SEEN",
        "COUNT",
        "NAME",
    ]
    starts = [0]
    for name in names[1:]:
        starts.append(header.index(name, starts[-1] + 1))
    return [
        {
            name: line[start:end].strip()
            for name, start, end in zip(names, starts, [*starts[1:], None], strict=True)
        }
        for line in lines
    ]


def test_get_events_wide_shows_each_component_as_source(cluster: Cluster) -> None:
    """A Deployment rolled out and its pods scheduled and started: every event names who wrote
    it in SOURCE, as on a real cluster (the scheduler's events.k8s.io/v1 ones by their
    reportingController and instance, the core/v1 ones by source component and host)."""
    k = cluster.kubectl
    k("create", "deployment", "shown", "--image=nginx", "--replicas=2")
    assert "successfully rolled out" in k("rollout", "status", "deployment/shown", "--timeout=30s")
    (rs,) = [r["metadata"]["name"] for r in k.json("rs", "-l", "app=shown")["items"]]
    pod_names = [p["metadata"]["name"] for p in pods(k, "app=shown")]

    def rows() -> list[dict[str, str]]:
        found = [
            r
            for r in wide_events(k)
            if r["OBJECT"]
            in ("deployment/shown", f"replicaset/{rs}", *(f"pod/{p}" for p in pod_names))
        ]
        return found if sum(r["REASON"] == "Started" for r in found) == 2 else []

    by_reason: dict[str, list[dict[str, str]]] = {}
    for row in wait_until(rows, what="the pods' Started events"):
        by_reason.setdefault(row["REASON"], []).append(row)
    (scaled,) = by_reason["ScalingReplicaSet"]
    assert scaled["SOURCE"] == "deployment-controller"
    assert scaled["MESSAGE"] == f"Scaled up replica set {rs} from 0 to 2"
    assert {r["SOURCE"] for r in by_reason["SuccessfulCreate"]} == {"replicaset-controller"}
    assert sorted(r["MESSAGE"] for r in by_reason["SuccessfulCreate"]) == sorted(
        f"Created pod: {p}" for p in pod_names
    )
    for row in by_reason["Scheduled"]:
        assert row["SOURCE"].startswith("default-scheduler, default-scheduler-"), row
    for reason in ("Pulled", "Created", "Started"):
        for row in by_reason[reason]:
            assert row["SOURCE"].startswith("kubelet, node-"), row
            assert row["SUBOBJECT"] == "spec.containers{nginx}"
    described = k("describe", "deployment", "shown")
    assert "ScalingReplicaSet" in described and "deployment-controller" in described
    k("delete", "deployment", "shown")


def test_daemonset_one_pod_per_node(cluster: Cluster) -> None:
    k = cluster.kubectl
    k.apply(DAEMONSET)
    assert "successfully rolled out" in k("rollout", "status", "ds/agent", "--timeout=30s")
    assert running_nodes(k, "app=agent") == ["node-0", "node-1", "node-2"]
    pod = pods(k, "app=agent")[0]
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [pod["spec"]["nodeName"]]}
            ]
        }
    ]
    tolerated = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
    assert ("node.kubernetes.io/unschedulable", "NoSchedule") in tolerated
    header, row = k("get", "ds", "agent").splitlines()
    assert header.split()[:6] == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE"]
    assert row.split()[:7] == ["agent", "3", "3", "3", "3", "3", "kubernetes.io/os=linux"]


def test_job_runs_to_completion(cluster: Cluster) -> None:
    k = cluster.kubectl
    k("create", "job", "pi", "--image=perl")
    k("wait", "--for=condition=complete", "job/pi", "--timeout=30s")
    job = k.json("job", "pi")
    assert job["status"]["succeeded"] == 1 and "active" not in job["status"]
    (pod,) = pods(k, "job-name=pi")
    assert pod["status"]["phase"] == "Succeeded"
    header, row = k("get", "job", "pi").splitlines()
    assert header.split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert row.split()[:3] == ["pi", "Complete", "1/1"]


def test_statefulset_ordered_pods_and_claims(cluster: Cluster) -> None:
    k = cluster.kubectl
    k.apply(STATEFULSET)
    k("rollout", "status", "sts/db", "--timeout=30s")
    assert sorted(p["metadata"]["name"] for p in pods(k, "app=db")) == ["db-0", "db-1"]
    claims = {c["metadata"]["name"]: c for c in k.json("pvc")["items"]}
    assert {"data-db-0", "data-db-1"} <= claims.keys()
    wait_until(
        lambda: k.json("pvc", "data-db-0")["status"].get("phase") == "Bound", what="claim bound"
    )


def test_drain_respects_the_disruption_budget(cluster: Cluster) -> None:
    k = cluster.kubectl
    k("create", "deployment", "api", "--image=nginx", "--replicas=3")
    k("rollout", "status", "deployment/api", "--timeout=30s")
    k("create", "pdb", "api", "--selector=app=api", "--min-available=3")
    wait_until(
        lambda: k.json("pdb", "api").get("status", {}).get("expectedPods") == 3, what="PDB status"
    )
    node = running_nodes(k, "app=api")[0]
    blocked = k("drain", node, "--ignore-daemonsets", "--timeout=3s", check=False)
    assert "api" in k("get", "pods", "-l", "app=api", "-o", "name")
    assert not blocked or "drained" not in blocked
    k("delete", "pdb", "api")
    k("create", "pdb", "api", "--selector=app=api", "--max-unavailable=1")
    k("drain", node, "--ignore-daemonsets", "--timeout=30s")
    wait_until(
        lambda: node not in running_nodes(k, "app=api") and len(running_nodes(k, "app=api")) == 3,
        what="pods moved off the drained node",
    )
    assert k.json("node", node)["spec"]["unschedulable"] is True
    k("uncordon", node)


def test_cascading_deletion(cluster: Cluster) -> None:
    k = cluster.kubectl
    k("create", "deployment", "orphans", "--image=nginx", "--replicas=2")
    k("rollout", "status", "deployment/orphans", "--timeout=30s")
    k("delete", "deployment", "orphans", "--cascade=orphan")
    wait_until(
        lambda: all(
            not rs["metadata"].get("ownerReferences")
            for rs in k.json("rs", "-l", "app=orphans")["items"]
        ),
        what="orphaned ReplicaSet",
    )
    assert len(running_nodes(k, "app=orphans")) == 2
    (rs,) = k.json("rs", "-l", "app=orphans")["items"]
    k("delete", "rs", rs["metadata"]["name"], "--cascade=foreground", "--timeout=30s")
    wait_until(lambda: not pods(k, "app=orphans"), what="pods deleted with their set")


def test_stopped_node_is_tainted_and_its_pods_evicted(cluster: Cluster) -> None:
    k = cluster.kubectl
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "short"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "short"}},
            "template": {
                "metadata": {"labels": {"app": "short"}},
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "c", "image": "nginx"}],
                    "tolerations": [
                        {
                            "key": "node.kubernetes.io/unreachable",
                            "operator": "Exists",
                            "effect": "NoExecute",
                            "tolerationSeconds": 1,
                        }
                    ],
                },
            },
        },
    }
    k.apply(json.dumps(manifest))
    k("rollout", "status", "deployment/short", "--timeout=30s")
    cluster.node_kubelet("node-2", "stop")
    try:
        wait_until(
            lambda: (
                {
                    (t["key"], t["effect"])
                    for t in k.json("node", "node-2")["spec"].get("taints", [])
                }
                >= {
                    ("node.kubernetes.io/unreachable", "NoSchedule"),
                    ("node.kubernetes.io/unreachable", "NoExecute"),
                }
            ),
            what="unreachable taints",
        )
        ready = next(
            c for c in k.json("node", "node-2")["status"]["conditions"] if c["type"] == "Ready"
        )
        assert ready["status"] == "Unknown" and ready["reason"] == "NodeStatusUnknown"
        # evicted after tolerationSeconds, replaced on the other nodes
        wait_until(
            lambda: (
                len(running_nodes(k, "app=short")) == 3
                and "node-2" not in running_nodes(k, "app=short")
            ),
            what="pods evicted",
        )
        agent = [p for p in pods(k, "app=agent") if p["spec"].get("nodeName") == "node-2"]
        assert agent and not agent[0]["metadata"].get("deletionTimestamp")  # tolerates forever
    finally:
        cluster.node_kubelet("node-2", "start")
    wait_until(lambda: not k.json("node", "node-2")["spec"].get("taints"), what="taints removed")


def test_restart_with_data_dir_duplicates_nothing(cluster: Cluster) -> None:
    k = cluster.kubectl
    before = {
        kind: sorted(o["metadata"]["name"] for o in k.json(kind)["items"])
        for kind in (
            "deployments",
            "replicasets",
            "daemonsets",
            "statefulsets",
            "jobs",
            "pods",
            "pvc",
        )
    }
    cluster.stop()
    cluster.start()
    wait_until(lambda: k("get", "nodes", check=False) != "", what="cluster back")
    k("rollout", "status", "deployment/web", "--timeout=30s")
    k("rollout", "status", "ds/agent", "--timeout=30s")
    after = {kind: sorted(o["metadata"]["name"] for o in k.json(kind)["items"]) for kind in before}
    assert after == before
