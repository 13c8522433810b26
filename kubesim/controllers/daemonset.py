"""DaemonSets: one pod per eligible node, pinned to it with the node-name affinity term so the
scheduler binds it, replaced node by node when the template changes.

Upstream: pkg/controller/daemon/daemon_controller.go (manage, podsShouldBeOnNode,
NodeShouldRunDaemonPod), pkg/controller/daemon/util/daemonset_util.go
(AddOrUpdateDaemonPodTolerations, ReplaceDaemonSetPodNodeNameNodeAffinity), update.go (rolling
update by maxUnavailable, ControllerRevisions and the controller-revision-hash label).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesim import events
from kubesim.api import Api
from kubesim.controllers import common as c
from kubesim.controllers.deployment import template_hash
from kubesim.controllers.manager import Due, Key
from kubesim.meta import Obj
from kubesim.patch import copy_json
from kubesim.watch import Event

DAEMONSETS = "apps/daemonsets"
REVISIONS = "apps/controllerrevisions"
REVISION_HASH = "controller-revision-hash"  # appsv1.DefaultDaemonSetUniqueLabelKey
# AddOrUpdateDaemonPodTolerations: every daemon pod tolerates these (NoExecute ones forever)
DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def daemon_tolerations(pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    tolerations = [t for t in pod_spec.get("tolerations") or [] if isinstance(t, dict)]
    wanted = list(DAEMON_TOLERATIONS)
    if pod_spec.get("hostNetwork"):
        wanted.append(NETWORK_UNAVAILABLE)
    for key, effect in wanted:
        tolerations = [
            t for t in tolerations if not (t.get("key") == key and t.get("effect") == effect)
        ]
        tolerations.append({"key": key, "operator": "Exists", "effect": effect})
    return tolerations


def node_name_affinity(affinity: dict[str, Any] | None, node: str) -> dict[str, Any]:
    """ReplaceDaemonSetPodNodeNameNodeAffinity: the required node affinity becomes one term
    selecting the node by metadata.name."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    affinity = dict(affinity or {})
    node_affinity = dict(affinity.get("nodeAffinity") or {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}
    affinity["nodeAffinity"] = node_affinity
    return affinity


def _requirement_matches(req: dict[str, Any], values_of: dict[str, str]) -> bool:
    key, op = req.get("key"), req.get("operator")
    values = [str(v) for v in req.get("values") or []]
    present = key in values_of
    value = values_of.get(str(key), "")
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            number, bound = int(value), int(values[0])
        except ValueError:
            return False
        return number > bound if op == "Gt" else number < bound
    return False


def fits_node_affinity(pod_spec: dict[str, Any], node: Obj) -> bool:
    """nodeSelector and required node affinity (component-helpers nodeaffinity)."""
    labels = node["metadata"].get("labels") or {}
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    fields = {"metadata.name": node["metadata"]["name"]}
    for term in required.get("nodeSelectorTerms") or []:
        expressions = term.get("matchExpressions") or []
        field_reqs = term.get("matchFields") or []
        if not expressions and not field_reqs:
            continue
        if all(_requirement_matches(r, labels) for r in expressions) and all(
            _requirement_matches(r, fields) for r in field_reqs
        ):
            return True
    return False


def should_run(
    pod_spec: dict[str, Any], node: Obj, comparison_operators: bool = False
) -> tuple[bool, bool]:
    """NodeShouldRunDaemonPod: (should run, should continue running); `comparison_operators`
    is the TaintTolerationComparisonOperators gate."""
    if pod_spec.get("nodeName") and pod_spec["nodeName"] != node["metadata"]["name"]:
        return False, False
    if not fits_node_affinity(pod_spec, node):
        return False, False
    taints = c.node_taints(node)
    tolerations = pod_spec.get("tolerations") or []
    if c.untolerated(taints, tolerations, ("NoExecute",), comparison_operators):
        return False, False
    if c.untolerated(taints, tolerations, ("NoSchedule",), comparison_operators):
        return False, True
    return True, True


def _pod_node(pod: Obj) -> str:
    """The node a daemon pod is for: its nodeName, or the node its affinity term names."""
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        return str(node)
    terms = (
        (((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms") or []
    for term in terms:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("values"):
                return str(field["values"][0])
    return ""


class DaemonSetController:
    name = "DaemonSet"
    watches: tuple[str, ...] = (DAEMONSETS, c.PODS, c.NODES)
    owned_only: tuple[str, ...] = (c.PODS,)

    def __init__(self, api: Api) -> None:
        self.api = api

    def on_event(self, key: str, event: Event) -> Iterable[Due]:
        if key == DAEMONSETS:
            return (
                []
                if event.type == "DELETED"
                else [(event.namespace, event.obj["metadata"]["name"], 0.0)]
            )
        if key == c.NODES:
            if not self.api.store.count(DAEMONSETS):
                return []
            old, new = event.old, event.obj
            if (
                event.type == "MODIFIED"
                and old is not None
                and old["metadata"].get("labels") == new["metadata"].get("labels")
                and (old.get("spec") or {}) == (new.get("spec") or {})
            ):
                return []  # only status moved: eligibility did not change
            return [
                (d["metadata"].get("namespace", ""), d["metadata"]["name"], 0.0)
                for d in self.api.store.items(DAEMONSETS)
            ]
        owner = c.owned_by(event.obj, "DaemonSet")
        return [] if owner is None else [(event.namespace, owner, 0.0)]

    def initial(self) -> Iterable[Key]:
        return [
            (d["metadata"].get("namespace", ""), d["metadata"]["name"])
            for d in self.api.store.items(DAEMONSETS)
        ]

    async def sync(self, namespace: str, name: str) -> Iterable[Due]:
        ds = self.api.store.get(DAEMONSETS, namespace, name)
        if ds is None or c.deleting(ds):
            return []
        spec = c.spec(ds)
        template = spec.get("template")
        if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
            raise c.Malformed("spec.template.spec is missing")
        selector = c.selector_of(ds)
        revision_hash = template_hash(template)
        await self._ensure_revision(ds, revision_hash, template)
        pod_spec = {**template["spec"], "tolerations": daemon_tolerations(template["spec"])}
        pods = [
            p for p in c.controlled_pods(self.api, ds) if c.selects(selector, p) and c.active(p)
        ]
        by_node: dict[str, list[Obj]] = {}
        for pod in pods:
            by_node.setdefault(_pod_node(pod), []).append(pod)
        nodes = self.api.store.items(c.NODES)
        desired: list[str] = []
        ref = c.new_controller_ref(ds, "apps/v1", "DaemonSet")
        max_unavailable = self._max_unavailable(ds, len(nodes))
        unavailable = 0
        outdated: list[Obj] = []
        for node in nodes:
            node_name = node["metadata"]["name"]
            run, keep = should_run(pod_spec, node, self.api.taint_comparison_operators)
            here = by_node.pop(node_name, [])
            if run:
                desired.append(node_name)
            if run and not here:
                await self._create_pod(ds, ref, pod_spec, node_name, revision_hash)
                continue
            if not keep:
                for pod in here:
                    await self._delete_pod(ds, pod)
                continue
            for extra in sorted(here, key=lambda p: p["metadata"].get("creationTimestamp", ""))[1:]:
                await self._delete_pod(ds, extra)
            if here:
                pod = here[0]
                if not c.ready(pod):
                    unavailable += 1
                if (pod["metadata"].get("labels") or {}).get(REVISION_HASH) != revision_hash:
                    outdated.append(pod)
        for pods_elsewhere in by_node.values():  # pods for nodes that are gone
            for pod in pods_elsewhere:
                await self._delete_pod(ds, pod)
        if (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate":
            # rollingUpdate: replace outdated pods, unavailable ones first, within maxUnavailable
            outdated.sort(key=c.ready)
            budget = max_unavailable - unavailable
            for pod in outdated:
                if c.ready(pod) and budget <= 0:
                    break
                await self._delete_pod(ds, pod)
                if c.ready(pod):
                    budget -= 1
        await self._write_status(ds, desired, revision_hash)
        return []

    def _max_unavailable(self, ds: Obj, nodes: int) -> int:
        rolling = (c.spec(ds).get("updateStrategy") or {}).get("rollingUpdate") or {}
        return max(1, c.scaled_value(rolling.get("maxUnavailable", 1), nodes, True))

    async def _create_pod(
        self, ds: Obj, ref: dict[str, Any], pod_spec: dict[str, Any], node: str, revision_hash: str
    ) -> None:
        pod = c.pod_from_template(
            ds, ref, f"{c.name(ds)}-", generate=True, extra_labels={REVISION_HASH: revision_hash}
        )
        pod["spec"]["tolerations"] = copy_json(pod_spec["tolerations"])
        pod["spec"]["affinity"] = node_name_affinity(pod["spec"].get("affinity"), node)
        await c.create_pod(self.api, events.DAEMONSET_CONTROLLER, ds, "DaemonSet", "apps/v1", pod)

    async def _delete_pod(self, ds: Obj, pod: Obj) -> None:
        await c.delete_pod(self.api, events.DAEMONSET_CONTROLLER, ds, "DaemonSet", "apps/v1", pod)

    async def _ensure_revision(self, ds: Obj, revision_hash: str, template: dict[str, Any]) -> None:
        """A ControllerRevision per template, as `kubectl rollout history|undo ds` read them."""
        namespace = ds["metadata"].get("namespace", "")
        name = f"{c.name(ds)}-{revision_hash}"
        if self.api.store.get(REVISIONS, namespace, name) is not None:
            return
        owned = [
            r
            for r in self.api.store.items(REVISIONS, namespace)
            if (c.controller_ref(r) or {}).get("uid") == c.uid(ds)
        ]
        revision = max((int(r.get("revision") or 0) for r in owned), default=0) + 1
        patch_template = {**copy_json(template), "$patch": "replace"}
        await c.create(
            self.api,
            REVISIONS,
            {
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": {
                        **(c.selector_of(ds).get("matchLabels") or {}),
                        REVISION_HASH: revision_hash,
                    },
                    "ownerReferences": [c.new_controller_ref(ds, "apps/v1", "DaemonSet")],
                },
                "data": {"spec": {"template": patch_template}},
                "revision": revision,
            },
        )

    async def _write_status(self, ds: Obj, desired: list[str], revision_hash: str) -> None:
        pods = [p for p in c.controlled_pods(self.api, ds) if c.active(p)]
        wanted = set(desired)
        on_wanted = [p for p in pods if _pod_node(p) in wanted]
        scheduled_nodes = {_pod_node(p) for p in on_wanted}
        ready = [p for p in on_wanted if c.ready(p)]
        updated = [
            p
            for p in on_wanted
            if (p["metadata"].get("labels") or {}).get(REVISION_HASH) == revision_hash
        ]
        misscheduled = {_pod_node(p) for p in pods if _pod_node(p) not in wanted}
        new_status = {
            **c.status(ds),
            "currentNumberScheduled": len(scheduled_nodes),
            "numberMisscheduled": len(misscheduled),
            "desiredNumberScheduled": len(wanted),
            "numberReady": len(ready),
            "updatedNumberScheduled": len(updated),
            "numberAvailable": len(ready),
            "numberUnavailable": max(0, len(wanted) - len(ready)),
            "observedGeneration": ds["metadata"].get("generation", 1),
        }
        if not new_status["numberUnavailable"]:
            new_status.pop("numberUnavailable")
        await c.write_status(self.api, DAEMONSETS, ds, new_status)
