"""scheduling.k8s.io/v1beta1 Workload and PodGroup validation as facts: the declarative tags of
staging/src/k8s.io/api/scheduling/v1beta1/types.go and the cases of
pkg/registry/scheduling/{workload,podgroup}/declarative_validation_test.go and
pkg/apis/scheduling/validation/validation_test.go (a representative subset, upstream's paths),
and the pod's spec.schedulingGroup."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim.validation import validate
from kubesim.validation_workload import apply_pod_group_defaults

WORKLOAD: dict[str, Any] = {
    "metadata": {"name": "training", "namespace": "default"},
    "spec": {
        "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "training"},
        "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}],
    },
}
POD_GROUP: dict[str, Any] = {
    "metadata": {"name": "training-workers", "namespace": "default"},
    "spec": {
        "workloadRef": {"workloadName": "training", "templateName": "workers"},
        "schedulingPolicy": {"gang": {"minCount": 4}},
        "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
    },
}


def errors(kind: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [cause.error() for cause in validate(kind, obj, old)]


def edited(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy with the dotted path (list indexes as numbers) set; value None deletes it."""
    obj = copy.deepcopy(base)
    *parents, last = path.split(".")
    node: Any = obj
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    if value is None:
        del node[int(last) if last.isdigit() else last]
    elif last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return obj


def test_good_workload_pod_group_and_pod() -> None:
    assert errors("Workload", WORKLOAD) == []
    assert errors("PodGroup", POD_GROUP) == []
    assert errors("PodGroup", edited(POD_GROUP, "spec.schedulingPolicy", {"basic": {}})) == []
    pod = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "i"}],
            "schedulingGroup": {"podGroupName": "training-workers"},
        },
    }
    assert errors("Pod", pod) == []


