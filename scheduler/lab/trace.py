"""A trace: the cluster (Nodes, DeviceClasses, ResourceSlices) and its workload (Pods with their
ResourceClaims, each arriving at a time and maybe leaving at another), and its file format.

The file is a stream of Kubernetes objects, as `kubectl get -o yaml` writes them: YAML documents
separated by `---` (a `kind: List` is unpacked), or JSON lines (one object per line; a file
whose name ends in `.jsonl`). Kinds: Node, DeviceClass, ResourceSlice, ResourceClaim, Pod.
A Pod's times are annotations, in seconds from the start of the trace:

    replay.aiosched.io/arrival-seconds: "12.5"     # default 0
    replay.aiosched.io/departure-seconds: "600"    # default: it stays

A ResourceClaim arrives with the first pod that names it in `spec.resourceClaims`
(`resourceClaimName`) and leaves with the last; a claim no pod names arrives at the start.
Pods arrive in the order of their times, ties in the order of the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ARRIVAL_ANNOTATION = "replay.aiosched.io/arrival-seconds"
DEPARTURE_ANNOTATION = "replay.aiosched.io/departure-seconds"
KINDS = ("Node", "DeviceClass", "ResourceSlice", "ResourceClaim", "Pod")
#: A trace file larger than this is refused (it is read whole).
MAX_TRACE_BYTES = 1 << 30


class TraceError(ValueError):
    """A trace that cannot be read: the message names the file and the object."""


@dataclass(frozen=True, slots=True)
class PodArrival:
    """One pod of the workload: when it arrives (and leaves), with the claims it brings."""

    time: float
    pod: Mapping[str, Any]
    claims: tuple[Mapping[str, Any], ...] = ()
    departure: float | None = None

    @property
    def key(self) -> str:
        meta = self.pod["metadata"]
        return f"{meta.get('namespace') or 'default'}/{meta['name']}"


@dataclass(frozen=True, slots=True)
class Trace:
    name: str
    nodes: tuple[Mapping[str, Any], ...]
    device_classes: tuple[Mapping[str, Any], ...] = ()
    resource_slices: tuple[Mapping[str, Any], ...] = ()
    #: Claims no pod names: present from the start.
    claims: tuple[Mapping[str, Any], ...] = ()
    pods: tuple[PodArrival, ...] = ()


def _seconds(value: Any, where: str, what: str) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise TraceError(f"{where}: {what} {value!r} is not a number of seconds") from None
    if not seconds >= 0 or seconds == float("inf"):
        raise TraceError(f"{where}: {what} {value!r} must be a finite number >= 0")
    return seconds


def _documents(path: Path) -> Iterator[tuple[str, Any]]:
    size = path.stat().st_size
    if size > MAX_TRACE_BYTES:
        raise TraceError(f"{path}: {size} bytes, more than the {MAX_TRACE_BYTES} a trace may have")
    text = path.read_text()
    if path.suffix == ".jsonl":
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    yield f"{path}:{number}", json.loads(line)
                except json.JSONDecodeError as exc:
                    raise TraceError(f"{path}:{number}: not JSON: {exc.msg}") from None
        return
    try:
        for number, document in enumerate(yaml.safe_load_all(text), 1):
            if document is not None:
                yield f"{path}: document {number}", document
    except yaml.YAMLError as exc:
        raise TraceError(f"{path}: not YAML: {exc}") from None


def _objects(path: Path) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for where, document in _documents(path):
        if not isinstance(document, Mapping):
            raise TraceError(f"{where}: want an object, got {type(document).__name__}")
        if document.get("kind") == "List":
            for index, item in enumerate(document.get("items") or ()):
                if not isinstance(item, Mapping):
                    raise TraceError(f"{where}: items[{index}] is not an object")
                yield f"{where} items[{index}]", item
        else:
            yield where, document


def _name(obj: Mapping[str, Any], where: str) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        raise TraceError(f"{where}: {obj.get('kind')} without metadata.name")
    return name


def _namespaced_key(obj: Mapping[str, Any], where: str) -> str:
    name = _name(obj, where)
    return f"{obj['metadata'].get('namespace') or 'default'}/{name}"


def _claim_names(pod: Mapping[str, Any], where: str) -> list[str]:
    names = []
    for ref in (pod.get("spec") or {}).get("resourceClaims") or ():
        if isinstance(ref, Mapping) and isinstance(ref.get("resourceClaimName"), str):
            names.append(ref["resourceClaimName"])
        elif isinstance(ref, Mapping) and ref.get("resourceClaimTemplateName"):
            raise TraceError(
                f"{where}: pod claims from templates are not replayed; "
                "record the claims themselves (resourceClaimName)"
            )
    return names


def build_trace(name: str, objects: Iterable[tuple[str, Mapping[str, Any]]]) -> Trace:
    """A trace from (where, object) pairs: `where` names the object in errors."""
    by_kind: dict[str, list[tuple[str, Mapping[str, Any]]]] = {kind: [] for kind in KINDS}
    for where, obj in objects:
        kind = obj.get("kind")
        if kind not in by_kind:
            raise TraceError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
        by_kind[str(kind)].append((where, obj))
    claims: dict[str, Mapping[str, Any]] = {}
    for where, claim in by_kind["ResourceClaim"]:
        key = _namespaced_key(claim, where)
        if key in claims:
            raise TraceError(f"{where}: a second ResourceClaim {key}")
        claims[key] = claim
    named: set[str] = set()
    arrivals: list[tuple[float, int, PodArrival]] = []
    seen: set[str] = set()
    for index, (where, pod) in enumerate(by_kind["Pod"]):
        key = _namespaced_key(pod, where)
        if key in seen:
            raise TraceError(f"{where}: a second Pod {key}")
        seen.add(key)
        annotations = pod["metadata"].get("annotations") or {}
        arrival = _seconds(annotations.get(ARRIVAL_ANNOTATION, 0), where, ARRIVAL_ANNOTATION)
        departure = annotations.get(DEPARTURE_ANNOTATION)
        leaves = None
        if departure is not None:
            leaves = _seconds(departure, where, DEPARTURE_ANNOTATION)
            if leaves < arrival:
                raise TraceError(f"{where}: {key} departs at {leaves}s, before it arrives")
        namespace = key.split("/", 1)[0]
        brought = []
        for claim_name in _claim_names(pod, where):
            claim_key = f"{namespace}/{claim_name}"
            if claim_key not in claims:
                raise TraceError(f"{where}: {key} names ResourceClaim {claim_key}, not in trace")
            if claim_key not in named:
                brought.append(claims[claim_key])
                named.add(claim_key)
        arrivals.append((arrival, index, PodArrival(arrival, pod, tuple(brought), leaves)))
    arrivals.sort(key=lambda item: (item[0], item[1]))
    for kind in ("Node", "DeviceClass", "ResourceSlice"):
        for where, obj in by_kind[kind]:
            _name(obj, where)
    return Trace(
        name=name,
        nodes=tuple(obj for _, obj in by_kind["Node"]),
        device_classes=tuple(obj for _, obj in by_kind["DeviceClass"]),
        resource_slices=tuple(obj for _, obj in by_kind["ResourceSlice"]),
        claims=tuple(claim for key, claim in claims.items() if key not in named),
        pods=tuple(item[2] for item in arrivals),
    )


def load_trace(path: str | Path) -> Trace:
    """Read a trace file (see the module docstring)."""
    path = Path(path)
    try:
        return build_trace(path.name, _objects(path))
    except OSError as exc:
        raise TraceError(f"{path}: {exc.strerror or exc}") from None


def dump_objects(objects: Iterable[Mapping[str, Any]], path: str | Path) -> None:
    """Write objects as a trace file: JSON lines for `.jsonl`, else YAML documents."""
    path = Path(path)
    with path.open("w") as out:
        if path.suffix == ".jsonl":
            for obj in objects:
                out.write(json.dumps(obj, separators=(",", ":")) + "\n")
        else:
            yaml.safe_dump_all(list(objects), out, sort_keys=False)
