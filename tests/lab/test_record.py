"""`aiosched record` against `aiosched cluster` (real processes): the nodes, the GPU slices and
class, the pods there at the start (arriving at 0), one created while recording (arriving
later) and one deleted (departing); the trace then replays."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from lab_traces import claim, gpu_slice, node, pod
from processes import Kubectl, aiosched, start_cluster, stopping

from scheduler.lab.openb import device_class
from scheduler.lab.trace import ARRIVAL_ANNOTATION, DEPARTURE_ANNOTATION, load_trace

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl"),
]


def test_record_then_replay(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    kubectl = Kubectl(tmp_path)
    out = tmp_path / "trace.yaml"
    with stopping(cluster):
        kubectl.apply(yaml.safe_dump_all(
            [device_class(), node("n1", 8), gpu_slice("n1", 2, "A10"), claim("gpu", 1),
             pod("early", 100, "gpu"), pod("leaving", 100)]
        ))  # fmt: skip
        recorder = subprocess.Popen(
            [*aiosched(), "record", "--kubeconfig", str(tmp_path / "kubeconfig"),
             "--out", str(out), "--duration", "8"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert recorder.stderr is not None
        line = recorder.stderr.readline()  # once every kind is listed
        assert "recording" in line, line
        time.sleep(1)
        kubectl.apply(yaml.safe_dump(pod("late", 200)))
        kubectl("delete", "pod", "leaving", "--wait=false")
        _, err = recorder.communicate(timeout=60)
        assert recorder.returncode == 0, err
    trace = load_trace(out)
    assert [n["metadata"]["name"] for n in trace.nodes] == ["n1"]
    assert len(trace.resource_slices) == 1 and len(trace.device_classes) >= 1
    times = {a.pod["metadata"]["name"]: a for a in trace.pods}
    assert times["early"].time == 0.0 and times["early"].departure is None
    assert len(times["early"].claims) == 1 and "status" not in times["early"].claims[0]
    assert times["late"].time > 0.0
    assert times["leaving"].departure is not None and times["leaving"].departure > 0.0
    raw = out.read_text()
    assert ARRIVAL_ANNOTATION in raw and DEPARTURE_ANNOTATION in raw

    config = tmp_path / "c.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: default-scheduler\n"
    )
    report = tmp_path / "r.json"
    subprocess.run(
        [*aiosched(), "replay", "--trace", str(out), "--config", str(config), "--json",
         str(report), "--placements", "--jobs", "1"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    (record,) = json.loads(report.read_text())
    assert record["failed_pods"] == 0
    assert set(record["placements"].values()) == {"n1"}
    assert len(record["placements"]) == 3
