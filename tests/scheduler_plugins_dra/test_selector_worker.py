"""Selectors too expensive for a scheduling cycle (static estimate over INLINE_MAX_COST, or too
long to compile inline) are compiled and evaluated on the worker thread while their pod waits;
the outcomes it stores are those evaluating inline gives (matches, non-matches and runtime
errors alike), so the allocator decides the same; cheap selectors never wait."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.objects import PodView
from scheduler.api.resource import DeviceClassView, ResourceSliceView
from scheduler.framework.status import Code
from scheduler.plugins.dynamicresources.allocator import AllocatedState, Allocator, DRAFeatures
from scheduler.plugins.dynamicresources.cel import (
    INLINE_COMPILE_LENGTH,
    INLINE_MAX_COST,
    CelCache,
    CelRuntimeError,
    compile_selector,
)
from scheduler.plugins.dynamicresources.selector_worker import (
    WAITING_MESSAGE,
    SelectorGate,
    claim_selectors,
)
from scheduler.testing import make_pod, run_cycle
from tests.scheduler_plugins_dra import dra_plugin_kit as kit
from tests.scheduler_plugins_dra.builders import (
    CLASS_A,
    DEVICE_1,
    DEVICE_2,
    DRIVER_A,
    NODE_1,
    claim,
    device,
    driver_class,
    exact,
    node,
    resource_slice,
    results,
)

ATTRIBUTES = f'device.attributes["{DRIVER_A}"]'
EXPENSIVE = [
    f'{ATTRIBUTES}.exists(k, k == "model")',  # true on DEVICE_1 only
    f'{ATTRIBUTES}.exists(k, k == "nothing")',  # false everywhere
    f"{ATTRIBUTES}.all(k, {ATTRIBUTES}.model == 'a')",  # a runtime error on DEVICE_2
]
SLICES = [
    resource_slice(
        "s",
        NODE_1,
        "pool-1",
        DRIVER_A,
        device(DEVICE_1, attributes={"model": "a"}),
        device(DEVICE_2, attributes={"index": 1}),
    )
]


class Activations:
    def __init__(self) -> None:
        self.pods: list[PodView] = []
        self.event = asyncio.Event()

    def __call__(self, pods: Sequence[PodView]) -> None:
        self.pods.extend(pods)
        self.event.set()


def pod() -> PodView:
    return make_pod("p")


def inline_outcome(expression: str, device_index: int) -> bool | str:
    cache = CelCache()
    compiled = cache.get_or_compile(expression)
    resource_slice_ = SLICES[0]
    try:
        return cache.device_matches(
            compiled,
            resource_slice_.uid,
            resource_slice_.resource_version,
            DRIVER_A,
            resource_slice_.devices[device_index],
        )
    except CelRuntimeError as err:
        return str(err)


def test_the_bound_splits_cheap_from_expensive() -> None:
    assert not compile_selector(f'device.driver == "{DRIVER_A}"').off_loop
    assert not compile_selector(f'{ATTRIBUTES}.model == "a" && {ATTRIBUTES}.index > 1').off_loop
    for expression in EXPENSIVE:
        assert compile_selector(expression).max_cost > INLINE_MAX_COST


def test_without_a_loop_or_an_activator_nothing_waits() -> None:
    assert not SelectorGate(CelCache(), Activations()).pending(pod(), EXPENSIVE, lambda: SLICES)

    async def on_a_loop() -> bool:
        return SelectorGate(CelCache(), None).pending(pod(), EXPENSIVE, lambda: SLICES)

    assert not asyncio.run(on_a_loop())


async def test_cheap_selectors_never_wait() -> None:
    gate = SelectorGate(CelCache(), Activations())
    listed: list[int] = []

    def slices() -> list:  # type: ignore[type-arg]
        listed.append(1)
        return SLICES

    assert not gate.pending(pod(), [f'device.driver == "{DRIVER_A}"'], slices)
    assert listed == []  # no device was even looked at


async def test_expensive_selectors_are_evaluated_off_the_loop_as_inline() -> None:
    cache = CelCache()
    activations = Activations()
    gate = SelectorGate(cache, activations)
    waiting = pod()
    assert gate.pending(waiting, EXPENSIVE, lambda: SLICES)
    assert gate.pending(waiting, EXPENSIVE, lambda: SLICES)  # asked again: nothing new handed
    await asyncio.wait_for(activations.event.wait(), 30)
    assert [p.uid for p in activations.pods] == [waiting.uid]
    assert not gate.pending(waiting, EXPENSIVE, lambda: SLICES)
    for expression in EXPENSIVE:
        compiled = cache.get_or_compile(expression)
        for index, device_ in enumerate(SLICES[0].devices):
            key = cache.result_key(compiled, DRIVER_A, device_)
            assert cache._off_loop_results[key] == inline_outcome(expression, index)


async def test_long_expressions_are_compiled_off_the_loop() -> None:
    cache = CelCache()
    activations = Activations()
    gate = SelectorGate(cache, activations)
    long = " || ".join([f'device.driver == "{DRIVER_A}"'] * 20)
    assert len(long) > INLINE_COMPILE_LENGTH
    assert gate.pending(pod(), [long], lambda: SLICES)
    assert cache.compiled(long) is None
    await asyncio.wait_for(activations.event.wait(), 30)
    compiled = cache.compiled(long)
    assert compiled is not None and compiled.error is None
    assert not gate.pending(pod(), [long], lambda: SLICES)  # cheap once compiled


@pytest.mark.parametrize("expression", EXPENSIVE)
async def test_the_allocator_decides_as_inline(expression: str) -> None:
    claims = [claim("c", exact(selectors=(expression,)))]
    classes = {CLASS_A: driver_class(CLASS_A, DRIVER_A)}
    assert claim_selectors(claims, classes.get) == [f'device.driver == "{DRIVER_A}"', expression]

    def allocate(cache: CelCache) -> object:
        allocator = Allocator(
            features=DRAFeatures(),
            allocated=AllocatedState(devices=frozenset()),
            classes=classes,
            slices=SLICES,
            cel_cache=cache,
        )
        try:
            return results(allocator.allocate(node(), claims))
        except Exception as err:
            return str(err)

    warmed = CelCache()
    activations = Activations()
    gate = SelectorGate(warmed, activations)
    assert gate.pending(pod(), claim_selectors(claims, classes.get), lambda: SLICES)
    await asyncio.wait_for(activations.event.wait(), 30)
    assert not gate.pending(pod(), claim_selectors(claims, classes.get), lambda: SLICES)
    assert allocate(warmed) == allocate(CelCache())


async def test_close_cancels_an_evaluation_under_way() -> None:
    twenty = "[" + ", ".join(str(i) for i in range(20)) + "]"
    slow = f"{twenty}.all(a, {twenty}.all(b, {twenty}.all(c, true)))"
    cache = CelCache()
    activations = Activations()
    gate = SelectorGate(cache, activations)
    assert gate.pending(pod(), [slow], lambda: SLICES)
    await asyncio.sleep(0.2)
    gate.close()
    thread = gate._thread
    assert thread is not None
    await asyncio.to_thread(thread.join, 5)
    assert not thread.is_alive()
    assert activations.pods == []  # nothing stored, nobody woken


_VALUES = st.one_of(st.integers(-3, 3), st.booleans(), st.sampled_from(["a", "b"]))


@given(attributes=st.dictionaries(st.sampled_from(["model", "index", "flag"]), _VALUES))
@settings(max_examples=25, deadline=None)
def test_the_worker_s_evaluation_agrees_with_the_cycle_s(attributes: dict[str, Any]) -> None:
    """The worker's path (yielding every few units, cancellable) gives what evaluating in
    the cycle gives, for any attributes: matches, non-matches and runtime errors alike."""
    slices = [
        resource_slice("h", NODE_1, "pool-1", DRIVER_A, device(DEVICE_1, attributes=attributes))
    ]
    expressions = [*EXPENSIVE, f"{ATTRIBUTES}.exists(k, {ATTRIBUTES}.index > 0)"]
    for expression in expressions:
        cache = CelCache()
        compiled = cache.get_or_compile(expression)
        work = list(cache.missing(compiled, slices))
        assert len(work) == 1
        off_loop = cache.evaluate(work[0], threading.Event())
        try:
            inline: bool | str = cache.device_matches(
                compiled, slices[0].uid, "1", DRIVER_A, slices[0].devices[0]
            )
        except CelRuntimeError as err:
            inline = str(err)
        assert off_loop == inline, expression


async def test_the_plugin_holds_the_pod_until_the_worker_is_done() -> None:
    """PreEnqueue gates a pod whose class selector is expensive until the worker has
    evaluated it on every device, then the queue is asked to activate it and the cycle
    allocates as it would have inline; a slice republished with a device changed before the
    cycle makes PreFilter wait again rather than evaluate (republished unchanged, the outcomes
    stored still hold)."""
    expensive = DeviceClassView.from_dict(
        {
            "metadata": {"name": kit.CLASS, "uid": "c", "resourceVersion": "1"},
            "spec": {"selectors": [{"cel": {"expression": (
                f'device.attributes["{kit.DRIVER}"].exists(k, k == "model")'
            )}}]},
        }
    )  # fmt: skip
    gpu = {"name": "gpu-0", "attributes": {"model": {"string": "a"}}}
    slice_raw = {
        "metadata": {"name": "s", "uid": "s", "resourceVersion": "1"},
        "spec": {"driver": kit.DRIVER, "nodeName": "worker", "devices": [gpu],
                 "pool": {"name": "worker", "generation": 1, "resourceSliceCount": 1}},
    }  # fmt: skip
    activations = Activations()
    framework, resources, _ = kit.setup(
        expensive,
        kit.claim(),
        ResourceSliceView.from_dict(slice_raw),
        activate=activations,
    )
    waiting = kit.pod(claims=[{"name": "r", "resourceClaimName": "my-claim"}])
    status = framework.run_pre_enqueue_plugins(waiting)
    assert (status.code, status.message) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING_MESSAGE)
    await asyncio.wait_for(activations.event.wait(), 30)
    assert [p.uid for p in activations.pods] == [waiting.uid]
    assert framework.run_pre_enqueue_plugins(waiting).is_success
    assert run_cycle(framework, waiting).filter["worker"].is_success
    # the driver republishes its slice unchanged, then with the GPU changed, before the pod's
    # next cycles
    resources.add(ResourceSliceView.from_dict({**slice_raw, "metadata": {
        **slice_raw["metadata"], "resourceVersion": "2"}}))  # fmt: skip
    assert run_cycle(framework, waiting).filter["worker"].is_success
    changed = {**gpu, "attributes": {"model": {"string": "a"}, "index": {"int": 0}}}
    resources.add(ResourceSliceView.from_dict({
        "metadata": {**slice_raw["metadata"], "resourceVersion": "3"},
        "spec": {**slice_raw["spec"], "devices": [changed]}}))  # fmt: skip
    activations.event.clear()
    result = run_cycle(framework, waiting)
    assert result.pre_filter.message == WAITING_MESSAGE
    await asyncio.wait_for(activations.event.wait(), 30)
    assert run_cycle(framework, waiting).filter["worker"].is_success
