"""Validation and defaults of resource.k8s.io/v1 (Dynamic Resource Allocation) and of the pod
fields that reference it, with upstream's field paths, messages and limits.

Upstream: pkg/apis/resource/validation/validation.go (the kinds), pkg/apis/core/validation
(validatePodResourceClaims, validateResourceClaimNames), the limits in
staging/src/k8s.io/api/resource/v1/types.go, the defaults in pkg/apis/resource/v1/defaults.go.
CEL selectors are checked for their length and for their estimated cost (apimachinery/
cel_check.py, the scheduler's own estimate): one over resourceapi.CELSelectorExpressionMaxCost
is refused "too complex, exceeds cost limit" as the API server refuses it. An expression that
does not compile is stored: the scheduler reports it, naming the claim and request, when it
allocates.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from apimachinery.cel_check import CEL_SELECTOR_EXPRESSION_MAX_COST, check_selector
from apimachinery.quantity import format_quantity, parse_nanos, parse_quantity
from apimachinery.validation import is_dns1123_label, is_dns1123_subdomain, regex_error
from kubesim.validation_fields import (
    NOT_POSITIVE,
    Cause,
    duplicate,
    forbidden,
    invalid,
    invalid_each,
    not_found,
    not_supported,
    required,
    too_long,
    too_many,
)
from kubesim.validation_scheduling import validate_node_selector

# staging/src/k8s.io/api/resource/v1/types.go
DEVICE_REQUESTS_MAX_SIZE = 32  # DeviceRequestsMaxSize (= AllocationResultsMaxSize)
FIRST_AVAILABLE_MAX_SIZE = 8  # FirstAvailableDeviceRequestMaxSize
DEVICE_SELECTORS_MAX_SIZE = 32  # DeviceSelectorsMaxSize
DEVICE_CONSTRAINTS_MAX_SIZE = 32  # DeviceConstraintsMaxSize
DEVICE_CONFIG_MAX_SIZE = 32  # DeviceConfigMaxSize
CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024  # CELSelectorExpressionMaxLength
RESOURCE_SLICE_MAX_DEVICES = 128  # ResourceSliceMaxDevices
RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES = 32  # ...PerDevice
RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE = 256  # ResourceClaimReservedForMaxSize
POOL_NAME_MAX_LENGTH = 253  # PoolNameMaxLength
DRIVER_NAME_MAX_LENGTH = 63  # DriverNameMaxLength
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH = 64
ALLOCATION_MODES = ("All", "ExactCount")

_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_C_IDENTIFIER_ERROR = regex_error(
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_'",
    "[A-Za-z_][A-Za-z0-9_]*",
    "my_name", "MY_NAME", "MyName",
)  # fmt: skip
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$"
)
_REQUEST_REF = (
    "must be the name of a request in the claim or the name of a request and a "
    "subrequest separated by '/'"
)
_NODE_SELECTION = (
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
)

Item = Callable[[Any, str], list[Cause]]


# ---- generic helpers (validateSlice / validateSet) --------------------------------------------
def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _validate_slice(items: Any, limit: int, check: Item, path: str) -> list[Cause]:
    """validateSlice: too many items short-circuits (DOS protection), else each is checked."""
    values = _list(items)
    if limit >= 0 and len(values) > limit:
        return [too_many(path, len(values), limit)]
    causes: list[Cause] = []
    for i, item in enumerate(values):
        causes += check(item, f"{path}[{i}]")
    return causes


def _validate_set(
    items: Any, limit: int, check: Item, key: Callable[[Any], Any], path: str
) -> list[Cause]:
    """validateSet: validateSlice, then a Duplicate for each repeated key."""
    values = _list(items)
    causes = _validate_slice(values, limit, check, path)
    if limit >= 0 and len(values) > limit:
        return causes
    seen: set[Any] = set()
    for i, item in enumerate(values):
        item_key = key(item)
        if item_key in seen:
            causes.append(duplicate(f"{path}[{i}]", item_key))
        seen.add(item_key)
    return causes


def _name_key(item: Any) -> str:
    return str(_map(item).get("name") or "")


def _str_key(item: Any) -> str:
    return str(item)


# ---- names -------------------------------------------------------------------------------------
def validate_driver_name(name: Any, path: str) -> list[Cause]:
    """ValidateCSIDriverName: required, at most 63 bytes, a DNS subdomain (lower-cased)."""
    text = str(name or "")
    causes: list[Cause] = []
    if not text:
        causes.append(required(path))
    if len(text) > DRIVER_NAME_MAX_LENGTH:
        causes.append(too_long(path, DRIVER_NAME_MAX_LENGTH))
    causes += invalid_each(path, text, is_dns1123_subdomain(text.lower()))
    return causes


def _validate_pool_name(name: Any, path: str) -> list[Cause]:
    text = str(name or "")
    if not text:
        return [required(path)]
    causes: list[Cause] = []
    if len(text) > POOL_NAME_MAX_LENGTH:
        causes.append(too_long(path, POOL_NAME_MAX_LENGTH))
    for part in text.split("/"):
        causes += invalid_each(path, part, is_dns1123_subdomain(part))
    return causes


def _validate_c_identifier(text: str, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if len(text) > DEVICE_MAX_ID_LENGTH:
        causes.append(too_long(path, DEVICE_MAX_ID_LENGTH))
    if not _C_IDENTIFIER.match(text):
        causes.append(invalid(path, text, _C_IDENTIFIER_ERROR))
    return causes


def validate_qualified_name(name: str, path: str) -> list[Cause]:
    """An attribute or capacity name: a C identifier, optionally prefixed by `<domain>/`."""
    parts = name.split("/")
    if len(parts) == 1:
        return _validate_c_identifier(parts[0], path)
    if len(parts) > 2:
        return [invalid(path, name, "must not contain more than one slash")]
    causes: list[Cause] = []
    if not parts[0]:
        causes.append(invalid(path, "", "the domain must not be empty"))
    else:
        causes += validate_driver_name(parts[0], path)
    if not parts[1]:
        causes.append(invalid(path, "", "the name must not be empty"))
    else:
        causes += _validate_c_identifier(parts[1], path)
    return causes


def _validate_fully_qualified_name(name: Any, path: str) -> list[Cause]:
    text = str(name or "")
    causes = validate_qualified_name(text, path)
    if "/" not in text:
        causes.append(
            invalid(
                path,
                text,
                "a fully qualified name must be a domain and a name separated by a slash",
            )
        )
    return causes


def _validate_request_name(name: Any, path: str) -> list[Cause]:
    text = str(name or "")
    if not text:
        return [required(path)]
    return invalid_each(path, text, is_dns1123_label(text))


# ---- claims ------------------------------------------------------------------------------------
def _request_names(devices: Mapping[str, Any]) -> dict[str, set[str] | None]:
    """gatherRequestNames: request name -> its subrequests' names (None: no firstAvailable)."""
    names: dict[str, set[str] | None] = {}
    for request in _list(devices.get("requests")):
        request = _map(request)
        subs = _list(request.get("firstAvailable"))
        names[str(request.get("name") or "")] = (
            {str(_map(s).get("name") or "") for s in subs} if subs else None
        )
    return names


