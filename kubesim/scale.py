"""The scale subresource (autoscaling/v1 Scale) of Deployments, ReplicaSets, StatefulSets and
ReplicationControllers, which `kubectl scale` patches.

Upstream: pkg/registry/apps/deployment/storage/storage.go (ScaleREST) and its siblings; the Scale
carries spec.replicas of the parent, status.replicas and status.selector as a label-selector string.
"""

from __future__ import annotations

from typing import Any

from kubesim import errors, patch
from kubesim.api import PATCH_TYPES, Api
from kubesim.meta import Obj
from kubesim.resources import ResourceType


def _selector_string(resource: ResourceType, spec: dict[str, Any]) -> str:
    selector = spec.get("selector") or {}
    if resource.kind == "ReplicationController":  # a plain map there
        return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op, key, values = expr.get("operator"), expr.get("key"), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(sorted(values))})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(sorted(values))})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def scale_of(resource: ResourceType, obj: Obj) -> Obj:
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            key: meta[key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if key in meta
        },
        "spec": {"replicas": int(spec.get("replicas", 1) or 0)},
        "status": {
            "replicas": int((obj.get("status") or {}).get("replicas") or 0),
            "selector": _selector_string(resource, spec),
        },
    }


async def write_replicas(
    api: Api, resource: ResourceType, namespace: str, name: str, scale: Any
) -> Obj:
    """Set the parent's spec.replicas from a Scale; answers the resulting Scale."""
    if not isinstance(scale, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.invalid(
            resource,
            name,
            [("spec.replicas", "FieldValueInvalid", "must be greater than or equal to 0")],
        )
    current = api.get(resource, namespace, name)
    wanted_rv = (scale.get("metadata") or {}).get("resourceVersion")
    if wanted_rv and wanted_rv != current["metadata"].get("resourceVersion"):
        raise errors.conflict(resource, name)
    spec = {**(current.get("spec") or {}), "replicas": replicas}
    updated = await api.update(resource, namespace, name, {**current, "spec": spec})
    return scale_of(resource, updated)


async def patch_scale(
    api: Api, resource: ResourceType, namespace: str, name: str, content_type: str, body: Any
) -> Obj:
    kind = PATCH_TYPES.get(content_type)
    if kind is None:
        raise errors.unsupported_media_type(content_type)
    current = scale_of(resource, api.get(resource, namespace, name))
    try:
        if kind == "json":
            if not isinstance(body, list):
                raise errors.bad_request("json patch must be a list of operations")
            patched = patch.apply_json_patch(current, body)
        else:
            if not isinstance(body, dict):
                raise errors.bad_request("patch body must be a JSON object")
            patched = patch.apply_merge_patch(current, body)
    except patch.PatchError as exc:
        raise errors.ApiError(422, "Invalid", str(exc)) from exc
    return await write_replicas(api, resource, namespace, name, patched)
