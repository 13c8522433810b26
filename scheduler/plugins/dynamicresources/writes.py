"""What DynamicResources writes to the API server: a claim's allocation and reservation
(bindClaim's status update, with the finalizer first), the reservation Unreserve takes back, and
the claim PreBind creates for a pod's extended resources, its record in the pod's status and its
deletion when the attempt fails.

Upstream: pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go (bindClaim,
Unreserve) and extendeddynamicresources.go (createExtendedResourceClaimInAPI,
patchPodExtendedResourceClaimStatus, deleteClaim).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Mapping
from typing import Any

from scheduler.api.errors import MalformedObject
from scheduler.api.objects import PodView
from scheduler.api.resource import ResourceClaimView
from scheduler.listers.resource_objects import RESOURCE_API
from scheduler.plugins.dynamicresources import extended
from scheduler.plugins.dynamicresources.allocation import AllocationResult
from scheduler.plugins.dynamicresources.binding import now_rfc3339

log = logging.getLogger(__name__)

# resourceapi.Finalizer
FINALIZER = "resource.kubernetes.io/delete-protection"
# client-go's retry.DefaultRetry: 5 steps of 10 ms.
CONFLICT_RETRIES = 5
CONFLICT_DELAY = 0.01


def claim_path(claim: ResourceClaimView, status: bool = False) -> str:
    path = f"{RESOURCE_API}/namespaces/{claim.namespace}/resourceclaims/{claim.name}"
    return f"{path}/status" if status else path


def api_message(status: int, body: Any) -> str:
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        return str(body["message"])
    return f"the server responded with the status code {status}"


class BindError(Exception):
    """PreBind could not record a claim's allocation or reservation (upstream's error)."""


async def remove_reservation(client: Any, claim: ResourceClaimView, pod: PodView) -> None:
    """A strategic merge patch removes one reservedFor entry without the latest claim."""
    patch = {
        "metadata": {"uid": claim.uid},
        "status": {"reservedFor": [{"$patch": "delete", "uid": pod.uid}]},
    }
    try:
        code, answer = await client.request(
            "PATCH",
            claim_path(claim, status=True),
            body=patch,
            content_type="application/strategic-merge-patch+json",
        )
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise
    except Exception as err:
        code, answer = 0, {"message": str(err)}
    if not 200 <= code < 300:
        # The next attempt gets here again.
        log.warning(
            "unreserve failed",
            extra={"resourceclaim": claim.key, "error": api_message(code, answer)},
        )


async def create_extended_claim(
    client: Any, node_claim: extended.NodeClaim, special: ResourceClaimView
) -> ResourceClaimView:
    """createExtendedResourceClaimInAPI: the claim Filter filled for the node, created
    with a generated name; in flight under the new uid from here on."""
    body = extended.claim_to_create(node_claim)
    path = f"{RESOURCE_API}/namespaces/{special.namespace}/resourceclaims"
    code, answer = await request(client, "POST", path, body)
    if not 200 <= code < 300 or not isinstance(answer, Mapping):
        raise BindError(
            f"create claim for extended resources {special.namespace}/"
            f"{body['metadata'].get('generateName', '')}: {api_message(code, answer)}"
        )
    try:
        created = ResourceClaimView.from_dict(answer)
    except MalformedObject as err:
        raise BindError(f"create claim for extended resources: {err}") from None
    return created  # still in flight under the in-memory uid until bound


async def record_extended_claim(
    client: Any, pod: PodView, claim: ResourceClaimView, node_claim: extended.NodeClaim | None
) -> None:
    """patchPodExtendedResourceClaimStatus."""
    mappings = node_claim.mappings if node_claim is not None else []
    if not mappings:
        raise BindError(
            f"nil or empty request mappings, no update of pod {pod.namespace}/{pod.name} "
            "ExtendedResourceClaimStatus"
        )
    patch = {
        "status": {
            "extendedResourceClaimStatus": {
                "requestMappings": mappings,
                "resourceClaimName": claim.name,
            }
        }
    }
    try:
        code, answer = await client.request(
            "PATCH",
            f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status",
            body=patch,
            content_type="application/merge-patch+json",
        )
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise
    except Exception as err:
        code, answer = 0, {"message": str(err)}
    if not 200 <= code < 300:
        raise BindError(
            f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: "
            f"{api_message(code, answer)}"
        )


async def delete_claim(client: Any, claim: ResourceClaimView) -> None:
    """deleteClaim: drop the scheduler's finalizer, then delete."""
    raw = copy.deepcopy(dict(claim.raw))
    for attempt in range(CONFLICT_RETRIES):
        if attempt:
            await asyncio.sleep(CONFLICT_DELAY)
            code, answer = await request(client, "GET", claim_path(claim))
            if code != 200 or not isinstance(answer, Mapping):
                break
            raw = dict(answer)
        meta = dict(raw.get("metadata") or {})
        meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
        raw["metadata"] = meta
        code, answer = await request(client, "PUT", claim_path(claim), raw)
        if code != 409:
            break
    code, answer = await request(client, "DELETE", claim_path(claim))
    if not 200 <= code < 300 and code != 404:
        log.warning(
            "deleting the extended resource claim failed",
            extra={"resourceclaim": claim.key, "error": api_message(code, answer)},
        )


