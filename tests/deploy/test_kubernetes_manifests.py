"""deploy/kubernetes: the manifests `kubectl apply -k` takes to run aiosched on a cluster.

Read as kustomize renders them (`kubectl kustomize`): the Deployment's command line parses with
aiosched's own parser, its configuration loads with the real registry and runs aiosched as a
second scheduler on its own Lease, the config is mounted so that a ConfigMap update reaches the
running process, the probes and the security context are what the issue asks for, and the RBAC
grants every request aiosched makes and nothing upstream's kube-scheduler roles do not (decided
by kubesim's RBAC authorizer, which the e2e tests here also exercise through kubectl).

The e2e tests apply them to `aiosched cluster` with kubectl: `--dry-run=server` creates nothing,
a real apply can be read back, and aiosched run under the ServiceAccount's token (written by
compose.yaml's deploy/serviceaccount-kubeconfig.sh) schedules a pod, holds its Lease and writes
events without a single 403.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from kubesim import rbac
from profiles.api import load_config
from scheduler.app.cli import build_parser
from scheduler.app.commands.run import listen_address
from scheduler.app.service import SchedulerService
from scheduler.cycle.profile_set import registry_for_config

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "deploy" / "kubernetes"
KUSTOMIZATION = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
NAMESPACE = KUSTOMIZATION["namespace"]

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")

# Upstream's bootstrap roles the ClusterRoles mirror (kubernetes/kubernetes
# plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/cluster-roles.yaml; the resource.k8s.io
# rules are policy.go's DynamicResourceAllocation block, v1.34+, with its DRAExtendedResource and
# DRADeviceTaintRules rules, both on by default in v1.37).
UPSTREAM_ROLES = yaml.safe_load("""
system:kube-scheduler:
- {apiGroups: ["", events.k8s.io], resources: [events], verbs: [create, patch, update]}
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [create]}
- {apiGroups: [coordination.k8s.io], resourceNames: [kube-scheduler], resources: [leases],
   verbs: [get, update]}
- {apiGroups: [""], resources: [nodes], verbs: [get, list, watch]}
- {apiGroups: [""], resources: [pods], verbs: [delete, get, list, watch]}
- {apiGroups: [""], resources: [bindings, pods/binding], verbs: [create]}
- {apiGroups: [""], resources: [pods/status], verbs: [patch, update]}
- {apiGroups: [""], resources: [replicationcontrollers, services], verbs: [get, list, watch]}
- {apiGroups: [apps, extensions], resources: [replicasets], verbs: [get, list, watch]}
- {apiGroups: [apps], resources: [statefulsets], verbs: [get, list, watch]}
- {apiGroups: [policy], resources: [poddisruptionbudgets], verbs: [get, list, watch]}
- {apiGroups: [""], resources: [persistentvolumeclaims, persistentvolumes],
   verbs: [get, list, watch]}
- {apiGroups: [authentication.k8s.io], resources: [tokenreviews], verbs: [create]}
- {apiGroups: [authorization.k8s.io], resources: [subjectaccessreviews], verbs: [create]}
- {apiGroups: [storage.k8s.io], resources: [csinodes], verbs: [get, list, watch]}
- {apiGroups: [""], resources: [namespaces], verbs: [get, list, watch]}
- {apiGroups: [storage.k8s.io], resources: [csidrivers], verbs: [get, list, watch]}
- {apiGroups: [storage.k8s.io], resources: [csistoragecapacities], verbs: [get, list, watch]}
- {apiGroups: [resource.k8s.io], resources: [resourceclaims, resourceclaims/status],
   verbs: [get, list, patch, update, watch]}
- {apiGroups: [resource.k8s.io], resources: [deviceclasses, resourceslices],
   verbs: [get, list, watch]}
