"""The service logs the end of leadership at info when it was asked to stop, and warns only
when the lease was lost (kube-scheduler's OnStoppedLeading: "Requested to terminate, exiting"
at info, "Leaderelection lost" otherwise)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest

from scheduler.app.service import SchedulerService


@dataclass
class FakeElector:
    lost: bool

    def describe(self) -> str:
        return "kube-system/kube-scheduler"


@pytest.mark.parametrize(("lost", "level"), [(False, logging.INFO), (True, logging.WARNING)])
def test_stopped_leading_level(lost: bool, level: int, caplog: pytest.LogCaptureFixture) -> None:
    service = SchedulerService(config_path=None, http_host="127.0.0.1", http_port=0)
    service.elector = FakeElector(lost)  # type: ignore[assignment]
    with caplog.at_level(logging.INFO, logger="scheduler.app.service"):
        service._stopped_leading()
    [record] = [r for r in caplog.records if r.getMessage().startswith("stopped leading")]
    assert record.levelno == level
    assert ("lease was lost" in record.getMessage()) is lost
