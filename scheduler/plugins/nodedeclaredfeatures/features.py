"""Which node-declared features a pod needs to be scheduled: the part of upstream's
k8s.io/component-helpers/nodedeclaredfeatures library the scheduler uses
(framework.go InferForPodScheduling over features/registry.go's AllFeatures).

Each feature of the registry says, from the pod's spec alone, whether placing the pod needs a
node that declares it (`InferForScheduling`). Upstream's registry also holds features that only
matter for pod updates (the in-place resize ones: GuaranteedQoSPodCPUResize,
PodLevelResourcesResize, MemoryBackedVolumesResize, NonSidecarInitContainerResize) or for no
pod at all (ExtendWebSocketsToKubelet, DRANodeAllocatableResources, DRAOptionalNodeOperations):
their InferForScheduling is always false, so they are not listed here. No feature has a
MaxVersion yet, so the scheduler's own version never drops one.

Read from the newest stored kubernetes/kubernetes files under
staging/src/k8s.io/component-helpers/nodedeclaredfeatures/features/ (restartallcontainers,
usernamespaceshostnetwork, cgroupoptions, containerulimits, downwardapiassignedresources,
perpodpidlimit, podcertificatesmldsa, poddefaultnetworknone, securityprofileoci,
volumebindmountoptions). The pod is read as raw JSON: Go's `x != nil` on an optional pointer
field is "present and not null"; on a slice, "present and non-empty", since the API server
drops an empty list (omitempty) before the scheduler sees it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
CGROUP_OPTIONS = "CgroupOptions"
CONTAINER_ULIMITS = "ContainerUlimits"
DOWNWARD_API_ASSIGNED_RESOURCES = "DownwardAPIAssignedResources"
PER_POD_PID_LIMIT = "PerPodPIDLimit"
POD_CERTIFICATE_MLDSA = "PodCertificateMLDSA"
POD_DEFAULT_NETWORK_NONE = "PodDefaultNetworkNone"
SECURITY_PROFILE_OCI = "SecurityProfileOCI"
VOLUME_BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"

_MLDSA_KEY_TYPES = frozenset({"MLDSA44", "MLDSA65", "MLDSA87"})


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _containers(spec: Mapping[str, Any], *, ephemeral: bool) -> Iterator[Mapping[str, Any]]:
    kinds = ("containers", "initContainers", "ephemeralContainers")
    for kind in kinds if ephemeral else kinds[:2]:
        for container in _items(spec.get(kind)):
            yield _mapping(container)


def _security_contexts(spec: Mapping[str, Any], *, ephemeral: bool) -> Iterator[Mapping[str, Any]]:
    for container in _containers(spec, ephemeral=ephemeral):
        context = container.get("securityContext")
        if isinstance(context, Mapping):
            yield context


def restart_all_containers(spec: Mapping[str, Any]) -> bool:
    """A container or init container with a restartPolicyRules action RestartAllContainers."""
    return any(
        _mapping(rule).get("action") == "RestartAllContainers"
        for container in _containers(spec, ephemeral=False)
        for rule in _items(container.get("restartPolicyRules"))
    )


def user_namespaces_host_network(spec: Mapping[str, Any]) -> bool:
    """hostNetwork together with hostUsers: false."""
    return spec.get("hostNetwork") is True and spec.get("hostUsers") is False


def cgroup_options(spec: Mapping[str, Any]) -> bool:
    """A container or init container asking for a cgroup mount mode (any mode)."""
    return any(
        _mapping(context.get("cgroupOptions")).get("mountMode") is not None
        for context in _security_contexts(spec, ephemeral=False)
    )


def container_ulimits(spec: Mapping[str, Any]) -> bool:
    """Any container (ephemeral ones too) setting securityContext.ulimits."""
    return any(bool(context.get("ulimits")) for context in _security_contexts(spec, ephemeral=True))


def _downward_api_assigned_cpuset(source: Mapping[str, Any]) -> bool:
    return any(
        _mapping(_mapping(item).get("resourceFieldRef")).get("resource") == "assigned.cpuset"
        for item in _items(_mapping(source.get("downwardAPI")).get("items"))
    )


def downward_api_assigned_resources(spec: Mapping[str, Any]) -> bool:
    """A downwardAPI volume, or a projected volume's downwardAPI source, exposing
    resourceFieldRef assigned.cpuset."""
    for volume in _items(spec.get("volumes")):
        volume = _mapping(volume)
        if _downward_api_assigned_cpuset(volume):
            return True
        for source in _items(_mapping(volume.get("projected")).get("sources")):
            if _downward_api_assigned_cpuset(_mapping(source)):
                return True
    return False


def per_pod_pid_limit(spec: Mapping[str, Any]) -> bool:
    """Pod-level resources.limits naming `pid`."""
    return "pid" in _mapping(_mapping(spec.get("resources")).get("limits"))


def pod_certificate_mldsa(spec: Mapping[str, Any]) -> bool:
    """A projected podCertificate source with an ML-DSA key type."""
    return any(
        _mapping(_mapping(source).get("podCertificate")).get("keyType") in _MLDSA_KEY_TYPES
        for volume in _items(spec.get("volumes"))
        for source in _items(_mapping(_mapping(volume).get("projected")).get("sources"))
    )


def pod_default_network_none(spec: Mapping[str, Any]) -> bool:
    """spec.defaultNetwork "None"."""
    return spec.get("defaultNetwork") == "None"


def _seccomp_oci(context: Mapping[str, Any]) -> bool:
    return _mapping(context.get("seccompProfile")).get("type") == "OCI"


def security_profile_oci(spec: Mapping[str, Any]) -> bool:
    """A seccompProfile of type OCI, pod-wide or on any container (ephemeral ones too)."""
    if _seccomp_oci(_mapping(spec.get("securityContext"))):
        return True
    return any(_seccomp_oci(context) for context in _security_contexts(spec, ephemeral=True))


def volume_bind_mount_options(spec: Mapping[str, Any]) -> bool:
    """A volumeMount of any container (ephemeral ones too) with bindMountOptions."""
    return any(
        bool(_mapping(mount).get("bindMountOptions"))
        for container in _containers(spec, ephemeral=True)
        for mount in _items(container.get("volumeMounts"))
    )


#: The registry's features that can require something of a node at scheduling time, sorted by
#: name as upstream's Framework sorts them.
SCHEDULING_FEATURES: tuple[tuple[str, Callable[[Mapping[str, Any]], bool]], ...] = tuple(
    sorted(
        (
            (CGROUP_OPTIONS, cgroup_options),
            (CONTAINER_ULIMITS, container_ulimits),
            (DOWNWARD_API_ASSIGNED_RESOURCES, downward_api_assigned_resources),
            (PER_POD_PID_LIMIT, per_pod_pid_limit),
            (POD_CERTIFICATE_MLDSA, pod_certificate_mldsa),
            (POD_DEFAULT_NETWORK_NONE, pod_default_network_none),
            (RESTART_ALL_CONTAINERS, restart_all_containers),
            (SECURITY_PROFILE_OCI, security_profile_oci),
            (USER_NAMESPACES_HOST_NETWORK, user_namespaces_host_network),
            (VOLUME_BIND_MOUNT_OPTIONS, volume_bind_mount_options),
        )
    )
)


# Every feature above reads one of these fields; a spec with none of them needs no feature, which
# keeps the common pod's cost to a few dictionary lookups.
_NONE: frozenset[str] = frozenset()


def infer_for_scheduling(spec: Mapping[str, Any]) -> frozenset[str]:
    """The features a node must declare to run a pod with this spec (InferForPodScheduling).

    One pass over the pod-level fields, the volumes and the containers, asking every feature's
    question on the way: it runs for every pod's PreFilter, where calling the ten predicates
    above in turn (each walking the containers or volumes again) cost about 20 µs per pod.
    Those predicates stay the definition, one per upstream feature, and a hypothesis property
    holds this pass to their union (tests/scheduler_plugins_ndf)."""
    found: set[str] = set()
    if spec.get("hostNetwork") is True and spec.get("hostUsers") is False:
        found.add(USER_NAMESPACES_HOST_NETWORK)
    if spec.get("defaultNetwork") == "None":
        found.add(POD_DEFAULT_NETWORK_NONE)
    resources = spec.get("resources")
    if resources is not None and "pid" in _mapping(_mapping(resources).get("limits")):
        found.add(PER_POD_PID_LIMIT)
    context = spec.get("securityContext")
    if context and _seccomp_oci(_mapping(context)):
        found.add(SECURITY_PROFILE_OCI)
    volumes = spec.get("volumes")
    if volumes:
        _volume_features(_items(volumes), found)
    for kind in ("containers", "initContainers", "ephemeralContainers"):
        containers = spec.get(kind)
        if containers:
            _container_features(_items(containers), kind == "ephemeralContainers", found)
    return frozenset(found) if found else _NONE


def _volume_features(volumes: list[Any], found: set[str]) -> None:
    for volume in volumes:
        volume = _mapping(volume)
        if "downwardAPI" in volume and _downward_api_assigned_cpuset(volume):
            found.add(DOWNWARD_API_ASSIGNED_RESOURCES)
        projected = volume.get("projected")
        if projected is None:
            continue
        for source in _items(_mapping(projected).get("sources")):
            source = _mapping(source)
            if "downwardAPI" in source and _downward_api_assigned_cpuset(source):
                found.add(DOWNWARD_API_ASSIGNED_RESOURCES)
            certificate = source.get("podCertificate")
            if certificate is not None and (
                _mapping(certificate).get("keyType") in _MLDSA_KEY_TYPES
            ):
                found.add(POD_CERTIFICATE_MLDSA)


def _container_features(containers: list[Any], ephemeral: bool, found: set[str]) -> None:
    for container in containers:
        container = _mapping(container)
        if not ephemeral and any(
            _mapping(rule).get("action") == "RestartAllContainers"
            for rule in _items(container.get("restartPolicyRules"))
        ):
            found.add(RESTART_ALL_CONTAINERS)
        context = container.get("securityContext")
        if isinstance(context, Mapping) and context:
            if (
                not ephemeral
                and _mapping(context.get("cgroupOptions")).get("mountMode") is not None
            ):
                found.add(CGROUP_OPTIONS)
            if context.get("ulimits"):
                found.add(CONTAINER_ULIMITS)
            if _seccomp_oci(context):
                found.add(SECURITY_PROFILE_OCI)
        mounts = container.get("volumeMounts")
        if mounts and any(
            bool(_mapping(mount).get("bindMountOptions")) for mount in _items(mounts)
        ):
            found.add(VOLUME_BIND_MOUNT_OPTIONS)
