"""Node status.declaredFeatures (KEP-5328, NodeStatus.DeclaredFeatures in
staging/src/k8s.io/api/core/v1/types.go: a sorted list of names) is stored and served as written,
through the status subresource as a kubelet writes it and in kubectl's JSON."""

from __future__ import annotations

from typing import Any

from kubesim.nodes import KUBELET_VERSION, kubelet_declared_features

Kube = Any  # the `kube` fixture (tests/kubesim/conftest.py)
FEATURES = ["RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport"]


async def test_declared_features_round_trip_through_the_status_subresource(kube: Kube) -> None:
    status, node = await kube.call("GET", "/api/v1/nodes/node-0")
    assert status == 200, node
    node["status"]["declaredFeatures"] = FEATURES
    status, body = await kube.call("PUT", "/api/v1/nodes/node-0/status", node)
    assert status == 200, body
    assert body["status"]["declaredFeatures"] == FEATURES
    status, listed = await kube.call("GET", "/api/v1/nodes")
    assert status == 200
    by_name = {n["metadata"]["name"]: n for n in listed["items"]}
    assert by_name["node-0"]["status"]["declaredFeatures"] == FEATURES
    # A node created with the field keeps it (the simulated kubelet completes, never replaces).
    status, created = await kube.call(
        "POST",
        "/api/v1/nodes",
        {"metadata": {"name": "declared"}, "status": {"declaredFeatures": FEATURES[:1]}},
    )
    assert status == 201, created
    status, got = await kube.call("GET", "/api/v1/nodes/declared")
    assert got["status"]["declaredFeatures"] == FEATURES[:1]


async def test_the_simulated_kubelet_declares_what_its_version_declares(kube: Kube) -> None:
    """A v1.35 kubelet has the NodeDeclaredFeatures gate alpha and off: it declares nothing."""
    assert kubelet_declared_features("v1.35.0-kubesim") == ()
    status, node = await kube.call("GET", "/api/v1/nodes/node-1")
    assert status == 200
    declared = list(kubelet_declared_features(KUBELET_VERSION))
    assert node["status"].get("declaredFeatures", []) == declared