def _has_request(names: dict[str, set[str] | None], ref: str) -> bool:
    segments = ref.split("/")
    if len(segments) > 2 or segments[0] not in names:
        return False
    if len(segments) == 1:
        return True
    return segments[1] in (names[segments[0]] or set())


def _validate_request_ref(ref: Any, path: str, names: dict[str, set[str] | None]) -> list[Cause]:
    text = str(ref or "")
    segments = text.split("/")
    if len(segments) > 2:
        return [invalid(path, text, _REQUEST_REF)]
    causes: list[Cause] = []
    for segment in segments:
        causes += _validate_request_name(segment, path)
    if not _has_request(names, text):
        causes.append(invalid(path, text, _REQUEST_REF))
    return causes


def _validate_selector(selector: Any, path: str) -> list[Cause]:
    cel = _map(selector).get("cel")
    if not isinstance(cel, Mapping):
        return [required(f"{path}.cel")]
    expression = str(cel.get("expression") or "")
    if len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        return [too_long(f"{path}.cel.expression", CEL_SELECTOR_EXPRESSION_MAX_LENGTH)]
    if not expression.strip():  # the CEL compiler's ErrorTypeRequired
        return [required(f"{path}.cel.expression", "")]
    checked = check_selector(expression, consumable_capacity=True)
    if checked.error is None and checked.max_cost > CEL_SELECTOR_EXPRESSION_MAX_COST:
        return [forbidden(f"{path}.cel.expression", "too complex, exceeds cost limit")]
    return []


