"""Simulated nodes, as KWOK does: Ready nodes from a template, lease heartbeats, pods that run.

Every node in the store is simulated, whether created at start (--nodes) or through the API. The
simulator acts as each node's kubelet: it fills in a node's status, renews its lease in
kube-node-lease, turns pods bound to it Running after a delay, and finishes the graceful
deletion of its pods.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass
from typing import Any

from kubesim import events, resize
from kubesim.api import Api
from kubesim.background import BackgroundTasks
from kubesim.meta import Obj, new_uid, parse_rfc3339, rfc3339
from kubesim.store import Store
from kubesim.watch import Event

log = logging.getLogger(__name__)

NODES = "nodes"
PODS = "pods"
LEASES = "coordination.k8s.io/leases"
CLAIMS = "resource.k8s.io/resourceclaims"
LEASE_NAMESPACE = "kube-node-lease"
KUBELET_VERSION = "v1.37.0-kubesim"
HEARTBEAT_SLICES = 10  # renew a tenth of the leases at a time, so 5000 nodes never burst
# on a Job's pod template: seconds the pod runs before it completes (default: --job-duration)
JOB_DURATION_ANNOTATION = "kubesim.io/job-duration-seconds"


def kubelet_declared_features(kubelet_version: str) -> tuple[str, ...]:
    """status.declaredFeatures as a kubelet of this version with its default configuration
    writes it (KEP-5328). The kubelet fills the field only with its NodeDeclaredFeatures gate on
    (pkg/kubelet/kubelet.go NewMainKubelet); the gate is alpha and off by default in v1.35
    (pkg/features/kube_features.go), so a v1.35 kubelet declares nothing and leaves the field
    out. Later versions are not simulated yet: this answers () for them too, rather than a list
    not read from upstream's registry at that version."""
    return ()


@dataclass(frozen=True, slots=True)
class NodeTemplate:
    cpu: str = "4"
    memory: str = "32Gi"
    pods: str = "110"
    ephemeral_storage: str = "100Gi"
    # Spread simulated nodes over this many zones (topology.kubernetes.io/zone); 0: no zones.
    zones: int = 0

    def capacity(self) -> dict[str, str]:
        return {
            "cpu": self.cpu,
            "memory": self.memory,
            "pods": self.pods,
            "ephemeral-storage": self.ephemeral_storage,
        }


def micro_time(timestamp: float) -> str:
    """metav1.MicroTime, as leases carry."""
    whole = rfc3339(timestamp)[:-1]
    return f"{whole}.{int(timestamp % 1 * 1_000_000):06d}Z"


ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"


