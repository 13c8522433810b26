"""Dynamic Resource Allocation end to end: `aiosched cluster --nodes 2 --dra-devices 2
--dra-models a100,h100` (a v1.35 API server with the resourceclaim controller, the simulated
driver gpu.kubesim.io and a kubelet that starts a pod only with its claims allocated and
reserved) and `aiosched run` with the default profile, as separate processes, driven with
kubectl as a user would.

node-0 has two a100 devices, node-1 two h100 devices: four GPUs in all.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from manifests import PAUSE, to_yaml
from processes import Kubectl, start_cluster, start_scheduler, stopping, wait_until

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""
DRIVER = "gpu.kubesim.io"


def _claim_spec(*requests: Mapping[str, Any], constraints: Any = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": [dict(r) for r in requests]}
    if constraints:
        devices["constraints"] = constraints
    return {"devices": devices}


def _request(name: str, selector: str | None = None, count: int = 1) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": DRIVER, "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"name": name, "exactly": exactly}


ONE_GPU_TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "one-gpu"},
    "spec": {"spec": _claim_spec(_request("gpu"))},
}


def _claim(name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": dict(spec),
    }


def _pod_with_claim(name: str, *, template: str = "", claim: str = "") -> dict[str, Any]:
    source = {"resourceClaimTemplateName": template} if template else {"resourceClaimName": claim}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": PAUSE,
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "64Mi"},
                        "claims": [{"name": "gpu"}],
                    },
                }
            ],
            "resourceClaims": [{"name": "gpu", **source}],
        },
    }


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    workdir: Path = tmp_path_factory.mktemp("dra")
    cluster = start_cluster(workdir, 0, 2, "--dra-devices", "2", "--dra-models", "a100,h100")
    with stopping(cluster):
        kubectl = Kubectl(workdir)
        wait_until(lambda: len(kubectl.json("resourceslices")["items"]) == 2, what="two slices")
        scheduler = start_scheduler(workdir, CONFIG)
        with stopping(scheduler):
            yield kubectl


def _get(kubectl: Kubectl, kind: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = kubectl.json(kind, name)
    return found


def _node_of(kubectl: Kubectl, pod: str) -> str:
    return str(_get(kubectl, "pod", pod)["spec"].get("nodeName") or "")


def _claim_of(kubectl: Kubectl, pod: str) -> dict[str, Any]:
    """The pod's (only) claim: the one the controller generated, or the one it names."""
    obj = _get(kubectl, "pod", pod)
    entry = obj["spec"]["resourceClaims"][0]
    name = entry.get("resourceClaimName")
    if not name:
        statuses = obj.get("status", {}).get("resourceClaimStatuses") or []
        name = statuses[0]["resourceClaimName"]
    return _get(kubectl, "resourceclaim", name)


def _devices(claim: Mapping[str, Any]) -> list[tuple[str, str]]:
    results = claim["status"]["allocation"]["devices"]["results"]
    return [(r["pool"], r["device"]) for r in results]


def _scheduled_message(kubectl: Kubectl, pod: str) -> str:
    def rejected() -> str:
        for cond in _get(kubectl, "pod", pod).get("status", {}).get("conditions", []):
            if cond["type"] == "PodScheduled" and cond["status"] == "False":
                return str(cond.get("message", ""))
        return ""

    return str(wait_until(rejected, what=f"{pod} rejected"))


def _delete(kubectl: Kubectl, *names: str) -> None:
    kubectl("delete", "pod", *names, "--wait=true", "--grace-period=0", "--force", check=False)


def test_one_gpu_each_until_none_is_left_then_the_next_waits(kubectl: Kubectl) -> None:
    kubectl.apply(to_yaml(ONE_GPU_TEMPLATE))
    names = [f"gpu-{i}" for i in range(5)]
    kubectl.apply(to_yaml(*(_pod_with_claim(n, template="one-gpu") for n in names)))

    def running() -> list[str]:
        return [n for n in names if _get(kubectl, "pod", n)["status"].get("phase") == "Running"]

    bound = wait_until(lambda: len(running()) == 4 and running(), what="four pods running")
    (waiting,) = set(names) - set(bound)
    message = _scheduled_message(kubectl, waiting)
    assert message.startswith("0/2 nodes are available: 2 cannot allocate all claims."), message
    assert not _node_of(kubectl, waiting)

    seen: set[tuple[str, str]] = set()
    for name in bound:
        claim = _claim_of(kubectl, name)
        pod_uid = _get(kubectl, "pod", name)["metadata"]["uid"]
        assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pod_uid]
        (device,) = _devices(claim)
        assert device[0] == _node_of(kubectl, name)  # the pool is the node's
        assert device not in seen
        seen.add(device)

    started = time.monotonic()
    _delete(kubectl, bound[0])
    wait_until(
        lambda: _get(kubectl, "pod", waiting)["status"].get("phase") == "Running",
        timeout=30.0,
        what=f"{waiting} running once a GPU was freed",
    )
    assert time.monotonic() - started < 60  # requeued by the claim's event, not the 5-min flush
    _delete(kubectl, *names)


def test_a_pod_waits_for_its_claim_to_exist(kubectl: Kubectl) -> None:
    kubectl.apply(to_yaml(_pod_with_claim("late", claim="late-claim")))
    time.sleep(2)
    assert not _node_of(kubectl, "late")
    kubectl.apply(to_yaml(_claim("late-claim", _claim_spec(_request("gpu")))))
    wait_until(lambda: _node_of(kubectl, "late"), timeout=30.0, what="late scheduled")
    claim = _get(kubectl, "resourceclaim", "late-claim")
    assert claim["status"]["reservedFor"][0]["name"] == "late"
    _delete(kubectl, "late")


def test_a_cel_selector_picks_the_model(kubectl: Kubectl) -> None:
    selector = f'device.attributes["{DRIVER}"].model == "h100"'
    kubectl.apply(to_yaml(_claim("h100", _claim_spec(_request("gpu", selector)))))
    kubectl.apply(to_yaml(_pod_with_claim("wants-h100", claim="h100")))
    wait_until(lambda: _node_of(kubectl, "wants-h100"), what="wants-h100 scheduled")
    assert _node_of(kubectl, "wants-h100") == "node-1"
    _delete(kubectl, "wants-h100")


def test_match_attribute_keeps_both_devices_alike(kubectl: Kubectl) -> None:
    spec = _claim_spec(
        _request("first"),
        _request("second"),
        constraints=[{"requests": ["first", "second"], "matchAttribute": f"{DRIVER}/model"}],
    )
    kubectl.apply(to_yaml(_claim("pair", spec)))
    kubectl.apply(to_yaml(_pod_with_claim("pair-user", claim="pair")))
    wait_until(lambda: _node_of(kubectl, "pair-user"), what="pair-user scheduled")
    claim = _get(kubectl, "resourceclaim", "pair")
    pools = {pool for pool, _ in _devices(claim)}
    assert pools == {_node_of(kubectl, "pair-user")}
    assert len(set(_devices(claim))) == 2
    _delete(kubectl, "pair-user")
