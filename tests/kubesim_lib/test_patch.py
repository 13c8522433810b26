"""kubesim.patch: JSON merge patch, JSON patch and strategic merge patch.

Strategic merge cases follow k8s.io/apimachinery/pkg/util/strategicpatch/patch_test.go and the
patches kubectl (apply, label, annotate, cordon, taint) and kube-scheduler actually send.
"""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim.patch import (
    PatchError,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    create_merge_patch,
)

# --- RFC 7386 (cases from the RFC's appendix A) ------------------------------------------------


@pytest.mark.parametrize(
    ("target", "patch", "result"),
    [
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
        (
            {"metadata": {"labels": {"a": "1"}}},
            {"metadata": {"labels": {"b": "2"}}},
            {"metadata": {"labels": {"a": "1", "b": "2"}}},
        ),
    ],
)
def test_merge_patch(target: dict[str, Any], patch: dict[str, Any], result: dict[str, Any]) -> None:
    before = repr(target)
    assert apply_merge_patch(target, patch) == result
    assert repr(target) == before  # inputs untouched


_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
_keys = st.sampled_from(["a", "b", "c", "d"])
_values = st.recursive(
    st.booleans() | st.integers(-5, 5) | st.text(max_size=3) | st.lists(_scalars, max_size=3),
    lambda children: st.dictionaries(_keys, children, max_size=4),
    max_leaves=12,
)
_docs = st.dictionaries(_keys, _values, max_size=4)


@settings(max_examples=200, deadline=None)
@given(_docs, _docs)
def test_merge_patch_of_diff_reaches_target(
    original: dict[str, Any], target: dict[str, Any]
) -> None:
    assert apply_merge_patch(original, create_merge_patch(original, target)) == target


@settings(max_examples=100, deadline=None)
@given(_docs, _docs)
def test_strategic_merge_without_strategies_is_merge_patch(
    original: dict[str, Any], patch: dict[str, Any]
) -> None:
    # Fields with no patch strategy behave as RFC 7386 (a ConfigMap has none).
    assert apply_strategic_merge_patch(original, patch, "ConfigMap") == apply_merge_patch(
        original, patch
    )


# --- RFC 6902 (cases from the RFC's appendix A) ------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "ops", "result"),
    [
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux"}],
            {"foo": "bar", "baz": "qux"},
        ),
        (
            {"foo": ["bar", "baz"]},
            [{"op": "add", "path": "/foo/1", "value": "qux"}],
            {"foo": ["bar", "qux", "baz"]},
        ),
        ({"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": "x"}], {"foo": ["bar", "x"]}),
        ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
        (
            {"foo": ["bar", "qux", "baz"]},
            [{"op": "remove", "path": "/foo/1"}],
            {"foo": ["bar", "baz"]},
        ),
        (
            {"baz": "qux", "foo": "bar"},
            [{"op": "replace", "path": "/baz", "value": "boo"}],
            {"baz": "boo", "foo": "bar"},
        ),
        (
            {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
            [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
            {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
        ),
        (
            {"foo": ["all", "grass", "cows", "eat"]},
            [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
            {"foo": ["all", "cows", "eat", "grass"]},
        ),
        (
            {"foo": {"a": 1}},
            [{"op": "copy", "from": "/foo", "path": "/bar"}],
            {"foo": {"a": 1}, "bar": {"a": 1}},
        ),
        (
            {"baz": "qux", "foo": ["a", 2, "c"]},
            [
                {"op": "test", "path": "/baz", "value": "qux"},
                {"op": "test", "path": "/foo/1", "value": 2},
            ],
            {"baz": "qux", "foo": ["a", 2, "c"]},
        ),
        ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
        (
            {"metadata": {"labels": {"a/b": "x"}}},
            [{"op": "remove", "path": "/metadata/labels/a~1b"}],
            {"metadata": {"labels": {}}},
        ),
    ],
)
def test_json_patch(doc: dict[str, Any], ops: list[Any], result: dict[str, Any]) -> None:
    assert apply_json_patch(doc, ops) == result


@pytest.mark.parametrize(
    ("doc", "ops"),
    [
        ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}]),
        ({"a": 1}, [{"op": "test", "path": "/a", "value": True}]),
        ({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}]),
        ({"foo": "bar"}, [{"op": "remove", "path": "/nope"}]),
        ({"foo": "bar"}, [{"op": "replace", "path": "/nope", "value": 1}]),
        ({"foo": ["a"]}, [{"op": "add", "path": "/foo/5", "value": 1}]),
        ({"foo": ["a"]}, [{"op": "add", "path": "/foo/01", "value": 1}]),
        ({"foo": "bar"}, [{"op": "add", "path": "/baz"}]),
        ({"foo": "bar"}, [{"op": "frobnicate", "path": "/foo"}]),
        ({"foo": {"a": 1}}, [{"op": "move", "from": "/foo", "path": "/foo/b"}]),
    ],
)
def test_json_patch_errors(doc: dict[str, Any], ops: list[Any]) -> None:
    with pytest.raises(PatchError):
        apply_json_patch(doc, ops)


