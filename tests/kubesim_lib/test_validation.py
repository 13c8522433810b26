"""kubesim.validation: field paths and messages as the API server reports them.

Messages are upstream's (pkg/apis/core/validation/validation.go, apimachinery's validation and
field packages); cases follow validation_test.go where they exist.
"""

from typing import Any

import pytest

from kubesim.validation import Cause, format_invalid_message, validate

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def pod(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    body.update(spec)
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": body}


def errors(kind: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [cause.error() for cause in validate(kind, obj, old)]


def test_valid_pod_has_no_errors() -> None:
    assert validate("Pod", pod(), None) == []


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            {
                "metadata": {"name": "Bad_Name", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
            f'metadata.name: Invalid value: "Bad_Name": {SUBDOMAIN_MSG}',
        ),
        (
            {
                "metadata": {"namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
            "metadata.name: Required value: name or generateName is required",
        ),
        (
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
            "metadata.namespace: Required value",
        ),
        (pod(containers=[]), "spec.containers: Required value"),
        (pod(containers=[{"name": "c"}]), "spec.containers[0].image: Required value"),
        (pod(containers=[{"image": "i"}]), "spec.containers[0].name: Required value"),
        (
            pod(containers=[{"name": "c", "image": "i"}, {"name": "c", "image": "i"}]),
            'spec.containers[1].name: Duplicate value: "c"',
        ),
        (
            pod(containers=[{"name": "c", "image": "i", "resources": {"requests": {"cpu": "-1"}}}]),
            'spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater '
            "than or equal to 0",
        ),
        (
            pod(
                containers=[{"name": "c", "image": "i", "resources": {"limits": {"memory": "abc"}}}]
            ),
            'spec.containers[0].resources.limits[memory]: Invalid value: "abc": quantities must '
            "match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            pod(
                containers=[
                    {
                        "name": "c",
                        "image": "i",
                        "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
                    }
                ]
            ),
            'spec.containers[0].resources.requests: Invalid value: "2": must be less than or '
            "equal to cpu limit of 1",
        ),
        (
            pod(
                containers=[
                    {
                        "name": "c",
                        "image": "i",
                        "resources": {
                            "requests": {"example.com/gpu": "1"},
                            "limits": {"example.com/gpu": "2"},
                        },
                    }
                ]
            ),
            'spec.containers[0].resources.requests: Invalid value: "1": must be equal to '
            "example.com/gpu limit of 2",
        ),
        (
            pod(
                containers=[
                    {
                        "name": "c",
                        "image": "i",
                        "ports": [{"containerPort": 80, "hostPort": 70000, "protocol": "TCP"}],
                    }
                ]
            ),
            "spec.containers[0].ports[0].hostPort: Invalid value: 70000: must be between 1 and "
            "65535, inclusive",
        ),
        (
            pod(
                containers=[
                    {
                        "name": "c",
                        "image": "i",
                        "ports": [{"containerPort": 80, "protocol": "HTTP"}],
                    }
                ]
            ),
            'spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: '
            '"SCTP", "TCP", "UDP"',
        ),
        (
            pod(tolerations=[{"key": "k", "operator": "Maybe"}]),
            'spec.tolerations[0].operator: Unsupported value: "Maybe": supported values: '
            '"Equal", "Exists"',
        ),
        (
            pod(tolerations=[{"key": "k", "operator": "Exists", "effect": "Sometimes"}]),
            'spec.tolerations[0].effect: Unsupported value: "Sometimes": supported values: '
            '"NoSchedule", "PreferNoSchedule", "NoExecute"',
        ),
        (
            pod(tolerations=[{"operator": "Equal", "value": "x"}]),
            'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when '
            '`key` is empty, which means "match all values and all keys"',
        ),
        (
            pod(
                tolerations=[
                    {
                        "key": "k",
                        "operator": "Exists",
                        "effect": "NoSchedule",
                        "tolerationSeconds": 5,
                    }
                ]
            ),
            'spec.tolerations[0].effect: Invalid value: "NoSchedule": effect must be '
            "'NoExecute' when `tolerationSeconds` is set",
        ),
        (
            pod(restartPolicy="Sometimes"),
            'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
            '"OnFailure", "Never"',
        ),
        (
            pod(activeDeadlineSeconds=0),
            "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, "
            "inclusive",
        ),
    ],
)
def test_pod_errors(obj: dict[str, Any], expected: str) -> None:
    assert expected in errors("Pod", obj)


def test_label_errors() -> None:
    obj = pod()
    obj["metadata"]["labels"] = {"bad key": "v", "k": "bad value"}
    found = errors("Pod", obj)
    assert any(
        e.startswith('metadata.labels: Invalid value: "bad key": name part must consist')
        for e in found
    )
    assert any(
        e.startswith('metadata.labels: Invalid value: "bad value": a valid label must')
        for e in found
    )


def test_annotations_too_long() -> None:
    obj = pod()
    obj["metadata"]["annotations"] = {"a": "x" * (256 * 1024)}
    assert "metadata.annotations: Too long: must have at most 262144 bytes" in errors("Pod", obj)


def test_generate_name_may_end_in_dash() -> None:
    obj = pod()
    obj["metadata"]["generateName"] = "web-"
    assert validate("Pod", obj, None) == []


@pytest.mark.parametrize(
    ("kind", "name", "ok"),
    [
        ("Namespace", "a.b", False),  # DNS-1123 label: no dots
        ("Namespace", "kube-system", True),
        ("Service", "1abc", False),  # DNS-1035 label: must start with a letter
        ("Service", "abc", True),
        ("Node", "node-1.example.com", True),
        ("ConfigMap", "a.b", True),
    ],
)
def test_name_rules_per_kind(kind: str, name: str, ok: bool) -> None:
    namespaced = kind not in ("Namespace", "Node")
    meta: dict[str, Any] = {"name": name}
    if namespaced:
        meta["namespace"] = "default"
    assert (validate(kind, {"metadata": meta}, None) == []) is ok


def test_namespace_forbidden_on_cluster_scoped() -> None:
    assert "metadata.namespace: Forbidden: not allowed on this type" in errors(
        "Node", {"metadata": {"name": "n", "namespace": "x"}}
    )


@pytest.mark.parametrize(
    ("new_spec", "ok"),
    [
        ({"containers": [{"name": "c", "image": "nginx:2"}]}, True),  # image may change
        ({"containers": [{"name": "c", "image": "nginx"}], "activeDeadlineSeconds": 5}, True),
        (
            {
                "containers": [{"name": "c", "image": "nginx"}],
                "tolerations": [
                    {"key": "a", "operator": "Exists"},
                    {"key": "b", "operator": "Exists"},
                ],
            },
            True,
        ),
        ({"containers": [{"name": "c", "image": "nginx"}], "tolerations": []}, False),
        ({"containers": [{"name": "c", "image": "nginx"}], "nodeName": "other"}, False),
        ({"containers": [{"name": "c", "image": "nginx"}], "schedulerName": "x"}, False),
    ],
)
def test_pod_update_immutability(new_spec: dict[str, Any], ok: bool) -> None:
    old = pod(tolerations=[{"key": "a", "operator": "Exists"}], nodeName="n1")
    new = {
        "metadata": old["metadata"],
        "spec": {"nodeName": "n1", "tolerations": old["spec"]["tolerations"], **new_spec},
    }
    found = errors("Pod", new, old)
    assert (found == []) is ok, found


def test_node_quantities_and_taints() -> None:
    node = {
        "metadata": {"name": "n"},
        "spec": {
            "taints": [
                {"key": "a", "effect": "NoSchedule"},
                {"key": "a", "effect": "NoSchedule"},
                {"key": "b"},
            ]
        },
        "status": {"capacity": {"cpu": "-4", "memory": "32Gi"}},
    }
    found = errors("Node", node)
    assert 'status.capacity.cpu: Invalid value: "-4": must be greater than or equal to 0' in found
    assert "spec.taints[2].effect: Required value" in found
    assert any(
        e.startswith("spec.taints[1]: Duplicate value:")
        and e.endswith("taints must be unique by key and effect pair")
        for e in found
    )


@pytest.mark.parametrize(
    ("pc", "old", "expected"),
    [
        (
            {"metadata": {"name": "high"}, "value": 2_000_000_000},
            None,
            "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
        ),
        (
            {"metadata": {"name": "system-foo"}, "value": 5},
            None,
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved "
            "for system use only. error: system-foo is not a known system priority class",
        ),
        (
            {"metadata": {"name": "x"}, "value": 5},
            {"metadata": {"name": "x"}, "value": 4},
            "value: Forbidden: may not be changed in an update.",
        ),
        (
            {"metadata": {"name": "x"}, "value": 1, "preemptionPolicy": "Sometimes"},
            None,
            'preemptionPolicy: Unsupported value: "Sometimes": supported values: "Never", '
            '"PreemptLowerPriority"',
        ),
    ],
)
def test_priority_class(pc: dict[str, Any], old: dict[str, Any] | None, expected: str) -> None:
    assert expected in errors("PriorityClass", pc, old)


def test_lease_duration() -> None:
    lease = {
        "metadata": {"name": "n", "namespace": "kube-node-lease"},
        "spec": {"leaseDurationSeconds": 0},
    }
    assert errors("Lease", lease) == [
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"
    ]


@pytest.mark.parametrize(
    ("kind", "causes", "message"),
    [
        (
            "Pod",
            [Cause("spec.containers[0].image", "FieldValueRequired", "Required value")],
            'Pod "x" is invalid: spec.containers[0].image: Required value',
        ),
        (
            "Pod",
            [
                Cause("a", "FieldValueRequired", "Required value"),
                Cause("b", "FieldValueInvalid", 'Invalid value: "1": bad'),
                Cause("a", "FieldValueRequired", "Required value"),
            ],
            'Pod "x" is invalid: [a: Required value, b: Invalid value: "1": bad]',
        ),
        (
            "PriorityClass",
            [Cause("value", "FieldValueForbidden", "Forbidden: no")],
            'PriorityClass.scheduling.k8s.io "x" is invalid: value: Forbidden: no',
        ),
        ("Pod", [], 'Pod "x" is invalid'),
    ],
)
def test_format_invalid_message(kind: str, causes: list[Cause], message: str) -> None:
    assert format_invalid_message(kind, "x", causes) == message
