"""CRUD semantics through HTTP: what a client sees from create/get/list/update/patch/delete."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.kubesim.conftest import LAYOUTS

# each test runs against one process and against two front-ends over a store (--workers)
pytestmark = pytest.mark.parametrize("layout", LAYOUTS)

Kube = Any  # the `kube` fixture (tests/kubesim/conftest.py)

PODS = "/api/v1/namespaces/default/pods"


async def test_unauthenticated_requests_get_401_status(kube: Kube) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        async with kube.client.get("/api/v1/namespaces", headers=headers) as r:
            body = await r.json()
        assert r.status == 401
        assert body == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        }


async def test_system_namespaces_and_nodes_exist(kube: Kube) -> None:
    status, body = await kube.call("GET", "/api/v1/namespaces")
    assert status == 200
    names = [ns["metadata"]["name"] for ns in body["items"]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    await asyncio.sleep(0.05)
    status, body = await kube.call("GET", "/api/v1/nodes")
    nodes = body["items"]
    assert [n["metadata"]["name"] for n in nodes] == ["node-0", "node-1"]
    node = nodes[0]
    assert node["status"]["allocatable"] == {
        "cpu": "4",
        "memory": "32Gi",
        "pods": "110",
        "ephemeral-storage": "100Gi",
    }
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "node-0"
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "True"
    status, body = await kube.call(
        "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    )
    assert [lease["metadata"]["name"] for lease in body["items"]] == ["node-0", "node-1"]


async def test_create_sets_server_fields(kube: Kube) -> None:
    pod = await kube.create_pod("web")
    meta = pod["metadata"]
    assert meta["namespace"] == "default"
    assert len(meta["uid"]) == 36
    assert meta["creationTimestamp"].endswith("Z")
    assert meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0
    status, got = await kube.call("GET", f"{PODS}/web")
    assert status == 200 and got == pod


async def test_generate_name(kube: Kube) -> None:
    body = {
        "metadata": {"generateName": "web-"},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    status, pod = await kube.call("POST", PODS, body)
    assert status == 201, pod
    name = pod["metadata"]["name"]
    assert name.startswith("web-") and len(name) == len("web-") + 5
    assert pod["kind"] == "Pod" and pod["apiVersion"] == "v1"


@pytest.mark.parametrize(
    ("method", "path", "body", "code", "reason", "message"),
    [
        ("GET", f"{PODS}/missing", None, 404, "NotFound", 'pods "missing" not found'),
        (
            "GET",
            "/api/v1/namespaces/default/widgets",
            None,
            404,
            "NotFound",
            "the server could not find the requested resource",
        ),
        (
            "GET",
            "/apis/apps/v1/namespaces/default/replicasets/x",
            None,
            404,
            "NotFound",
            'replicasets.apps "x" not found',
        ),
        ("POST", PODS, b"{not json", 400, "BadRequest", None),
        (
            "POST",
            "/api/v1/namespaces/nope/pods",
            {"metadata": {"name": "p"}, "spec": {}},
            404,
            "NotFound",
            'namespaces "nope" not found',
        ),
        ("POST", PODS, {"metadata": {"name": "Bad_Name"}, "spec": {}}, 422, "Invalid", None),
        ("POST", PODS, {"kind": "Node", "metadata": {"name": "p"}}, 400, "BadRequest", None),
        ("PATCH", "/api/v1/nodes/node-0", {"metadata": {}}, 415, "UnsupportedMediaType", None),
    ],
)
async def test_errors_are_upstream_status(
    kube: Kube,
    method: str,
    path: str,
    body: Any,
    code: int,
    reason: str,
    message: str | None,
) -> None:
    content_type = "application/apply-patch+yaml" if method == "PATCH" else "application/json"
    status, got = await kube.call(method, path, body, content_type=content_type)
    assert status == code
    assert got["kind"] == "Status" and got["status"] == "Failure"
    assert got["code"] == code and got["reason"] == reason
    if message is not None:
        assert got["message"] == message


async def test_invalid_names_the_field(kube: Kube) -> None:
    spec = {"containers": [{"name": "c", "image": "i"}]}
    status, got = await kube.call("POST", PODS, {"metadata": {"name": "Bad_Name"}, "spec": spec})
    assert status == 422
    assert got["details"]["causes"][0]["field"] == "metadata.name"
    assert got["message"].startswith('Pod "Bad_Name" is invalid: metadata.name: ')


async def test_body_over_3mib_is_413(kube: Kube) -> None:
    big = b'{"metadata":{"name":"x","annotations":{"a":"' + b"x" * (3 * 1024 * 1024) + b'"}}}'
    status, got = await kube.call("POST", "/api/v1/namespaces/default/configmaps", big)
    assert status == 413
    assert got["reason"] == "RequestEntityTooLarge"


async def test_already_exists(kube: Kube) -> None:
    await kube.create_pod("dup")
    spec = {"containers": [{"name": "c", "image": "i"}]}
    status, body = await kube.call("POST", PODS, {"metadata": {"name": "dup"}, "spec": spec})
    assert status == 409
    assert body["reason"] == "AlreadyExists"
    assert body["message"] == 'pods "dup" already exists'


async def test_update_conflict_on_stale_resource_version(kube: Kube) -> None:
    cm = {"metadata": {"name": "cfg"}, "data": {"a": "1"}}
    path = "/api/v1/namespaces/default/configmaps"
    status, created = await kube.call("POST", path, cm)
    assert status == 201
    first = {**created, "data": {"a": "2"}}
    status, updated = await kube.call("PUT", f"{path}/cfg", first)
    assert status == 200 and updated["data"] == {"a": "2"}
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    stale = {**created, "data": {"a": "3"}}
    status, body = await kube.call("PUT", f"{path}/cfg", stale)
    assert status == 409
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on configmaps "cfg": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


async def test_generation_moves_only_with_spec(kube: Kube) -> None:
    pod = await kube.create_pod("gen")
    status, labelled = await kube.call(
        "PATCH",
        f"{PODS}/gen",
        {"metadata": {"labels": {"x": "y"}}},
        content_type="application/merge-patch+json",
    )
    assert status == 200, labelled
    assert labelled["metadata"]["generation"] == 1
    assert labelled["metadata"]["labels"] == {"app": "gen", "x": "y"}
    status, changed = await kube.call(
        "PATCH",
        f"{PODS}/gen",
        {"spec": {"activeDeadlineSeconds": 5}},
        content_type="application/merge-patch+json",
    )
    assert changed["metadata"]["generation"] == 2
    assert pod["metadata"]["uid"] == changed["metadata"]["uid"]


async def test_noop_update_keeps_resource_version(kube: Kube) -> None:
    pod = await kube.create_pod("same")
    status, again = await kube.call("PUT", f"{PODS}/same", pod)
    assert status == 200
    assert again["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        ("application/merge-patch+json", {"metadata": {"annotations": {"k": "v"}}}),
        (
            "application/json-patch+json",
            [{"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}}],
        ),
        ("application/strategic-merge-patch+json", {"metadata": {"annotations": {"k": "v"}}}),
    ],
)
async def test_patch_types(kube: Kube, content_type: str, patch: Any) -> None:
    await kube.create_pod("p")
    status, body = await kube.call("PATCH", f"{PODS}/p", patch, content_type=content_type)
    assert status == 200, body
    assert body["metadata"]["annotations"] == {"k": "v"}


async def test_patch_with_stale_resource_version_conflicts(kube: Kube) -> None:
    await kube.create_pod("p")
    status, body = await kube.call(
        "PATCH",
        f"{PODS}/p",
        {"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}},
        content_type="application/merge-patch+json",
    )
    assert status == 409 and body["reason"] == "Conflict"


async def test_status_subresource_only_changes_status(kube: Kube) -> None:
    await kube.create_pod("s")
    patch = {"status": {"phase": "Failed"}, "metadata": {"labels": {"ignored": "yes"}}}
    status, body = await kube.call(
        "PATCH", f"{PODS}/s/status", patch, content_type="application/merge-patch+json"
    )
    assert status == 200, body
    assert body["status"]["phase"] == "Failed"
    assert "ignored" not in body["metadata"]["labels"]
    # and the main resource ignores status
    status, body = await kube.call(
        "PATCH",
        f"{PODS}/s",
        {"status": {"phase": "Running"}},
        content_type="application/merge-patch+json",
    )
    assert body["status"]["phase"] == "Failed"


async def test_list_limit_continue_and_expired_token(kube: Kube, layout: str) -> None:
    for i in range(5):
        await kube.create_pod(f"p{i}")
    status, first = await kube.call("GET", PODS, limit="2")
    assert [p["metadata"]["name"] for p in first["items"]] == ["p0", "p1"]
    assert first["metadata"]["remainingItemCount"] == 3
    token = first["metadata"]["continue"]
    await kube.create_pod("p2a")  # not in the snapshot the pages come from
    status, second = await kube.call("GET", PODS, limit="2", **{"continue": token})
    assert [p["metadata"]["name"] for p in second["items"]] == ["p2", "p3"]
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    status, third = await kube.call(
        "GET", PODS, limit="2", **{"continue": second["metadata"]["continue"]}
    )
    assert [p["metadata"]["name"] for p in third["items"]] == ["p4"]
    assert "continue" not in third["metadata"]
    if layout == "workers":
        return  # pages went to both front-ends: the other rebuilt the list from its history
    kube.cluster.api._snapshots.clear()
    status, body = await kube.call("GET", PODS, limit="2", **{"continue": token})
    assert status == 410 and body["reason"] == "Expired"


async def test_list_selectors(kube: Kube) -> None:
    await kube.create_pod("a")
    await kube.create_pod("b", nodeName="node-1")
    status, body = await kube.call("GET", "/api/v1/pods", labelSelector="app in (a,b),app!=b")
    assert [p["metadata"]["name"] for p in body["items"]] == ["a"]
    status, body = await kube.call("GET", "/api/v1/pods", fieldSelector="spec.nodeName=node-1")
    assert [p["metadata"]["name"] for p in body["items"]] == ["b"]
    status, body = await kube.call("GET", "/api/v1/pods", labelSelector="app in (")
    assert status == 400 and body["reason"] == "BadRequest"


async def test_graceful_pod_deletion_on_simulated_node(kube: Kube) -> None:
    await kube.create_pod("g", nodeName="node-0")
    status, body = await kube.call("DELETE", f"{PODS}/g")
    assert status == 200
    assert body["metadata"]["deletionTimestamp"]
    assert body["metadata"]["deletionGracePeriodSeconds"] == 30
    for _ in range(50):  # the simulated kubelet finishes the deletion
        status, _ = await kube.call("GET", f"{PODS}/g")
        if status == 404:
            break
        await asyncio.sleep(0.01)
    assert status == 404


async def test_finalizers_hold_deletion_until_removed(kube: Kube) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    await kube.call("POST", path, {"metadata": {"name": "f", "finalizers": ["x/y"]}})
    status, body = await kube.call("DELETE", f"{path}/f")
    assert status == 200 and body["metadata"]["deletionTimestamp"]
    status, body = await kube.call("GET", f"{path}/f")
    assert status == 200
    status, body = await kube.call(
        "PATCH",
        f"{path}/f",
        {"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )
    assert status == 200
    status, body = await kube.call("GET", f"{path}/f")
    assert status == 404


async def test_delete_preconditions(kube: Kube) -> None:
    pod = await kube.create_pod("pre")
    options = {"preconditions": {"uid": "not-it"}}
    status, body = await kube.call("DELETE", f"{PODS}/pre", options)
    assert status == 409
    assert body["message"].endswith(
        f"Precondition failed: UID in precondition: not-it, UID in object meta: "
        f"{pod['metadata']['uid']}"
    )


async def test_deleting_a_namespace_removes_its_objects(kube: Kube) -> None:
    await kube.call("POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
    await kube.create_pod("t", namespace="team")
    status, _ = await kube.call("DELETE", "/api/v1/namespaces/team")
    assert status == 200
    status, _ = await kube.call("GET", "/api/v1/namespaces/team/pods/t")
    assert status == 404
    status, _ = await kube.call("GET", "/api/v1/namespaces/team")
    assert status == 404


async def test_deletecollection(kube: Kube) -> None:
    for name in ("a", "b", "c"):
        await kube.create_pod(name)
    status, body = await kube.call("DELETE", PODS, labelSelector="app!=b")
    assert status == 200
    assert sorted(p["metadata"]["name"] for p in body["items"]) == ["a", "c"]
    status, body = await kube.call("GET", PODS)
    assert [p["metadata"]["name"] for p in body["items"]] == ["b"]


async def test_simulated_pod_turns_running(kube: Kube) -> None:
    await kube.create_pod("r", nodeName="node-1")
    for _ in range(50):
        _status, pod = await kube.call("GET", f"{PODS}/r")
        if pod["status"].get("phase") == "Running":
            break
        await asyncio.sleep(0.01)
    status_ = pod["status"]
    assert status_["phase"] == "Running"
    assert status_["podIP"] and status_["hostIP"] and status_["startTime"]
    assert status_["containerStatuses"][0]["ready"] is True
    ready = {c["type"]: c["status"] for c in status_["conditions"]}
    assert ready["Ready"] == "True"


async def test_user_created_node_is_simulated(kube: Kube) -> None:
    status, _ = await kube.call("POST", "/api/v1/nodes", {"metadata": {"name": "extra"}})
    assert status == 201
    for _ in range(50):
        status, node = await kube.call("GET", "/api/v1/nodes/extra")
        if node.get("status", {}).get("conditions"):
            break
        await asyncio.sleep(0.01)
    assert node["status"]["allocatable"]["pods"] == "110"
    status, lease = await kube.call(
        "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/extra"
    )
    assert status == 200 and lease["spec"]["holderIdentity"] == "extra"


async def test_metrics_count_requests_per_client_and_need_the_token(kube: Kube) -> None:
    # each API process counts its own requests: ask the one that served the list
    async with kube.client.get(PODS, headers={**AUTH, **KUBECTL}) as listed:
        assert listed.status == 200
    async with kube.client.get("/metrics") as refused:
        assert refused.status == 401
    async with kube.client.get("/metrics", headers=AUTH) as response:
        text = await response.text()
    assert 'kubesim_requests_total{client="kubectl",verb="LIST",resource="pods",' in text


KUBECTL = {"User-Agent": "kubectl/v1.31.0 (linux/amd64) kubernetes/0"}
AUTH = {"Authorization": "Bearer test-token"}  # conftest's token