def test_json_patch_is_atomic() -> None:
    doc = {"a": 1}
    with pytest.raises(PatchError):
        apply_json_patch(
            doc, [{"op": "add", "path": "/b", "value": 2}, {"op": "test", "path": "/a", "value": 3}]
        )
    assert doc == {"a": 1}


# --- strategic merge patch ---------------------------------------------------------------------


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": spec}


SMP_CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    (
        "merge containers by name, new ones first as upstream orders them",
        "Pod",
        _pod(containers=[{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]),
        {"spec": {"containers": [{"name": "c", "image": "z"}, {"name": "a", "image": "x2"}]}},
        _pod(
            containers=[
                {"name": "c", "image": "z"},
                {"name": "a", "image": "x2"},
                {"name": "b", "image": "y"},
            ]
        ),
    ),
    (
        "delete a container by directive",
        "Pod",
        _pod(containers=[{"name": "a"}, {"name": "b"}]),
        {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}},
        _pod(containers=[{"name": "b"}]),
    ),
    (
        "replace the whole list by directive",
        "Pod",
        _pod(containers=[{"name": "a"}, {"name": "b"}]),
        {"spec": {"containers": [{"name": "z"}, {"$patch": "replace"}]}},
        _pod(containers=[{"name": "z"}]),
    ),
    (
        "env merges by name inside a merged container",
        "Pod",
        _pod(
            containers=[
                {"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}
            ]
        ),
        {"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "3"}]}]}},
        _pod(
            containers=[
                {"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}]}
            ]
        ),
    ),
    (
        "ports merge by containerPort",
        "Pod",
        _pod(containers=[{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]),
        {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]}},
        _pod(
            containers=[
                {"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]}
            ]
        ),
    ),
    (
        "tolerations have no strategy: replaced whole",
        "Pod",
        _pod(tolerations=[{"key": "a", "operator": "Exists"}]),
        {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}},
        _pod(tolerations=[{"key": "b", "operator": "Exists"}]),
    ),
    (
        "null deletes a key; unmatched null is ignored",
        "Pod",
        _pod(nodeSelector={"a": "1", "b": "2"}),
        {"spec": {"nodeSelector": {"a": None, "zz": None}}},
        _pod(nodeSelector={"b": "2"}),
    ),
    (
        "map $patch: replace",
        "Pod",
        _pod(nodeSelector={"a": "1"}),
        {"spec": {"nodeSelector": {"$patch": "replace", "b": "2"}}},
        _pod(nodeSelector={"b": "2"}),
    ),
    (
        "map $patch: delete empties the map",
        "Pod",
        _pod(nodeSelector={"a": "1"}),
        {"spec": {"nodeSelector": {"$patch": "delete"}}},
        _pod(nodeSelector={}),
    ),
    (
        "finalizers merge as a set of primitives",
        "Pod",
        {"metadata": {"name": "p", "finalizers": ["a", "b"]}},
        {"metadata": {"finalizers": ["b", "c"]}},
        {"metadata": {"name": "p", "finalizers": ["a", "b", "c"]}},
    ),
    (
        "$deleteFromPrimitiveList removes finalizers",
        "Pod",
        {"metadata": {"name": "p", "finalizers": ["a", "b", "c"]}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}},
        {"metadata": {"name": "p", "finalizers": ["a", "c"]}},
    ),
    (
        "$setElementOrder reorders a merged list",
        "Pod",
        _pod(containers=[{"name": "a"}, {"name": "b"}]),
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                "containers": [{"name": "a", "image": "z"}],
            }
        },
        _pod(containers=[{"name": "b"}, {"name": "a", "image": "z"}]),
    ),
    (
        "$setElementOrder keeps server-only items in place",
        "Pod",
        _pod(containers=[{"name": "a"}, {"name": "s"}, {"name": "b"}]),
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
                "containers": [{"name": "c"}],
            }
        },
        _pod(containers=[{"name": "a"}, {"name": "s"}, {"name": "b"}, {"name": "c"}]),
    ),
    (
        "$retainKeys clears keys not listed (volume source switch)",
        "Pod",
        _pod(volumes=[{"name": "v", "hostPath": {"path": "/x"}}]),
        {"spec": {"volumes": [{"name": "v", "emptyDir": {}, "$retainKeys": ["emptyDir", "name"]}]}},
        _pod(volumes=[{"name": "v", "emptyDir": {}}]),
    ),
    (
        "kubectl cordon",
        "Node",
        {"metadata": {"name": "n"}, "spec": {}},
        {"spec": {"unschedulable": True}},
        {"metadata": {"name": "n"}, "spec": {"unschedulable": True}},
    ),
    (
        "kubectl uncordon",
        "Node",
        {"metadata": {"name": "n"}, "spec": {"unschedulable": True}},
        {"spec": {"unschedulable": None}},
        {"metadata": {"name": "n"}, "spec": {}},
    ),
    (
        "kubectl taint: the list is replaced (NodeSpec.Taints has no strategy upstream)",
        "Node",
        {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}},
        {
            "spec": {
                "taints": [
                    {"key": "a", "effect": "NoSchedule"},
                    {"key": "b", "value": "1", "effect": "NoExecute"},
                ]
            }
        },
        {
            "metadata": {"name": "n"},
            "spec": {
                "taints": [
                    {"key": "a", "effect": "NoSchedule"},
                    {"key": "b", "value": "1", "effect": "NoExecute"},
                ]
            },
        },
    ),
    (
        "kubectl label / annotate",
        "Pod",
        {"metadata": {"name": "p", "labels": {"a": "1"}, "annotations": {"x": "y"}}},
        {"metadata": {"labels": {"b": "2", "a": None}, "annotations": {"z": "w"}}},
        {"metadata": {"name": "p", "labels": {"b": "2"}, "annotations": {"x": "y", "z": "w"}}},
    ),
    (
        "scheduler status patch: PodScheduled condition merged by type",
        "Pod",
        {
            "metadata": {"name": "p"},
            "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]},
        },
        {
            "status": {
                "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "PodScheduled"}],
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/3 nodes",
                    }
                ],
            }
        },
        {
            "metadata": {"name": "p"},
            "status": {
                "phase": "Pending",
                "conditions": [
                    {"type": "Ready", "status": "False"},
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/3 nodes",
                    },
                ],
            },
        },
    ),
    (
        "existing condition updated in place",
        "Pod",
        {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "U"}]}},
        {"status": {"conditions": [{"type": "PodScheduled", "status": "True", "reason": None}]}},
        {"status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}},
    ),
    (
        "node status conditions merge by type",
        "Node",
        {
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "True", "lastHeartbeatTime": "t0"},
                    {"type": "MemoryPressure", "status": "False"},
                ]
            }
        },
        {"status": {"conditions": [{"type": "Ready", "lastHeartbeatTime": "t1"}]}},
        {
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "True", "lastHeartbeatTime": "t1"},
                    {"type": "MemoryPressure", "status": "False"},
                ]
            }
        },
    ),
    (
        "ownerReferences merge by uid",
        "Pod",
        {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}},
        {"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}]}},
        {"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}, {"uid": "1", "name": "a"}]}},
    ),
    (
        "template containers merge in a ReplicaSet",
        "ReplicaSet",
        {"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a"}]}}}},
        {
            "spec": {
                "replicas": 3,
                "template": {"spec": {"containers": [{"name": "a", "image": "i"}]}},
            }
        },
        {
            "spec": {
                "replicas": 3,
                "template": {"spec": {"containers": [{"name": "a", "image": "i"}]}},
            }
        },
    ),
    (
        "new field with directives inside is cleaned",
        "Pod",
        _pod(),
        {"spec": {"containers": [{"name": "a"}, {"name": "b", "$patch": "delete"}]}},
        _pod(containers=[{"name": "a"}]),
    ),
    (
        "top-level $patch: delete",
        "ConfigMap",
        {"data": {"a": "1"}},
        {"$patch": "delete"},
        {},
    ),
]