TPL = "spec.podGroupTemplates.0"
WORKLOAD_CASES = [
    (
        "no-templates",
        edited(WORKLOAD, "spec.podGroupTemplates", None),
        [
            'spec: Invalid value: "": must specify one of: `podGroupTemplates`, '
            "`compositePodGroupTemplates`"
        ],
    ),
    (
        "composite-templates-gate-off",
        edited(WORKLOAD, "spec.compositePodGroupTemplates", [{"name": "x"}]),
        [
            "spec.compositePodGroupTemplates: Forbidden: ",
            'spec: Invalid value: "{`podGroupTemplates`, `compositePodGroupTemplates`}": must '
            "specify exactly one of: `podGroupTemplates`, `compositePodGroupTemplates`",
        ],
    ),
    (
        "too-many-templates",
        edited(
            WORKLOAD,
            "spec.podGroupTemplates",
            [{"name": f"t{i}", "schedulingPolicy": {"basic": {}}} for i in range(9)],
        ),
        ["spec.podGroupTemplates: Too many: 9: must have at most 8 items"],
    ),
    (
        "duplicate-template-name",
        edited(
            WORKLOAD,
            "spec.podGroupTemplates",
            [
                {"name": "a", "schedulingPolicy": {"basic": {}}},
                {"name": "a", "schedulingPolicy": {"basic": {}}},
            ],
        ),
        ['spec.podGroupTemplates[1]: Duplicate value: {"name":"a"}'],
    ),
    (
        "template-name-required",
        edited(WORKLOAD, f"{TPL}.name", ""),
        ["spec.podGroupTemplates[0].name: Required value"],
    ),
    (
        "template-name-not-a-label",
        edited(WORKLOAD, f"{TPL}.name", "Workers"),
        [
            'spec.podGroupTemplates[0].name: Invalid value: "Workers": a lowercase RFC 1123 label '
            "must consist of lower case alphanumeric characters or '-', and must start and end "
            "with "
            "an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation "
            "is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        ],
    ),
    (
        "policy-none",
        edited(WORKLOAD, f"{TPL}.schedulingPolicy", {}),
        [
            'spec.podGroupTemplates[0].schedulingPolicy: Invalid value: "": must specify one of: '
            "`basic`, `gang`"
        ],
    ),
    (
        "policy-both",
        edited(WORKLOAD, f"{TPL}.schedulingPolicy", {"basic": {}, "gang": {"minCount": 1}}),
        [
            'spec.podGroupTemplates[0].schedulingPolicy: Invalid value: "{`basic`, `gang`}": must '
            "specify exactly one of: `basic`, `gang`"
        ],
    ),
    (
        "min-count-zero",
        edited(WORKLOAD, f"{TPL}.schedulingPolicy.gang.minCount", 0),
        ["spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Required value"],
    ),
    (
        "min-count-negative",
        edited(WORKLOAD, f"{TPL}.schedulingPolicy.gang.minCount", -1),
        [
            "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Invalid value: -1: must be "
            "greater than or equal to 1"
        ],
    ),
    (
        "controller-ref-kind-required",
        edited(WORKLOAD, "spec.controllerRef.kind", ""),
        ["spec.controllerRef.kind: Required value"],
    ),
    (
        "controller-ref-name-bad",
        edited(WORKLOAD, "spec.controllerRef.name", "a/b"),
        ["spec.controllerRef.name: Invalid value: \"a/b\": may not contain '/'"],
    ),
    (
        "priority-too-high",
        edited(WORKLOAD, f"{TPL}.priority", 1_000_000_001),
        [
            "spec.podGroupTemplates[0].priority: Invalid value: 1000000001: must be less than or "
            "equal to 1000000000"
        ],
    ),
    (
        "mixed-priorities",
        edited(
            WORKLOAD,
            "spec.podGroupTemplates",
            [
                {"name": "a", "schedulingPolicy": {"basic": {}}, "priorityClassName": "high"},
                {"name": "b", "schedulingPolicy": {"basic": {}}},
            ],
        ),
        ["spec: Invalid value: null: detected multiple priority configurations"],
    ),
    (
        "bad-preemption-policy",
        edited(WORKLOAD, f"{TPL}.preemptionPolicy", "Sometimes"),
        [
            'spec.podGroupTemplates[0].preemptionPolicy: Unsupported value: "Sometimes": supported '
            'values: "Never", "PreemptLowerPriority"'
        ],
    ),
]


@pytest.mark.parametrize(
    ("name", "obj", "expected"), WORKLOAD_CASES, ids=[c[0] for c in WORKLOAD_CASES]
)
def test_workload_validation(name: str, obj: dict[str, Any], expected: list[str]) -> None:
    assert errors("Workload", obj) == expected


POD_GROUP_CASES = [
    (
        "workload-name-required",
        edited(POD_GROUP, "spec.workloadRef.workloadName", ""),
        ["spec.workloadRef.workloadName: Required value"],
    ),
    (
        "template-name-required",
        edited(POD_GROUP, "spec.workloadRef.templateName", ""),
        ["spec.workloadRef.templateName: Required value"],
    ),
    (
        "policy-required",
        edited(POD_GROUP, "spec.schedulingPolicy", None),
        ["spec.schedulingPolicy: Required value"],
    ),
    (
        "too-many-topology-keys",
        edited(
            POD_GROUP,
            "spec.schedulingConstraints.topology",
            [{"key": "topology.kubernetes.io/zone"}, {"key": "kubernetes.io/hostname"}],
        ),
        ["spec.schedulingConstraints.topology: Too many: 2: must have at most 1 items"],
    ),
    (
        "topology-key-required",
        edited(POD_GROUP, "spec.schedulingConstraints.topology.0.key", ""),
        ["spec.schedulingConstraints.topology[0].key: Required value"],
    ),
    (
        "claim-union",
        edited(POD_GROUP, "spec.resourceClaims", [{"name": "gpu"}]),
        [
            'spec.resourceClaims[0]: Invalid value: "": must specify one of: `resourceClaimName`, '
            "`resourceClaimTemplateName`"
        ],
    ),
    (
        "too-many-claims",
        edited(
            POD_GROUP,
            "spec.resourceClaims",
            [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)],
        ),
        ["spec.resourceClaims: Too many: 5: must have at most 4 items"],
    ),
    (
        "disruption-both",
        edited(POD_GROUP, "spec.disruptionMode", {"single": {}, "all": {}}),
        [
            'spec.disruptionMode: Invalid value: "{`single`, `all`}": must specify exactly one of: '
            "`single`, `all`"
        ],
    ),
    (
        "parent-composite-gate-off",
        edited(POD_GROUP, "spec.parentCompositePodGroupName", "parent"),
        ["spec.parentCompositePodGroupName: Forbidden: "],
    ),
]


