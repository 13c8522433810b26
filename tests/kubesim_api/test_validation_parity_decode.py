"""Type errors refused as upstream's JSON decoder refuses them (400 BadRequest, before validation).

Messages follow encoding/json's UnmarshalTypeError (`json: cannot unmarshal <JSON kind> into Go
struct field <Struct>.<json path> of type <Go type>`), resource.Quantity.UnmarshalJSON and
intstr.IntOrString.UnmarshalJSON, wrapped as the API server's transformDecodeError does
(k8s.io/apiserver/pkg/endpoints/handlers/rest.go).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.resources import RESOURCES
from kubesim.validation_decode import decode_error

POD = next(r for r in RESOURCES if r.kind == "Pod")
PDB = next(r for r in RESOURCES if r.kind == "PodDisruptionBudget")
PREFIX = 'Pod in version "v1" cannot be handled as a Pod: '
QUANTITY = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


def pod(meta: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", **(meta or {})},
        "spec": {"containers": [{"name": "c", "image": "i"}], **spec},
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            pod(affinity="str"),
            "json: cannot unmarshal string into Go struct field PodSpec.spec.affinity of type "
            "v1.Affinity",
        ),
        (
            pod({"annotations": {"a": {"nested": "object"}}}),
            "json: cannot unmarshal object into Go struct field ObjectMeta.metadata.annotations of "
            "type string",
        ),
        (
            pod({"name": 5}),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type "
            "string",
        ),
        (
            {"metadata": {"name": "p"}, "spec": "str"},
            "json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec",
        ),
        (pod(overhead={"cpu": "abc"}), QUANTITY),
        (
            pod(containers=[{"name": "c", "image": "i", "resources": {"requests": {"cpu": True}}}]),
            QUANTITY,
        ),
        (
            pod(tolerations=[{"operator": "Exists", "tolerationSeconds": 1.5}]),
            "json: cannot unmarshal number 1.5 into Go struct field Toleration.spec.tolerations."
            "tolerationSeconds of type int64",
        ),
        (
            pod(priority="high"),
            "json: cannot unmarshal string into Go struct field PodSpec.spec.priority of type "
            "int32",
        ),
        (
            pod(priority=2**31),
            "json: cannot unmarshal number 2147483648 into Go struct field PodSpec.spec.priority "
            "of type int32",
        ),
        (
            pod(containers={"name": "c"}),
            "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type "
            "[]v1.Container",
        ),
        (
            pod(nodeSelector={"zone": 1}),
            "json: cannot unmarshal number into Go struct field PodSpec.spec.nodeSelector of type "
            "string",
        ),
        (
            pod(topologySpreadConstraints=[{"maxSkew": "1"}]),
            "json: cannot unmarshal string into Go struct field TopologySpreadConstraint.spec."
            "topologySpreadConstraints.maxSkew of type int32",
        ),
        (
            pod(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "k", "operator": 1}]}
                            ]
                        }
                    }
                }
            ),
            "json: cannot unmarshal number into Go struct field NodeSelectorRequirement.spec."
            "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms."
            "matchExpressions.operator of type v1.NodeSelectorOperator",
        ),
        (
            pod(hostNetwork="yes"),
            "json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type "
            "bool",
        ),
    ],
    ids=[
        "affinity-str",
        "annotation-object",
        "name-number",
        "spec-str",
        "overhead-abc",
        "request-bool",
        "float-seconds",
        "priority-str",
        "priority-range",
        "containers-object",
        "selector-number",
        "maxskew-str",
        "operator-number",
        "bool-str",
    ],
)
def test_wrong_types_are_decode_errors(obj: dict[str, Any], expected: str) -> None:
    assert decode_error(POD, obj) == PREFIX + expected


@pytest.mark.parametrize(
    "obj",
    [
        pod(),
        pod({"annotations": {"a": "b"}, "labels": None}, affinity=None),
        pod(overhead={"cpu": 1, "memory": "1Gi"}),  # a bare number is a quantity
        pod(unknownField={"deep": [1, 2]}),  # unknown fields are fieldValidation's business
    ],
    ids=["minimal", "nulls", "numeric-quantity", "unknown-field"],
)
def test_well_typed_objects_decode(obj: dict[str, Any]) -> None:
    assert decode_error(POD, obj) is None


def test_int_or_string_fields() -> None:
    budget = {"metadata": {"name": "b"}, "spec": {"minAvailable": "50%"}}
    assert decode_error(PDB, budget) is None
    budget["spec"]["minAvailable"] = {"x": 1}
    assert decode_error(PDB, budget) == (
        'PodDisruptionBudget in version "v1" cannot be handled as a PodDisruptionBudget: '
        "json: cannot unmarshal object into Go value of type int32"
    )


def test_int64_fields_take_int64_values() -> None:
    node = next(r for r in RESOURCES if r.kind == "Node")
    image = {"names": ["registry/app:v1"], "sizeBytes": 5_000_000_000}
    assert decode_error(node, {"metadata": {"name": "n"}, "status": {"images": [image]}}) is None
    image["sizeBytes"] = "big"
    assert decode_error(node, {"metadata": {"name": "n"}, "status": {"images": [image]}}) == (
        'Node in version "v1" cannot be handled as a Node: json: cannot unmarshal string into Go '
        "struct field ContainerImage.status.images.sizeBytes of type int64"
    )
