"""Storage fakes for volume plugin tests: StorageClasses, PVCs, PVs, CSI objects and a fake
API server with the PV controller's part, in the spirit of upstream's
pkg/scheduler/framework/plugins/volumebinding/test_utils.go (makePV, makePVC, makeNode) and
binder_test.go (makeTestPV, makeTestPVC, makeCapacity, its fake clientset with the PV
controller's volume reactor).

Objects are built as API JSON and parsed by the real views. Pods with volumes come from the
kit's builders (`make_pod(pvcs=...)`, `MakePod().ephemeral_volume(...)`). `FakeApiServer`
answers the binder's PUTs as an API server would (optimistic concurrency on resourceVersion,
NotFound) and delivers the stored result to the informer-fed `StorageObjects`;
`complete_binding` and `provision` do what the PV controller and a provisioner would.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.objects import NodeView
from scheduler.api.storage import (
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    SELECTED_NODE_ANNOTATION,
    CSIDriverView,
    CSINodeView,
    CSIStorageCapacityView,
    PersistentVolumeClaimView,
    PersistentVolumeView,
    StorageClassView,
)
from scheduler.listers.storage_objects import StorageObjects
from scheduler.testing.builders import make_node

HOSTNAME_LABEL = "kubernetes.io/hostname"
WAIT = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"

Obj = dict[str, Any]


def hostname_node(name: str, labels: Mapping[str, str] | None = None) -> NodeView:
    """A node labelled with its hostname, as volume topology expects (upstream's makeNode),
    plus `labels`."""
    return make_node(name, labels={HOSTNAME_LABEL: name, **dict(labels or {})})


def make_class(
    name: str,
    mode: str | None = WAIT,
    provisioner: str = "",
    allowed_topologies: Sequence[Mapping[str, Sequence[str]]] = (),
) -> StorageClassView:
    """A StorageClass; each allowed topology term maps label keys to values."""
    obj: Obj = {"metadata": {"name": name, "resourceVersion": "1"}}
    if provisioner:
        obj["provisioner"] = provisioner
    if mode is not None:
        obj["volumeBindingMode"] = mode
    if allowed_topologies:
        obj["allowedTopologies"] = [
            {
                "matchLabelExpressions": [
                    {"key": key, "values": list(values)} for key, values in term.items()
                ]
            }
            for term in allowed_topologies
        ]
    return StorageClassView.from_dict(obj)


def make_pvc(
    name: str,
    class_name: str | None = None,
    *,
    namespace: str = "default",
    uid: str | None = None,
    resource_version: str = "1",
    request: str | None = None,
    bound_pv: str = "",
    bind_completed: bool = False,
    selected_node: str | None = None,
    phase: str | None = None,
    access_modes: Sequence[str] = (),
    volume_mode: str | None = None,
    selector: Obj | None = None,
    deleting: bool = False,
    owner_uid: str = "",
    annotations: Mapping[str, str] | None = None,
    extra_spec: Mapping[str, Any] | None = None,
) -> PersistentVolumeClaimView:
    """A claim; `bound_pv` sets spec.volumeName, `bind_completed` the bind-completed
    annotation (upstream's withBoundPV sets both), `owner_uid` a controller reference. The uid
    defaults to one derived from the name ("" for none)."""
    meta: Obj = {"name": name, "namespace": namespace}
    uid = f"uid-{namespace}-{name}" if uid is None else uid
    if uid:
        meta["uid"] = uid
    if resource_version:
        meta["resourceVersion"] = resource_version
    ann = dict(annotations or {})
    if bind_completed:
        ann[BIND_COMPLETED_ANNOTATION] = "yes"
    if selected_node is not None:
        ann[SELECTED_NODE_ANNOTATION] = selected_node
    if ann:
        meta["annotations"] = ann
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if owner_uid:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": "owner",
                "uid": owner_uid,
                "controller": True,
            }
        ]
    spec: Obj = {}
    if class_name is not None:
        spec["storageClassName"] = class_name
    if request is not None:
        spec["resources"] = {"requests": {"storage": request}}
    if bound_pv:
        spec["volumeName"] = bound_pv
    if access_modes:
        spec["accessModes"] = list(access_modes)
    if volume_mode is not None:
        spec["volumeMode"] = volume_mode
    if selector is not None:
        spec["selector"] = selector
    spec.update(extra_spec or {})
    obj: Obj = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
    if phase is not None:
        obj["status"] = {"phase": phase}
    return PersistentVolumeClaimView.from_dict(obj)


def make_pv(
    name: str,
    class_name: str = "",
    *,
    resource_version: str = "1",
    capacity: str | None = None,
    phase: str | None = None,
    node_affinity: Mapping[str, Sequence[str]] | None = None,
    claim: PersistentVolumeClaimView | None = None,
    claim_uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    access_modes: Sequence[str] = (),
    volume_mode: str | None = None,
    deleting: bool = False,
    extra_spec: Mapping[str, Any] | None = None,
) -> PersistentVolumeView:
    """A PV; `node_affinity` is one required term of In expressions; `claim` sets a claimRef
    and the bound-by-controller annotation (binder_test.go's makeTestPV)."""
    meta: Obj = {"name": name}
    if resource_version:
        meta["resourceVersion"] = resource_version
    if labels:
        meta["labels"] = dict(labels)
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: Obj = {}
    if class_name:
        spec["storageClassName"] = class_name
    if capacity is not None:
        spec["capacity"] = {"storage": capacity}
    if node_affinity is not None:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": key, "operator": "In", "values": list(values)}
                            for key, values in node_affinity.items()
                        ]
                    }
                ]
            }
        }
    if claim is not None:
        ref: Obj = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": claim.namespace,
            "name": claim.name,
            "resourceVersion": claim.resource_version,
        }
        uid = claim.uid if claim_uid is None else claim_uid
        if uid:
            ref["uid"] = uid
        spec["claimRef"] = ref
        meta["annotations"] = {BOUND_BY_CONTROLLER_ANNOTATION: "yes"}
    if access_modes:
        spec["accessModes"] = list(access_modes)
    if volume_mode is not None:
        spec["volumeMode"] = volume_mode
    spec.update(extra_spec or {})
    obj: Obj = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}
    if phase is not None:
        obj["status"] = {"phase": phase}
    return PersistentVolumeView.from_dict(obj)


