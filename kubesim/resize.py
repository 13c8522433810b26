"""In-place pod resize: the pods/resize subresource and what a kubelet does with a resize.

kubesim serves v1.37, where InPlacePodVerticalScaling is GA (since v1.35) and
InPlacePodLevelResourcesVerticalScaling beta and on (since v1.36; pkg/features/kube_features.go
and the scheduler's versioned feature table). Upstream:
- pkg/registry/core/pod/strategy.go ResizeStrategy.PrepareForUpdate (dropNonResizeUpdates):
  a write through pods/resize keeps the stored pod and takes only the containers' (and
  sidecars') resources and resizePolicy from the request, and, with
  InPlacePodLevelResourcesVerticalScaling on, the pod-level spec.resources too;
- pkg/apis/core/validation ValidatePodResize: only cpu and memory may change (in containers and
  at the pod level), requests and limits may not be removed, the QoS class may not change,
  non-sidecar init containers are immutable; the resized pod is validated as any pod is, so
  pod-level requests stay at least the containers' (the documented constraint of pod-level
  resize, website tasks/configure-pod-container/resize-pod-resources.md);
- pkg/kubelet (allocation manager, status manager): a resize the node can hold is allocated
  (containerStatuses[].allocatedResources), reported PodResizeInProgress while actuated, then
  status.containerStatuses[].resources shows it; one larger than the node's allocatable is
  PodResizePending/Infeasible, one that fits the node but not beside its other pods is
  PodResizePending/Deferred (retried when pods leave or shrink);
- pkg/kubelet/kubelet_pods.go convertStatusToAPIStatus with InPlacePodLevelResourcesVerticalScaling
  on: the pod-level status.allocatedResources is PodRequests of the allocated pod, and
  status.resources (convertToAPIPodLevelResourcesStatus) the pod cgroup's values: the allocated
  spec.resources with cpu requests from the cgroup's shares, memory requests aggregated where the
  pod level names none, and cpu / memory limits from the cgroup where it is limited. A pod-level
  resize is allocated like a container's (allocation_manager.go handlePodResourcesResize checks
  the pod's requests against the node) and the actuated status follows the allocation.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from apimachinery.quantity import QuantityFormat, format_quantity, parse_quantity_with_format
from kubesim.validation_fields import Cause, forbidden, invalid
from kubesim.validation_resources import validate_pod_level_resources

Obj = dict[str, Any]

_RESIZABLE = ("cpu", "memory")
RESIZE_PENDING = "PodResizePending"
RESIZE_IN_PROGRESS = "PodResizeInProgress"


def _resizable_init(container: Any) -> bool:
    return isinstance(container, Mapping) and container.get("restartPolicy") == "Always"


def resized_pod(old: Obj, new: Obj) -> Obj:
    """ResizeStrategy.PrepareForUpdate: the stored pod with the request's container resources."""
    result = copy.deepcopy(old)
    new_spec = new.get("spec") if isinstance(new.get("spec"), Mapping) else {}
    spec = result.setdefault("spec", {})
    for field_name in ("containers", "initContainers"):
        old_list = spec.get(field_name) or []
        new_list = new_spec.get(field_name) or []  # type: ignore[union-attr]
        if len(old_list) != len(new_list):
            continue  # validation reports the reordering below
        for index, container in enumerate(old_list):
            incoming = new_list[index]
            if not isinstance(container, dict) or not isinstance(incoming, Mapping):
                continue
            if incoming.get("name") != container.get("name"):
                continue
            for key in ("resources", "resizePolicy"):
                if key in incoming:
                    container[key] = copy.deepcopy(incoming[key])
                else:
                    container.pop(key, None)
    # InPlacePodLevelResourcesVerticalScaling (on since v1.36): the pod-level resources are the
    # request's as well.
    if "resources" in new_spec:  # type: ignore[operator]
        spec["resources"] = copy.deepcopy(new_spec["resources"])  # type: ignore[index]
    else:
        spec.pop("resources", None)
    return result


