"""dryRun=All: a request runs every step of a write (defaulting, admission, validation,
preconditions, conflicts) but persists nothing, publishes no event and answers as if done.

As upstream's DryRunnableStorage (pkg/registry/generic/registry/dryrun.go): reads see the real
store; a create answers the object as it would be stored (uid and creationTimestamp set, no
resourceVersion), an update the updated object, a delete the object as it was.
"""

from __future__ import annotations

from collections.abc import Iterator

from kubesim import errors, json_limits
from kubesim.store import Obj, Store
from kubesim.watch import Event, Predicate, Render, Watcher

DRY_RUN_ALL = "All"


def parse(values: list[str], options_kind: str) -> bool:
    """?dryRun values: none is a real write, ["All"] a dry run; anything else is 422 Invalid,
    reported against the verb's options kind (CreateOptions, PatchOptions...) as upstream."""
    if not values:
        return False
    if values == [DRY_RUN_ALL]:
        return True
    shown = "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"
    message = f'Unsupported value: {shown}: supported values: "{DRY_RUN_ALL}"'
    return _invalid(options_kind, message)


def _invalid(options_kind: str, message: str) -> bool:
    raise errors.ApiError(
        422,
        "Invalid",
        f'{options_kind}.meta.k8s.io "" is invalid: dryRun: {message}',
        {
            "group": "meta.k8s.io",
            "kind": options_kind,
            "causes": [{"reason": "FieldValueNotSupported", "message": message, "field": "dryRun"}],
        },
    )


class DryRunStore(Store):
    """Reads from `real`; writes are computed, never applied."""

    def __init__(self, real: Store) -> None:  # no super().__init__: it owns no state
        self._real = real

    @property
    def resource_version(self) -> int:
        return self._real.resource_version

    @property
    def published_resource_version(self) -> int:
        return self._real.published_resource_version

    def get(self, key: str, namespace: str, name: str) -> Obj | None:
        return self._real.get(key, namespace, name)

    def items(self, key: str, namespace: str | None = None) -> list[Obj]:
        return self._real.items(key, namespace)

    def iter_all(self) -> Iterator[tuple[str, Obj]]:
        return self._real.iter_all()

    def count(self, key: str, namespace: str | None = None) -> int:
        return self._real.count(key, namespace)

    async def commit(self, changes: list[tuple[str, Obj | None, Obj | None]]) -> list[Event]:
        json_limits.check_storable(changes)  # refused as the real write would be
        events: list[Event] = []
        for _key, new, old in changes:
            if new is None:
                assert old is not None
                events.append(Event("DELETED", old, old, 0, ""))
            else:
                events.append(Event("ADDED" if old is None else "MODIFIED", new, old, 0, ""))
        return events

    def watch(
        self,
        key: str,
        namespace: str | None,
        predicate: Predicate | None,
        since: int | None,
        render: Render | None = None,
    ) -> Watcher:
        raise errors.bad_request("a watch cannot be a dry run")