def zone_name(index: int) -> str:
    """zone-a, zone-b, ... zone-z, zone-aa, ..."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return f"zone-{letters}"


def node_manifest(name: str, template: NodeTemplate, index: int = 0) -> Obj:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
    }
    if template.zones > 0:
        # round robin, as cloud providers' node pools usually are
        labels[ZONE_LABEL] = zone_name(index % template.zones)
        labels[REGION_LABEL] = "region-1"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
        },
        "spec": {},
    }


def _ready_conditions(now: str) -> list[dict[str, Any]]:
    def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }

    return [
        condition(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        condition(
            "DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"
        ),
        condition(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]


def _marked_unknown(node: Obj) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "Unknown")
    return False


class NodeSimulator:
    """The kubelets of every node in the store. Owns its background tasks; call start/stop."""

    def __init__(
        self,
        api: Api,
        template: NodeTemplate,
        pod_start_delay: float = 0.0,
        heartbeat_interval: float = 10.0,
        job_duration: float = 5.0,
        stopped_nodes: tuple[str, ...] = (),
        events: bool = True,
    ) -> None:
        self.api = api
        # whether the kubelets write their container events (Pulled, Created, Started, Killing)
        self.events = events
        # a Job's pod ends Succeeded after this long (or JOB_DURATION_ANNOTATION's seconds)
        self.job_duration = job_duration
        # nodes whose kubelet is down: no lease renewal, no pod started or finished
        self.stopped: set[str] = set(stopped_nodes)
        self._job_timers: set[tuple[str, str]] = set()
        self.store: Store = api.store
        self.template = template
        self.pod_start_delay = pod_start_delay
        self.heartbeat_interval = heartbeat_interval
        self._jobs: deque[tuple[str, str, str]] = deque()
        self._wakeup = asyncio.Event()
        self._tasks = BackgroundTasks("node simulator")
        self._timers: set[asyncio.TimerHandle] = set()
        self._ip_counter = 0
        self._node_ips: dict[str, str] = {}
        # node → pods whose resize waits for room there (PodResizePending, Deferred)
        self._deferred: dict[str, set[tuple[str, str]]] = {}

    # ---- lifecycle ---------------------------------------------------------------------------
    async def start(self, initial_nodes: int) -> None:
        self.store.add_listener(self._on_event)
        for index in range(initial_nodes):
            name = f"node-{index}"
            if self.store.get(NODES, "", name) is None:
                await self._create(NODES, node_manifest(name, self.template, index))
        for node in self.store.items(NODES):
            self._enqueue("node", "", node["metadata"]["name"])
        for pod in self.store.items(PODS):
            self._check_pod(pod)
        self._tasks.start_soon(self._work, name="node simulator")
        self._tasks.start_soon(self._heartbeats, name="node heartbeats")

    async def stop(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        await self._tasks.close()

    async def _create(self, key: str, obj: Obj) -> Obj:
        meta = obj["metadata"]
        meta["uid"] = new_uid(self.api.rng)
        meta["creationTimestamp"] = rfc3339(self.api.clock())
        return await self.store.put(key, obj, None)

    # ---- events ------------------------------------------------------------------------------
    def _on_event(self, key: str, event: Event) -> None:
        if key == PODS:
            if event.type != "DELETED":
                self._check_pod(event.obj)
            node = (event.obj.get("spec") or {}).get("nodeName")
            if node and self._deferred.get(node):
                # a pod left or changed: a deferred resize on its node may fit now
                self._enqueue("node-resizes", "", node)
        elif key == CLAIMS and event.type != "DELETED":
            # a claim allocated and reserved for pods: those waiting for it may start now
            namespace = event.obj["metadata"].get("namespace", "")
            for ref in (event.obj.get("status") or {}).get("reservedFor") or []:
                if isinstance(ref, dict) and ref.get("resource") == "pods":
                    pod = self.store.get(PODS, namespace, str(ref.get("name") or ""))
                    if pod is not None:
                        self._check_pod(pod)
        elif key == NODES:
            name = event.obj["metadata"]["name"]
            if event.type == "DELETED":
                self._enqueue("node-gone", "", name)
            elif event.type == "ADDED" or not self._node_complete(event.obj):
                self._enqueue("node", "", name)

    def _check_pod(self, pod: Obj) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or node in self.stopped or self.store.get(NODES, "", node) is None:
            return
        meta = pod["metadata"]
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if phase == "Running" and not meta.get("deletionTimestamp"):
            self._maybe_finish_job_pod(pod)
            if resize.resize_wanted(pod):
                self._enqueue("pod-resize", meta["namespace"], meta["name"])
        elif meta.get("deletionTimestamp"):
            self._enqueue("pod-delete", meta["namespace"], meta["name"])
        elif phase == "Pending":
            if self.pod_start_delay > 0:
                timer = asyncio.get_running_loop().call_later(
                    self.pod_start_delay, self._enqueue, "pod-run", meta["namespace"], meta["name"]
                )
                self._timers.add(timer)
            else:
                self._enqueue("pod-run", meta["namespace"], meta["name"])

    def _enqueue(self, job: str, namespace: str, name: str) -> None:
        self._jobs.append((job, namespace, name))
        self._wakeup.set()

    async def _work(self) -> None:
        while True:
            if not self._jobs:
                self._wakeup.clear()
                await self._wakeup.wait()
                self._timers = {t for t in self._timers if not t.cancelled()}
            job, namespace, name = self._jobs.popleft()
            try:
                if job == "node":
                    await self._complete_node(name)
                elif job == "node-gone":
                    lease = self.store.get(LEASES, LEASE_NAMESPACE, name)
                    if lease is not None:
                        await self.store.delete(LEASES, lease)
                elif job == "pod-run":
                    await self._run_pod(namespace, name)
                elif job == "pod-delete":
                    await self._finish_deletion(namespace, name)
                elif job == "pod-succeed":
                    self._job_timers.discard((namespace, name))
                    await self._succeed_pod(namespace, name)
                elif job == "node-start":
                    await self._restart_node(name)
                elif job == "pod-resize":
                    await self._resize_pod(namespace, name)
                elif job == "node-resizes":
                    for pod_ns, pod_name in sorted(self._deferred.pop(name, set())):
                        await self._resize_pod(pod_ns, pod_name)
            except Exception:  # one bad object must not stop every node's kubelet
                log.exception("node simulator job %s %s/%s failed", job, namespace, name)

    # ---- nodes -------------------------------------------------------------------------------
    def _node_complete(self, node: Obj) -> bool:
        status = node.get("status") or {}
        return bool(
            status.get("allocatable")
            and status.get("conditions")
            and status.get("nodeInfo")
            and status.get("addresses")
        )

    def _node_ip(self, name: str) -> str:
        ip = self._node_ips.get(name)
        if ip is None:
            index = len(self._node_ips) + 1
            ip = f"10.0.{index // 250}.{index % 250 + 1}"
            self._node_ips[name] = ip
        return ip

    async def _complete_node(self, name: str) -> None:
        node = self.store.get(NODES, "", name)
        if node is None:
            return
        if not self._node_complete(node):
            now = rfc3339(self.api.clock())
            status = dict(node.get("status") or {})
            capacity = status.get("capacity") or self.template.capacity()
            status.setdefault("capacity", capacity)
            status.setdefault("allocatable", capacity)
            if not status.get("conditions"):
                status["conditions"] = _ready_conditions(now)
            if not status.get("addresses"):
                status["addresses"] = [
                    {"type": "InternalIP", "address": self._node_ip(name)},
                    {"type": "Hostname", "address": name},
                ]
            status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 10250}})
            status.setdefault(
                "nodeInfo",
                {
                    "machineID": "",
                    "systemUUID": "",
                    "bootID": "",
                    "kernelVersion": "",
                    "osImage": "",
                    "containerRuntimeVersion": "kwok",
                    "kubeletVersion": KUBELET_VERSION,
                    "kubeProxyVersion": "",
                    "operatingSystem": "linux",
                    "architecture": "amd64",
                },
            )
            status.setdefault("phase", "Running")
            declared = kubelet_declared_features(KUBELET_VERSION)
            if declared:
                status.setdefault("declaredFeatures", list(declared))
            await self.store.put(NODES, {**node, "status": status}, node)
            node = self.store.get(NODES, "", name) or node
        if self.store.get(LEASES, LEASE_NAMESPACE, name) is None:
            if self.store.get("namespaces", "", LEASE_NAMESPACE) is None:
                return
            await self._create(LEASES, self._lease(node))

    def _lease(self, node: Obj) -> Obj:
        name = node["metadata"]["name"]
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": name,
                "namespace": LEASE_NAMESPACE,
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "name": name,
                        "uid": node["metadata"].get("uid", ""),
                    }
                ],
            },
            "spec": {
                "holderIdentity": name,
                "leaseDurationSeconds": 40,
                "renewTime": micro_time(self.api.clock()),
            },
        }

    async def _heartbeats(self) -> None:
        """Renew every node's lease once per interval, a slice at a time."""
        slice_index = 0
        while True:
            await asyncio.sleep(self.heartbeat_interval / HEARTBEAT_SLICES)
            renew = micro_time(self.api.clock())
            changes: list[tuple[str, Obj | None, Obj | None]] = []
            for lease in self.store.items(LEASES, LEASE_NAMESPACE):
                name = lease["metadata"]["name"]
                if hash(name) % HEARTBEAT_SLICES != slice_index or name in self.stopped:
                    continue
                node = self.store.get(NODES, "", name)
                if node is None:
                    continue
                if _marked_unknown(node):  # the node lifecycle controller gave up on it too soon
                    self._enqueue("node-start", "", name)
                spec = {**lease.get("spec", {}), "renewTime": renew}
                changes.append(
                    (LEASES, {**lease, "metadata": dict(lease["metadata"]), "spec": spec}, lease)
                )
            slice_index = (slice_index + 1) % HEARTBEAT_SLICES
            if changes:
                try:
                    await self.store.commit(changes)
                except Exception:
                    log.exception("renewing node leases failed")

    # ---- pods --------------------------------------------------------------------------------
    def _pod_ip(self) -> str:
        self._ip_counter += 1
        n = self._ip_counter
        return f"10.244.{(n >> 8) & 255}.{n & 255}"

    async def _run_pod(self, namespace: str, name: str) -> None:
        pod = self.store.get(PODS, namespace, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        status = pod.get("status") or {}
        node_name = (pod.get("spec") or {}).get("nodeName")
        if status.get("phase", "Pending") != "Pending" or not node_name:
            return
        if not self._claims_prepared(pod):
            await self._wait_for_claims(pod)
            return
        now = rfc3339(self.api.clock())
        host_ip = self._node_ip(node_name)
        pod_ip = self._pod_ip()
        conditions = [c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"]
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"):
            conditions.append(
                {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
            )
        containers = (pod.get("spec") or {}).get("containers") or []
        new_status = {
            **status,
            "phase": "Running",
            "conditions": conditions,
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": now,
            "containerStatuses": [
                {
                    "name": c.get("name", ""),
                    "image": c.get("image", ""),
                    "imageID": "",
                    "containerID": f"kwok://{new_uid(self.api.rng)[:8]}",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": now}},
                    "lastState": {},
                    **resize.actuated_container_status(c),
                }
                for c in containers
            ],
            # InPlacePodLevelResourcesVerticalScaling (on since v1.36): the pod-level allocation
            # and what the pod cgroup holds
            **resize.pod_level_status(pod.get("spec") or {}),
        }
        started = [
            change
            for c in containers
            for change in self._container_events(
                pod,
                node_name,
                c,
                [
                    # image_manager.go EnsureImageExists (the image is always present here), then
                    # kuberuntime_container.go startContainer
                    (
                        "Pulled",
                        f'Container image "{c.get("image", "")}" already present on machine '
                        "and can be accessed by the pod",
                    ),
                    ("Created", f"Created container: {c.get('name', '')}"),
                    ("Started", f"Started container {c.get('name', '')}"),
                ],
            )
        ]
        await self.store.commit([(PODS, {**pod, "status": new_status}, pod), *started])

    def _container_events(
        self, pod: Obj, node_name: str, container: dict[str, Any], reasons: list[tuple[str, str]]
    ) -> list[tuple[str, Obj, None]]:
        """The kubelet's Normal events about one container (its recorder's source is
        {kubelet, <node>}; the reference names the container by fieldPath), as store changes
        committed with the pod status they accompany."""
        if not self.events:
            return []
        ref = events.reference(pod, "Pod", "v1", f"spec.containers{{{container.get('name', '')}}}")
        source = events.Source(events.KUBELET, node_name)
        return [
            self.api.events.make(source, ref, events.NORMAL, reason, message)
            for reason, message in reasons
        ]

    def _claims_prepared(self, pod: Obj) -> bool:
        """Whether the kubelet could prepare every ResourceClaim of the pod: each exists (a
        template's claim as recorded in status.resourceClaimStatuses), is allocated and is
        reserved for this pod (pkg/kubelet/cm/dra/manager.go PrepareResources refuses the pod
        otherwise, and retries on the next sync)."""
        entries = (pod.get("spec") or {}).get("resourceClaims")
        if not entries:
            return True
        namespace = pod["metadata"].get("namespace", "")
        statuses = {
            s.get("name"): s.get("resourceClaimName")
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
            if isinstance(s, dict)
        }
        for entry in entries:
            if not isinstance(entry, dict):
                return False
            if entry.get("resourceClaimName"):
                claim_name = entry["resourceClaimName"]
            elif entry.get("name") in statuses:
                claim_name = statuses[entry.get("name")]
                if not claim_name:
                    continue  # recorded as not needed
            else:
                return False  # the claim of a template is not created yet
            claim = self.store.get(CLAIMS, namespace, str(claim_name))
            status = (claim or {}).get("status") or {}
            if claim is None or status.get("allocation") is None:
                return False
            pod_uid = pod["metadata"].get("uid")
            if not any(
                isinstance(r, dict) and r.get("uid") == pod_uid
                for r in status.get("reservedFor") or []
            ):
                return False
        return True

    async def _wait_for_claims(self, pod: Obj) -> None:
        """What a kubelet reports while it cannot prepare a pod's claims: Pending, containers
        waiting in ContainerCreating, not ready to start them."""
        status = pod.get("status") or {}
        now = rfc3339(self.api.clock())
        conditions = [
            c
            for c in status.get("conditions") or []
            if c.get("type") != "PodReadyToStartContainers"
        ]
        old = next(
            (
                c
                for c in status.get("conditions") or []
                if c.get("type") == "PodReadyToStartContainers"
            ),
            None,
        )
        conditions.append(
            old
            or {
                "type": "PodReadyToStartContainers",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": now,
            }
        )
        containers = (pod.get("spec") or {}).get("containers") or []
        new_status = {
            **status,
            "conditions": conditions,
            "containerStatuses": [
                {
                    "name": c.get("name", ""),
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": False,
                    "started": False,
                    "restartCount": 0,
                    "state": {"waiting": {"reason": "ContainerCreating"}},
                    "lastState": {},
                }
                for c in containers
            ],
        }
        if new_status != status:
            await self.store.put(PODS, {**pod, "status": new_status}, pod)

    async def _resize_pod(self, namespace: str, name: str) -> None:
        """What a kubelet does when a running pod's desired resources change (kubesim.resize):
        allocate and actuate them if the node has room, else PodResizePending."""
        pod = self.store.get(PODS, namespace, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        status = pod.get("status") or {}
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        node = self.store.get(NODES, "", node_name) if node_name else None
        if status.get("phase") != "Running" or node is None or not resize.resize_wanted(pod):
            return
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        others = [
            other
            for other in self.store.items(PODS)
            if (other.get("spec") or {}).get("nodeName") == node_name
            and other["metadata"].get("uid") != pod["metadata"].get("uid")
            and (other.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]
        now = rfc3339(self.api.clock())
        conditions = [
            c
            for c in status.get("conditions") or []
            if c.get("type") not in (resize.RESIZE_PENDING, resize.RESIZE_IN_PROGRESS)
        ]
        verdict = resize.admit_resize(pod, allocatable, others)
        if verdict is not None:
            reason, message = verdict
            if reason == "Deferred":
                self._deferred.setdefault(node_name, set()).add((namespace, name))
            pending = {
                "type": resize.RESIZE_PENDING,
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": now,
                "reason": reason,
                "message": message,
            }
            for old in status.get("conditions") or []:
                if old.get("type") == resize.RESIZE_PENDING and old.get("reason") == reason:
                    pending["lastTransitionTime"] = old.get("lastTransitionTime", now)
            new_status = {**status, "conditions": [*conditions, pending]}
            if new_status != status:
                await self.store.put(PODS, {**pod, "status": new_status}, pod)
            return
        self._deferred.get(node_name, set()).discard((namespace, name))
        # Allocated first, reported in progress while the runtime applies it ...
        spec_containers = {
            c.get("name"): c for c in resize.resizable_containers(pod.get("spec") or {})
        }

        def with_allocation(items: list[Any], actuate: bool) -> list[Any]:
            result = []
            for item in items:
                container = spec_containers.get(item.get("name"))
                if container is None:
                    result.append(item)
                    continue
                wanted = resize.actuated_container_status(container)
                item = {k: v for k, v in item.items() if k != "allocatedResources"}
                if "allocatedResources" in wanted:
                    item["allocatedResources"] = wanted["allocatedResources"]
                if actuate:
                    item.pop("resources", None)
                    if "resources" in wanted:
                        item["resources"] = wanted["resources"]
                result.append(item)
            return result

        in_progress = {
            "type": resize.RESIZE_IN_PROGRESS,
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": now,
        }
        allocated = {**status, "conditions": [*conditions, in_progress]}
        for key in ("containerStatuses", "initContainerStatuses"):
            if key in status:
                allocated[key] = with_allocation(status[key], actuate=False)
        # the pod level (InPlacePodLevelResourcesVerticalScaling): allocatedResources now,
        # status.resources once the pod cgroup is resized
        pod_level = resize.pod_level_status(pod.get("spec") or {})
        if "allocatedResources" in pod_level:
            allocated["allocatedResources"] = pod_level["allocatedResources"]
        stored = await self.store.put(PODS, {**pod, "status": allocated}, pod)
        # ... then actuated: status.containerStatuses[].resources shows it, the condition goes.
        actuated = {**allocated, "conditions": conditions}
        for key in ("containerStatuses", "initContainerStatuses"):
            if key in allocated:
                actuated[key] = with_allocation(allocated[key], actuate=True)
        if "resources" in pod_level:
            actuated["resources"] = pod_level["resources"]
        await self.store.put(PODS, {**stored, "status": actuated}, stored)

    async def _finish_deletion(self, namespace: str, name: str) -> None:
        pod = self.store.get(PODS, namespace, name)
        if pod is None or not pod["metadata"].get("deletionTimestamp"):
            return
        if pod["metadata"].get("finalizers"):
            return
        # kuberuntime_container.go killContainer: "Stopping container <name>" for each running one
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        running = {
            s.get("name")
            for s in (pod.get("status") or {}).get("containerStatuses") or []
            if isinstance(s, dict) and "running" in (s.get("state") or {})
        }
        killing = [
            change
            for c in (pod.get("spec") or {}).get("containers") or []
            if c.get("name") in running
            for change in self._container_events(
                pod, node_name, c, [("Killing", f"Stopping container {c.get('name', '')}")]
            )
        ]
        await self.store.commit([(PODS, None, pod), *killing])

    # ---- Jobs' pods (KWOK's pod-complete stage) -----------------------------------------------
    def _job_pod_duration(self, pod: Obj) -> float | None:
        """Seconds a pod runs before it completes: only pods of a Job complete."""
        refs = pod["metadata"].get("ownerReferences") or []
        if not any(isinstance(r, dict) and r.get("kind") == "Job" for r in refs):
            return None
        raw = (pod["metadata"].get("annotations") or {}).get(JOB_DURATION_ANNOTATION)
        if raw is not None:
            try:
                return max(0.0, float(raw))
            except ValueError:
                log.warning(
                    "pod %s: ignoring %s=%r", pod["metadata"]["name"], JOB_DURATION_ANNOTATION, raw
                )
        return self.job_duration

    def _maybe_finish_job_pod(self, pod: Obj) -> None:
        meta = pod["metadata"]
        item = (meta["namespace"], meta["name"])
        if item in self._job_timers:
            return
        duration = self._job_pod_duration(pod)
        if duration is None:
            return
        started = (pod.get("status") or {}).get("startTime")
        try:  # after a restart, only what is left of the run
            left = parse_rfc3339(started) + duration - self.api.clock() if started else duration
        except ValueError:
            left = duration
        self._job_timers.add(item)
        timer = asyncio.get_running_loop().call_later(
            max(0.0, left), self._enqueue, "pod-succeed", *item
        )
        self._timers.add(timer)

    async def _succeed_pod(self, namespace: str, name: str) -> None:
        pod = self.store.get(PODS, namespace, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        status = pod.get("status") or {}
        node = (pod.get("spec") or {}).get("nodeName")
        if status.get("phase") != "Running" or not node or node in self.stopped:
            return
        now = rfc3339(self.api.clock())
        conditions = [
            {**c, "status": "False", "reason": "PodCompleted", "lastTransitionTime": now}
            if c.get("type") in ("Ready", "ContainersReady")
            else c
            for c in status.get("conditions") or []
        ]
        containers = [
            {
                **c,
                "ready": False,
                "started": False,
                "state": {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": status.get("startTime"),
                        "finishedAt": now,
                        "containerID": c.get("containerID", ""),
                    }
                },
            }
            for c in status.get("containerStatuses") or []
        ]
        new_status = {
            **status,
            "phase": "Succeeded",
            "conditions": conditions,
            "containerStatuses": containers,
        }
        await self.store.put(PODS, {**pod, "status": new_status}, pod)

    # ---- stopping and starting a node's kubelet ----------------------------------------------
    def stop_node(self, name: str) -> bool:
        """Stop the node's kubelet: its lease is no longer renewed (the node lifecycle
        controller then marks it Unknown) and its pods are neither started nor finished."""
        if self.store.get(NODES, "", name) is None:
            return False
        self.stopped.add(name)
        return True

    def start_node(self, name: str) -> bool:
        if self.store.get(NODES, "", name) is None:
            return False
        self.stopped.discard(name)
        self._enqueue("node-start", "", name)
        return True

    async def _restart_node(self, name: str) -> None:
        """A kubelet coming back: Ready again, lease renewed, its pods looked at anew."""
        node = self.store.get(NODES, "", name)
        if node is None or name in self.stopped:
            return
        now = rfc3339(self.api.clock())
        status = {**(node.get("status") or {}), "conditions": _ready_conditions(now)}
        await self.store.put(
            NODES, {**node, "metadata": dict(node["metadata"]), "status": status}, node
        )
        lease = self.store.get(LEASES, LEASE_NAMESPACE, name)
        if lease is not None:
            spec = {**lease.get("spec", {}), "renewTime": micro_time(self.api.clock())}
            await self.store.put(
                LEASES, {**lease, "metadata": dict(lease["metadata"]), "spec": spec}, lease
            )
        for pod in self.store.items(PODS):
            if (pod.get("spec") or {}).get("nodeName") == name:
                self._check_pod(pod)
