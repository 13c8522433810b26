"""DefaultPreemption end to end: `aiosched cluster` and `aiosched run` as separate processes,
driven with kubectl.

Two 2-CPU nodes, each filled by two low-priority pods of 900m. A PodDisruptionBudget protects
the pods on `guarded` (none may be disrupted), so a high-priority pod of 1500m must displace
victims on `open`: it is nominated there, the victims get a DisruptionTarget condition and are
deleted, and it then runs there (binding clears the nomination, as kube-apiserver does since
v1.35). A pod too big for any node, and one whose
preemptionPolicy is Never, say why in upstream's words.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from manifests import node, pod, to_yaml
from processes import Kubectl, start_cluster, start_scheduler, stopping, wait_until

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""

NODES = (node("guarded", "2", "8Gi", {}), node("open", "2", "8Gi", {}))


def priority_class(name: str, value: int, policy: str = "PreemptLowerPriority") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": policy,
    }


PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "guarded", "namespace": "default"},
    "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"tier": "guarded"}}},
}


def low(name: str, node_name: str, tier: str) -> dict[str, Any]:
    manifest = pod(
        name,
        cpu="900m",
        memory="256Mi",
        priorityClassName="low",
        terminationGracePeriodSeconds=0,
        nodeSelector={"kubernetes.io/hostname": node_name},
    )
    manifest["metadata"]["labels"] = {"tier": tier}
    return manifest


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    workdir: Path = tmp_path_factory.mktemp("preemption")
    cluster = start_cluster(workdir)
    with stopping(cluster):
        kubectl = Kubectl(workdir)
        kubectl.apply(
            to_yaml(
                *NODES,
                priority_class("low", 100),
                priority_class("high", 1000),
                priority_class("high-polite", 1000, "Never"),
                PDB,
            )
        )
        scheduler = start_scheduler(workdir, CONFIG)
        with stopping(scheduler):
            kubectl.apply(
                to_yaml(
                    low("g1", "guarded", "guarded"),
                    low("g2", "guarded", "guarded"),
                    low("o1", "open", "open"),
                    low("o2", "open", "open"),
                )
            )
            for name in ("g1", "g2", "o1", "o2"):
                wait_until(lambda name=name: _phase(kubectl, name) == "Running", what=name)
            yield kubectl


def _pod(kubectl: Kubectl, name: str) -> dict[str, Any]:
    found: dict[str, Any] = kubectl.json("pod", name)
    return found


def _phase(kubectl: Kubectl, name: str) -> str:
    phase: str = _pod(kubectl, name).get("status", {}).get("phase", "")
    return phase


def _condition(pod_obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    for cond in pod_obj.get("status", {}).get("conditions", []):
        if cond["type"] == kind:
            return dict(cond)
    return {}


def _exists(kubectl: Kubectl, name: str) -> bool:
    return bool(kubectl("get", "pod", name, "--ignore-not-found", "-o", "name").strip())


def _rejection(kubectl: Kubectl, name: str) -> str:
    cond = wait_until(
        lambda: (
            _condition(_pod(kubectl, name), "PodScheduled").get("status") == "False"
            and _condition(_pod(kubectl, name), "PodScheduled")
        ),
        what=f"{name} rejected",
    )
    message: str = cond["message"]
    return message


def test_pod_too_big_for_any_node_explains_that_preemption_cannot_help(kubectl: Kubectl) -> None:
    try:
        kubectl.apply(to_yaml(pod("huge", cpu="3", memory="256Mi", priorityClassName="high")))
        assert _rejection(kubectl, "huge") == (
            "0/2 nodes are available: 2 Insufficient cpu. "
            "no new claims to deallocate, preemption: 0/2 nodes are available: "
            "2 Preemption is not helpful for scheduling."
        )
    finally:
        kubectl("delete", "pod", "huge", "--wait=true", "--ignore-not-found")


def test_preemption_policy_never_does_not_preempt(kubectl: Kubectl) -> None:
    try:
        # the PriorityClass gives the pod its preemptionPolicy, as kube-apiserver admits it
        manifest = pod("polite", cpu="1500m", memory="256Mi", priorityClassName="high-polite")
        kubectl.apply(to_yaml(manifest))
        assert _rejection(kubectl, "polite") == (
            "0/2 nodes are available: 2 Insufficient cpu. "
            "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
        )
        assert all(_exists(kubectl, name) for name in ("g1", "g2", "o1", "o2"))
    finally:
        kubectl("delete", "pod", "polite", "--wait=true", "--ignore-not-found")


# Last: it deletes pods the other cases rely on.
def test_high_priority_pod_displaces_victims_on_the_node_without_a_budget(
    kubectl: Kubectl,
) -> None:
    kubectl.apply(to_yaml(pod("urgent", cpu="1500m", memory="256Mi", priorityClassName="high")))
    # The nomination lasts from the preemption to the binding, which clears it: it may come and
    # go between two polls, so what is checked is where the pod went and that it is gone.
    wait_until(
        lambda: _pod(kubectl, "urgent")["spec"].get("nodeName") == "open",
        what="urgent bound to open",
    )
    assert "nominatedNodeName" not in _pod(kubectl, "urgent").get("status", {})
    # Both pods on `open` had to go (1500m needs more than one 900m pod's room); the guarded
    # pods stay.
    assert not _exists(kubectl, "o1") and not _exists(kubectl, "o2")
    assert _exists(kubectl, "g1") and _exists(kubectl, "g2")
    preempted = [
        e
        for e in kubectl.json("events")["items"]
        if e["reason"] == "Preempted" and e["involvedObject"]["name"] in ("o1", "o2")
    ]
    assert len(preempted) == 2
    assert all(e["message"].endswith("on node open") for e in preempted)
