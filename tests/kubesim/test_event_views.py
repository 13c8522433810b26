"""core/v1 and events.k8s.io/v1 Events: two APIs over one storage, as upstream keeps them.

Field correspondences are upstream's pkg/apis/events/v1/conversion.go.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import orjson
import pytest

from kubesim import views
from kubesim.events import EventRecorder, Source
from kubesim.store import Store

Kube = Any  # the `kube` fixture (tests/kubesim/conftest.py)
CORE = "/api/v1/namespaces/default/events"
V1 = "/apis/events.k8s.io/v1/namespaces/default/events"
POD_REF = {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u-1", "apiVersion": "v1"}


def scheduler_event(name: str = "web.failed", **extra: Any) -> dict[str, Any]:
    """An event as the scheduler's events.k8s.io/v1 recorder writes it."""
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-host1",
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "regarding": POD_REF,
        "note": "0/2 nodes are available: 2 Insufficient cpu.",
        "type": "Warning",
        **extra,
    }


def kubelet_event(name: str = "web.pulled") -> dict[str, Any]:
    """An event as a core/v1 recorder (kubelet) writes it."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {**POD_REF, "fieldPath": "spec.containers{main}"},
        "reason": "Pulled",
        "message": "Container image already present",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:01:00Z",
        "count": 3,
        "type": "Normal",
    }


@pytest.mark.parametrize(
    ("v1_field", "core_field"),
    [
        ("regarding", "involvedObject"),
        ("note", "message"),
        ("reportingController", "reportingComponent"),
        ("reportingInstance", "reportingInstance"),
        ("eventTime", "eventTime"),
        ("action", "action"),
        ("reason", "reason"),
        ("type", "type"),
    ],
)
def test_events_v1_fields_map_to_core_fields(v1_field: str, core_field: str) -> None:
    event = scheduler_event()
    core = views.events_v1_to_core(event)
    assert core[core_field] == event[v1_field]
    assert views.core_to_events_v1(core)[v1_field] == event[v1_field]


@pytest.mark.parametrize(
    ("core_field", "v1_field"),
    [
        ("involvedObject", "regarding"),
        ("message", "note"),
        ("source", "deprecatedSource"),
        ("firstTimestamp", "deprecatedFirstTimestamp"),
        ("lastTimestamp", "deprecatedLastTimestamp"),
        ("count", "deprecatedCount"),
    ],
)
def test_core_fields_map_to_events_v1_fields(core_field: str, v1_field: str) -> None:
    event = kubelet_event()
    v1 = views.core_to_events_v1(event)
    assert v1[v1_field] == event[core_field]
    assert views.events_v1_to_core(v1)[core_field] == event[core_field]


def test_series_and_related_survive_both_ways() -> None:
    series = {"count": 4, "lastObservedTime": "2026-01-01T00:02:00.000000Z"}
    related = {"kind": "Node", "name": "node-1"}
    event = scheduler_event(series=series, related=related)
    back = views.core_to_events_v1(views.events_v1_to_core(event))
    assert back["series"] == series and back["related"] == related
    assert back == {
        **event,
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    }


async def test_event_written_through_events_v1_reads_as_core(kube: Kube) -> None:
    status, created = await kube.call("POST", V1, scheduler_event())
    assert status == 201, created
    assert created["apiVersion"] == "events.k8s.io/v1" and created["note"].startswith("0/2")
    status, core = await kube.call("GET", f"{CORE}/web.failed")
    assert status == 200
    assert core["apiVersion"] == "v1"
    assert core["involvedObject"] == POD_REF
    assert core["message"] == "0/2 nodes are available: 2 Insufficient cpu."
    assert core["reportingComponent"] == "default-scheduler"
    assert core["reportingInstance"] == "default-scheduler-host1"
    assert core["source"] == {} and core["firstTimestamp"] is None
    assert core["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert core["metadata"]["uid"] == created["metadata"]["uid"]


async def test_event_written_through_core_reads_as_events_v1(kube: Kube) -> None:
    status, _ = await kube.call("POST", CORE, kubelet_event())
    assert status == 201
    status, v1 = await kube.call("GET", f"{V1}/web.pulled")
    assert status == 200
    assert v1["apiVersion"] == "events.k8s.io/v1"
    assert v1["regarding"]["fieldPath"] == "spec.containers{main}"
    assert v1["note"] == "Container image already present"
    assert v1["deprecatedSource"] == {"component": "kubelet", "host": "node-1"}
    assert v1["deprecatedCount"] == 3
    assert "involvedObject" not in v1 and "message" not in v1


@pytest.mark.parametrize(
    ("path", "selector", "expected"),
    [
        # what `kubectl describe pod` sends (core field labels)
        (
            CORE,
            "involvedObject.name=web,involvedObject.namespace=default,"
            "involvedObject.kind=Pod,involvedObject.uid=u-1",
            ["web.failed", "web.pulled"],
        ),
        (CORE, "reportingComponent=default-scheduler", ["web.failed"]),
        (CORE, "source=default-scheduler", ["web.failed"]),  # source falls back to reporting
        (CORE, "source=kubelet", ["web.pulled"]),
        (V1, "regarding.name=web,regarding.kind=Pod", ["web.failed", "web.pulled"]),
        (V1, "reportingController=default-scheduler", ["web.failed"]),
        (V1, "type=Normal", ["web.pulled"]),
        (V1, "reason!=Pulled", ["web.failed"]),
    ],
)
async def test_lists_on_either_api_see_both_writers(
    kube: Kube, path: str, selector: str, expected: list[str]
) -> None:
    await kube.call("POST", V1, scheduler_event())
    await kube.call("POST", CORE, kubelet_event())
    status, listed = await kube.call("GET", path, fieldSelector=selector)
    assert status == 200, listed
    assert [e["metadata"]["name"] for e in listed["items"]] == expected
    assert {e["apiVersion"] for e in listed["items"]} == {
        "v1" if path == CORE else "events.k8s.io/v1"
    }


@pytest.mark.parametrize(
    ("path", "selector"),
    [(V1, "involvedObject.name=web"), (V1, "reportingComponent=x"), (CORE, "regarding.name=web")],
)
async def test_field_labels_of_the_other_api_are_refused(
    kube: Kube, path: str, selector: str
) -> None:
    status, body = await kube.call("GET", path, fieldSelector=selector)
    assert status == 400
    assert "field label not supported" in body["message"]


async def read_watch(kube: Kube, path: str, count: int, **params: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    headers = {"Authorization": "Bearer test-token"}
    async with kube.client.get(path, headers=headers, params={"watch": "1", **params}) as r:
        async with asyncio.timeout(5):
            while len(events) < count:
                line = await r.content.readline()
                if not line:
                    break
                events.append(orjson.loads(line))
    return events


async def test_watches_on_either_api_see_writes_through_the_other(kube: Kube) -> None:
    _, listed = await kube.call("GET", CORE)
    rv = listed["metadata"]["resourceVersion"]
    core_watch = asyncio.create_task(read_watch(kube, CORE, 2, resourceVersion=rv))
    v1_watch = asyncio.create_task(read_watch(kube, V1, 2, resourceVersion=rv))
    await asyncio.sleep(0.05)
    await kube.call("POST", V1, scheduler_event())
    await kube.call("POST", CORE, kubelet_event())
    core_events, v1_events = await core_watch, await v1_watch
    assert [(e["type"], e["object"]["apiVersion"]) for e in core_events] == [
        ("ADDED", "v1"),
        ("ADDED", "v1"),
    ]
    assert core_events[0]["object"]["message"].startswith("0/2 nodes")
    assert [(e["type"], e["object"]["apiVersion"]) for e in v1_events] == [
        ("ADDED", "events.k8s.io/v1"),
        ("ADDED", "events.k8s.io/v1"),
    ]
    assert v1_events[1]["object"]["note"] == "Container image already present"
    # a watch from scratch lists the current state in the watcher's own form
    initial = await read_watch(kube, V1, 2)
    assert [e["object"]["regarding"]["name"] for e in initial] == ["web", "web"]


async def test_series_patch_through_events_v1_updates_the_core_event(kube: Kube) -> None:
    await kube.call("POST", V1, scheduler_event())
    series = {"count": 2, "lastObservedTime": "2026-01-01T00:05:00.000000Z"}
    status, patched = await kube.call(
        "PATCH",
        f"{V1}/web.failed",
        {"series": series},
        content_type="application/merge-patch+json",
    )
    assert status == 200, patched
    assert patched["series"] == series and patched["note"].startswith("0/2")
    _, core = await kube.call("GET", f"{CORE}/web.failed")
    assert core["series"] == series
    assert core["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]


async def test_noop_update_through_the_view_writes_nothing(kube: Kube) -> None:
    _, created = await kube.call("POST", V1, scheduler_event())
    status, updated = await kube.call("PUT", f"{V1}/web.failed", created)
    assert status == 200
    assert updated["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_delete_through_one_api_removes_it_from_both(kube: Kube) -> None:
    await kube.call("POST", CORE, kubelet_event())
    status, deleted = await kube.call("DELETE", f"{V1}/web.pulled")
    assert status == 200 and deleted["apiVersion"] == "events.k8s.io/v1"
    assert (await kube.call("GET", f"{CORE}/web.pulled"))[0] == 404
    status, _ = await kube.call("POST", V1, scheduler_event())
    assert status == 201
    exists = await kube.call("POST", CORE, views.events_v1_to_core(scheduler_event()))
    assert exists[0] == 409  # one name, one object, whichever API creates it


async def test_namespace_deletion_removes_events_once(kube: Kube) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}}
    assert (await kube.call("POST", "/api/v1/namespaces", ns))[0] == 201
    event = {**scheduler_event(), "metadata": {"name": "e", "namespace": "gone"}}
    status, _ = await kube.call("POST", "/apis/events.k8s.io/v1/namespaces/gone/events", event)
    assert status == 201
    status, _ = await kube.call("DELETE", "/api/v1/namespaces/gone")
    assert status == 200
    _, listed = await kube.call("GET", "/api/v1/events")
    assert all(e["metadata"]["namespace"] != "gone" for e in listed["items"])


def test_a_kubesim_controller_event_read_through_events_v1() -> None:
    """What kubesim's in-process core/v1 recorder writes, as events.k8s.io/v1 readers see it:
    reportingComponent becomes reportingController, source and the timestamps the deprecated*
    fields (Convert_core_Event_To_v1_Event)."""
    recorder = EventRecorder(Store(), lambda: 1_767_225_600.0, random.Random(0))
    _, core, _ = recorder.make(
        Source("kubelet", "node-1"),
        {**POD_REF, "fieldPath": "spec.containers{main}"},
        "Normal",
        "Started",
        "Started container main",
    )
    v1 = views.core_to_events_v1(core)
    assert v1["reportingController"] == "kubelet"
    assert v1["reportingInstance"] == "node-1"
    assert v1["deprecatedSource"] == {"component": "kubelet", "host": "node-1"}
    assert (
        v1["deprecatedFirstTimestamp"] == v1["deprecatedLastTimestamp"] == ("2026-01-01T00:00:00Z")
    )
    assert v1["deprecatedCount"] == 1
    assert v1["note"] == "Started container main"
    assert v1["regarding"]["fieldPath"] == "spec.containers{main}"
    back = views.events_v1_to_core(v1)
    assert {
        k: back[k]
        for k in (
            "source",
            "reportingComponent",
            "reportingInstance",
            "count",
            "firstTimestamp",
            "message",
        )
    } == {
        k: core[k]
        for k in (
            "source",
            "reportingComponent",
            "reportingInstance",
            "count",
            "firstTimestamp",
            "message",
        )
    }