- {apiGroups: [resource.k8s.io], resources: [resourceclaims], verbs: [create, delete]}
- {apiGroups: [resource.k8s.io], resources: [devicetaintrules], verbs: [get, list, watch]}
system:volume-scheduler:
- {apiGroups: [""], resources: [persistentvolumes], verbs: [get, list, patch, update, watch]}
- {apiGroups: [storage.k8s.io], resources: [storageclasses], verbs: [get, list, watch]}
- {apiGroups: [""], resources: [persistentvolumeclaims], verbs: [get, list, patch, update, watch]}
""")

# scheduler-plugins' own grant to its scheduler (kubernetes-sigs/scheduler-plugins
# manifests/install/charts/as-a-second-scheduler/templates/rbac.yaml, scheduler-plugins-scheduler;
# its controller's role grants the same in this group), the rule aiosched:coscheduling must stay
# within; the role's other rules are system:kube-scheduler's above.
SCHEDULER_PLUGINS_ROLE = yaml.safe_load("""
- {apiGroups: [scheduling.x-k8s.io],
   resources: [podgroups, elasticquotas, podgroups/status, elasticquotas/status],
   verbs: [get, list, watch, create, delete, update, patch]}
""")
# What Coscheduling's requests need of it (scheduler/listers/pod_groups.py).
COSCHEDULING_RULES = yaml.safe_load("""
- {apiGroups: [scheduling.x-k8s.io], resources: [podgroups], verbs: [get, list, watch]}
- {apiGroups: [scheduling.x-k8s.io], resources: [podgroups/status], verbs: [patch, update]}
""")

# Gang scheduling's rules (scheduling.k8s.io/v1beta1, v1.37). Upstream's system:kube-scheduler
# rule for PodGroups and Workloads was not found in the sources read (policy.go and the
# bootstrap testdata available predate it), so aiosched:kube-scheduler grants the minimal rules
# its requests need, listed here and in AIOSCHED_REQUESTS below.
WORKLOAD_RULES = yaml.safe_load("""
- {apiGroups: [scheduling.k8s.io], resources: [podgroups, workloads], verbs: [get, list, watch]}
- {apiGroups: [scheduling.k8s.io], resources: [podgroups/status], verbs: [patch, update]}
""")

# (verb, group, resource, subresource, namespace, name): every request `aiosched run` makes
# ("*" namespace: any pod's), from the code that makes it.
LEASE = "aiosched"
AIOSCHED_REQUESTS = [
    # informers: scheduler.py (pods, nodes), cluster_objects.py, storage_objects.py
    *[
        (verb, group, resource, "", "", "")
        for verb in ("list", "watch")
        for group, resource in (
            ("", "pods"),
            ("", "nodes"),
            ("", "namespaces"),
            ("", "services"),
            ("", "replicationcontrollers"),
            ("apps", "replicasets"),
            ("apps", "statefulsets"),
            ("policy", "poddisruptionbudgets"),
            ("", "persistentvolumeclaims"),
            ("", "persistentvolumes"),
            ("storage.k8s.io", "storageclasses"),
            ("storage.k8s.io", "csinodes"),
            ("storage.k8s.io", "csidrivers"),
            ("storage.k8s.io", "csistoragecapacities"),
            ("resource.k8s.io", "deviceclasses"),
            ("resource.k8s.io", "resourceslices"),
            ("resource.k8s.io", "resourceclaims"),
        )
    ],
    ("create", "", "pods", "binding", "*", "p"),  # DefaultBinder
    ("patch", "", "pods", "status", "*", "p"),  # PodScheduled condition, nominatedNodeName
    ("get", "", "pods", "", "*", "p"),  # scheduler.py, after a failed status patch
    ("delete", "", "pods", "", "*", "p"),  # preemption_calls.py
    ("create", "events.k8s.io", "events", "", "*", ""),  # recorder.py
    ("update", "", "persistentvolumes", "", "", "pv"),  # VolumeBinding's binder
    ("update", "", "persistentvolumeclaims", "", "*", "pvc"),
    # DynamicResources: PreBind (finalizer, then status), PostFilter, Unreserve
    ("get", "resource.k8s.io", "resourceclaims", "", "*", "c"),
    ("update", "resource.k8s.io", "resourceclaims", "", "*", "c"),
    ("update", "resource.k8s.io", "resourceclaims", "status", "*", "c"),
    ("patch", "resource.k8s.io", "resourceclaims", "status", "*", "c"),
    # gang scheduling: workload_objects.py's informers, podgroup_status.py's condition patch
    ("list", "scheduling.k8s.io", "podgroups", "", "", ""),
    ("watch", "scheduling.k8s.io", "podgroups", "", "", ""),
    ("list", "scheduling.k8s.io", "workloads", "", "", ""),
    ("watch", "scheduling.k8s.io", "workloads", "", "", ""),
    ("patch", "scheduling.k8s.io", "podgroups", "status", "*", "pg"),
    # Coscheduling (scheduler-plugins' PodGroup CRD): pod_groups.py's informer and the
    # PodGroup status controller's merge patch
    ("list", "scheduling.x-k8s.io", "podgroups", "", "", ""),
    ("watch", "scheduling.x-k8s.io", "podgroups", "", "", ""),
    ("get", "scheduling.x-k8s.io", "podgroups", "", "*", "pg"),
    ("patch", "scheduling.x-k8s.io", "podgroups", "status", "*", "pg"),
    ("create", "coordination.k8s.io", "leases", "", NAMESPACE, ""),  # leaderelection.py
    ("get", "coordination.k8s.io", "leases", "", NAMESPACE, LEASE),
    ("update", "coordination.k8s.io", "leases", "", NAMESPACE, LEASE),
    ("create", "authentication.k8s.io", "tokenreviews", "", "", ""),  # the secure port
    ("create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""),
]
NOT_GRANTED = [
    ("list", "", "secrets", "", "", ""),
    ("create", "", "pods", "", "default", ""),
    ("update", "", "nodes", "", "", "n"),
    ("update", "coordination.k8s.io", "leases", "", NAMESPACE, "kube-scheduler"),
    ("get", "coordination.k8s.io", "leases", "", "default", LEASE),
    ("update", "", "configmaps", "", NAMESPACE, "aiosched-config"),
    ("get", "", "configmaps", "", NAMESPACE, "extension-apiserver-authentication"),
    ("create", "", "serviceaccounts", "token", NAMESPACE, "aiosched"),
    ("update", "apps", "deployments", "", NAMESPACE, "aiosched"),
    ("update", "resource.k8s.io", "resourceslices", "", "", "s"),
    ("list", "resource.k8s.io", "resourceclaimtemplates", "", "", ""),
    ("deletecollection", "resource.k8s.io", "resourceclaims", "", "*", ""),
    ("update", "scheduling.k8s.io", "podgroups", "", "*", "pg"),
    ("create", "scheduling.k8s.io", "workloads", "", "*", ""),
    ("delete", "scheduling.k8s.io", "podgroups", "", "*", "pg"),
    ("update", "scheduling.k8s.io", "workloads", "status", "*", "w"),
    ("create", "scheduling.x-k8s.io", "podgroups", "", "*", ""),
    ("update", "scheduling.x-k8s.io", "podgroups", "", "*", "pg"),
    ("delete", "scheduling.x-k8s.io", "podgroups", "", "*", "pg"),
    ("list", "scheduling.x-k8s.io", "elasticquotas", "", "", ""),
]


def kubectl_kustomize() -> list[dict[str, Any]]:
    result = subprocess.run(
        ["kubectl", "kustomize", str(MANIFESTS)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    if shutil.which("kubectl") is None:
        pytest.skip("needs kubectl (kustomize)")
    return kubectl_kustomize()


def one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]
    assert len(found) == 1, (kind, name, [o["metadata"]["name"] for o in found])
    return found[0]


def container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (only,) = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    return dict(only)


def run_args(objects: list[dict[str, Any]]) -> Any:
    command = container(objects)["command"]
    assert command[0] == "aiosched"  # the image's console script (Dockerfile ENTRYPOINT)
    parser, _ = build_parser()
    return parser.parse_args(command[1:])


def configured(objects: list[dict[str, Any]]) -> str:
    """The text of the ConfigMap's file that --config names."""
    volume, key = config_volume(objects)
    config_map = one(objects, "ConfigMap", volume["configMap"]["name"])
    return str(config_map["data"][key])


