"""Query parameters and media types that upstream refuses before a request reaches storage.

Messages follow k8s.io/apimachinery/pkg/apis/meta/internalversion/validation (ValidateListOptions),
pkg/apis/meta/v1/validation (ValidateFieldValidation), apiserver/pkg/storage (ParseResourceVersion)
and apiserver/pkg/endpoints/handlers/negotiation (errUnsupportedMediaType).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kubesim import errors

_FIELD_VALIDATION = ("", "Ignore", "Strict", "Warn")  # upstream lists them sorted
_LIST_MATCHES = ("Exact", "NotOlderThan", "")
_WATCH_MATCHES = ("NotOlderThan",)
_UINT64 = re.compile(r"[0-9]+")
_MAX_UINT64 = 2**64 - 1
# what a create, update or subresource POST may be sent as (kubesim reads no YAML)
BODY_MEDIA_TYPES = ("application/json", "application/vnd.kubernetes.protobuf")


def _quote(value: str) -> str:
    """Go's %q for the values these messages show."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _not_supported(field: str, value: str, supported: tuple[str, ...]) -> tuple[str, str, str]:
    listed = ", ".join(_quote(v) for v in supported)
    return (
        field,
        "FieldValueNotSupported",
        f"Unsupported value: {_quote(value)}: supported values: {listed}",
    )


def _forbidden(field: str, detail: str) -> tuple[str, str, str]:
    return field, "FieldValueForbidden", f"Forbidden: {detail}"


def _options_invalid(options_kind: str, causes: list[tuple[str, str, str]]) -> errors.ApiError:
    """422 on `ListOptions.meta.k8s.io ""`, as upstream's NewInvalid over an options kind."""
    rendered = [f"{field}: {message}" for field, _, message in causes]
    summary = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    return errors.ApiError(
        422,
        "Invalid",
        f'{options_kind}.meta.k8s.io "" is invalid: {summary}',
        {
            "group": "meta.k8s.io",
            "kind": options_kind,
            "causes": [
                {"reason": reason, "message": message, "field": field}
                for field, reason, message in causes
            ],
        },
    )


def check_field_validation(query: Mapping[str, str], options_kind: str) -> None:
    """?fieldValidation must be one of upstream's directives (ValidateFieldValidation)."""
    value = query.get("fieldValidation", "")
    if value not in _FIELD_VALIDATION:
        cause = _not_supported("fieldValidation", value, _FIELD_VALIDATION)
        raise _options_invalid(options_kind, [cause])


def check_list_options(query: Mapping[str, str], watch: bool) -> None:
    """ValidateListOptions, then the resourceVersion a list is read at."""
    match = query.get("resourceVersionMatch", "")
    version = query.get("resourceVersion", "")
    causes: list[tuple[str, str, str]] = []
    if match and watch:
        if match not in _WATCH_MATCHES:
            causes.append(_not_supported("resourceVersionMatch", match, _WATCH_MATCHES))
    elif match:
        if not version:
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if query.get("continue"):
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
        if match not in _LIST_MATCHES:
            causes.append(_not_supported("resourceVersionMatch", match, _LIST_MATCHES))
        if match == "Exact" and version == "0":
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
    if causes:
        raise _options_invalid("ListOptions", causes)
    if not watch and version:
        parse_resource_version(version)


def parse_resource_version(version: str) -> int:
    """A resourceVersion as upstream's APIObjectVersioner reads it (strconv.ParseUint); 400 when
    it is not one."""
    if _UINT64.fullmatch(version) is None:
        why = "invalid syntax"
    elif len(version.lstrip("0")) > 20 or int(version) > _MAX_UINT64:
        why = "value out of range"
    else:
        return int(version)
    raise errors.bad_request(
        f"invalid resource version: resourceVersion: Invalid value: {_quote(version)}: "
        f"strconv.ParseUint: parsing {_quote(version)}: {why}"
    )


def check_body_media_type(content_type_header: str | None, content_type: str) -> None:
    """415 for a body sent in a format the server does not decode. No Content-Type at all is
    read as JSON, as upstream defaults to its first serializer."""
    if content_type_header is None or content_type in BODY_MEDIA_TYPES:
        return
    raise errors.ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(BODY_MEDIA_TYPES),
    )


_PROPAGATION = ("Foreground", "Background", "Orphan")
_INT64 = (-(2**63), 2**63 - 1)
# DeleteOptions fields and the Go type each decodes into
_DELETE_OPTION_TYPES: dict[str, tuple[str, type | tuple[type, ...]]] = {
    "gracePeriodSeconds": ("int64", int),
    "orphanDependents": ("bool", bool),
    "propagationPolicy": ("v1.DeletionPropagation", str),
    "preconditions": ("v1.Preconditions", dict),
    "dryRun": ("[]string", list),
}


def json_type(value: object) -> str:
    """The JSON type name encoding/json puts in an UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "value"


def check_delete_options(options: Mapping[str, object]) -> None:
    """DeleteOptions as upstream decodes them (400 for a wrong type) and ValidateDeleteOptions
    (422 for an unknown propagationPolicy)."""
    for name, (go_type, python_type) in _DELETE_OPTION_TYPES.items():
        value = options.get(name)
        if value is None:
            continue
        if python_type is int:
            wrong = isinstance(value, bool) or not (
                isinstance(value, int) and _INT64[0] <= value <= _INT64[1]
            )
        else:
            wrong = not isinstance(value, python_type)
        if wrong:
            raise errors.bad_request(
                f"json: cannot unmarshal {json_type(value)} into Go struct field "
                f"DeleteOptions.{name} of type {go_type}"
            )
    preconditions = options.get("preconditions") or {}
    assert isinstance(preconditions, Mapping)
    for name in ("uid", "resourceVersion"):
        value = preconditions.get(name)
        if value is not None and not isinstance(value, str):
            raise errors.bad_request(
                f"json: cannot unmarshal {json_type(value)} into Go struct field "
                f"Preconditions.preconditions.{name} of type string"
            )
    policy = options.get("propagationPolicy")
    if policy is not None and policy not in _PROPAGATION:
        cause = _not_supported("propagationPolicy", str(policy), (*_PROPAGATION, "nil"))
        raise _options_invalid("DeleteOptions", [cause])
