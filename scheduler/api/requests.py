"""What a pod requests: the one answer the scheduler, its cache, /metrics/resources and explain
share.

Upstream: staging/src/k8s.io/component-helpers/resource/helpers.go (PodRequests, PodLimits,
PodResourcesOptions) as kubernetes/kubernetes master stores it, with the feature gates of v1.37,
the newest release and the version kubesim reports (pkg/features/kube_features.go and the
scheduler's versioned feature table):

| gate                                    | v1.35      | v1.36      | v1.37      |
|-----------------------------------------|------------|------------|------------|
| PodLevelResources                       | beta, on   | beta, on   | beta, on   |
| InPlacePodVerticalScaling               | GA, on     | GA, on     | GA, on     |
| InPlacePodLevelResourcesVerticalScaling | alpha, off | beta, on   | beta, on   |
| SidecarContainers (GA since v1.33)      | on         | on         | on         |
| DRANodeAllocatableResources             | -          | alpha, off | alpha, off |

So pod-level status is read (InPlacePodLevelResourcesVerticalScaling, on since v1.36), and
DRA node-allocatable claims are not (off). PodLevelResources and
InPlacePodLevelResourcesVerticalScaling can be turned off (`--feature-gates`): the scheduler's
own accounting then reads them from scheduler.api.request_gates, as upstream's callers pass
SkipPodLevelResources and InPlacePodLevelResourcesVerticalScalingEnabled from the gates. The
gates that do not change what is counted (InPlacePodVerticalScalingExclusiveCPUs /
ExclusiveMemory, PodLevelResourceManagers: the kubelet's resource managers) are left to the
kubelet.

- Regular containers are summed; each init container runs alone, so the pod needs at least the
  largest of them; a restartable init container (restartPolicy Always, a sidecar) keeps running,
  so it is added to the sum and to every later init container's requirement.
- With ``use_status_resources`` (in-place resize), the container totals are the larger of the
  desired (spec), the allocated and the actuated totals; while the resize is Infeasible
  (condition PodResizePending, reason Infeasible) the desired amounts are left out. The
  allocated and actuated totals are the pod-level status.allocatedResources and
  status.resources.requests when the kubelet reports both, else the containers'
  status.containerStatuses[].allocatedResources and .resources summed as above.
- Pod-level spec.resources replace the container totals of the resources they name, for cpu,
  memory and hugepages-* only. With ``use_status_resources`` and a pod-level status, they are
  the larger of the desired, the actuated and the allocated pod-level amounts (the status ones
  less spec.overhead, which the kubelet includes); the desired ones are left out while the
  resize is Infeasible.
- spec.overhead is added (to limits only where a limit is set and not zero).
- ``non_missing`` fills in, per container, a request the container does not name at all (a
  request written as "0" stays 0): the scheduler's 100m / 200Mi for scoring.

Everything is in nano units (exact) until :func:`scheduler_requests` rounds it into a
`Resource`, as upstream adds Quantities before taking MilliValue / Value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.api.errors import MalformedObject
from scheduler.api.fields import is_mapping
from scheduler.api.request_gates import request_gates
from scheduler.api.resources import CPU, MEMORY, parse_resource_list, resource_from_nanos
from scheduler.api.values import Resource

# Upstream's schedutil.DefaultMilliCPURequest / DefaultMemoryRequest, in nano units.
DEFAULT_CPU_NANOS = 100 * 10**6
DEFAULT_MEMORY_NANOS = 200 * 1024 * 1024 * 10**9
NON_ZERO_DEFAULTS: Mapping[str, int] = {CPU: DEFAULT_CPU_NANOS, MEMORY: DEFAULT_MEMORY_NANOS}

Amounts = dict[str, int]  # resource name → nano units
_EMPTY: Mapping[str, int] = {}

# (container name, its amounts) and, for init containers, whether it is restartable (a sidecar)
_Containers = list[tuple[str, Mapping[str, int]]]
_InitContainers = list[tuple[str, Mapping[str, int], bool]]
# status of one container → the amounts it contributes (None: nothing)
_Pick = Callable[[str, Mapping[str, int]], Mapping[str, int] | None]


def is_supported_pod_level_resource(name: str) -> bool:
    """Upstream's IsSupportedPodLevelResource: cpu, memory and hugepages-*."""
    return name in (CPU, MEMORY) or name.startswith("hugepages-")