def config_volume(objects: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    """The ConfigMap volume --config is read from, and the key of the file."""
    config = PurePosixPath(run_args(objects).config)
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    for mount in container(objects)["volumeMounts"]:
        if config.is_relative_to(mount["mountPath"]):
            assert "subPath" not in mount  # a subPath mount never sees a ConfigMap update
            volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
            return volume, str(config.relative_to(mount["mountPath"]))
    raise AssertionError(f"--config {config} is not on a volume")


def load(objects: list[dict[str, Any]], tmp_path: Path) -> Any:
    """The configuration, loaded as `aiosched run --config` loads it."""
    path = tmp_path / "config.yaml"
    path.write_text(configured(objects))
    return load_config(path, registry_for_config())


# ---- what kustomize renders ------------------------------------------------------------------


def test_the_kinds_and_their_namespace(objects: list[dict[str, Any]]) -> None:
    kinds = sorted((o["kind"], o["metadata"]["name"]) for o in objects)

    assert kinds == [
        ("ClusterRole", "aiosched:coscheduling"),
        ("ClusterRole", "aiosched:kube-scheduler"),
        ("ClusterRole", "aiosched:metrics-reader"),
        ("ClusterRole", "aiosched:volume-scheduler"),
        ("ClusterRole", "aiosched:what-if"),
        ("ClusterRoleBinding", "aiosched:coscheduling"),
        ("ClusterRoleBinding", "aiosched:kube-scheduler"),
        ("ClusterRoleBinding", "aiosched:volume-scheduler"),
        ("ConfigMap", "aiosched-config"),  # no hash suffix: updated in place, reloaded
        ("Deployment", "aiosched"),
        ("PodDisruptionBudget", "aiosched"),
        ("Role", "aiosched"),
        ("RoleBinding", "aiosched"),
        ("ServiceAccount", "aiosched"),
    ]
    for obj in objects:
        if not obj["kind"].startswith("Cluster"):
            assert obj["metadata"]["namespace"] == NAMESPACE == "kube-system"


def test_the_config_runs_a_second_scheduler_on_its_own_lease(
    objects: list[dict[str, Any]], tmp_path: Path
) -> None:
    config = load(objects, tmp_path)

    assert [p.scheduler_name for p in config.profiles] == ["aiosched"]
    election = config.leader_election
    assert election.leader_elect is True
    assert (election.resource_namespace, election.resource_name) == (NAMESPACE, LEASE)
    assert election.resource_lock == "leases"
    assert config.client_connection.kubeconfig == ""  # in-cluster: the pod's service account


def test_the_config_is_the_file_in_the_repository(objects: list[dict[str, Any]]) -> None:
    assert configured(objects) == (MANIFESTS / "config.yaml").read_text()


def test_the_deployment_runs_two_replicas_with_leader_election(
    objects: list[dict[str, Any]],
) -> None:
    deployment = one(objects, "Deployment")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]

    assert spec["replicas"] == 2
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    assert pod["serviceAccountName"] == one(objects, "ServiceAccount")["metadata"]["name"]
    args = run_args(objects)
    assert args.command == "run" and not args.embedded and args.kubeconfig is None
    assert args.leader_elect is None  # the config's leaderElection decides, flags do not override


