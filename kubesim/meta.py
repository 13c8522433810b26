"""Small helpers for object metadata: timestamps, uids, generated names, labels.

Label selectors are apimachinery.labels' (`LabelSelector.lenient` for stored objects)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]
Clock = Callable[[], float]

# upstream's utilrand.String alphabet: no vowels and no confusable characters
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATED_SUFFIX_LEN = 5
MAX_NAME_LEN = 253


def rfc3339(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def new_uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def generate_name(base: str, rng: random.Random) -> str:
    """generateName + 5 random chars, the base cut to fit (upstream SimpleNameGenerator)."""
    max_base = 63 - GENERATED_SUFFIX_LEN
    if len(base) > max_base:
        base = base[:max_base]
    return base + "".join(rng.choice(_NAME_ALPHABET) for _ in range(GENERATED_SUFFIX_LEN))


def labels_of(obj: Obj) -> dict[str, str]:
    labels: dict[str, str] | None = obj.get("metadata", {}).get("labels")
    return labels or {}
