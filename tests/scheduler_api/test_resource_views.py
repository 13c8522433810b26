"""The resource.k8s.io/v1 views: what the DynamicResources plugin reads from each kind, how names
are qualified, and that malformed objects name the field."""

from __future__ import annotations

import pytest

from scheduler.api.errors import MalformedObject
from scheduler.api.pod import PodView
from scheduler.api.resource import (
    ALLOCATION_MODE_ALL,
    ClaimNotCreatedYet,
    DeviceClassView,
    ResourceClaimView,
    ResourceSliceView,
    SemVer,
    claim_name,
    is_for_pod,
)


def _slice() -> dict:
    return {
        "metadata": {"name": "node-1-gpu", "uid": "s1", "resourceVersion": "7"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "node-1", "generation": 2, "resourceSliceCount": 1},
            "nodeName": "node-1",
            "devices": [
                {
                    "name": "gpu-0",
                    "attributes": {
                        "model": {"string": "a100"},
                        "index": {"int": 0},
                        "other.example.com/ok": {"bool": True},
                        "driverVersion": {"version": "1.2.3-rc.1"},
                    },
                    "capacity": {"memory": {"value": "80Gi"}},
                }
            ],
        },
    }


def test_slice_qualifies_attribute_and_capacity_names_with_the_driver() -> None:
    view = ResourceSliceView.from_dict(_slice())
    assert (view.driver, view.pool_name, view.pool_generation, view.node_name) == (
        "gpu.example.com",
        "node-1",
        2,
        "node-1",
    )
    device = view.devices[0]
    assert device.attributes["gpu.example.com/model"] == "a100"
    assert device.attributes["gpu.example.com/index"] == 0
    assert device.attributes["other.example.com/ok"] is True
    assert device.attributes["gpu.example.com/driverVersion"] == SemVer.parse("1.2.3-rc.1")
    assert device.capacity["gpu.example.com/memory"] == 80 * 2**30 * 10**9
    assert device.capacity_text["gpu.example.com/memory"] == "80Gi"


@pytest.mark.parametrize(
    ("lower", "higher"),
    [("1.0.0-alpha", "1.0.0"), ("1.0.0-alpha.1", "1.0.0-alpha.beta"), ("1.9.0", "1.10.0")],
)
def test_semantic_versions_order_by_precedence(lower: str, higher: str) -> None:
    assert SemVer.parse(lower).sort_key() < SemVer.parse(higher).sort_key()


def test_an_attribute_with_two_values_names_its_path() -> None:
    obj = _slice()
    obj["spec"]["devices"][0]["attributes"]["model"] = {"string": "a", "int": 1}
    with pytest.raises(MalformedObject, match=r"spec.devices\[0\].attributes\[model\]"):
        ResourceSliceView.from_dict(obj)


def test_claim_requests_default_to_one_device_and_read_the_allocation() -> None:
    view = ResourceClaimView.from_dict(
        {
            "metadata": {"name": "c", "namespace": "ns", "uid": "u"},
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}},
                        {
                            "name": "all",
                            "exactly": {"deviceClassName": "x", "allocationMode": "All"},
                        },
                        {
                            "name": "alt",
                            "firstAvailable": [
                                {"name": "big", "deviceClassName": "x", "count": 2},
                                {"name": "small", "deviceClassName": "y"},
                            ],
                        },
                    ],
                    "constraints": [{"matchAttribute": "gpu.example.com/model"}],
                }
            },
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            {
                                "request": "gpu",
                                "driver": "gpu.example.com",
                                "pool": "node-1",
                                "device": "gpu-0",
                            }
                        ]
                    }
                },
                "reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-uid"}],
            },
        }
    )
    gpu, everything, alternatives = view.requests
    assert gpu.exactly is not None and (gpu.exactly.name, gpu.exactly.count) == ("gpu", 1)
    assert everything.exactly is not None
    assert everything.exactly.allocation_mode == ALLOCATION_MODE_ALL
    assert [s.name for s in alternatives.first_available] == ["big", "small"]
    assert alternatives.first_available[0].count == 2
    assert view.constraints[0].match_attribute == "gpu.example.com/model"
    assert view.allocation is not None
    assert view.allocation.devices[0].device_id == ("gpu.example.com", "node-1", "gpu-0")
    assert view.is_reserved_for("pod-uid") and not view.is_reserved_for("other")


def test_device_class_selectors() -> None:
    view = DeviceClassView.from_dict(
        {
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "x"'}}]},
        }
    )
    assert view.selectors == ('device.driver == "x"',)


def _pod(claims: list, statuses: list | None = None) -> PodView:
    return PodView.from_dict(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": "pod-uid"},
            "spec": {"containers": [{"name": "c"}], "resourceClaims": claims},
            "status": {"resourceClaimStatuses": statuses} if statuses is not None else {},
        }
    )


def test_pod_claim_names_as_upstreams_resourceclaim_name() -> None:
    pod = _pod(
        [
            {"name": "direct", "resourceClaimName": "shared"},
            {"name": "gen", "resourceClaimTemplateName": "tmpl"},
            {"name": "skipped", "resourceClaimTemplateName": "tmpl"},
        ],
        [{"name": "gen", "resourceClaimName": "p-gen-abcde"}, {"name": "skipped"}],
    )
    direct, generated, skipped = pod.resource_claims
    statuses = pod.resource_claim_statuses
    assert claim_name("ns", "p", direct, statuses) == ("shared", False)
    assert claim_name("ns", "p", generated, statuses) == ("p-gen-abcde", True)
    assert claim_name("ns", "p", skipped, statuses) == (None, True)


def test_a_generated_claim_not_recorded_yet_is_reported() -> None:
    pod = _pod([{"name": "gen", "resourceClaimTemplateName": "tmpl"}])
    with pytest.raises(ClaimNotCreatedYet, match='pod "ns/p": ResourceClaim not created yet'):
        claim_name("ns", "p", pod.resource_claims[0], pod.resource_claim_statuses)


def test_generated_claims_belong_to_the_pod_that_controls_them() -> None:
    claim = ResourceClaimView.from_dict(
        {
            "metadata": {
                "name": "p-gen-abcde",
                "namespace": "ns",
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": "p",
                        "uid": "pod-uid",
                        "controller": True,
                    }
                ],
            },
            "spec": {"devices": {}},
        }
    )
    assert is_for_pod(claim, "pod-uid") and not is_for_pod(claim, "someone-else")
