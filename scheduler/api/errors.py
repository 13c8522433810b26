"""The error raised for API objects the scheduler cannot interpret.

Lives in its own module so that selectors, quantities and views (which `objects` imports) can raise
it without an import cycle; `scheduler.api.objects.MalformedObject` is this same class.
"""

from __future__ import annotations


class MalformedObject(ValueError):
    """An API object this scheduler cannot interpret; the message names the field path."""
