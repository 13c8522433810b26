"""The unmodified kubectl, with its default flags, against `aiosched cluster` (kubesim).

One cluster serves the module; each test keeps to its own namespace or object names.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def kubectl_env(shared_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """kubectl's environment: the cluster's kubeconfig and a private HOME, so that its discovery
    and OpenAPI caches (~/.kube/cache) start empty."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(
        {"KUBECONFIG": str(shared_cluster.kubeconfig), "HOME": str(tmp_path_factory.mktemp("home"))}
    )
    return env


@pytest.fixture(scope="module")
def kubectl(kubectl_env: dict[str, str]) -> Kubectl:
    def run(
        *args: str, stdin: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["kubectl", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=kubectl_env,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n"
                f"{result.stdout}\n{result.stderr}"
            )
        return result

    return run


def pod_manifest(
    name: str,
    namespace: str = "default",
    image: str = "nginx:1.25",
    labels: dict[str, str] | None = None,
    extra_spec: dict[str, Any] | None = None,
) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": name}},
            "spec": {"containers": [{"name": "main", "image": image}], **(extra_spec or {})},
        }
    )


def make_namespace(kubectl: Kubectl, name: str) -> None:
    manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    kubectl("create", "-f", "-", stdin=yaml.safe_dump(manifest))


def table(output: str) -> list[list[str]]:
    """`kubectl get` output as rows of whitespace-split cells (header first)."""
    return [line.split() for line in output.strip().splitlines()]


def jsonpath(kubectl: Kubectl, *target: str, path: str) -> str:
    return kubectl("get", *target, "-o", f"jsonpath={path}").stdout


@pytest.fixture(scope="module")
def node_names(kubectl: Kubectl) -> list[str]:
    return jsonpath(kubectl, "nodes", path="{.items[*].metadata.name}").split()


# ---- read-only commands ---------------------------------------------------------------------