def make_csi_driver(name: str, storage_capacity: bool | None) -> CSIDriverView:
    spec: Obj = {}
    if storage_capacity is not None:
        spec["storageCapacity"] = storage_capacity
    return CSIDriverView.from_dict(
        {"metadata": {"name": name, "resourceVersion": "1"}, "spec": spec}
    )


def make_csi_node(name: str, annotations: Mapping[str, str] | None = None) -> CSINodeView:
    return CSINodeView.from_dict(
        {
            "metadata": {
                "name": name,
                "resourceVersion": "1",
                "annotations": dict(annotations or {}),
            },
            "spec": {"drivers": []},
        }
    )


def make_capacity(
    name: str,
    class_name: str,
    topology: Mapping[str, str] | None,
    capacity: str = "",
    maximum_volume_size: str = "",
    *,
    namespace: str = "default",
    resource_version: str = "1",
) -> CSIStorageCapacityView:
    """A CSIStorageCapacity; `topology` is its nodeTopology's matchLabels ({} reaches every
    node, None none)."""
    obj: Obj = {
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": resource_version},
        "storageClassName": class_name,
    }
    if topology is not None:
        obj["nodeTopology"] = {"matchLabels": dict(topology)}
    if capacity:
        obj["capacity"] = capacity
    if maximum_volume_size:
        obj["maximumVolumeSize"] = maximum_volume_size
    return CSIStorageCapacityView.from_dict(obj)


# -- a fake API server and PV controller ---------------------------------------------------------


def _status(code: int, reason: str, message: str) -> Obj:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


