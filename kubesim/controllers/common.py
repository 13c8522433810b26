"""Helpers shared by the workload controllers: object access, owner references, pod templates,
pod states, and tolerations, with upstream's semantics."""

from __future__ import annotations

import math
from typing import Any

from apimachinery.decimal_int import compare_numeric_values
from apimachinery.errors import MalformedObject
from apimachinery.labels import LabelSelector
from kubesim import errors, events
from kubesim.api import Api
from kubesim.meta import Obj, parse_rfc3339
from kubesim.patch import copy_json
from kubesim.resources import RESOURCES, ResourceType

PODS = "pods"
NODES = "nodes"

BY_KEY: dict[str, ResourceType] = {r.key: r for r in RESOURCES if not r.stored_as}


class Malformed(ValueError):
    """An object a controller cannot act on; logged and skipped."""


def resource(key: str) -> ResourceType:
    return BY_KEY[key]


def meta(obj: Obj) -> dict[str, Any]:
    value = obj.get("metadata")
    if not isinstance(value, dict):
        raise Malformed("metadata is not an object")
    return value


def spec(obj: Obj) -> dict[str, Any]:
    value = obj.get("spec") or {}
    if not isinstance(value, dict):
        raise Malformed("spec is not an object")
    return value


def status(obj: Obj) -> dict[str, Any]:
    value = obj.get("status") or {}
    return value if isinstance(value, dict) else {}


def uid(obj: Obj) -> str:
    return str(meta(obj).get("uid") or "")


def name(obj: Obj) -> str:
    return str(meta(obj).get("name") or "")


def deleting(obj: Obj) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def owner_refs(obj: Obj) -> list[dict[str, Any]]:
    refs = (obj.get("metadata") or {}).get("ownerReferences")
    if not refs:  # the bare pods of benchmarks: every controller's first question, kept cheap
        return []
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def controller_ref(obj: Obj) -> dict[str, Any] | None:
    """The owner reference with controller: true (at most one, as upstream validates)."""
    for ref in owner_refs(obj):
        if ref.get("controller"):
            return ref
    return None


def owned_by(obj: Obj, owner_kind: str) -> str | None:
    """The name of obj's controller if it is of `owner_kind`."""
    if not (obj.get("metadata") or {}).get("ownerReferences"):
        return None
    ref = controller_ref(obj)
    if ref is not None and ref.get("kind") == owner_kind:
        return str(ref.get("name") or "") or None
    return None


def new_controller_ref(owner: Obj, api_version: str, kind: str) -> dict[str, Any]:
    """metav1.NewControllerRef: controller and blockOwnerDeletion both true."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name(owner),
        "uid": uid(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controlled_pods(api: Api, owner: Obj) -> list[Obj]:
    """Pods in the owner's namespace whose controller reference is the owner (by uid)."""
    owner_uid = uid(owner)
    return [
        p
        for p in api.store.items(PODS, meta(owner).get("namespace", ""))
        if (controller_ref(p) or {}).get("uid") == owner_uid
    ]


def selector_of(obj: Obj) -> dict[str, Any]:
    selector = spec(obj).get("selector")
    if not isinstance(selector, dict):
        raise Malformed("spec.selector is not an object")
    return selector


def selects(selector: dict[str, Any], obj: Obj) -> bool:
    """Whether a controller's selector picks `obj`; an empty one picks nothing here. Stored
    selectors are unvalidated, so they are read leniently (LabelSelector.lenient); one of the
    wrong JSON types makes the controller skip its object."""
    if not selector:
        return False
    labels = (obj.get("metadata") or {}).get("labels") or {}
    try:
        return LabelSelector.lenient(selector).matches(labels)
    except MalformedObject as exc:
        raise Malformed(f"spec.selector: {exc}") from exc


def pod_from_template(
    owner: Obj,
    ref: dict[str, Any],
    name_or_prefix: str,
    generate: bool,
    extra_labels: dict[str, str] | None = None,
) -> Obj:
    """A pod from the owner's spec.template, as controller.GetPodFromTemplate writes it."""
    template = spec(owner).get("template")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        raise Malformed("spec.template.spec is missing")
    template_meta = template.get("metadata") or {}
    pod_meta: dict[str, Any] = {
        "namespace": meta(owner).get("namespace", ""),
        "labels": {**(template_meta.get("labels") or {}), **(extra_labels or {})},
        "ownerReferences": [ref],
    }
    if template_meta.get("annotations"):
        pod_meta["annotations"] = dict(template_meta["annotations"])
    if template_meta.get("finalizers"):
        pod_meta["finalizers"] = list(template_meta["finalizers"])
    pod_meta["generateName" if generate else "name"] = name_or_prefix
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_meta,
        "spec": copy_json(template["spec"]),
    }


# ---- pod states (pkg/controller/controller_utils.go, pkg/api/v1/pod/util.go) -------------------
def terminal(pod: Obj) -> bool:
    return status(pod).get("phase") in ("Succeeded", "Failed")


def active(pod: Obj) -> bool:
    """controller.IsPodActive: not terminal and not being deleted."""
    return not terminal(pod) and not deleting(pod)


def ready_condition(pod: Obj) -> dict[str, Any] | None:
    for condition in status(pod).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition
    return None


