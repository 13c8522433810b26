"""kubesim.tables: Tables as the apiserver renders them for `kubectl get`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubesim import tables
from kubesim.resources import lookup

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
POD = lookup("", "v1", "pods")
NODE = lookup("", "v1", "nodes")
H, M, S, D, Y = 3600, 60, 1, 86400, 365 * 86400
MS = 0.001


def ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


# Upstream: staging/src/k8s.io/apimachinery/pkg/util/duration/duration_test.go
@pytest.mark.parametrize(
    ("seconds", "want"),
    [
        (1, "1s"),
        (70, "70s"),
        (190, "3m10s"),
        (70 * M, "70m"),
        (47 * H, "47h"),
        (49 * H, "2d1h"),
        ((8 * 24 + 2) * H, "8d"),
        (367 * D, "367d"),
        (2 * Y + 25 * H, "2y1d"),
        (8 * Y + 2 * H, "8y"),
        (-2, "<invalid>"),
        (-2 + 1e-9, "0s"),
        (0, "0s"),
        (1 - MS, "0s"),
        (2 * M - MS, "119s"),
        (2 * M, "2m"),
        (2 * M + 1, "2m1s"),
        (10 * M - MS, "9m59s"),
        (10 * M, "10m"),
        (10 * M + 1, "10m"),
        (3 * H - MS, "179m"),
        (3 * H, "3h"),
        (3 * H + M, "3h1m"),
        (8 * H - MS, "7h59m"),
        (8 * H, "8h"),
        (8 * H + 59 * M, "8h"),
        (2 * D - MS, "47h"),
        (2 * D, "2d"),
        (2 * D + H, "2d1h"),
        (8 * D - MS, "7d23h"),
        (8 * D, "8d"),
        (8 * D + 23 * H, "8d"),
        (2 * Y - MS, "729d"),
        (2 * Y, "2y"),
        (2 * Y + D, "2y1d"),
        (3 * Y, "3y"),
        (8 * Y - MS, "7y364d"),
        (8 * Y, "8y"),
        (9 * Y, "9y"),
    ],
)
def test_human_duration_matches_upstream(seconds: float, want: str) -> None:
    assert tables.human_duration(seconds) == want


@pytest.mark.parametrize(
    ("accept", "want"),
    [
        (
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
            "g=meta.k8s.io,application/json",
            True,
        ),
        ("application/json; as=Table; g=meta.k8s.io; v=v1", True),
        ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", False),
        ("application/json", False),
        ("", False),
        ("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", False),
    ],
)
def test_wants_table(accept: str, want: bool) -> None:
    assert tables.wants_table(accept) is want


def pod(**parts: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "creationTimestamp": ago(90)},
        "spec": {"containers": [{"name": "c"}]},
        "status": {},
    }
    for key, value in parts.items():
        base[key] = {**base[key], **value}
    return base


RUNNING = {"name": "c", "ready": True, "restartCount": 0, "state": {"running": {}}}


# Cases follow upstream's TestPrintPod* in pkg/printers/internalversion/printers_test.go.
@pytest.mark.parametrize(
    ("obj", "cells"),
    [
        (pod(), ["web", "0/1", "", "0", "90s", "<none>", "<none>", "<none>", "<none>"]),
        (pod(status={"phase": "Pending"}), ["web", "0/1", "Pending", "0", "90s"]),
        (
            pod(
                spec={"nodeName": "n1", "containers": [{"name": "c"}]},
                status={
                    "phase": "Running",
                    "podIPs": [{"ip": "10.0.0.5"}],
                    "containerStatuses": [RUNNING],
                },
            ),
            ["web", "1/1", "Running", "0", "90s", "10.0.0.5", "n1", "<none>", "<none>"],
        ),
        (
            pod(
                status={
                    "phase": "Running",
                    "containerStatuses": [
                        {
                            "name": "c",
                            "restartCount": 3,
                            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                            "lastState": {"terminated": {"finishedAt": ago(300)}},
                        }
                    ],
                }
            ),
            ["web", "0/1", "CrashLoopBackOff", "3 (5m ago)", "90s"],
        ),
        (
            pod(
                metadata={"deletionTimestamp": ago(1)},
                status={"phase": "Running", "containerStatuses": [RUNNING]},
            ),
            ["web", "1/1", "Terminating", "0", "90s"],
        ),
        (
            pod(
                metadata={"deletionTimestamp": ago(1)},
                status={"phase": "Unknown", "reason": "NodeLost"},
            ),
            ["web", "0/1", "Unknown", "0", "90s"],
        ),
        (
            pod(
                status={
                    "phase": "Succeeded",
                    "containerStatuses": [
                        {
                            "name": "c",
                            "state": {"terminated": {"reason": "Completed", "exitCode": 0}},
                        }
                    ],
                }
            ),
            ["web", "0/1", "Completed", "0", "90s"],
        ),
        (
            pod(
                status={
                    "phase": "Failed",
                    "containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": 2}}}],
                }
            ),
            ["web", "0/1", "ExitCode:2", "0", "90s"],
        ),
        (
            pod(
                spec={
                    "initContainers": [{"name": "i1"}, {"name": "i2"}],
                    "containers": [{"name": "c"}],
                },
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [
                        {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
                        {"name": "i2", "state": {"running": {}}},
                    ],
                },
            ),
            ["web", "0/1", "Init:1/2", "0", "90s"],
        ),
        (
            pod(
                spec={"initContainers": [{"name": "i1"}], "containers": [{"name": "c"}]},
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [
                        {"name": "i1", "state": {"waiting": {"reason": "ImagePullBackOff"}}}
                    ],
                },
            ),
            ["web", "0/1", "Init:ImagePullBackOff", "0", "90s"],
        ),
        (
            pod(
                spec={
                    "initContainers": [{"name": "side", "restartPolicy": "Always"}],
                    "containers": [{"name": "c"}],
                },
                status={
                    "phase": "Running",
                    "conditions": [{"type": "Initialized", "status": "True"}],
                    "initContainerStatuses": [
                        {"name": "side", "started": True, "ready": True, "state": {"running": {}}}
                    ],
                    "containerStatuses": [RUNNING],
                },
            ),
            ["web", "2/2", "Running", "0", "90s"],
        ),
        (
            pod(
                status={
                    "phase": "Pending",
                    "conditions": [
                        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
                    ],
                }
            ),
            ["web", "0/1", "SchedulingGated", "0", "90s"],
        ),
        (
            pod(
                spec={
                    "readinessGates": [{"conditionType": "a"}, {"conditionType": "b"}],
                    "containers": [{"name": "c"}],
                },
                status={
                    "phase": "Running",
                    "nominatedNodeName": "n2",
                    "conditions": [
                        {"type": "a", "status": "True"},
                        {"type": "b", "status": "False"},
                    ],
                },
            ),
            ["web", "0/1", "Running", "0", "90s", "<none>", "<none>", "n2", "1/2"],
        ),
    ],
)
def test_pod_rows(obj: dict[str, Any], cells: list[Any]) -> None:
    table = tables.to_table(POD, [obj], "None", now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
        "IP",
        "Node",
        "Nominated Node",
        "Readiness Gates",
    ]
    assert [c["priority"] for c in table["columnDefinitions"]] == [0] * 5 + [1] * 4
    assert table["rows"][0]["cells"][: len(cells)] == cells


def test_completed_pod_row_has_completed_condition() -> None:
    table = tables.to_table(POD, [pod(status={"phase": "Succeeded"})], "None", now=NOW)
    assert table["rows"][0]["conditions"][0]["type"] == "Completed"


def node(
    unschedulable: bool = False, ready: str | None = "True", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "creationTimestamp": ago(3 * D), "labels": labels or {}},
        "spec": {"unschedulable": unschedulable},
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "False"}, *conditions],
            "addresses": [
                {"type": "InternalIP", "address": "10.1.0.1"},
                {"type": "Hostname", "address": "n1"},
            ],
            "nodeInfo": {"kubeletVersion": "v1.30.0", "osImage": "kubesim"},
        },
    }


@pytest.mark.parametrize(
    ("obj", "cells"),
    [
        (
            node(),
            [
                "n1",
                "Ready",
                "<none>",
                "3d",
                "v1.30.0",
                "10.1.0.1",
                "<none>",
                "kubesim",
                "<unknown>",
                "<unknown>",
            ],
        ),
        (node(unschedulable=True), ["n1", "Ready,SchedulingDisabled"]),
        (node(ready="False"), ["n1", "NotReady"]),
        (node(ready="Unknown"), ["n1", "NotReady"]),
        (node(ready=None, unschedulable=True), ["n1", "Unknown,SchedulingDisabled"]),
        (
            node(
                labels={
                    "node-role.kubernetes.io/control-plane": "",
                    "node-role.kubernetes.io/": "x",
                    "kubernetes.io/role": "edge",
                }
            ),
            ["n1", "Ready", "control-plane,edge"],
        ),
    ],
)
def test_node_rows(obj: dict[str, Any], cells: list[Any]) -> None:
    table = tables.to_table(NODE, [obj], "None", now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]][:5] == [
        "Name",
        "Status",
        "Roles",
        "Age",
        "Version",
    ]
    assert table["rows"][0]["cells"][: len(cells)] == cells


@pytest.mark.parametrize(
    ("plural", "group", "obj", "columns", "cells"),
    [
        (
            "namespaces",
            "",
            {
                "metadata": {"name": "default", "creationTimestamp": ago(60)},
                "status": {"phase": "Active"},
            },
            ["Name", "Status", "Age"],
            ["default", "Active", "60s"],
        ),
        (
            "leases",
            "coordination.k8s.io",
            {
                "metadata": {"name": "n1", "creationTimestamp": ago(5)},
                "spec": {"holderIdentity": "n1"},
            },
            ["Name", "Holder", "Age"],
            ["n1", "n1", "5s"],
        ),
        (
            "priorityclasses",
            "scheduling.k8s.io",
            {
                "metadata": {"name": "high", "creationTimestamp": ago(5)},
                "value": 1000,
                "globalDefault": False,
                "preemptionPolicy": "PreemptLowerPriority",
            },
            ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"],
            ["high", 1000, False, "5s", "PreemptLowerPriority"],
        ),
        (
            "storageclasses",
            "storage.k8s.io",
            {"metadata": {"name": "fast", "creationTimestamp": ago(5)}},
            ["Name", "Age"],
            ["fast", "5s"],
        ),
        (
            "configmaps",
            "",
            {"metadata": {"name": "cfg"}, "data": {"a": "1", "b": "2"}},
            ["Name", "Data", "Age"],
            ["cfg", 2, "<unknown>"],
        ),
        (
            "events",
            "",
            {
                "metadata": {"name": "web.1"},
                "type": "Warning",
                "reason": "FailedScheduling",
                "involvedObject": {"kind": "Pod", "name": "web"},
                "message": " 0/3 nodes ",
                "firstTimestamp": ago(120),
                "lastTimestamp": ago(30),
                "count": 4,
                "source": {"component": "aiosched"},
            },
            [
                "Last Seen",
                "Type",
                "Reason",
                "Object",
                "Subobject",
                "Source",
                "Message",
                "First Seen",
                "Count",
                "Name",
            ],
            [
                "30s",
                "Warning",
                "FailedScheduling",
                "pod/web",
                "",
                "aiosched",
                "0/3 nodes",
                "2m",
                4,
                "web.1",
            ],
        ),
        (
            "events",
            "events.k8s.io",
            {
                "apiVersion": "events.k8s.io/v1",
                "metadata": {"name": "web.2"},
                "type": "Normal",
                "reason": "Scheduled",
                "regarding": {"kind": "Pod", "name": "web"},
                "note": "assigned",
                "eventTime": ago(10),
                "reportingController": "aiosched",
                "reportingInstance": "aiosched-1",
            },
            [
                "Last Seen",
                "Type",
                "Reason",
                "Object",
                "Subobject",
                "Source",
                "Message",
                "First Seen",
                "Count",
                "Name",
            ],
            [
                "10s",
                "Normal",
                "Scheduled",
                "pod/web",
                "",
                "aiosched, aiosched-1",
                "assigned",
                "10s",
                1,
                "web.2",
            ],
        ),
        # the scheduler's events.k8s.io/v1 event read through core/v1: no source, the
        # reporting controller is core/v1's reportingComponent (kubectl get events -o wide)
        (
            "events",
            "",
            {
                "apiVersion": "v1",
                "metadata": {"name": "web.3"},
                "type": "Normal",
                "reason": "Scheduled",
                "involvedObject": {"kind": "Pod", "name": "web"},
                "message": "assigned",
                "eventTime": ago(10),
                "source": {},
                "reportingComponent": "default-scheduler",
                "reportingInstance": "default-scheduler-host1",
            },
            [
                "Last Seen",
                "Type",
                "Reason",
                "Object",
                "Subobject",
                "Source",
                "Message",
                "First Seen",
                "Count",
                "Name",
            ],
            [
                "10s",
                "Normal",
                "Scheduled",
                "pod/web",
                "",
                "default-scheduler, default-scheduler-host1",
                "assigned",
                "10s",
                1,
                "web.3",
            ],
        ),
    ],
)
def test_other_rows(
    plural: str, group: str, obj: dict[str, Any], columns: list[str], cells: list[Any]
) -> None:
    resource = lookup(group, "v1", plural)
    assert resource is not None
    table = tables.to_table(resource, [obj], "None", now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == columns
    assert table["rows"][0]["cells"] == cells


@pytest.mark.parametrize(
    ("include", "want_kind"),
    [
        ("Metadata", "PartialObjectMetadata"),
        ("Object", "Pod"),
        ("None", None),
        ("", "PartialObjectMetadata"),
    ],
)
def test_include_object(include: str, want_kind: str | None) -> None:
    obj = pod(metadata={"labels": {"app": "web"}})
    table = tables.to_table(POD, [obj], include, now=NOW)
    row_object = table["rows"][0]["object"]
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    if want_kind is None:
        assert row_object is None
    else:
        assert row_object["kind"] == want_kind
        assert row_object["metadata"]["labels"] == {"app": "web"}


def test_empty_list_still_has_columns() -> None:
    table = tables.to_table(POD, [], "Metadata", now=NOW)
    assert table["rows"] == [] and len(table["columnDefinitions"]) == 9


@pytest.mark.parametrize(
    ("event", "kind"),
    [
        ({"type": "ADDED", "object": pod(metadata={"resourceVersion": "7"})}, "Table"),
        ({"type": "DELETED", "object": pod()}, "Table"),
        (
            {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "9"}}},
            "Pod",
        ),
        ({"type": "ERROR", "object": {"kind": "Status", "code": 410}}, "Status"),
    ],
)
def test_watch_event_as_table(event: dict[str, Any], kind: str) -> None:
    import orjson

    line = orjson.dumps(event) + b"\n"
    out = tables.watch_event_as_table(POD, line, "Metadata", now=NOW)
    assert out.endswith(b"\n")
    decoded = orjson.loads(out)
    assert decoded["type"] == event["type"] and decoded["object"]["kind"] == kind
    if kind == "Table":
        assert decoded["object"]["rows"][0]["cells"][0] == "web"
        assert decoded["object"]["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
