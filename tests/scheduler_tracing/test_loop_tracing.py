"""Span tree of the scheduling loop on an embedded cluster, exported into memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased
from opentelemetry.trace import StatusCode
from tracing_harness import TracedHarness, traced_scheduler

SCHEDULING_POINTS = {"PreFilter", "Filter", "PreScore", "Score", "NormalizeScore", "Reserve"}
SCHEDULING_POINTS |= {"Permit"}
BINDING_POINTS = {"WaitOnPermit", "PreBind", "Bind", "PostBind"}
GPU_TAINT = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def names(spans: list[ReadableSpan]) -> set[str]:
    return {s.name for s in spans}


def plugin_events(span: ReadableSpan) -> dict[str, str]:
    return {
        str(e.attributes["aiosched.plugin"]): str(e.attributes["aiosched.status"])
        for e in span.events
        if e.name == "plugin" and e.attributes is not None
    }


def linked_span_ids(span: ReadableSpan) -> list[tuple[int, int]]:
    return [(link.context.trace_id, link.context.span_id) for link in span.links]


def ids(span: ReadableSpan) -> tuple[int, int]:
    assert span.context is not None
    return span.context.trace_id, span.context.span_id


def assert_failed_attempts_stand_alone(
    attempts: list[ReadableSpan], pod_span: ReadableSpan
) -> None:
    """Each failed attempt is the root of a trace of its own, linked both ways with the pod's
    PodScheduling span: a backend lists it while the pod is pending, and finds it from the pod."""
    assert len({ids(a)[0] for a in attempts} | {ids(pod_span)[0]}) == len(attempts) + 1
    for attempt in attempts:
        assert attempt.parent is None
        assert linked_span_ids(attempt) == [ids(pod_span)]
        assert attrs(attempt)["k8s.pod.uid"] == attrs(pod_span)["k8s.pod.uid"]
    assert linked_span_ids(pod_span) == [ids(a) for a in attempts]
    assert [dict(link.attributes or {}) for link in pod_span.links] == [
        {"aiosched.attempt": attrs(a)["aiosched.attempt"]} for a in attempts
    ]


class HoldAtPermit:
    """Parks every pod at Permit until the test allows or rejects it."""

    name = "HoldAtPermit"

    def permit(self, state: object, pod: object, node_name: str) -> tuple[Any, float]:
        from scheduler.framework.status import Status

        return Status.wait(plugin=self.name), 30.0


async def _unschedulable_cluster(h: TracedHarness) -> None:
    await h.api.create_node("tainted", cpu="8", taints=GPU_TAINT)
    await h.api.create_node("small", cpu="1")
    await h.wait_nodes_cached(2)  # the first attempt must evaluate both nodes


async def test_scheduled_pod_has_one_trace_from_enqueue_to_bind(tmp_path: Path) -> None:
    async with traced_scheduler(tmp_path) as h:
        await h.api.create_node("a", cpu="4")
        await h.api.create_node("b", cpu="4")
        await h.wait_nodes_cached(2)
        created = await h.api.create_pod("web", cpu="1")
        node = await h.wait_bound("web")
        pod_span = await h.wait_for(lambda: h.pod_span("web"), what="PodScheduling span")

        assert pod_span.parent is None
        assert pod_span.links == ()  # no failed attempt to link to
        assert attrs(pod_span) | {"aiosched.pod": "default/web"} == {
            "k8s.pod.name": "web",
            "k8s.namespace.name": "default",
            "k8s.pod.uid": created["metadata"]["uid"],
            "aiosched.pod": "default/web",
            "k8s.node.name": node,
            "aiosched.outcome": "bound",
            "aiosched.attempts": 1,
        }
        (attempt,) = h.attempts("web")
        assert attempt.parent is not None and pod_span.context is not None
        assert attempt.parent.span_id == pod_span.context.span_id
        assert attempt.context is not None
        assert attempt.context.trace_id == pod_span.context.trace_id
        assert attempt.links == ()
        assert attrs(attempt) == {
            "k8s.pod.name": "web",
            "k8s.namespace.name": "default",
            "k8s.pod.uid": created["metadata"]["uid"],
            "aiosched.profile": "default-scheduler",
            "aiosched.attempt": 1,
            "k8s.node.name": node,
            "aiosched.evaluated_nodes": 2,
            "aiosched.feasible_nodes": 2,
            "aiosched.result": "scheduled",
        }
        assert attempt.status.status_code == StatusCode.OK

        # Scheduling-cycle and binding-task spans are all children of the attempt.
        children = h.children(attempt)
        assert names(children) >= SCHEDULING_POINTS | BINDING_POINTS
        assert "Unreserve" not in names(children)
        assert all(
            c.context is not None and c.context.trace_id == attempt.context.trace_id
            for c in children
        )
        by_name = {c.name: c for c in children}
        # An event per plugin that ran, each with its status and duration; none failed.
        assert plugin_events(by_name["Filter"])["NodeResourcesFit"] == "Success"
        assert plugin_events(by_name["Score"]).keys() >= {"NodeResourcesFit", "TaintToleration"}
        assert plugin_events(by_name["NormalizeScore"]).keys() >= {"TaintToleration"}
        assert plugin_events(by_name["Bind"]) == {"DefaultBinder": "Success"}
        for child in children:
            for event in child.events:
                assert event.attributes is not None
                assert event.attributes["aiosched.status"] in ("Success", "Skip")
                assert float(event.attributes["aiosched.duration_ms"]) >= 0  # type: ignore[arg-type]
                assert child.start_time is not None and child.end_time is not None
                assert child.start_time <= event.timestamp <= child.end_time
        assert attrs(by_name["Bind"])["aiosched.status"] == "Success"
        # The pod span covers the attempt, which covers its extension points.
        assert pod_span.start_time is not None and attempt.start_time is not None
        assert pod_span.start_time <= attempt.start_time
        assert pod_span.end_time is not None and attempt.end_time is not None
        assert attempt.end_time <= pod_span.end_time
        for span in [pod_span, attempt, *children]:
            assert span.start_time is not None and span.end_time is not None
            assert span.start_time <= span.end_time, span.name
        assert h.scheduler.instrumentation.open_pod_spans() == 0


async def test_unschedulable_pod_shows_each_finished_attempt_then_ends_on_delete(
    tmp_path: Path,
) -> None:
    async with traced_scheduler(tmp_path) as h:
        await _unschedulable_cluster(h)
        await h.api.create_pod("huge", cpu="2")
        (first,) = await h.wait_for(lambda: h.attempts("huge"), what="first attempt")
        message = (
            "0/2 nodes are available: 1 Insufficient cpu, "
            "1 node(s) had untolerated taint(s). "
            "no new claims to deallocate, "
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        )
        assert attrs(first)["aiosched.result"] == "unschedulable"
        assert attrs(first)["aiosched.failure_message"] == message
        assert attrs(first)["aiosched.evaluated_nodes"] == 2
        assert attrs(first)["aiosched.feasible_nodes"] == 0
        assert first.status.status_code == StatusCode.ERROR
        children = {c.name: c for c in h.children(first)}
        # Preemption (PostFilter) ran in the attempt and is recorded in its trace.
        assert {"PreFilter", "Filter", "PostFilter"} <= children.keys()
        assert not children.keys() & ({"Score", "Reserve"} | BINDING_POINTS)
        assert all(ids(c)[0] == ids(first)[0] for c in children.values())
        assert h.pod_span("huge") is None  # still pending: the pod span stays open
        # ... but the attempt is a complete trace already: a root, linked to the pod's trace.
        assert first.parent is None
        (link,) = first.links

        # A node that does not fit either is still an event that retries the pod.
        await h.api.create_node("small-2", cpu="1")
        attempts = await h.wait_for(
            lambda: (found := h.attempts("huge")) and len(found) >= 2 and found,
            what="second attempt",
        )
        assert [attrs(a)["aiosched.attempt"] for a in attempts[:2]] == [1, 2]
        assert h.pod_span("huge") is None

        status, _ = await h.api.request("DELETE", "/api/v1/namespaces/default/pods/huge")
        assert status == 200
        pod_span = await h.wait_for(lambda: h.pod_span("huge"), what="pod span ended")
        assert attrs(pod_span)["aiosched.outcome"] == "deleted"
        assert (link.context.trace_id, link.context.span_id) == ids(pod_span)
        assert_failed_attempts_stand_alone(h.attempts("huge"), pod_span)
        assert h.scheduler.instrumentation.open_pod_spans() == 0


async def test_permit_rejected_attempt_stands_alone_and_the_bound_one_joins_the_pod_trace(
    tmp_path: Path,
) -> None:
    def hold_at_permit(scheduler: Any) -> None:
        scheduler.profiles["default-scheduler"].framework.permit_plugins[:] = [HoldAtPermit()]

    async with traced_scheduler(tmp_path, configure=hold_at_permit) as h:
        await h.api.create_node("a", cpu="4")
        await h.wait_nodes_cached(1)
        created = await h.api.create_pod("p", cpu="1")
        uid = created["metadata"]["uid"]
        fwk = h.scheduler.profiles["default-scheduler"].framework
        waiting = await h.wait_for(lambda: fwk.get_waiting_pod(uid), what="waiting at Permit")
        waiting.reject(HoldAtPermit.name, "not today")
        (first,) = await h.wait_for(lambda: h.attempts("p"), what="rejected attempt")
        # The binding task's WaitOnPermit and Unreserve joined the rejected attempt's own trace.
        children = {c.name: c for c in h.children(first)}
        assert {"Permit", "WaitOnPermit", "Unreserve"} <= children.keys()
        assert children["WaitOnPermit"].status.status_code == StatusCode.ERROR
        assert first.parent is None and attrs(first)["aiosched.result"] == "unschedulable"
        assert all(ids(c)[0] == ids(first)[0] for c in children.values())
        assert h.pod_span("p") is None

        # HoldAtPermit names no cluster events that could help: bring the pod back by hand.
        pinfo = h.scheduler.queue.get(uid)
        assert pinfo is not None
        h.scheduler.queue.activate([pinfo.pod])
        waiting = await h.wait_for(lambda: fwk.get_waiting_pod(uid), what="second Permit")
        waiting.allow(HoldAtPermit.name)
        await h.wait_bound("p")
        pod_span = await h.wait_for(lambda: h.pod_span("p"), what="PodScheduling span")
        assert attrs(pod_span)["aiosched.attempts"] == 2
        failed, bound = h.attempts("p")
        assert failed is first
        assert_failed_attempts_stand_alone([failed], pod_span)
        # The attempt that bound the pod is in the pod's trace, with its binding-task spans.
        assert bound.parent is not None and bound.parent.span_id == ids(pod_span)[1]
        assert ids(bound)[0] == ids(pod_span)[0] and bound.links == ()
        children = {c.name: c for c in h.children(bound)}
        assert {"Permit", "WaitOnPermit", "Bind"} <= children.keys()
        assert all(ids(c)[0] == ids(pod_span)[0] for c in children.values())


async def test_binding_failure_traces_unreserve_in_the_same_attempt(tmp_path: Path) -> None:
    from scheduler.framework.status import Status

    class FailingBinder:
        name = "DefaultBinder"

        async def bind(self, state: object, pod: object, node_name: str) -> Status:
            return Status.error("injected bind failure")

    def break_binding(scheduler: Any) -> None:
        for profile in scheduler.profiles.values():
            profile.framework.bind_plugins[:] = [FailingBinder()]

    async with traced_scheduler(tmp_path, configure=break_binding) as h:
        await h.api.create_node("a", cpu="4")
        await h.wait_nodes_cached(1)  # else the first attempt finds no node, never binds
        await h.api.create_pod("web", cpu="1")
        (first, *_) = await h.wait_for(lambda: h.attempts("web"), what="failed attempt")
        assert attrs(first)["aiosched.result"] == "error"
        assert first.parent is None and len(first.links) == 1  # a trace of its own
        assert "injected bind failure" in attrs(first)["aiosched.failure_message"]
        children = {c.name: c for c in h.children(first)}
        assert {"Bind", "Unreserve"} <= children.keys()
        assert children["Bind"].status.status_code == StatusCode.ERROR
        assert attrs(children["Bind"])["aiosched.status"] == "Error"
        assert plugin_events(children["Bind"]) == {"DefaultBinder": "Error"}


async def test_empty_extension_points_can_be_left_out(tmp_path: Path) -> None:
    def configure(scheduler: Any) -> None:
        scheduler.instrumentation.trace_empty_points = False

    async with traced_scheduler(tmp_path, configure=configure) as h:
        await h.api.create_node("a", cpu="4")
        await h.api.create_node("b", cpu="4")
        await h.wait_nodes_cached(2)
        await h.api.create_pod("web", cpu="1")
        await h.wait_bound("web")
        await h.wait_for(lambda: h.pod_span("web"), what="PodScheduling span")
        (attempt,) = h.attempts("web")
        points = names(h.children(attempt))
        # The default profile has no Permit or PostBind plugin (VolumeBinding reserves and
        # pre-binds, even for a pod without volumes, as upstream's).
        assert points == {
            "PreFilter",
            "Filter",
            "PreScore",
            "Score",
            "NormalizeScore",
            "Reserve",
            "PreBind",
            "Bind",
        }


async def test_unsampled_pods_record_no_spans_and_leave_nothing_open(tmp_path: Path) -> None:
    async with traced_scheduler(tmp_path, sampler=ParentBased(ALWAYS_OFF)) as h:
        await h.api.create_node("a", cpu="4")
        await h.api.create_pod("web", cpu="1")
        await h.wait_bound("web")
        await h.wait_for(
            lambda: h.scheduler.instrumentation.open_pod_spans() == 0, what="pod span closed"
        )
        assert h.spans() == []
