"""Resources served as views of another resource's storage.

A real API server stores events.k8s.io/v1 Events and core/v1 Events as one internal type in one
etcd prefix, converting on every read and write. kubesim keeps them in the core/v1 form and
converts here, so an event written through either API is listed and watched through both:
the scheduler writes events.k8s.io/v1 Events and `kubectl describe` reads core/v1 ones.

Field correspondences are upstream's pkg/apis/events/v1/conversion.go (Convert_v1_Event_To_
core_Event and back; the internal ReportingController is core/v1's `reportingComponent`), and
field selectors are renamed by its AddFieldLabelConversionsForEvent table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubesim.resources import ResourceType

Obj = dict[str, Any]
Converter = Callable[[Obj], Obj]

EVENTS_V1_KEY = "events.k8s.io/events"

# events.k8s.io/v1 field label -> the core/v1 selectable field it reads
EVENTS_V1_FIELD_LABELS: Mapping[str, str] = {
    "reason": "reason",
    "regarding.kind": "involvedObject.kind",
    "regarding.namespace": "involvedObject.namespace",
    "regarding.name": "involvedObject.name",
    "regarding.uid": "involvedObject.uid",
    "regarding.apiVersion": "involvedObject.apiVersion",
    "regarding.resourceVersion": "involvedObject.resourceVersion",
    "regarding.fieldPath": "involvedObject.fieldPath",
    "reportingController": "reportingComponent",
    "source": "source",
    "type": "type",
    "metadata.namespace": "metadata.namespace",
    "metadata.name": "metadata.name",
}

# fields with the same name and meaning in both versions, copied when present
_SHARED = ("reason", "type", "action", "series", "related")


def _copy_present(source: Obj, target: Obj, names: tuple[str, ...]) -> None:
    for name in names:
        value = source.get(name)
        if value not in (None, "", {}):
            target[name] = value


def core_to_events_v1(event: Obj) -> Obj:
    """A stored core/v1 Event as events.k8s.io/v1 (Convert_core_Event_To_v1_Event)."""
    out: Obj = {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": event.get("metadata") or {},
        "eventTime": event.get("eventTime"),
    }
    _copy_present(event, out, _SHARED)
    if event.get("reportingComponent"):
        out["reportingController"] = event["reportingComponent"]
    if event.get("reportingInstance"):
        out["reportingInstance"] = event["reportingInstance"]
    out["regarding"] = event.get("involvedObject") or {}
    if event.get("message"):
        out["note"] = event["message"]
    out["deprecatedSource"] = event.get("source") or {}
    out["deprecatedFirstTimestamp"] = event.get("firstTimestamp")
    out["deprecatedLastTimestamp"] = event.get("lastTimestamp")
    if event.get("count"):
        out["deprecatedCount"] = event["count"]
    return out


def events_v1_to_core(event: Obj) -> Obj:
    """An events.k8s.io/v1 Event in its stored core/v1 form (Convert_v1_Event_To_core_Event)."""
    out: Obj = {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": event.get("metadata") or {},
        "involvedObject": event.get("regarding") or {},
    }
    _copy_present(event, out, ("reason",))
    if event.get("note"):
        out["message"] = event["note"]
    out["source"] = event.get("deprecatedSource") or {}
    out["firstTimestamp"] = event.get("deprecatedFirstTimestamp")
    out["lastTimestamp"] = event.get("deprecatedLastTimestamp")
    if event.get("deprecatedCount"):
        out["count"] = event["deprecatedCount"]
    _copy_present(event, out, ("type",))
    out["eventTime"] = event.get("eventTime")
    _copy_present(event, out, ("series", "action", "related"))
    out["reportingComponent"] = event.get("reportingController") or ""
    out["reportingInstance"] = event.get("reportingInstance") or ""
    return out


_TO_VIEW: Mapping[str, Converter] = {EVENTS_V1_KEY: core_to_events_v1}
_FROM_VIEW: Mapping[str, Converter] = {EVENTS_V1_KEY: events_v1_to_core}
_FIELD_LABELS: Mapping[str, Mapping[str, str]] = {EVENTS_V1_KEY: EVENTS_V1_FIELD_LABELS}


def is_view(resource: ResourceType) -> bool:
    return bool(resource.stored_as)


def _with_api_version(api_version: str) -> Converter:
    """A custom object in another version of its CRD: the None conversion strategy rewrites
    apiVersion only (apiextensions-apiserver's nopConverter)."""

    def convert(obj: Obj) -> Obj:
        return {**obj, "apiVersion": api_version}

    return convert


def _other_custom_version(resource: ResourceType) -> bool:
    return resource.custom and resource.version != resource.storage_version


def renderer(resource: ResourceType) -> Converter | None:
    """stored form -> the resource's form; None when they are the same."""
    if _other_custom_version(resource):
        return _with_api_version(resource.api_version)
    return _TO_VIEW.get(resource.key) if is_view(resource) else None


def to_view(resource: ResourceType, stored: Obj) -> Obj:
    render = renderer(resource)
    return stored if render is None else render(stored)


def from_view(resource: ResourceType, obj: Obj) -> Obj:
    """The resource's form -> the stored form (identity for resources that are not views)."""
    if _other_custom_version(resource):
        return _with_api_version(f"{resource.group}/{resource.storage_version}")(obj)
    if not is_view(resource):
        return obj
    return _FROM_VIEW[resource.key](obj)


def field_labels(resource: ResourceType) -> Mapping[str, str] | None:
    """How a view's field selector labels map to the stored kind's; None: used as they are."""
    return _FIELD_LABELS.get(resource.key) if is_view(resource) else None