def _amount(value: Any) -> Fraction:
    return parse_quantity_with_format(value)[0]


def qos_class(spec: Mapping[str, Any]) -> str:
    """Upstream's ComputePodQOS (pkg/apis/core/helper/qos): Guaranteed, Burstable, BestEffort,
    from pod-level resources when they are set, else from every container."""
    pod_level = spec.get("resources")
    if isinstance(pod_level, Mapping) and (pod_level.get("requests") or pod_level.get("limits")):
        groups = [pod_level]
    else:
        groups = [
            (c.get("resources") or {}) if isinstance(c, Mapping) else {}
            for key in ("initContainers", "containers")
            for c in spec.get(key) or []
        ]
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for resources in groups:
        own_requests = {
            name: _amount(value)
            for name, value in (resources.get("requests") or {}).items()
            if name in _RESIZABLE
        }
        own_limits = {
            name: _amount(value)
            for name, value in (resources.get("limits") or {}).items()
            if name in _RESIZABLE
        }
        requests.update({n: v for n, v in own_requests.items() if v})
        limits.update({n: v for n, v in own_limits.items() if v})
        if set(own_limits) != set(_RESIZABLE):
            guaranteed = False
        for name, amount in own_requests.items():
            if own_limits.get(name) != amount:
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _removed(old: Any, new: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for kind in ("requests", "limits"):
        old_list = (old or {}).get(kind) or {}
        new_list = (new or {}).get(kind) or {}
        for name in old_list:
            if name not in new_list:
                causes.append(
                    forbidden(
                        f"{path}.resources.{kind}[{name}]", "resource removal is not supported"
                    )
                )
    return causes


def validate_pod_resize(new: Obj, old: Obj, request: Obj) -> list[Cause]:
    """ValidatePodResize for the pod `new` (prepared from `request`) replacing `old`."""
    if "kubernetes.io/config.mirror" in ((old.get("metadata") or {}).get("annotations") or {}):
        return [forbidden("", "static pods cannot be resized")]
    old_spec = old.get("spec") or {}
    new_spec = new.get("spec") or {}
    if ((old_spec.get("os") or {}).get("name")) == "windows":
        return [forbidden("", "windows pods cannot be resized")]
    causes: list[Cause] = []
    request_spec = request.get("spec") if isinstance(request.get("spec"), Mapping) else {}
    for field_name in ("containers", "initContainers"):
        old_names = [c.get("name") for c in old_spec.get(field_name) or []]
        wanted = request_spec.get(field_name)  # type: ignore[union-attr]
        if (
            wanted is not None
            and [c.get("name") if isinstance(c, Mapping) else None for c in wanted] != old_names
        ):
            causes.append(
                forbidden(f"spec.{field_name}", "containers may not be added, removed or reordered")
            )
    if causes:
        return causes
    old_qos = qos_class(old_spec)
    if old_qos != qos_class(new_spec):
        causes.append(
            invalid("spec", old_qos, "Pod QOS Class may not change as a result of resizing")
        )
    mutable_only = True
    for field_name in ("containers", "initContainers"):
        for index, (old_c, new_c) in enumerate(
            zip(old_spec.get(field_name) or [], new_spec.get(field_name) or [], strict=False)
        ):
            path = f"spec.{field_name}[{index}]"
            old_res, new_res = old_c.get("resources"), new_c.get("resources")
            if field_name == "initContainers" and not _resizable_init(old_c):
                if old_res != new_res:
                    causes.append(
                        forbidden(
                            f"{path}.resources",
                            "resources for non-sidecar init containers are immutable",
                        )
                    )
                continue
            causes += _removed(old_res, new_res, path)
            for kind in ("requests", "limits"):
                old_list = dict((old_res or {}).get(kind) or {})
                new_list = dict((new_res or {}).get(kind) or {})
                for name in _RESIZABLE:
                    old_list.pop(name, None)
                    new_list.pop(name, None)
                if old_list != new_list:
                    mutable_only = False
    # Pod-level resources (InPlacePodLevelResourcesVerticalScaling): the same rules as a
    # container's.
    old_pod_level, new_pod_level = old_spec.get("resources"), new_spec.get("resources")
    causes += _removed(old_pod_level, new_pod_level, "spec")
    for kind in ("requests", "limits"):
        old_list = dict((old_pod_level or {}).get(kind) or {})
        new_list = dict((new_pod_level or {}).get(kind) or {})
        for name in _RESIZABLE:
            old_list.pop(name, None)
            new_list.pop(name, None)
        if old_list != new_list:
            mutable_only = False
    if not mutable_only:
        causes.append(forbidden("spec", "only cpu and memory resources are mutable"))
    if not causes:
        # validatePodMetadataAndSpec of the resized pod: its pod-level resources as at create
        causes += validate_pod_level_resources(new_spec, "spec.resources")
    return causes


# ---- the simulated kubelet's side ------------------------------------------------------------


def _container_requests(container: Mapping[str, Any]) -> dict[str, Any]:
    return dict(((container.get("resources") or {}).get("requests")) or {})


def _cpu_memory(amounts: Mapping[str, Any]) -> dict[str, Any]:
    return {name: amounts[name] for name in _RESIZABLE if name in amounts}


def actuated_container_status(container: Mapping[str, Any]) -> dict[str, Any]:
    """What a kubelet reports of one running container's resources: allocatedResources (its
    requests) and resources (the cpu and memory requests and limits it applied)."""
    resources = container.get("resources") or {}
    status: dict[str, Any] = {}
    requests = dict(resources.get("requests") or {})
    if requests:
        status["allocatedResources"] = requests
    applied: dict[str, Any] = {}
    for kind in ("requests", "limits"):
        amounts = _cpu_memory(resources.get(kind) or {})
        if amounts:
            applied[kind] = amounts
    if applied:
        status["resources"] = applied
    return status


# A resource list being summed: each amount keeps the format of the first quantity added, as
# upstream's Quantity.Add keeps its receiver's.
_Amounts = dict[str, tuple[Fraction, QuantityFormat]]


def _add(total: _Amounts, amounts: Mapping[str, Any]) -> None:
    for name, value in amounts.items():
        amount, fmt = parse_quantity_with_format(value)
        if name in total:
            total[name] = (total[name][0] + amount, total[name][1])
        else:
            total[name] = (amount, fmt)


def _max(total: _Amounts, amounts: _Amounts) -> None:
    for name, (amount, fmt) in amounts.items():
        if name not in total or amount > total[name][0]:
            total[name] = (amount, fmt)


def _aggregate(spec: Mapping[str, Any], kind: str) -> _Amounts:
    """Upstream's AggregateContainerRequests / AggregateContainerLimits from the spec: regular
    containers and sidecars summed, each other init container alone (beside the sidecars
    started before it), the larger of the two."""
    total: _Amounts = {}
    for container in spec.get("containers") or []:
        if isinstance(container, Mapping):
            _add(total, ((container.get("resources") or {}).get(kind)) or {})
    sidecars: _Amounts = {}
    init_peak: _Amounts = {}
    for container in spec.get("initContainers") or []:
        if not isinstance(container, Mapping):
            continue
        own = ((container.get("resources") or {}).get(kind)) or {}
        if _resizable_init(container):
            _add(total, own)
            _add(sidecars, own)
            _max(init_peak, sidecars)
        else:
            alone: _Amounts = dict(sidecars)
            _add(alone, own)
            _max(init_peak, alone)
    _max(total, init_peak)
    return total


def _supported_pod_level(name: str) -> bool:
    return name in _RESIZABLE or name.startswith("hugepages-")


def _text(amounts: _Amounts) -> dict[str, str]:
    return {name: format_quantity(amount, fmt) for name, (amount, fmt) in amounts.items()}


def _pod_total(spec: Mapping[str, Any], kind: str) -> _Amounts:
    """Upstream's PodRequests / PodLimits (default options): the containers' aggregate, the
    pod-level cpu / memory / hugepages-* in place of it, spec.overhead added (to limits only
    where a limit is set and not zero)."""
    total = _aggregate(spec, kind)
    pod_level = ((spec.get("resources") or {}).get(kind)) or {}
    for name, value in pod_level.items():
        if _supported_pod_level(name):
            total[name] = parse_quantity_with_format(value)
    for name, value in (spec.get("overhead") or {}).items():
        if kind == "limits" and (name not in total or total[name][0] == 0):
            continue
        _add(total, {name: value})
    return total


def _limit_declared(spec: Mapping[str, Any], name: str) -> bool:
    """Whether the pod cgroup gets a cpu quota / memory limit (pkg/kubelet/cm
    ResourceConfigForPod): the pod level limits it, or every container does."""
    if name in (((spec.get("resources") or {}).get("limits")) or {}):
        return True
    containers = [
        c
        for key in ("containers", "initContainers")
        for c in spec.get(key) or []
        if isinstance(c, Mapping)
    ]
    return bool(containers) and all(
        name in (((c.get("resources") or {}).get("limits")) or {}) for c in containers
    )


def pod_level_status(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What a v1.37 kubelet reports at the pod level for a running pod allocated `spec`:
    status.allocatedResources (PodRequests of the allocated pod) and status.resources (its pod
    cgroup, which the runtime set to the allocation); empty for a pod without spec.resources
    (see the README: kubesim reports the pod level only where the pod sets it)."""
    pod_level = spec.get("resources")
    if not isinstance(pod_level, Mapping) or not (
        pod_level.get("requests") or pod_level.get("limits")
    ):
        return {}
    requests = _pod_total(spec, "requests")
    limits = _pod_total(spec, "limits")
    # convertToAPIPodLevelResourcesStatus starts from the allocated spec.resources ...
    actual_requests = dict(pod_level.get("requests") or {})
    actual_limits = dict(pod_level.get("limits") or {})
    # ... cpu requests read back from the cgroup's shares (pod requests with overhead) ...
    if "cpu" in requests and requests["cpu"][0] > 0:
        actual_requests["cpu"] = _text({"cpu": requests["cpu"]})["cpu"]
    # ... memory requests (not in cgroups) as the pod level names them plus overhead, else the
    # containers' aggregate ...
    if "memory" in requests:
        actual_requests["memory"] = _text({"memory": requests["memory"]})["memory"]
    # ... and the cgroup's cpu quota and memory limit where it has them.
    for name in _RESIZABLE:
        if name in limits and _limit_declared(spec, name):
            actual_limits[name] = _text({name: limits[name]})[name]
    resources: dict[str, Any] = {}
    if actual_requests:
        resources["requests"] = actual_requests
    if actual_limits:
        resources["limits"] = actual_limits
    status: dict[str, Any] = {"resources": resources}
    allocated = _text(requests)
    if allocated:  # an empty ResourceList is omitted (omitempty)
        status["allocatedResources"] = allocated
    return status


def reported_pod_level(status: Mapping[str, Any]) -> dict[str, Any]:
    """The pod-level part of a pod's status, as pod_level_status words it."""
    return {k: status[k] for k in ("allocatedResources", "resources") if k in status}


def resize_wanted(pod: Mapping[str, Any]) -> bool:
    """Whether a running pod's desired resources differ from what its kubelet allocated."""
    statuses = {
        s.get("name"): s
        for key in ("containerStatuses", "initContainerStatuses")
        for s in ((pod.get("status") or {}).get(key) or [])
        if isinstance(s, Mapping)
    }
    spec = pod.get("spec") or {}
    # InPlacePodLevelResourcesVerticalScaling: the pod-level spec against its allocation
    wanted_pod_level = pod_level_status(spec)
    if wanted_pod_level and wanted_pod_level != reported_pod_level(pod.get("status") or {}):
        return True
    for container in resizable_containers(spec):
        status = statuses.get(container.get("name"))
        if status is None:
            continue
        if actuated_container_status(container) != {
            k: status[k] for k in ("allocatedResources", "resources") if k in status
        }:
            return True
    return False


def resizable_containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in spec.get("containers") or [] if isinstance(c, Mapping)] + [
        c for c in spec.get("initContainers") or [] if _resizable_init(c)
    ]


def pod_allocated(pod: Mapping[str, Any]) -> dict[str, Fraction]:
    """The cpu / memory a kubelet holds for a pod: its allocated requests (the desired ones for
    containers it has not allocated yet), pod-level requests where set."""
    spec = pod.get("spec") or {}
    statuses = {
        s.get("name"): s
        for key in ("containerStatuses", "initContainerStatuses")
        for s in ((pod.get("status") or {}).get(key) or [])
        if isinstance(s, Mapping)
    }
    total: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        status = statuses.get(container.get("name")) or {}
        amounts = status.get("allocatedResources") or _container_requests(container)
        for name in _RESIZABLE:
            if name in amounts:
                total[name] = total.get(name, Fraction(0)) + _amount(amounts[name])
    pod_level = (spec.get("resources") or {}).get("requests") or {}
    # the pod level as allocated: status.allocatedResources (PodRequests, so less the overhead
    # it counts) once the kubelet reports it, which a pending pod-level resize leaves alone
    allocated = (pod.get("status") or {}).get("allocatedResources") or {}
    overhead = spec.get("overhead") or {}
    for name in _RESIZABLE:
        if name in pod_level and name in allocated:
            total[name] = max(
                _amount(allocated[name]) - _amount(overhead.get(name, 0)), Fraction(0)
            )
        elif name in pod_level:
            total[name] = _amount(pod_level[name])
    return total


def desired(pod: Mapping[str, Any]) -> dict[str, Fraction]:
    spec = pod.get("spec") or {}
    total: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        for name, value in _cpu_memory(_container_requests(container)).items():
            total[name] = total.get(name, Fraction(0)) + _amount(value)
    pod_level = (spec.get("resources") or {}).get("requests") or {}
    for name in _RESIZABLE:
        if name in pod_level:
            total[name] = _amount(pod_level[name])
    return total


def admit_resize(
    pod: Mapping[str, Any], allocatable: Mapping[str, Any], others: Sequence[Mapping[str, Any]]
) -> tuple[str, str] | None:
    """None when the node can hold the resized pod, else (reason, message) of PodResizePending
    as the kubelet words them (Infeasible: more than the node has; Deferred: more than is free)."""
    wanted = desired(pod)
    for name in _RESIZABLE:
        if name not in wanted or name not in allocatable:
            continue
        capacity = _amount(allocatable[name])
        request = wanted[name]
        if request > capacity:
            return (
                "Infeasible",
                f"Node didn't have enough capacity: {name}, requested: "
                f"{_plain(request, name)}, capacity: {_plain(capacity, name)}",
            )
    used = {name: Fraction(0) for name in _RESIZABLE}
    for other in others:
        for name, amount in pod_allocated(other).items():
            used[name] += amount
    for name in _RESIZABLE:
        if name not in wanted or name not in allocatable:
            continue
        capacity = _amount(allocatable[name])
        if wanted[name] + used[name] > capacity:
            return (
                "Deferred",
                f"Node didn't have enough resource: {name}, requested: "
                f"{_plain(wanted[name], name)}, used: {_plain(used[name], name)}, "
                f"capacity: {_plain(capacity, name)}",
            )
    return None


def _plain(amount: Fraction, name: str) -> str:
    """The kubelet's numbers: milli-cpu for cpu, bytes for memory."""
    if name == "cpu":
        return str(int(amount * 1000))
    return str(int(amount))
