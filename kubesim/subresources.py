"""pods/binding and pods/eviction, and the PodDisruptionBudget status that eviction relies on.

Binding follows upstream's BindingREST (pkg/registry/core/pod/storage): it only ever sets a node
on an unbound pod. Eviction follows EvictionREST (pkg/registry/core/pod/storage/eviction.go). As
there is no disruption controller, PDB status is computed here from the pods it selects.
"""

from __future__ import annotations

import math
from typing import Any

from apimachinery.labels import LabelSelector
from kubesim import errors
from kubesim.api import PODS, Api, precondition_failed
from kubesim.meta import Obj, parse_rfc3339, rfc3339
from kubesim.resources import RESOURCES

PDBS = next(r for r in RESOURCES if r.key == "policy/poddisruptionbudgets")
PDB_VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
DISRUPTED_POD_TIMEOUT = 120.0  # upstream DeletionTimeout for disruptedPods entries

SUCCESS_201: Obj = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Success",
    "code": 201,
}


def _scheduled_condition(now: str) -> dict[str, Any]:
    return {
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": now,
    }


def _binding_invalid(name: str, field: str, message: str) -> errors.ApiError:
    return errors.ApiError(
        422,
        "Invalid",
        f'Binding "{name}" is invalid: {field}: {message}',
        {
            "name": name,
            "kind": "Binding",
            "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}],
        },
    )


async def bind(api: Api, namespace: str, name: str, binding: Obj) -> Obj:
    """Assign an unbound pod to a node; answers 201 Success as upstream."""
    target = binding.get("target") or {}
    if not isinstance(target, dict):
        raise errors.bad_request("binding target must be an object")
    kind, node = target.get("kind") or "", target.get("name") or ""
    if kind not in ("", "Node"):
        raise _binding_invalid(
            name, "target.kind", f'Unsupported value: "{kind}": supported values: "Node"'
        )
    if not node:
        raise _binding_invalid(name, "target.name", "Required value")
    pod = api.require(PODS, namespace, name)
    meta = pod["metadata"]
    wanted_uid = (binding.get("metadata") or {}).get("uid")
    if wanted_uid and wanted_uid != meta.get("uid"):
        raise errors.conflict(PODS, name, precondition_failed("UID", wanted_uid, meta.get("uid")))
    if meta.get("deletionTimestamp"):
        raise errors.conflict(
            PODS, name, f"pod {name} is being deleted, cannot be assigned to a host", "binding"
        )
    spec = pod.get("spec") or {}
    bound = spec.get("nodeName")
    if bound:
        raise errors.conflict(
            PODS, name, f'pod {name} is already assigned to node "{bound}"', "binding"
        )
    now = rfc3339(api.clock())
    status = pod.get("status") or {}
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(_scheduled_condition(now))
    new_meta = dict(meta)
    annotations = (binding.get("metadata") or {}).get("annotations")
    if annotations:
        new_meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    new_status = {**status, "conditions": conditions}
    # ClearingNominatedNodeNameAfterBinding (beta, on since v1.35; assignPod in
    # pkg/registry/core/pod/storage/storage.go): the nomination hint goes once the pod is bound.
    new_status.pop("nominatedNodeName", None)
    new = {
        **pod,
        "metadata": new_meta,
        "spec": {**spec, "nodeName": node},
        "status": new_status,
    }
    await api.store.put(PODS.key, new, pod)
    return SUCCESS_201


