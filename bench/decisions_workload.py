"""The random workloads of `python -m bench.decisions`: nodes and pods that exercise every default
plugin (resources and extended resources, taints, node selectors and affinity, pod affinity and
anti-affinity, topology spread, host ports, priorities and preemption), the same for a seed on
every run, so that two schedulers can be given identical clusters one pod at a time."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"
GPU = "example.com/gpu"
ZONES = ("zone-a", "zone-b", "zone-c")
APPS = ("web", "db", "cache", "batch")
TAINT_KEYS = ("dedicated", "maintenance")
# images nodes hold and pods run (ImageLocality), with their sizes in MiB
IMAGES = {
    "registry.k8s.io/pause:3.10": 1,
    "example.com/web:1.0": 120,
    "example.com/db:2.3": 800,
    "example.com/batch:0.9": 2500,
}
# name, value, preemptionPolicy: the priorities pods choose from (low ones get preempted)
PRIORITY_BANDS = (
    ("decisions-low", 100, "PreemptLowerPriority"),
    ("decisions-mid", 1000, "PreemptLowerPriority"),
    ("decisions-high", 10000, "PreemptLowerPriority"),
    ("decisions-high-never", 10000, "Never"),
)
# each band in a few nearby values: candidate nodes whose victims weigh exactly the same, which
# kube-scheduler picks among from a random start, become rare
PRIORITY_STEPS = 4
PRIORITY_CLASSES = tuple(
    (f"{name}-{step}", value + step, policy)
    for name, value, policy in PRIORITY_BANDS
    for step in range(PRIORITY_STEPS)
)


@dataclass(frozen=True, slots=True)
class DecisionWorkload:
    """One seed's objects, in the order they are created."""

    seed: int
    namespace: str
    nodes: tuple[Obj, ...]
    priority_classes: tuple[Obj, ...]
    pod_disruption_budgets: tuple[Obj, ...]
    pods: tuple[Obj, ...]


def generate(
    seed: int, pods: int, nodes: int = 10, namespace: str = "decisions"
) -> DecisionWorkload:
    """The workload of `seed`: the same objects for the same arguments, on any machine."""
    if pods < 1 or nodes < 1:
        raise ValueError(
            f"a workload needs at least one pod and one node (pods={pods}, nodes={nodes})"
        )
    rng = random.Random(seed)
    node_objs = tuple(_node(rng, index) for index in range(nodes))
    pod_objs = tuple(_pod(rng, index, pods, node_objs, namespace) for index in range(pods))
    classes = tuple(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "preemptionPolicy": policy,
        }
        for name, value, policy in PRIORITY_CLASSES
    )
    # preemption prefers victims whose eviction violates no budget; with no disruption
    # controller every budget allows no disruption, so each pod it selects counts as violating
    budgets = tuple(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": f"{app}-budget", "namespace": namespace},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
        }
        for app in sorted(rng.sample(APPS, 2))
    )
    return DecisionWorkload(seed, namespace, node_objs, classes, budgets, pod_objs)


def _node(rng: random.Random, index: int) -> Obj:
    name = f"node-{index:02d}"
    cpu = rng.choice((2, 4, 4, 8, 16))
    memory_gi = rng.choice((4, 8, 16, 16, 32, 64))
    pods = rng.choice((6, 10, 32, 110))
    capacity = {"cpu": str(cpu), "memory": f"{memory_gi}Gi", "pods": str(pods)}
    if rng.random() < 0.3:
        capacity[GPU] = str(rng.choice((1, 2, 4)))
    labels = {
        HOSTNAME_KEY: name,
        ZONE_KEY: rng.choice(ZONES),
        "disktype": rng.choice(("ssd", "hdd")),
        "tier": rng.choice(("gold", "silver", "bronze")),
    }
    images = [
        {"names": [image], "sizeBytes": size << 20}
        for image, size in IMAGES.items()
        if rng.random() < 0.4
    ]
    spec: Obj = {}
    if rng.random() < 0.25:
        spec["taints"] = [
            {
                "key": rng.choice(TAINT_KEYS),
                "value": rng.choice(("gpu", "infra")),
                "effect": rng.choice(("NoSchedule", "PreferNoSchedule", "NoExecute")),
            }
        ]
    if rng.random() < 0.05:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [{"type": "Ready", "status": "True"}],
            "images": images,
            "phase": "Running",
        },
    }


