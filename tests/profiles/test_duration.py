"""Go duration strings, as metav1.Duration accepts and prints them."""

from __future__ import annotations

import pytest

from profiles.duration import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15s", 15.0), ("1m30s", 90.0), ("1.5h", 5400.0), ("250ms", 0.25), ("0", 0.0),
     ("-2s", -2.0), ("100us", 1e-4), ("2h45m", 9900.0)],
)  # fmt: skip
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "15", "s", "1x", "15 s", "1m-2s"])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(15.0, "15s"), (90.0, "1m30s"), (0.25, "250ms"), (0.0, "0s"), (3600.0, "1h0m0s")],
)
def test_format(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