def test_a_disruption_budget_keeps_a_standby_through_a_drain(objects: list[dict[str, Any]]) -> None:
    deployment = one(objects, "Deployment")
    budget = one(objects, "PodDisruptionBudget")["spec"]

    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert budget["selector"]["matchLabels"].items() <= labels.items()
    assert budget["maxUnavailable"] == 1 < deployment["spec"]["replicas"]


def test_the_memory_limit_holds_the_documented_100000_pod_peak(
    objects: list[dict[str, Any]],
) -> None:
    """docs/benchmarks.md's 100,000-pod row gives the scheduler's peak RSS; the Deployment's
    limit must hold it, or the scheduler that the docs say copes would be OOM-killed."""
    table = (MANIFESTS.parents[1] / "docs" / "benchmarks.md").read_text()
    row = next(line for line in table.splitlines() if "5000Nodes_100000Pods" in line)
    peak_mib = int(re.findall(r"(\d+) MiB", row)[-1])
    limit = container(objects)["resources"]["limits"]["memory"]

    assert limit.endswith("Gi") and int(limit[:-2]) * 1024 >= peak_mib * 1.25


def test_the_config_file_is_on_a_configmap_directory_mount(objects: list[dict[str, Any]]) -> None:
    volume, key = config_volume(objects)
    config_map = one(objects, "ConfigMap", volume["configMap"]["name"])

    assert key in config_map["data"]
    assert "items" not in volume["configMap"]  # every key, at its own name


