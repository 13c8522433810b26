"""Node names grouped by zone, listed round-robin across zones (upstream's nodeTree).

The snapshot's node list comes from here, so that a scheduling cycle that stops after
numFeasibleNodesToFind nodes has looked at nodes from every zone.
"""

from __future__ import annotations

from collections.abc import Mapping

ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone")
REGION_LABELS = ("failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region")


def zone_key(labels: Mapping[str, str]) -> str:
    """Upstream's utilnode.GetZoneKey: "region:\\x00:zone", or "" when neither is set."""
    zone = _first(labels, ZONE_LABELS)
    region = _first(labels, REGION_LABELS)
    if not zone and not region:
        return ""
    return f"{region}:\x00:{zone}"


def _first(labels: Mapping[str, str], keys: tuple[str, str]) -> str:
    for key in keys:
        if key in labels:
            return labels[key]
    return ""


class NodeTree:
    """Zones in the order they appeared; nodes within a zone in the order they were added."""

    __slots__ = ("_zone_of", "_zones", "version")

    def __init__(self) -> None:
        self._zones: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}
        # Bumped whenever list() would answer differently.
        self.version = 0

    def __len__(self) -> int:
        return len(self._zone_of)

    def __contains__(self, name: object) -> bool:
        return name in self._zone_of

    def add(self, name: str, labels: Mapping[str, str]) -> None:
        zone = zone_key(labels)
        current = self._zone_of.get(name)
        if current == zone:
            return
        if current is not None:
            self._remove_from_zone(name, current)
        self._zones.setdefault(zone, []).append(name)
        self._zone_of[name] = zone
        self.version += 1

    update = add

    def remove(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        self._remove_from_zone(name, zone)
        self.version += 1

    def _remove_from_zone(self, name: str, zone: str) -> None:
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]

    def list(self) -> list[str]:
        """All node names, taking one node from each zone in turn."""
        zones = list(self._zones.values())
        if len(zones) == 1:
            return list(zones[0])
        result: list[str] = []
        index = 0
        while zones:
            zones = [names for names in zones if index < len(names)]
            result.extend(names[index] for names in zones)
            index += 1
        return result
