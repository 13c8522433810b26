"""The core/v1 Events kubesim's controllers and simulated kubelets write, in process: each
controller's sync run by hand over an Api, then the events read back from the store, with
upstream's reasons, messages, types and recorder fields (source, reportingComponent/Instance,
firstTimestamp/lastTimestamp/count), and the event TTL (kube-apiserver's --event-ttl)."""

from __future__ import annotations

import random
from typing import Any

from kubesim.api import Api
from kubesim.controllers.daemonset import DaemonSetController
from kubesim.controllers.deployment import DeploymentController
from kubesim.controllers.job import JobController
from kubesim.controllers.nodelifecycle import MONITOR, NodeLifecycleController
from kubesim.controllers.options import ControllerOptions
from kubesim.controllers.replicaset import ReplicaSetController
from kubesim.controllers.statefulset import StatefulSetController
from kubesim.controllers.tainteviction import TaintEvictionController
from kubesim.events import EventTTL, Source
from kubesim.meta import rfc3339
from kubesim.nodes import NodeSimulator, NodeTemplate, node_manifest
from kubesim.resources import RESOURCES
from kubesim.store import Store

BY_KEY = {r.key: r for r in RESOURCES if not r.stored_as}
NOW = 1_700_000_000.0
TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
}
SELECTOR = {"matchLabels": {"app": "web"}}


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


async def new_api(clock: Clock | None = None) -> Api:
    api = Api(Store(), clock=clock or Clock(), rng=random.Random(0))
    await api.create(BY_KEY["namespaces"], "", {"metadata": {"name": "default"}})
    return api


async def create(api: Api, key: str, obj: dict[str, Any]) -> dict[str, Any]:
    resource = BY_KEY[key]
    created: dict[str, Any] = await api.create(
        resource, "default" if resource.namespaced else "", obj
    )
    return created


async def set_spec(api: Api, key: str, name: str, **changes: Any) -> None:
    current = api.store.get(key, "default", name)
    assert current is not None
    await api.store.put(
        key,
        {**current, "metadata": dict(current["metadata"]), "spec": {**current["spec"], **changes}},
        current,
    )


def events(api: Api, component: str = "") -> list[dict[str, Any]]:
    found = [
        e
        for e in api.store.items("events")
        if not component or e["source"]["component"] == component
    ]
    return sorted(found, key=lambda e: e["metadata"]["name"].rsplit(".", 1)[1])


def said(api: Api, component: str) -> list[tuple[str, str, str]]:
    return [(e["type"], e["reason"], e["message"]) for e in events(api, component)]


def pods(api: Api) -> list[dict[str, Any]]:
    return api.store.items("pods", "default")


async def test_replicaset_records_created_and_deleted_pods_as_upstream_recorder() -> None:
    api = await new_api()
    rs = await create(
        api,
        "apps/replicasets",
        {
            "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": SELECTOR, "template": TEMPLATE},
        },
    )
    controller = ReplicaSetController(api)
    await controller.sync("default", "web")
    names = sorted(p["metadata"]["name"] for p in pods(api))
    assert sorted(said(api, "replicaset-controller")) == [
        ("Normal", "SuccessfulCreate", f"Created pod: {n}") for n in names
    ]
    event = events(api)[0]
    # client-go tools/record makeEvent + generateEvent
    assert event["involvedObject"] == {
        "kind": "ReplicaSet",
        "namespace": "default",
        "name": "web",
        "uid": rs["metadata"]["uid"],
        "apiVersion": "apps/v1",
        "resourceVersion": rs["metadata"]["resourceVersion"],
    }
    assert event["metadata"]["name"].startswith("web.")
    assert event["metadata"]["namespace"] == "default"
    assert event["source"] == {"component": "replicaset-controller"}
    assert event["reportingComponent"] == "replicaset-controller"
    assert event["reportingInstance"] == ""
    assert event["firstTimestamp"] == event["lastTimestamp"] == rfc3339(NOW)
    assert event["count"] == 1 and event["eventTime"] is None

    await set_spec(api, "apps/replicasets", "web", replicas=1)
    await controller.sync("default", "web")
    gone = set(names) - {
        p["metadata"]["name"] for p in pods(api) if not p["metadata"].get("deletionTimestamp")
    }
    assert said(api, "replicaset-controller")[-1] == (
        "Normal",
        "SuccessfulDelete",
        f"Deleted pod: {gone.pop()}",
    )


async def test_replication_controller_records_as_replication_controller() -> None:
    api = await new_api()
    await create(
        api,
        "replicationcontrollers",
        {
            "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"app": "web"}, "template": TEMPLATE},
        },
    )
    await ReplicaSetController(api, "replicationcontrollers").sync("default", "web")
    [event] = events(api)
    assert event["source"] == {"component": "replication-controller"}
    assert event["involvedObject"]["kind"] == "ReplicationController"
    assert event["reason"] == "SuccessfulCreate"