def test_probes_are_on_the_secure_port(objects: list[dict[str, Any]]) -> None:
    c = container(objects)
    host, port = listen_address(run_args(objects))
    ready_checks = SchedulerService.readiness_checks(SchedulerService.__new__(SchedulerService))

    assert (host, port) == ("0.0.0.0", 10259)
    assert [p["containerPort"] for p in c["ports"]] == [port]
    probes = {
        name: c[name]["httpGet"] for name in ("startupProbe", "livenessProbe", "readinessProbe")
    }
    for probe in probes.values():
        assert (probe["port"], probe["scheme"]) == (port, "HTTPS")
    assert probes["livenessProbe"]["path"] == probes["startupProbe"]["path"] == "/livez"
    path, _, query = probes["readinessProbe"]["path"].partition("?")
    assert path == "/readyz"
    # a standby is ready (informers synced, config loaded) though not leading
    assert query == "exclude=leader-election" and "leader-election" in ready_checks


def test_the_pod_is_unprivileged(objects: list[dict[str, Any]]) -> None:
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    c = container(objects)
    dockerfile_user = next(
        line.split()[1]
        for line in (REPO / "Dockerfile").read_text().splitlines()
        if line.startswith("USER ")
    )

    assert pod["securityContext"]["runAsNonRoot"] is True
    assert f"{pod['securityContext']['runAsUser']}:{pod['securityContext']['runAsGroup']}" == (
        dockerfile_user
    )
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert c["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert {"cpu", "memory"} <= set(c["resources"]["requests"])
    # the one writable directory: the generated serving certificate's temporary files
    tmp = next(m for m in c["volumeMounts"] if m["mountPath"] == "/tmp")
    assert "emptyDir" in next(v for v in pod["volumes"] if v["name"] == tmp["name"])


def test_the_image_is_the_one_kustomize_sets(objects: list[dict[str, Any]]) -> None:
    (image,) = KUSTOMIZATION["images"]

    assert container(objects)["image"] == f"{image['newName']}:{image['newTag']}"


# ---- RBAC ------------------------------------------------------------------------------------


def authorizer(objects: list[dict[str, Any]]) -> rbac.Authorizer:
    keys = {
        "ClusterRole": rbac.CLUSTER_ROLES,
        "ClusterRoleBinding": rbac.CLUSTER_ROLE_BINDINGS,
        "Role": rbac.ROLES,
        "RoleBinding": rbac.ROLE_BINDINGS,
    }
    stored = [(keys[o["kind"]], o) for o in objects if o["kind"] in keys]

    def get(key: str, namespace: str, name: str) -> dict[str, Any] | None:
        for k, o in stored:
            meta = o["metadata"]
            if (k, meta.get("namespace", ""), meta["name"]) == (key, namespace, name):
                return o
        return None

    def items(key: str, namespace: str | None) -> list[dict[str, Any]]:
        return [
            o
            for k, o in stored
            if k == key and (namespace is None or o["metadata"].get("namespace") == namespace)
        ]

    return rbac.Authorizer(get, items)


def aiosched_user(objects: list[dict[str, Any]]) -> rbac.UserInfo:
    account = one(objects, "ServiceAccount")["metadata"]
    return rbac.UserInfo(
        f"system:serviceaccount:{account['namespace']}:{account['name']}",
        groups=("system:serviceaccounts", "system:authenticated"),
    )


def allowed(objects: list[dict[str, Any]], request: tuple[str, ...]) -> bool:
    verb, group, resource, subresource, namespace, name = request
    namespace = "some-namespace" if namespace == "*" else namespace
    attributes = rbac.Attributes(
        aiosched_user(objects),
        verb,
        True,
        api_group=group,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
    )
    return authorizer(objects).authorize(attributes).allowed


@pytest.mark.parametrize("request_", AIOSCHED_REQUESTS, ids=lambda r: " ".join(filter(None, r)))
def test_every_request_aiosched_makes_is_granted(
    objects: list[dict[str, Any]], request_: tuple[str, ...]
) -> None:
    assert allowed(objects, request_)


@pytest.mark.parametrize("request_", NOT_GRANTED, ids=lambda r: " ".join(filter(None, r)))
def test_nothing_else_is_granted(objects: list[dict[str, Any]], request_: tuple[str, ...]) -> None:
    assert not allowed(objects, request_)


def test_the_leader_election_role_names_the_configured_lease_and_configmap(
    objects: list[dict[str, Any]], tmp_path: Path
) -> None:
    config = load(objects, tmp_path)
    role = one(objects, "Role")
    named = {
        (rule["resources"][0], name)
        for rule in role["rules"]
        for name in rule.get("resourceNames", [])
    }
    volume, _ = config_volume(objects)

    assert ("leases", config.leader_election.resource_name) in named
    assert ("configmaps", volume["configMap"]["name"]) in named


@pytest.mark.parametrize(
    ("ours", "upstream"),
    [
        ("aiosched:kube-scheduler", "system:kube-scheduler"),
        ("aiosched:volume-scheduler", "system:volume-scheduler"),
    ],
)
def test_cluster_roles_grant_nothing_upstream_s_do_not(
    objects: list[dict[str, Any]], ours: str, upstream: str
) -> None:
    ours_granted = grants(one(objects, "ClusterRole", ours)["rules"])
    upstream_granted = grants(UPSTREAM_ROLES[upstream])
    if upstream == "system:kube-scheduler":
        # not found upstream: the minimal gang scheduling rules (WORKLOAD_RULES)
        assert grants(WORKLOAD_RULES) <= ours_granted
        ours_granted -= grants(WORKLOAD_RULES)

    assert ours_granted <= upstream_granted
    # all of upstream's but the kube-scheduler Lease and the long-gone extensions group
    assert {
        g for g in upstream_granted - ours_granted if g[0] != "extensions" and g[1] != "leases"
    } == set()


def grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str, str]]:
    return {
        (group, resource, verb, name)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
        for name in rule.get("resourceNames", [""])
    }


