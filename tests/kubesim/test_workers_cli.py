"""`aiosched cluster --workers N`: the flag's checks and its default by core count."""

from __future__ import annotations

import argparse

import pytest

from kubesim import cli, workers


def parse(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="aiosched cluster")
    cli.add_arguments(parser)
    return parser.parse_args(["--port", "0", *flags])


def test_workers_must_be_one_or_more(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse("--workers", "0")
    assert "argument --workers: must be 1 or more, got 0" in capsys.readouterr().err
    assert parse("--workers", "3").workers == 3
    assert parse().workers is None  # the default depends on the machine


@pytest.mark.parametrize(
    ("cores", "expected"), [(1, 1), (2, 1), (3, 2), (4, 2), (8, 2), (12, 4), (16, 5), (64, 6)]
)
def test_default_is_one_process_on_small_machines(
    monkeypatch: pytest.MonkeyPatch, cores: int, expected: int
) -> None:
    monkeypatch.setattr(workers.os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert workers.default_workers() == expected


def test_a_remote_address_is_refused_before_any_process_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(parse("--workers", "2", "--host", "0.0.0.0")) == 2
    assert "refusing to listen on non-loopback address 0.0.0.0" in capsys.readouterr().err
