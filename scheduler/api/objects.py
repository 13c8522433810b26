"""Slotted, read-only views of Pod and Node built from raw API JSON.

Plugins read these instead of generated client models: everything a plugin needs on the hot
path (requests, ports, tolerations, affinity terms, images) is computed once, when the watch
event arrives. `raw` keeps the decoded JSON for the rare plugin that needs more.

Building a view from a malformed object raises `MalformedObject` naming the field; informers log
and skip such objects.

This module gathers the views and their values in one import; they live in scheduler.api.pod,
scheduler.api.node and scheduler.api.values, each importing only modules below it.
"""

from __future__ import annotations

from scheduler.api.errors import MalformedObject
from scheduler.api.node import NodeView
from scheduler.api.pod import PodView
from scheduler.api.values import (
    HostPort,
    ImageState,
    OwnerReference,
    PreferredSchedulingTerm,
    Resource,
    Taint,
    Toleration,
)

__all__ = [
    "HostPort",
    "ImageState",
    "MalformedObject",
    "NodeView",
    "OwnerReference",
    "PodView",
    "PreferredSchedulingTerm",
    "Resource",
    "Taint",
    "Toleration",
]
