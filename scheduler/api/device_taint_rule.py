"""DeviceTaintRules (`resource.k8s.io/v1beta2`, DRADeviceTaintRules): a taint for the devices
a selector names, from outside their ResourceSlices (upstream's
staging/src/k8s.io/api/resource/v1beta2/types.go DeviceTaintRule)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.fields import as_mapping, as_str
from scheduler.api.resource import DeviceTaint


@dataclass(frozen=True, slots=True)
class DeviceTaintRuleView:
    """A taint for the devices its selector names ("" matches any driver, pool or device)."""

    name: str
    uid: str
    resource_version: str
    driver: str
    pool: str
    device: str
    taint: DeviceTaint
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return self.name

    def selects(self, driver: str, pool: str, device: str) -> bool:
        return (
            (not self.driver or self.driver == driver)
            and (not self.pool or self.pool == pool)
            and (not self.device or self.device == device)
        )

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> DeviceTaintRuleView:
        meta = as_mapping(as_mapping(obj, "devicetaintrule").get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        selector = as_mapping(spec.get("deviceSelector"), "spec.deviceSelector")
        taint = as_mapping(spec.get("taint"), "spec.taint")
        return DeviceTaintRuleView(
            name=as_str(meta.get("name"), "metadata.name"),
            uid=as_str(meta.get("uid"), "metadata.uid"),
            resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            driver=as_str(selector.get("driver"), "spec.deviceSelector.driver"),
            pool=as_str(selector.get("pool"), "spec.deviceSelector.pool"),
            device=as_str(selector.get("device"), "spec.deviceSelector.device"),
            taint=DeviceTaint(
                key=as_str(taint.get("key"), "spec.taint.key"),
                value=as_str(taint.get("value"), "spec.taint.value"),
                effect=as_str(taint.get("effect"), "spec.taint.effect"),
            ),
            raw=obj,
        )
