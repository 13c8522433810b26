"""The codes a client sees for invalid objects, over HTTP: 422 Invalid with details.causes for
field errors, 400 BadRequest for values the decoder cannot read, and nothing stored either way.

Codes and message forms are upstream's: field.ErrorList through errors.NewInvalid
(k8s.io/apimachinery/pkg/api/errors) and transformDecodeError
(k8s.io/apiserver/pkg/endpoints/handlers/rest.go); a patch whose result does not decode is a 422
on the field "patch" (handlers/patch.go).
"""

from __future__ import annotations

from typing import Any

import pytest

Kube = Any  # the `kube` fixture (tests/kubesim/conftest.py)

PODS = "/api/v1/namespaces/default/pods"
TERM = (
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
    "nodeSelectorTerms[0].matchExpressions[0]"
)
POD_TERM = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
TSC = "spec.topologySpreadConstraints[0]"


def pod(name: str, meta: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **(meta or {})},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


def spread(**fields: Any) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", **fields}


@pytest.mark.parametrize(
    ("spec", "fields"),
    [
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "k", "operator": "Bogus"}]}
                            ]
                        }
                    }
                }
            },
            [f"{TERM}.operator"],
        ),
        (
            {
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "labelSelector": {
                                    "matchExpressions": [{"key": "k", "operator": "Bogus"}]
                                },
                                "topologyKey": "zone",
                            }
                        ]
                    }
                }
            },
            [f"{POD_TERM}.labelSelector.matchExpressions[0].operator"],
        ),
        (
            {
                "affinity": {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": ""}]
                    }
                }
            },
            [
                "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
                ".topologyKey"
            ]
            * 3,
        ),
        ({"topologySpreadConstraints": [spread(topologyKey="")]}, [f"{TSC}.topologyKey"]),
        ({"topologySpreadConstraints": [spread(maxSkew=0)]}, [f"{TSC}.maxSkew"]),
        (
            {"topologySpreadConstraints": [spread(whenUnsatisfiable="Bogus")]},
            [f"{TSC}.whenUnsatisfiable"],
        ),
    ],
    ids=[
        "node-affinity-op",
        "pod-affinity-op",
        "empty-affinity-topology-key",
        "empty-spread-topology-key",
        "max-skew-0",
        "when-unsatisfiable-bogus",
    ],
)
async def test_invalid_pods_get_422_with_causes(
    kube: Kube, spec: dict[str, Any], fields: list[str]
) -> None:
    status, body = await kube.call("POST", PODS, pod("bad", **spec))
    assert (status, body["reason"], body["code"]) == (422, "Invalid", 422)
    assert [cause["field"] for cause in body["details"]["causes"]] == fields
    assert body["details"]["name"] == "bad" and body["details"]["kind"] == "Pod"
    assert body["message"].startswith('Pod "bad" is invalid: ')
    status, _ = await kube.call("GET", f"{PODS}/bad")
    assert status == 404


async def test_several_errors_are_listed_in_one_message(kube: Kube) -> None:
    status, body = await kube.call(
        "POST",
        PODS,
        pod("bad", topologySpreadConstraints=[spread(maxSkew=0, whenUnsatisfiable="Bogus")]),
    )
    assert status == 422
    assert body["message"] == (
        f'Pod "bad" is invalid: [{TSC}.maxSkew: Invalid value: 0: must be greater than zero, '
        f'{TSC}.whenUnsatisfiable: Unsupported value: "Bogus": supported values: '
        '"DoNotSchedule", "ScheduleAnyway"]'
    )


@pytest.mark.parametrize(
    ("obj", "detail"),
    [
        (
            pod("bad", affinity="str"),
            "json: cannot unmarshal string into Go struct field PodSpec.spec.affinity of type "
            "v1.Affinity",
        ),
        (
            pod("bad", overhead={"cpu": "abc"}),
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            pod("bad", {"annotations": {"a": {"b": "c"}}}),
            "json: cannot unmarshal object into Go struct field ObjectMeta.metadata.annotations of "
            "type string",
        ),
    ],
    ids=["affinity-str", "overhead-abc", "annotation-object"],
)
async def test_undecodable_pods_get_400(kube: Kube, obj: dict[str, Any], detail: str) -> None:
    status, body = await kube.call("POST", PODS, obj)
    assert (status, body["reason"]) == (400, "BadRequest")
    assert body["message"] == f'Pod in version "v1" cannot be handled as a Pod: {detail}'
    status, _ = await kube.call("GET", f"{PODS}/bad")
    assert status == 404


async def test_update_and_patch_are_decoded_too(kube: Kube) -> None:
    created = await kube.create_pod("good")
    replaced = {**created, "spec": {**created["spec"], "affinity": "str"}}
    status, body = await kube.call("PUT", f"{PODS}/good", replaced)
    assert (status, body["reason"]) == (400, "BadRequest")
    status, body = await kube.call(
        "PATCH",
        f"{PODS}/good",
        {"metadata": {"annotations": {"a": ["list"]}}},
        content_type="application/merge-patch+json",
    )
    assert (status, body["reason"]) == (422, "Invalid")
    assert [cause["field"] for cause in body["details"]["causes"]] == ["patch"]
    assert (
        "cannot unmarshal array into Go struct field ObjectMeta.metadata.annotations"
        in (body["message"])
    )
    status, body = await kube.call("GET", f"{PODS}/good")
    assert body["metadata"].get("annotations") is None
    assert body["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_other_kinds_the_scheduler_reads(kube: Kube) -> None:
    status, body = await kube.call(
        "POST",
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        {"metadata": {"name": "pdb"}, "spec": {"minAvailable": "101%", "selector": {}}},
    )
    assert status == 422
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.minAvailable"]
    status, body = await kube.call(
        "POST",
        "/api/v1/persistentvolumes",
        {
            "metadata": {"name": "pv"},
            "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}},
        },
    )
    assert status == 422
    assert body["message"] == (
        'PersistentVolume "pv" is invalid: spec: Required value: must specify a volume type'
    )


async def test_type_errors_that_used_to_be_500(kube: Kube) -> None:
    status, body = await kube.call("POST", PODS, {"metadata": {"name": 5}, "spec": {}})
    assert (status, body["reason"]) == (400, "BadRequest")
    status, body = await kube.call("POST", PODS, {"metadata": {"name": "s"}, "spec": "str"})
    assert (status, body["reason"]) == (400, "BadRequest")
    await kube.create_pod("good")
    status, body = await kube.call(
        "PATCH",
        f"{PODS}/good",
        [{"op": "replace", "path": "/metadata", "value": "str"}],
        content_type="application/json-patch+json",
    )
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"].endswith(
        "json: cannot unmarshal string into Go struct field Pod.metadata of type v1.ObjectMeta"
    )
