"""A reload of a file that cannot be decoded (nested 5000 deep) is refused like any invalid
config: counted as a failure, /readyz's config check says why, the running profiles stay."""

from __future__ import annotations

from pathlib import Path

from harness import MINIMAL_CONFIG, running_scheduler

from scheduler.app.service import SchedulerService


def reloads(service: SchedulerService, result: str) -> float:
    value = service.metrics.registry.get_sample_value(
        "aiosched_config_reloads_total", {"result": result}
    )
    return value or 0.0


async def test_deeply_nested_reload_is_a_counted_refusal(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(MINIMAL_CONFIG)
    async with running_scheduler(tmp_path) as h:
        service = SchedulerService(
            config_path=path, http_host="127.0.0.1", http_port=0, registry=h.scheduler.registry
        )
        service.scheduler = h.scheduler
        profiles = h.scheduler.profiles

        path.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
        assert await service.reload() is False
        assert reloads(service, "failure") == 1
        ready, why = service.readiness_checks()["config"]()
        assert (ready, why) == (
            False,
            f"last config reload failed: {path}: nested more than 100 levels deep",
        )
        assert service.metrics.registry.get_sample_value("aiosched_config_last_reload_success") == 0
        assert h.scheduler.profiles is profiles

        path.write_text(MINIMAL_CONFIG)  # fixed: ready again
        assert await service.reload() is True
        assert service.readiness_checks()["config"]() == (True, "ok")
