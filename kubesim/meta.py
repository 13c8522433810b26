"""Small helpers for object metadata: timestamps, uids, generated names, label selectors."""

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


def match_label_selector(selector: Obj | None, labels: dict[str, str]) -> bool:
    """A structured metav1.LabelSelector; None matches nothing, {} matches everything."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True
