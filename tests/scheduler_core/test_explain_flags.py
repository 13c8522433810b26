"""`aiosched run`'s explain flags: the recent-successes budget and what it is handed to."""

from __future__ import annotations

import pytest

from scheduler.app.cli import build_parser
from scheduler.app.service import SchedulerService


def parse(*flags: str) -> int:
    parser, _ = build_parser()
    return int(parser.parse_args(["run", *flags]).explain_recent_attempts)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [((), 100), (("--explain-recent-attempts", "0"), 0), (("--explain-recent-attempts=7",), 7)],
)
def test_recent_attempts_budget(flags: tuple[str, ...], expected: int) -> None:
    assert parse(*flags) == expected


@pytest.mark.parametrize("value", ["-1", "many"])
def test_a_bad_budget_is_refused(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse("--explain-recent-attempts", value)
    assert exited.value.code == 2
    assert "--explain-recent-attempts" in capsys.readouterr().err


@pytest.mark.parametrize("budget", [0, 100])
def test_the_service_keeps_that_many_successes_per_profile(budget: int) -> None:
    service = SchedulerService(
        config_path=None, http_host="127.0.0.1", http_port=0, explain_recent_attempts=budget
    )
    assert (service.explain.recent_per_profile, service.explain.keeps_recent) == (
        budget,
        budget > 0,
    )
