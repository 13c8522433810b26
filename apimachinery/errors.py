"""The error raised for an API object (or a part of one) that cannot be interpreted.

Its own module so that everything that reads objects (label selectors here, the scheduler's
views) raises one class; scheduler.api.errors.MalformedObject is this same class.
"""

from __future__ import annotations


class MalformedObject(ValueError):
    """An API object that cannot be interpreted; the message names the field path."""
