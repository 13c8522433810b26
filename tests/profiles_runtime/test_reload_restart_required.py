"""A reload applies what it can between cycles (the queue's backoff included); changes that need
a restart are logged and counted as aiosched_config_reloads_total{result="restart_required"}."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from harness import running_scheduler

from scheduler.app.service import SchedulerService

BASE = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {{leaderElect: false{lease}}}
podInitialBackoffSeconds: {initial}
podMaxBackoffSeconds: {maximum}
{extra}"""


def text(initial: int = 1, maximum: int = 10, lease: str = "", extra: str = "") -> str:
    return BASE.format(initial=initial, maximum=maximum, lease=lease, extra=extra)


def reloads(service: SchedulerService, result: str) -> float:
    value = service.metrics.registry.get_sample_value(
        "aiosched_config_reloads_total", {"result": result}
    )
    return value or 0.0


async def test_backoff_applies_and_restart_only_fields_are_counted_apart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text())
    async with running_scheduler(tmp_path, path.read_text()) as h:
        service = SchedulerService(
            config_path=path, http_host="127.0.0.1", http_port=0, registry=h.scheduler.registry
        )
        service.scheduler = h.scheduler
        service.running_config = service.load_config()
        assert h.scheduler.queue.backoff == (1, 10)

        path.write_text(text(initial=2, maximum=4))
        assert await service.reload()
        assert h.scheduler.queue.backoff == (2, 4)
        assert reloads(service, "success") == 1
        assert service.restart_pending == ()

        caplog.set_level(logging.WARNING, logger="scheduler.app.service")
        path.write_text(
            text(
                initial=3,
                maximum=6,
                lease=", resourceName: other",
                extra="clientConnection: {qps: 7}\n",
            )
        )
        assert await service.reload()
        assert h.scheduler.queue.backoff == (3, 6)  # applied regardless
        assert reloads(service, "restart_required") == 1
        assert reloads(service, "success") == 1  # not counted as a success
        assert service.restart_pending == ("leaderElection.resourceName", "clientConnection.qps")
        (record,) = [r for r in caplog.records if "restart" in r.getMessage()]
        assert record.fields == ["leaderElection.resourceName", "clientConnection.qps"]  # type: ignore[attr-defined]
        gauge = service.metrics.registry.get_sample_value("aiosched_config_last_reload_success")
        assert gauge == 0

        path.write_text(text(initial=3, maximum=6))  # back to what runs: a plain success
        assert await service.reload()
        assert reloads(service, "success") == 2
        assert service.restart_pending == ()
