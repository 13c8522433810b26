"""Timestamps as the API writes them: metav1.Time and metav1.MicroTime JSON."""

from __future__ import annotations

from datetime import UTC, datetime

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_MICRO_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC) if moment.tzinfo is not None else moment


def format_time(moment: datetime) -> str:
    """metav1.Time ("2024-05-01T10:00:00Z"): conditions' lastTransitionTime and the like."""
    return _utc(moment).strftime(_TIME_FORMAT)


def format_micro_time(moment: datetime) -> str:
    """metav1.MicroTime ("2024-05-01T10:00:00.123456Z"): Lease renewTime, Event eventTime."""
    return _utc(moment).strftime(_MICRO_TIME_FORMAT)
