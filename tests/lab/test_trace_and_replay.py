"""The trace format (YAML documents and JSON lines, errors that name the object), and what a
replay does with time: departures free room, a pod that does not fit waits (retry) or is
dropped after its one cycle (the paper's mode), and the GPU a share takes follows the policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lab_traces import claim, gpu_slice, node, pod

from apimachinery.eventloop import run_event_loop
from profiles.api import load_config_text
from scheduler.cycle.profile_set import full_registry, registry_for_config
from scheduler.lab.engine import Replay
from scheduler.lab.openb import device_class
from scheduler.lab.trace import TraceError, build_trace, dump_objects, load_trace


def _config(score_plugin: str | None = None) -> Any:
    plugins = ""
    if score_plugin:
        plugins = f"""
  plugins:
    score:
      disabled: [{{name: "*"}}]
      enabled: [{{name: {score_plugin}, weight: 1}}]"""
    text = f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: lab{plugins}
"""
    return load_config_text(text, registry_for_config())


def _replay(
    objects: list[dict[str, Any]],
    *,
    retry: bool = True,
    policy: str | None = None,
    gates: dict[str, bool] | None = None,
):
    trace = build_trace("t", ((f"object {i}", o) for i, o in enumerate(objects)))
    replay = Replay(_config(policy), full_registry(), 1, retry=retry, feature_gates=gates)
    result = run_event_loop(replay.run(trace))
    return replay, result


def test_yaml_and_json_lines_give_the_same_trace(tmp_path: Path) -> None:
    objects = [
        node("n1", 4),
        claim("c1", 1),
        pod("late", 100, arrival=5),
        pod("early", 100, "c1", arrival=1, departure=9),
    ]
    dump_objects(objects, tmp_path / "t.yaml")
    dump_objects(objects, tmp_path / "t.jsonl")
    from_yaml, from_json = load_trace(tmp_path / "t.yaml"), load_trace(tmp_path / "t.jsonl")
    assert [a.key for a in from_yaml.pods] == ["default/early", "default/late"]
    assert from_yaml.pods == from_json.pods
    early = from_yaml.pods[0]
    assert (early.time, early.departure, len(early.claims)) == (1.0, 9.0, 1)
    assert from_yaml.claims == ()  # the pod brings it


def test_a_list_is_unpacked(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(
        json.dumps({"kind": "List", "items": [node("n1", 4), pod("p", 100)]})
    )
    trace = load_trace(tmp_path / "t.yaml")
    assert (len(trace.nodes), len(trace.pods)) == (1, 1)


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        ([{"kind": "Service", "metadata": {"name": "s"}}], "kind 'Service' is not one of"),
        ([pod("p", 100, arrival=-1)], "must be a finite number >= 0"),
        ([pod("p", 100, arrival=5, departure=2)], "departs at 2.0s, before it arrives"),
        ([pod("p", 100, "missing")], "names ResourceClaim default/missing, not in trace"),
        ([pod("p", 100), pod("p", 200)], "a second Pod default/p"),
        ([{"kind": "Node", "metadata": {}}], "Node without metadata.name"),
    ],
)
def test_bad_traces_are_refused_with_the_object_named(
    objects: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(TraceError, match=r"object [01]") as err:
        build_trace("t", ((f"object {i}", o) for i, o in enumerate(objects)))
    assert message in str(err.value)


def test_a_malformed_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text('{"kind": "Node"}\n{not json\n')
    with pytest.raises(TraceError, match=r"t.jsonl:2: not JSON"):
        load_trace(tmp_path / "t.jsonl")


# SchedulerAsyncAPICalls: the replay runs the API dispatcher its bindings wait for.
@pytest.mark.parametrize("async_api_calls", [False, True])
def test_a_pod_waits_until_a_departure_frees_room(async_api_calls: bool) -> None:
    objects = [
        node("n1", 1),
        pod("first", 800, arrival=0, departure=30),
        pod("second", 800, arrival=10),
    ]
    _, result = _replay(objects, gates={"SchedulerAsyncAPICalls": async_api_calls})
    assert result.failed == []
    assert result.placements == {"default/first": "n1", "default/second": "n1"}
    # The departure at 30 s is an assigned-pod delete: the queue moves "second" at once.
    assert sorted(result.pending_seconds) == [0.0, 20.0]


def test_without_retry_a_pod_gets_one_cycle() -> None:
    objects = [
        node("n1", 1),
        pod("first", 800, arrival=0, departure=30),
        pod("second", 800, arrival=10),
        pod("third", 800, arrival=40),
    ]
    _, result = _replay(objects, retry=False)
    assert result.failed == ["default/second"]
    assert result.placements == {"default/first": "n1", "default/third": "n1"}


def _share_claim(name: str, milli: int) -> dict[str, Any]:
    obj = claim(name, 1)
    obj["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {
        "requests": {"milli": str(milli)}
    }
    return obj


def _shared_node() -> list[dict[str, Any]]:
    gpus = gpu_slice("n1", 2, "A10")
    for device in gpus["spec"]["devices"]:
        device["allowMultipleAllocations"] = True
        device["capacity"]["milli"]["requestPolicy"] = {
            "default": "1000",
            "validRange": {"min": "1", "step": "1"},
        }
    return [device_class(), node("n1", 16), gpus]


def _gpu_of(replay: Replay, name: str) -> str:
    view = replay.scheduler.cluster_objects.resources.claim("default", name)
    assert view is not None and view.allocation is not None
    (device,) = view.allocation.devices
    return device.device


@pytest.mark.parametrize(
    ("policy", "want"),
    [
        (None, "gpu-0"),  # no ranker: the allocator's order, the first GPU that holds it
        ("BestFit", "gpu-1"),  # the GPU with the least left that holds it
        ("GpuPacking", "gpu-1"),  # the same GPU choice ("best")
    ],
)
def test_the_policy_chooses_the_gpu_a_share_takes(policy: str | None, want: str) -> None:
    # "a" takes gpu-0 (700 left), "b" gpu-1 (gpu-0 lacks 800; 200 left); then a 150 share:
    # first fit takes gpu-0, best fit the GPU with the least left that holds it, gpu-1.
    objects = [
        *_shared_node(),
        _share_claim("a", 300), pod("a", 100, "a", arrival=0),  # gpu-0: 700 left
        _share_claim("b", 800), pod("b", 100, "b", arrival=1),  # gpu-1 (gpu-0 lacks 800): 200
        _share_claim("c", 150), pod("c", 100, "c", arrival=2),  # the decision
    ]  # fmt: skip
    replay, result = _replay(objects, policy=policy)
    assert result.failed == []
    assert (_gpu_of(replay, "a"), _gpu_of(replay, "b")) == ("gpu-0", "gpu-1")
    assert _gpu_of(replay, "c") == want


def test_node_rank_sends_ties_to_one_node_every_time() -> None:
    # Four identical nodes: with no score but NodeRank's, every pod goes to the node of the
    # highest seeded rank (the simulator's tie-break); without it, upstream's uniform
    # tie-break spreads them.
    objects = [*(node(f"n{i}", 4) for i in range(4))]
    objects += [pod(f"p{i}", 100, arrival=i) for i in range(8)]
    _, ranked = _replay(objects, policy="NodeRank")
    assert len(set(ranked.placements.values())) == 1
    _, spread = _replay(objects, policy="DotProduct")  # CPU-only pods: it scores all alike
    assert len(set(spread.placements.values())) > 1
