"""DeviceTaintRules (DRADeviceTaintRules, resource.k8s.io/v1beta2): their taints join the
devices they select (driver, pool, device; an unset field selects all), and the allocator treats
them as the slices' own taints: NoSchedule and NoExecute keep a device from requests that do not
tolerate them. Through the plugin with the gate on and off."""

from __future__ import annotations

from typing import Any

from scheduler.api.device_taint_rule import DeviceTaintRuleView
from scheduler.api.resource import ResourceClaimView
from scheduler.listers.resource_objects import ResourceObjects
from scheduler.testing import run_cycle
from tests.scheduler_plugins_dra.dra_plugin_kit import (
    DRIVER,
    claim_raw,
    device_class,
    node_slice,
    pod,
    setup,
)


def rule(name: str, *, device: str = "", pool: str = "", effect: str = "NoSchedule") -> Any:
    selector = {k: v for k, v in (("driver", DRIVER), ("pool", pool), ("device", device)) if v}
    return DeviceTaintRuleView.from_dict({
        "metadata": {"name": name, "uid": name, "resourceVersion": "1"},
        "spec": {"deviceSelector": selector,
                 "taint": {"key": "example.com/broken", "value": "yes", "effect": effect}},
    })  # fmt: skip


def test_rules_taint_the_devices_they_select_and_follow_changes() -> None:
    resources = ResourceObjects()
    resources.add(node_slice("worker", 2), node_slice("other", 1))
    assert all(not d.taints for s in resources.slices_with_taint_rules() for d in s.devices)
    resources.add(rule("gpu-0-of-worker", pool="worker", device="gpu-0"))
    tainted = {
        (s.pool_name, d.name): [t.key for t in d.taints]
        for s in resources.slices_with_taint_rules()
        for d in s.devices
    }
    assert tainted == {("worker", "gpu-0"): ["example.com/broken"], ("worker", "gpu-1"): [],
                       ("other", "gpu-0"): []}  # fmt: skip
    resources.taint_rules.on_delete(resources.taint_rules.get("gpu-0-of-worker"))
    assert all(not d.taints for s in resources.slices_with_taint_rules() for d in s.devices)


def _feasible(gates: dict[str, bool] | None, effect: str, toleration: bool = False) -> bool:
    raw = claim_raw()
    if toleration:
        raw["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [
            {"key": "example.com/broken", "operator": "Exists"}
        ]
    framework, _, _ = setup(
        device_class(), node_slice("worker", 1), ResourceClaimView.from_dict(raw),
        rule("all-of-driver", effect=effect), gates=gates,
    )  # fmt: skip
    p = pod(claims=[{"name": "gpu", "resourceClaimName": "my-claim"}])
    return run_cycle(framework, p).filter["worker"].is_success


def test_the_plugin_honours_rules_with_the_gate_on_only() -> None:
    on = {"DRADeviceTaintRules": True}
    assert _feasible({"DRADeviceTaintRules": False}, "NoSchedule") is True
    assert _feasible(None, "NoSchedule") is False  # on by default, as v1.37
    assert _feasible(on, "NoSchedule") is False
    assert _feasible(on, "NoExecute") is False
    assert _feasible(on, "None") is True  # only the known effects keep devices away
    assert _feasible(on, "NoSchedule", toleration=True) is True
