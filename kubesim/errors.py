"""Upstream-shaped API errors: every failure a client sees is a metav1.Status.

Messages follow k8s.io/apimachinery/pkg/api/errors so client code that matches on them
(kubectl, client-go, kubernetes-asyncio users) behaves as against a real API server.
"""

from __future__ import annotations

from typing import Any

from kubesim.resources import ResourceType

MAX_BODY_BYTES = 3 * 1024 * 1024  # upstream maxRequestBodyBytes
CONFLICT_MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


class ApiError(Exception):
    """An error answered as a Status object with the given HTTP code."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def qualified_resource(resource: ResourceType, subresource: str = "") -> str:
    """ "pods", "replicasets.apps", "pods/binding" as upstream's GroupResource.String()."""
    name = resource.plural + (f"/{subresource}" if subresource else "")
    return f"{name}.{resource.group}" if resource.group else name


def qualified_kind(resource: ResourceType) -> str:
    return f"{resource.kind}.{resource.group}" if resource.group else resource.kind


def _details(resource: ResourceType, name: str, subresource: str = "") -> dict[str, Any]:
    plural = resource.plural + (f"/{subresource}" if subresource else "")
    details: dict[str, Any] = {"name": name, "kind": plural}
    if resource.group:
        details["group"] = resource.group
    return details


def not_found(resource: ResourceType, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{qualified_resource(resource)} "{name}" not found',
        _details(resource, name),
    )


def already_exists(resource: ResourceType, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified_resource(resource)} "{name}" already exists',
        _details(resource, name),
    )


def conflict(
    resource: ResourceType, name: str, why: str = CONFLICT_MODIFIED, subresource: str = ""
) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified_resource(resource, subresource)} "{name}": '
        f"{why}",
        _details(resource, name, subresource),
    )


def invalid(resource: ResourceType, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid; causes are (field, reason, message) as validation.Cause."""
    rendered = [f"{field}: {message}" if field else message for field, _, message in causes]
    summary = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    details = _details(resource, name)
    details["kind"] = resource.kind
    details["causes"] = [
        {"reason": reason, "message": message, "field": field} for field, reason, message in causes
    ]
    return ApiError(
        422, "Invalid", f'{qualified_kind(resource)} "{name}" is invalid: {summary}', details
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(verb: str, resource: str) -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        f"{verb} is not supported on resources of kind {resource!r}",
        {},
    )


def gone_expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_old_resource_version(requested: int, oldest: int) -> ApiError:
    return gone_expired(f"too old resource version: {requested} ({oldest})")


def internal(cause: str) -> ApiError:
    return ApiError(
        500,
        "InternalError",
        f"Internal error occurred: {cause}",
        {"causes": [{"message": cause}]},
    )


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def entity_too_large() -> ApiError:
    return ApiError(
        413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY_BYTES}"
    )


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format ({content_type}) - accepted media "
        "types include: application/json-patch+json, application/merge-patch+json, "
        "application/strategic-merge-patch+json",
    )


def not_acceptable_404(path: str) -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})
