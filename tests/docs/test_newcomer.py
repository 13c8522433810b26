"""A newcomer's first minutes, from a copy of the repository: the README's commands in order.

`python3 dev.py run` in a fresh copy (what `git clone` gives: tracked files and new ones not
ignored, no .venv), which creates .venv and starts the demo; then, in a second shell, the
README's ```sh blocks in order, as doc_blocks runs them. The demo gets its own kubeconfig path
and a free port (`--kubeconfig-out`, `--http-address 127.0.0.1:0`, added to the README's
command) so that it cannot meet a demo someone else runs on this machine."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from doc_blocks import REPO, parse, script

#: Creating .venv and installing the project: about a minute on an idle 2-core machine.
INSTALL_AND_START_TIMEOUT = 600
BLOCKS_TIMEOUT = 240

pytestmark = pytest.mark.e2e


def _copy_of_the_repository(destination: Path) -> None:
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():  # a file deleted in the working tree is still listed as cached
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def test_the_readme_s_commands_work_from_a_fresh_copy(tmp_path: Path) -> None:
    if shutil.which("kubectl") is None or shutil.which("git") is None:
        pytest.skip("needs kubectl and git")
    copy = tmp_path / "aiosched"
    _copy_of_the_repository(copy)
    assert not (copy / ".venv").exists()
    kubeconfig = tmp_path / "demo.kubeconfig"
    log = tmp_path / "dev-run.log"
    # a newcomer's python3, not this test's virtualenv
    python = shutil.which("python3") or sys.executable
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    with log.open("wb") as out:
        demo = subprocess.Popen(
            [
                python,
                "dev.py",
                "run",
                "--kubeconfig-out",
                str(kubeconfig),
                "--http-address",
                "127.0.0.1:0",
            ],
            cwd=copy,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        address = _wait_for_the_demo(demo, log)
        document = parse(REPO / "README.md")
        text = script(document, kubeconfig, address, tmp_path, root=copy)
        (tmp_path / "home").mkdir()
        result = subprocess.run(
            ["bash", "-c", text],
            capture_output=True,
            text=True,
            env=env,
            timeout=BLOCKS_TIMEOUT,
            start_new_session=True,
        )
        assert result.returncode == 0, (
            f"the README's commands failed after `python3 dev.py run` (exit "
            f"{result.returncode}):\n{result.stderr[-4000:]}\n--- stdout\n{result.stdout[-2000:]}"
        )
        assert (copy / ".venv" / "bin" / "aiosched").exists()
    finally:
        os.killpg(demo.pid, signal.SIGTERM)
        try:
            demo.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)


def _wait_for_the_demo(demo: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + INSTALL_AND_START_TIMEOUT
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        match = re.search(r"serving /metrics, .+? on http://([\d.]+:\d+)", text)
        if match:
            return match.group(1)
        if demo.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"`python3 dev.py run` did not start the demo:\n{log.read_text()[-4000:]}")