@dataclass
class FakeApiServer:
    """Answers PUTs of PersistentVolumes and PersistentVolumeClaims as the API server and an
    informer would: the API's object (`api`, else the informer's in `storage`) must have the
    sent resourceVersion (else 409), a new resourceVersion is assigned and the result is
    delivered to `storage` unless `deliver` is off (an informer that lags). `failures`
    answers a path with a fixed reply."""

    storage: StorageObjects
    deliver: bool = True
    failures: dict[str, tuple[int, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    # The API server's objects where they differ from the informer's, by "kind/key".
    api: dict[str, Any] = field(default_factory=dict)
    next_version: int = 100

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        self.requests.append((method, path, body))
        if path in self.failures:
            return self.failures[path]
        parts = path.strip("/").split("/")
        if method != "PUT":
            return 405, _status(405, "MethodNotAllowed", f"{method} not supported")
        if parts[:3] == ["api", "v1", "persistentvolumes"] and len(parts) == 4:
            resource, key, name = "persistentvolumes", parts[3], parts[3]
            parse: Any = PersistentVolumeView.from_dict
        elif len(parts) == 6 and parts[4] == "persistentvolumeclaims":
            resource, key, name = "persistentvolumeclaims", f"{parts[3]}/{parts[5]}", parts[5]
            parse = PersistentVolumeClaimView.from_dict
        else:
            return 404, _status(404, "NotFound", "the server could not find the requested resource")
        current = self.api_object(resource, key)
        if current is None:
            return 404, _status(404, "NotFound", f'{resource} "{name}" not found')
        sent = (body.get("metadata") or {}).get("resourceVersion")
        if sent != current.resource_version:
            return 409, _status(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {resource} "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again",
            )
        stored = self.bump(body)
        self._store(parse(stored), deliver=self.deliver)
        return 200, stored

    def api_object(self, resource: str, key: str) -> Any:
        if f"{resource}/{key}" in self.api:
            return self.api[f"{resource}/{key}"]
        store: Any = (
            self.storage.volumes if resource == "persistentvolumes" else self.storage.claims
        )
        return store.get(key)

    def bump(self, obj: Mapping[str, Any]) -> Obj:
        """A copy of `obj` with the next resourceVersion."""
        self.next_version += 1
        new = copy.deepcopy(dict(obj))
        new.setdefault("metadata", {})["resourceVersion"] = str(self.next_version)
        return new

    def _store(self, obj: Any, *, deliver: bool) -> None:
        store: Any
        if isinstance(obj, PersistentVolumeView):
            resource, store = "persistentvolumes", self.storage.volumes
        else:
            resource, store = "persistentvolumeclaims", self.storage.claims
        self.api[f"{resource}/{obj.key}"] = obj
        if deliver:
            old = store.get(obj.key)
            if old is None:
                store.on_add(obj)
            else:
                store.on_update(old, obj)

    def set_api(self, obj: PersistentVolumeView | PersistentVolumeClaimView) -> None:
        """The API server has `obj` as it is (the informer has not seen it)."""
        self._store(obj, deliver=False)

    def put(self, obj: PersistentVolumeView | PersistentVolumeClaimView) -> None:
        """Another writer stores `obj`: a new version, delivered to the informer's store."""
        parse: Any = type(obj).from_dict
        self._store(parse(self.bump(obj.raw)), deliver=True)

    def delete(self, obj: PersistentVolumeView | PersistentVolumeClaimView) -> None:
        if isinstance(obj, PersistentVolumeView):
            self.api.pop(f"persistentvolumes/{obj.key}", None)
            self.storage.volumes.on_delete(obj)
        else:
            self.api.pop(f"persistentvolumeclaims/{obj.key}", None)
            self.storage.claims.on_delete(obj)

    # What the PV controller and a provisioner do.

    def complete_binding(self, claim_key: str, pv_name: str) -> None:
        """The PV controller finishes binding the claim to the PV: the claim gets
        spec.volumeName, the bind-completed annotation and phase Bound."""
        pvc = self.storage.claims.get(claim_key)
        assert pvc is not None, claim_key
        raw = copy.deepcopy(dict(pvc.raw))
        raw.setdefault("metadata", {}).setdefault("annotations", {})[BIND_COMPLETED_ANNOTATION] = (
            "yes"
        )
        raw.setdefault("spec", {})["volumeName"] = pv_name
        raw["status"] = {"phase": "Bound"}
        self.put(PersistentVolumeClaimView.from_dict(raw))

    def provision(
        self, claim_key: str, pv_name: str, node_affinity: Mapping[str, Sequence[str]] | None
    ) -> None:
        """A provisioner creates a PV for the claim, which the PV controller binds."""
        pvc = self.storage.claims.get(claim_key)
        assert pvc is not None, claim_key
        self.put(
            make_pv(
                pv_name,
                pvc.storage_class_name,
                capacity="1Gi",
                phase="Bound",
                node_affinity=node_affinity,
                claim=pvc,
            )
        )
        self.complete_binding(claim_key, pv_name)
