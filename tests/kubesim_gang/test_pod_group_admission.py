"""Priority admission of scheduling.k8s.io/v1beta1 PodGroups as facts: the cases of upstream's
TestAdmitPodGroup (plugin/pkg/admission/priority/admission_test.go; the priority classes
default1 = 1000 global default, nondefault1 = 2000), run through kubesim's create path
(`kubesim.defaults.admit_create`) with every case's gate on, as kubesim serves v1.37's API where
the fields belong to GenericWorkload. And PodGroupWorkloadExists, which upstream removed before
v1.37 (kubernetes#139008): a PodGroup naming a missing Workload is admitted."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim.defaults import PRIORITY_CLASSES_KEY, AdmissionError, admit_create, admit_update

DEFAULT1 = {"metadata": {"name": "default1"}, "value": 1000, "globalDefault": True}
NONDEFAULT1 = {"metadata": {"name": "nondefault1"}, "value": 2000}


def pod_group(
    class_name: str = "", priority: int | None = None, workload_ref: dict[str, str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"basic": {}}}
    if class_name:
        spec["priorityClassName"] = class_name
    if priority is not None:
        spec["priority"] = priority
    if workload_ref is not None:
        spec["workloadRef"] = workload_ref
    return {"metadata": {"name": "test-podgroup", "namespace": "default"}, "spec": spec}


def admit(obj: dict[str, Any], classes: list[dict[str, Any]]) -> dict[str, Any]:
    by_name = {pc["metadata"]["name"]: pc for pc in classes}

    def lookup(key: str, namespace: str, name: str) -> dict[str, Any] | None:
        if key == PRIORITY_CLASSES_KEY:
            return by_name.get(name)
        if key == "namespaces":
            return {"metadata": {"name": name}}
        return None

    def list_all(key: str) -> list[dict[str, Any]]:
        return list(by_name.values()) if key == PRIORITY_CLASSES_KEY else []

    admit_create("PodGroup", obj, lookup, list_all)
    return obj


@pytest.mark.parametrize(
    ("name", "classes", "group", "want_class", "want_priority"),
    [
        (
            "pod group with empty priorityClassName, accepted and set to global default",
            [DEFAULT1, NONDEFAULT1],
            pod_group(),
            "default1",
            1000,
        ),
        (
            "pod group with explicit priorityClassName, accepted",
            [DEFAULT1, NONDEFAULT1],
            pod_group("nondefault1"),
            "nondefault1",
            2000,
        ),
        (
            "pod group with no priorityClassName and no global default, accepted and priority "
            "should be zero",
            [NONDEFAULT1],
            pod_group(),
            None,
            0,
        ),
        (
            "pod group create with pre-set Priority matching computed value, accepted",
            [DEFAULT1, NONDEFAULT1],
            pod_group("nondefault1", 2000),
            "nondefault1",
            2000,
        ),
    ],
)
def test_admitted(
    name: str,
    classes: list[dict[str, Any]],
    group: dict[str, Any],
    want_class: str | None,
    want_priority: int,
) -> None:
    spec = admit(group, classes)["spec"]
    assert spec.get("priorityClassName") == want_class, name
    assert spec["priority"] == want_priority, name


def test_non_existent_priority_class_is_forbidden() -> None:
    with pytest.raises(AdmissionError) as refused:
        admit(pod_group("non-existent"), [DEFAULT1, NONDEFAULT1])
    assert refused.value.code == 403
    assert refused.value.message == (
        'podgroups.scheduling.k8s.io "test-podgroup" is forbidden: no PriorityClass with name '
        "non-existent was found"
    )


def test_pre_set_priority_not_matching_is_forbidden() -> None:
    with pytest.raises(AdmissionError) as refused:
        admit(pod_group("nondefault1", 9999), [DEFAULT1, NONDEFAULT1])
    assert refused.value.code == 403
    assert "the integer value of priority (9999)" in refused.value.message
    assert "computed 2000 from the given PriorityClass name" in refused.value.message


def test_system_priority_classes_resolve() -> None:
    spec = admit(pod_group("system-cluster-critical"), [])["spec"]
    assert spec["priority"] == 2_000_000_000


def test_update_is_a_no_op() -> None:
    """'update operation is a no-op, admission does not mutate pod group on update'."""
    group = pod_group("non-existent")
    before = copy.deepcopy(group)
    admit_update("PodGroup", group, before)
    assert group == before


def test_workload_templates_are_not_admitted() -> None:
    """Only the PodGroup is admitted (kubernetes#139907); a template keeps what it says."""
    workload = {
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {
            "podGroupTemplates": [
                {"name": "t", "priorityClassName": "nope", "schedulingPolicy": {"basic": {}}}
            ]
        },
    }
    before = copy.deepcopy(workload)
    admit_create("Workload", workload, lambda k, n, m: {"metadata": {}}, lambda k: [])
    assert workload == before


def test_pod_group_naming_a_missing_workload_is_admitted() -> None:
    """PodGroupWorkloadExists (v1.36, GenericWorkload) refused this with 'PodGroup rejected:
    Workload "non-existent" not found'; kubernetes#139008 removed the plugin before v1.37."""
    group = pod_group(workload_ref={"workloadName": "non-existent", "templateName": "worker"})
    assert admit(group, [DEFAULT1])["spec"]["priority"] == 1000