@pytest.mark.parametrize(
    ("name", "obj", "expected"), POD_GROUP_CASES, ids=[c[0] for c in POD_GROUP_CASES]
)
def test_pod_group_validation(name: str, obj: dict[str, Any], expected: list[str]) -> None:
    assert errors("PodGroup", obj) == expected


def test_updates_minCount_mutable_the_rest_immutable() -> None:
    old = copy.deepcopy(POD_GROUP)
    # elastic gangs: minCount may change
    assert errors("PodGroup", edited(old, "spec.schedulingPolicy.gang.minCount", 6), old) == []
    assert errors("PodGroup", edited(old, "spec.workloadRef.templateName", "other"), old) == [
        "spec.workloadRef: Forbidden: field is immutable"
    ]
    assert errors("PodGroup", edited(old, "spec.schedulingConstraints", None), old) == [
        "spec.schedulingConstraints: Forbidden: field is immutable"
    ]
    # gang: NoUnset; basic: immutable (so no switch between policies)
    assert errors("PodGroup", edited(old, "spec.schedulingPolicy", {"basic": {}}), old) == [
        "spec.schedulingPolicy.basic: Forbidden: field is immutable",
        "spec.schedulingPolicy.gang: Forbidden: field cannot be cleared once set",
    ]
    old_wl = copy.deepcopy(WORKLOAD)
    assert (
        errors("Workload", edited(old_wl, f"{TPL}.schedulingPolicy.gang.minCount", 2), old_wl) == []
    )
    assert errors("Workload", edited(old_wl, "spec.controllerRef.name", "x"), old_wl) == [
        "spec.controllerRef: Forbidden: field is immutable"
    ]
    added = edited(
        old_wl,
        "spec.podGroupTemplates",
        [*old_wl["spec"]["podGroupTemplates"], {"name": "more", "schedulingPolicy": {"basic": {}}}],
    )
    assert errors("Workload", added, old_wl) == [
        "spec.podGroupTemplates: Forbidden: items may not be added"
    ]


def test_status_conditions_and_claim_statuses() -> None:
    good = edited(
        POD_GROUP,
        "status",
        {
            "conditions": [
                {
                    "type": "PodGroupInitiallyScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/3 nodes are available",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        },
    )
    assert errors("PodGroup", good, POD_GROUP) == []
    bad = edited(
        POD_GROUP,
        "status",
        {
            "conditions": [
                {"type": "PodGroupInitiallyScheduled", "status": "Maybe", "reason": "not ok"}
            ],
            "resourceClaimStatuses": [{"name": "gpu"}],
        },
    )
    assert errors("PodGroup", bad, POD_GROUP) == [
        'status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", '
        '"False", "Unknown"',
        "status.conditions[0].lastTransitionTime: Required value: must be set",
        'status.conditions[0].reason: Invalid value: "not ok": a condition reason must start '
        "with alphabetic character, optionally followed by a string of alphanumeric characters "
        "or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or "
        "'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for "
        "validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
        'status.resourceClaimStatuses[0].name: Invalid value: "gpu": must match the name of an '
        "entry in `spec.resourceClaims`",
    ]


def test_create_drops_status_and_defaults_disruption_mode() -> None:
    obj = edited(POD_GROUP, "status", {"conditions": []})
    apply_pod_group_defaults(obj)
    assert "status" not in obj
    assert obj["spec"]["disruptionMode"] == {"single": {}}


def test_pod_scheduling_group() -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "i"}], "schedulingGroup": {}},
    }
    assert errors("Pod", pod) == ["spec.schedulingGroup.podGroupName: Required value"]
    pod["spec"]["schedulingGroup"] = {"podGroupName": "Bad_Name"}
    assert errors("Pod", pod)[0].startswith(
        'spec.schedulingGroup.podGroupName: Invalid value: "Bad_Name": a lowercase RFC 1123 '
        "subdomain"
    )
