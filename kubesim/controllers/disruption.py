"""PodDisruptionBudget status, kept current as pods come, run and go (the disruption
controller's job: pkg/controller/disruption/disruption.go). The status itself is computed by
kubesim/subresources.py, which eviction also uses."""

from __future__ import annotations

from collections.abc import Iterable

from kubesim import subresources
from kubesim.api import Api
from kubesim.controllers import common as c
from kubesim.controllers.manager import Due, Key
from kubesim.watch import Event

PDBS = subresources.PDBS.key


class DisruptionController:
    name = "Disruption"
    owned_only: tuple[str, ...] = ()
    watches: tuple[str, ...] = (PDBS, c.PODS)

    def __init__(self, api: Api, delay: float = 0.0) -> None:
        self.api = api
        self.delay = delay

    def on_event(self, key: str, event: Event) -> Iterable[Due]:
        if key == c.PODS and not self.api.store.count(PDBS, event.namespace):
            return []  # no budget in this namespace: bare pods cost one count
        return [(event.namespace, "", self.delay)]

    def initial(self) -> Iterable[Key]:
        return sorted(
            {(p["metadata"].get("namespace", ""), "") for p in self.api.store.items(PDBS)}
        )

    async def sync(self, namespace: str, name: str) -> Iterable[Due]:
        await subresources.refresh_pdbs(self.api, namespace)
        return []
