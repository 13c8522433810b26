"""scheduler-plugins' PodGroups (scheduling.x-k8s.io/v1alpha1) and their member pods, kept by
informers for the Coscheduling plugin, and the controller that keeps PodGroup status truthful.

Upstream (kubernetes-sigs/scheduler-plugins) reads PodGroups through a controller-runtime client
and lists a group's pods with the pod lister by namespace and label (pkg/coscheduling/core); its
PodGroup status is written by a separate controller (pkg/controllers/podgroup_controller.go).
Here:

- `PodGroupObjects.groups`: the PodGroups, from an *optional* informer: a cluster without the
  CRD (or RBAC without it) leaves the store empty and lists again later, as resource.k8s.io's.
- `PodGroupObjects.members`: the pods labelled `scheduling.x-k8s.io/pod-group`, from their own
  informer (label selector; terminal pods included, for the status counts), indexed by
  (namespace, group), so that counting a group's pods never walks every pod of the cluster.
- `PodGroupStatusController`: upstream's PodGroupReconciler, run inside `aiosched run` while a
  profile enables Coscheduling and this process leads (see the README's Coscheduling section
  for why it runs here rather than as a second deployment).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any

from scheduler.api.objects import PodView
from scheduler.api.podgroup import (
    API_PATH,
    PHASE_FAILED,
    PHASE_FINISHED,
    PHASE_PENDING,
    PHASE_RUNNING,
    PHASE_SCHEDULING,
    POD_GROUP_LABEL,
    PodGroupView,
    pod_group_label,
)
from scheduler.framework.api_client import ApiClient
from scheduler.framework.events import EventResource
from scheduler.listers.storage_objects import EventSink, KeyedStore

log = logging.getLogger(__name__)

GroupKey = tuple[str, str]  # (namespace, group name)


class PodGroupMembers:
    """Pods carrying the pod-group label, by (namespace, group): an informer handler."""

    def __init__(self) -> None:
        self._by_group: dict[GroupKey, dict[str, PodView]] = {}
        self._listeners: list[Callable[[GroupKey], None]] = []

    def on_add(self, pod: PodView) -> None:
        self._put(pod)

    def on_update(self, old: PodView, new: PodView) -> None:
        self._drop(old)
        self._put(new)

    def on_delete(self, pod: PodView) -> None:
        self._drop(pod)

    def subscribe(self, listener: Callable[[GroupKey], None]) -> None:
        """Call `listener(group)` after any member of `group` changed."""
        self._listeners.append(listener)

    def pods(self, namespace: str, group: str) -> list[PodView]:
        """Every known member, terminal ones included."""
        return list(self._by_group.get((namespace, group), {}).values())

    def active_pods(self, namespace: str, group: str) -> list[PodView]:
        """Members that are not Succeeded or Failed (what kube-scheduler's pod lister holds)."""
        members = self._by_group.get((namespace, group), {})
        return [pod for pod in members.values() if not pod.is_terminal]

    def groups(self) -> Iterable[GroupKey]:
        return list(self._by_group)

    def _put(self, pod: PodView) -> None:
        group = pod_group_label(pod.labels)
        if group:
            self._by_group.setdefault((pod.namespace, group), {})[pod.key] = pod
            self._notify((pod.namespace, group))

    def _drop(self, pod: PodView) -> None:
        group = pod_group_label(pod.labels)
        if not group:
            return
        key = (pod.namespace, group)
        members = self._by_group.get(key)
        if members is not None:
            members.pop(pod.key, None)
            if not members:
                del self._by_group[key]
        self._notify(key)

    def _notify(self, group: GroupKey) -> None:
        for listener in tuple(self._listeners):
            listener(group)


class PodGroupObjects:
    """The PodGroup lister and the member index. Filled by informers or by tests (`add`)."""

    def __init__(self) -> None:
        self.groups: KeyedStore[PodGroupView] = KeyedStore(
            EventResource.SCHEDULER_PLUGINS_POD_GROUP, EventResource.SCHEDULER_PLUGINS_POD_GROUP
        )
        self.members = PodGroupMembers()

    def connect(self, sink: EventSink) -> None:
        """Send every later PodGroup change to `sink` as a cluster event."""

        def send(old: Any, new: Any) -> None:
            sink(self.groups.event_of(old, new), old, new)

        self.groups.subscribe(send)

    def group_informer_spec(self) -> tuple[str, str, Any, KeyedStore[PodGroupView]]:
        """(name, API path, parser, store) of the PodGroup informer (optional: no CRD, none)."""
        return ("podgroups", f"{API_PATH}/podgroups", PodGroupView.from_dict, self.groups)

    # Pods with the label, every phase: the label selector is the label's existence.
    MEMBER_LABEL_SELECTOR = POD_GROUP_LABEL

    def get(self, namespace: str, name: str) -> PodGroupView | None:
        return self.groups.get(f"{namespace}/{name}")

    # -- for tests -------------------------------------------------------------------------

    def add(self, *objects: Any) -> None:
        """Add PodGroupViews to the groups and PodViews to the members."""
        for obj in objects:
            if isinstance(obj, PodGroupView):
                self.groups.on_add(obj)
            else:
                self.members.on_add(obj)


def desired_status(group: PodGroupView, pods: list[PodView]) -> dict[str, Any] | None:
    """What upstream's PodGroupReconciler.Reconcile would write to `group`'s status (only the
    fields it changes), or None when it leaves the group alone. Upstream lists the group's pods
    by label without a namespace; here only the group's namespace counts (a group is
    namespaced, and pods elsewhere cannot name it)."""
    phase = group.status.phase
    if phase in (PHASE_FINISHED, PHASE_FAILED):
        return None
    min_member = group.min_member
    new: dict[str, Any] = {}
    if phase == "":
        new["phase"] = PHASE_PENDING
    elif phase == PHASE_PENDING:
        if len(pods) >= min_member:
            new["phase"] = PHASE_SCHEDULING
            occupied = _occupied_by(pods[0]) if pods else ""
            if occupied:
                new["occupiedBy"] = occupied
    else:
        running = sum(1 for pod in pods if pod.phase == "Running")
        succeeded = sum(1 for pod in pods if pod.phase == "Succeeded")
        failed = sum(1 for pod in pods if pod.phase == "Failed")
        new.update(running=running, succeeded=succeeded, failed=failed)
        if len(pods) < min_member:
            new["phase"] = PHASE_PENDING
        else:
            if succeeded + running < min_member:
                new["phase"] = PHASE_SCHEDULING
            if succeeded + running >= min_member:
                new["phase"] = PHASE_RUNNING
            if failed != 0 and failed + running + succeeded >= min_member:
                new["phase"] = PHASE_FAILED
            if succeeded >= min_member:
                new["phase"] = PHASE_FINISHED
    current = {
        "phase": phase,
        "occupiedBy": group.status.occupied_by,
        "running": group.status.running,
        "succeeded": group.status.succeeded,
        "failed": group.status.failed,
    }
    changed = {name: value for name, value in new.items() if current.get(name) != value}
    return changed or None


def merge_patch(change: dict[str, Any]) -> dict[str, Any]:
    """`change` as the JSON merge patch upstream sends: controller-runtime's client.MergeFrom
    diffs the JSON of the old and new PodGroup, and every status field is `omitempty`
    (apis/scheduling/v1alpha1/types.go), so a field whose new value is zero or "" is absent
    from the new JSON and patched to null: removed, not written as 0. (A count that falls to 0,
    such as `running` once every member succeeded, then shows no value in `kubectl get pg`.)"""
    return {name: value if value else None for name, value in change.items()}


def _occupied_by(pod: PodView) -> str:
    """fillOccupiedObj: the pod's owners as sorted "namespace/name", comma-joined."""
    refs = sorted(f"{pod.namespace}/{owner.name}" for owner in pod.owner_references)
    return ",".join(refs)


class PodGroupStatusController:
    """Reconcile PodGroup status after every change of a group or of its pods (upstream's
    PodGroupReconciler: it watches PodGroups and maps pod events to their group)."""

    def __init__(self, objects: PodGroupObjects, client: ApiClient) -> None:
        self._objects = objects
        self._client = client
        self._dirty: dict[GroupKey, None] = {}
        self._wakeup = asyncio.Event()
        objects.members.subscribe(self._mark)
        objects.groups.subscribe(
            lambda old, new: self._mark(((new or old).namespace, (new or old).name))
        )

    def _mark(self, group: GroupKey) -> None:
        self._dirty[group] = None
        self._wakeup.set()

    async def run(self) -> None:
        """Reconcile every known group once, then each group marked dirty, until cancelled."""
        for group in self._objects.groups.list():
            self._dirty[(group.namespace, group.name)] = None
        while True:
            if not self._dirty:
                self._wakeup.clear()
                await self._wakeup.wait()
            dirty, self._dirty = list(self._dirty), {}
            for namespace, name in dirty:
                await self.reconcile(namespace, name)

    async def reconcile(self, namespace: str, name: str) -> None:
        group = self._objects.get(namespace, name)
        if group is None:
            return  # deleted: nothing to write
        change = desired_status(group, self._objects.members.pods(namespace, name))
        if change is None:
            return
        path = f"{API_PATH}/namespaces/{namespace}/podgroups/{name}/status"
        status, body = await self._client.request(
            "PATCH",
            path,
            body={"status": merge_patch(change)},
            content_type="application/merge-patch+json",
        )
        if status >= 300:
            log.warning(
                "PodGroup status update failed",
                extra={"podgroup": group.key, "status": status, "body": body},
            )