def _pod(rng: random.Random, index: int, total: int, nodes: tuple[Obj, ...], namespace: str) -> Obj:
    app = rng.choice(APPS)
    # low priorities first, higher ones later: the cluster fills, then preemption happens
    late = index >= total * 0.5
    band = rng.choices(
        [name for name, _, _ in PRIORITY_BANDS],
        weights=(1, 4, 4, 1) if late else (6, 2, 1, 0.5),
    )[0]
    priority = f"{band}-{rng.randrange(PRIORITY_STEPS)}"
    requests: Obj = {
        "cpu": f"{rng.choice((100, 250, 500, 1000, 1500, 2000, 3000))}m",
        "memory": f"{rng.choice((128, 256, 512, 1024, 2048, 4096, 8192))}Mi",
    }
    if rng.random() < 0.15:
        requests[GPU] = str(rng.choice((1, 2)))
    image = rng.choice(sorted(IMAGES))
    container: Obj = {"name": "main", "image": image, "resources": {}}
    if rng.random() < 0.9:  # a few best-effort pods
        container["resources"] = {"requests": requests}
        if GPU in requests:
            container["resources"]["limits"] = {GPU: requests[GPU]}
    if rng.random() < 0.15:
        port = rng.choice((8080, 9090))
        container["ports"] = [{"containerPort": port, "hostPort": port, "protocol": "TCP"}]
    spec: Obj = {
        "containers": [container],
        **_init_containers(rng),
        "priorityClassName": priority,
        "terminationGracePeriodSeconds": 0,  # victims go at once, with no kubelet to confirm
    }
    if rng.random() < 0.35:
        spec["tolerations"] = [_toleration(rng)]
    if rng.random() < 0.15:
        spec["nodeSelector"] = {"disktype": rng.choice(("ssd", "hdd"))}
    affinity: Obj = {}
    node_affinity = _node_affinity(rng, nodes)
    if node_affinity:
        affinity["nodeAffinity"] = node_affinity
    for kind, chance in (("podAffinity", 0.12), ("podAntiAffinity", 0.2)):
        terms = _pod_affinity(rng, chance)
        if terms:
            affinity[kind] = terms
    if affinity:
        spec["affinity"] = affinity
    if rng.random() < 0.2:
        constraint: Obj = {
            "maxSkew": rng.choice((1, 2)),
            "topologyKey": rng.choice((ZONE_KEY, HOSTNAME_KEY)),
            "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
            "labelSelector": {"matchLabels": {"app": app}},
        }
        if rng.random() < 0.3:
            constraint["nodeTaintsPolicy"] = "Honor"
        if rng.random() < 0.2 and constraint["whenUnsatisfiable"] == "DoNotSchedule":
            constraint["minDomains"] = rng.choice((2, 3, 4))
        spec["topologySpreadConstraints"] = [constraint]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{index:03d}", "namespace": namespace, "labels": {"app": app}},
        "spec": spec,
    }


def _init_containers(rng: random.Random) -> Obj:
    """Now and then an init container, or a sidecar (restartPolicy Always), whose requests
    count as upstream's pod resource rules say."""
    if rng.random() >= 0.15:
        return {}
    init: Obj = {
        "name": "init",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": f"{rng.choice((200, 1000, 2500))}m", "memory": "256Mi"}},
    }
    if rng.random() < 0.5:
        init["restartPolicy"] = "Always"
    return {"initContainers": [init]}


def _toleration(rng: random.Random) -> Obj:
    key = rng.choice(TAINT_KEYS)
    if rng.random() < 0.4:
        return {"key": key, "operator": "Exists"}
    toleration: Obj = {"key": key, "operator": "Equal", "value": rng.choice(("gpu", "infra"))}
    if rng.random() < 0.5:
        toleration["effect"] = rng.choice(("NoSchedule", "PreferNoSchedule", "NoExecute"))
    return toleration


def _node_affinity(rng: random.Random, nodes: tuple[Obj, ...]) -> Obj:
    affinity: Obj = {}
    if rng.random() < 0.2:
        key, values = rng.choice(
            (
                ("tier", ("gold", "silver", "bronze")),
                ("disktype", ("ssd", "hdd")),
                (ZONE_KEY, ZONES),
            )
        )
        operator = rng.choice(("In", "NotIn"))
        expression = {"key": key, "operator": operator, "values": sorted(rng.sample(values, 1))}
        if rng.random() < 0.2:  # now and then a pod no node can take
            expression = {
                "key": HOSTNAME_KEY,
                "operator": "In",
                "values": [str(rng.choice(nodes)["metadata"]["name"])],
            }
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": [expression]}]
        }
    if rng.random() < 0.3:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": rng.choice((1, 10, 50, 100)),
                "preference": {
                    "matchExpressions": [
                        {
                            "key": "tier",
                            "operator": "In",
                            "values": [rng.choice(("gold", "silver"))],
                        }
                    ]
                },
            }
        ]
    return affinity


def _pod_affinity(rng: random.Random, chance: float) -> Obj:
    terms: Obj = {}
    if rng.random() < chance:
        terms["requiredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
                "topologyKey": rng.choice((ZONE_KEY, HOSTNAME_KEY)),
            }
        ]
    if rng.random() < chance:
        terms["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": rng.choice((1, 50, 100)),
                "podAffinityTerm": {
                    "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
                    "topologyKey": rng.choice((ZONE_KEY, HOSTNAME_KEY)),
                },
            }
        ]
    return terms