def _validate_selectors(selectors: Any, path: str) -> list[Cause]:
    return _validate_slice(selectors, DEVICE_SELECTORS_MAX_SIZE, _validate_selector, path)


def _validate_allocation_mode(request: Mapping[str, Any], path: str) -> list[Cause]:
    mode, count = request.get("allocationMode"), request.get("count") or 0
    if mode == "All":
        if count != 0:
            return [
                invalid(
                    f"{path}.count", count, "must not be specified when allocationMode is 'All'"
                )
            ]
    elif mode == "ExactCount":
        if not isinstance(count, int) or count <= 0:
            return [invalid(f"{path}.count", count, NOT_POSITIVE)]
    else:
        return [not_supported(f"{path}.allocationMode", mode or "", ALLOCATION_MODES)]
    return []


def _validate_device_class_ref(name: Any, path: str) -> list[Cause]:
    text = str(name or "")
    if not text:
        return [required(path)]
    return invalid_each(path, text, is_dns1123_subdomain(text))


def _validate_exact_request(request: Any, path: str) -> list[Cause]:
    request = _map(request)
    causes = _validate_device_class_ref(request.get("deviceClassName"), f"{path}.deviceClassName")
    causes += _validate_selectors(request.get("selectors"), f"{path}.selectors")
    causes += _validate_allocation_mode(request, path)
    return causes


def _validate_subrequest(subrequest: Any, path: str) -> list[Cause]:
    subrequest = _map(subrequest)
    causes = _validate_request_name(subrequest.get("name"), f"{path}.name")
    return causes + _validate_exact_request(subrequest, path)


