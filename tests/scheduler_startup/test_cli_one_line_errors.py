"""Every bad --config, --kubeconfig or --context ends `aiosched run` / `check-config` with one
line naming the file and the problem: no traceback, exit code 1 (issue 16, item 7)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# klog-like log lines (config notes are logged before the client is built); anything else on
# stderr must be the one error line.
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z [IWE] ")
DEEP = "a: " + "[" * 5000 + "]" * 5000 + "\n"
KUBECONFIG = """apiVersion: v1
kind: Config
current-context: a
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: a, context: {cluster: %s, user: u}}]
"""


def aiosched() -> list[str]:
    found = shutil.which("aiosched", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "scheduler.app.cli"]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "deep.yaml").write_text(DEEP)
    (tmp_path / "broken.yaml").write_text("profiles: [\n  - schedulerName: x\n")
    (tmp_path / "kubeconfig").write_text(KUBECONFIG % "c")
    (tmp_path / "list-cluster.kubeconfig").write_text(KUBECONFIG % "[c]")
    return tmp_path


def cases(d: Path) -> dict[tuple[str, ...], str]:
    run = ("run", "--leader-elect=false", "--secure-port=0")
    return {
        (*run, "--config", f"{d}/deep.yaml"): (
            f"aiosched run: {d}/deep.yaml: nested more than 100 levels deep"
        ),
        (*run, "--config", f"{d}/broken.yaml"): (
            f"aiosched run: {d}/broken.yaml: not valid YAML/JSON at line 2, column 3: while "
            "parsing a flow node, expected the node content, but found '-'"
        ),
        ("check-config", f"{d}/deep.yaml"): f"  {d}/deep.yaml: nested more than 100 levels deep",
        (*run, "--kubeconfig", f"{d}/deep.yaml"): (
            f"aiosched run: kubeconfig {d}/deep.yaml is not valid YAML (nested too deeply); fix "
            "it or pass another with --kubeconfig"
        ),
        (*run, "--kubeconfig", f"{d}/kubeconfig", "--context", "nope"): (
            f"aiosched run: kubeconfig {d}/kubeconfig: context 'nope' not found (contexts: a); "
            "pass --context NAME or fix current-context"
        ),
        (*run, "--kubeconfig", f"{d}/list-cluster.kubeconfig"): (
            f"aiosched run: invalid kubeconfig {d}/list-cluster.kubeconfig: unhashable type: 'list'"
        ),
    }


def test_bad_files_and_contexts_end_in_one_line(files: Path) -> None:
    expected = cases(files)
    running = {
        argv: subprocess.Popen(
            [*aiosched(), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for argv in expected
    }
    for argv, proc in running.items():
        _, stderr = proc.communicate(timeout=60)
        assert "Traceback" not in stderr, (argv, stderr)
        assert proc.returncode == 1, (argv, stderr)
        lines = [line for line in stderr.splitlines() if not LOG_LINE.match(line)]
        if argv[0] == "check-config":  # its form: a header, then one line per error
            assert lines == [
                f"{files}/deep.yaml: invalid KubeSchedulerConfiguration (1 errors)",
                expected[argv],
            ]
        else:
            assert lines == [expected[argv]], argv
