"""The simulated DRA driver, the resourceclaim controller and the kubelet's claim gate, in one
in-process kubesim (tests/kubesim_dra/dra_harness.py)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from dra_harness import (
    CLAIMS,
    CLASSES,
    NODES,
    NS,
    PODS,
    SLICES,
    TEMPLATES,
    allocate_and_bind,
    claim,
    dra_cluster,
    eventually,
    pod,
    stored,
    template,
)

from kubesim.cluster import Cluster
from kubesim.nodes import node_manifest


def generated_claims(cluster: Cluster) -> list[Any]:
    return list(cluster.store.items(CLAIMS.storage_key, NS))


# ---- the driver ------------------------------------------------------------------------------
async def test_driver_publishes_a_class_and_one_slice_per_node_with_models_round_robin() -> None:
    async with dra_cluster(nodes=3, devices=2, models=("a100", "h100")) as cluster:
        device_class = stored(cluster, CLASSES, "gpu.kubesim.io")
        assert device_class["spec"]["selectors"] == [
            {"cel": {"expression": 'device.driver == "gpu.kubesim.io"'}}
        ]
        slices = await eventually(
            lambda: (
                len(list(cluster.store.items(SLICES.storage_key))) == 3
                and list(cluster.store.items(SLICES.storage_key))
            )
        )
        by_node = {s["spec"]["nodeName"]: s for s in slices}
        assert sorted(by_node) == ["node-0", "node-1", "node-2"]
        spec = by_node["node-1"]["spec"]
        assert spec["driver"] == "gpu.kubesim.io"
        assert spec["pool"] == {"name": "node-1", "generation": 1, "resourceSliceCount": 1}
        assert [d["name"] for d in spec["devices"]] == ["gpu-0", "gpu-1"]
        assert spec["devices"][1]["attributes"] == {
            "model": {"string": "h100"},
            "index": {"int": 1},
        }
        assert spec["devices"][0]["capacity"] == {"memory": {"value": "80Gi"}}
        models = {
            n: s["spec"]["devices"][0]["attributes"]["model"]["string"] for n, s in by_node.items()
        }
        assert models == {"node-0": "a100", "node-1": "h100", "node-2": "a100"}


async def test_slices_follow_nodes_added_deleted_and_relabelled() -> None:
    async with dra_cluster(nodes=1, devices=1) as cluster:
        await eventually(lambda: stored(cluster, SLICES, "node-0-gpu.kubesim.io"))
        node = node_manifest("extra", cluster.simulator.template)
        node["metadata"]["labels"]["gpu.kubesim.io/model"] = "mi300"
        await cluster.api.create(NODES, "", node)
        added = await eventually(lambda: stored(cluster, SLICES, "extra-gpu.kubesim.io"))
        assert added["spec"]["devices"][0]["attributes"]["model"] == {"string": "mi300"}
        current = copy.deepcopy(cluster.api.get(NODES, "", "extra"))
        current["metadata"]["labels"]["gpu.kubesim.io/model"] = "b200"
        await cluster.api.update(NODES, "", "extra", current)
        relabelled = await eventually(
            lambda: (
                (s := stored(cluster, SLICES, "extra-gpu.kubesim.io"))
                and s["spec"]["pool"]["generation"] == 2
                and s
            )
        )
        assert relabelled["spec"]["devices"][0]["attributes"]["model"] == {"string": "b200"}
        await cluster.api.delete(NODES, "", "extra", {})
        await eventually(lambda: stored(cluster, SLICES, "extra-gpu.kubesim.io") is None)
        assert stored(cluster, SLICES, "node-0-gpu.kubesim.io") is not None


async def test_no_driver_by_default() -> None:
    async with dra_cluster(nodes=1, devices=0) as cluster:
        await asyncio.sleep(0.05)
        assert list(cluster.store.items(SLICES.storage_key)) == []
        assert list(cluster.store.items(CLASSES.storage_key)) == []


# ---- the resourceclaim controller ------------------------------------------------------------
async def test_claim_generated_from_a_template_once_with_owner_annotation_and_status() -> None:
    async with dra_cluster(nodes=1) as cluster:
        await cluster.api.create(TEMPLATES, NS, template())
        created = await cluster.api.create(PODS, NS, pod("train", template_name="one-gpu"))
        claims = await eventually(lambda: generated_claims(cluster))
        assert len(claims) == 1
        generated = claims[0]
        meta = generated["metadata"]
        assert meta["generateName"] == "train-gpu-"
        assert meta["name"].startswith("train-gpu-") and len(meta["name"]) == len("train-gpu-") + 5
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": "train",
                "uid": created["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert meta["annotations"] == {"team": "ml", "resource.kubernetes.io/pod-claim-name": "gpu"}
        assert meta["labels"] == {"app": "train"}
        assert generated["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == (
            "gpu.kubesim.io"
        )
        statuses = await eventually(
            lambda: stored(cluster, PODS, "train")["status"].get("resourceClaimStatuses")
        )
        assert statuses == [{"name": "gpu", "resourceClaimName": meta["name"]}]
        # later pod updates do not make a second claim
        for label in ("a", "b"):
            current = copy.deepcopy(cluster.api.get(PODS, NS, "train"))
            current["metadata"]["labels"] = {"round": label}
            await cluster.api.update(PODS, NS, "train", current)
        await asyncio.sleep(0.05)
        assert [c["metadata"]["name"] for c in generated_claims(cluster)] == [meta["name"]]


async def test_completed_pod_releases_and_deallocates_its_claim_which_is_deleted() -> None:
    async with dra_cluster(nodes=1) as cluster:
        await cluster.api.create(TEMPLATES, NS, template())
        await cluster.api.create(PODS, NS, pod("job", template_name="one-gpu"))
        statuses = await eventually(
            lambda: stored(cluster, PODS, "job")["status"].get("resourceClaimStatuses")
        )
        claim_name = statuses[0]["resourceClaimName"]
        await allocate_and_bind(cluster, claim_name, "job", "node-0")
        await eventually(lambda: stored(cluster, PODS, "job")["status"]["phase"] == "Running")
        running = cluster.api.get(PODS, NS, "job")
        await cluster.api.update(
            PODS,
            NS,
            "job",
            {**running, "status": {**running["status"], "phase": "Succeeded"}},
            subresource="status",
        )
        # reservedFor emptied, allocation cleared, finalizer dropped, then the claim deleted
        await eventually(lambda: stored(cluster, CLAIMS, claim_name) is None)


async def test_shared_claim_keeps_allocation_for_its_other_user() -> None:
    async with dra_cluster(nodes=1) as cluster:
        await cluster.api.create(CLAIMS, NS, claim("shared"))
        await cluster.api.create(PODS, NS, pod("a", claim_name="shared"))
        await cluster.api.create(PODS, NS, pod("b", claim_name="shared"))
        await allocate_and_bind(cluster, "shared", "a", "node-0")
        # b is bound with the claim allocated: the controller reserves it for b as well
        b = cluster.api.get(PODS, NS, "b")
        from kubesim.subresources import bind

        await bind(
            cluster.api,
            NS,
            "b",
            {"metadata": {"name": "b"}, "target": {"kind": "Node", "name": "node-0"}},
        )
        await eventually(
            lambda: len(stored(cluster, CLAIMS, "shared")["status"].get("reservedFor") or []) == 2
        )
        await eventually(lambda: stored(cluster, PODS, "b")["status"]["phase"] == "Running")
        await cluster.api.delete(PODS, NS, "a", {"gracePeriodSeconds": 0})
        await eventually(
            lambda: (
                [
                    r["uid"]
                    for r in stored(cluster, CLAIMS, "shared")["status"].get("reservedFor") or []
                ]
                == [b["metadata"]["uid"]]
            )
        )
        assert stored(cluster, CLAIMS, "shared")["status"]["allocation"]
        await cluster.api.delete(PODS, NS, "b", {"gracePeriodSeconds": 0})
        done = await eventually(
            lambda: (
                (c := stored(cluster, CLAIMS, "shared"))
                and "allocation" not in (c.get("status") or {})
                and c
            )
        )
        assert "finalizers" not in done["metadata"]  # a user's claim stays, deallocated


async def test_generated_claim_is_deleted_with_its_pod() -> None:
    async with dra_cluster(nodes=1) as cluster:
        await cluster.api.create(TEMPLATES, NS, template())
        await cluster.api.create(PODS, NS, pod("gone", template_name="one-gpu"))
        await eventually(lambda: generated_claims(cluster))
        await cluster.api.delete(PODS, NS, "gone", {"gracePeriodSeconds": 0})
        await eventually(lambda: not generated_claims(cluster))


# ---- the kubelet -----------------------------------------------------------------------------
async def test_kubelet_waits_for_claims_allocated_and_reserved_for_the_pod() -> None:
    async with dra_cluster(nodes=1) as cluster:
        await cluster.api.create(PODS, NS, pod("early", claim_name="later", node="node-0"))
        waiting = await eventually(
            lambda: (p := stored(cluster, PODS, "early"))["status"].get("containerStatuses") and p
        )
        assert waiting["status"]["phase"] == "Pending"
        assert waiting["status"]["containerStatuses"][0]["state"] == {
            "waiting": {"reason": "ContainerCreating"}
        }
        await cluster.api.create(CLAIMS, NS, claim("later"))
        await asyncio.sleep(0.05)
        assert stored(cluster, PODS, "early")["status"]["phase"] == "Pending"  # not allocated
        current = cluster.api.get(CLAIMS, NS, "later")
        the_pod = cluster.api.get(PODS, NS, "early")
        await cluster.api.update(
            CLAIMS,
            NS,
            "later",
            {
                **current,
                "status": {
                    "allocation": {
                        "devices": {
                            "results": [
                                {
                                    "request": "gpu",
                                    "driver": "gpu.kubesim.io",
                                    "pool": "node-0",
                                    "device": "gpu-0",
                                }
                            ]
                        }
                    },
                    "reservedFor": [
                        {"resource": "pods", "name": "early", "uid": the_pod["metadata"]["uid"]}
                    ],
                },
            },
            subresource="status",
        )
        await eventually(lambda: stored(cluster, PODS, "early")["status"]["phase"] == "Running")


async def test_pods_without_claims_run_as_before() -> None:
    async with dra_cluster(nodes=1) as cluster:
        plain = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "plain", "namespace": NS},
            "spec": {"nodeName": "node-0", "containers": [{"name": "c", "image": "x"}]},
        }
        await cluster.api.create(PODS, NS, plain)
        await eventually(lambda: stored(cluster, PODS, "plain")["status"]["phase"] == "Running")
