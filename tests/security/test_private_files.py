"""Credentials on a shared machine: the kubeconfig kubesim writes (--kubeconfig-out) goes
through a private temporary file (O_EXCL, 0600) and never through a `PATH.tmp` someone else
created first; `aiosched explain`, `what-if` and `view` refuse to send a token to a loopback
port that another user's process serves (the default 10259 most of all)."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from processes import aiosched, start_cluster, stopping, wait_until

from apimachinery.netutil import listener_uid
from kubesim.private_files import write_private


@pytest.mark.e2e
def test_kubeconfig_out_ignores_a_planted_tmp_file(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    planted = shared / "kc.tmp"  # what another user could create in a shared directory
    planted.write_text("")
    planted.chmod(0o666)
    cluster = start_cluster(tmp_path, 0, 0, "--kubeconfig-out", str(shared / "kc"))
    with stopping(cluster):
        written = shared / "kc"
        assert stat.S_IMODE(written.stat().st_mode) == 0o600
        assert "token:" in written.read_text()
        assert planted.read_text() == ""  # the token never went through it
        assert [p.name for p in shared.iterdir() if p.name.startswith(".kc.")] == []


def test_write_private_is_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        write_private(tmp_path / "secret", b"token")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "secret").stat().st_mode) == 0o600
    assert (tmp_path / "secret").read_bytes() == b"token"


def test_listener_uid_finds_our_own_listener() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert listener_uid("127.0.0.1", port) == os.getuid()
    assert listener_uid("127.0.0.1", port) is None  # closed


@pytest.mark.e2e
@pytest.mark.skipif(os.getuid() != 0, reason="starting another user's listener needs root")
@pytest.mark.parametrize("command", [["explain", "default/x"], ["what-if", "-"]])
def test_another_users_listener_is_refused(command: list[str]) -> None:
    other = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket,sys,time\n"
            "s=socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
            "print(s.getsockname()[1], flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        user=65534,
    )
    try:
        assert other.stdout is not None
        port = int(other.stdout.readline())
        result = subprocess.run(
            [*aiosched(), *command, "--http-address", f"127.0.0.1:{port}", "--token", "t0k3n"],
            capture_output=True,
            text=True,
            timeout=60,
            input='{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}',
        )
    finally:
        other.kill()
        other.wait()
    assert result.returncode == 1, result
    assert (
        f"127.0.0.1:{port} is served by another user's process (uid 65534), not by an "
        "`aiosched run` of yours: pass --http-address with your scheduler's address"
    ) in result.stderr


@pytest.mark.e2e
def test_the_embedded_kubeconfig_is_per_user(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    log = tmp_path / "embedded.log"
    with log.open("wb") as output:
        proc = subprocess.Popen(
            [*aiosched(), "run", "--embedded", "--nodes", "1", "--secure-port=0"],
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "HOME": str(home)},
        )
    expected = home / ".kube" / "aiosched-embedded.kubeconfig"
    try:
        wait_until(
            lambda: "embedded cluster at" in log.read_text(),
            timeout=60,
            what="the embedded cluster",
        )
        assert f"kubectl --kubeconfig {expected} get nodes" in log.read_text()
        assert stat.S_IMODE(expected.stat().st_mode) == 0o600
        assert "token:" in expected.read_text()
    finally:
        proc.terminate()
        proc.wait(20)
