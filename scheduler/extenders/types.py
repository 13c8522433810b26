"""The extender wire format: k8s.io/kube-scheduler/extender/v1 types, as JSON.

Upstream's structs carry no json tags, so Go's encoding/json writes the Go field names
("Pod", "Nodes", "NodeNames", "FailedNodes", "Host", "Score", "PodUID", ...) and reads them
back case-insensitively (an extender answering "nodeNames" or "nodenames" is understood). The
encoders here write exactly what kube-scheduler writes (nil pointers as null); the decoders read
what Go would accept, and reject what Go would fail to unmarshal, with the extender and verb named
by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from apimachinery.jsonkind import json_kind
from scheduler.framework.extender import Victims

if TYPE_CHECKING:
    pass

#: extenderv1.MinExtenderPriority / MaxExtenderPriority
MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10
#: framework.ExtenderName: the "plugin" an extender's rejection is recorded under, so the pod
#: is requeued by any cluster event (extenders register no events).
EXTENDER_NAME = "Extender"


class WireError(ValueError):
    """A response Go's json.Decoder would refuse to unmarshal into the expected type."""


# ---- requests -------------------------------------------------------------------------------


def extender_args(
    pod: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]] | None,
    node_names: Sequence[str] | None,
) -> dict[str, Any]:
    """ExtenderArgs: Nodes (a v1.NodeList) when the extender has no node cache, else NodeNames."""
    return {
        "Pod": pod,
        "Nodes": None if nodes is None else {"metadata": {}, "items": list(nodes)},
        "NodeNames": None if node_names is None else list(node_names),
    }


def binding_args(pod_name: str, pod_namespace: str, pod_uid: str, node: str) -> dict[str, Any]:
    """ExtenderBindingArgs."""
    return {"PodName": pod_name, "PodNamespace": pod_namespace, "PodUID": pod_uid, "Node": node}


@dataclass(frozen=True, slots=True)
class MetaVictims:
    """extenderv1.MetaVictims: the victims by UID only."""

    pod_uids: tuple[str, ...]
    num_pdb_violations: int = 0


def convert_to_meta_victims(victims: Mapping[str, Victims]) -> dict[str, MetaVictims]:
    """Upstream's convertToMetaVictims."""
    return {
        node: MetaVictims(
            tuple(p.uid for p in v.pods),
            v.num_pdb_violations,
        )
        for node, v in victims.items()
    }


