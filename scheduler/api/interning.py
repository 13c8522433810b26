"""One copy of each repeated string in a pod's decoded JSON, shared by every pod.

A PodView keeps its pod's decoded JSON (`raw`) for the plugins and extenders that read more than
the view holds, and the scheduler holds a view of every pod in the cluster. orjson gives each
pod its own copy of every string value, though most of them repeat from pod to pod: the image,
imagePullPolicy, restartPolicy, dnsPolicy, schedulerName, phase, the node's name, the namespace,
resource quantities... Interning them (sys.intern: the strings stay equal, only shared; one
that no pod uses any more is freed) took a SchedulingBasic pod from about 4.9 KB to 3.6 KB with
the scheduler's pods held (bench/memory_per_pod.py), for about 5 µs per pod. Only a pod's
first version is interned whole: a later one whose spec changed at most in nodeName (a binding,
status updates: most watch events) takes the earlier version's spec objects and interns only its
metadata (pod.py), and a new pod whose spec equals a recent pod's of the same owner takes that
pod's spec objects and interns the rest (PodParser).

metadata.uid, name, generateName and resourceVersion are left alone: they are unique to a pod
(or a version of it), and interning them would only add an entry to the interpreter's table.
"""

from __future__ import annotations

import sys
from typing import Any

_UNIQUE_METADATA = frozenset({"uid", "name", "generateName", "resourceVersion"})
_intern = sys.intern


def intern_strings(obj: Any) -> None:
    """Replace, in place, the string values of decoded JSON `obj` (a dict) by interned ones,
    but for the metadata fields unique to one object. Only dicts and lists are walked; any
    other Mapping (read-only views in tests) is left as it is."""
    _intern_object(obj, skip=None)


def intern_all_but_spec(obj: Any) -> None:
    """intern_strings but for the spec: for a new pod whose spec objects are another pod's of
    the same template (pod.py), interned already."""
    _intern_object(obj, skip="spec")


def _intern_object(obj: Any, skip: str | None) -> None:
    if obj.__class__ is not dict:
        return
    for key, value in obj.items():
        kind = value.__class__
        if kind is str:
            obj[key] = _intern(value)
        elif key == skip:
            continue
        elif key == "metadata" and kind is dict:
            _intern_metadata(value)
        elif kind is dict:
            _intern_dict(value)
        elif kind is list:
            _intern_list(value)


def intern_metadata(obj: Any) -> None:
    """intern_strings for the metadata alone: for a later version of a pod whose spec objects
    are an earlier version's (interned already) and whose status is mostly its own
    (timestamps, addresses, container ids), where interning the rest costs more than it saves."""
    if obj.__class__ is dict:
        meta = obj.get("metadata")
        if meta.__class__ is dict:
            _intern_metadata(meta)


def _intern_metadata(meta: dict[str, Any]) -> None:
    for key, value in meta.items():
        kind = value.__class__
        if kind is str:
            if key not in _UNIQUE_METADATA:
                meta[key] = _intern(value)
        elif kind is dict:
            _intern_dict(value)
        elif kind is list:
            _intern_list(value)


def _intern_dict(obj: dict[str, Any]) -> None:
    for key, value in obj.items():
        kind = value.__class__
        if kind is str:
            obj[key] = _intern(value)
        elif kind is dict:
            _intern_dict(value)
        elif kind is list:
            _intern_list(value)


def _intern_list(items: list[Any]) -> None:
    for index, value in enumerate(items):
        kind = value.__class__
        if kind is str:
            items[index] = _intern(value)
        elif kind is dict:
            _intern_dict(value)
        elif kind is list:
            _intern_list(value)
