"""Pod validation parity with upstream for the fields the scheduler reads.

Cases are ported from upstream's pkg/apis/core/validation/validation_test.go (TestValidatePod,
TestValidateTopologySpreadConstraints, TestValidateTolerations, TestValidateResourceRequirements,
TestValidatePodSpec's overhead and schedulingGates cases); each lists the field paths and error
types upstream reports.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.validation import validate

NOT_IN = "must be specified when `operator` is 'In' or 'NotIn'"
ZONE = "k8s.io/zone"


def pod(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}], **spec}
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": body}


def found(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((cause.field, cause.reason) for cause in validate("Pod", obj, None))


def node_required(*requirements: dict[str, Any], fields: bool = False) -> dict[str, Any]:
    term = {"matchFields" if fields else "matchExpressions": list(requirements)}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


REQ = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
TERM = f"{REQ}.nodeSelectorTerms[0]"
POD_REQ = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
ANTI_PREF = "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
INVALID, REQUIRED, FORBIDDEN = "FieldValueInvalid", "FieldValueRequired", "FieldValueForbidden"
NOT_SUPPORTED, DUPLICATE = "FieldValueNotSupported", "FieldValueDuplicate"


VALID_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "key2", "operator": "In", "values": ["value1", "value2"]},
                        {"key": "key3", "operator": "Gt", "values": ["5"]},
                        {"key": "key4", "operator": "DoesNotExist"},
                    ],
                    "matchFields": [
                        {"key": "metadata.name", "operator": "NotIn", "values": ["node1"]}
                    ],
                }
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 10,
                "preference": {
                    "matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]
                },
            }
        ],
    },
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {
                    "matchExpressions": [{"key": "key2", "operator": "NotIn", "values": ["v"]}]
                },
                "namespaces": ["ns"],
                "topologyKey": "zone",
            }
        ]
    },
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "podAffinityTerm": {
                    "namespaceSelector": {"matchLabels": {"team": "a"}},
                    "topologyKey": "region",
                },
            }
        ]
    },
}


@pytest.mark.parametrize(
    "spec",
    [
        {"affinity": VALID_AFFINITY},
        {"affinity": {}},
        {
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "minDomains": 3,
                    "nodeAffinityPolicy": "Honor",
                    "nodeTaintsPolicy": "Ignore",
                    "labelSelector": {"matchLabels": {"app": "x"}},
                    "matchLabelKeys": ["pod-hash"],
                },
                {"maxSkew": 2, "topologyKey": "k8s.io/node", "whenUnsatisfiable": "ScheduleAnyway"},
            ]
        },
        {"schedulingGates": [{"name": "example.com/gate"}, {"name": "other"}]},
        {"overhead": {"cpu": "250m", "memory": "120Mi"}},
        {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "pvc"}}]},
        {
            "tolerations": [
                {"operator": "Exists"},
                {"key": "k", "value": "v", "effect": "NoExecute", "tolerationSeconds": 30},
            ]
        },
    ],
    ids=["affinity", "empty-affinity", "spread", "gates", "overhead", "claim", "tolerations"],
)
def test_pods_upstream_accepts_are_accepted(spec: dict[str, Any]) -> None:
    assert validate("Pod", pod(**spec), None) == []


AFFINITY_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    (
        "node affinity operator can't be null",
        node_required({"key": "key1"}),
        [(f"{TERM}.matchExpressions[0].operator", INVALID)],
    ),
    (
        "node affinity operator Bogus",
        node_required({"key": "key1", "operator": "Bogus", "values": ["a"]}),
        [(f"{TERM}.matchExpressions[0].operator", INVALID)],
    ),
    (
        "node affinity key is invalid",
        node_required({"key": "invalid key ___@#", "operator": "Exists"}),
        [(f"{TERM}.matchExpressions[0].key", INVALID)],
    ),
    (
        "node affinity In needs values",
        node_required({"key": "k", "operator": "In"}),
        [(f"{TERM}.matchExpressions[0].values", REQUIRED)],
    ),
    (
        "node affinity Exists takes no values",
        node_required({"key": "k", "operator": "Exists", "values": ["v"]}),
        [(f"{TERM}.matchExpressions[0].values", FORBIDDEN)],
    ),
    (
        "node affinity Gt takes one value",
        node_required({"key": "k", "operator": "Gt", "values": ["1", "2"]}),
        [(f"{TERM}.matchExpressions[0].values", REQUIRED)],
    ),
    (
        "node affinity required values must be label values",
        node_required({"key": "k", "operator": "In", "values": ["-bad-"]}),
        [(f"{TERM}.matchExpressions[0].values[0]", INVALID)],
    ),
    (
        "more values for field selector",
        node_required(
            {"key": "metadata.name", "operator": "In", "values": ["h1", "h2"]}, fields=True
        ),
        [(f"{TERM}.matchFields[0].values", REQUIRED)],
    ),
    (
        "field selector invalid operator",
        node_required({"key": "metadata.name", "operator": "Exists"}, fields=True),
        [(f"{TERM}.matchFields[0].operator", INVALID)],
    ),
    (
        "field selector invalid key",
        node_required(
            {"key": "metadata.namespace", "operator": "In", "values": ["ns1"]}, fields=True
        ),
        [(f"{TERM}.matchFields[0].key", INVALID)],
    ),
    (
        "nodeSelectorTerms must have at least one term",
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
            }
        },
        [(f"{REQ}.nodeSelectorTerms", REQUIRED)],
    ),
    (
        "preferred node affinity weight in range 1-100",
        {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 199,
                        "preference": {
                            "matchExpressions": [
                                {"key": "foo", "operator": "In", "values": ["bar"]}
                            ]
                        },
                    }
                ]
            }
        },
        [
            (
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
                INVALID,
            )
        ],
    ),
    (
        "pod affinity selector operator Bogus",
        {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchExpressions": [{"key": "k", "operator": "Bogus"}]},
                        "topologyKey": "zone",
                    }
                ]
            }
        },
        [(f"{POD_REQ}.labelSelector.matchExpressions[0].operator", INVALID)],
    ),
    (
        "pod affinity selector In needs values",
        {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchExpressions": [{"key": "k", "operator": "In"}]},
                        "topologyKey": "zone",
                    }
                ]
            }
        },
        [(f"{POD_REQ}.labelSelector.matchExpressions[0].values", REQUIRED)],
    ),
    (
        "empty topologyKey is not allowed for hard pod affinity",
        {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": ""}]}},
        [
            (f"{POD_REQ}.topologyKey", INVALID),
            (f"{POD_REQ}.topologyKey", INVALID),
            (f"{POD_REQ}.topologyKey", REQUIRED),
        ],
    ),
    (
        "pod anti-affinity weight in range 1-100",
        {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 109, "podAffinityTerm": {"topologyKey": "region"}}
                ]
            }
        },
        [(f"{ANTI_PREF}.weight", INVALID)],
    ),
    (
        "values should be empty if the operator is Exists",
        {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "podAffinityTerm": {
                            "topologyKey": "region",
                            "labelSelector": {
                                "matchExpressions": [
                                    {"key": "k", "operator": "Exists", "values": ["v"]}
                                ]
                            },
                        },
                    }
                ]
            }
        },
        [(f"{ANTI_PREF}.podAffinityTerm.labelSelector.matchExpressions[0].values", FORBIDDEN)],
    ),
    (
        "namespaceSelector values should be empty if the operator is Exists",
        {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "podAffinityTerm": {
                            "topologyKey": "region",
                            "namespaceSelector": {
                                "matchExpressions": [
                                    {"key": "k", "operator": "Exists", "values": ["v"]}
                                ]
                            },
                        },
                    }
                ]
            }
        },
        [(f"{ANTI_PREF}.podAffinityTerm.namespaceSelector.matchExpressions[0].values", FORBIDDEN)],
    ),
    (
        "namespace should be valid",
        {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "podAffinityTerm": {
                            "topologyKey": "region",
                            "namespaces": ["INVALID_NAMESPACE"],
                        },
                    }
                ]
            }
        },
        [(f"{ANTI_PREF}.podAffinityTerm.namespace", INVALID)],
    ),
]


@pytest.mark.parametrize(
    ("affinity", "expected"),
    [case[1:] for case in AFFINITY_CASES],
    ids=[case[0] for case in AFFINITY_CASES],
)
def test_invalid_affinity(affinity: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert found(pod(affinity=affinity)) == sorted(expected)


def spread(**fields: Any) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", **fields}


TSC = "spec.topologySpreadConstraints[0]"
SPREAD_CASES: list[tuple[str, list[dict[str, Any]], list[tuple[str, str]]]] = [
    ("missing MaxSkew", [spread(maxSkew=0)], [(f"{TSC}.maxSkew", INVALID)]),
    ("negative MaxSkew", [spread(maxSkew=-1)], [(f"{TSC}.maxSkew", INVALID)]),
    ("negative minDomains", [spread(minDomains=-1)], [(f"{TSC}.minDomains", INVALID)]),
    (
        "minDomains with ScheduleAnyway",
        [spread(minDomains=10, whenUnsatisfiable="ScheduleAnyway")],
        [(f"{TSC}.minDomains", INVALID)],
    ),
    (
        "negative minDomains with ScheduleAnyway",
        [spread(minDomains=-1, whenUnsatisfiable="ScheduleAnyway")],
        [(f"{TSC}.minDomains", INVALID), (f"{TSC}.minDomains", INVALID)],
    ),
    ("missing TopologyKey", [spread(topologyKey="")], [(f"{TSC}.topologyKey", REQUIRED)]),
    (
        "missing scheduling mode",
        [spread(whenUnsatisfiable="")],
        [(f"{TSC}.whenUnsatisfiable", NOT_SUPPORTED)],
    ),
    (
        "unsupported scheduling mode",
        [spread(whenUnsatisfiable="N/A")],
        [(f"{TSC}.whenUnsatisfiable", NOT_SUPPORTED)],
    ),
    (
        "duplicate constraints",
        [spread(), spread(maxSkew=2)],
        [(f"{TSC}.{{topologyKey, whenUnsatisfiable}}", DUPLICATE)],
    ),
    (
        "invalid NodeAffinityPolicy",
        [spread(nodeAffinityPolicy="xyz")],
        [(f"{TSC}.nodeAffinityPolicy", NOT_SUPPORTED)],
    ),
    (
        "invalid NodeTaintsPolicy",
        [spread(nodeTaintsPolicy="xyz")],
        [(f"{TSC}.nodeTaintsPolicy", NOT_SUPPORTED)],
    ),
    (
        "key in MatchLabelKeys isn't correctly defined",
        [spread(labelSelector={"matchLabels": {"a": "b"}}, matchLabelKeys=["/simple"])],
        [(f"{TSC}.matchLabelKeys[0]", INVALID)],
    ),
    (
        "MatchLabelKeys without labelSelector",
        [spread(matchLabelKeys=["foo"])],
        [(f"{TSC}.matchLabelKeys", FORBIDDEN)],
    ),
    (
        "invalid matchLabels on labelSelector",
        [spread(labelSelector={"matchLabels": {"NoUppercaseOrSpecialCharsLike=Equals": "foo"}})],
        [(f"{TSC}.labelSelector.matchLabels", INVALID)],
    ),
]


@pytest.mark.parametrize(
    ("constraints", "expected"),
    [case[1:] for case in SPREAD_CASES],
    ids=[case[0] for case in SPREAD_CASES],
)
def test_invalid_topology_spread(
    constraints: list[dict[str, Any]], expected: list[tuple[str, str]]
) -> None:
    assert found(pod(topologySpreadConstraints=constraints)) == sorted(expected)


def test_spread_messages_are_upstreams() -> None:
    causes = validate(
        "Pod",
        pod(
            topologySpreadConstraints=[
                spread(maxSkew=0, whenUnsatisfiable="Bogus"),
                spread(),
                spread(),
            ]
        ),
        None,
    )
    assert [cause.error() for cause in causes] == [
        f"{TSC}.maxSkew: Invalid value: 0: must be greater than zero",
        f'{TSC}.whenUnsatisfiable: Unsupported value: "Bogus": supported values: '
        '"DoNotSchedule", "ScheduleAnyway"',
        "spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}: Duplicate value: "
        f'"{{{ZONE}, DoNotSchedule}}"',
    ]


def requesting(**requests: str) -> dict[str, Any]:
    container = {"name": "c", "image": "i", "resources": {"requests": requests, "limits": requests}}
    return {"containers": [container]}


RES = "spec.containers[0].resources"
OTHER_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    (
        "standard and extended resources",
        requesting(
            **{
                "cpu": "1",
                "memory": "1Gi",
                "ephemeral-storage": "1Gi",
                "hugepages-2Mi": "2Mi",
                "example.com/gpu": "1",
                "kubernetes.io/fast-nic": "1",
            }
        ),
        [],
    ),
    (
        "resource name not standard",
        requesting(foo="1"),
        [(f"{RES}.limits[foo]", INVALID)] * 2 + [(f"{RES}.requests[foo]", INVALID)] * 2,
    ),
    (
        "resource name not for containers",
        requesting(pods="1"),
        [(f"{RES}.limits[pods]", INVALID), (f"{RES}.requests[pods]", INVALID)],
    ),
    (
        "resource name invalid",
        requesting(**{"bad name": "1"}),
        [(f"{RES}.limits[bad name]", INVALID), (f"{RES}.requests[bad name]", INVALID)],
    ),
    (
        "toleration key invalid",
        {"tolerations": [{"key": "nospecialchars^=@", "operator": "Exists"}]},
        [("spec.tolerations[0].key", INVALID)],
    ),
    (
        "toleration operator In",
        {"tolerations": [{"key": "k", "operator": "In", "value": "v"}]},
        [("spec.tolerations[0].operator", NOT_SUPPORTED)],
    ),
    (
        "toleration value with Exists",
        {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]},
        [("spec.tolerations[0].operator", INVALID)],
    ),
    (
        "toleration without key must be Exists",
        {"tolerations": [{"operator": "Equal", "value": "v"}]},
        [("spec.tolerations[0].operator", INVALID)],
    ),
    (
        "tolerationSeconds needs NoExecute",
        {
            "tolerations": [
                {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}
            ]
        },
        [("spec.tolerations[0].effect", INVALID)],
    ),
    (
        "toleration effect unknown",
        {"tolerations": [{"key": "k", "operator": "Exists", "effect": "Bogus"}]},
        [("spec.tolerations[0].effect", NOT_SUPPORTED)],
    ),
    ("negative overhead", {"overhead": {"cpu": "-1"}}, [("spec.overhead.limits[cpu]", INVALID)]),
    (
        "overhead extended resource must be whole",
        {"overhead": {"example.com/gpu": "500m"}},
        [("spec.overhead.limits[example.com/gpu]", INVALID)],
    ),
    (
        "scheduling gate name invalid",
        {"schedulingGates": [{"name": "invalid/gate/name"}]},
        [("spec.schedulingGates[0]", INVALID)],
    ),
    (
        "duplicate scheduling gates",
        {"schedulingGates": [{"name": "foo"}, {"name": "foo"}]},
        [("spec.schedulingGates[1]", DUPLICATE)],
    ),
    (
        "nodeName with scheduling gates",
        {"nodeName": "node", "schedulingGates": [{"name": "g"}]},
        [("spec.nodeName", FORBIDDEN)],
    ),
    (
        "claim name required",
        {"volumes": [{"name": "v", "persistentVolumeClaim": {}}]},
        [("spec.volumes[0].persistentVolumeClaim.claimName", REQUIRED)],
    ),
    (
        "duplicate volume names",
        {"volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]},
        [("spec.volumes[1].name", DUPLICATE)],
    ),
    (
        "request above limit",
        {
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
                }
            ]
        },
        [("spec.containers[0].resources.requests", INVALID)],
    ),
]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [case[1:] for case in OTHER_CASES],
    ids=[case[0] for case in OTHER_CASES],
)
def test_invalid_pod_fields(spec: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert found(pod(**spec)) == sorted(expected)


def test_affinity_operator_message_is_upstreams() -> None:
    (cause,) = validate("Pod", pod(affinity=node_required({"key": "k", "operator": "Bogus"})), None)
    assert cause.error() == (
        f'{TERM}.matchExpressions[0].operator: Invalid value: "Bogus": not a valid selector '
        "operator"
    )


@pytest.mark.parametrize("kind", ["ReplicaSet", "StatefulSet", "Deployment", "DaemonSet", "Job"])
def test_template_specs_are_checked_too(kind: str) -> None:
    workload = {
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"template": pod(topologySpreadConstraints=[spread(maxSkew=0)])},
    }
    fields = [cause.field for cause in validate(kind, workload, None)]
    assert "spec.template.spec.topologySpreadConstraints[0].maxSkew" in fields


def test_an_update_keeps_errors_the_stored_object_already_had() -> None:
    """Objects stored before a check existed still take label and status updates."""
    old = pod(topologySpreadConstraints=[spread(maxSkew=0)])
    new = pod(topologySpreadConstraints=[spread(maxSkew=0)])
    new["metadata"]["labels"] = {"tier": "web"}
    assert validate("Pod", new, old) == []
    new["metadata"]["labels"] = {"bad key!": "web"}
    assert [cause.field for cause in validate("Pod", new, old)] == ["metadata.labels"]