@pytest.mark.parametrize(
    ("kind", "original", "patch", "result"),
    [case[1:] for case in SMP_CASES],
    ids=[case[0] for case in SMP_CASES],
)
def test_strategic_merge(
    kind: str, original: dict[str, Any], patch: dict[str, Any], result: dict[str, Any]
) -> None:
    before_original, before_patch = repr(original), repr(patch)
    assert apply_strategic_merge_patch(original, patch, kind) == result
    assert (repr(original), repr(patch)) == (before_original, before_patch)


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (
            {"spec": {"containers": [{"image": "x"}]}},
            "map: {'image': 'x'} does not contain declared merge key: name",
        ),
        (
            {"spec": {"containers": [{"name": "a", "$patch": "merge"}]}},
            "merging lists cannot yet be specified in the patch",
        ),
        (
            {"spec": {"nodeSelector": {"$patch": "frob"}}},
            "unknown patch type: frob in map: {'$patch': 'frob'}",
        ),
        (
            {
                "spec": {
                    "$setElementOrder/containers": [{"name": "b"}],
                    "containers": [{"name": "a"}],
                }
            },
            None,
        ),
        (
            {"spec": {"volumes": [{"name": "v", "emptyDir": {}, "$retainKeys": ["name"]}]}},
            "invalid patch format of retainKeys",
        ),
    ],
)
def test_strategic_merge_errors(patch: dict[str, Any], message: str | None) -> None:
    original = _pod(
        containers=[{"name": "a"}], nodeSelector={"a": "b"}, volumes=[{"name": "v", "emptyDir": {}}]
    )
    with pytest.raises(PatchError) as err:
        apply_strategic_merge_patch(original, patch, "Pod")
    if message is not None:
        assert str(err.value) == message


def test_kubectl_apply_three_way_patch() -> None:
    """The patch kubectl apply sends on a second apply that changes the image and drops env Y."""
    live = _pod(
        containers=[
            {
                "name": "app",
                "image": "nginx:1",
                "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
                "terminationMessagePath": "/dev/termination-log",
            }
        ]
    )
    live["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{}"}
    patch = {
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{2}"}},
        "spec": {
            "$setElementOrder/containers": [{"name": "app"}],
            "containers": [
                {
                    "$setElementOrder/env": [{"name": "X"}],
                    "name": "app",
                    "image": "nginx:2",
                    "env": [{"$patch": "delete", "name": "Y"}],
                }
            ],
        },
    }
    result = apply_strategic_merge_patch(live, patch, "Pod")
    assert result["spec"]["containers"] == [
        {
            "name": "app",
            "image": "nginx:2",
            "env": [{"name": "X", "value": "1"}],
            "terminationMessagePath": "/dev/termination-log",
        }
    ]
    assert result["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/last-applied-configuration": "{2}"
    }
