"""Errors the framework raises that code on both sides of it may catch (the service, what-if,
the extenders' configuration), kept apart so that catching one never imports the runtime."""

from __future__ import annotations


class FrameworkError(ValueError):
    """The profile cannot be built (unknown plugin, plugin lacking a point, weights...)."""
