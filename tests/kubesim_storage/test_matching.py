"""The binder's volume index and matching rules without a server: candidates come best first
(fewest access modes, then smallest), pre-bound volumes win, updates move volumes in and out."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubesim.storage.index import VolumeIndex
from kubesim.storage.matching import best_volume, satisfies
from kubesim.storage.objects import Malformed

GI = 2**30


def volume(
    name: str, size: str, modes: tuple[str, ...] = ("ReadWriteOnce",), cls: str = "c", **spec: Any
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": list(modes),
            "storageClassName": cls,
            **spec,
        },
    }


def claim(size: str = "1Gi", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "data", "namespace": "ns", "uid": "claim-uid"},
        "spec": {
            "resources": {"requests": {"storage": size}},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "c",
            **spec,
        },
    }


RWO_ROX = ("ReadWriteOnce", "ReadOnlyMany")


@pytest.mark.parametrize(
    ("volumes", "request_gi", "expected"),
    [
        ([volume("a", "5Gi"), volume("b", "2Gi"), volume("c", "1Gi")], 2, ["b", "a"]),
        ([volume("wide", "1Gi", RWO_ROX), volume("narrow", "9Gi")], 1, ["narrow", "wide"]),
        ([volume("x", "1Gi"), volume("y", "1Gi", cls="other")], 1, ["x"]),
        ([volume("bad", "lots"), volume("ok", "1Gi")], 0, ["ok"]),
        ([volume("taken", "1Gi", claimRef={"namespace": "ns", "name": "data"})], 0, []),
    ],
    ids=[
        "size-order-and-cut",
        "fewest-modes-group-first",
        "other-class",
        "malformed-skipped",
        "claimed-not-offered",
    ],
)
def test_offered_order(volumes: list[dict[str, Any]], request_gi: int, expected: list[str]) -> None:
    index = VolumeIndex()
    for item in volumes:
        index.add(item)
    assert list(index.offered("c", Fraction(request_gi * GI))) == expected


def test_index_follows_updates_and_deletes() -> None:
    index = VolumeIndex()
    free = volume("v", "1Gi")
    index.add(free)
    taken = volume("v", "1Gi", claimRef={"namespace": "ns", "name": "data"})
    index.remove(free)
    index.add(taken)
    assert list(index.offered("c", Fraction(0))) == []
    assert index.by_claim == {("ns", "data"): {"v"}}
    index.remove(taken)
    assert index.by_claim == {}
    index.add(free)
    index.add(free)  # twice: still offered once
    assert list(index.offered("c", Fraction(0))) == ["v"]


@pytest.mark.parametrize(
    ("prebound", "offered", "delay", "expected"),
    [
        (
            [volume("mine", "5Gi", claimRef={"namespace": "ns", "name": "data"})],
            [volume("small", "1Gi")],
            False,
            "mine",
        ),
        (
            [volume("old", "5Gi", claimRef={"namespace": "ns", "name": "data", "uid": "gone"})],
            [volume("small", "1Gi")],
            False,
            "small",
        ),
        ([volume("tiny", "1Mi", claimRef={"namespace": "ns", "name": "data"})], [], False, None),
        ([], [volume("small", "1Gi")], True, None),
        ([volume("mine", "1Gi", claimRef={"namespace": "ns", "name": "data"})], [], True, "mine"),
        ([], [volume("block", "1Gi", volumeMode="Block"), volume("fs", "2Gi")], False, "fs"),
    ],
    ids=[
        "prebound-wins",
        "other-uid-not-mine",
        "prebound-too-small",
        "delay-skips-offers",
        "delay-takes-prebound",
        "first-fit-in-order",
    ],
)
def test_best_volume(
    prebound: list[dict[str, Any]], offered: list[dict[str, Any]], delay: bool, expected: str | None
) -> None:
    found = best_volume(claim(), prebound, offered, delay_binding=delay)
    assert (found and found["metadata"]["name"]) == (expected or None)


@pytest.mark.parametrize(
    ("candidate", "fits"),
    [
        (volume("v", "1Gi"), True),
        (volume("v", "1Gi", cls="x"), False),
        (volume("v", "1Gi", modes=("ReadOnlyMany",)), False),
        (volume("v", "1"), False),
        (volume("v", "2Gi", volumeMode="Block"), False),
    ],
    ids=["fits", "class", "modes", "size", "volume-mode"],
)
def test_a_named_volume_must_satisfy_the_claim(candidate: dict[str, Any], fits: bool) -> None:
    assert satisfies(candidate, claim()) is fits


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, "small"),
        ({}, "small"),
        ({"matchLabels": {"tier": "fast"}}, "fast"),
        ({"matchExpressions": [{"key": "tier", "operator": "Bogus"}]}, "small"),
        ({"matchExpressions": [{"key": "tier", "operator": "In"}]}, None),
    ],
    ids=["none", "empty", "labels", "unknown-operator-ignored", "in-without-values"],
)
def test_claim_selector_picks_volumes_as_written(selector: Any, expected: str | None) -> None:
    offered = [
        volume("small", "1Gi"),
        {
            **volume("fast", "2Gi"),
            "metadata": {"name": "fast", "uid": "uid-fast", "labels": {"tier": "fast"}},
        },
    ]
    found = best_volume(claim(selector=selector), [], offered, delay_binding=False)
    assert (found and found["metadata"]["name"]) == expected


def test_a_claim_selector_of_the_wrong_type_is_malformed() -> None:
    with pytest.raises(Malformed, match=r"spec\.selector"):
        best_volume(claim(selector=["tier"]), [], [volume("v", "1Gi")], delay_binding=False)
