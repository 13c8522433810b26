"""CustomResourceDefinitions (apiextensions.k8s.io/v1) and the custom resources they serve.

kube-apiserver embeds apiextensions-apiserver, which stores CRDs, validates them
(pkg/apis/apiextensions/validation/validation.go), has its naming and establishing controllers
set their status (pkg/controller/status/naming_controller.go, pkg/controller/establish), and then
serves each served version of an established CRD at /apis/GROUP/VERSION/[namespaces/NS/]PLURAL
(pkg/apiserver/customresource_handler.go). kubesim does the same in-line:

- `default_crd`, `validate_crd` and `set_status` are the CRD's strategy, its validation and its
  controllers, run by api.Api on every CRD write (so a CRD is Established as soon as `kubectl
  apply` returns, where upstream takes a moment);
- `registry_of(store)` derives from the stored CRDs the resources they serve, each a
  ResourceType with `custom=True`; server.py routes, discovery.py lists and api.py serves them.
  It is computed from the store's CRDs (cached per set of stored CRDs), so restarts from
  --data-dir, dry runs and several clusters in one process need no bookkeeping;
- `prepare_object` is the custom resource strategy (customresource/strategy.go): pruning,
  defaulting and schema validation (crd_schema.py), then `metadata.generation` and the status
  subresource's split are Api's generic handling of resources with a status subresource;
- `printer_columns` / `table_rows`: additionalPrinterColumns (tableconvertor.go), their
  JSONPath evaluated as kubectl's restricted form `.a.b[0].c` (validateSimpleJSONPath).

Only the None conversion strategy exists: every version stores the same JSON, the apiVersion is
rewritten (views.py), as upstream's nopConverter does.
"""

from __future__ import annotations

import copy
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from apimachinery.validation import is_dns1035_label, is_dns1123_subdomain
from kubesim import crd_schema
from kubesim.meta import rfc3339
from kubesim.resources import VERBS_ALL, ResourceType
from kubesim.validation_fields import (
    Cause,
    forbidden,
    invalid,
    invalid_each,
    not_supported,
    required,
)

Obj = dict[str, Any]
CRD_GROUP = "apiextensions.k8s.io"
CRD_KEY = f"{CRD_GROUP}/customresourcedefinitions"
SCOPES = ("Cluster", "Namespaced")
# pkg/apis/apiextensions/validation: printerColumnDatatypes, customResourceColumnDefinitionFormats
COLUMN_TYPES = ("date", "integer", "number", "string", "boolean")
COLUMN_FORMATS = ("int32", "int64", "float", "double", "byte", "date", "date-time", "password")
_SIMPLE_JSONPATH = re.compile(r"^(\.[^.\[\]]+|\[\d+\])+$")


class ObjectSource(Protocol):
    def items(self, key: str, namespace: str | None = None) -> list[Obj]: ...


# ---- the CRD: defaults, validation, status ---------------------------------------------------


def default_crd(crd: Obj) -> None:
    """SetDefaults_CustomResourceDefinition(Spec) of apiextensions/v1."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    conversion = spec.setdefault("conversion", {"strategy": "None"})
    if isinstance(conversion, dict):
        conversion.setdefault("strategy", "None")


def _versions(crd: Obj) -> list[Obj]:
    versions = (crd.get("spec") or {}).get("versions")
    return [v for v in versions if isinstance(v, dict)] if isinstance(versions, list) else []


def storage_version(crd: Obj) -> str:
    return next((str(v.get("name")) for v in _versions(crd) if v.get("storage")), "")


def validate_crd(crd: Obj, old: Obj | None) -> list[Cause]:
    """ValidateCustomResourceDefinition (and ...Update) of pkg/apis/apiextensions/validation,
    the rules apiextensions/v1 applies; metadata is validated as every kind's by the caller."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    causes: list[Cause] = []
    group = spec.get("group") or ""
    names: Obj = spec["names"] if isinstance(spec.get("names"), dict) else {}
    name = str((crd.get("metadata") or {}).get("name") or "")
    plural = str(names.get("plural") or "")
    if name and name != f"{plural}.{group}":
        causes.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        causes.append(required("spec.group"))
    elif errs := is_dns1123_subdomain(str(group)):
        causes.append(invalid("spec.group", group, ",".join(errs)))
    elif len(str(group).split(".")) < 2:
        causes.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope") or ""
    if not scope:
        causes.append(required("spec.scope"))
    elif scope not in SCOPES:
        causes.append(not_supported("spec.scope", scope, SCOPES))
    causes += _validate_versions(spec)
    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            causes.append(required(f"spec.names.{key}"))
    causes += _validate_names(names, "spec.names")
    causes += _validate_conversion(spec.get("conversion"))
    if old is not None:
        causes += _validate_update(spec, old.get("spec") or {}, established(old))
    return causes


