"""?dryRun=All: every write answers as if done and persists nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.kubesim.conftest import LAYOUTS

# each test runs against one process and against two front-ends over a store (--workers)
pytestmark = pytest.mark.parametrize("layout", LAYOUTS)

Kube = Any  # the `kube` fixture (tests/kubesim/conftest.py)
PODS = "/api/v1/namespaces/default/pods"
CMS = "/api/v1/namespaces/default/configmaps"


def configmap(name: str, value: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": value},
    }


async def state(kube: Kube) -> tuple[int, list[Any]]:
    """The store's resourceVersion and every configmap and pod, to compare before and after."""
    store = kube.cluster.store
    return store.resource_version, [store.items("configmaps"), store.items("pods")]


async def test_dry_run_create_answers_the_object_without_storing_it(kube: Kube) -> None:
    before = await state(kube)
    status, body = await kube.call("POST", CMS, configmap("dry"), dryRun="All")
    assert status == 201
    assert body["metadata"]["name"] == "dry" and body["metadata"]["uid"]
    assert body["metadata"]["creationTimestamp"]
    assert "resourceVersion" not in body["metadata"]
    assert await state(kube) == before
    assert (await kube.call("GET", f"{CMS}/dry"))[0] == 404


@pytest.mark.parametrize(
    ("method", "suffix", "body", "content_type", "expected_status", "check"),
    [
        ("PUT", "/cm", None, "application/json", 200, lambda b: b["data"] == {"k": "2"}),
        (
            "PATCH",
            "/cm",
            {"data": {"k": "3"}},
            "application/merge-patch+json",
            200,
            lambda b: b["data"] == {"k": "3"},
        ),
        (
            "PATCH",
            "/cm",
            [{"op": "add", "path": "/data/x", "value": "y"}],
            "application/json-patch+json",
            200,
            lambda b: b["data"]["x"] == "y",
        ),
        ("DELETE", "/cm", None, "application/json", 200, lambda b: b["metadata"]["name"] == "cm"),
        ("DELETE", "", None, "application/json", 200, lambda b: len(b["items"]) == 1),
    ],
)
async def test_dry_run_writes_leave_the_store_alone(
    kube: Kube,
    method: str,
    suffix: str,
    body: Any,
    content_type: str,
    expected_status: int,
    check: Any,
) -> None:
    _, created = await kube.call("POST", CMS, configmap("cm"))
    if body is None and method == "PUT":
        body = {**created, "data": {"k": "2"}}
    before = await state(kube)
    status, answer = await kube.call(
        method, f"{CMS}{suffix}", body, content_type=content_type, dryRun="All"
    )
    assert status == expected_status, answer
    assert check(answer)
    assert await state(kube) == before
    _, stored = await kube.call("GET", f"{CMS}/cm")
    assert stored == created


async def test_dry_run_still_checks_everything(kube: Kube) -> None:
    await kube.call("POST", CMS, configmap("taken"))
    assert (await kube.call("POST", CMS, configmap("taken"), dryRun="All"))[0] == 409
    bad = configmap("Not_A_Name")
    assert (await kube.call("POST", CMS, bad, dryRun="All"))[0] == 422
    stale = {**configmap("taken", "9"), "metadata": {"name": "taken", "resourceVersion": "1"}}
    assert (await kube.call("PUT", f"{CMS}/taken", stale, dryRun="All"))[0] == 409


async def test_dry_run_binding_and_graceful_delete_of_a_pod(kube: Kube) -> None:
    await kube.create_pod("p", schedulerName="nobody")
    node = kube.cluster.store.items("nodes")[0]["metadata"]["name"]
    before = await state(kube)
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"kind": "Node", "name": node},
    }
    status, _ = await kube.call("POST", f"{PODS}/p/binding", binding, dryRun="All")
    assert status == 201
    assert await state(kube) == before
    _, pod = await kube.call("GET", f"{PODS}/p")
    assert "nodeName" not in pod["spec"]


@pytest.mark.parametrize("value", ["true", "Some", ""])
async def test_unknown_dry_run_values_are_refused(kube: Kube, value: str) -> None:
    status, body = await kube.call("POST", CMS, configmap("x"), dryRun=value)
    assert status == 422
    assert body["message"] == (
        f'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
        f'[]string{{"{value}"}}: supported values: "All"'
    )
    assert body["details"]["causes"][0]["field"] == "dryRun"
    assert (await kube.call("GET", f"{CMS}/x"))[0] == 404
