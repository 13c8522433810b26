"""Decoding of application/vnd.kubernetes.protobuf request bodies, for the kinds clients send so.

kubectl's imperative creates (`kubectl create namespace|configmap|priorityclass|service|pdb`)
and `kubectl drain`'s evictions go through client-go's typed clients, which encode built-in kinds
as protobuf, and client-go 1.32 does not retry with JSON on 415 (it falls back only from CBOR).
So kubesim reads those bodies: the envelope is the magic b"k8s\\x00" then a runtime.Unknown
{typeMeta, raw, contentEncoding, contentType}, and `raw` is the object's message. Field numbers
are those of k8s.io/api's generated.proto files. The result is the JSON object a Go server would
get by decoding the message and encoding it as JSON: empty optional fields are omitted.
Responses stay JSON, which these clients also accept.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    """The body is not a well-formed Kubernetes protobuf envelope."""


class UnsupportedKind(ValueError):
    """A well-formed envelope of a kind kubesim does not decode from protobuf."""


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    # string | bytes | int | bool | message | map | bytes_map | int_or_string | time | micro_time
    kind: str
    repeated: bool = False
    message: Mapping[int, Field] | None = None
    keep_zero: bool = False  # Go's JSON has no omitempty on it: a zero is still written


Schema = Mapping[int, Field]


def _msg(name: str, schema: Schema, repeated: bool = False) -> Field:
    return Field(name, "message", repeated, schema)


TIME = "time"
MICRO_TIME = "micro_time"
TYPE_META: Schema = {1: Field("apiVersion", "string"), 2: Field("kind", "string")}
UNKNOWN: Schema = {
    1: _msg("typeMeta", TYPE_META),
    2: Field("raw", "bytes"),
    3: Field("contentEncoding", "string"),
    4: Field("contentType", "string"),
}
OWNER_REFERENCE: Schema = {
    1: Field("kind", "string"),
    3: Field("name", "string"),
    4: Field("uid", "string"),
    5: Field("apiVersion", "string"),
    6: Field("controller", "bool"),
    7: Field("blockOwnerDeletion", "bool"),
}
OBJECT_META: Schema = {
    1: Field("name", "string"),
    2: Field("generateName", "string"),
    3: Field("namespace", "string"),
    5: Field("uid", "string"),
    6: Field("resourceVersion", "string"),
    7: Field("generation", "int"),
    8: Field("creationTimestamp", TIME),
    9: Field("deletionTimestamp", TIME),
    10: Field("deletionGracePeriodSeconds", "int"),
    11: Field("labels", "map"),
    12: Field("annotations", "map"),
    13: _msg("ownerReferences", OWNER_REFERENCE, repeated=True),
    14: Field("finalizers", "string", repeated=True),
}
OBJECT_REFERENCE: Schema = {
    1: Field("kind", "string"),
    2: Field("namespace", "string"),
    3: Field("name", "string"),
    4: Field("uid", "string"),
    5: Field("apiVersion", "string"),
    6: Field("resourceVersion", "string"),
    7: Field("fieldPath", "string"),
}
LABEL_SELECTOR_REQUIREMENT: Schema = {
    1: Field("key", "string"),
    2: Field("operator", "string"),
    3: Field("values", "string", repeated=True),
}
LABEL_SELECTOR: Schema = {
    1: Field("matchLabels", "map"),
    2: _msg("matchExpressions", LABEL_SELECTOR_REQUIREMENT, repeated=True),
}
NAMESPACE: Schema = {
    1: _msg("metadata", OBJECT_META),
    2: _msg("spec", {1: Field("finalizers", "string", repeated=True)}),
    3: _msg("status", {1: Field("phase", "string")}),
}
CONFIG_MAP: Schema = {
    1: _msg("metadata", OBJECT_META),
    2: Field("data", "map"),
    3: Field("binaryData", "bytes_map"),
    4: Field("immutable", "bool"),
}
PRIORITY_CLASS: Schema = {
    1: _msg("metadata", OBJECT_META),
    2: Field("value", "int", keep_zero=True),
    3: Field("globalDefault", "bool"),
    4: Field("description", "string"),
    5: Field("preemptionPolicy", "string"),
}
SERVICE_PORT: Schema = {
    1: Field("name", "string"),
    2: Field("protocol", "string"),
    3: Field("port", "int", keep_zero=True),
    4: Field("targetPort", "int_or_string"),
    5: Field("nodePort", "int"),
    6: Field("appProtocol", "string"),
}
SESSION_AFFINITY_CONFIG: Schema = {1: _msg("clientIP", {1: Field("timeoutSeconds", "int")})}
SERVICE_SPEC: Schema = {
    1: _msg("ports", SERVICE_PORT, repeated=True),
    2: Field("selector", "map"),
    3: Field("clusterIP", "string"),
    4: Field("type", "string"),
    5: Field("externalIPs", "string", repeated=True),
    7: Field("sessionAffinity", "string"),
    8: Field("loadBalancerIP", "string"),
    9: Field("loadBalancerSourceRanges", "string", repeated=True),
    10: Field("externalName", "string"),
    11: Field("externalTrafficPolicy", "string"),
    12: Field("healthCheckNodePort", "int"),
    13: Field("publishNotReadyAddresses", "bool"),
    14: _msg("sessionAffinityConfig", SESSION_AFFINITY_CONFIG),
    17: Field("ipFamilyPolicy", "string"),
    18: Field("clusterIPs", "string", repeated=True),
    19: Field("ipFamilies", "string", repeated=True),
    20: Field("allocateLoadBalancerNodePorts", "bool"),
    21: Field("loadBalancerClass", "string"),
    22: Field("internalTrafficPolicy", "string"),
    23: Field("trafficDistribution", "string"),
}
SERVICE: Schema = {1: _msg("metadata", OBJECT_META), 2: _msg("spec", SERVICE_SPEC)}
POD_DISRUPTION_BUDGET: Schema = {
    1: _msg("metadata", OBJECT_META),
    2: _msg(
        "spec",
        {
            1: Field("minAvailable", "int_or_string"),
            2: _msg("selector", LABEL_SELECTOR),
            3: Field("maxUnavailable", "int_or_string"),
            4: Field("unhealthyPodEvictionPolicy", "string"),
        },
    ),
}
DELETE_OPTIONS: Schema = {
    # a pointer in Go: 0 (delete at once) is sent on the wire and means something
    1: Field("gracePeriodSeconds", "int", keep_zero=True),
    2: _msg("preconditions", {1: Field("uid", "string"), 2: Field("resourceVersion", "string")}),
    3: Field("orphanDependents", "bool"),
    4: Field("propagationPolicy", "string"),
    5: Field("dryRun", "string", repeated=True),
}
EVICTION: Schema = {1: _msg("metadata", OBJECT_META), 2: _msg("deleteOptions", DELETE_OPTIONS)}
BINDING: Schema = {1: _msg("metadata", OBJECT_META), 2: _msg("target", OBJECT_REFERENCE)}

# `kubectl create deployment|job` (k8s.io/api core/v1, apps/v1 and batch/v1 generated.proto): the
# pod template fields those commands and common flags write
CONTAINER: Schema = {
    1: Field("name", "string"),
    2: Field("image", "string"),
    3: Field("command", "string", repeated=True),
    4: Field("args", "string", repeated=True),
    5: Field("workingDir", "string"),
    6: _msg(
        "ports",
        {
            1: Field("name", "string"),
            2: Field("hostPort", "int"),
            3: Field("containerPort", "int"),
            4: Field("protocol", "string"),
            5: Field("hostIP", "string"),
        },
        repeated=True,
    ),
    7: _msg("env", {1: Field("name", "string"), 2: Field("value", "string")}, repeated=True),
    8: _msg("resources", {}),
    13: Field("terminationMessagePath", "string"),
    14: Field("imagePullPolicy", "string"),
    16: Field("stdin", "bool"),
    17: Field("stdinOnce", "bool"),
    18: Field("tty", "bool"),
    20: Field("terminationMessagePolicy", "string"),
}
POD_SPEC: Schema = {
    2: _msg("containers", CONTAINER, repeated=True),
    3: Field("restartPolicy", "string"),
    4: Field("terminationGracePeriodSeconds", "int"),
    5: Field("activeDeadlineSeconds", "int"),
    6: Field("dnsPolicy", "string"),
    7: Field("nodeSelector", "map"),
    8: Field("serviceAccountName", "string"),
    11: Field("hostNetwork", "bool"),
    16: Field("hostname", "string"),
    17: Field("subdomain", "string"),
    19: Field("schedulerName", "string"),
    20: _msg("initContainers", CONTAINER, repeated=True),
    24: Field("priorityClassName", "string"),
}
POD_TEMPLATE_SPEC: Schema = {1: _msg("metadata", OBJECT_META), 2: _msg("spec", POD_SPEC)}
DEPLOYMENT: Schema = {
    1: _msg("metadata", OBJECT_META),
    2: _msg(
        "spec",
        {
            1: Field("replicas", "int", keep_zero=True),
            2: _msg("selector", LABEL_SELECTOR),
            3: _msg("template", POD_TEMPLATE_SPEC),
            4: _msg(
                "strategy",
                {
                    1: Field("type", "string"),
                    2: _msg(
                        "rollingUpdate",
                        {
                            1: Field("maxUnavailable", "int_or_string"),
                            2: Field("maxSurge", "int_or_string"),
                        },
                    ),
                },
            ),
            5: Field("minReadySeconds", "int"),
            6: Field("revisionHistoryLimit", "int", keep_zero=True),
            7: Field("paused", "bool"),
            9: Field("progressDeadlineSeconds", "int"),
        },
    ),
}
JOB: Schema = {
    1: _msg("metadata", OBJECT_META),
    2: _msg(
        "spec",
        {
            1: Field("parallelism", "int", keep_zero=True),
            2: Field("completions", "int", keep_zero=True),
            3: Field("activeDeadlineSeconds", "int"),
            4: _msg("selector", LABEL_SELECTOR),
            5: Field("manualSelector", "bool"),
            6: _msg("template", POD_TEMPLATE_SPEC),
            7: Field("backoffLimit", "int", keep_zero=True),
            8: Field("ttlSecondsAfterFinished", "int", keep_zero=True),
            9: Field("completionMode", "string"),
            10: Field("suspend", "bool"),
        },
    ),
}

# `kubectl create serviceaccount|token|role|rolebinding|clusterrolebinding` and `kubectl auth
# whoami|can-i` (k8s.io/api core/v1, authentication/v1, authorization/v1 and rbac/v1
# generated.proto)
SERVICE_ACCOUNT: Schema = {
    1: _msg("metadata", OBJECT_META),
    2: _msg("secrets", OBJECT_REFERENCE, repeated=True),
    3: _msg("imagePullSecrets", {1: Field("name", "string")}, repeated=True),
    4: Field("automountServiceAccountToken", "bool", keep_zero=True),
}
TOKEN_REQUEST: Schema = {
    1: _msg("metadata", OBJECT_META),
    2: _msg(
        "spec",
        {
            1: Field("audiences", "string", repeated=True),
            4: Field("expirationSeconds", "int"),
            3: _msg(
                "boundObjectRef",
                {
                    1: Field("kind", "string"),
                    2: Field("apiVersion", "string"),
                    3: Field("name", "string"),
                    4: Field("uid", "string"),
                },
            ),
        },
    ),
}
TOKEN_REVIEW: Schema = {
    1: _msg("metadata", OBJECT_META),
    2: _msg("spec", {1: Field("token", "string"), 2: Field("audiences", "string", repeated=True)}),
}
RESOURCE_ATTRIBUTES: Schema = {
    1: Field("namespace", "string"),
    2: Field("verb", "string"),
    3: Field("group", "string"),
    4: Field("version", "string"),
    5: Field("resource", "string"),
    6: Field("subresource", "string"),
    7: Field("name", "string"),
}
NON_RESOURCE_ATTRIBUTES: Schema = {1: Field("path", "string"), 2: Field("verb", "string")}
SUBJECT_ACCESS_REVIEW: Schema = {
    1: _msg("metadata", OBJECT_META),
    2: _msg(
        "spec",
        {
            1: _msg("resourceAttributes", RESOURCE_ATTRIBUTES),
            2: _msg("nonResourceAttributes", NON_RESOURCE_ATTRIBUTES),
            3: Field("user", "string"),
            4: Field("groups", "string", repeated=True),
            6: Field("uid", "string"),
        },
    ),
}
SELF_SUBJECT_ACCESS_REVIEW: Schema = {
    1: _msg("metadata", OBJECT_META),
    2: _msg(
        "spec",
        {
            1: _msg("resourceAttributes", RESOURCE_ATTRIBUTES),
            2: _msg("nonResourceAttributes", NON_RESOURCE_ATTRIBUTES),
        },
    ),
}
POLICY_RULE: Schema = {
    1: Field("verbs", "string", repeated=True),
    2: Field("apiGroups", "string", repeated=True),
    3: Field("resources", "string", repeated=True),
    4: Field("resourceNames", "string", repeated=True),
    5: Field("nonResourceURLs", "string", repeated=True),
}
ROLE: Schema = {1: _msg("metadata", OBJECT_META), 2: _msg("rules", POLICY_RULE, repeated=True)}
ROLE_BINDING: Schema = {
    1: _msg("metadata", OBJECT_META),
    2: _msg(
        "subjects",
        {
            1: Field("kind", "string"),
            2: Field("apiGroup", "string"),
            3: Field("name", "string"),
            4: Field("namespace", "string"),
        },
        repeated=True,
    ),
    3: _msg(
        "roleRef",
        {1: Field("apiGroup", "string"), 2: Field("kind", "string"), 3: Field("name", "string")},
    ),
}
# k8s.io/api events/v1 generated.proto: what kube-scheduler's event broadcaster posts
EVENT: Schema = {
    1: _msg("metadata", OBJECT_META),
    2: Field("eventTime", MICRO_TIME),
    3: _msg("series", {1: Field("count", "int"), 2: Field("lastObservedTime", MICRO_TIME)}),
    4: Field("reportingController", "string"),
    5: Field("reportingInstance", "string"),
    6: Field("action", "string"),
    7: Field("reason", "string"),
    8: _msg("regarding", OBJECT_REFERENCE),
    9: _msg("related", OBJECT_REFERENCE),
    10: Field("note", "string"),
    11: Field("type", "string"),
    12: _msg("deprecatedSource", {1: Field("component", "string"), 2: Field("host", "string")}),
    13: Field("deprecatedFirstTimestamp", TIME),
    14: Field("deprecatedLastTimestamp", TIME),
    15: Field("deprecatedCount", "int"),
}
_RBAC_V1 = "rbac.authorization.k8s.io/v1"
IDENTITY_KINDS: Mapping[tuple[str, str], Schema] = {
    ("v1", "ServiceAccount"): SERVICE_ACCOUNT,
    ("authentication.k8s.io/v1", "TokenRequest"): TOKEN_REQUEST,
    ("authentication.k8s.io/v1", "TokenReview"): TOKEN_REVIEW,
    ("authentication.k8s.io/v1", "SelfSubjectReview"): {1: _msg("metadata", OBJECT_META)},
    ("authorization.k8s.io/v1", "SubjectAccessReview"): SUBJECT_ACCESS_REVIEW,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): SELF_SUBJECT_ACCESS_REVIEW,
    (_RBAC_V1, "Role"): ROLE,
    (_RBAC_V1, "ClusterRole"): ROLE,
    (_RBAC_V1, "RoleBinding"): ROLE_BINDING,
    (_RBAC_V1, "ClusterRoleBinding"): ROLE_BINDING,
}

# (apiVersion, kind) -> message schema; status is left out where the server resets it anyway
KINDS: Mapping[tuple[str, str], Schema] = {
    **IDENTITY_KINDS,
    ("apps/v1", "Deployment"): DEPLOYMENT,
    ("batch/v1", "Job"): JOB,
    ("v1", "Namespace"): NAMESPACE,
    ("v1", "ConfigMap"): CONFIG_MAP,
    ("v1", "Service"): SERVICE,
    ("v1", "Binding"): BINDING,
    ("events.k8s.io/v1", "Event"): EVENT,
    ("scheduling.k8s.io/v1", "PriorityClass"): PRIORITY_CLASS,
    ("policy/v1", "PodDisruptionBudget"): POD_DISRUPTION_BUDGET,
    ("policy/v1", "Eviction"): EVICTION,
    # the body of a DELETE from a protobuf client: kube-scheduler's preemption deleting a victim
    ("v1", "DeleteOptions"): DELETE_OPTIONS,
}


# ---- wire format ------------------------------------------------------------------------------
def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ProtobufError("varint too long")


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: an int for varints and fixed-width values, else bytes."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise ProtobufError("field number 0")
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ProtobufError("truncated length-delimited field")
            value, pos = data[pos : pos + length], pos + length
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if pos + width > len(data):
                raise ProtobufError("truncated fixed-width field")
            value, pos = int.from_bytes(data[pos : pos + width], "little"), pos + width
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, value))
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _bytes(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a length-delimited field")
    return value


def _int(value: int | bytes) -> int:
    if isinstance(value, bytes):
        raise ProtobufError("expected a varint")
    return _signed(value)


def _text(value: int | bytes) -> str:
    try:
        return _bytes(value).decode()
    except UnicodeDecodeError as exc:
        raise ProtobufError("a string field is not UTF-8") from exc


def _map_entry(value: int | bytes, binary: bool) -> tuple[str, str]:
    key, item = "", ""
    for number, part in _fields(_bytes(value)):
        if number == 1:
            key = _text(part)
        elif number == 2:
            item = base64.b64encode(_bytes(part)).decode() if binary else _text(part)
    return key, item


def _time(value: int | bytes) -> str | None:
    seconds = 0
    for number, part in _fields(_bytes(value)):
        if number == 1:
            seconds = _int(part)
    if seconds == 0:
        return None  # Go's zero metav1.Time
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_time(value: int | bytes) -> str | None:
    """metav1.MicroTime {seconds, nanos} as Go writes it in JSON (RFC3339 with microseconds)."""
    seconds = nanos = 0
    for number, part in _fields(_bytes(value)):
        if number == 1:
            seconds = _int(part)
        elif number == 2:
            nanos = _int(part)
    if seconds == 0 and nanos == 0:
        return None  # Go's zero metav1.MicroTime
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{nanos // 1000:06d}Z"


def _int_or_string(value: int | bytes) -> int | str:
    kind, number_value, text = 0, 0, ""
    for number, part in _fields(_bytes(value)):
        if number == 1:
            kind = _int(part)
        elif number == 2:
            number_value = _int(part)
        elif number == 3:
            text = _text(part)
    return text if kind == 1 else number_value


def _scalar(field: Field, value: int | bytes) -> Any:
    if field.kind == "string":
        return _text(value)
    if field.kind == "int":
        return _int(value)
    if field.kind == "bool":
        return bool(_int(value))
    if field.kind == "bytes":
        return _bytes(value)
    if field.kind == TIME:
        return _time(value)
    if field.kind == MICRO_TIME:
        return _micro_time(value)
    if field.kind == "int_or_string":
        return _int_or_string(value)
    assert field.message is not None
    return decode_message(_bytes(value), field.message)


def _empty(value: Any) -> bool:
    return value is None or value in ("", 0, False) or value == {} or value == []


def decode_message(data: bytes, schema: Schema) -> dict[str, Any]:
    """One message as a JSON-shaped dict; fields the schema does not know are skipped."""
    out: dict[str, Any] = {}
    for number, value in _fields(data):
        field = schema.get(number)
        if field is None:
            continue
        if field.kind in ("map", "bytes_map"):
            key, item = _map_entry(value, field.kind == "bytes_map")
            out.setdefault(field.name, {})[key] = item
        elif field.repeated:
            out.setdefault(field.name, []).append(_scalar(field, value))
        else:
            out[field.name] = _scalar(field, value)
    for number_field in schema.values():
        name = number_field.name
        if name in out and _empty(out[name]) and not number_field.keep_zero:
            del out[name]
    return out


def decode_object(body: bytes) -> dict[str, Any]:
    """A request body in application/vnd.kubernetes.protobuf as its JSON object.

    Raises ProtobufError for a malformed envelope, UnsupportedKind for a kind not decoded here."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the body does not start with the Kubernetes protobuf magic number")
    envelope = decode_message(body[len(MAGIC) :], UNKNOWN)
    if envelope.get("contentEncoding"):
        raise ProtobufError(f"unsupported content encoding {envelope['contentEncoding']!r}")
    type_meta = envelope.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    schema = KINDS.get((api_version, kind))
    if schema is None:
        raise UnsupportedKind(f"{api_version}, Kind={kind}")
    obj = decode_message(envelope.get("raw", b""), schema)
    return {"apiVersion": api_version, "kind": kind, **obj}