def preemption_args(
    pod: Mapping[str, Any],
    victims: Mapping[str, Victims] | None,
    meta_victims: Mapping[str, MetaVictims] | None,
) -> dict[str, Any]:
    """ExtenderPreemptionArgs (nil maps are written as null, as Go does)."""
    return {
        "Pod": pod,
        "NodeNameToVictims": None
        if victims is None
        else {
            node: {"Pods": [p.raw for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
            for node, v in victims.items()
        },
        "NodeNameToMetaVictims": None
        if meta_victims is None
        else {node: _meta_victims_json(v) for node, v in meta_victims.items()},
    }


def _meta_victims_json(victims: MetaVictims) -> dict[str, Any]:
    return {
        "Pods": [{"UID": uid} for uid in victims.pod_uids],
        "NumPDBViolations": victims.num_pdb_violations,
    }


# ---- responses ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FilterResult:
    """ExtenderFilterResult; None marks a nil pointer (the field was absent or null)."""

    node_list_names: tuple[str, ...] | None = None  # Nodes.items[*].metadata.name
    node_names: tuple[str, ...] | None = None
    failed_nodes: Mapping[str, str] = field(default_factory=dict)
    failed_and_unresolvable_nodes: Mapping[str, str] = field(default_factory=dict)
    error: str = ""


@dataclass(frozen=True, slots=True)
class HostPriority:
    host: str
    score: int


def _get(obj: Mapping[str, Any], name: str) -> Any:
    """A field as Go's decoder finds it: the exact key, else a case-insensitive match."""
    if name in obj:
        return obj[name]
    lowered = name.lower()
    for key, value in obj.items():
        if isinstance(key, str) and key.lower() == lowered:
            return value
    return None


def _object(value: Any, what: str) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise WireError(f"cannot unmarshal {json_kind(value)} into {what} (want an object)")
    return value


def _string(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise WireError(f"cannot unmarshal {json_kind(value)} into {what} of type string")
    return value


def _int64(value: Any, what: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise WireError(f"cannot unmarshal {json_kind(value)} into {what} of type int64")
    if not -(2**63) <= value < 2**63:
        raise WireError(f"value {value} overflows {what} of type int64")
    return value


def _string_list(value: Any, what: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise WireError(f"cannot unmarshal {json_kind(value)} into {what} of type []string")
    return tuple(_string(item, what) for item in value)


def _string_map(value: Any, what: str) -> dict[str, str]:
    mapping = _object(value, what)
    if mapping is None:
        return {}
    return {str(k): _string(v, f"{what}[{k!r}]") for k, v in mapping.items()}


def decode_filter_result(body: Any) -> FilterResult:
    obj = _object(body, "ExtenderFilterResult")
    if obj is None:
        return FilterResult()  # JSON null: every field keeps its zero value
    node_list = _object(_get(obj, "Nodes"), "ExtenderFilterResult.Nodes")
    names_in_list: tuple[str, ...] | None = None
    if node_list is not None:
        items = _get(node_list, "items")
        if items is not None and not isinstance(items, list):
            raise WireError(
                f"cannot unmarshal {json_kind(items)} into ExtenderFilterResult.Nodes.items"
            )
        names: list[str] = []
        for item in items or ():
            node = _object(item, "ExtenderFilterResult.Nodes.items") or {}
            meta = _object(_get(node, "metadata"), "Node.metadata") or {}
            names.append(_string(_get(meta, "name"), "Node.metadata.name"))
        names_in_list = tuple(names)
    return FilterResult(
        node_list_names=names_in_list,
        node_names=_string_list(_get(obj, "NodeNames"), "ExtenderFilterResult.NodeNames"),
        failed_nodes=_string_map(_get(obj, "FailedNodes"), "ExtenderFilterResult.FailedNodes"),
        failed_and_unresolvable_nodes=_string_map(
            _get(obj, "FailedAndUnresolvableNodes"),
            "ExtenderFilterResult.FailedAndUnresolvableNodes",
        ),
        error=_string(_get(obj, "Error"), "ExtenderFilterResult.Error"),
    )


def decode_host_priority_list(body: Any) -> list[HostPriority]:
    if body is None:
        return []
    if not isinstance(body, list):
        raise WireError(f"cannot unmarshal {json_kind(body)} into HostPriorityList (want an array)")
    result = []
    for item in body:
        obj = _object(item, "HostPriority") or {}
        result.append(
            HostPriority(
                _string(_get(obj, "Host"), "HostPriority.Host"),
                _int64(_get(obj, "Score"), "HostPriority.Score"),
            )
        )
    return result


def decode_binding_result(body: Any) -> str:
    """ExtenderBindingResult.Error ("" on success)."""
    obj = _object(body, "ExtenderBindingResult")
    if obj is None:
        return ""
    return _string(_get(obj, "Error"), "ExtenderBindingResult.Error")


def decode_preemption_result(body: Any) -> dict[str, MetaVictims]:
    """ExtenderPreemptionResult.NodeNameToMetaVictims."""
    obj = _object(body, "ExtenderPreemptionResult")
    if obj is None:
        return {}
    what = "ExtenderPreemptionResult.NodeNameToMetaVictims"
    victims_by_node = _object(_get(obj, "NodeNameToMetaVictims"), what) or {}
    result: dict[str, MetaVictims] = {}
    for node, raw in victims_by_node.items():
        victims = _object(raw, f"{what}[{node!r}]") or {}
        pods = _get(victims, "Pods")
        if pods is not None and not isinstance(pods, list):
            raise WireError(f"cannot unmarshal {json_kind(pods)} into MetaVictims.Pods")
        uids = tuple(
            _string(_get(_object(p, "MetaPod") or {}, "UID"), "MetaPod.UID") for p in pods or ()
        )
        result[str(node)] = MetaVictims(
            uids, _int64(_get(victims, "NumPDBViolations"), "MetaVictims.NumPDBViolations")
        )
    return result
