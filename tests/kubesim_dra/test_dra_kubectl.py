"""`aiosched cluster --dra-devices` as a real process, read with kubectl: the printers' columns
of resourceclaims, resourceslices and deviceclasses (pkg/printers/internalversion)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from processes import Kubectl, start_cluster, stopping, wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl"),
]

CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: single-gpu}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.kubesim.io}
"""


def test_kubectl_columns_of_claims_slices_and_classes(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, 0, 2, "--dra-devices", "2", "--dra-models", "a100,h100")
    kubectl = Kubectl(tmp_path)
    with stopping(cluster):
        kubectl.apply(CLAIM)
        wait_until(
            lambda: "node-1" in kubectl("get", "resourceslices"), timeout=10, what="both slices"
        )
        shown = kubectl("get", "resourceclaims,resourceslices,deviceclasses")
        lines = [line.split() for line in shown.splitlines() if line.strip()]
        assert ["NAME", "STATE", "AGE"] in lines, shown
        assert ["NAME", "NODE", "DRIVER", "POOL", "AGE"] in lines, shown
        assert ["NAME", "AGE"] in lines, shown
        rows = {line[0]: line[1:] for line in lines}
        assert rows["resourceclaim.resource.k8s.io/single-gpu"][0] == "pending"
        assert rows["resourceslice.resource.k8s.io/node-1-gpu.kubesim.io"][:3] == [
            "node-1",
            "gpu.kubesim.io",
            "node-1",
        ]
        assert "deviceclass.resource.k8s.io/gpu.kubesim.io" in rows
        model = kubectl(
            "get",
            "resourceslice",
            "node-1-gpu.kubesim.io",
            "-o",
            "jsonpath={.spec.devices[0].attributes.model.string}",
        )
        assert model == "h100"
