"""`dataclasses.replace` for the views replaced on every watch event, three times faster.

`dataclasses.replace` loops over the fields in Python and calls the generated `__init__` with
every one as a keyword: about 11 µs for a PodView (33 fields), paid for each pod's binding,
its bound and Running watch events. The replacer built here sets each slot from `changes` or the
old view in straight-line code (about 4 µs). It only serves frozen slotted dataclasses whose
`__init__` does nothing but set the fields (no `__post_init__`, no init=False fields), which it
checks when built.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def replacer(cls: type[T]) -> Callable[[T, Mapping[str, Any]], T]:
    """`replace(old, changes)`: a copy of `old` with the fields named in `changes` replaced."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if hasattr(cls, "__post_init__") or any(not f.init for f in fields):
        raise TypeError(f"{cls.__name__}: __init__ does more than set its fields")
    if not getattr(cls, "__slots__", None):
        raise TypeError(f"{cls.__name__}: not a slotted dataclass")
    lines = [
        "def replace(old, changes):",
        "    if not changes.keys() <= _names:",
        "        unknown = sorted(changes.keys() - _names)",
        "        raise TypeError(f'{_cls.__name__} has no field {unknown}')",
        "    new = _new(_cls)",
        "    get = changes.get",
    ]
    lines += [f"    _set(new, {f.name!r}, get({f.name!r}, old.{f.name}))" for f in fields]
    lines.append("    return new")
    namespace: dict[str, Any] = {
        "_new": object.__new__,
        "_cls": cls,
        "_set": object.__setattr__,
        "_names": frozenset(f.name for f in fields),
    }
    exec("\n".join(lines), namespace)  # code built from the class's own field names
    built: Callable[[T, Mapping[str, Any]], T] = namespace["replace"]
    return built
