"""DynamicResources in explain and in traces, with a running Scheduler and an embedded cluster:
explain names, per node, the claim and request that could not be satisfied and why (the
verdict itself stays upstream's "cannot allocate all claims"); the Reserve and PreBind spans
name the claims and the devices allocated to them.

Three nodes, one driver: node-a has an a100, node-b no slice, node-c an h100. The first pod's
claim takes the h100; the second pod wants an h100 too and can go nowhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracing_harness import TracedHarness, traced_scheduler

from observability.explain import render_text

DRIVER = "gpu.example.com"
RESOURCE = "/apis/resource.k8s.io/v1"
H100 = f'device.attributes["{DRIVER}"].model == "h100"'


def _slice(node: str, model: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0", "attributes": {"model": {"string": model}}}],
        },
    }


def _claim(name: str) -> dict[str, Any]:
    request = {
        "name": "gpu",
        "exactly": {"deviceClassName": DRIVER, "selectors": [{"cel": {"expression": H100}}]},
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [request]}},
    }


async def _set_up(h: TracedHarness) -> None:
    for node in ("node-a", "node-b", "node-c"):
        await h.api.create_node(node)
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
    await h.api.create(f"{RESOURCE}/deviceclasses", device_class)
    await h.api.create(f"{RESOURCE}/resourceslices", _slice("node-a", "a100"))
    await h.api.create(f"{RESOURCE}/resourceslices", _slice("node-c", "h100"))
    await h.wait_nodes_cached(3)
    resources = h.scheduler.cluster_objects.resources
    await h.wait_for(lambda: len(list(resources.slices.list())) == 2, what="slices seen")
    await h.wait_for(lambda: resources.device_class(DRIVER) is not None, what="class seen")


async def _pod_with_claim(h: TracedHarness, pod: str, claim: str) -> None:
    await h.api.create(f"{RESOURCE}/namespaces/default/resourceclaims", _claim(claim))
    await h.wait_for(
        lambda: h.scheduler.cluster_objects.resources.claim("default", claim) is not None,
        what=f"{claim} seen",
    )
    spec = {"resourceClaims": [{"name": "gpu", "resourceClaimName": claim}]}
    await h.api.create_pod(pod, extra_spec=spec)


async def test_explain_names_the_claim_and_request_each_node_cannot_satisfy(
    tmp_path: Path,
) -> None:
    async with traced_scheduler(tmp_path, tracing_enabled=False) as h:
        await _set_up(h)
        await _pod_with_claim(h, "first", "first-claim")
        assert await h.wait_bound("first") == "node-c"
        await _pod_with_claim(h, "second", "second-claim")
        explanation = await h.wait_for(lambda: h.explain.get("default", "second"), what="explain")

        assert explanation["result"] == "unschedulable"
        # What users of kube-scheduler see is unchanged.
        assert explanation["message"].startswith(
            "0/3 nodes are available: 3 cannot allocate all claims."
        )
        (group,) = explanation["filterVerdicts"]
        assert (group["plugin"], group["reason"], group["count"]) == (
            "DynamicResources",
            "cannot allocate all claims",
            3,
        )
        per_node = {
            node: detail["details"] for detail in group["nodeDetails"] for node in detail["nodes"]
        }
        claim = {"claim": "default/second-claim", "request": "gpu"}
        assert per_node == {
            "node-a": [{**claim, "reason": f"no device of class {DRIVER} matches the selectors"}],
            "node-b": [{**claim, "reason": f"node has no ResourceSlice of driver {DRIVER}"}],
            "node-c": [{**claim, "reason": "1 device(s) match, all allocated"}],
        }
        assert all(detail["count"] == 1 for detail in group["nodeDetails"])
        text = render_text(explanation)
        assert "claim default/second-claim, request gpu: 1 device(s) match, all allocated" in text


async def test_reserve_and_prebind_spans_carry_the_allocation(tmp_path: Path) -> None:
    async with traced_scheduler(tmp_path) as h:
        await _set_up(h)
        await _pod_with_claim(h, "first", "first-claim")
        assert await h.wait_bound("first") == "node-c"

        def points() -> dict[str, Any] | None:
            attempts = h.attempts("first")
            if not attempts:
                return None
            children = {span.name: span for span in h.children(attempts[-1])}
            return children if "PreBind" in children else None

        children = await h.wait_for(points, what="the attempt's spans")
        expected = {
            "aiosched.dra.claims": ("default/first-claim",),
            "aiosched.dra.devices": (f"default/first-claim/gpu: {DRIVER}/node-c/gpu-0",),
        }
        for point in ("Reserve", "PreBind"):
            attributes = dict(children[point].attributes or {})
            assert {key: attributes.get(key) for key in expected} == expected, point
        # Other extension points carry no allocation.
        assert "aiosched.dra.claims" not in (children["Filter"].attributes or {})
