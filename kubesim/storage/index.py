"""Indexes the binder keeps from store events, so a sync looks at a few objects, not all of them.

They are hints: the binder re-reads every candidate from the store before acting, so an index
that lags a write not yet published (with --data-dir) can cost a retry, never a wrong bind.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterator
from fractions import Fraction
from typing import TypeVar

from kubesim.meta import Obj
from kubesim.storage.matching import Preference, preference
from kubesim.storage.objects import (
    ANN_BIND_COMPLETED,
    ClaimKey,
    Malformed,
    annotations_of,
    claim_class,
    claim_key,
    claim_ref_key,
    name_of,
    volume_class,
)

log = logging.getLogger(__name__)
K = TypeVar("K")
V = TypeVar("V")


def _discard(index: dict[K, set[V]], key: K, value: V) -> None:
    members = index.get(key)
    if members is not None:
        members.discard(value)
        if not members:
            del index[key]


class VolumeIndex:
    """PV names by the claim their claimRef names, and unclaimed PVs by class in the order
    claims prefer them (matching.preference), so the best fit is found without a full scan."""

    def __init__(self) -> None:
        self.by_claim: dict[ClaimKey, set[str]] = {}
        self._offers: dict[str, list[Preference]] = {}  # class -> sorted preferences
        self._offer_of: dict[str, tuple[str, Preference]] = {}  # name -> (class, preference)

    def remove(self, volume: Obj) -> None:
        name = name_of(volume)
        key = claim_ref_key(volume)
        if key is not None:
            _discard(self.by_claim, key, name)
        offered = self._offer_of.pop(name, None)
        if offered is not None:
            class_name, rank = offered
            offers = self._offers[class_name]
            del offers[bisect.bisect_left(offers, rank)]
            if not offers:
                del self._offers[class_name]

    def add(self, volume: Obj) -> None:
        name = name_of(volume)
        if name in self._offer_of:  # never offered twice
            self.remove(volume)
        key = claim_ref_key(volume)
        if key is not None:
            self.by_claim.setdefault(key, set()).add(name)
            return
        try:
            rank = preference(volume)
        except Malformed as exc:
            log.warning("PersistentVolume %s is offered to no claim: %s", name, exc)
            return
        class_name = volume_class(volume)
        bisect.insort(self._offers.setdefault(class_name, []), rank)
        self._offer_of[name] = (class_name, rank)

    def offered(self, class_name: str, request: Fraction) -> Iterator[str]:
        """Names of unclaimed volumes of the class with at least `request`, best first."""
        offers = self._offers.get(class_name, [])
        start = 0
        while start < len(offers):
            modes = offers[start][0]
            first = bisect.bisect_left(offers, (modes, request, ""), lo=start)
            end = bisect.bisect_left(offers, (modes + 1,), lo=first)
            for index in range(first, end):
                yield offers[index][2]
            start = end


class PendingClaims:
    """Claims whose binding is not complete, by the class they ask for ("" for none)."""

    def __init__(self) -> None:
        self.by_class: dict[str, set[ClaimKey]] = {}

    def remove(self, claim: Obj) -> None:
        _discard(self.by_class, claim_class(claim), claim_key(claim))

    def add(self, claim: Obj) -> None:
        if ANN_BIND_COMPLETED not in annotations_of(claim):
            self.by_class.setdefault(claim_class(claim), set()).add(claim_key(claim))

    def of_class(self, class_name: str) -> list[ClaimKey]:
        return sorted(self.by_class.get(class_name, ()))
