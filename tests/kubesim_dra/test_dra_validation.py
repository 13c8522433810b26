"""resource.k8s.io/v1 validation as facts ported from upstream's
pkg/apis/resource/validation/validation_*_test.go (a representative subset, upstream's paths and
messages) and pkg/apis/core/validation's pod resourceClaims cases."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim.validation import validate

CLAIM: dict[str, Any] = {
    "metadata": {"name": "claim", "namespace": "default"},
    "spec": {
        "devices": {
            "requests": [
                {
                    "name": "req-0",
                    "exactly": {
                        "deviceClassName": "class",
                        "allocationMode": "ExactCount",
                        "count": 1,
                    },
                }
            ]
        }
    },
}
SLICE: dict[str, Any] = {
    "metadata": {"name": "slice"},
    "spec": {
        "driver": "driver.example.com",
        "nodeName": "worker",
        "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "device-0"}],
    },
}


def errors(kind: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [cause.error() for cause in validate(kind, obj, old)]


def claim_with(**request: Any) -> dict[str, Any]:
    claim = copy.deepcopy(CLAIM)
    claim["spec"]["devices"]["requests"][0] = {"name": "req-0", **request}
    return claim


def test_good_claim_slice_class_template() -> None:
    assert errors("ResourceClaim", CLAIM) == []
    assert errors("ResourceSlice", SLICE) == []
    assert (
        errors(
            "DeviceClass",
            {
                "metadata": {"name": "class"},
                "spec": {"selectors": [{"cel": {"expression": 'device.driver == "x"'}}]},
            },
        )
        == []
    )
    assert (
        errors(
            "ResourceClaimTemplate",
            {"metadata": {"name": "t", "namespace": "default"}, "spec": {"spec": CLAIM["spec"]}},
        )
        == []
    )


CLAIM_CASES = [
    (
        "missing-exactly-and-first-available",
        claim_with(),
        [
            "spec.devices.requests[0]: Required value: exactly one of `exactly` or "
            "`firstAvailable` "
            "is required"
        ],
    ),
    (
        "both-exactly-and-first-available",
        claim_with(
            exactly={"deviceClassName": "class", "allocationMode": "ExactCount", "count": 1},
            firstAvailable=[
                {
                    "name": "sub",
                    "deviceClassName": "class",
                    "allocationMode": "ExactCount",
                    "count": 1,
                }
            ],
        ),
        [
            "spec.devices.requests[0]: Invalid value: null: exactly one of `exactly` or "
            "`firstAvailable` is required, but multiple fields are set"
        ],
    ),
    (
        "missing-class",
        claim_with(exactly={"allocationMode": "ExactCount", "count": 1}),
        ["spec.devices.requests[0].exactly.deviceClassName: Required value"],
    ),
    (
        "invalid-class",
        claim_with(
            exactly={"deviceClassName": "Class!", "allocationMode": "ExactCount", "count": 1}
        ),
        [
            'spec.devices.requests[0].exactly.deviceClassName: Invalid value: "Class!": a '
            "lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or "
            "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
            "used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ],
    ),
    (
        "invalid-count",
        claim_with(
            exactly={"deviceClassName": "class", "allocationMode": "ExactCount", "count": -5}
        ),
        ["spec.devices.requests[0].exactly.count: Invalid value: -5: must be greater than zero"],
    ),
    (
        "all-with-count",
        claim_with(exactly={"deviceClassName": "class", "allocationMode": "All", "count": 5}),
        [
            "spec.devices.requests[0].exactly.count: Invalid value: 5: must not be specified when "
            "allocationMode is 'All'"
        ],
    ),
    (
        "invalid-mode",
        claim_with(exactly={"deviceClassName": "class", "allocationMode": "other"}),
        [
            'spec.devices.requests[0].exactly.allocationMode: Unsupported value: "other": '
            "supported "
            'values: "All", "ExactCount"'
        ],
    ),
    (
        "too-long-cel",
        claim_with(
            exactly={
                "deviceClassName": "class",
                "allocationMode": "ExactCount",
                "count": 1,
                "selectors": [{"cel": {"expression": "x" * (10 * 1024 + 1)}}],
            }
        ),
        [
            "spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: must have at "
            "most 10240 bytes"
        ],
    ),
    (
        "missing-cel",
        claim_with(
            exactly={
                "deviceClassName": "class",
                "allocationMode": "ExactCount",
                "count": 1,
                "selectors": [{}],
            }
        ),
        ["spec.devices.requests[0].exactly.selectors[0].cel: Required value"],
    ),
    (
        "too-many-selectors",
        claim_with(
            exactly={
                "deviceClassName": "class",
                "allocationMode": "ExactCount",
                "count": 1,
                "selectors": [{"cel": {"expression": "true"}}] * 33,
            }
        ),
        ["spec.devices.requests[0].exactly.selectors: Too many: 33: must have at most 32 items"],
    ),
    (
        "too-many-subrequests",
        claim_with(
            firstAvailable=[
                {
                    "name": f"sub-{i}",
                    "deviceClassName": "class",
                    "allocationMode": "ExactCount",
                    "count": 1,
                }
                for i in range(9)
            ]
        ),
        ["spec.devices.requests[0].firstAvailable: Too many: 9: must have at most 8 items"],
    ),
]


@pytest.mark.parametrize(
    ("case", "claim", "expected"), CLAIM_CASES, ids=[c[0] for c in CLAIM_CASES]
)
def test_claim_requests(case: str, claim: dict[str, Any], expected: list[str]) -> None:
    assert errors("ResourceClaim", claim) == expected


def test_request_names_duplicate_and_too_many() -> None:
    claim = copy.deepcopy(CLAIM)
    claim["spec"]["devices"]["requests"].append(claim["spec"]["devices"]["requests"][0])
    assert errors("ResourceClaim", claim) == ['spec.devices.requests[1]: Duplicate value: "req-0"']
    claim["spec"]["devices"]["requests"] = [
        {"name": f"r-{i}", "exactly": {"deviceClassName": "c", "allocationMode": "All"}}
        for i in range(33)
    ]
    assert errors("ResourceClaim", claim) == [
        "spec.devices.requests: Too many: 33: must have at most 32 items"
    ]


def test_constraints_and_config_name_requests() -> None:
    claim = copy.deepcopy(CLAIM)
    claim["spec"]["devices"]["constraints"] = [
        {"requests": ["no-such-request"], "matchAttribute": "dra.example.com/model"},
        {"matchAttribute": "model"},
        {"requests": ["req-0"]},
    ]
    claim["spec"]["devices"]["config"] = [
        {"requests": ["req-0"], "opaque": {"driver": "dra.example.com", "parameters": {"a": 1}}},
        {"requests": ["req-0"]},
    ]
    assert errors("ResourceClaim", claim) == [
        'spec.devices.constraints[0].requests[0]: Invalid value: "no-such-request": must be the '
        "name of a request in the claim or the name of a request and a subrequest separated by "
        "'/'",
        'spec.devices.constraints[1].matchAttribute: Invalid value: "model": a fully qualified '
        "name must be a domain and a name separated by a slash",
        # with DRAConsumableCapacity (on by default since v1.36)
        'spec.devices.constraints[2]: Required value: exactly one of "matchAttribute" or '
        '"distinctAttribute" is required, but multiple fields are set',
        "spec.devices.config[1].opaque: Required value",
    ]


def test_claim_spec_immutable_and_status_rules() -> None:
    old = {**copy.deepcopy(CLAIM), "status": {}}
    changed = copy.deepcopy(old)
    changed["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    assert [
        e.split(":")[0] + ": " + e.rsplit(": ", 1)[1] for e in errors("ResourceClaim", changed, old)
    ] == ["spec: field is immutable"]
    reserved = {"resource": "pods", "name": "p", "uid": "a"}
    no_allocation = {**old, "status": {"reservedFor": [reserved]}}
    assert errors("ResourceClaim", no_allocation, old) == [
        "status.reservedFor: Forbidden: may not be specified when `allocated` is not set"
    ]
    allocation = {
        "devices": {
            "results": [
                {"request": "req-0", "driver": "dra.example.com", "pool": "pool", "device": "dev-0"}
            ]
        }
    }
    allocated = {
        **old,
        "status": {"allocation": allocation, "reservedFor": [reserved, dict(reserved)]},
    }
    assert errors("ResourceClaim", allocated, old) == [
        'status.reservedFor[1]: Duplicate value: "a"'
    ]
    allocated["status"]["reservedFor"] = [
        {"resource": "pods", "name": f"p{i}", "uid": str(i)} for i in range(257)
    ]
    assert errors("ResourceClaim", allocated, old) == [
        "status.reservedFor: Too many: 257: must have at most 256 items"
    ]
    allocated["status"]["reservedFor"] = [reserved]
    assert errors("ResourceClaim", allocated, old) == []
    moved = copy.deepcopy(allocated)
    moved["status"]["allocation"]["devices"]["results"][0]["device"] = "dev-1"
    assert [e.rsplit(": ", 1)[1] for e in errors("ResourceClaim", moved, allocated)] == [
        "field is immutable"
    ]
    cleared = {**old, "status": {}}  # clearing the allocation is allowed
    assert errors("ResourceClaim", cleared, allocated) == []
    bad_result = {
        **old,
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "other",
                            "driver": "dra.example.com",
                            "pool": "pool",
                            "device": "dev-0",
                        }
                    ]
                }
            }
        },
    }
    assert errors("ResourceClaim", bad_result, old) == [
        'status.allocation.devices.results[0].request: Invalid value: "other": must be the name '
        "of a request in the claim or the name of a request and a subrequest separated by '/'"
    ]


SLICE_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "no-node-selection",
        {"nodeName": None},
        [
            "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
            "`perDeviceNodeSelection` is required"
        ],
    ),
    (
        "multiple-node-selection",
        {"allNodes": True},
        [
            'spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, '
            "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields "
            "are set"
        ],
    ),
    (
        "empty-node-name",
        {"nodeName": ""},
        [
            'spec.nodeName: Invalid value: "": must be either unset or set to a non-empty string',
            "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
            "`perDeviceNodeSelection` is required",
        ],
    ),
    (
        "all-nodes-false",
        {"nodeName": None, "allNodes": False},
        [
            "spec.allNodes: Invalid value: false: must be either unset or set to true",
            "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
            "`perDeviceNodeSelection` is required",
        ],
    ),
    (
        "bad-pool",
        {"pool": {"name": "", "generation": -1, "resourceSliceCount": 0}},
        [
            "spec.pool.name: Required value",
            "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
            "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero",
        ],
    ),
    # ValidateCSIDriverName: the empty name is also not a DNS subdomain
    (
        "missing-driver",
        {"driver": ""},
        [
            "spec.driver: Required value",
            'spec.driver: Invalid value: "": a lowercase RFC 1123 subdomain must consist of '
            "lower case "
            "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
            "character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ],
    ),
    (
        "too-many-devices",
        {"devices": [{"name": f"d-{i}"} for i in range(129)]},
        ["spec.devices: Too many: 129: must have at most 128 items"],
    ),
    (
        "duplicate-device",
        {"devices": [{"name": "d"}, {"name": "d"}]},
        ['spec.devices[1]: Duplicate value: "d"'],
    ),
    (
        "too-many-attributes",
        {
            "devices": [
                {
                    "name": "d",
                    "attributes": {f"a{i}": {"int": i} for i in range(20)},
                    "capacity": {f"c{i}": {"value": "1"} for i in range(13)},
                }
            ]
        },
        [
            "spec.devices[0]: Invalid value: 33: the total number of attributes and capacities "
            "must "
            "not exceed 32"
        ],
    ),
    (
        "attribute-two-values",
        {"devices": [{"name": "d", "attributes": {"a": {"int": 1, "bool": True}}}]},
        [
            'spec.devices[0].attributes[a]: Invalid value: {"bool":true,"int":1}: exactly one '
            "value "
            "must be specified"
        ],
    ),
    (
        "bad-version",
        {"devices": [{"name": "d", "attributes": {"v": {"version": "1.0"}}}]},
        [
            'spec.devices[0].attributes[v].version: Invalid value: "1.0": must be a string '
            "compatible "
            "with semver.org spec 2.0.0"
        ],
    ),
]


@pytest.mark.parametrize(
    ("case", "change", "expected"), SLICE_CASES, ids=[c[0] for c in SLICE_CASES]
)
def test_resource_slice(case: str, change: dict[str, Any], expected: list[str]) -> None:
    obj = copy.deepcopy(SLICE)
    for key, value in change.items():
        if value is None:
            obj["spec"].pop(key)
        else:
            obj["spec"][key] = value
    assert errors("ResourceSlice", obj) == expected


def test_resource_slice_immutable_fields() -> None:
    moved = copy.deepcopy(SLICE)
    moved["spec"]["nodeName"] = "other"
    moved["spec"]["pool"]["name"] = "other"
    assert [e.rsplit(": ", 1)[1] for e in errors("ResourceSlice", moved, SLICE)] == [
        "field is immutable",
        "field is immutable",
    ]


def pod(*claims: dict[str, Any], container_claims: list[Any] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "x"}
    if container_claims is not None:
        container["resources"] = {"claims": container_claims}
    return {
        "metadata": {"name": "pod", "namespace": "default"},
        "spec": {"containers": [container], "resourceClaims": list(claims)},
    }


def test_pod_resource_claims() -> None:
    assert (
        errors(
            "Pod",
            pod(
                {"name": "gpu", "resourceClaimTemplateName": "t"},
                container_claims=[{"name": "gpu"}],
            ),
        )
        == []
    )
    assert errors("Pod", pod({"name": "gpu"})) == [
        'spec.resourceClaims[0]: Invalid value: {"name":"gpu"}: must specify one of: '
        "`resourceClaimName`, `resourceClaimTemplateName`"
    ]
    both = {"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}
    assert errors("Pod", pod(both)) == [
        'spec.resourceClaims[0]: Invalid value: {"name":"gpu","resourceClaimName":"a",'
        '"resourceClaimTemplateName":"b"}: at most one of `resourceClaimName` or '
        "`resourceClaimTemplateName` may be specified"
    ]
    assert errors(
        "Pod",
        pod({"name": "gpu", "resourceClaimName": "a"}, {"name": "gpu", "resourceClaimName": "b"}),
    ) == ['spec.resourceClaims[1].name: Duplicate value: "gpu"']
    assert errors(
        "Pod", pod({"name": "gpu", "resourceClaimName": "a"}, container_claims=[{"name": "nic"}])
    ) == [
        'spec.containers[0].resources.claims[0]: Not found: "nic": must be one of the names in '
        "pod.spec.resourceClaims: gpu"
    ]
    assert errors("Pod", pod(container_claims=[{"name": "gpu"}])) == [
        'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
        "pod.spec.resourceClaims which is empty"
    ]
