"""InterPodAffinity args, registry entry and queueing hints.

Ported from upstream's pkg/scheduler/apis/config/validation/validation_pluginargs_test.go
(TestValidateInterPodAffinityArgs), pkg/scheduler/apis/config/v1/defaults_test.go
(InterPodAffinityArgs defaults) and
pkg/scheduler/framework/plugins/interpodaffinity/plugin_test.go
(Test_isSchedulableAfterPodChange, Test_isSchedulableAfterNodeChange).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import NodeView, PodView
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.registry import ArgsError
from scheduler.plugins.interpodaffinity import (
    PLUGIN_ENTRY,
    InterPodAffinity,
    InterPodAffinityArgs,
    decode_interpod_affinity_args,
)
from scheduler.plugins.interpodaffinity.hints import (
    schedulable_after_node_change,
    schedulable_after_pod_change,
)
from scheduler.testing import FakeHandle, MakePod, make_node, make_snapshot

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.SKIP


# Args


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (None, InterPodAffinityArgs(1, False)),
        ({}, InterPodAffinityArgs(1, False)),
        ({"hardPodAffinityWeight": 0}, InterPodAffinityArgs(0, False)),
        ({"hardPodAffinityWeight": 100}, InterPodAffinityArgs(100, False)),
        ({"hardPodAffinityWeight": None}, InterPodAffinityArgs(1, False)),
        (
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "InterPodAffinityArgs",
                "hardPodAffinityWeight": 5,
                "ignorePreferredTermsOfExistingPods": True,
            },
            InterPodAffinityArgs(5, True),
        ),
    ],
)
def test_decode_args(raw: Any, want: InterPodAffinityArgs) -> None:
    assert decode_interpod_affinity_args(raw) == want
    assert PLUGIN_ENTRY.decode(raw) == want


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        # upstream: "hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]"
        (
            {"hardPodAffinityWeight": -1},
            "hardPodAffinityWeight",
            "Invalid value: -1: not in valid range [0, 100]",
        ),
        (
            {"hardPodAffinityWeight": 101},
            "hardPodAffinityWeight",
            "Invalid value: 101: not in valid range [0, 100]",
        ),
        ({"hardPodAffinityWeight": "1"}, "hardPodAffinityWeight", "expected an integer, got str"),
        ({"hardPodAffinityWeight": True}, "hardPodAffinityWeight", "expected an integer, got bool"),
        ({"hardPodAffinityWeight": 1.5}, "hardPodAffinityWeight", "expected an integer, got float"),
        (
            {"ignorePreferredTermsOfExistingPods": "yes"},
            "ignorePreferredTermsOfExistingPods",
            "expected a boolean, got str",
        ),
        ({"hardPodAffinitySymmetricWeight": 1}, "hardPodAffinitySymmetricWeight", "unknown field"),
        (
            {"kind": "NodeAffinityArgs"},
            "kind",
            'expected "InterPodAffinityArgs", got "NodeAffinityArgs"',
        ),
    ],
)
def test_decode_args_errors(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ArgsError) as caught:
        decode_interpod_affinity_args(raw)
    assert caught.value.path == path
    assert caught.value.message == message


def test_plugin_entry() -> None:
    assert PLUGIN_ENTRY.name == "InterPodAffinity"
    assert PLUGIN_ENTRY.cls is InterPodAffinity
    assert PLUGIN_ENTRY.extension_points == {"preFilter", "filter", "preScore", "score"}


def test_events_to_register() -> None:
    plugin = InterPodAffinity(None, FakeHandle(make_snapshot([make_node("n")])))
    assert plugin.args == InterPodAffinityArgs()
    events = plugin.events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (
            EventResource.ASSIGNED_POD,
            ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
        ),
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ]
    assert events[0].hint is schedulable_after_pod_change
    assert events[1].hint is schedulable_after_node_change


# Queueing hints


def _affinity_pod() -> PodView:
    return MakePod("p").pod_affinity_in("service", "region", ["securityscan", "value2"]).obj()


def _anti_affinity_pod() -> PodView:
    return MakePod("p").pod_anti_affinity_in("service", "region", ["securityscan", "value2"]).obj()


def _multi_term_pod() -> PodView:
    return (
        MakePod("p")
        .pod_affinity_exists("aaa", "hostname")
        .pod_affinity_exists("bbb", "hostname")
        .obj()
    )


def _placed(**labels: str) -> MakePod:
    return MakePod().node("fake-node").labels(labels)


# (name, pod, old pod, new pod, want)
POD_CHANGES: list[tuple[str, PodView, PodView | None, PodView | None, QueueingHint]] = [
    (
        "add a pod which matches the pod affinity",
        _affinity_pod(),
        None,
        _placed(service="securityscan").obj(),
        QUEUE,
    ),
    (
        "add an un-scheduled pod which matches target pod affinity",
        _affinity_pod(),
        None,
        MakePod().label("service", "securityscan").obj(),
        SKIP,
    ),
    (
        "add a pod with nominated node which matches target pod affinity",
        _affinity_pod(),
        None,
        MakePod().label("service", "securityscan").nominated("fake-node").obj(),
        QUEUE,
    ),
    (
        "update a pod from un-scheduled to nominated, which matches target pod affinity",
        _affinity_pod(),
        MakePod().label("service", "securityscan").obj(),
        MakePod().label("service", "securityscan").nominated("fake-node").obj(),
        QUEUE,
    ),
    (
        "update a pod from nominated to un-scheduled, which matches target pod affinity",
        _affinity_pod(),
        MakePod().label("service", "securityscan").nominated("fake-node").obj(),
        MakePod().label("service", "securityscan").obj(),
        SKIP,
    ),
    (
        "add a pod which doesn't match the pod affinity",
        _affinity_pod(),
        None,
        _placed(aaa="a").obj(),
        SKIP,
    ),
    (
        "update a pod from non-match to match pod affinity",
        _affinity_pod(),
        _placed(aaa="a").obj(),
        _placed(service="securityscan").obj(),
        QUEUE,
    ),
    (
        "the updating pod matches target pod's affinity both before and after label changes",
        _affinity_pod(),
        _placed(service="value2").obj(),
        _placed(service="securityscan").obj(),
        SKIP,
    ),
    (
        "update an un-scheduled pod",
        _affinity_pod(),
        MakePod().label("service", "securityscan").obj(),
        MakePod().label("service", "securityscan").obj(),
        SKIP,
    ),
    (
        "update a pod from match to non-match the pod affinity",
        _affinity_pod(),
        _placed(service="securityscan").obj(),
        _placed(aaa="a").obj(),
        SKIP,
    ),
    (
        "update a pod from match to non-match pod's affinity - multiple terms case",
        _multi_term_pod(),
        _placed(aaa="a").obj(),
        _placed(service="securityscan").obj(),
        SKIP,
    ),
    (
        "update a pod from non-match to match pod's affinity - multiple terms case",
        _multi_term_pod(),
        _placed(aaa="a").obj(),
        _placed(aaa="", bbb="").obj(),
        QUEUE,
    ),
    (
        "modify pod label to change it from satisfying pod anti-affinity to not satisfying",
        _anti_affinity_pod(),
        _placed(service="securityscan").obj(),
        _placed(service="aaaa").obj(),
        QUEUE,
    ),
    (
        "modify pod label to change it from not satisfying pod anti-affinity to satisfying",
        _anti_affinity_pod(),
        _placed(service="bbb").obj(),
        _placed(service="securityscan").obj(),
        SKIP,
    ),
    (
        "delete a pod which doesn't match pod's anti-affinity",
        _anti_affinity_pod(),
        _placed(aaa="a").obj(),
        None,
        SKIP,
    ),
    (
        "delete a pod which matches pod's anti-affinity",
        _anti_affinity_pod(),
        _placed(service="securityscan").obj(),
        None,
        QUEUE,
    ),
    # v1.36: a deleted pod whose own anti-affinity the target pod matches ("or vice versa")
    (
        "delete a pod whose anti-affinity matches the target pod",
        MakePod("p").label("service", "securityscan").obj(),
        _placed(aaa="a").pod_anti_affinity_in("service", "region", ["securityscan"]).obj(),
        None,
        QUEUE,
    ),
    (
        "delete a pod whose anti-affinity doesn't match the target pod",
        MakePod("p").label("service", "other").obj(),
        _placed(aaa="a").pod_anti_affinity_in("service", "region", ["securityscan"]).obj(),
        None,
        SKIP,
    ),
    (
        "delete a pod without anti-affinity, not matching the target's anti-affinity",
        MakePod("p").label("service", "securityscan").obj(),
        _placed(aaa="a").obj(),
        None,
        SKIP,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"), POD_CHANGES, ids=[case[0] for case in POD_CHANGES]
)
def test_schedulable_after_pod_change(
    name: str, pod: PodView, old: PodView | None, new: PodView | None, want: QueueingHint
) -> None:
    assert schedulable_after_pod_change(pod, old, new) == want


def test_the_target_pods_own_label_update_queues_it() -> None:
    # upstream's first check: the only update event registered is UpdatePodLabel, so the
    # target's own update changed its labels, and an existing pod's anti-affinity may no
    # longer match it
    old = MakePod("p").uid("p-uid").label("service", "securityscan").obj()
    new = MakePod("p").uid("p-uid").label("service", "other").obj()
    assert schedulable_after_pod_change(new, old, new) == QUEUE
    other = MakePod("q").uid("q-uid").label("service", "other").obj()
    assert schedulable_after_pod_change(new, other, other) == SKIP


def test_pod_hint_queues_pod_with_unparsable_terms() -> None:
    bad = MakePod("p").pod_affinity_in("service", "region", ["{{.bad-value.}}"]).obj()
    assert bad.pod_affinity.parse_error is not None
    assert schedulable_after_pod_change(bad, None, _placed(aaa="a").obj()) == QUEUE
    assert schedulable_after_node_change(bad, None, make_node("n")) == QUEUE


def _zone_affinity_pod() -> PodView:
    return MakePod("p").pod_affinity_in("service", "zone", ["securityscan", "value2"]).obj()


def _zone_anti_affinity_pod() -> PodView:
    selector = {"matchLabels": {"another": "label"}}
    return MakePod("p").pod_affinity("zone", selector, anti=True).obj()


def _node(**labels: str) -> NodeView:
    return make_node("node-a", labels=labels)


ZONE1 = {"zone": "zone1"}

# (name, pod, old node, new node, want)
NODE_CHANGES: list[tuple[str, PodView, NodeView | None, NodeView, QueueingHint]] = [
    # affinity
    (
        "add a new node with matched pod affinity topologyKey",
        _zone_affinity_pod(),
        None,
        _node(zone="zone1"),
        QUEUE,
    ),
    (
        "add a new node without matched topologyKey",
        MakePod("p").pod_affinity_in("service", "region", ["securityscan", "value2"]).obj(),
        None,
        _node(zone="zone1"),
        SKIP,
    ),
    (
        "update node label but not topologyKey",
        _zone_affinity_pod(),
        _node(aaa="a"),
        _node(aaa="b"),
        SKIP,
    ),
    (
        "update node label that isn't related to the pod affinity",
        _zone_affinity_pod(),
        _node(zone="zone1"),
        _node(zone="zone1", **{"unrelated-label": "unrelated"}),
        SKIP,
    ),
    (
        "update node with different affinity topologyKey value",
        _zone_affinity_pod(),
        _node(zone="zone1"),
        _node(zone="zone2"),
        QUEUE,
    ),
    (
        "update node to have the affinity topology label",
        _zone_affinity_pod(),
        _node(aaa="a"),
        _node(zone="zone1"),
        QUEUE,
    ),
    # anti-affinity
    (
        "add a new node with matched pod anti-affinity topologyKey",
        _zone_anti_affinity_pod(),
        None,
        _node(zone="zone1"),
        QUEUE,
    ),
    (
        "add a new node without matched pod anti-affinity topologyKey",
        _zone_anti_affinity_pod(),
        None,
        _node(),
        QUEUE,
    ),
    (
        "update node label that isn't related to the pod anti-affinity",
        _zone_anti_affinity_pod(),
        _node(zone="zone1"),
        _node(zone="zone1", **{"unrelated-label": "unrelated"}),
        SKIP,
    ),
    (
        "update node with different anti-affinity topologyKey value",
        _zone_anti_affinity_pod(),
        _node(zone="zone1"),
        _node(zone="zone2"),
        QUEUE,
    ),
    (
        "update node to have the anti-affinity topology label",
        _zone_anti_affinity_pod(),
        _node(aaa="a"),
        _node(zone="zone1"),
        SKIP,
    ),
    (
        "update node label not to have anti-affinity topology label",
        _zone_anti_affinity_pod(),
        _node(zone="zone1"),
        _node(aaa="a"),
        QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"), NODE_CHANGES, ids=[case[0] for case in NODE_CHANGES]
)
def test_schedulable_after_node_change(
    name: str, pod: PodView, old: NodeView | None, new: NodeView, want: QueueingHint
) -> None:
    assert schedulable_after_node_change(pod, old, new) == want
