"""bench/side_by_side.sh, the prepared kube-scheduler vs aiosched comparison on a real
kube-apiserver: it parses, documents its inputs, refuses missing ones, and in --dry-run shows
the runs it would make, with configurations the schedulers accept."""

from __future__ import annotations

import lzma
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench.processes import aiosched_command

SCRIPT = Path(__file__).parents[2] / "bench" / "side_by_side.sh"


def _carried(tmp_path: Path, compressed: bool = False) -> dict[str, str]:
    """What the script needs carried: binaries, wheels and the referee scripts (stand-ins).
    `compressed`: the binaries as NAME.xz, and no kubectl, as bench/device_carry.sh packs them."""
    binaries, wheels, scripts = tmp_path / "bin", tmp_path / "wheels", tmp_path / "referee"
    for folder in (binaries, wheels, scripts):
        folder.mkdir()
    program = b"#!/bin/sh\nexit 0\n"
    for name in ("etcd", "kube-apiserver", "kube-scheduler", "kubectl"):
        if compressed:
            if name != "kubectl":
                (binaries / f"{name}.xz").write_bytes(lzma.compress(program))
            continue
        (binaries / name).write_bytes(program)
        (binaries / name).chmod(0o755)
    (wheels / "aiosched-0.1.0-py3-none-any.whl").write_bytes(b"")
    for name in ("up.sh", "down.sh", "sched.sh"):
        (scripts / name).write_text("#!/usr/bin/env bash\nexit 0\n")
    return {
        "REFEREE_BIN": str(binaries),
        "AIOSCHED_WHEELS": str(wheels),
        "REFEREE_SCRIPTS": str(scripts),
        "OUT": str(tmp_path / "out"),
    }


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v for k, v in os.environ.items() if k not in ("REFEREE_BIN", "AIOSCHED_WHEELS")
    }
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env={**environment, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_script_parses() -> None:
    check = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr


def test_help_names_every_input() -> None:
    proc = _run("--help")
    assert proc.returncode == 0
    for name in ("REFEREE_BIN", "AIOSCHED_WHEELS", "REFEREE_SCRIPTS", "WORKLOAD", "OUT", "RUNS"):
        assert name in proc.stdout


def test_missing_inputs_are_named() -> None:
    proc = _run()
    assert proc.returncode == 2
    assert "REFEREE_BIN" in proc.stderr and "AIOSCHED_WHEELS" in proc.stderr
    assert _run("--bogus").returncode == 2


def test_an_unknown_run_is_refused(tmp_path: Path) -> None:
    proc = _run("--dry-run", env={**_carried(tmp_path), "RUNS": "aiosched:fast"})
    assert proc.returncode == 2 and "aiosched:fast" in proc.stderr


def test_dry_run_shows_four_runs_each_on_a_fresh_control_plane(tmp_path: Path) -> None:
    env = _carried(tmp_path)
    proc = _run("--dry-run", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    wheels = env["AIOSCHED_WHEELS"]
    assert any(
        "pip install" in line and f"--no-index --find-links {wheels}" in line for line in lines
    )
    benches = [line for line in lines if " bench SchedulingBasic/5000Nodes_10000Pods " in line]
    assert len(benches) == 4
    order = [
        ("kube-scheduler", "default"),
        ("aiosched", "default"),
        ("kube-scheduler", "null"),
        ("aiosched", "null"),
    ]
    for line, (scheduler, profile) in zip(benches, order, strict=True):
        assert f"--label {scheduler}" in line
        assert f"{profile}-config.yaml" in line and f"{scheduler}-{profile}.json" in line
        assert "--kubeconfig" in line
    assert sum("up.sh" in line for line in lines) == 4  # a fresh etcd for every run
    assert "ServiceAccount" in next(line for line in lines if "up.sh" in line)


def test_another_build_of_aiosched_runs_under_the_same_bench(tmp_path: Path) -> None:
    env = _carried(tmp_path)
    other = "env PYTHONPATH=/src/other-checkout /opt/aiosched"
    proc = _run("--dry-run", env={**env, "RUNS": "aiosched:default", "AIOSCHED_RUN": other})
    assert proc.returncode == 0, proc.stderr
    (bench,) = [line for line in proc.stdout.splitlines() if " bench " in line]
    assert bench.split()[1] == str(Path(env["OUT"]) / "venv" / "bin" / "aiosched")
    assert "--scheduler-command env\\ PYTHONPATH=/src/other-checkout\\ /opt/aiosched\\ run" in bench


@pytest.mark.parametrize(
    ("profile", "plugins"),
    [
        ("null", ["queueSort:", "- PrioritySort", "bind:", "- DefaultBinder"]),
        ("default", ["filter:", "- NodeResourcesFit", "score:", "bind:"]),
    ],
)
def test_its_configurations_are_what_the_scheduler_accepts(
    tmp_path: Path, profile: str, plugins: list[str]
) -> None:
    env = _carried(tmp_path)
    assert _run("--dry-run", env=env).returncode == 0
    config = Path(env["OUT"]) / f"{profile}-config.yaml"
    # kube-scheduler ignores --kubeconfig when --config is given: the config must name it
    kubeconfig = yaml.safe_load(config.read_text())["clientConnection"]["kubeconfig"]
    assert kubeconfig == str(Path(env["OUT"]) / "referee" / "admin.kubeconfig")
    check = subprocess.run(
        [*aiosched_command(), "check-config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    resolved = check.stdout[check.stdout.index("profiles:") :]
    assert all(p in resolved for p in plugins)
    assert "qps: 5000" in check.stdout and "leaderElect: false" in check.stdout
    if profile == "null":
        assert "filter:" not in resolved and "score:" not in resolved


def test_compressed_binaries_without_kubectl_are_taken(tmp_path: Path) -> None:
    env = _carried(tmp_path, compressed=True)
    proc = _run("--dry-run", env={**env, "VENV_SYSTEM_SITE_PACKAGES": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "-m venv --system-site-packages" in proc.stdout
    assert (Path(env["OUT"]) / "bin" / "kubectl").is_file()  # the readiness stand-in


def test_a_missing_binary_is_named(tmp_path: Path) -> None:
    env = _carried(tmp_path, compressed=True)
    (Path(env["REFEREE_BIN"]) / "etcd.xz").unlink()
    proc = _run("--dry-run", env=env)
    assert proc.returncode == 2 and "etcd" in proc.stderr


def test_the_kubectl_stand_in_asks_a_real_api_server_for_readyz(tmp_path: Path) -> None:
    """What up.sh asks kubectl, answered over TLS with the kubeconfig's CA and token."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "e2e_scheduler"))
    from processes import start_cluster

    env = _carried(tmp_path, compressed=True)
    assert _run("--dry-run", env=env).returncode == 0
    stand_in = Path(env["OUT"]) / "bin" / "kubectl"
    cluster = start_cluster(tmp_path)
    try:
        assert cluster.url.startswith("https://")
        kubeconfig = str(tmp_path / "kubeconfig")
        ask = [sys.executable, str(stand_in), "--kubeconfig", kubeconfig, "get", "--raw"]
        ready = _ask(*ask, "/readyz")
        assert ready.returncode == 0 and ready.stdout.strip() == "ok", ready.stderr
        missing = _ask(*ask, "/no-such-path")
        assert missing.returncode != 0 and "404" in missing.stderr
    finally:
        cluster.stop()
    other = _ask(sys.executable, str(stand_in), "get", "pods")
    assert other.returncode != 0 and "only --kubeconfig KC get --raw PATH" in other.stderr


def _ask(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


CARRY = SCRIPT.parent / "device_carry.sh"


def test_the_packing_script_documents_and_checks_its_inputs(tmp_path: Path) -> None:
    """bench/device_carry.sh: what it needs is in --help, and a missing input is named."""
    assert _ask("bash", "-n", str(CARRY)).returncode == 0
    usage = _ask("bash", str(CARRY), "--help")
    assert usage.returncode == 0
    for name in ("REFEREE_BIN", "REFEREE_SCRIPTS", "DEST", "TARGET_PYTHON", "TARGET_HAS"):
        assert name in usage.stdout
    environment = {k: v for k, v in os.environ.items() if k != "REFEREE_BIN"}
    unset = subprocess.run(
        ["bash", str(CARRY)], env=environment, capture_output=True, text=True, check=False
    )
    assert unset.returncode == 2 and "REFEREE_BIN" in unset.stderr
    empty = subprocess.run(
        ["bash", str(CARRY)],
        env={**environment, "REFEREE_BIN": str(tmp_path), "DEST": str(tmp_path / "carry")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert empty.returncode == 2 and "etcd" in empty.stderr
    assert not (tmp_path / "carry").exists()  # nothing written before the inputs are there
