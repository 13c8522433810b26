"""Structured logging on stdlib ``logging``, with klog-style verbosity.

Pass keys through ``extra``: ``log.info("Pod scheduled", extra={"pod": "ns/n", "node": "n1"})``.
Text format renders them as ``key="value"`` after the quoted message (klog's structured form),
JSON format as top-level fields.

Verbosity follows klog's ``-v``: ``V(0)`` is INFO and always shown, ``V(n)`` details are shown
when the configured verbosity is at least ``n``; ``V(5)`` equals DEBUG::

    if log.isEnabledFor(V(4)):          # cheap guard on hot paths
        log.log(V(4), "Attempting to schedule pod", extra={"pod": key})
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping
from typing import IO, Any, Final, Literal

import orjson

LogFormat = Literal["text", "json"]
ROOT_LOGGER: Final = "aiosched"

_V_STEP: Final = 2  # levels per -v step: V(5) == DEBUG (10), V(0) == INFO (20)

# Attributes every LogRecord has; anything else came from ``extra`` and is a structured key.
_RECORD_ATTRS: Final = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", (), None)).keys() | {"message", "asctime", "taskName"}
)


def V(n: int) -> int:
    """The logging level of klog verbosity ``n`` (0 → INFO, 5 → DEBUG, lower beyond)."""
    return max(logging.INFO - _V_STEP * max(n, 0), 1)


def verbosity_of(level: int) -> int:
    """Inverse of :func:`V` for levels at or below INFO (used to print ``"v": n``)."""
    return max((logging.INFO - level + _V_STEP - 1) // _V_STEP, 0)


def structured_keys(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _RECORD_ATTRS}


def _utc_timestamp(created: float) -> str:
    seconds = int(created)
    micros = int((created - seconds) * 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{micros:06d}Z"


def _quote(value: Any) -> str:
    if isinstance(value, bool | int | float) or value is None:
        return orjson.dumps(value).decode()
    return orjson.dumps(str(value)).decode()


class TextFormatter(logging.Formatter):
    """``2024-05-01T12:00:00.000123Z I scheduler.loop] "Pod scheduled" pod="ns/n" node="n1"``."""

    _LEVEL_CHARS: Final = {"CRITICAL": "F", "ERROR": "E", "WARNING": "W", "INFO": "I"}

    def format(self, record: logging.LogRecord) -> str:
        level = self._LEVEL_CHARS.get(record.levelname, "I")
        if record.levelno < logging.INFO:
            level = f"V{verbosity_of(record.levelno)}"
        parts = [
            f"{_utc_timestamp(record.created)} {level} {record.name}]",
            _quote(record.getMessage()),
        ]
        parts += [f"{key}={_quote(value)}" for key, value in structured_keys(record).items()]
        line = " ".join(parts)
        if record.exc_info:
            line += f" err={_quote(self.formatException(record.exc_info))}"
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, v, logger, msg, then the structured keys."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": _utc_timestamp(record.created),
            "level": record.levelname.lower() if record.levelno >= logging.INFO else "debug",
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.levelno < logging.INFO:
            entry["v"] = verbosity_of(record.levelno)
        entry.update(structured_keys(record))
        if record.exc_info:
            entry["err"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """Marks handlers installed by :func:`setup_logging` so a second call replaces them."""


def setup_logging(
    format: LogFormat = "text",
    verbosity: int = 0,
    stream: IO[str] | None = None,
    logger_name: str = "",
) -> logging.Logger:
    """Configure ``logger_name`` (the root logger by default) and return it.

    Idempotent: a second call replaces the handler installed by the first, so the CLI can call it
    again after parsing the config.
    """
    if format not in ("text", "json"):
        raise ValueError(f"log format must be 'text' or 'json', got {format!r}")
    logger = logging.getLogger(logger_name)
    for handler in [h for h in logger.handlers if isinstance(h, _Handler)]:
        logger.removeHandler(handler)
    handler = _Handler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if format == "json" else TextFormatter())
    logger.addHandler(handler)
    logger.setLevel(V(verbosity))
    return logger


def pod_keys(pod: str, profile: str | None = None, **more: Any) -> Mapping[str, Any]:
    """``extra=`` for a log line about a pod: ``extra=pod_keys("ns/n", "default-scheduler")``."""
    keys: dict[str, Any] = {"pod": pod}
    if profile is not None:
        keys["profile"] = profile
    keys.update(more)
    return keys
