"""patchStrategy / patchMergeKey facts for the kinds kubesim serves.

Transcribed from the struct tags in k8s.io/api/core/v1/types.go, apps/v1, policy/v1, storage/v1
and k8s.io/apimachinery/pkg/apis/meta/v1/types.go. A field not listed has no strategy: maps merge
key by key and lists are replaced whole (e.g. spec.tolerations and, upstream, node spec.taints).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class FieldMeta:
    strategy: str = ""  # "merge", "replace", "retainKeys" or "merge,retainKeys"
    merge_key: str = ""
    struct: Mapping[str, FieldMeta] = field(default_factory=lambda: _EMPTY)

    @property
    def merge(self) -> bool:
        return "merge" in self.strategy.split(",")

    @property
    def replace(self) -> bool:
        return "replace" in self.strategy.split(",")


Struct = Mapping[str, FieldMeta]
_EMPTY: Struct = MappingProxyType({})
_PLAIN = FieldMeta()


def field_meta(struct: Struct, key: str) -> FieldMeta:
    return struct.get(key, _PLAIN)


def _struct(**fields: FieldMeta) -> Struct:
    return MappingProxyType(fields)


def _nested(**fields: FieldMeta) -> FieldMeta:
    return FieldMeta(struct=_struct(**fields))


_MERGE_BY_TYPE = FieldMeta("merge", "type")

OBJECT_META = _nested(
    finalizers=FieldMeta("merge"),
    ownerReferences=FieldMeta("merge", "uid"),
)

CONTAINER = _struct(
    ports=FieldMeta("merge", "containerPort"),
    env=FieldMeta("merge", "name"),
    volumeMounts=FieldMeta("merge", "mountPath"),
    volumeDevices=FieldMeta("merge", "devicePath"),
)

POD_SPEC = _nested(
    volumes=FieldMeta("merge,retainKeys", "name"),
    initContainers=FieldMeta("merge", "name", CONTAINER),
    containers=FieldMeta("merge", "name", CONTAINER),
    ephemeralContainers=FieldMeta("merge", "name", CONTAINER),
    imagePullSecrets=FieldMeta("merge", "name"),
    hostAliases=FieldMeta("merge", "ip"),
    topologySpreadConstraints=FieldMeta("merge", "topologyKey"),
    schedulingGates=FieldMeta("merge", "name"),
    resourceClaims=FieldMeta("merge,retainKeys", "name"),
)

POD_STATUS = _nested(
    conditions=_MERGE_BY_TYPE,
    podIPs=FieldMeta("merge", "ip"),
    hostIPs=FieldMeta("merge", "ip"),
    resourceClaimStatuses=FieldMeta("merge", "name"),
)

POD_TEMPLATE_SPEC = _nested(metadata=OBJECT_META, spec=POD_SPEC)
_CONDITIONS_STATUS = _nested(conditions=_MERGE_BY_TYPE)

_KINDS: dict[str, Struct] = {
    "Pod": _struct(metadata=OBJECT_META, spec=POD_SPEC, status=POD_STATUS),
    "Node": _struct(
        metadata=OBJECT_META,
        spec=_nested(podCIDRs=FieldMeta("merge")),
        status=_nested(conditions=_MERGE_BY_TYPE, addresses=_MERGE_BY_TYPE),
    ),
    "Namespace": _struct(metadata=OBJECT_META, status=_CONDITIONS_STATUS),
    "Service": _struct(
        metadata=OBJECT_META,
        spec=_nested(ports=FieldMeta("merge", "port")),
        status=_CONDITIONS_STATUS,
    ),
    "ReplicationController": _struct(
        metadata=OBJECT_META, spec=_nested(template=POD_TEMPLATE_SPEC), status=_CONDITIONS_STATUS
    ),
    "ReplicaSet": _struct(
        metadata=OBJECT_META, spec=_nested(template=POD_TEMPLATE_SPEC), status=_CONDITIONS_STATUS
    ),
    "StatefulSet": _struct(
        metadata=OBJECT_META, spec=_nested(template=POD_TEMPLATE_SPEC), status=_CONDITIONS_STATUS
    ),
    "Deployment": _struct(
        metadata=OBJECT_META, spec=_nested(template=POD_TEMPLATE_SPEC), status=_CONDITIONS_STATUS
    ),
    "DaemonSet": _struct(
        metadata=OBJECT_META, spec=_nested(template=POD_TEMPLATE_SPEC), status=_CONDITIONS_STATUS
    ),
    "Job": _struct(
        metadata=OBJECT_META, spec=_nested(template=POD_TEMPLATE_SPEC), status=_CONDITIONS_STATUS
    ),
    "PodDisruptionBudget": _struct(metadata=OBJECT_META, status=_CONDITIONS_STATUS),
    "PersistentVolumeClaim": _struct(metadata=OBJECT_META, status=_CONDITIONS_STATUS),
    "CSINode": _struct(metadata=OBJECT_META, spec=_nested(drivers=FieldMeta("merge", "name"))),
}
_DEFAULT: Struct = _struct(metadata=OBJECT_META)


def schema_for_kind(kind: str) -> Struct:
    """Patch metadata for `kind`; unknown kinds get ObjectMeta's and nothing else."""
    return _KINDS.get(kind, _DEFAULT)