async def test_deployment_records_scaling_replica_set() -> None:
    api = await new_api()
    await create(
        api,
        "apps/deployments",
        {
            "metadata": {"name": "web"},
            "spec": {"replicas": 3, "selector": SELECTOR, "template": TEMPLATE},
        },
    )
    controller = DeploymentController(api)
    await controller.sync("default", "web")
    [rs] = api.store.items("apps/replicasets", "default")
    name = rs["metadata"]["name"]
    assert said(api, "deployment-controller") == [
        ("Normal", "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to 3")
    ]
    await set_spec(api, "apps/deployments", "web", replicas=5)
    await controller.sync("default", "web")
    await set_spec(api, "apps/deployments", "web", replicas=1)
    await controller.sync("default", "web")
    assert said(api, "deployment-controller")[1:] == [
        ("Normal", "ScalingReplicaSet", f"Scaled up replica set {name} from 3 to 5"),
        ("Normal", "ScalingReplicaSet", f"Scaled down replica set {name} from 5 to 1"),
    ]
    assert events(api)[0]["involvedObject"]["kind"] == "Deployment"


async def test_statefulset_records_pod_and_claim_creation() -> None:
    api = await new_api()
    await create(
        api,
        "apps/statefulsets",
        {
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 2,
                "serviceName": "db",
                "selector": SELECTOR,
                "podManagementPolicy": "Parallel",
                "template": TEMPLATE,
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}},
                        },
                    }
                ],
            },
        },
    )
    controller = StatefulSetController(api)
    await controller.sync("default", "db")
    assert said(api, "statefulset-controller") == [
        ("Normal", "SuccessfulCreate", "create Claim data-db-0 Pod db-0 in StatefulSet db success"),
        ("Normal", "SuccessfulCreate", "create Pod db-0 in StatefulSet db successful"),
        ("Normal", "SuccessfulCreate", "create Claim data-db-1 Pod db-1 in StatefulSet db success"),
        ("Normal", "SuccessfulCreate", "create Pod db-1 in StatefulSet db successful"),
    ]
    await set_spec(api, "apps/statefulsets", "db", replicas=1)
    await controller.sync("default", "db")
    assert said(api, "statefulset-controller")[-1] == (
        "Normal",
        "SuccessfulDelete",
        "delete Pod db-1 in StatefulSet db successful",
    )


async def test_daemonset_records_created_pods() -> None:
    api = await new_api()
    await create(api, "nodes", node_manifest("node-0", NodeTemplate()))
    await create(
        api,
        "apps/daemonsets",
        {"metadata": {"name": "agent"}, "spec": {"selector": SELECTOR, "template": TEMPLATE}},
    )
    await DaemonSetController(api).sync("default", "agent")
    [pod] = pods(api)
    assert said(api, "daemonset-controller") == [
        ("Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}")
    ]


async def test_job_records_created_pods_and_completion() -> None:
    api = await new_api()
    await create(
        api,
        "batch/jobs",
        {
            "metadata": {"name": "once"},
            "spec": {
                "template": {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}
            },
        },
    )
    controller = JobController(api)
    await controller.sync("default", "once")
    [pod] = pods(api)
    await api.store.put("pods", {**pod, "status": {"phase": "Succeeded"}}, pod)
    await controller.sync("default", "once")
    await controller.sync("default", "once")  # finished: nothing more to say
    assert said(api, "job-controller") == [
        ("Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}"),
        ("Normal", "Completed", "Job completed"),
    ]


async def test_job_over_its_backoff_limit_records_the_failed_condition() -> None:
    api = await new_api()
    await create(
        api,
        "batch/jobs",
        {
            "metadata": {"name": "flaky"},
            "spec": {
                "backoffLimit": 0,
                "template": {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}},
            },
        },
    )
    controller = JobController(api)
    await controller.sync("default", "flaky")
    [pod] = pods(api)
    await api.store.put("pods", {**pod, "status": {"phase": "Failed"}}, pod)
    await controller.sync("default", "flaky")
    assert said(api, "job-controller")[-1] == (
        "Warning",
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
    )


async def test_taint_eviction_records_marking_for_deletion() -> None:
    api = await new_api()
    node = node_manifest("node-0", NodeTemplate())
    node["spec"] = {"taints": [{"key": "gone", "effect": "NoExecute"}]}
    await create(api, "nodes", node)
    await create(
        api,
        "pods",
        {"metadata": {"name": "victim"}, "spec": {**TEMPLATE["spec"], "nodeName": "node-0"}},
    )
    await TaintEvictionController(api).sync("pod default", "victim")
    [event] = events(api)
    assert (event["type"], event["reason"], event["message"]) == (
        "Normal",
        "TaintManagerEviction",
        "Marking for deletion Pod default/victim",
    )
    assert event["source"] == {"component": "taint-eviction-controller"}
    # emitPodDeletionEvent's reference names the pod without its uid
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "victim",
        "namespace": "default",
    }