def _validate_versions(spec: Obj) -> list[Cause]:
    causes: list[Cause] = []
    versions = spec.get("versions")
    versions = versions if isinstance(versions, list) else []
    seen: set[str] = set()
    unique = True
    storage = 0
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not isinstance(version, dict):
            causes.append(invalid(path, version, "must be an object"))
            continue
        version_name = str(version.get("name") or "")
        storage += bool(version.get("storage"))
        unique = unique and version_name not in seen
        seen.add(version_name)
        if errs := is_dns1035_label(version_name):
            causes.append(invalid(f"{path}.name", version_name, ",".join(errs)))
        causes += _validate_version(version, path)
    shown = [v.get("name") for v in versions if isinstance(v, dict)]
    if not unique:
        causes.append(invalid("spec.versions", shown, "must contain unique version names"))
    if storage != 1:
        causes.append(
            invalid(
                "spec.versions", shown, "must have exactly one version marked as storage version"
            )
        )
    return causes


def _validate_version(version: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    schema = (version.get("schema") or {}).get("openAPIV3Schema")
    schema_path = f"{path}.schema.openAPIV3Schema"
    subresources = version.get("subresources") or {}
    if not isinstance(schema, dict):
        causes.append(required(schema_path, "schemas are required"))
    else:
        causes += _validate_schema(schema, schema_path)
        if "status" in subresources and schema.get("type") not in (None, "object"):
            causes.append(
                invalid(
                    f"{schema_path}.type",
                    schema.get("type"),
                    'only "object" is '
                    "allowed as the type at the root of the schema if the status "
                    "subresource is enabled",
                )
            )
    scale = subresources.get("scale")
    if isinstance(scale, dict):
        for key in ("specReplicasPath", "statusReplicasPath"):
            value = scale.get(key)
            if not value:
                causes.append(required(f"{path}.subresources.scale.{key}"))
            elif not _SIMPLE_JSONPATH.match(str(value)):
                causes.append(
                    invalid(
                        f"{path}.subresources.scale.{key}",
                        value,
                        "should be a json path under .spec or .status",
                    )
                )
    for i, column in enumerate(version.get("additionalPrinterColumns") or []):
        causes += _validate_column(column, f"{path}.additionalPrinterColumns[{i}]")
    return causes


def _validate_schema(schema: Obj, path: str) -> list[Cause]:
    """The checks of ValidateCustomResourceDefinitionOpenAPISchema kubesim makes, then
    structurality (a v1 CRD's schema must be structural)."""
    causes: list[Cause] = []
    causes += _openapi_rules(schema, path)
    causes += crd_schema.validate_structural(schema, path)
    return causes


def _openapi_rules(s: Any, path: str) -> list[Cause]:
    if not isinstance(s, dict):
        return []
    causes: list[Cause] = []
    if s.get("uniqueItems") is True:
        causes.append(
            forbidden(
                f"{path}.uniqueItems",
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    for key in (
        "$ref",
        "id",
        "definitions",
        "patternProperties",
        "dependencies",
        "additionalItems",
    ):
        if key in s:
            causes.append(forbidden(f"{path}.{key}", f"{key} is not supported"))
    additional = s.get("additionalProperties")
    if additional is not None and s.get("properties") and additional is not True:
        causes.append(
            forbidden(
                f"{path}.additionalProperties",
                "additionalProperties and properties are mutual exclusive",
            )
        )
    if isinstance(additional, dict):
        causes += _openapi_rules(additional, f"{path}.additionalProperties")
    for name, prop in (s.get("properties") or {}).items():
        causes += _openapi_rules(prop, f"{path}.properties[{name}]")
    if isinstance(s.get("items"), dict):
        causes += _openapi_rules(s["items"], f"{path}.items")
    if "default" in s and s.get("default") is not None:
        default = copy.deepcopy(s["default"])
        for cause in crd_schema.validate(default, {k: v for k, v in s.items() if k != "default"}):
            causes.append(invalid(f"{path}.default", s["default"], cause.error()))
    return causes


def _validate_column(column: Any, path: str) -> list[Cause]:
    if not isinstance(column, dict):
        return [invalid(path, column, "must be an object")]
    causes: list[Cause] = []
    if not column.get("name"):
        causes.append(required(f"{path}.name"))
    kinds = ",".join(sorted(COLUMN_TYPES))
    if not column.get("type"):
        causes.append(required(f"{path}.type", f"must be one of {kinds}"))
    elif column["type"] not in COLUMN_TYPES:
        causes.append(invalid(f"{path}.type", column["type"], f"must be one of {kinds}"))
    if column.get("format") and column["format"] not in COLUMN_FORMATS:
        causes.append(
            invalid(
                f"{path}.format",
                column["format"],
                f"must be one of {','.join(sorted(COLUMN_FORMATS))}",
            )
        )
    json_path = column.get("jsonPath") or ""
    if not json_path:
        causes.append(required(f"{path}.jsonPath"))
    elif not _SIMPLE_JSONPATH.match(str(json_path)):
        causes.append(invalid(f"{path}.jsonPath", json_path, "must be a simple json path"))
    return causes


def _validate_names(names: Obj, path: str) -> list[Cause]:
    """ValidateCustomResourceDefinitionNames."""
    causes: list[Cause] = []
    for key in ("plural", "singular"):
        value = str(names.get(key) or "")
        if value:
            causes += [
                invalid(f"{path}.{key}", value, ",".join(errs))
                for errs in [is_dns1035_label(value)]
                if errs
            ]
    for key in ("kind", "listKind"):
        value = str(names.get(key) or "")
        if value and (errs := is_dns1035_label(value.lower())):
            causes.append(
                invalid(
                    f"{path}.{key}",
                    value,
                    "may have mixed case, but should otherwise match: " + ",".join(errs),
                )
            )
    for key in ("shortNames", "categories"):
        for i, value in enumerate(names.get(key) or []):
            causes += [
                invalid(f"{path}.{key}[{i}]", value, ",".join(errs))
                for errs in [is_dns1035_label(str(value))]
                if errs
            ]
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        causes.append(
            invalid(f"{path}.listKind", names["listKind"], "kind and listKind may not be the same")
        )
    return causes


def _validate_conversion(conversion: Any) -> list[Cause]:
    if not isinstance(conversion, dict):
        return []
    strategy = conversion.get("strategy") or ""
    if not strategy:
        return [required("spec.conversion.strategy")]
    if strategy not in ("None", "Webhook"):
        return [not_supported("spec.conversion.strategy", strategy, ("None", "Webhook"))]
    if strategy == "Webhook":  # kubesim calls no webhooks: refused rather than ignored
        return [not_supported("spec.conversion.strategy", strategy, ("None",))]
    return []


def _validate_update(spec: Obj, old_spec: Obj, was_established: bool) -> list[Cause]:
    causes: list[Cause] = []
    immutable = [("spec.group", ("group",)), ("spec.names.plural", ("names", "plural"))]
    if was_established:
        immutable += [("spec.scope", ("scope",)), ("spec.names.kind", ("names", "kind"))]
    for path, keys in immutable:
        new, old = _dig(spec, keys), _dig(old_spec, keys)
        if new != old:
            causes += invalid_each(path, new, ["field is immutable"])
    return causes


def _dig(obj: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def established(crd: Obj) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in conditions
        if isinstance(c, dict)
    )


def _names_in_use(crd: Obj, others: list[Obj]) -> str:
    """The naming controller's conflict check: the message when a name of `crd` is taken by
    another CRD of its group (naming_controller.go, calculateNamesAndConditions)."""
    spec = crd.get("spec") or {}
    group, names = spec.get("group"), spec.get("names") or {}
    taken_resources: set[Any] = set()
    taken_kinds: set[Any] = set()
    for other in others:
        if other["metadata"]["name"] == crd["metadata"]["name"]:
            continue
        other_spec = other.get("spec") or {}
        if other_spec.get("group") != group:
            continue
        accepted = (other.get("status") or {}).get("acceptedNames") or {}
        taken_resources |= {
            accepted.get("plural"),
            accepted.get("singular"),
            *(accepted.get("shortNames") or []),
        }
        taken_kinds |= {accepted.get("kind"), accepted.get("listKind")}
    for value in (names.get("plural"), names.get("singular"), *(names.get("shortNames") or [])):
        if value in taken_resources:
            return f'"{value}" is already in use'
    for value in (names.get("kind"), names.get("listKind")):
        if value in taken_kinds:
            return f'"{value}" is already in use'
    return ""


def set_status(crd: Obj, old: Obj | None, others: list[Obj], now: float) -> None:
    """What the naming and establishing controllers and the strategy write into the status:
    acceptedNames, the NamesAccepted and Established conditions, storedVersions."""
    status = crd.get("status")
    status = dict(status) if isinstance(status, dict) else {}
    spec = crd.get("spec") or {}
    conflict = _names_in_use(crd, others)
    previous = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    if conflict:
        status.setdefault("acceptedNames", {"plural": "", "kind": ""})
        names_accepted = ("False", "NameConflict", conflict)
    else:
        status["acceptedNames"] = copy.deepcopy(spec.get("names") or {})
        names_accepted = ("True", "NoConflicts", "no conflicts found")
    if established(crd) or (old is not None and established(old)):
        establish = ("True", "InitialNamesAccepted", "the initial names have been accepted")
    elif conflict:
        establish = ("False", "NotAccepted", "not all names are accepted")
    else:
        establish = ("True", "InitialNamesAccepted", "the initial names have been accepted")
    conditions = []
    for kind, (state, reason, message) in (
        ("NamesAccepted", names_accepted),
        ("Established", establish),
    ):
        before = previous.get(kind) or {}
        since = before.get("lastTransitionTime") if before.get("status") == state else None
        conditions.append(
            {
                "type": kind,
                "status": state,
                "lastTransitionTime": since or rfc3339(now),
                "reason": reason,
                "message": message,
            }
        )
    status["conditions"] = conditions
    stored = list(status.get("storedVersions") or [])
    current = storage_version(crd)
    if current and current not in stored:
        stored.append(current)
    status["storedVersions"] = stored
    crd["status"] = status


# ---- the resources established CRDs serve ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class CustomVersion:
    """One served version of a CRD: the resource and what its requests apply."""

    resource: ResourceType
    crd_name: str
    schema: Obj
    columns: tuple[Obj, ...]
    scale: Obj | None


@dataclass(slots=True)
class Registry:
    versions: dict[tuple[str, str, str], CustomVersion] = field(default_factory=dict)

    def lookup(self, group: str, version: str, plural: str) -> CustomVersion | None:
        return self.versions.get((group, version, plural))

    def resources(self) -> list[ResourceType]:
        return [v.resource for v in self.versions.values()]

    def by_key(self, key: str) -> list[CustomVersion]:
        return [v for v in self.versions.values() if v.resource.key == key]


def _registry(crds: list[Obj]) -> Registry:
    registry = Registry()
    for crd in crds:
        if not established(crd) or (crd["metadata"].get("deletionTimestamp")):
            continue
        spec = crd.get("spec") or {}
        names = (crd.get("status") or {}).get("acceptedNames") or spec.get("names") or {}
        stored_in = storage_version(crd)
        for version in _versions(crd):
            if not version.get("served"):
                continue
            subresources = version.get("subresources") or {}
            resource = ResourceType(
                str(spec.get("group")),
                str(version.get("name")),
                str(names.get("kind")),
                str(names.get("plural")),
                str(names.get("singular") or str(names.get("kind")).lower()),
                spec.get("scope") == "Namespaced",
                tuple(names.get("shortNames") or ()),
                ("status",) if "status" in subresources else (),
                tuple(names.get("categories") or ()),
                VERBS_ALL,
                custom=True,
                storage_version=stored_in,
                custom_list_kind=str(names.get("listKind") or ""),
            )
            registry.versions[(resource.group, resource.version, resource.plural)] = CustomVersion(
                resource,
                crd["metadata"]["name"],
                (version.get("schema") or {}).get("openAPIV3Schema") or {},
                tuple(
                    c for c in version.get("additionalPrinterColumns") or [] if isinstance(c, dict)
                ),
                subresources.get("scale") if isinstance(subresources.get("scale"), dict) else None,
            )
    return registry


# stored objects are immutable and replaced on every write, so the identities of the stored
# CRDs name their contents; each entry keeps its CRDs alive, so no identity is reused meanwhile
_CACHE: OrderedDict[tuple[int, ...], tuple[list[Obj], Registry]] = OrderedDict()
_CACHE_SIZE = 32


def registry_of(source: ObjectSource) -> Registry:
    """The custom resources the CRDs in `source` serve (cached per set of stored CRDs)."""
    crds = source.items(CRD_KEY)
    signature = tuple(id(crd) for crd in crds)
    found = _CACHE.get(signature)
    if found is None:
        found = (crds, _registry(crds))
        _CACHE[signature] = found
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(signature)
    return found[1]


def version_of(source: ObjectSource, resource: ResourceType) -> CustomVersion | None:
    return registry_of(source).lookup(resource.group, resource.version, resource.plural)


# ---- custom objects ----------------------------------------------------------------------------


def prepare_object(version: CustomVersion, obj: Obj) -> list[str]:
    """Prune and default a custom object in place (the decoder's part); returns the pruned
    fields' paths, which ?fieldValidation reports."""
    pruned = crd_schema.prune(obj, version.schema)
    crd_schema.apply_defaults(obj, version.schema)
    return pruned


def prune_preview(version: CustomVersion, obj: Obj) -> list[str]:
    """The paths pruning would drop from `obj`, which is left as it is."""
    return crd_schema.prune(copy.deepcopy(obj), version.schema)


def validate_object(version: CustomVersion, obj: Obj) -> list[Cause]:
    """The schema's value validations (metadata is checked by the caller as every kind's)."""
    return crd_schema.validate(obj, version.schema)


# ---- printer columns ---------------------------------------------------------------------------


def _simple_path(obj: Any, json_path: str) -> Any:
    for token in re.findall(r"\.([^.\[\]]+)|\[(\d+)\]", json_path):
        key, index = token
        if key:
            obj = obj.get(key) if isinstance(obj, dict) else None
        else:
            obj = obj[int(index)] if isinstance(obj, list) and int(index) < len(obj) else None
        if obj is None:
            return None
    return obj


_NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
# a CRD without additionalPrinterColumns shows its objects' age (crdHandler's default column)
_AGE_COLUMN: Obj = {
    "name": "Age",
    "type": "date",
    "jsonPath": ".metadata.creationTimestamp",
    "description": "CreationTimestamp is a timestamp representing the server time when this "
    "object was created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
}


def _columns(version: CustomVersion) -> tuple[Obj, ...]:
    return version.columns or (_AGE_COLUMN,)


def column_definitions(version: CustomVersion) -> list[Obj]:
    """tableconvertor.New: Name, then the CRD's additionalPrinterColumns (or Age)."""
    definitions: list[Obj] = [
        {
            "name": "Name",
            "type": "string",
            "format": "name",
            "description": _NAME_DESCRIPTION,
            "priority": 0,
        }
    ]
    for column in _columns(version):
        definitions.append(
            {
                "name": column.get("name"),
                "type": column.get("type"),
                "format": column.get("format") or "",
                "description": column.get("description") or "",
                "priority": int(column.get("priority") or 0),
            }
        )
    return definitions


def row_cells(version: CustomVersion, obj: Obj, age: Callable[[Any], str]) -> list[Any]:
    """One Table row: the name, then each column's cell as tableconvertor.go's cellForType
    makes it (None when the path is absent or the value is not of the column's type); `age`
    renders a date as kubectl shows ages."""
    cells: list[Any] = [(obj.get("metadata") or {}).get("name") or ""]
    for column in _columns(version):
        value = _simple_path(obj, str(column.get("jsonPath") or ""))
        kind = column.get("type")
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if value is None:
            cells.append(None)
        elif kind == "string":
            cells.append(_printed(value))
        elif kind == "date":
            cells.append(age(value) if isinstance(value, str) else None)
        elif kind == "integer":
            cells.append(value if isinstance(value, int) and number else None)
        elif kind == "number":
            cells.append(value if number else None)
        elif kind == "boolean":
            cells.append(value if isinstance(value, bool) else None)
        else:
            cells.append(None)
    return cells


def _printed(value: Any) -> str:
    """A value as the JSONPath printer prints it."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return orjson.dumps(value).decode() if isinstance(value, (dict, list)) else str(value)