def _pod_level(spec: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    resources = spec.get("resources")
    if not isinstance(resources, Mapping):
        return None
    amounts = resources.get(kind)
    return amounts if isinstance(amounts, Mapping) and amounts else None


def is_pod_level_requests_set(spec: Mapping[str, Any]) -> bool:
    """Upstream's IsPodLevelRequestsSet: spec.resources.requests names a supported resource."""
    requests = _pod_level(spec, "requests")
    return requests is not None and any(is_supported_pod_level_resource(n) for n in requests)


def is_pod_level_resources_set(spec: Mapping[str, Any]) -> bool:
    """Upstream's IsPodLevelResourcesSet: pod-level requests or limits of a supported resource."""
    if is_pod_level_requests_set(spec):
        return True
    limits = _pod_level(spec, "limits")
    return limits is not None and any(is_supported_pod_level_resource(n) for n in limits)


def resize_pending_reason(status: Mapping[str, Any]) -> str | None:
    """The reason of the PodResizePending condition (Infeasible / Deferred), None without one."""
    conditions = status.get("conditions")
    if not conditions or not isinstance(conditions, list):
        return None
    for condition in conditions:
        if is_mapping(condition) and condition.get("type") == "PodResizePending":
            reason = condition.get("reason")
            return reason if isinstance(reason, str) else ""
    return None


def is_pod_resize_infeasible(status: Mapping[str, Any]) -> bool:
    """Upstream's IsPodResizeInfeasible."""
    return resize_pending_reason(status) == "Infeasible"


def _container_amounts(spec: Mapping[str, Any], kind: str) -> tuple[_Containers, _InitContainers]:
    containers: _Containers = []
    for index, container in enumerate(_list(spec.get("containers"), "spec.containers")):
        path = f"spec.containers[{index}]"
        containers.append((_name(container, path), _amounts(container, kind, path)))
    inits: _InitContainers = []
    for index, container in enumerate(_list(spec.get("initContainers"), "spec.initContainers")):
        path = f"spec.initContainers[{index}]"
        inits.append(
            (
                _name(container, path),
                _amounts(container, kind, path),
                container.get("restartPolicy") == "Always",
            )
        )
    return containers, inits


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedObject(f"{path}: expected a list, got {type(value).__name__}")
    return value


def _name(container: Any, path: str) -> str:
    if not isinstance(container, Mapping):
        raise MalformedObject(f"{path}: expected an object, got {type(container).__name__}")
    name = container.get("name")
    return name if isinstance(name, str) else ""


def _amounts(container: Mapping[str, Any], kind: str, path: str) -> Mapping[str, int]:
    resources = container.get("resources")
    if resources is None:
        return _EMPTY
    if not isinstance(resources, Mapping):
        raise MalformedObject(f"{path}.resources: expected an object")
    amounts = resources.get(kind)
    if amounts is None:
        return _EMPTY
    return parse_resource_list(amounts, f"{path}.resources.{kind}")


def _add(total: Amounts, amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount


def _max_into(total: Amounts, amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        if name not in total or amount > total[name]:
            total[name] = amount


def _with_non_missing(amounts: Mapping[str, int], non_missing: Mapping[str, int]) -> Amounts:
    """Upstream's applyNonMissing: the defaults for resources the container does not name."""
    result = dict(amounts)
    for name, amount in non_missing.items():
        if name not in amounts:
            result[name] = amount
    return result


def _aggregate(
    containers: _Containers,
    inits: _InitContainers,
    pick: _Pick | None,
    non_missing: Mapping[str, int] | None,
) -> Amounts:
    """Upstream's aggregateContainerResourcesByFn (the sidecar rule of KEP-753)."""
    result: Amounts = {}
    for name, amounts in containers:
        own = amounts if pick is None else pick(name, amounts) or _EMPTY
        if non_missing:
            own = _with_non_missing(own, non_missing)
        _add(result, own)
    if inits:
        sidecars: Amounts = {}
        init_max: Amounts = {}
        for name, amounts, restartable in inits:
            own = amounts if pick is None else pick(name, amounts) or _EMPTY
            if non_missing:
                own = _with_non_missing(own, non_missing)
            if restartable:
                _add(result, own)
                _add(sidecars, own)
                _max_into(init_max, sidecars)
            else:
                combined = dict(own)
                _add(combined, sidecars)
                _max_into(init_max, combined)
        _max_into(result, init_max)
    return result


class _ContainerStatuses:
    """status.containerStatuses and initContainerStatuses by name: what the kubelet allocated
    and what it actuated (upstream's findContainerStatus)."""

    def __init__(self, status: Mapping[str, Any]) -> None:
        self._by_name: dict[str, Mapping[str, Any]] = {}
        for key in ("initContainerStatuses", "containerStatuses"):
            for item in _list(status.get(key), f"status.{key}"):
                if isinstance(item, Mapping) and isinstance(item.get("name"), str):
                    self._by_name[item["name"]] = item  # containerStatuses win, as upstream
        self.infeasible = is_pod_resize_infeasible(status)

    def _status_amounts(self, name: str, *keys: str) -> Mapping[str, int] | None:
        value: Any = self._by_name.get(name)
        path = f"status.containerStatuses[{name}]"
        for key in keys:
            if not isinstance(value, Mapping):
                return None
            value = value.get(key)
            path += f".{key}"
        if value is None:
            return None
        return parse_resource_list(value, path)

    def allocated_requests(self, name: str, spec: Mapping[str, int]) -> Mapping[str, int] | None:
        """Upstream's containerAllocatedRequests."""
        allocated = self._status_amounts(name, "allocatedResources")
        if allocated is not None:
            return allocated
        return None if self.infeasible else spec

    def actuated_requests(self, name: str, spec: Mapping[str, int]) -> Mapping[str, int] | None:
        """Upstream's containerActuatedRequests."""
        actuated = self._status_amounts(name, "resources", "requests")
        if actuated is not None:
            return actuated
        return self.allocated_requests(name, spec)

    def actuated_limits(self, name: str, spec: Mapping[str, int]) -> Mapping[str, int] | None:
        """Upstream's containerActuatedLimits."""
        actuated = self._status_amounts(name, "resources", "limits")
        if actuated is not None:
            return actuated
        return None if self.infeasible else spec


def has_resize_status(status: Mapping[str, Any], pod_level_status: bool = True) -> bool:
    """Whether the status carries anything in-place resize accounting reads: container statuses
    with resources or allocatedResources, the pod-level ones (only with ``pod_level_status``,
    InPlacePodLevelResourcesVerticalScaling), or a PodResizePending condition. Without it the
    status-aware totals are the spec's."""
    for key in ("containerStatuses", "initContainerStatuses"):
        statuses = status.get(key)
        if statuses and isinstance(statuses, list):
            for item in statuses:
                if is_mapping(item) and (
                    item.get("allocatedResources") is not None or item.get("resources") is not None
                ):
                    return True
    if pod_level_status and (
        status.get("allocatedResources") is not None or status.get("resources") is not None
    ):
        return True  # pod-level status (InPlacePodLevelResourcesVerticalScaling, on since v1.36)
    return resize_pending_reason(status) is not None


def _pod_level_status_is_spec(spec: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """Whether the pod-level status.allocatedResources and status.resources.requests, where
    reported, are the pod-level requests the spec asks for (written the same way)."""
    resources = spec.get("resources")
    wanted = resources.get("requests") if is_mapping(resources) else None
    wanted = wanted or _EMPTY
    allocated = status.get("allocatedResources")
    if allocated is not None and allocated != wanted:
        return False
    actual = status.get("resources")
    if actual is not None:
        actual_requests = actual.get("requests") if is_mapping(actual) else actual
        if actual_requests is not None and actual_requests != wanted:
            return False
    return True


def status_matters(
    spec: Mapping[str, Any], status: Mapping[str, Any], pod_level_status: bool = True
) -> bool:
    """Whether the status-aware requests of a pod can differ from its spec's: a resize is
    pending (PodResizePending), or a container's (or, with ``pod_level_status``, the pod's)
    allocated or actuated requests differ from what its spec asks. Running pods report both
    equal to the spec almost always; this keeps them on the spec-only path."""
    if not has_resize_status(status, pod_level_status):
        return False
    if resize_pending_reason(status) is not None:
        return True
    if (
        pod_level_status
        and (status.get("allocatedResources") is not None or status.get("resources") is not None)
        and not _pod_level_status_is_spec(spec, status)
    ):
        return True
    wanted: dict[str, Any] = {}
    for key in ("containers", "initContainers"):
        for container in _list(spec.get(key), f"spec.{key}"):
            if is_mapping(container) and isinstance(container.get("name"), str):
                resources = container.get("resources")
                requests = resources.get("requests") if is_mapping(resources) else None
                wanted[container["name"]] = requests or _EMPTY
    for key in ("containerStatuses", "initContainerStatuses"):
        for item in status.get(key) or ():
            if not is_mapping(item):
                continue
            allocated = item.get("allocatedResources")
            actual = item.get("resources")
            if allocated is None and actual is None:
                continue
            spec_requests = wanted.get(item.get("name"))  # type: ignore[arg-type]
            if spec_requests is None:
                return True
            if allocated is not None and allocated != spec_requests:
                return True
            actual_requests = actual.get("requests") if is_mapping(actual) else None
            if is_mapping(actual_requests) and any(
                spec_requests.get(name) != amount for name, amount in actual_requests.items()
            ):
                return True
    return False


def _status_list(status: Mapping[str, Any], *keys: str) -> Mapping[str, int] | None:
    """A pod-level resource list of the status (status.allocatedResources,
    status.resources.requests / .limits), None when it is not reported."""
    value: Any = status
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    if value is None:
        return None
    return parse_resource_list(value, "status." + ".".join(keys))


def _effective_pod_level(
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    desired: Mapping[str, int],
    *reported: Mapping[str, int] | None,
) -> Amounts:
    """Upstream's effectivePodLevelResources: the larger of the desired pod-level amounts
    (left out while the resize is Infeasible) and the reported ones, less spec.overhead (the
    kubelet counts it in; never below zero)."""
    overhead = (
        parse_resource_list(spec["overhead"], "spec.overhead")
        if spec.get("overhead") is not None
        else _EMPTY
    )
    result: Amounts = {} if is_pod_resize_infeasible(status) else dict(desired)
    for amounts in reported:
        if amounts is None:
            continue
        if overhead:
            amounts = {
                name: max(amount - overhead[name], 0) if name in overhead else amount
                for name, amount in amounts.items()
            }
        _max_into(result, amounts)
    return result


def pod_requests(
    spec: Mapping[str, Any],
    status: Mapping[str, Any] = _EMPTY,
    *,
    use_status_resources: bool = False,
    pod_level_status: bool = True,
    skip_pod_level_resources: bool = False,
    exclude_overhead: bool = False,
    non_missing: Mapping[str, int] | None = None,
) -> Amounts:
    """Upstream's resourcehelper.PodRequests with the given PodResourcesOptions, in nano units
    (``pod_level_status`` is InPlacePodLevelResourcesVerticalScalingEnabled; it matters only
    with ``use_status_resources``).

    Raises MalformedObject naming a field it cannot read.
    """
    containers, inits = _container_amounts(spec, "requests")
    return _pod_requests(
        spec,
        status,
        containers,
        inits,
        use_status_resources=use_status_resources
        and status_matters(spec, status, pod_level_status),
        pod_level_status=pod_level_status,
        skip_pod_level_resources=skip_pod_level_resources,
        exclude_overhead=exclude_overhead,
        non_missing=non_missing,
    )


def _pod_requests(
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    containers: _Containers,
    inits: _InitContainers,
    *,
    use_status_resources: bool,
    pod_level_status: bool = True,
    skip_pod_level_resources: bool = False,
    exclude_overhead: bool = False,
    non_missing: Mapping[str, int] | None = None,
) -> Amounts:
    if not use_status_resources:
        requests = _aggregate(containers, inits, None, non_missing)
    else:
        infeasible = is_pod_resize_infeasible(status)
        pod_allocated = _status_list(status, "allocatedResources") if pod_level_status else None
        pod_actuated = _status_list(status, "resources", "requests") if pod_level_status else None
        if pod_allocated is not None and pod_actuated is not None:
            # The pod-level status already holds the containers' totals (upstream's
            # AggregateContainerRequests with InPlacePodLevelResourcesVerticalScaling on).
            allocated: Amounts = dict(pod_allocated)
            actuated: Amounts = dict(pod_actuated)
        else:
            statuses = _ContainerStatuses(status)
            allocated = _aggregate(containers, inits, statuses.allocated_requests, non_missing)
            actuated = _aggregate(containers, inits, statuses.actuated_requests, non_missing)
        if infeasible:
            requests = actuated
        else:
            requests = _aggregate(containers, inits, None, non_missing)
            _max_into(requests, actuated)
        _max_into(requests, allocated)
    if not skip_pod_level_resources and spec.get("resources") and is_pod_level_requests_set(spec):
        pod_level: Mapping[str, int] = parse_resource_list(
            spec["resources"]["requests"], "spec.resources.requests"
        )
        if (
            use_status_resources
            and pod_level_status
            and (
                status.get("resources") is not None or status.get("allocatedResources") is not None
            )
        ):  # InPlacePodLevelResourcesVerticalScaling: on since v1.36 (beta)
            pod_level = _effective_pod_level(
                spec,
                status,
                pod_level,
                _status_list(status, "resources", "requests"),
                _status_list(status, "allocatedResources"),
            )
        for name, amount in pod_level.items():
            if is_supported_pod_level_resource(name):
                requests[name] = amount
    if not exclude_overhead:
        _add_overhead(spec, requests, only_set=False)
    return requests


def pod_limits(
    spec: Mapping[str, Any],
    status: Mapping[str, Any] = _EMPTY,
    *,
    use_status_resources: bool = False,
    pod_level_status: bool = True,
    skip_pod_level_resources: bool = False,
    exclude_overhead: bool = False,
) -> Amounts:
    """Upstream's resourcehelper.PodLimits with the given PodResourcesOptions, in nano units."""
    containers, inits = _container_amounts(spec, "limits")
    use_status = use_status_resources and has_resize_status(status, pod_level_status)
    if not use_status:
        limits = _aggregate(containers, inits, None, None)
    else:
        pod_actuated = _status_list(status, "resources", "limits") if pod_level_status else None
        if pod_actuated is not None:  # InPlacePodLevelResourcesVerticalScaling (v1.36+)
            limits = dict(pod_actuated)
            if not is_pod_resize_infeasible(status):
                _max_into(limits, _aggregate(containers, inits, None, None))
        else:
            statuses = _ContainerStatuses(status)
            limits = _aggregate(containers, inits, statuses.actuated_limits, None)
            if not statuses.infeasible:
                _max_into(limits, _aggregate(containers, inits, None, None))
    if not skip_pod_level_resources and is_pod_level_resources_set(spec):
        pod_level = _pod_level(spec, "limits")
        desired = parse_resource_list(pod_level, "spec.resources.limits") if pod_level else _EMPTY
        effective: Mapping[str, int] = desired
        if use_status and pod_level_status and status.get("resources") is not None:
            effective = _effective_pod_level(
                spec, status, desired, _status_list(status, "resources", "limits")
            )
        for name, amount in effective.items():
            if is_supported_pod_level_resource(name):
                limits[name] = amount
    if not exclude_overhead:
        _add_overhead(spec, limits, only_set=True)
    return limits


def _add_overhead(spec: Mapping[str, Any], total: Amounts, *, only_set: bool) -> None:
    overhead = spec.get("overhead")
    if overhead is None:
        return
    for name, amount in parse_resource_list(overhead, "spec.overhead").items():
        if not only_set:
            total[name] = total.get(name, 0) + amount
        elif total.get(name):
            total[name] += amount


def _non_zero_spec(
    spec: Mapping[str, Any],
    containers: _Containers,
    inits: _InitContainers,
    non_missing: Mapping[str, int],
    count_pod_level: bool,
) -> dict[str, int]:
    """cpu and memory of ``_pod_requests(..., non_missing=non_missing)`` without the resize
    status: the same sums and maxima (the sidecar rule), for those two resources only;
    ``count_pod_level`` is PodLevelResources."""
    default_cpu = non_missing.get(CPU, 0)
    default_memory = non_missing.get(MEMORY, 0)
    cpu = memory = 0
    for _, amounts in containers:
        cpu += amounts.get(CPU, default_cpu)
        memory += amounts.get(MEMORY, default_memory)
    sidecar_cpu = sidecar_memory = init_cpu = init_memory = 0
    for _, amounts, restartable in inits:
        own_cpu = amounts.get(CPU, default_cpu)
        own_memory = amounts.get(MEMORY, default_memory)
        if restartable:
            cpu += own_cpu
            memory += own_memory
            sidecar_cpu += own_cpu
            sidecar_memory += own_memory
            init_cpu = max(init_cpu, sidecar_cpu)
            init_memory = max(init_memory, sidecar_memory)
        else:
            init_cpu = max(init_cpu, own_cpu + sidecar_cpu)
            init_memory = max(init_memory, own_memory + sidecar_memory)
    result = {CPU: max(cpu, init_cpu), MEMORY: max(memory, init_memory)}
    if count_pod_level and spec.get("resources") and is_pod_level_requests_set(spec):
        pod_level = parse_resource_list(spec["resources"]["requests"], "spec.resources.requests")
        for name in (CPU, MEMORY):
            if name in pod_level:
                result[name] = pod_level[name]
    overhead = spec.get("overhead")
    if overhead is not None:
        for name, amount in parse_resource_list(overhead, "spec.overhead").items():
            if name in result:
                result[name] += amount
    return result


def scheduler_requests(
    spec: Mapping[str, Any], status: Mapping[str, Any]
) -> tuple[Resource, int, int]:
    """(requests, non-zero milli-cpu, non-zero memory) of a pod as the scheduler's NodeInfo
    counts it: upstream's PodInfo.CalculateResource (pkg/scheduler/framework/types.go), with
    the process's PodLevelResources (SkipPodLevelResources when off) and
    InPlacePodLevelResourcesVerticalScaling gates (scheduler.api.request_gates).

    The non-zero amounts fill in 100m / 200Mi for containers that name no cpu / memory request,
    but when pod-level requests are set (and PodLevelResources is on) only for a resource that
    neither the pod level nor any container requests (getNonMissingContainerRequests).
    """
    gates = request_gates()
    pod_level, pod_level_status = gates.pod_level_resources, gates.pod_level_status
    containers, inits = _container_amounts(spec, "requests")
    use_status = status_matters(spec, status, pod_level_status)
    options: dict[str, Any] = {
        "pod_level_status": pod_level_status,
        "skip_pod_level_resources": not pod_level,
    }
    requests = _pod_requests(
        spec, status, containers, inits, use_status_resources=use_status, **options
    )
    if pod_level and spec.get("resources") and is_pod_level_requests_set(spec):
        non_missing = {name: v for name, v in NON_ZERO_DEFAULTS.items() if name not in requests}
    else:
        non_missing = dict(NON_ZERO_DEFAULTS)
    if not non_missing:
        non_zero: Mapping[str, int] = requests
    elif use_status:
        non_zero = _pod_requests(
            spec,
            status,
            containers,
            inits,
            use_status_resources=True,
            non_missing=non_missing,
            **options,
        )
    else:  # the common case, in one pass over cpu and memory only
        non_zero = _non_zero_spec(spec, containers, inits, non_missing, pod_level)
    return (
        resource_from_nanos(requests),
        -(-non_zero.get(CPU, 0) // 10**6),
        -(-non_zero.get(MEMORY, 0) // 10**9),
    )


def fit_score_requests(spec: Mapping[str, Any]) -> Resource:
    """What NodeResourcesFit's Score counts the incoming pod as requesting, in kube-scheduler
    v1.36.2: its resourceAllocationScorer is built by getScorer (noderesources/fit.go NewFit)
    with none of the feature fields set, so calculatePodResourceRequest
    (resource_allocation.go) passes SkipPodLevelResources and no UseStatusResources whatever
    the gates say: the containers' requests alone, 100m / 200Mi for each container without a
    cpu / memory request. Checked against the v1.36.2 binary: a pod with pod-level requests of
    3 CPUs and one container without requests is scored at [100, 209715200]. Only a pod with
    pod-level requests differs from the cache's non-zero count for it (types.go)."""
    return resource_from_nanos(
        pod_requests(spec, skip_pod_level_resources=True, non_missing=NON_ZERO_DEFAULTS)
    )


def requests_with_pod_level(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Resource:
    """What a pod requests as upstream's resize hints count it whatever PodLevelResources says:
    events.go extractPodScaleDown and fit.go isSchedulableAfterPodScaleDown pass
    PodResourcesOptions{UseStatusResources, InPlacePodLevelResourcesVerticalScalingEnabled}
    without SkipPodLevelResources, so pod-level requests count there even with the gate off.
    With the gate on this is the cache's count (:func:`scheduler_requests`)."""
    amounts = pod_requests(
        spec,
        status,
        use_status_resources=True,
        pod_level_status=request_gates().pod_level_status,
    )
    return resource_from_nanos(amounts)