async def test_node_lifecycle_records_node_not_ready_in_default_namespace() -> None:
    clock = Clock()
    api = await new_api(clock)
    node = node_manifest("node-0", NodeTemplate())
    node["status"] = {
        "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": rfc3339(NOW)}]
    }
    created = await create(api, "nodes", node)
    controller = NodeLifecycleController(api, ControllerOptions(node_monitor_grace_period=40))
    clock.now += 41
    await controller.sync("", MONITOR)
    [event] = events(api)
    assert (event["type"], event["reason"], event["message"]) == (
        "Normal",
        "NodeNotReady",
        "Node node-0 status is now: NodeNotReady",
    )
    assert event["source"] == {"component": "node-controller"}
    assert event["metadata"]["namespace"] == "default"  # a Node has none: makeEvent's default
    assert event["involvedObject"] == {
        "kind": "Node",
        "name": "node-0",
        "apiVersion": "v1",
        "uid": created["metadata"]["uid"],
    }


async def test_kubelet_records_container_start_and_kill_with_its_node_as_host() -> None:
    api = await new_api()
    await create(api, "nodes", node_manifest("node-0", NodeTemplate()))
    await create(
        api,
        "pods",
        {"metadata": {"name": "web"}, "spec": {**TEMPLATE["spec"], "nodeName": "node-0"}},
    )
    kubelet = NodeSimulator(api, NodeTemplate())
    await kubelet._run_pod("default", "web")
    pod = api.store.get("pods", "default", "web")
    assert pod is not None and pod["status"]["phase"] == "Running"
    assert said(api, "kubelet") == [
        (
            "Normal",
            "Pulled",
            'Container image "nginx:1.27" already present on machine and can '
            "be accessed by the pod",
        ),
        ("Normal", "Created", "Created container: app"),
        ("Normal", "Started", "Started container app"),
    ]
    event = events(api)[0]
    assert event["source"] == {"component": "kubelet", "host": "node-0"}
    assert event["reportingComponent"] == "kubelet"
    assert event["reportingInstance"] == "node-0"
    assert event["involvedObject"]["fieldPath"] == "spec.containers{app}"
    assert event["involvedObject"]["uid"] == pod["metadata"]["uid"]

    await api.store.put(
        "pods", {**pod, "metadata": {**pod["metadata"], "deletionTimestamp": rfc3339(NOW)}}, pod
    )
    await kubelet._finish_deletion("default", "web")
    assert api.store.get("pods", "default", "web") is None
    assert said(api, "kubelet")[-1] == ("Normal", "Killing", "Stopping container app")


async def test_kubelet_events_off_writes_only_the_pod() -> None:
    api = await new_api()
    await create(api, "nodes", node_manifest("node-0", NodeTemplate()))
    await create(
        api,
        "pods",
        {"metadata": {"name": "web"}, "spec": {**TEMPLATE["spec"], "nodeName": "node-0"}},
    )
    await NodeSimulator(api, NodeTemplate(), events=False)._run_pod("default", "web")
    assert events(api) == []


async def test_event_ttl_deletes_events_a_ttl_after_their_last_write() -> None:
    api = await new_api()
    now = [0.0]
    ttl = EventTTL(api.store, ttl=60, clock=lambda: now[0])
    ttl.start()
    try:
        await create(api, "pods", {"metadata": {"name": "web"}, "spec": TEMPLATE["spec"]})
        pod = api.store.get("pods", "default", "web")
        assert pod is not None
        for reason in ("Old", "Updated"):
            await api.events.record(
                Source("kubelet", "node-0"),
                {"kind": "Pod", "name": "web", "namespace": "default"},
                "Normal",
                reason,
                "m",
            )
        updated = next(e for e in events(api) if e["reason"] == "Updated")
        now[0] = 30.0  # a later write (the correlator's count+1) restarts its TTL
        await api.store.put(
            "events", {**updated, "metadata": dict(updated["metadata"]), "count": 2}, updated
        )
        now[0] = 60.0
        assert await ttl.expire_due() == 1
        assert [e["reason"] for e in events(api)] == ["Updated"]
        now[0] = 89.0
        assert await ttl.expire_due() == 0
        now[0] = 90.0
        assert await ttl.expire_due() == 1
        assert events(api) == [] and ttl.expired == 2
    finally:
        await ttl.stop()