def _validate_device_request(request: Any, path: str) -> list[Cause]:
    request = _map(request)
    causes = _validate_request_name(request.get("name"), f"{path}.name")
    first_available = _list(request.get("firstAvailable"))
    exactly = request.get("exactly")
    kinds = int(bool(first_available)) + int(exactly is not None)
    if kinds == 0:
        causes.append(required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    elif kinds > 1:
        causes.append(
            invalid(
                path,
                None,
                "exactly one of `exactly` or `firstAvailable` is "
                "required, but multiple fields are set",
            )
        )
    elif first_available:
        causes += _validate_set(
            first_available,
            FIRST_AVAILABLE_MAX_SIZE,
            _validate_subrequest,
            _name_key,
            f"{path}.firstAvailable",
        )
    else:
        causes += _validate_exact_request(exactly, f"{path}.exactly")
    return causes


def _validate_opaque(config: Any, path: str) -> list[Cause]:
    opaque = _map(config).get("opaque")
    if not isinstance(opaque, Mapping):
        return [required(f"{path}.opaque")]
    causes = validate_driver_name(opaque.get("driver"), f"{path}.opaque.driver")
    if opaque.get("parameters") is None:
        causes.append(required(f"{path}.opaque.parameters"))
    return causes


def validate_device_claim(devices: Any, path: str) -> list[Cause]:
    """validateDeviceClaim: requests (unique names), constraints and config by request name."""
    devices = _map(devices)
    names = _request_names(devices)
    causes = _validate_set(
        devices.get("requests"),
        DEVICE_REQUESTS_MAX_SIZE,
        _validate_device_request,
        _name_key,
        f"{path}.requests",
    )

    def constraint(item: Any, item_path: str) -> list[Cause]:
        item = _map(item)
        found = _validate_set(
            item.get("requests"),
            DEVICE_REQUESTS_MAX_SIZE,
            lambda ref, p: _validate_request_ref(ref, p, names),
            _str_key,
            f"{item_path}.requests",
        )
        if item.get("matchAttribute") is not None:
            found += _validate_fully_qualified_name(
                item["matchAttribute"], f"{item_path}.matchAttribute"
            )
        elif item.get("distinctAttribute") is not None:
            found += _validate_fully_qualified_name(
                item["distinctAttribute"], f"{item_path}.distinctAttribute"
            )
        else:  # as a v1.34+ API server with DRAConsumableCapacity (on by default) says
            found.append(
                required(
                    item_path,
                    'exactly one of "matchAttribute" or '
                    '"distinctAttribute" is required, but multiple fields are set',
                )
            )
        return found

    def config(item: Any, item_path: str) -> list[Cause]:
        found = _validate_set(
            _map(item).get("requests"),
            DEVICE_REQUESTS_MAX_SIZE,
            lambda ref, p: _validate_request_ref(ref, p, names),
            _str_key,
            f"{item_path}.requests",
        )
        return found + _validate_opaque(item, item_path)

    causes += _validate_slice(
        devices.get("constraints"), DEVICE_CONSTRAINTS_MAX_SIZE, constraint, f"{path}.constraints"
    )
    causes += _validate_slice(
        devices.get("config"), DEVICE_CONFIG_MAX_SIZE, config, f"{path}.config"
    )
    return causes


def _validate_claim_spec(spec: Any, path: str) -> list[Cause]:
    return validate_device_claim(_map(spec).get("devices"), f"{path}.devices")


def _validate_consumer(ref: Any, path: str) -> list[Cause]:
    ref = _map(ref)
    return [required(f"{path}.{key}") for key in ("resource", "name", "uid") if not ref.get(key)]


def _validate_claim_status(claim: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    """validateResourceClaimStatusUpdate (a new claim's status is dropped before this)."""
    status = _map(claim.get("status"))
    old_status = _map((old or {}).get("status"))
    reserved = status.get("reservedFor")
    causes = _validate_set(
        reserved,
        RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE,
        _validate_consumer,
        lambda ref: str(_map(ref).get("uid") or ""),
        "status.reservedFor",
    )
    allocation, old_allocation = status.get("allocation"), old_status.get("allocation")
    if _list(reserved):
        if allocation is None:
            causes.append(
                forbidden("status.reservedFor", "may not be specified when `allocated` is not set")
            )
        elif (claim.get("metadata") or {}).get("deletionTimestamp"):
            old_uids = {str(_map(r).get("uid")) for r in _list(old_status.get("reservedFor"))}
            if any(str(_map(r).get("uid")) not in old_uids for r in _list(reserved)):
                causes.append(
                    forbidden(
                        "status.reservedFor",
                        "new entries may not be added "
                        "while `deallocationRequested` or `deletionTimestamp` "
                        "are set",
                    )
                )
    if allocation is not None and old_allocation is not None:
        if allocation != old_allocation:
            causes.append(invalid("status.allocation", allocation, "field is immutable"))
    elif allocation is not None:
        causes += _validate_allocation(
            allocation, _request_names(_map(_map(claim.get("spec")).get("devices")))
        )
    return causes


_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def _validate_uid(uid: Any, path: str) -> list[Cause]:
    """validateUID: an RFC 4122 UUID in normalized (lowercase, 36 character) form."""
    text = str(uid)
    if not _UUID.match(text) and not _UUID.match(text.strip("{}").replace("urn:uuid:", "")):
        # google/uuid's Validate: the forms it knows by length, else the length is wrong
        reason = (
            "invalid UUID format"
            if len(text) in (32, 36, 38, 45)
            else f"invalid UUID length: {len(text)}"
        )
        return [invalid(path, text, f"error validating uid: {reason}")]
    if len(text) != 36 or text != text.lower():
        return [
            invalid(
                path,
                text,
                "uid must be in RFC 4122 normalized form, "
                "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal "
                "characters",
            )
        ]
    return []


def _validate_allocation(allocation: Any, names: dict[str, set[str] | None]) -> list[Cause]:
    path = "status.allocation.devices"
    devices = _map(_map(allocation).get("devices"))

    def result(item: Any, item_path: str) -> list[Cause]:
        item = _map(item)
        found = _validate_request_ref(item.get("request"), f"{item_path}.request", names)
        found += validate_driver_name(item.get("driver"), f"{item_path}.driver")
        found += _validate_pool_name(item.get("pool"), f"{item_path}.pool")
        device = str(item.get("device") or "")
        found += (
            [required(f"{item_path}.device")]
            if not device
            else invalid_each(f"{item_path}.device", device, is_dns1123_label(device))
        )
        if item.get("shareID") is not None:
            found += _validate_uid(item["shareID"], f"{item_path}.shareID")
        return found

    causes = _validate_slice(
        devices.get("results"), DEVICE_REQUESTS_MAX_SIZE, result, f"{path}.results"
    )
    selector = _map(allocation).get("nodeSelector")
    if selector is not None:
        causes += validate_node_selector(selector, "status.allocation.nodeSelector")
    return causes


def validate_resource_claim(claim: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    """ValidateResourceClaim / ...Update / ...StatusUpdate: the spec is immutable once created;
    kubesim's status writes keep the spec and its other writes keep the status, so checking
    both on every write is what upstream's two strategies check between them."""
    if old is None:
        return _validate_claim_spec(claim.get("spec"), "spec")
    causes: list[Cause] = []
    if claim.get("spec") != old.get("spec"):
        causes.append(invalid("spec", claim.get("spec"), "field is immutable"))
    return causes + _validate_claim_status(claim, old)


def validate_resource_claim_template(
    template: Mapping[str, Any], old: Mapping[str, Any] | None
) -> list[Cause]:
    if old is not None:
        if template.get("spec") != old.get("spec"):
            return [invalid("spec", template.get("spec"), "field is immutable")]
        return []
    spec = _map(template.get("spec"))
    return _validate_claim_spec(spec.get("spec"), "spec.spec")


# ---- device classes ----------------------------------------------------------------------------
def validate_device_class(device_class: Mapping[str, Any]) -> list[Cause]:
    spec = _map(device_class.get("spec"))
    causes = _validate_selectors(spec.get("selectors"), "spec.selectors")
    causes += _validate_slice(
        spec.get("config"), DEVICE_CONFIG_MAX_SIZE, _validate_opaque, "spec.config"
    )
    return causes


# ---- device taint rules ------------------------------------------------------------------------
DEVICE_TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")


def validate_device_taint_rule(rule: Mapping[str, Any]) -> list[Cause]:
    """validateDeviceTaintRuleSpec (v1beta2): the taint's key and effect, the selector's
    driver and pool names."""
    spec = _map(rule.get("spec"))
    taint = _map(spec.get("taint"))
    causes: list[Cause] = []
    key = str(taint.get("key") or "")
    if not key:
        causes.append(required("spec.taint.key"))
    effect = str(taint.get("effect") or "")
    if effect not in DEVICE_TAINT_EFFECTS:
        causes.append(
            required("spec.taint.effect")
            if not effect
            else not_supported("spec.taint.effect", effect, DEVICE_TAINT_EFFECTS)
        )
    selector = _map(spec.get("deviceSelector"))
    if selector.get("driver") is not None:
        causes += validate_driver_name(selector["driver"], "spec.deviceSelector.driver")
    if selector.get("pool") is not None:
        causes += _validate_pool_name(selector["pool"], "spec.deviceSelector.pool")
    return causes


# ---- resource slices ---------------------------------------------------------------------------
def _validate_attribute(attribute: Any, path: str) -> list[Cause]:
    attribute = _map(attribute)
    causes: list[Cause] = []
    kinds = [key for key in ("bool", "int", "string", "version") if attribute.get(key) is not None]
    for key in ("string", "version"):
        value = attribute.get(key)
        if value is None:
            continue
        text = str(value)
        if key == "version" and not _SEMVER.match(text):
            causes.append(
                invalid(
                    f"{path}.version",
                    text,
                    "must be a string compatible with semver.org spec 2.0.0",
                )
            )
        if len(text) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
            causes.append(too_long(f"{path}.{key}", DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH))
    if not kinds:
        causes.append(invalid(path, "", "exactly one value must be specified"))
    elif len(kinds) > 1:
        causes.append(invalid(path, dict(attribute), "exactly one value must be specified"))
    return causes


def _validate_map(values: Any, path: str, check: Item) -> list[Cause]:
    causes: list[Cause] = []
    max_key = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH
    for key, value in _map(values).items():
        key_path = f"{path}[{key}]"
        if len(key) > max_key:
            causes.append(too_long(key_path, max_key))
        causes += validate_qualified_name(key, key_path)
        causes += check(value, key_path)
    return causes


CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS = 10  # CapacityRequestPolicyDiscreteMaxOptions


def _nanos(value: Any) -> int | None:
    try:
        return parse_nanos(str(value))
    except ValueError:
        return None


def _validate_exclusive_capacity(capacity: Any, path: str) -> list[Cause]:
    """validateSingleAllocatableDeviceCapacity: request policies only on shareable devices."""
    if _map(capacity).get("requestPolicy") is not None:
        return [forbidden(f"{path}.requestPolicy", "allowMultipleAllocations must be true")]
    return []


def _validate_shareable_capacity(capacity: Any, path: str) -> list[Cause]:
    """validateMultiAllocatableDeviceCapacity / validateRequestPolicy (validation.go)."""
    capacity = _map(capacity)
    policy = capacity.get("requestPolicy")
    maximum = _nanos(capacity.get("value"))
    if policy is None or maximum is None:
        return []
    policy, path = _map(policy), f"{path}.requestPolicy"
    values, valid_range = _list(policy.get("validValues")), policy.get("validRange")
    if values and valid_range is not None:
        return [
            forbidden(
                path,
                "exactly one policy can be specified, cannot specify "
                '"validValues" and "validRange" at the same time',
            )
        ]
    if not values and valid_range is None:
        return []
    default = policy.get("default")
    if default is None:
        which = "validValues" if values else "validRange"
        return [required(f"{path}.default", f"required when {which} is defined")]
    default_nanos = _nanos(default)
    if default_nanos is None:
        return []
    if values:
        return _validate_valid_values(
            values,
            default,
            default_nanos,
            maximum,
            str(capacity.get("value")),
            f"{path}.validValues",
        )
    return _validate_range(
        _map(valid_range),
        default,
        default_nanos,
        maximum,
        str(capacity.get("value")),
        f"{path}.validRange",
    )


def _validate_valid_values(
    values: list[Any], default: Any, default_nanos: int, maximum: int, maximum_text: str, path: str
) -> list[Cause]:
    causes: list[Cause] = []
    parsed = [_nanos(v) for v in values]
    for i in range(len(parsed) - 1):
        left, right = parsed[i], parsed[i + 1]
        if left is not None and right is not None and left > right:
            causes.append(
                invalid(
                    f"{path}[{i + 1}]",
                    str(values[i + 1]),
                    "values must be sorted in ascending order",
                )
            )
    if len(values) > CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS:
        causes.append(too_many(path, len(values), CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS))
    seen: set[int] = set()
    for i, (value, nanos) in enumerate(zip(values, parsed, strict=True)):
        if nanos is None:
            continue
        if nanos in seen:
            causes.append(duplicate(f"{path}[{i}]", str(value)))
        seen.add(nanos)
        if nanos > maximum:
            causes.append(
                invalid(
                    f"{path}[{i}]",
                    str(value),
                    f"option is larger than capacity value: {maximum_text}",
                )
            )
    if default_nanos not in seen:
        causes.append(
            invalid(path, str(default), "default value is not valid according to the requestPolicy")
        )
    return causes


def _validate_range(
    valid_range: Mapping[str, Any],
    default: Any,
    default_nanos: int,
    maximum: int,
    maximum_text: str,
    path: str,
) -> list[Cause]:
    if valid_range.get("min") is None:
        return [required(f"{path}.min", "required when validRange is defined")]
    low_text, high_text = str(valid_range["min"]), valid_range.get("max")
    low, high = _nanos(low_text), _nanos(high_text) if high_text is not None else None
    step_text = valid_range.get("step")
    step = _nanos(step_text) if step_text is not None else None
    if low is None:
        return []
    causes: list[Cause] = []
    if low > maximum:
        causes.append(
            invalid(f"{path}.min", low_text, f"min is larger than capacity value: {maximum_text}")
        )
    if default_nanos < low:
        causes.append(invalid(f"{path}.min", str(default), f"default is less than min: {low_text}"))
    if high is not None:
        if low > high:
            causes.append(invalid(f"{path}.max", low_text, f"min is larger than max: {high_text}"))
        if high > maximum:
            causes.append(
                invalid(
                    f"{path}.max",
                    str(high_text),
                    f"max is larger than capacity value: {maximum_text}",
                )
            )
        if default_nanos > high:
            causes.append(
                invalid(f"{path}.max", str(default), f"default is more than max: {high_text}")
            )
    if step is not None and step > 0:
        if low + step > maximum:
            causes.append(
                invalid(
                    f"{path}.step",
                    str(step_text),
                    f"one step {_format_sum(low_text, str(step_text))} is larger "
                    f"than capacity value: {maximum_text}",
                )
            )
        for value, text in ((default_nanos, str(default)), (high, str(high_text))):
            if value is not None and (_units(value) - _units(low)) % _units(step) != 0:
                causes.append(
                    invalid(
                        f"{path}.step",
                        text,
                        f"value is not a multiple of a given step ({step_text}) from ({low_text})",
                    )
                )
    return causes


def _units(nanos: int) -> int:
    """Quantity.Value(): whole units, rounded away from zero."""
    whole = -(-abs(nanos) // 10**9)
    return whole if nanos >= 0 else -whole


def _format_sum(left: str, right: str) -> str:
    return format_quantity(parse_quantity(left) + parse_quantity(right))


def _validate_device(device: Any, path: str, per_device: bool) -> list[Cause]:
    device = _map(device)
    name = str(device.get("name") or "")
    causes = (
        [required(f"{path}.name")]
        if not name
        else invalid_each(f"{path}.name", name, is_dns1123_label(name))
    )
    attributes, capacity = _map(device.get("attributes")), _map(device.get("capacity"))
    total = len(attributes) + len(capacity)
    if total > RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES:
        causes.append(
            invalid(
                path,
                total,
                "the total number of attributes and capacities must "
                f"not exceed {RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES}",
            )
        )
    causes += _validate_map(attributes, f"{path}.attributes", _validate_attribute)
    if device.get("allowMultipleAllocations") is True:
        causes += _validate_map(capacity, f"{path}.capacity", _validate_shareable_capacity)
    else:
        causes += _validate_map(capacity, f"{path}.capacity", _validate_exclusive_capacity)
    if not per_device and any(
        device.get(k) is not None for k in ("nodeName", "nodeSelector", "allNodes")
    ):
        causes.append(
            invalid(
                path,
                None,
                "`nodeName`, `nodeSelector` and `allNodes` can only be "
                "set if `perDeviceNodeSelection` is set to true in the "
                "ResourceSlice spec",
            )
        )
    return causes


def validate_resource_slice(
    slice_obj: Mapping[str, Any], old: Mapping[str, Any] | None
) -> list[Cause]:
    """validateResourceSliceSpec: driver, pool, one node selection, devices (unique names)."""
    spec = _map(slice_obj.get("spec"))
    causes = validate_driver_name(spec.get("driver"), "spec.driver")
    pool = _map(spec.get("pool"))
    causes += _validate_pool_name(pool.get("name"), "spec.pool.name")
    count = pool.get("resourceSliceCount") or 0
    if not isinstance(count, int) or count <= 0:
        causes.append(invalid("spec.pool.resourceSliceCount", count, NOT_POSITIVE))
    generation = pool.get("generation") or 0
    if isinstance(generation, int) and generation < 0:
        causes.append(
            invalid("spec.pool.generation", generation, "must be greater than or equal to zero")
        )
    if old is not None:
        old_spec = _map(old.get("spec"))
        for key, shown in (
            ("pool", "spec.pool.name"),
            ("driver", "spec.driver"),
            ("nodeName", "spec.nodeName"),
        ):
            new_value = _map(spec.get("pool")).get("name") if key == "pool" else spec.get(key)
            old_value = (
                _map(old_spec.get("pool")).get("name") if key == "pool" else old_spec.get(key)
            )
            if new_value != old_value:
                causes.append(invalid(shown, new_value, "field is immutable"))
    selected: list[str] = []
    node_name = spec.get("nodeName")
    if node_name is not None:
        if node_name != "":
            selected.append("`nodeName`")
            causes += invalid_each("spec.nodeName", node_name, is_dns1123_subdomain(str(node_name)))
        else:
            causes.append(
                invalid("spec.nodeName", "", "must be either unset or set to a non-empty string")
            )
    node_selector = spec.get("nodeSelector")
    if node_selector is not None:
        selected.append("`nodeSelector`")
        causes += validate_node_selector(node_selector, "spec.nodeSelector")
        terms = _list(_map(node_selector).get("nodeSelectorTerms"))
        if len(terms) != 1:
            causes.append(
                invalid(
                    "spec.nodeSelector.nodeSelectorTerms",
                    terms,
                    "must have exactly one node selector term",
                )
            )
    for key in ("allNodes", "perDeviceNodeSelection"):
        value = spec.get(key)
        if value is None:
            continue
        if value is True:
            selected.append(f"`{key}`")
        else:
            causes.append(invalid(f"spec.{key}", value, "must be either unset or set to true"))
    if not selected:
        causes.append(required("spec", _NODE_SELECTION))
    elif len(selected) > 1:
        causes.append(
            invalid(
                "spec",
                "{" + ", ".join(selected) + "}",
                f"{_NODE_SELECTION}, but multiple fields are set",
            )
        )
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        causes.append(invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    per_device = spec.get("perDeviceNodeSelection") is True
    causes += _validate_set(
        spec.get("devices"),
        RESOURCE_SLICE_MAX_DEVICES,
        lambda device, p: _validate_device(device, p, per_device),
        _name_key,
        "spec.devices",
    )
    return causes


# ---- pods --------------------------------------------------------------------------------------
def validate_pod_resource_claims(
    spec: Mapping[str, Any], pod_name: str | None, path: str
) -> list[Cause]:
    """validatePodResourceClaims, and each container's resources.claims naming one of them
    (validateResourceClaimNames)."""
    causes: list[Cause] = []
    names: set[str] = set()
    for i, claim in enumerate(_list(spec.get("resourceClaims"))):
        idx = f"{path}.resourceClaims[{i}]"
        claim = _map(claim)
        name = str(claim.get("name") or "")
        template = claim.get("resourceClaimTemplateName")
        if not name:
            causes.append(required(f"{idx}.name"))
        elif name in names:
            causes.append(duplicate(f"{idx}.name", name))
        else:
            errors = is_dns1123_label(name)
            causes += invalid_each(f"{idx}.name", name, errors)
            if not errors and pod_name and template is not None:
                final = f"{pod_name}-{name}"
                causes += [
                    invalid(f"{idx}.name", final, f"final ResourceClaim name: {detail}")
                    for detail in is_dns1123_subdomain(final)
                ]
            names.add(name)
        claim_name = claim.get("resourceClaimName")
        if claim_name is not None and template is not None:
            causes.append(
                invalid(
                    idx,
                    dict(claim),
                    "at most one of `resourceClaimName` or "
                    "`resourceClaimTemplateName` may be specified",
                )
            )
        if claim_name is None and template is None:
            causes.append(
                invalid(
                    idx,
                    dict(claim),
                    "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
                )
            )
        for key, value in (
            ("resourceClaimName", claim_name),
            ("resourceClaimTemplateName", template),
        ):
            if value is not None:
                causes += invalid_each(f"{idx}.{key}", value, is_dns1123_subdomain(str(value)))
    for field_name in ("initContainers", "containers"):
        for i, container in enumerate(_list(spec.get(field_name))):
            claims = _map(_map(container).get("resources")).get("claims")
            causes += _container_claims(claims, names, f"{path}.{field_name}[{i}].resources.claims")
    return causes


def _container_claims(claims: Any, pod_claims: set[str], path: str) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, claim in enumerate(_list(claims)):
        claim = _map(claim)
        name = str(claim.get("name") or "")
        if not name:
            causes.append(required(f"{path}[{i}]"))
            continue
        key = f"{name}/{claim['request']}" if claim.get("request") else name
        if key in seen:
            causes.append(duplicate(f"{path}[{i}]", key))
        seen.add(key)
        if name not in pod_claims:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += (": " + ", ".join(sorted(pod_claims))) if pod_claims else " which is empty"
            causes.append(not_found(f"{path}[{i}]", name, detail))
    return causes


# ---- defaults (pkg/apis/resource/v1/defaults.go) and create strategies -------------------------
def _default_requests(devices: Any) -> None:
    for request in _list(_map(devices).get("requests")):
        if not isinstance(request, dict):
            continue
        targets = [request.get("exactly"), *_list(request.get("firstAvailable"))]
        for target in targets:
            if not isinstance(target, dict):
                continue
            target.setdefault("allocationMode", "ExactCount")
            if target["allocationMode"] == "ExactCount" and not target.get("count"):
                target["count"] = 1
            for toleration in _list(target.get("tolerations")):
                if isinstance(toleration, dict):
                    toleration.setdefault("operator", "Equal")


def apply_dra_defaults(kind: str, obj: dict[str, Any]) -> None:
    """Defaults of the resource.k8s.io kinds; a new claim's status is dropped
    (resourceclaim strategy PrepareForCreate)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if kind == "ResourceClaim":
        obj.pop("status", None)
        _default_requests(spec.get("devices"))
    elif kind == "ResourceClaimTemplate":
        _default_requests(_map(spec.get("spec")).get("devices"))
