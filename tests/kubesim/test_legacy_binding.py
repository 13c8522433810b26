"""POST namespaces/{ns}/bindings (the Binding names the pod) and per-resource verbs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.kubesim.conftest import LAYOUTS

# each test runs against one process and against two front-ends over a store (--workers)
pytestmark = pytest.mark.parametrize("layout", LAYOUTS)

Kube = Any  # the `kube` fixture (tests/kubesim/conftest.py)
PODS = "/api/v1/namespaces/default/pods"
BINDINGS = "/api/v1/namespaces/default/bindings"


def binding(pod: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def first_node(kube: Kube) -> str:
    return str(kube.cluster.store.items("nodes")[0]["metadata"]["name"])


async def test_legacy_binding_binds_the_named_pod(kube: Kube) -> None:
    await kube.create_pod("p", schedulerName="nobody")
    node = first_node(kube)
    status, body = await kube.call("POST", BINDINGS, binding("p", node))
    assert status == 201 and body["kind"] == "Status" and body["status"] == "Success"
    _, pod = await kube.call("GET", f"{PODS}/p")
    assert pod["spec"]["nodeName"] == node
    scheduled = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled[0]["status"] == "True"


@pytest.mark.parametrize(
    ("pod", "node", "code", "reason"),
    [
        ("missing", "n", 404, "NotFound"),
        ("", "n", 422, "Invalid"),
        ("p", "", 422, "Invalid"),
    ],
)
async def test_legacy_binding_errors(
    kube: Kube, pod: str, node: str, code: int, reason: str
) -> None:
    await kube.create_pod("p", schedulerName="nobody")
    status, body = await kube.call("POST", BINDINGS, binding(pod, node))
    assert (status, body["reason"]) == (code, reason)


async def test_legacy_binding_never_moves_a_bound_pod(kube: Kube) -> None:
    await kube.create_pod("p", schedulerName="nobody")
    node = first_node(kube)
    assert (await kube.call("POST", BINDINGS, binding("p", node)))[0] == 201
    status, body = await kube.call("POST", BINDINGS, binding("p", "elsewhere"))
    assert status == 409
    assert body["message"].endswith(f'is already assigned to node "{node}"')


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", BINDINGS),  # bindings: create only
        ("GET", f"{BINDINGS}/p"),
        ("DELETE", "/api/v1/namespaces"),  # namespaces have no deletecollection
    ],
)
async def test_verbs_a_resource_lacks_answer_405(kube: Kube, method: str, path: str) -> None:
    status, body = await kube.call(method, path)
    assert status == 405 and body["reason"] == "MethodNotAllowed"
    _, namespaces = await kube.call("GET", "/api/v1/namespaces")
    assert {"default", "kube-system"} <= {n["metadata"]["name"] for n in namespaces["items"]}


async def test_discovery_lists_bindings_as_create_only(kube: Kube) -> None:
    _, doc = await kube.call("GET", "/api/v1")
    entry = next(r for r in doc["resources"] if r["name"] == "bindings")
    assert entry["verbs"] == ["create"] and entry["kind"] == "Binding" and entry["namespaced"]


async def test_binding_clears_the_nomination_which_a_bound_pod_may_not_get_back(
    kube: Kube,
) -> None:
    """ClearingNominatedNodeNameAfterBinding (beta, on since v1.35): binding drops
    status.nominatedNodeName, and a status write may not set it on a bound pod (a late
    scheduler patch is refused with upstream's message)."""
    await kube.create_pod("p", schedulerName="nobody")
    node = first_node(kube)
    nominate = {"status": {"nominatedNodeName": node}}
    merge = "application/merge-patch+json"
    status, _ = await kube.call("PATCH", f"{PODS}/p/status", nominate, content_type=merge)
    assert status == 200
    status, _ = await kube.call("POST", BINDINGS, binding("p", node))
    assert status == 201
    _, pod = await kube.call("GET", f"{PODS}/p")
    assert "nominatedNodeName" not in pod["status"]
    status, body = await kube.call("PATCH", f"{PODS}/p/status", nominate, content_type=merge)
    assert status == 422
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: may not be set on pods that are already bound to a node",
            "field": "status.nominatedNodeName",
        }
    ]
