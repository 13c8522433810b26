"""The slice of the API client that plugins and listers may use: a Protocol of its own, below
the framework's interface and the listers, so the Handle (interface.py) can name the listers'
types while the listers name the client without importing the interface."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class ApiClient(Protocol):
    """The slice of the API client plugins may use (raw JSON in and out)."""

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        """(HTTP status, decoded JSON body). Never raises for HTTP error statuses."""
        ...
