"""The Scheduler with extenders configured, on the embedded cluster (kubesim over HTTPS), with
the extenders served by aiohttp in the same loop. Nothing of the scheduler is faked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp import web
from fake_extender import FakeExtender, node_names
from harness import Api, Harness, running_scheduler


def config(url: str, **fields: Any) -> str:
    lines = [
        "apiVersion: kubescheduler.config.k8s.io/v1",
        "kind: KubeSchedulerConfiguration",
        "extenders:",
        f"- urlPrefix: {url}",
    ]
    lines += [f"  {key}: {value}" for key, value in fields.items()]
    return "\n".join(lines) + "\n"


def condition(pod: dict[str, Any]) -> dict[str, Any]:
    for cond in pod.get("status", {}).get("conditions", []):
        if cond["type"] == "PodScheduled":
            return dict(cond)
    return {}


async def pod_condition(h: Harness, name: str) -> dict[str, Any]:
    async def have() -> dict[str, Any]:
        return condition(await h.api.get_pod(name))

    return dict(await h.wait_for(have, what=f"{name}'s PodScheduled condition"))


async def three_nodes(h: Harness) -> None:
    for name in ("a", "b", "c"):
        await h.api.create_node(name)
    await h.wait_nodes_cached(3)


async def test_filter_excludes_nodes(tmp_path: Path) -> None:
    keep_b = {"filter": lambda args: {"NodeNames": [n for n in node_names(args) if n == "b"]}}
    async with FakeExtender(keep_b) as ext:
        text = config(ext.url, filterVerb="filter", nodeCacheCapable="true")
        async with running_scheduler(tmp_path, text) as h:
            await three_nodes(h)
            for i in range(3):
                await h.api.create_pod(f"p{i}")
            for i in range(3):
                assert await h.wait_bound(f"p{i}") == "b"
            # Plugins (preemption) reach the extenders through the Handle.
            fwk = h.scheduler.profiles["default-scheduler"].framework
            assert [e.name for e in fwk.extenders()] == [ext.url]
    [first, *_] = ext.calls("filter")
    assert sorted(first["NodeNames"]) == ["a", "b", "c"]
    assert first["Nodes"] is None


async def test_prioritize_changes_the_choice(tmp_path: Path) -> None:
    def prefer_c(args: Any) -> Any:
        return [{"Host": n, "Score": 10 if n == "c" else 0} for n in node_names(args)]

    async with FakeExtender({"prioritize": prefer_c}) as ext:
        text = config(ext.url, prioritizeVerb="prioritize", weight=1)
        async with running_scheduler(tmp_path, text) as h:
            await three_nodes(h)
            for i in range(3):
                await h.api.create_pod(f"p{i}")
            assert [await h.wait_bound(f"p{i}") for i in range(3)] == ["c", "c", "c"]
    args = ext.calls("prioritize")[0]
    assert args["NodeNames"] is None
    assert sorted(n["metadata"]["name"] for n in args["Nodes"]["items"]) == ["a", "b", "c"]


async def test_bind_via_extender(tmp_path: Path) -> None:
    holder: dict[str, Api] = {}

    async def bind(args: Any) -> Any:
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": args["PodName"], "uid": args["PodUID"]},
            "target": {"kind": "Node", "name": args["Node"]},
        }
        path = f"/api/v1/namespaces/{args['PodNamespace']}/pods/{args['PodName']}/binding"
        status, body = await holder["api"].request("POST", path, binding)
        return {"Error": "" if status == 201 else str(body)}

    async with (
        FakeExtender({"bind": bind}) as ext,
        running_scheduler(tmp_path, config(ext.url, bindVerb="bind")) as h,
    ):
        holder["api"] = h.api
        await three_nodes(h)
        created = await h.api.create_pod("p")
        node = await h.wait_bound("p")
        events = await h.wait_for(lambda: _scheduled_events(h, "p"), what="Scheduled event for p")
    [call] = ext.calls("bind")
    assert call == {
        "PodName": "p",
        "PodNamespace": "default",
        "PodUID": created["metadata"]["uid"],
        "Node": node,
    }
    assert events[0]["note"] == f"Successfully assigned default/p to {node}"


async def _scheduled_events(h: Harness, name: str) -> list[dict[str, Any]]:
    return [e for e in await h.api.events_for(name) if e.get("reason") == "Scheduled"]


async def test_bind_refused_by_extender_is_retried_not_bound_by_plugins(tmp_path: Path) -> None:
    refuse = {"bind": lambda args: {"Error": "no room at the inn"}}
    async with (
        FakeExtender(refuse) as ext,
        running_scheduler(tmp_path, config(ext.url, bindVerb="bind")) as h,
    ):
        await three_nodes(h)
        await h.api.create_pod("p")
        cond = await pod_condition(h, "p")
        assert (await h.api.get_pod("p"))["spec"].get("nodeName", "") == ""
    assert cond["reason"] == "SchedulerError"
    assert cond["message"] == "no room at the inn"


async def test_failing_extender_fails_the_attempt_with_its_message(tmp_path: Path) -> None:
    offline = {"filter": lambda args: {"Error": "gpu inventory offline"}}
    async with (
        FakeExtender(offline) as ext,
        running_scheduler(tmp_path, config(ext.url, filterVerb="filter")) as h,
    ):
        await three_nodes(h)
        await h.api.create_pod("p")
        cond = await pod_condition(h, "p")
        events = await h.wait_for(lambda: h.api.events_for("p"), what="events")
    assert (cond["status"], cond["reason"]) == ("False", "SchedulerError")
    assert cond["message"] == "gpu inventory offline"
    assert any(e["note"] == "gpu inventory offline" for e in events)


async def test_unreachable_extender_message_names_it(tmp_path: Path) -> None:
    async with FakeExtender({}) as ext:
        url = ext.url  # closed below: nothing listens there any more
    async with running_scheduler(tmp_path, config(url, filterVerb="filter")) as h:
        await three_nodes(h)
        await h.api.create_pod("p")
        cond = await pod_condition(h, "p")
    assert cond["reason"] == "SchedulerError"
    assert cond["message"].startswith(f'Post "{url}/filter": ')


async def test_ignorable_failing_extender_is_skipped(tmp_path: Path) -> None:
    async with FakeExtender({"filter": lambda args: web.Response(status=503)}) as ext:
        text = config(ext.url, filterVerb="filter", ignorable="true")
        async with running_scheduler(tmp_path, text) as h:
            await three_nodes(h)
            await h.api.create_pod("p")
            assert await h.wait_bound("p") in ("a", "b", "c")
    assert len(ext.calls("filter")) == 1


async def test_rejected_pod_is_retried_on_any_event(tmp_path: Path) -> None:
    """Nodes an extender rejected get its messages in the FitError; any cluster event brings
    the pod back (extenders register no events), here a node being added."""
    allowed: set[str] = set()

    def only_allowed(args: Any) -> Any:
        names = node_names(args)
        return {
            "NodeNames": [n for n in names if n in allowed],
            "FailedNodes": {n: "not on the allow list" for n in names if n not in allowed},
        }

    async with FakeExtender({"filter": only_allowed}) as ext:
        text = config(ext.url, filterVerb="filter", nodeCacheCapable="true")
        async with running_scheduler(tmp_path, text) as h:
            await three_nodes(h)
            await h.api.create_pod("p")
            cond = await pod_condition(h, "p")
            assert cond["reason"] == "Unschedulable"
            # (followed by what preemption found, when the profile has DefaultPreemption)
            assert cond["message"].startswith("0/3 nodes are available: 3 not on the allow list.")
            allowed.add("d")
            await h.api.create_node("d")
            assert await h.wait_bound("p", timeout=5) == "d"


async def test_managed_resources_interest_and_ignored_by_scheduler(tmp_path: Path) -> None:
    """Only pods asking for a managed resource go to the extender; NodeResourcesFit ignores a
    resource the extender manages with ignoredByScheduler (no node advertises it here)."""
    keep_b = {"filter": lambda args: {"NodeNames": [n for n in node_names(args) if n == "b"]}}
    async with FakeExtender(keep_b) as ext:
        text = config(
            ext.url,
            filterVerb="filter",
            nodeCacheCapable="true",
            managedResources="[{name: example.com/gpu, ignoredByScheduler: true}]",
        )
        async with running_scheduler(tmp_path, text) as h:
            await three_nodes(h)
            gpu = {
                "containers": [
                    {
                        "name": "c",
                        "image": "pause",
                        "resources": {
                            "requests": {"cpu": "100m", "example.com/gpu": "1"},
                            "limits": {"example.com/gpu": "1"},
                        },
                    }
                ]
            }
            await h.api.create_pod("gpu", extra_spec=gpu)
            assert await h.wait_bound("gpu") == "b"
            for i in range(3):
                await h.api.create_pod(f"plain{i}")
            bound = {await h.wait_bound(f"plain{i}") for i in range(3)}
            # Let the Scheduled events be written before the harness closes the client.
            for name in ("gpu", "plain0", "plain1", "plain2"):
                await h.wait_for(lambda n=name: _scheduled_events(h, n), what=f"{name} event")
    assert len(ext.calls("filter")) == 1  # the plain pods never reached the extender
    assert bound <= {"a", "b", "c"}
