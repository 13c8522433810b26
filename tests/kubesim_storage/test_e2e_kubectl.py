"""`aiosched cluster` as a real process, driven with kubectl: a claim of the default class is
provisioned and bound once the scheduler's selected-node annotation is on it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from processes import Kubectl, start_cluster, stopping, wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl"),
]

CLAIM = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 2Gi}}
"""


def test_kubectl_sees_a_default_class_claim_bound(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, nodes=2)
    kubectl = Kubectl(tmp_path)
    with stopping(cluster):
        kubectl.apply(CLAIM)
        claim = kubectl.json("pvc", "data")
        assert claim["spec"]["storageClassName"] == "standard"
        assert claim["status"]["phase"] == "Pending"
        kubectl("annotate", "pvc", "data", "volume.kubernetes.io/selected-node=node-1")

        def phase() -> str:
            return kubectl("get", "pvc", "data", "-o", "jsonpath={.status.phase}")

        wait_until(lambda: phase() == "Bound", timeout=10, what="the claim Bound")
        listed = kubectl("get", "pvc", "data")
        assert "Bound" in listed and "standard" in listed, listed
        volume = json.loads(kubectl("get", "pv", "-o", "json"))["items"]
        assert [v["spec"]["claimRef"]["name"] for v in volume] == ["data"]