async def request(client: Any, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    try:
        code, answer = await client.request(method, path, body=body)
        return int(code), answer
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise
    except Exception as err:
        return 0, {"message": str(err)}


async def get_claim(client: Any, claim: ResourceClaimView) -> dict[str, Any]:
    code, answer = await request(client, "GET", claim_path(claim))
    if code != 200 or not isinstance(answer, Mapping):
        raise BindError(
            f"get updated claim {claim.key} after conflict: {api_message(code, answer)}"
        )
    return dict(answer)


async def write_claim(
    client: Any,
    raw: dict[str, Any],
    claim: ResourceClaimView,
    allocation: AllocationResult | None,
    pod: PodView,
    binding_conditions: bool = False,
) -> Mapping[str, Any] | str:
    """One try: the updated claim, or on a conflict the error (the caller retries)."""
    meta = dict(raw.get("metadata") or {})
    raw["metadata"] = meta
    if meta.get("deletionTimestamp") is not None:
        raise BindError(f"claim {claim.key} got deleted in the meantime")
    status = dict(raw.get("status") or {})
    raw["status"] = status
    if allocation is not None:
        if status.get("allocation") is not None:
            raise BindError(f"claim {claim.key} got allocated elsewhere in the meantime")
        finalizers = list(meta.get("finalizers") or [])
        if FINALIZER not in finalizers:
            # The finalizer needs a normal update, before the status one.
            meta["finalizers"] = [*finalizers, FINALIZER]
            code, answer = await request(client, "PUT", claim_path(claim), raw)
            if code == 409:
                return f"add finalizer to claim {claim.key}: {api_message(code, answer)}"
            if not 200 <= code < 300 or not isinstance(answer, Mapping):
                raise BindError(f"add finalizer to claim {claim.key}: {api_message(code, answer)}")
            raw = dict(answer)
            status = dict(raw.get("status") or {})
            raw["status"] = status
        status["allocation"] = allocation.to_dict()
    if binding_conditions and allocation is not None:
        # the binding timeout counts from the allocation (DRADeviceBindingConditions)
        current = status.get("allocation")
        if not isinstance(current, Mapping):
            raise BindError(f"claim {claim.key} got deallocated elsewhere in the meantime")
        if not current.get("allocationTimestamp"):
            status["allocation"] = {**current, "allocationTimestamp": now_rfc3339()}
    status["reservedFor"] = [
        *(status.get("reservedFor") or []),
        {"resource": "pods", "name": pod.name, "uid": pod.uid},
    ]
    code, answer = await request(client, "PUT", claim_path(claim, status=True), raw)
    what = "allocation and reservation" if allocation is not None else "reservation"
    if code == 409:
        return f"add {what} to claim {claim.key}: {api_message(code, answer)}"
    if not 200 <= code < 300 or not isinstance(answer, Mapping):
        raise BindError(f"add {what} to claim {claim.key}: {api_message(code, answer)}")
    return answer