# ---- disruption budgets ---------------------------------------------------------------------
def _pod_ready(pod: Obj) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def _scaled(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        fraction = int(value[:-1]) * total / 100
        return math.ceil(fraction) if round_up else math.floor(fraction)
    return int(value)


def pdb_status(pdb: Obj, pods: list[Obj], now: float) -> Obj:
    """The status the disruption controller would write, counting selected pods as expected."""
    spec = pdb.get("spec") or {}
    # a stored selector is read as kubesim reads every one (LabelSelector.lenient)
    selector = LabelSelector.lenient(spec.get("selector"))
    selected = [p for p in pods if selector.matches(p["metadata"].get("labels") or {})]
    expected = len(selected)
    healthy = sum(1 for p in selected if _pod_ready(p))
    if spec.get("maxUnavailable") is not None:
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected, True))
    elif spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected, True)
    else:
        desired = expected
    status = dict(pdb.get("status") or {})
    # buildDisruptedPodMap: an entry lasts while its pod is still there and not yet deleting
    present = {
        p["metadata"]["name"] for p in selected if not p["metadata"].get("deletionTimestamp")
    }
    disrupted = {
        pod: when
        for pod, when in (status.get("disruptedPods") or {}).items()
        if pod in present and now - parse_rfc3339(when) < DISRUPTED_POD_TIMEOUT
    }
    allowed = max(0, healthy - len(disrupted) - desired)
    status.update(
        {
            "observedGeneration": pdb["metadata"].get("generation", 1),
            "expectedPods": expected,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "disruptionsAllowed": allowed,
        }
    )
    if disrupted:
        status["disruptedPods"] = disrupted
    else:
        status.pop("disruptedPods", None)
    reason = "SufficientPods" if allowed > 0 else "InsufficientPods"
    old_condition = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), None
    )
    flag = "True" if allowed > 0 else "False"
    if old_condition is None or old_condition.get("status") != flag:
        status["conditions"] = [
            {
                "type": "DisruptionAllowed",
                "status": flag,
                "reason": reason,
                "message": "",
                "observedGeneration": status["observedGeneration"],
                "lastTransitionTime": rfc3339(now),
            }
        ]
    return status


async def refresh_pdbs(api: Api, namespace: str) -> None:
    """Recompute every PDB's status in a namespace (what the disruption controller does)."""
    pdbs = api.store.items(PDBS.key, namespace)
    if not pdbs:
        return
    pods = api.store.items(PODS.key, namespace)
    now = api.clock()
    for pdb in pdbs:
        status = pdb_status(pdb, pods, now)
        if status != pdb.get("status"):
            current = api.store.get(PDBS.key, namespace, pdb["metadata"]["name"])
            if current is pdb:
                await api.store.put(
                    PDBS.key, {**pdb, "metadata": dict(pdb["metadata"]), "status": status}, pdb
                )


def _ignores_pdb(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(
        pod["metadata"].get("deletionTimestamp")
    )


def _too_many_requests(message: str) -> errors.ApiError:
    return errors.ApiError(
        429,
        "TooManyRequests",
        PDB_VIOLATION,
        {"causes": [{"reason": "DisruptionBudget", "message": message}]},
    )


async def evict(api: Api, namespace: str, name: str, eviction: Obj) -> Obj:
    pod = api.require(PODS, namespace, name)
    options = eviction.get("deleteOptions") or None
    if not _ignores_pdb(pod):
        labels = pod["metadata"].get("labels") or {}
        pdbs = [
            p
            for p in api.store.items(PDBS.key, namespace)
            if LabelSelector.lenient((p.get("spec") or {}).get("selector")).matches(labels)
        ]
        if len(pdbs) > 1:
            raise errors.internal(
                "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                "does not support."
            )
        if pdbs:
            pdb = pdbs[0]
            now = api.clock()
            status = pdb_status(pdb, api.store.items(PODS.key, namespace), now)
            pdb_name = pdb["metadata"]["name"]
            if status["disruptionsAllowed"] <= 0:
                raise _too_many_requests(
                    f"The disruption budget {pdb_name} needs {status['desiredHealthy']} healthy "
                    f"pods and has {status['currentHealthy']} currently"
                )
            status["disruptionsAllowed"] -= 1
            status["disruptedPods"] = {**(status.get("disruptedPods") or {}), name: rfc3339(now)}
            await api.store.put(
                PDBS.key, {**pdb, "metadata": dict(pdb["metadata"]), "status": status}, pdb
            )
    await api.delete(PODS, namespace, name, options)
    return SUCCESS_201
