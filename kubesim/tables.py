"""meta.k8s.io/v1 Table rendering: what `kubectl get` prints comes from the server.

The columns and cell values follow upstream's printers
(pkg/printers/internalversion/printers.go); the server always renders the wide columns
(priority 1) and kubectl hides them unless -o wide is given.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import kubernetes_asyncio.client.models as models
import orjson

from apimachinery.quantity import canonical_quantity
from kubesim import customresources
from kubesim.customresources import CustomVersion
from kubesim.resources import ResourceType
from kubesim.schemas import describe

JSON = dict[str, Any]
Row = list[Any]

_NAME_DOC = describe(models.V1ObjectMeta, "name")
_AGE_DOC = describe(models.V1ObjectMeta, "creation_timestamp")


def wants_table(accept_header: str) -> bool:
    """True when the Accept header asks for a meta.k8s.io/v1 Table (as kubectl get does)."""
    for media_range in accept_header.split(","):
        parts = [p.strip() for p in media_range.split(";")]
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if (
            parts[0] == "application/json"
            and params.get("as") == "Table"
            and params.get("g") == "meta.k8s.io"
            and params.get("v") == "v1"
        ):
            return True
    return False


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration: "45s", "3m20s", "5h", "3d4h", "2y"."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def since(value: Any, now: datetime) -> str:
    """translateTimestampSince: "<unknown>" for a missing time, else a human duration."""
    moment = _parse_time(value)
    if moment is None:
        return "<unknown>"
    return human_duration((now - moment).total_seconds())


def _column(
    name: str, description: str, kind: str = "string", priority: int = 0, fmt: str = ""
) -> JSON:
    return {
        "name": name,
        "type": kind,
        "format": fmt,
        "description": description,
        "priority": priority,
    }


_NAME = _column("Name", _NAME_DOC, fmt="name")
_AGE = _column("Age", _AGE_DOC)


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


# ---- pods ----------------------------------------------------------------------------------

_POD_COLUMNS = [
    _NAME,
    _column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    _column("Status", "The aggregate status of the containers in this pod."),
    _column(
        "Restarts",
        "The number of times the containers in this pod have been restarted and "
        "when the last container in this pod has restarted.",
    ),
    _AGE,
    _column("IP", describe(models.V1PodStatus, "pod_ip"), priority=1),
    _column("Node", describe(models.V1PodSpec, "node_name"), priority=1),
    _column("Nominated Node", describe(models.V1PodStatus, "nominated_node_name"), priority=1),
    _column("Readiness Gates", describe(models.V1PodSpec, "readiness_gates"), priority=1),
]


def _condition_true(conditions: list[JSON], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _later(current: datetime | None, status: JSON) -> datetime | None:
    finished = _parse_time(_get(status, "lastState", "terminated", "finishedAt"))
    if finished is not None and (current is None or finished > current):
        return finished
    return current


def _is_sidecar(container: JSON | None) -> bool:
    return bool(container) and container.get("restartPolicy") == "Always"  # type: ignore[union-attr]


def _pod_row(pod: JSON, now: datetime) -> tuple[Row, list[JSON]]:
    spec: JSON = pod.get("spec") or {}
    status: JSON = pod.get("status") or {}
    conditions: list[JSON] = status.get("conditions") or []
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for condition in conditions:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    row_conditions: list[JSON] = []
    if phase in ("Succeeded", "Failed"):
        message = (
            "The pod has completed successfully." if phase == "Succeeded" else ("The pod failed.")
        )
        row_conditions = [
            {"type": "Completed", "status": "True", "reason": phase, "message": message}
        ]

    total = len(spec.get("containers") or []) + sum(map(_is_sidecar, init_specs.values()))
    ready = restarts = sidecar_restarts = 0
    last_restart: datetime | None = None
    last_sidecar_restart: datetime | None = None
    initializing = False
    init_statuses: list[JSON] = status.get("initContainerStatuses") or []
    for index, container in enumerate(init_statuses):
        restarts += int(container.get("restartCount") or 0)
        last_restart = _later(last_restart, container)
        sidecar = _is_sidecar(init_specs.get(container.get("name")))
        if sidecar:
            sidecar_restarts += int(container.get("restartCount") or 0)
            last_sidecar_restart = _later(last_sidecar_restart, container)
        terminated = _get(container, "state", "terminated")
        waiting_reason = _get(container, "state", "waiting", "reason") or ""
        if terminated is not None and int(terminated.get("exitCode") or 0) == 0:
            continue
        if sidecar and container.get("started"):
            ready += 1 if container.get("ready") else 0
            continue
        if terminated is not None:
            if terminated.get("reason"):
                reason = "Init:" + terminated["reason"]
            elif terminated.get("signal"):
                reason = f"Init:Signal:{terminated['signal']}"
            else:
                reason = f"Init:ExitCode:{terminated.get('exitCode') or 0}"
        elif waiting_reason and waiting_reason != "PodInitializing":
            reason = "Init:" + waiting_reason
        else:
            reason = f"Init:{index}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _condition_true(conditions, "Initialized"):
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for container in reversed(status.get("containerStatuses") or []):
            restarts += int(container.get("restartCount") or 0)
            last_restart = _later(last_restart, container)
            state: JSON = container.get("state") or {}
            terminated = state.get("terminated")
            if _get(state, "waiting", "reason"):
                reason = state["waiting"]["reason"]
            elif terminated is not None and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated is not None:
                reason = (
                    f"Signal:{terminated['signal']}"
                    if terminated.get("signal")
                    else f"ExitCode:{terminated.get('exitCode') or 0}"
                )
            elif container.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(conditions, "Ready") else "NotReady"

    deleting = bool(_get(pod, "metadata", "deletionTimestamp"))
    if deleting and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        restarts_text = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"

    pod_ips = status.get("podIPs") or []
    pod_ip = (pod_ips[0].get("ip") if pod_ips else "") or "<none>"
    gates = spec.get("readinessGates") or []
    readiness = "<none>"
    if gates:
        by_type = {c.get("type"): c.get("status") for c in reversed(conditions)}
        passed = sum(1 for g in gates if by_type.get(g.get("conditionType")) == "True")
        readiness = f"{passed}/{len(gates)}"
    row = [
        _get(pod, "metadata", "name") or "",
        f"{ready}/{total}",
        reason,
        restarts_text,
        since(_get(pod, "metadata", "creationTimestamp"), now),
        pod_ip,
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        readiness,
    ]
    return row, row_conditions


# ---- nodes ---------------------------------------------------------------------------------

_NODE_COLUMNS = [
    _NAME,
    _column("Status", "The status of the node"),
    _column("Roles", "The roles of the node"),
    _AGE,
    _column("Version", describe(models.V1NodeSystemInfo, "kubelet_version")),
    _column("Internal-IP", "List of addresses reachable to the node.", priority=1),
    _column("External-IP", "List of addresses reachable to the node.", priority=1),
    _column("OS-Image", describe(models.V1NodeSystemInfo, "os_image"), priority=1),
    _column("Kernel-Version", describe(models.V1NodeSystemInfo, "kernel_version"), priority=1),
    _column(
        "Container-Runtime",
        describe(models.V1NodeSystemInfo, "container_runtime_version"),
        priority=1,
    ),
]


def _node_roles(labels: dict[str, str]) -> str:
    roles: set[str] = set()
    for key, value in labels.items():
        if key.startswith("node-role.kubernetes.io/"):
            role = key.removeprefix("node-role.kubernetes.io/")
            if role:
                roles.add(role)
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


def _node_address(node: JSON, kind: str) -> str:
    for address in _get(node, "status", "addresses") or []:
        if address.get("type") == kind:
            return str(address.get("address") or "<none>")
    return "<none>"


def _node_row(node: JSON, now: datetime) -> Row:
    states = []
    for condition in _get(node, "status", "conditions") or []:
        if condition.get("type") == "Ready":
            states = ["Ready" if condition.get("status") == "True" else "NotReady"]
    if not states:
        states = ["Unknown"]
    if _get(node, "spec", "unschedulable"):
        states.append("SchedulingDisabled")
    info: JSON = _get(node, "status", "nodeInfo") or {}
    return [
        _get(node, "metadata", "name") or "",
        ",".join(states),
        _node_roles(_get(node, "metadata", "labels") or {}),
        since(_get(node, "metadata", "creationTimestamp"), now),
        info.get("kubeletVersion") or "",
        _node_address(node, "InternalIP"),
        _node_address(node, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


# ---- events --------------------------------------------------------------------------------

_EVENT_COLUMNS = [
    _column("Last Seen", describe(models.CoreV1Event, "last_timestamp")),
    _column("Type", describe(models.CoreV1Event, "type")),
    _column("Reason", describe(models.CoreV1Event, "reason")),
    _column("Object", describe(models.CoreV1Event, "involved_object")),
    _column("Subobject", describe(models.V1ObjectReference, "field_path"), priority=1),
    _column("Source", describe(models.CoreV1Event, "source"), priority=1),
    _column("Message", describe(models.CoreV1Event, "message")),
    _column("First Seen", describe(models.CoreV1Event, "first_timestamp"), priority=1),
    _column("Count", describe(models.CoreV1Event, "count"), kind="integer", priority=1),
    _column("Name", _NAME_DOC, priority=1, fmt="name"),
]


def _as_core_event(event: JSON) -> JSON:
    """events.k8s.io/v1 field names -> core/v1 ones (upstream stores both as one type)."""
    if event.get("apiVersion") != "events.k8s.io/v1":
        return event
    return {
        **event,
        "involvedObject": event.get("regarding") or {},
        "message": event.get("note") or "",
        "firstTimestamp": event.get("deprecatedFirstTimestamp"),
        "lastTimestamp": event.get("deprecatedLastTimestamp"),
        "count": event.get("deprecatedCount") or 0,
        "source": event.get("deprecatedSource") or {},
    }


def _event_row(event: JSON, now: datetime) -> Row:
    event = _as_core_event(event)
    first_seen = (
        since(event.get("firstTimestamp"), now)
        if event.get("firstTimestamp")
        else since(event.get("eventTime"), now)
    )
    last_seen = since(event["lastTimestamp"], now) if event.get("lastTimestamp") else first_seen
    count = int(event.get("count") or 0)
    series = event.get("series")
    if isinstance(series, dict):
        last_seen = since(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1
    involved: JSON = event.get("involvedObject") or {}
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    # printers.go formatEventSource: source, else the reporting controller and instance (core/v1
    # names the former reportingComponent, events.k8s.io/v1 reportingController)
    source: JSON = event.get("source") or {}
    component = (
        source.get("component")
        or event.get("reportingComponent")
        or event.get("reportingController")
        or ""
    )
    instance = source.get("host") or event.get("reportingInstance") or ""
    return [
        last_seen,
        event.get("type") or "",
        event.get("reason") or "",
        target,
        involved.get("fieldPath") or "",
        f"{component}, {instance}" if instance else component,
        str(event.get("message") or "").strip(),
        first_seen,
        count,
        _get(event, "metadata", "name") or "",
    ]


# ---- the rest ------------------------------------------------------------------------------


def _meta_row(obj: JSON, now: datetime, *cells: Any) -> Row:
    return [_get(obj, "metadata", "name") or "", *cells]


_NAMESPACE_COLUMNS = [_NAME, _column("Status", describe(models.V1NamespaceStatus, "phase")), _AGE]
_LEASE_COLUMNS = [_NAME, _column("Holder", describe(models.V1LeaseSpec, "holder_identity")), _AGE]
_PRIORITY_CLASS_COLUMNS = [
    _NAME,
    _column("Value", describe(models.V1PriorityClass, "value"), kind="integer"),
    _column("Global-Default", describe(models.V1PriorityClass, "global_default"), kind="boolean"),
    _AGE,
    _column("PreemptionPolicy", describe(models.V1PriorityClass, "preemption_policy")),
]
_CONFIGMAP_COLUMNS = [
    _NAME,
    _column("Data", describe(models.V1ConfigMap, "data"), kind="integer"),
    _AGE,
]


def _age(obj: JSON, now: datetime) -> str:
    return since(_get(obj, "metadata", "creationTimestamp"), now)


# ---- service accounts, RBAC, CRDs (printers.go; CRDs: the default table convertor) ---------

_CREATED_AT = _column("Created At", _AGE_DOC, kind="date")
_CREATED_AT_COLUMNS = [_NAME, _CREATED_AT]
_SERVICE_ACCOUNT_COLUMNS = [
    _NAME,
    _column("Secrets", describe(models.V1ServiceAccount, "secrets"), kind="integer"),
    _AGE,
]
_BINDING_COLUMNS = [
    _NAME,
    _column("Role", describe(models.V1RoleBinding, "role_ref")),
    _AGE,
    _column("Users", "Users in the roleBinding", priority=1),
    _column("Groups", "Groups in the roleBinding", priority=1),
    _column("ServiceAccounts", "ServiceAccounts in the roleBinding", priority=1),
]


def _created_at(obj: JSON, now: datetime) -> Row:
    moment = _parse_time(_get(obj, "metadata", "creationTimestamp"))
    shown = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if moment else ""
    return _meta_row(obj, now, shown)


def _binding_row(binding: JSON, now: datetime) -> Row:
    """rbac.SubjectsStrings: users, groups and namespace/name of service accounts."""
    ref = binding.get("roleRef") or {}
    users: list[str] = []
    groups: list[str] = []
    accounts: list[str] = []
    for subject in binding.get("subjects") or []:
        kind, name = subject.get("kind"), subject.get("name") or ""
        if kind == "ServiceAccount":
            accounts.append(f"{subject.get('namespace') or ''}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return _meta_row(
        binding,
        now,
        f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
        _age(binding, now),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(accounts),
    )


# ---- persistent volumes and claims ---------------------------------------------------------

_ACCESS_MODE_ORDER = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)
_UNSET = "<unset>"
_PVC_COLUMNS = [
    _NAME,
    _column("Status", describe(models.V1PersistentVolumeClaimStatus, "phase")),
    _column("Volume", describe(models.V1PersistentVolumeClaimSpec, "volume_name")),
    _column("Capacity", describe(models.V1PersistentVolumeClaimStatus, "capacity")),
    _column("Access Modes", describe(models.V1PersistentVolumeClaimStatus, "access_modes")),
    _column("StorageClass", "StorageClass of the pvc"),
    _column("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
    _AGE,
    _column("VolumeMode", describe(models.V1PersistentVolumeClaimSpec, "volume_mode"), priority=1),
]
_PV_COLUMNS = [
    _NAME,
    _column("Capacity", describe(models.V1PersistentVolumeSpec, "capacity")),
    _column("Access Modes", describe(models.V1PersistentVolumeSpec, "access_modes")),
    _column(
        "Reclaim Policy",
        describe(models.V1PersistentVolumeSpec, "persistent_volume_reclaim_policy"),
    ),
    _column("Status", describe(models.V1PersistentVolumeStatus, "phase")),
    _column(
        "Claim",
        describe(models.V1PersistentVolumeSpec, "claim_ref")
        or "claimRef is part of a bi-directional binding between PersistentVolume and "
        "PersistentVolumeClaim.",
    ),
    _column("StorageClass", describe(models.V1PersistentVolumeSpec, "storage_class_name")),
    _column("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
    _column("Reason", describe(models.V1PersistentVolumeStatus, "reason")),
    _AGE,
    _column("VolumeMode", describe(models.V1PersistentVolumeSpec, "volume_mode"), priority=1),
]


def _access_modes(modes: Any) -> str:
    """helper.GetAccessModesAsString: abbreviations in a fixed order, duplicates dropped."""
    present = set(modes) if isinstance(modes, list) else set()
    return ",".join(short for mode, short in _ACCESS_MODE_ORDER if mode in present)


def _storage(resources: Any) -> str:
    value = _get(resources, "storage")
    if value is None:
        return "0"
    try:
        return canonical_quantity(value)
    except (ValueError, TypeError):
        return str(value)


def _class_of(obj: JSON) -> str:
    beta = _get(obj, "metadata", "annotations", "volume.beta.kubernetes.io/storage-class")
    return str(beta if isinstance(beta, str) else _get(obj, "spec", "storageClassName") or "")


def _volume_phase(obj: JSON) -> str:
    if _get(obj, "metadata", "deletionTimestamp"):
        return "Terminating"
    return str(_get(obj, "status", "phase") or "")


def _pvc_row(claim: JSON, now: datetime) -> Row:
    volume = str(_get(claim, "spec", "volumeName") or "")
    capacity = modes = ""
    if volume:
        capacity = _storage(_get(claim, "status", "capacity"))
        modes = _access_modes(_get(claim, "status", "accessModes"))
    return _meta_row(
        claim,
        now,
        _volume_phase(claim),
        volume,
        capacity,
        modes,
        _class_of(claim),
        _get(claim, "spec", "volumeAttributesClassName") or _UNSET,
        _age(claim, now),
        _get(claim, "spec", "volumeMode") or _UNSET,
    )


def _pv_row(volume: JSON, now: datetime) -> Row:
    ref = _get(volume, "spec", "claimRef")
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if isinstance(ref, dict) else ""
    return _meta_row(
        volume,
        now,
        _storage(_get(volume, "spec", "capacity")),
        _access_modes(_get(volume, "spec", "accessModes")),
        str(_get(volume, "spec", "persistentVolumeReclaimPolicy") or ""),
        _volume_phase(volume),
        claim,
        _class_of(volume),
        _get(volume, "spec", "volumeAttributesClassName") or _UNSET,
        str(_get(volume, "status", "reason") or ""),
        _age(volume, now),
        _get(volume, "spec", "volumeMode") or _UNSET,
    )


# ---- workloads (printers.go: printDeployment, printReplicaSet, printDaemonSet, ...) --------


def _count(obj: JSON, *path: str) -> int:
    value = _get(obj, *path)
    return value if isinstance(value, int) else 0


def _desired(obj: JSON) -> int:
    """spec.replicas, whose API default is 1."""
    value = _get(obj, "spec", "replicas")
    return value if isinstance(value, int) else 1


_DEPLOYMENT_COLUMNS = [
    _NAME,
    _column("Ready", "Number of the pod with ready state"),
    _column(
        "Up-to-date",
        "Total number of non-terminated pods targeted by this deployment that "
        "have the desired template spec.",
        kind="integer",
    ),
    _column(
        "Available",
        "Total number of available pods (ready for at least minReadySeconds) "
        "targeted by this deployment.",
        kind="integer",
    ),
    _AGE,
]
_REPLICA_SET_COLUMNS = [
    _NAME,
    _column("Desired", "Number of desired pods.", kind="integer"),
    _column("Current", "Number of actual replicas.", kind="integer"),
    _column("Ready", "The number of ready replicas.", kind="integer"),
    _AGE,
]
_DAEMON_SET_COLUMNS = [
    _NAME,
    _column(
        "Desired",
        "The total number of nodes that should be running the daemon pod.",
        kind="integer",
    ),
    _column(
        "Current",
        "The number of nodes running at least one daemon pod and are supposed to.",
        kind="integer",
    ),
    _column(
        "Ready",
        "The number of nodes that should be running the daemon pod and have one "
        "or more of the daemon pod running and ready.",
        kind="integer",
    ),
    _column(
        "Up-to-date",
        "The total number of nodes that are running updated daemon pod.",
        kind="integer",
    ),
    _column(
        "Available",
        "The number of nodes that should be running the daemon pod and have "
        "one or more of the daemon pod running and available.",
        kind="integer",
    ),
    _column(
        "Node Selector",
        "NodeSelector is a selector which must be true for the pod to fit on a node.",
    ),
    _AGE,
]
_STATEFUL_SET_COLUMNS = [_NAME, _column("Ready", "Number of the pod with ready state"), _AGE]
_JOB_COLUMNS = [
    _NAME,
    _column("Status", "Status of the job."),
    _column("Completions", "The completion status of the job."),
    _column("Duration", "Time required to complete the job."),
    _AGE,
]


def _deployment_row(obj: JSON, now: datetime) -> Row:
    return _meta_row(
        obj,
        now,
        f"{_count(obj, 'status', 'readyReplicas')}/{_desired(obj)}",
        _count(obj, "status", "updatedReplicas"),
        _count(obj, "status", "availableReplicas"),
        _age(obj, now),
    )


def _replica_set_row(obj: JSON, now: datetime) -> Row:
    return _meta_row(
        obj,
        now,
        _desired(obj),
        _count(obj, "status", "replicas"),
        _count(obj, "status", "readyReplicas"),
        _age(obj, now),
    )


def _daemon_set_row(obj: JSON, now: datetime) -> Row:
    selector = _get(obj, "spec", "template", "spec", "nodeSelector")
    shown = (
        ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        if isinstance(selector, dict) and selector
        else "<none>"
    )
    return _meta_row(
        obj,
        now,
        *(
            _count(obj, "status", field)
            for field in (
                "desiredNumberScheduled",
                "currentNumberScheduled",
                "numberReady",
                "updatedNumberScheduled",
                "numberAvailable",
            )
        ),
        shown,
        _age(obj, now),
    )


def _stateful_set_row(obj: JSON, now: datetime) -> Row:
    ready = f"{_count(obj, 'status', 'readyReplicas')}/{_desired(obj)}"
    return _meta_row(obj, now, ready, _age(obj, now))


def _job_row(obj: JSON, now: datetime) -> Row:
    """Upstream's printJob: Complete / Failed / Suspended / Running status, succeeded out of
    completions (or of one, with parallelism, when completions is unset), and how long it ran."""
    conditions = _get(obj, "status", "conditions") or []
    status = "Running"
    for kind, shown in (("Complete", "Complete"), ("Failed", "Failed"), ("Suspended", "Suspended")):
        if _condition_true(conditions, kind):
            status = shown
            break
    succeeded = _count(obj, "status", "succeeded")
    completions = _get(obj, "spec", "completions")
    if isinstance(completions, int):
        done = f"{succeeded}/{completions}"
    else:
        parallelism = _get(obj, "spec", "parallelism")
        done = (
            f"{succeeded}/1 of {parallelism}"
            if isinstance(parallelism, int) and (parallelism > 1)
            else f"{succeeded}/1"
        )
    started = _parse_time(_get(obj, "status", "startTime"))
    finished = _parse_time(_get(obj, "status", "completionTime"))
    duration = ""
    if started is not None:
        duration = human_duration(((finished or now) - started).total_seconds())
    return _meta_row(obj, now, status, done, duration, _age(obj, now))


# ---- resource.k8s.io (printers.go: printDeviceClass, printResourceClaim, ...) ---------------

_NAME_AGE_COLUMNS = [_NAME, _AGE]
_RESOURCE_CLAIM_COLUMNS = [
    _NAME,
    _column("State", "A summary of the current state (allocated, pending, reserved, etc.)."),
    _AGE,
]
_RESOURCE_SLICE_COLUMNS = [
    _NAME,
    _column("Node", describe(models.V1ResourceSliceSpec, "node_name")),
    _column("Driver", describe(models.V1ResourceSliceSpec, "driver")),
    _column("Pool", describe(models.V1ResourcePool, "name")),
    _AGE,
]


def resource_claim_state(claim: JSON) -> str:
    """resourceClaimState: deleted, pending, allocated, reserved joined by commas."""
    states: list[str] = []
    deleted = bool(_get(claim, "metadata", "deletionTimestamp"))
    if deleted:
        states.append("deleted")
    if _get(claim, "status", "allocation") is None:
        if not deleted:
            states.append("pending")
    else:
        states.append("allocated")
        if _get(claim, "status", "reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _resource_slice_row(obj: JSON, now: datetime) -> Row:
    return _meta_row(
        obj,
        now,
        _get(obj, "spec", "nodeName") or "",
        _get(obj, "spec", "driver") or "",
        _get(obj, "spec", "pool", "name") or "",
        _age(obj, now),
    )


_Printer = Callable[[JSON, datetime], Row]

_RBAC = "rbac.authorization.k8s.io"
_PRINTERS: dict[tuple[str, str], tuple[list[JSON], _Printer]] = {
    ("", "ServiceAccount"): (
        _SERVICE_ACCOUNT_COLUMNS,
        lambda o, now: _meta_row(o, now, len(o.get("secrets") or []), _age(o, now)),
    ),
    (_RBAC, "Role"): (_CREATED_AT_COLUMNS, _created_at),
    (_RBAC, "ClusterRole"): (_CREATED_AT_COLUMNS, _created_at),
    (_RBAC, "RoleBinding"): (_BINDING_COLUMNS, _binding_row),
    (_RBAC, "ClusterRoleBinding"): (_BINDING_COLUMNS, _binding_row),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (_CREATED_AT_COLUMNS, _created_at),
    ("", "Pod"): (_POD_COLUMNS, lambda o, now: _pod_row(o, now)[0]),
    ("", "Node"): (_NODE_COLUMNS, _node_row),
    ("", "Event"): (_EVENT_COLUMNS, _event_row),
    ("events.k8s.io", "Event"): (_EVENT_COLUMNS, _event_row),
    ("", "Namespace"): (
        _NAMESPACE_COLUMNS,
        lambda o, now: _meta_row(o, now, _get(o, "status", "phase") or "", _age(o, now)),
    ),
    ("coordination.k8s.io", "Lease"): (
        _LEASE_COLUMNS,
        lambda o, now: _meta_row(o, now, _get(o, "spec", "holderIdentity") or "", _age(o, now)),
    ),
    ("scheduling.k8s.io", "PriorityClass"): (
        _PRIORITY_CLASS_COLUMNS,
        lambda o, now: _meta_row(
            o,
            now,
            int(o.get("value") or 0),
            bool(o.get("globalDefault")),
            _age(o, now),
            o.get("preemptionPolicy") or "",
        ),
    ),
    ("apps", "Deployment"): (_DEPLOYMENT_COLUMNS, _deployment_row),
    ("apps", "ReplicaSet"): (_REPLICA_SET_COLUMNS, _replica_set_row),
    ("", "ReplicationController"): (_REPLICA_SET_COLUMNS, _replica_set_row),
    ("apps", "DaemonSet"): (_DAEMON_SET_COLUMNS, _daemon_set_row),
    ("apps", "StatefulSet"): (_STATEFUL_SET_COLUMNS, _stateful_set_row),
    ("batch", "Job"): (_JOB_COLUMNS, _job_row),
    ("", "PersistentVolumeClaim"): (_PVC_COLUMNS, _pvc_row),
    ("resource.k8s.io", "DeviceClass"): (
        _NAME_AGE_COLUMNS,
        lambda o, now: _meta_row(o, now, _age(o, now)),
    ),
    ("resource.k8s.io", "ResourceClaimTemplate"): (
        _NAME_AGE_COLUMNS,
        lambda o, now: _meta_row(o, now, _age(o, now)),
    ),
    ("resource.k8s.io", "ResourceClaim"): (
        _RESOURCE_CLAIM_COLUMNS,
        lambda o, now: _meta_row(o, now, resource_claim_state(o), _age(o, now)),
    ),
    ("resource.k8s.io", "ResourceSlice"): (_RESOURCE_SLICE_COLUMNS, _resource_slice_row),
    ("", "PersistentVolume"): (_PV_COLUMNS, _pv_row),
    ("", "ConfigMap"): (
        _CONFIGMAP_COLUMNS,
        lambda o, now: _meta_row(
            o, now, len(o.get("data") or {}) + len(o.get("binaryData") or {}), _age(o, now)
        ),
    ),
}


def _row_object(obj: JSON, include_object: str) -> JSON | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def _custom_printer(custom: CustomVersion) -> tuple[list[JSON], _Printer]:
    """A custom resource's columns: its CRD's additionalPrinterColumns (customresources.py)."""

    def printer(obj: JSON, now: datetime) -> Row:
        return customresources.row_cells(custom, obj, lambda value: since(value, now))

    return customresources.column_definitions(custom), printer


def to_table(
    resource: ResourceType,
    objects: list[dict[str, Any]],
    include_object: str = "Metadata",
    now: datetime | None = None,
    custom: CustomVersion | None = None,
) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table of objects; include_object is the includeObject query parameter
    ("Object", "Metadata" (the default) or "None"). The caller sets metadata.resourceVersion /
    continue from its list; `now` is injectable for ages; `custom` is the served version of a
    custom resource, whose CRD names its columns."""
    moment = now or datetime.now(UTC)
    if custom is not None:
        columns, printer = _custom_printer(custom)
    else:
        columns, printer = _PRINTERS.get(
            (resource.group, resource.kind),
            ([_NAME, _AGE], lambda o, t: _meta_row(o, t, _age(o, t))),
        )
    rows = []
    for obj in objects:
        row: JSON = {"cells": printer(obj, moment)}
        if resource.kind == "Pod" and resource.group == "" and custom is None:
            conditions = _pod_row(obj, moment)[1]
            if conditions:
                row["conditions"] = conditions
        row_object = _row_object(obj, include_object)
        row["object"] = row_object
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": [dict(c) for c in columns],
        "rows": rows,
    }


def watch_event_as_table(
    resource: ResourceType,
    line: bytes,
    include_object: str = "Metadata",
    now: datetime | None = None,
    custom: CustomVersion | None = None,
) -> bytes:
    """One serialized watch event with its object rendered as a one-row Table, as the apiserver
    streams `kubectl get -w`. ERROR and BOOKMARK events pass through unchanged."""
    event = orjson.loads(line)
    if event.get("type") in ("ERROR", "BOOKMARK") or not isinstance(event.get("object"), dict):
        return line
    table = to_table(resource, [event["object"]], include_object, now, custom)
    resource_version = _get(event["object"], "metadata", "resourceVersion")
    if resource_version:
        table["metadata"] = {"resourceVersion": resource_version}
    return orjson.dumps({"type": event["type"], "object": table}) + b"\n"