def test_get_namespaces_and_nodes(kubectl: Kubectl, node_names: list[str]) -> None:
    namespaces = table(kubectl("get", "ns").stdout)
    assert namespaces[0] == ["NAME", "STATUS", "AGE"]
    assert ["default", "Active"] in [row[:2] for row in namespaces[1:]]
    nodes = table(kubectl("get", "nodes").stdout)
    assert nodes[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert len(nodes) == 1 + 3 == 1 + len(node_names)
    assert all(row[1] == "Ready" for row in nodes[1:])
    wide = table(kubectl("get", "nodes", "-o", "wide").stdout)
    assert wide[0][:7] == [
        "NAME",
        "STATUS",
        "ROLES",
        "AGE",
        "VERSION",
        "INTERNAL-IP",
        "EXTERNAL-IP",
    ]


def test_get_output_formats(kubectl: Kubectl, node_names: list[str]) -> None:
    as_json = json.loads(kubectl("get", "nodes", "-o", "json").stdout)
    assert as_json["kind"] == "List" or as_json["kind"] == "NodeList"
    assert sorted(i["metadata"]["name"] for i in as_json["items"]) == sorted(node_names)
    as_yaml = yaml.safe_load(kubectl("get", "node", node_names[0], "-o", "yaml").stdout)
    assert as_yaml["kind"] == "Node" and as_yaml["metadata"]["name"] == node_names[0]
    assert as_yaml["status"]["allocatable"]["pods"] == "110"
    short = kubectl("get", "no", node_names[0], "-o", "name").stdout.strip()
    assert short == f"node/{node_names[0]}"


def test_api_resources(kubectl: Kubectl) -> None:
    rows = table(kubectl("api-resources").stdout)
    assert rows[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    names = {row[0]: row for row in rows[1:]}
    assert names["pods"] == ["pods", "po", "v1", "true", "Pod"]
    assert names["replicasets"] == ["replicasets", "rs", "apps/v1", "true", "ReplicaSet"]
    assert names["priorityclasses"][2:] == ["scheduling.k8s.io/v1", "false", "PriorityClass"]
    assert "leases" in names and "csistoragecapacities" in names


def test_explain_uses_openapi_v3(kubectl: Kubectl) -> None:
    out = kubectl("explain", "pod.spec").stdout
    assert "KIND:       Pod" in out and "FIELD: spec <PodSpec>" in out
    assert "containers\t<[]Container> -required-" in out
    assert "nodeName\t<string>" in out
    nested = kubectl("explain", "pods.spec.containers.ports.containerPort").stdout
    assert "<integer>" in nested
    v2 = kubectl("explain", "rs.spec.replicas", "--output", "plaintext-openapiv2").stdout
    assert "KIND:     ReplicaSet" in v2


# ---- writes ---------------------------------------------------------------------------------


def test_create_get_describe_delete(kubectl: Kubectl, tmp_path: Path) -> None:
    make_namespace(kubectl, "e2e-create")
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(pod_manifest("web", "e2e-create"))
    assert kubectl("create", "-f", str(manifest)).stdout.strip() == "pod/web created"
    again = kubectl("create", "-f", str(manifest), check=False)
    assert again.returncode != 0 and "AlreadyExists" in again.stderr
    rows = table(kubectl("get", "pods", "-n", "e2e-create").stdout)
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert rows[1][:2] == ["web", "0/1"]
    wide = table(kubectl("get", "pods", "-n", "e2e-create", "-o", "wide").stdout)
    assert wide[0] == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED",
        "NODE",
        "READINESS",
        "GATES",
    ]
    everywhere = table(kubectl("get", "pods", "-A").stdout)
    assert everywhere[0][:2] == ["NAMESPACE", "NAME"]
    assert ["e2e-create", "web"] in [row[:2] for row in everywhere[1:]]
    described = kubectl("describe", "pod", "web", "-n", "e2e-create").stdout
    assert "Name:" in described and "e2e-create" in described and "nginx:1.25" in described
    assert kubectl("delete", "-f", str(manifest)).stdout.strip() == 'pod "web" deleted'
    gone = kubectl("get", "pod", "web", "-n", "e2e-create", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_create_namespace_imperatively(kubectl: Kubectl) -> None:
    # `kubectl create namespace` posts the typed object as application/vnd.kubernetes.protobuf.
    assert kubectl("create", "namespace", "e2e-imperative").stdout.strip() == (
        "namespace/e2e-imperative created"
    )
    assert table(kubectl("get", "ns", "e2e-imperative").stdout)[1][:2] == [
        "e2e-imperative",
        "Active",
    ]


@pytest.mark.parametrize(
    ("args", "created", "check_path", "expected"),
    [
        (
            ("configmap", "e2e-cm", "--from-literal=a=b"),
            "configmap/e2e-cm",
            ("configmap", "e2e-cm", "{.data.a}"),
            "b",
        ),
        (
            ("priorityclass", "e2e-pc", "--value=1000", "--description=high"),
            "priorityclass.scheduling.k8s.io/e2e-pc",
            ("pc", "e2e-pc", "{.value}"),
            "1000",
        ),
        (
            ("service", "clusterip", "e2e-svc", "--tcp=80:8080"),
            "service/e2e-svc",
            ("svc", "e2e-svc", "{.spec.ports[0].targetPort}"),
            "8080",
        ),
        (
            ("pdb", "e2e-pdb", "--selector=app=x", "--min-available=50%"),
            "poddisruptionbudget.policy/e2e-pdb",
            ("pdb", "e2e-pdb", "{.spec.minAvailable}"),
            "50%",
        ),
    ],
)
def test_imperative_creates_send_protobuf(
    kubectl: Kubectl,
    args: tuple[str, ...],
    created: str,
    check_path: tuple[str, str, str],
    expected: str,
) -> None:
    assert kubectl("create", *args).stdout.strip() == f"{created} created"
    kind, name, path = check_path
    assert jsonpath(kubectl, kind, name, path=path) == expected


def test_server_dry_run_persists_nothing(kubectl: Kubectl, node_names: list[str]) -> None:
    created = kubectl("create", "configmap", "e2e-dry", "--from-literal=a=b", "--dry-run=server")
    assert created.stdout.strip() == "configmap/e2e-dry created (server dry run)"
    gone = kubectl("get", "configmap", "e2e-dry", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    node = node_names[0]
    labeled = kubectl("label", "node", node, "dry=run", "--dry-run=server").stdout.strip()
    assert labeled == f"node/{node} labeled (server dry run)"
    assert "dry" not in json.loads(jsonpath(kubectl, "node", node, path="{.metadata.labels}"))


def test_describe_pod_lists_events_written_through_events_k8s_io(
    kubectl: Kubectl, shared_cluster: Any
) -> None:
    make_namespace(kubectl, "e2e-events")
    kubectl(
        "create",
        "-f",
        "-",
        stdin=pod_manifest("pending", "e2e-events", extra_spec={"schedulerName": "nobody"}),
    )
    pod = json.loads(kubectl("get", "pod", "pending", "-n", "e2e-events", "-o", "json").stdout)
    event = {  # what a scheduler's events.k8s.io/v1 recorder posts
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "pending.failed", "namespace": "e2e-events"},
        "eventTime": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-e2e",
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "type": "Warning",
        "note": "0/3 nodes are available: 3 Insufficient cpu.",
        "regarding": {
            "kind": "Pod",
            "namespace": "e2e-events",
            "name": "pending",
            "uid": pod["metadata"]["uid"],
            "apiVersion": "v1",
        },
    }
    request = urllib.request.Request(
        f"{shared_cluster.url}/apis/events.k8s.io/v1/namespaces/e2e-events/events",
        data=json.dumps(event).encode(),
        method="POST",
        headers={
            "Authorization": f"Bearer {shared_cluster.token}",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, context=shared_cluster.ssl_context()) as response:
        assert response.status == 201
    described = kubectl("describe", "pod", "pending", "-n", "e2e-events").stdout
    events_section = described.split("Events:", 1)[1]
    row = next(line.split() for line in events_section.splitlines() if "FailedScheduling" in line)
    assert row[:2] == ["Warning", "FailedScheduling"]
    assert "default-scheduler" in row
    assert "0/3 nodes are available: 3 Insufficient cpu." in " ".join(row)
    listed = table(kubectl("get", "events", "-n", "e2e-events").stdout)
    assert any("FailedScheduling" in r for r in listed[1:])


def test_strict_field_validation(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "bad.yaml"
    document = yaml.safe_load(pod_manifest("bad"))
    document["spec"]["containers"][0]["imagePullPolice"] = "Always"
    manifest.write_text(yaml.safe_dump(document))
    result = kubectl("create", "-f", str(manifest), check=False)
    assert result.returncode != 0
    assert 'unknown field "spec.containers[0].imagePullPolice"' in result.stderr


def test_apply_twice_updates_with_strategic_merge(kubectl: Kubectl, tmp_path: Path) -> None:
    make_namespace(kubectl, "e2e-apply")
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        pod_manifest(
            "api", "e2e-apply", labels={"app": "api"}, extra_spec={"schedulerName": "nobody"}
        )
    )
    assert kubectl("apply", "-f", str(manifest)).stdout.strip() == "pod/api created"
    manifest.write_text(
        pod_manifest(
            "api",
            "e2e-apply",
            image="nginx:1.26",
            labels={"app": "api", "tier": "web"},
            extra_spec={"schedulerName": "nobody"},
        )
    )
    assert kubectl("apply", "-f", str(manifest)).stdout.strip() == "pod/api configured"
    pod = json.loads(kubectl("get", "pod", "api", "-n", "e2e-apply", "-o", "json").stdout)
    assert pod["metadata"]["labels"] == {"app": "api", "tier": "web"}
    assert [c["image"] for c in pod["spec"]["containers"]] == ["nginx:1.26"]
    assert "kubectl.kubernetes.io/last-applied-configuration" in pod["metadata"]["annotations"]
    unchanged = kubectl("apply", "-f", str(manifest)).stdout.strip()
    assert unchanged == "pod/api unchanged"


def test_label_and_annotate(kubectl: Kubectl) -> None:
    make_namespace(kubectl, "e2e-label")
    kubectl(
        "create",
        "-f",
        "-",
        stdin=pod_manifest("lab", "e2e-label", extra_spec={"schedulerName": "nobody"}),
    )
    target = ("pod", "lab", "-n", "e2e-label")
    assert kubectl("label", *target, "team=blue").stdout.strip() == "pod/lab labeled"
    refused = kubectl("label", *target, "team=red", check=False)
    assert refused.returncode != 0 and "--overwrite" in refused.stderr
    kubectl("label", *target, "team=red", "--overwrite")
    kubectl("annotate", *target, "note=hello")
    pod = json.loads(kubectl("get", *target, "-o", "json").stdout)
    assert pod["metadata"]["labels"]["team"] == "red"
    assert pod["metadata"]["annotations"]["note"] == "hello"
    kubectl("label", *target, "team-")
    kubectl("annotate", *target, "note-")
    pod = json.loads(kubectl("get", *target, "-o", "json").stdout)
    assert "team" not in pod["metadata"]["labels"]
    assert "note" not in (pod["metadata"].get("annotations") or {})
    selected = table(kubectl("get", "pods", "-n", "e2e-label", "-l", "app=lab").stdout)
    assert [row[0] for row in selected[1:]] == ["lab"]


def test_cordon_uncordon_and_describe_node(kubectl: Kubectl, node_names: list[str]) -> None:
    node = node_names[-1]
    assert kubectl("cordon", node).stdout.strip() == f"node/{node} cordoned"
    row = next(r for r in table(kubectl("get", "nodes").stdout) if r[0] == node)
    assert row[1] == "Ready,SchedulingDisabled"
    assert "Unschedulable:      true" in kubectl("describe", "node", node).stdout
    assert kubectl("uncordon", node).stdout.strip() == f"node/{node} uncordoned"
    row = next(r for r in table(kubectl("get", "nodes").stdout) if r[0] == node)
    assert row[1] == "Ready"


def test_taint_add_and_remove(kubectl: Kubectl, node_names: list[str]) -> None:
    node = node_names[0]
    kubectl("taint", "nodes", node, "dedicated=gpu:NoSchedule")
    taints = json.loads(jsonpath(kubectl, "node", node, path="{.spec.taints}"))
    assert {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"} in taints
    assert "dedicated=gpu:NoSchedule" in kubectl("describe", "node", node).stdout
    kubectl("taint", "nodes", node, "dedicated=gpu:NoSchedule-")
    remaining = jsonpath(kubectl, "node", node, path="{.spec.taints}")
    assert "dedicated" not in remaining


def test_get_watch_sees_added_modified_deleted(
    kubectl: Kubectl, kubectl_env: dict[str, str]
) -> None:
    make_namespace(kubectl, "e2e-watch")
    # kubectl lists, prints what it found, then watches from the list's resourceVersion: once
    # "w0" is printed, every later change is in the watch (a change made before the list would
    # be folded into it, and its event never printed).
    kubectl(
        "create",
        "-f",
        "-",
        stdin=pod_manifest("w0", "e2e-watch", extra_spec={"schedulerName": "nobody"}),
    )
    watcher = subprocess.Popen(
        ["kubectl", "get", "pods", "-n", "e2e-watch", "-w", "--output-watch-events"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=kubectl_env,
    )
    output = bytearray()
    try:
        listed = _read_until(
            watcher, lambda rows: any(r[:2] == ["ADDED", "w0"] for r in rows), output
        )
        assert any(r[:2] == ["ADDED", "w0"] for r in listed), listed
        kubectl(
            "create",
            "-f",
            "-",
            stdin=pod_manifest("w1", "e2e-watch", extra_spec={"schedulerName": "nobody"}),
        )
        kubectl("label", "pod", "w1", "-n", "e2e-watch", "seen=yes")
        kubectl("delete", "pod", "w1", "-n", "e2e-watch", "--grace-period=0", "--wait=true")
        events = _read_until(
            watcher, lambda rows: any(r[:2] == ["DELETED", "w1"] for r in rows), output
        )
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)
    assert events[0][:3] == ["EVENT", "NAME", "READY"]
    kinds = [row[0] for row in events[1:] if row[1] == "w1"]
    assert kinds[0] == "ADDED" and "MODIFIED" in kinds and kinds[-1] == "DELETED"


def _read_until(
    proc: subprocess.Popen[bytes],
    done: Callable[[list[list[str]]], bool],
    output: bytearray,
    timeout: float = 20,
) -> list[list[str]]:
    """Read `proc`'s stdout into `output` (kept across calls) until `done(rows)`, EOF or timeout.

    os.read on the pipe, not a non-blocking TextIOWrapper: its read() raises TypeError when the
    pipe is empty but still open."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    while not done(table(output.decode(errors="replace"))) and time.monotonic() < deadline:
        readable, _, _ = select.select([fd], [], [], 0.1)
        if readable:
            chunk = os.read(fd, 65536)
            if not chunk:
                break  # EOF: kubectl exited
            output += chunk
    return table(output.decode(errors="replace"))
