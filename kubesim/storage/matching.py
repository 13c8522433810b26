"""Which PersistentVolume a claim binds to: the PV controller's path of findMatchingVolume.

Ported from upstream pkg/controller/volume/persistentvolume/index.go (findByClaim,
findMatchingVolume) with one simplification: upstream searches access-mode groups with the fewest
modes first and lets a pre-bound volume win only inside its group; here a volume pre-bound to the
claim wins outright, then the smallest volume among those with the fewest access modes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from apimachinery.errors import MalformedObject
from apimachinery.labels import LabelSelector
from kubesim.meta import Obj, labels_of
from kubesim.storage.objects import (
    Malformed,
    access_modes,
    claim_class,
    claim_ref,
    deleting,
    is_bound_to_claim,
    name_of,
    requested_storage,
    spec,
    volume_capacity,
    volume_class,
    volume_mode,
)

log = logging.getLogger(__name__)


def _capacity_or_none(volume: Obj) -> Fraction | None:
    try:
        return volume_capacity(volume)
    except Malformed as exc:
        log.warning("skipping PersistentVolume %s: %s", name_of(volume), exc)
        return None


def _usable(volume: Obj, claim: Obj, request: Fraction) -> Fraction | None:
    """The volume's capacity if size, modes and volumeMode suit the claim (any volume kind)."""
    if deleting(volume) or volume_mode(volume) != volume_mode(claim):
        return None
    if not access_modes(claim) <= access_modes(volume):
        return None
    capacity = _capacity_or_none(volume)
    if capacity is None or capacity < request:
        return None
    return capacity


def _selected(selector: Any, volume: Obj) -> bool:
    if selector is None:
        return True
    try:
        return LabelSelector.lenient(selector).matches(labels_of(volume))
    except MalformedObject as exc:
        raise Malformed(f"spec.selector {selector!r}") from exc


def satisfies(volume: Obj, claim: Obj) -> bool:
    """A volume the claim names in spec.volumeName fits it (checkVolumeSatisfyClaim)."""
    request = requested_storage(claim)
    return _usable(volume, claim, request) is not None and volume_class(volume) == claim_class(
        claim
    )


Preference = tuple[int, Fraction, str]


def preference(volume: Obj) -> Preference:
    """Where an unclaimed volume ranks among a claim's candidates: fewest access modes first
    (upstream searches its access-mode index so), then smallest, then by name. Raises
    Malformed if its capacity does not parse."""
    return len(access_modes(volume)), volume_capacity(volume), name_of(volume)


def best_volume(
    claim: Obj, prebound: Iterable[Obj], unclaimed: Iterable[Obj], delay_binding: bool
) -> Obj | None:
    """The volume to bind `claim` to, or None. Raises Malformed if the claim's request is.

    `prebound` are volumes whose claimRef names the claim; `unclaimed` are volumes without one,
    in `preference` order (callers narrow them to the claim's class and size): the first that
    fits is the best. With delay_binding (WaitForFirstConsumer) only a pre-bound volume is
    taken: the scheduler picks the others.
    """
    request = requested_storage(claim)
    for volume in sorted(prebound, key=name_of):
        if is_bound_to_claim(volume, claim) and _usable(volume, claim, request) is not None:
            return volume
    if delay_binding:
        return None
    wanted_class = claim_class(claim)
    selector = spec(claim).get("selector")
    for volume in unclaimed:
        if claim_ref(volume) is not None or volume_class(volume) != wanted_class:
            continue
        if _selected(selector, volume) and _usable(volume, claim, request) is not None:
            return volume
    return None
