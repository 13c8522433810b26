"""The error raised for API objects the scheduler cannot interpret.

The class is apimachinery's (label selectors raise it too); it is named here so that the
scheduler's views, quantities and selectors import it from their own package.
`scheduler.api.objects.MalformedObject` is this same class.
"""

from __future__ import annotations

from apimachinery.errors import MalformedObject

__all__ = ["MalformedObject"]
