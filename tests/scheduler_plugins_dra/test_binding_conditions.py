"""Binding conditions (DRADeviceBindingConditions): the allocation copies a device's
conditions; a claim is ready when every binding condition of its devices is True in
status.devices, failed (upstream's "device binding failed" message) when a failure condition is
True, timed out (upstream's "device binding timeout") bindingTimeout after allocationTimestamp.
Upstream: dynamicresources.go isClaimReadyForBinding, isClaimTimeout, isPodReadyForBinding."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler.api.resource import ResourceClaimView
from scheduler.plugins.dynamicresources import binding
from scheduler.plugins.dynamicresources.allocator import AllocatedState, Allocator, DRAFeatures
from tests.scheduler_plugins_dra.builders import CLAIM_0, REQ_0, claim, exact, node
from tests.scheduler_plugins_dra.test_allocator_consumable_capacity import (
    dev,
    plain_class,
    slice_of,
)

ATTACHED = "dra.example.com/attached"
FAILED = "dra.example.com/failed"


def _claim(conditions: list[dict[str, Any]] | None, stamp: str = "") -> ResourceClaimView:
    result = {"request": "r", "driver": "driver-a", "pool": "pool-1", "device": "device-1",
              "bindingConditions": [ATTACHED], "bindingFailureConditions": [FAILED]}  # fmt: skip
    allocation: dict[str, Any] = {"devices": {"results": [result]}}
    if stamp:
        allocation["allocationTimestamp"] = stamp
    status: dict[str, Any] = {"allocation": allocation}
    if conditions is not None:
        status["devices"] = [{"driver": "driver-a", "pool": "pool-1", "device": "device-1",
                              "conditions": conditions}]  # fmt: skip
    return ResourceClaimView.from_dict({
        "metadata": {"name": "gpu-claim", "namespace": "default", "uid": "u"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}},
        "status": status,
    })  # fmt: skip


def _condition(kind: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message}


def test_ready_only_when_every_binding_condition_is_true() -> None:
    assert binding.claim_ready(_claim(None)) is False
    assert binding.claim_ready(_claim([_condition(ATTACHED, "False")])) is False
    assert binding.claim_ready(_claim([_condition(ATTACHED, "True")])) is True


def test_a_true_failure_condition_fails_with_upstreams_message() -> None:
    failed = _claim([_condition(ATTACHED, "False"), _condition(FAILED, "True", "NoFabric", "x")])
    with pytest.raises(binding.BindingFailed) as err:
        binding.claim_ready(failed)
    assert str(err.value) == 'device binding failed: claim=gpu-claim, reason=NoFabric, message="x"'


def test_timeout_counts_from_the_allocation_timestamp() -> None:
    old = (datetime.now(UTC) - timedelta(seconds=700)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert binding.claim_stuck(_claim(None, old), 600.0)
    assert not binding.claim_stuck(_claim(None, old), 900.0)
    assert not binding.claim_stuck(_claim(None), 600.0)  # no timestamp: never
    with pytest.raises(binding.BindingFailed, match=r"^device binding timeout: claim=gpu-claim$"):
        binding.pod_ready([_claim(None, old)], 600.0)
    assert binding.pod_ready([_claim([_condition(ATTACHED, "True")], old)], 600.0)


@pytest.mark.parametrize("feature", [True, False])
def test_the_allocation_copies_the_devices_conditions_with_the_feature(feature: bool) -> None:
    device = dev("device-1", shared=False)
    device["bindingConditions"] = [ATTACHED]
    device["bindingFailureConditions"] = [FAILED]
    allocator = Allocator(
        features=DRAFeatures(device_binding_conditions=feature),
        allocated=AllocatedState(),
        classes={"class-a": plain_class()},
        slices=[slice_of(device)],
    )
    got = allocator.allocate(node(), [claim(CLAIM_0, exact(REQ_0))])
    if not feature:
        assert got is None  # a device with binding conditions is not selectable without it
        return
    assert got is not None
    (result,) = got[0].to_dict()["devices"]["results"]
    assert result["bindingConditions"] == [ATTACHED]
    assert result["bindingFailureConditions"] == [FAILED]