def ready(pod: Obj) -> bool:
    condition = ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def available_in(pod: Obj, min_ready_seconds: int, now: float) -> float | None:
    """0 if available now (podutil.IsPodAvailable), seconds until it is, None if not ready."""
    condition = ready_condition(pod)
    if condition is None or condition.get("status") != "True" or deleting(pod):
        return None
    if min_ready_seconds <= 0:
        return 0.0
    try:
        since = parse_rfc3339(str(condition.get("lastTransitionTime")))
    except ValueError:
        return 0.0
    return max(0.0, since + min_ready_seconds - now)


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if isinstance(value, str):
        if value.endswith("%"):
            try:
                fraction = int(value[:-1]) * total / 100
            except ValueError as exc:
                raise Malformed(f"invalid value {value!r}") from exc
            return math.ceil(fraction) if round_up else math.floor(fraction)
        try:
            return int(value)
        except ValueError as exc:
            raise Malformed(f"invalid value {value!r}") from exc
    if isinstance(value, int):
        return value
    raise Malformed(f"invalid value {value!r}")


def int_field(obj: dict[str, Any], key: str, default: int) -> int:
    value = obj.get(key, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool):
        raise Malformed(f"{key} is not an integer")
    return value


# ---- tolerations (staging/src/k8s.io/api/core/v1/toleration.go ToleratesTaint) ----------------
# `comparison_operators`: the TaintTolerationComparisonOperators gate, which the taint eviction
# and DaemonSet controllers hand to ToleratesTaint (v1.36): Lt / Gt compare the values as int64.
def tolerates(
    toleration: dict[str, Any], taint: dict[str, Any], comparison_operators: bool = False
) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    value, taint_value = toleration.get("value") or "", taint.get("value") or ""
    if operator in ("Lt", "Gt"):
        return comparison_operators and compare_numeric_values(value, taint_value, operator)
    return operator == "Equal" and value == taint_value


def untolerated(
    taints: list[dict[str, Any]],
    tolerations: list[dict[str, Any]],
    effects: tuple[str, ...],
    comparison_operators: bool = False,
) -> list[dict[str, Any]]:
    return [
        t
        for t in taints
        if t.get("effect") in effects
        and not any(tolerates(tol, t, comparison_operators) for tol in tolerations)
    ]


def node_taints(node: Obj) -> list[dict[str, Any]]:
    taints = (node.get("spec") or {}).get("taints") or []
    return [t for t in taints if isinstance(t, dict)]


# ---- writes ----------------------------------------------------------------------------------
async def create(api: Api, key: str, obj: Obj) -> Obj | None:
    """Create through the API (defaults, admission, validation); None if it already exists."""
    namespace = str(obj["metadata"].get("namespace") or "")
    try:
        return await api.create(resource(key), namespace, obj)
    except errors.ApiError as exc:
        if exc.code == 409:
            return None
        raise


async def delete(api: Api, key: str, obj: Obj, options: dict[str, Any] | None = None) -> bool:
    """Delete with a uid precondition, so a newer object of the same name is never hit; False
    if it was gone already (or replaced)."""
    body = {**(options or {}), "preconditions": {"uid": uid(obj)}}
    try:
        await api.delete(resource(key), meta(obj).get("namespace", ""), name(obj), body)
    except errors.ApiError as exc:
        if exc.code not in (404, 409):
            raise
        return False
    return True


async def write_status(api: Api, key: str, obj: Obj, new_status: dict[str, Any]) -> None:
    """Store a new status if it differs (read and written with no await between)."""
    current = api.store.get(key, meta(obj).get("namespace", ""), name(obj))
    if current is None or uid(current) != uid(obj) or current.get("status") == new_status:
        return
    await api.store.put(
        key, {**current, "metadata": dict(current["metadata"]), "status": new_status}, current
    )


async def write_meta(api: Api, key: str, obj: Obj, changes: dict[str, Any]) -> Obj | None:
    """Merge metadata fields (labels, annotations, ownerReferences, finalizers) into the stored
    object through the API, so emptied finalizers finish a deletion as upstream."""
    namespace = meta(obj).get("namespace", "")
    current = api.store.get(key, namespace, name(obj))
    if current is None or uid(current) != uid(obj):
        return None
    new_meta = {**current["metadata"], **changes}
    for field, value in changes.items():
        if value is None:
            del new_meta[field]
    try:
        return await api.update(
            resource(key), namespace, name(obj), {**current, "metadata": new_meta}
        )
    except errors.ApiError as exc:
        if exc.code in (404, 409):
            return None
        raise


# ---- events (client-go tools/record, as each kube-controller-manager controller records) ------
async def record(
    api: Api,
    component: str,
    obj: Obj,
    kind: str,
    api_version: str,
    event_type: str,
    reason: str,
    message: str,
) -> None:
    """One core/v1 Event about `obj` from the controller named `component`."""
    await api.events.record(
        events.Source(component),
        events.reference(obj, kind, api_version),
        event_type,
        reason,
        message,
    )


async def create_pod(
    api: Api, component: str, owner: Obj, kind: str, api_version: str, pod: Obj
) -> Obj | None:
    """RealPodControl.CreatePods (pkg/controller/controller_utils.go): the pod, then the
    owner's SuccessfulCreate "Created pod: <name>" (FailedCreate "Error creating: <error>")."""
    try:
        created = await create(api, PODS, pod)
    except errors.ApiError as exc:
        await record(
            api,
            component,
            owner,
            kind,
            api_version,
            events.WARNING,
            "FailedCreate",
            f"Error creating: {exc.message}",
        )
        raise
    if created is not None:
        await record(
            api,
            component,
            owner,
            kind,
            api_version,
            events.NORMAL,
            "SuccessfulCreate",
            f"Created pod: {name(created)}",
        )
    return created


async def delete_pod(
    api: Api, component: str, owner: Obj, kind: str, api_version: str, pod: Obj
) -> None:
    """RealPodControl.DeletePod: the owner's SuccessfulDelete "Deleted pod: <name>"."""
    if await delete(api, PODS, pod):
        await record(
            api,
            component,
            owner,
            kind,
            api_version,
            events.NORMAL,
            "SuccessfulDelete",
            f"Deleted pod: {name(pod)}",
        )