def test_the_coscheduling_role_is_what_it_needs_within_scheduler_plugins_grant(
    objects: list[dict[str, Any]],
) -> None:
    ours = grants(one(objects, "ClusterRole", "aiosched:coscheduling")["rules"])

    assert ours == grants(COSCHEDULING_RULES)
    assert ours <= grants(SCHEDULER_PLUGINS_ROLE)
    # and the mirrored system: roles grant nothing in its group
    for name in ("aiosched:kube-scheduler", "aiosched:volume-scheduler"):
        rules = one(objects, "ClusterRole", name)["rules"]
        assert not any(g[0] == "scheduling.x-k8s.io" for g in grants(rules))


def test_every_binding_names_a_role_of_the_manifests_and_the_service_account(
    objects: list[dict[str, Any]],
) -> None:
    account = one(objects, "ServiceAccount")["metadata"]
    bindings = [o for o in objects if o["kind"] in ("ClusterRoleBinding", "RoleBinding")]

    assert len(bindings) == 4
    for binding in bindings:
        ref = binding["roleRef"]
        role = one(objects, ref["kind"], ref["name"])
        assert role["metadata"].get("namespace") == binding["metadata"].get("namespace")
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
        ]


# ---- against `aiosched cluster`, with kubectl ------------------------------------------------


def our_objects(kubectl: Any) -> list[str]:
    out = kubectl("get", "-k", str(MANIFESTS), "-o", "name", "--ignore-not-found")
    return sorted(out.split())


@pytest.mark.e2e
@needs_kubectl
def test_dry_run_server_apply_succeeds_and_creates_nothing(tmp_path: Path) -> None:
    from processes import Kubectl, start_cluster, stopping

    cluster = start_cluster(tmp_path)
    with stopping(cluster):
        kubectl = Kubectl(tmp_path)

        out = kubectl("apply", "--dry-run=server", "-k", str(MANIFESTS))

        lines = out.strip().splitlines()
        assert len(lines) == 14  # the PodDisruptionBudget is the 14th
        assert all(line.endswith(" created (server dry run)") for line in lines), out
        assert our_objects(kubectl) == []


