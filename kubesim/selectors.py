"""Field selectors as the API server parses them for list and watch.

They follow pkg/fields plus the per-kind field label conversion funcs the API server registers
(pkg/apis/core/v1/conversion.go and friends). Label selectors are apimachinery.labels (one
implementation with the scheduler's); both raise its `SelectorError`, which list and watch
answer with 400 BadRequest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from apimachinery.labels import SelectorError

__all__ = ["FieldSelector", "SelectorError", "parse_field_selector"]


# --- field selectors ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    value: str
    negate: bool


@dataclass(frozen=True, slots=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...]
    kind: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        fields = _FIELDS_BY_KIND.get(self.kind, {})
        for req in self.requirements:
            getter = fields.get(req.field) or _COMMON_FIELDS[req.field]
            if (getter(obj) == req.value) == req.negate:
                return False
        return True

    @property
    def empty(self) -> bool:
        return not self.requirements


def _path(*keys: str, default: str = "") -> Callable[[Mapping[str, Any]], str]:
    def get(obj: Mapping[str, Any]) -> str:
        cur: Any = obj
        for key in keys:
            cur = cur.get(key) if isinstance(cur, Mapping) else None
        if cur is None:
            return default
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return get


def _event_source(obj: Mapping[str, Any]) -> str:
    # Upstream's EventToSelectableFields: source is source.component, else reportingController.
    component = _path("source", "component")(obj)
    return component or _path("reportingComponent")(obj)


_COMMON_FIELDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "metadata.name": _path("metadata", "name"),
    "metadata.namespace": _path("metadata", "namespace"),
}

_POD_FIELDS = {
    **{
        name: _path(*name.split("."))
        for name in (
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        )
    },
    # Upstream formats booleans with strconv.FormatBool, so an absent field reads "false".
    "spec.hostNetwork": _path("spec", "hostNetwork", default="false"),
}

_EVENT_FIELDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    **{
        f"involvedObject.{f}": _path("involvedObject", f)
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    },
    "reason": _path("reason"),
    "reportingComponent": _path("reportingComponent"),
    "source": _event_source,
    "type": _path("type"),
}

_FIELDS_BY_KIND: dict[str, dict[str, Callable[[Mapping[str, Any]], str]]] = {
    "Pod": _POD_FIELDS,
    "Node": {"spec.unschedulable": _path("spec", "unschedulable", default="false")},
    "Event": _EVENT_FIELDS,
    "Namespace": {"status.phase": _path("status", "phase")},
    "ReplicaSet": {"status.replicas": _path("status", "replicas")},
    "ReplicationController": {"status.replicas": _path("status", "replicas")},
    "PersistentVolumeClaim": {},
    # pkg/registry/resource/resourceslice/strategy.go: ResourceSliceToSelectableFields
    "ResourceSlice": {
        name: _path(*name.split(".")) for name in ("spec.nodeName", "spec.driver", "spec.pool.name")
    },
}


def _unescape_field_value(raw: str) -> str:
    """Upstream's UnescapeValue: '\\,', '\\=' and '\\\\' escape the separators."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\":
            if i + 1 >= len(raw) or raw[i + 1] not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence in {raw!r}")
            out.append(raw[i + 1])
            i += 2
            continue
        if ch in ",=":
            raise SelectorError(f"invalid field selector: unescaped {ch!r} in {raw!r}")
        out.append(ch)
        i += 1
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not escaped by a backslash."""
    terms, current, i = [], [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
            continue
        if text[i] == ",":
            terms.append("".join(current))
            current = []
        else:
            current.append(text[i])
        i += 1
    terms.append("".join(current))
    return terms


def _split_term(term: str) -> tuple[str, str, str]:
    """Upstream's splitTerm: the leftmost operator wins, "!=" and "==" before "="."""
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return term, "", ""


def parse_field_selector(
    text: str, kind: str, label_map: Mapping[str, str] | None = None
) -> FieldSelector:
    """Parse ?fieldSelector= (=, ==, !=; comma-separated ANDs) and check fields for `kind`.

    label_map renames the labels of another API version first (upstream's field label
    conversion); a label it lacks is not supported."""
    requirements: list[FieldRequirement] = []
    if text.strip():
        for term in _split_terms(text):
            field, op, raw = _split_term(term)
            if not op:
                raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
            if label_map is not None:
                if field not in label_map:
                    raise SelectorError(f"field label not supported: {field}")
                field = label_map[field]
            requirements.append(FieldRequirement(field, _unescape_field_value(raw), op == "!="))
    supported = _FIELDS_BY_KIND.get(kind, {})
    for req in requirements:
        if req.field not in _COMMON_FIELDS and req.field not in supported:
            raise SelectorError(f"field label not supported: {req.field}")
    return FieldSelector(tuple(requirements), kind)
