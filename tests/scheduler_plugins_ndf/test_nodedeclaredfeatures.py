"""NodeDeclaredFeatures, ported from upstream's
pkg/scheduler/framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures_test.go (TestPreFilter,
TestFilter, TestEnqueueExtensionsNodeUpdate, TestIsSchedulableAfterTargetPodUpdate,
TestEventsToRegister) as facts. Upstream's tables use mock features; here the registry's real
features stand in for them (a pod that needs RestartAllContainersOnContainerExits, ...), and the
inference of each feature is checked against the feature's own upstream tests' inputs."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.plugins.nodedeclaredfeatures import NodeDeclaredFeatures, gate_enabled
from scheduler.plugins.nodedeclaredfeatures import features as ndf
from scheduler.plugins.nodedeclaredfeatures.plugin import (
    ERR_REASON_UNSATISFIED_REQUIREMENTS,
    PRE_FILTER_STATE_KEY,
)

RESTART_ALL = {"name": "c", "restartPolicyRules": [{"action": "RestartAllContainers"}]}


class _Gates:
    def __init__(self, **gates: bool) -> None:
        self.feature_gates = gates


def plugin(enabled: bool = True) -> NodeDeclaredFeatures:
    return NodeDeclaredFeatures(handle=_Gates(NodeDeclaredFeatures=enabled))  # type: ignore[arg-type]


def pod(uid: str = "123", labels: dict[str, str] | None = None, **spec: Any) -> PodView:
    return PodView.from_dict(
        {
            "metadata": {"name": "test-pod", "namespace": "default", "uid": uid,
                         "labels": labels or {}},
            "spec": {"containers": [{"name": "c"}], **spec},
        }
    )  # fmt: skip


def node(name: str = "node-1", declared: list[str] | None = None) -> NodeView:
    status: dict[str, Any] = {}
    if declared is not None:
        status["declaredFeatures"] = declared
    return NodeView.from_dict(
        {"metadata": {"name": name, "uid": name, "resourceVersion": "1"}, "status": status}
    )


# --- TestPreFilter ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "enabled", "spec", "code", "state"),
    [
        ("plugin disabled", False, {"containers": [RESTART_ALL]}, Code.SKIP, None),
        (
            "Pod with feature requirements", True, {"containers": [RESTART_ALL]}, Code.SUCCESS,
            {ndf.RESTART_ALL_CONTAINERS},
        ),
        (
            "Pod with multiple feature requirements", True,
            {"containers": [RESTART_ALL], "hostNetwork": True, "hostUsers": False}, Code.SUCCESS,
            {ndf.RESTART_ALL_CONTAINERS, ndf.USER_NAMESPACES_HOST_NETWORK},
        ),
        ("Pod with no requirements", True, {}, Code.SKIP, None),
    ],
)  # fmt: skip
def test_pre_filter(
    name: str, enabled: bool, spec: dict[str, Any], code: Code, state: set[str] | None
) -> None:
    cycle = CycleState()
    result, status = plugin(enabled).pre_filter(cycle, pod(**spec), [])
    assert result is None  # PreFilter always returns a nil result
    assert status.code == code
    if state is None:
        with pytest.raises(KeyError):
            cycle.read(PRE_FILTER_STATE_KEY)
    else:
        assert cycle.read(PRE_FILTER_STATE_KEY) == frozenset(state)


# --- TestFilter ------------------------------------------------------------------------------

A, B, C = ndf.RESTART_ALL_CONTAINERS, ndf.USER_NAMESPACES_HOST_NETWORK, ndf.CGROUP_OPTIONS


@pytest.mark.parametrize(
    ("name", "enabled", "declared", "reqs", "code"),
    [
        ("plugin disabled", False, [A, B], None, Code.SUCCESS),
        ("Node matches requirements", True, [A, B], [A], Code.SUCCESS),
        ("Node does not match requirements", True, [B], [A], Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        ("Node with multiple features, pod requires subset", True, [A, B, C], [A, C],
         Code.SUCCESS),
        ("Node has no declared features", True, None, [A], Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        ("Node with some but not all required features", True, [A], [A, B],
         Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        ("Error getting pre-filter state", True, None, None, Code.ERROR),
    ],
)  # fmt: skip
def test_filter(
    name: str, enabled: bool, declared: list[str] | None, reqs: list[str] | None, code: Code
) -> None:
    cycle = CycleState()
    if reqs is not None:
        cycle.write(PRE_FILTER_STATE_KEY, frozenset(reqs))
    status = plugin(enabled).filter(cycle, pod(), NodeInfo(node(declared=declared), ()))
    assert status.code == code
    if code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        assert status.reasons == (ERR_REASON_UNSATISFIED_REQUIREMENTS,)
    if code == Code.ERROR:
        assert f'error reading "{PRE_FILTER_STATE_KEY}" from cycle-state' in status.message


def test_unknown_declared_features_are_ignored() -> None:
    """Upstream maps a node's list onto the registry (TryMap): an unknown name neither helps
    nor hurts."""
    cycle = CycleState()
    cycle.write(PRE_FILTER_STATE_KEY, frozenset([A]))
    status = plugin().filter(cycle, pod(), NodeInfo(node(declared=["SomeFutureFeature", A]), ()))
    assert status.code == Code.SUCCESS


# --- TestEnqueueExtensionsNodeUpdate ---------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "old", "new", "hint"),
    [
        ("Node Add with feature", None, node(declared=["FeatureA"]), QueueingHint.QUEUE),
        ("Node Update (Features Added)", node(), node(declared=["FeatureA"]), QueueingHint.QUEUE),
        ("Node Update (Features Unchanged)", node(declared=["FeatureA"]),
         node(declared=["FeatureA"]), QueueingHint.SKIP),
    ],
)  # fmt: skip
def test_node_change_hint(
    name: str, old: NodeView | None, new: NodeView, hint: QueueingHint
) -> None:
    assert plugin().schedulable_after_node_change(pod(), old, new) == hint


# --- TestIsSchedulableAfterTargetPodUpdate ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "old", "new", "hint"),
    [
        ("Pod Update adds requirement", pod(), pod(labels={"foo": "bar"}, containers=[RESTART_ALL]),
         QueueingHint.QUEUE),
        ("Pod Update removes requirement", pod(labels={"foo": "bar"}, containers=[RESTART_ALL]),
         pod(), QueueingHint.QUEUE),
        ("Pod Update with no change in requirements", pod(), pod(), QueueingHint.SKIP),
        # Upstream's older Pod-Update registration: another pod's update never helps.
        ("Another pod's update", pod(), pod(uid="other", containers=[RESTART_ALL]),
         QueueingHint.SKIP),
    ],
)  # fmt: skip
def test_target_pod_update_hint(name: str, old: PodView, new: PodView, hint: QueueingHint) -> None:
    assert plugin().schedulable_after_target_pod_update(pod(), old, new) == hint


# --- TestEventsToRegister --------------------------------------------------------------------


def test_events_to_register() -> None:
    assert plugin(enabled=False).events_to_register() == ()
    events = plugin().events_to_register()
    assert len(events) == 2
    node_event, pod_event = (e.event for e in events)
    assert node_event.resource == EventResource.NODE
    assert node_event.action == ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE
    assert pod_event.resource == EventResource.UNSCHEDULED_POD
    assert pod_event.action == ActionType.UPDATE


def test_gate_defaults_on() -> None:
    assert gate_enabled(None) and gate_enabled({})
    assert not gate_enabled({"NodeDeclaredFeatures": False})
    assert NodeDeclaredFeatures().enabled  # no handle: upstream's default


def test_sign_pod_names_the_required_features() -> None:
    fragments, status = plugin().sign_pod(pod(containers=[RESTART_ALL]))
    assert status.is_success
    assert list(fragments) == [("v1.Pod.Spec.RequiredFeatures()", [A])]


# --- the registry's inference (features/*/..._test.go InferForScheduling) ------------------

SC = "securityContext"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, set()),
        ({"containers": [{"name": "c", "restartPolicyRules": [{"action": "Restart"}]}]}, set()),
        ({"initContainers": [RESTART_ALL]}, {ndf.RESTART_ALL_CONTAINERS}),
        ({"hostNetwork": True}, set()),
        ({"hostNetwork": True, "hostUsers": True}, set()),
        ({"hostUsers": False}, set()),
        ({"containers": [{SC: {"cgroupOptions": {"mountMode": "Writable"}}}]},
         {ndf.CGROUP_OPTIONS}),
        ({"containers": [{SC: {"cgroupOptions": {}}}]}, set()),
        ({"ephemeralContainers": [{SC: {"ulimits": [{"name": "nofile", "soft": 1, "hard": 2}]}}]},
         {ndf.CONTAINER_ULIMITS}),
        ({"volumes": [{"downwardAPI": {"items": [
            {"path": "c", "resourceFieldRef": {"resource": "assigned.cpuset"}}]}}]},
         {ndf.DOWNWARD_API_ASSIGNED_RESOURCES}),
        ({"volumes": [{"projected": {"sources": [{"downwardAPI": {"items": [
            {"path": "c", "resourceFieldRef": {"resource": "assigned.cpuset"}}]}}]}}]},
         {ndf.DOWNWARD_API_ASSIGNED_RESOURCES}),
        ({"volumes": [{"downwardAPI": {"items": [
            {"path": "c", "resourceFieldRef": {"resource": "limits.cpu"}}]}}]}, set()),
        ({"resources": {"limits": {"pid": "100"}}}, {ndf.PER_POD_PID_LIMIT}),
        ({"resources": {"limits": {"cpu": "1"}}}, set()),
        ({"volumes": [{"projected": {"sources": [{"podCertificate": {"keyType": "MLDSA65"}}]}}]},
         {ndf.POD_CERTIFICATE_MLDSA}),
        ({"volumes": [{"projected": {"sources": [{"podCertificate": {"keyType": "ED25519"}}]}}]},
         set()),
        ({"defaultNetwork": "None"}, {ndf.POD_DEFAULT_NETWORK_NONE}),
        ({"defaultNetwork": "Host"}, set()),
        ({SC: {"seccompProfile": {"type": "OCI"}}}, {ndf.SECURITY_PROFILE_OCI}),
        ({"initContainers": [{SC: {"seccompProfile": {"type": "OCI"}}}]},
         {ndf.SECURITY_PROFILE_OCI}),
        ({SC: {"seccompProfile": {"type": "RuntimeDefault"}}}, set()),
        ({"containers": [{"volumeMounts": [{"name": "v", "bindMountOptions": ["noexec"]}]}]},
         {ndf.VOLUME_BIND_MOUNT_OPTIONS}),
        ({"containers": [{"volumeMounts": [{"name": "v"}]}]}, set()),
    ],
)  # fmt: skip
def test_infer_for_scheduling(spec: dict[str, Any], expected: set[str]) -> None:
    assert ndf.infer_for_scheduling(spec) == frozenset(expected)


# The single pass infer_for_scheduling makes must say what the per-feature predicates (one per
# upstream feature) say together, for any mix of the fields they read.
_SECURITY_CONTEXTS = st.fixed_dictionaries(
    {},
    optional={
        "seccompProfile": st.sampled_from([{"type": "OCI"}, {"type": "RuntimeDefault"}, {}]),
        "cgroupOptions": st.sampled_from([{"mountMode": "Private"}, {}]),
        "ulimits": st.sampled_from([[{"name": "nofile", "soft": 1, "hard": 2}], []]),
    },
)
_CONTAINERS = st.lists(
    st.fixed_dictionaries(
        {"name": st.just("c")},
        optional={
            SC: _SECURITY_CONTEXTS,
            "restartPolicyRules": st.lists(
                st.fixed_dictionaries({"action": st.sampled_from(["RestartAllContainers", "x"])}),
                max_size=2,
            ),
            "volumeMounts": st.lists(
                st.fixed_dictionaries(
                    {"name": st.just("v")},
                    optional={"bindMountOptions": st.sampled_from([["noexec"], []])},
                ),
                max_size=2,
            ),
        },
    ),
    max_size=2,
)
_DOWNWARD = st.fixed_dictionaries(
    {"items": st.lists(
        st.fixed_dictionaries({"resourceFieldRef": st.fixed_dictionaries(
            {"resource": st.sampled_from(["assigned.cpuset", "limits.cpu"])})}),
        max_size=2,
    )}
)  # fmt: skip
_VOLUMES = st.lists(
    st.one_of(
        st.fixed_dictionaries({"name": st.just("d"), "downwardAPI": _DOWNWARD}),
        st.fixed_dictionaries({"name": st.just("p"), "projected": st.fixed_dictionaries({
            "sources": st.lists(st.one_of(
                st.fixed_dictionaries({"downwardAPI": _DOWNWARD}),
                st.fixed_dictionaries({"podCertificate": st.fixed_dictionaries(
                    {"keyType": st.sampled_from(["MLDSA44", "ED25519"])})}),
                st.just({"serviceAccountToken": {"path": "token"}}),
            ), max_size=3)})}),
        st.just({"name": "e", "emptyDir": {}}),
    ),
    max_size=3,
)  # fmt: skip
_SPECS = st.fixed_dictionaries(
    {"containers": _CONTAINERS},
    optional={
        "initContainers": _CONTAINERS,
        "ephemeralContainers": _CONTAINERS,
        "volumes": _VOLUMES,
        SC: _SECURITY_CONTEXTS,
        "hostNetwork": st.booleans(),
        "hostUsers": st.booleans(),
        "defaultNetwork": st.sampled_from(["None", "Host"]),
        "resources": st.fixed_dictionaries(
            {"limits": st.sampled_from([{"pid": "100"}, {"cpu": "1"}])}
        ),
    },
)


@settings(max_examples=300, deadline=None)
@given(_SPECS)
def test_the_single_pass_agrees_with_every_feature_predicate(spec: dict[str, Any]) -> None:
    expected = frozenset(name for name, needs in ndf.SCHEDULING_FEATURES if needs(spec))
    assert ndf.infer_for_scheduling(spec) == expected
