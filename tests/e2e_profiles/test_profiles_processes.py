"""Several profiles in one `aiosched run` process and hot reload, driven as a user would:
kubectl against `aiosched cluster`, a ConfigMap-style config directory, SIGHUP, /metrics, /readyz.
"""

from __future__ import annotations

import os
import signal
import time
from functools import partial
from pathlib import Path

import pytest
from processes import (
    Kubectl,
    Process,
    aiosched,
    http_get,
    node_manifest,
    pod_manifest,
    start,
    start_cluster,
    started,
    wait_nodes_cached,
    wait_until,
)
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SPREAD_AND_PACK = (ROOT / "profiles/examples/spread-and-pack.yaml").read_text()
THIRD_PROFILE = """  - schedulerName: third
    plugins:
      score:
        disabled: [{name: "*"}]
"""
INVALID = (
    SPREAD_AND_PACK
    + """  - schedulerName: broken
    plugins:
      filter:
        enabled: [{name: NoSuchPlugin}]
"""
)


class ConfigMapVolume:
    """A directory laid out as the kubelet lays out a ConfigMap volume: the file is a symlink
    through `..data`, itself a symlink to a timestamped directory that is swapped atomically."""

    def __init__(self, root: Path, key: str = "config.yaml") -> None:
        self.root = root
        self.key = key
        self.generation = 0
        root.mkdir()
        (root / key).symlink_to(Path("..data") / key)

    @property
    def path(self) -> Path:
        return self.root / self.key

    def publish(self, content: str) -> None:
        self.generation += 1
        version = f"..2024_01_01_00_00_{self.generation:02d}"
        (self.root / version).mkdir()
        (self.root / version / self.key).write_text(content)
        staging = self.root / "..data_tmp"
        staging.symlink_to(version)
        os.replace(staging, self.root / "..data")


def start_scheduler(workdir: Path, config: Path) -> Process:
    return start(
        [
            *aiosched(),
            "run",
            "--kubeconfig",
            str(workdir / "kubeconfig"),
            "--config",
            str(config),
            "--http-address",
            "127.0.0.1:0",
            "--insecure-http",
            "--seed",
            "1",
        ],
        workdir / "scheduler.log",
        r"serving /metrics, .+? on (http://[\d.]+:\d+)",
    )


def metrics(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, text = http_get(f"{url}/metrics")
    assert status == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def reloads(url: str, result: str) -> float:
    return metrics(url).get(("aiosched_config_reloads_total", (("result", result),)), 0.0)


def attempts(url: str, profile: str) -> float:
    key = ("scheduler_schedule_attempts_total", (("profile", profile), ("result", "scheduled")))
    return metrics(url).get(key, 0.0)


def nodes_of(kubectl: Kubectl, prefix: str) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"].get("nodeName", "")
        for p in kubectl.json("pods")["items"]
        if p["metadata"]["name"].startswith(prefix)
    }


def all_bound(kubectl: Kubectl, prefix: str, count: int) -> dict[str, str] | None:
    bound = nodes_of(kubectl, prefix)
    return bound if len(bound) == count and all(bound.values()) else None


def named_pod(name: str, cpu: str, scheduler_name: str) -> str:
    return pod_manifest(name, cpu, f"  schedulerName: {scheduler_name}")


def test_profiles_place_differently_and_reload_in_place(tmp_path: Path) -> None:
    volume = ConfigMapVolume(tmp_path / "config")
    volume.publish(SPREAD_AND_PACK)
    kubectl = Kubectl(tmp_path)
    with started(
        partial(start_cluster, tmp_path), partial(start_scheduler, tmp_path, volume.path)
    ) as (_, scheduler):
        url = scheduler.url
        kubectl.apply("".join(node_manifest(f"n{i}", "4") for i in range(3)))
        # Spreading over three nodes needs all three in the cache when the pods come.
        wait_nodes_cached(url, 3)
        # Two schedulers, identical nodes: default-scheduler spreads, bin-packing packs.
        kubectl.apply("".join(pod_manifest(f"spread-{i}", "1") for i in range(3)))
        spread = wait_until(lambda: all_bound(kubectl, "spread-", 3), what="spread pods")
        kubectl.apply("".join(named_pod(f"pack-{i}", "1", "bin-packing") for i in range(3)))
        pack = wait_until(lambda: all_bound(kubectl, "pack-", 3), what="packed pods")
        assert len(set(spread.values())) == 3
        assert len(set(pack.values())) == 1
        assert attempts(url, "default-scheduler") == 3
        assert attempts(url, "bin-packing") == 3

        # Pods for a name no profile owns yet wait, untouched.
        kubectl.apply("".join(named_pod(f"third-{i}", "100m", "third") for i in range(2)))
        time.sleep(1.5)
        assert not any(nodes_of(kubectl, "third-").values())

        # The ConfigMap-style ..data swap adds the profile: its pending pods schedule, same pid.
        pid = scheduler.proc.pid
        swapped = time.monotonic()
        volume.publish(SPREAD_AND_PACK + THIRD_PROFILE)
        wait_until(lambda: all_bound(kubectl, "third-", 2), what="third profile's pods")
        picked_up = time.monotonic() - swapped
        assert scheduler.proc.poll() is None and scheduler.proc.pid == pid
        assert reloads(url, "success") == 1
        assert attempts(url, "third") == 2

        # SIGHUP reloads even an unchanged file.
        scheduler.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: reloads(url, "success") == 2, timeout=5, what="reload on SIGHUP")

        # An invalid edit is refused: logged, counted, shown in /readyz; scheduling goes on.
        volume.publish(INVALID)
        wait_until(lambda: reloads(url, "failure") == 1, what="refused reload")
        status, body = http_get(f"{url}/readyz?verbose")
        assert status != 200
        assert "NoSuchPlugin" in body
        assert "config reload refused" in scheduler.log.read_text()
        kubectl.apply(named_pod("after-invalid", "100m", "third"))
        wait_until(lambda: all_bound(kubectl, "after-invalid", 1), what="still scheduling")
        assert reloads(url, "success") == 2

        # Fixing the file clears /readyz.
        volume.publish(SPREAD_AND_PACK)
        wait_until(lambda: http_get(f"{url}/readyz")[0] == 200, what="ready again")
        assert scheduler.proc.pid == pid
        print(f"third profile's pending pods bound {picked_up:.2f}s after the ..data swap")