@pytest.mark.e2e
@needs_kubectl
def test_apply_creates_what_kubectl_gets_back_and_a_second_apply_changes_nothing(
    tmp_path: Path,
) -> None:
    from processes import Kubectl, start_cluster, stopping

    cluster = start_cluster(tmp_path)
    with stopping(cluster):
        kubectl = Kubectl(tmp_path)

        created = kubectl("apply", "-k", str(MANIFESTS))
        again = kubectl("apply", "-k", str(MANIFESTS))

        assert created.count(" created") == 14
        assert again.count(" unchanged") == 14, again
        assert our_objects(kubectl) == sorted(
            [
                "clusterrole.rbac.authorization.k8s.io/aiosched:coscheduling",
                "clusterrolebinding.rbac.authorization.k8s.io/aiosched:coscheduling",
                "clusterrole.rbac.authorization.k8s.io/aiosched:kube-scheduler",
                "clusterrole.rbac.authorization.k8s.io/aiosched:metrics-reader",
                "clusterrole.rbac.authorization.k8s.io/aiosched:volume-scheduler",
                "clusterrole.rbac.authorization.k8s.io/aiosched:what-if",
                "clusterrolebinding.rbac.authorization.k8s.io/aiosched:kube-scheduler",
                "clusterrolebinding.rbac.authorization.k8s.io/aiosched:volume-scheduler",
                "configmap/aiosched-config",
                "deployment.apps/aiosched",
                "poddisruptionbudget.policy/aiosched",
                "role.rbac.authorization.k8s.io/aiosched",
                "rolebinding.rbac.authorization.k8s.io/aiosched",
                "serviceaccount/aiosched",
            ]
        )
        deployment = kubectl.json("deployment", "aiosched", "-n", NAMESPACE)
        assert deployment["spec"]["replicas"] == 2
        table = kubectl("get", "clusterrolebinding", "aiosched:kube-scheduler", "-o", "wide")
        assert "ClusterRole/aiosched:kube-scheduler" in table
        assert f"{NAMESPACE}/aiosched" in table
        account = f"system:serviceaccount:{NAMESPACE}:aiosched"
        can = kubectl(
            "auth", "can-i", "create", "pods", "--subresource=binding", f"--as={account}"
        ).strip()
        cannot = kubectl("auth", "can-i", "list", "secrets", f"--as={account}", check=False)
        assert (can, cannot.strip()) == ("yes", "no")


@pytest.mark.e2e
@needs_kubectl
def test_aiosched_schedules_under_the_service_account_s_token(tmp_path: Path) -> None:
    """compose.yaml's identity script against kubesim, then `aiosched run` with the kubeconfig
    it wrote and the ConfigMap's configuration: kubesim authorizes every request by RBAC."""
    from processes import (
        Kubectl,
        aiosched,
        pod_manifest,
        start,
        start_cluster,
        stopping,
        wait_until,
    )

    cluster = start_cluster(tmp_path, 0, 2)
    with stopping(cluster):
        identity = tmp_path / "aiosched.kubeconfig"
        subprocess.run(
            [
                "sh",
                str(REPO / "deploy" / "serviceaccount-kubeconfig.sh"),
                str(tmp_path / "kubeconfig"),
                str(identity),
                cluster.url,
                str(MANIFESTS),
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        assert "token" in yaml.safe_load(identity.read_text())["users"][0]["user"]
        scheduler = start(
            [
                *aiosched(),
                "run",
                "--kubeconfig",
                str(identity),
                "--config",
                str(MANIFESTS / "config.yaml"),
                "--http-address",
                "127.0.0.1:0",
                "--insecure-http",
                "-v",
                "2",
            ],
            tmp_path / "scheduler.log",
            r"serving /metrics, .+? on (https?://[\d.]+:\d+)",
        )
        with stopping(scheduler):
            kubectl = Kubectl(tmp_path)
            kubectl.apply(
                pod_manifest("second", "100m", "  schedulerName: aiosched")
                + pod_manifest("ignored", "100m")
            )

            wait_until(
                lambda: kubectl.json("pod", "second")["spec"].get("nodeName"),
                what="the aiosched pod bound",
            )
            lease = kubectl.json("lease", LEASE, "-n", NAMESPACE)
            events = kubectl.json(
                "events.events.k8s.io", "--field-selector", "regarding.name=second"
            )
            assert lease["spec"]["holderIdentity"]
            # the scheduler's event, written under its token (the kubelet's follow it)
            assert [
                e["reason"] for e in events["items"] if e.get("reportingController") == "aiosched"
            ] == ["Scheduled"]
            assert "nodeName" not in kubectl.json("pod", "ignored")["spec"]  # not its name
        log = (tmp_path / "scheduler.log").read_text()
        assert "forbidden" not in log.lower(), log


def test_the_identity_script_applies_only_the_rbac_and_the_service_account() -> None:
    script = (REPO / "deploy" / "serviceaccount-kubeconfig.sh").read_text()
    applied = {word.split("/")[-1].strip('"') for word in script.split() if word.endswith('.yaml"')}

    assert applied == {"serviceaccount.yaml", "rbac.yaml"}
    for name in applied:
        assert (MANIFESTS / name).is_file()
