"""setup_logging: text and JSON rendering of structured keys, klog-style verbosity."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import orjson
import pytest

from observability.logs import V, pod_keys, setup_logging, verbosity_of

NAME = "aiosched.test.logs"


@pytest.fixture
def logger_name() -> Iterator[str]:
    yield NAME
    logger = logging.getLogger(NAME)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.setLevel(logging.NOTSET)


@pytest.mark.parametrize(
    ("n", "level"), [(0, logging.INFO), (1, 18), (4, 12), (5, logging.DEBUG), (20, 1)]
)
def test_v_levels(n: int, level: int) -> None:
    assert V(n) == level
    if n <= 9:
        assert verbosity_of(V(n)) == n


@pytest.mark.parametrize(
    ("verbosity", "shown"),
    [(0, [0]), (2, [0, 1, 2]), (5, [0, 1, 2, 3, 4, 5])],
)
def test_verbosity_filters_v_levels(logger_name: str, verbosity: int, shown: list[int]) -> None:
    stream = io.StringIO()
    log = setup_logging("json", verbosity, stream, logger_name)
    for n in range(6):
        log.log(V(n), f"at v{n}")
    lines = [orjson.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["msg"] for line in lines] == [f"at v{n}" for n in shown]
    assert [line.get("v", 0) for line in lines] == shown


def test_text_format_renders_keys_klog_style(logger_name: str) -> None:
    stream = io.StringIO()
    log = setup_logging("text", 4, stream, logger_name)
    log.info("Pod scheduled", extra=pod_keys("ns/web", "default-scheduler", node="n1", attempts=2))
    log.log(V(4), 'detail "quoted"', extra={"pod": "ns/web"})
    first, second = stream.getvalue().splitlines()
    assert first.endswith(
        f' I {NAME}] "Pod scheduled" pod="ns/web" profile="default-scheduler" node="n1" attempts=2'
    )
    assert second.endswith(f' V4 {NAME}] "detail \\"quoted\\"" pod="ns/web"')
    assert first[:4].isdigit() and first[10] == "T"


def test_json_format_has_fields_and_error(logger_name: str) -> None:
    stream = io.StringIO()
    log = setup_logging("json", 0, stream, logger_name)
    try:
        raise ValueError("bad")
    except ValueError:
        log.exception("Binding failed", extra={"pod": "ns/web", "profile": "p"})
    entry = orjson.loads(stream.getvalue())
    assert entry["level"] == "error"
    assert entry["msg"] == "Binding failed"
    assert (entry["pod"], entry["profile"], entry["logger"]) == ("ns/web", "p", NAME)
    assert "ValueError: bad" in entry["err"]


def test_second_setup_replaces_the_handler(logger_name: str) -> None:
    first, second = io.StringIO(), io.StringIO()
    setup_logging("text", 0, first, logger_name)
    log = setup_logging("json", 0, second, logger_name)
    log.info("once")
    assert first.getvalue() == ""
    assert orjson.loads(second.getvalue())["msg"] == "once"


def test_unknown_format_is_rejected() -> None:
    with pytest.raises(ValueError, match="log format"):
        setup_logging("xml", 0)  # type: ignore[arg-type]
