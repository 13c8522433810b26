"""`python3 dev.py run ARGS`: the local demo unless ARGS name a cluster of their own.

The README's web-view command, `python3 dev.py run --otel-exporter console ...`, used to fail
with `no cluster to connect to`: any argument replaced the demo's flags instead of adding to
them."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _dev() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dev", REPO / "dev.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("given", "runs"),
    [
        ([], ["--embedded", "--insecure-http"]),
        (
            ["--otel-exporter", "console", "--trace-ui-url", "http://x/{trace_id}"],
            [
                "--embedded",
                "--insecure-http",
                "--otel-exporter",
                "console",
                "--trace-ui-url",
                "http://x/{trace_id}",
            ],
        ),
        (
            ["--nodes", "6", "--zones", "3"],
            ["--embedded", "--insecure-http", "--nodes", "6", "--zones", "3"],
        ),
        (["--embedded", "--nodes", "2"], ["--embedded", "--nodes", "2"]),
        (["--kubeconfig", "k.yaml"], ["--kubeconfig", "k.yaml"]),
        (["--kubeconfig=k.yaml", "-v", "2"], ["--kubeconfig=k.yaml", "-v", "2"]),
        (["--master", "https://10.0.0.1"], ["--master", "https://10.0.0.1"]),
        # a TLS setting means the secure port is wanted: no --insecure-http beside it
        (
            ["--tls-cert-file", "c.pem", "--tls-private-key-file", "k.pem"],
            ["--embedded", "--tls-cert-file", "c.pem", "--tls-private-key-file", "k.pem"],
        ),
        (["--insecure-http"], ["--embedded", "--insecure-http"]),
    ],
)
def test_dev_run_adds_the_demo_flags_unless_a_cluster_is_named(
    given: list[str], runs: list[str]
) -> None:
    assert _dev().run_arguments(given) == runs


@pytest.mark.parametrize(
    ("given", "workers", "runs"),
    [
        ([], "", ["-n", "CORES", "--dist", "loadfile"]),
        (["tests/kubesim", "-x"], "3", ["-n", "3", "--dist", "loadfile", "tests/kubesim", "-x"]),
        (["tests/kubesim"], "0", ["tests/kubesim"]),
        (["tests/kubesim"], "1", ["tests/kubesim"]),
        # the caller chose: dev.py adds nothing
        (["-n", "4"], "3", ["-n", "4"]),
        (["--numprocesses=4"], "", ["--numprocesses=4"]),
        (["-p", "no:xdist", "-x"], "3", ["-p", "no:xdist", "-x"]),
    ],
)
def test_dev_test_spreads_files_over_workers_unless_told_otherwise(
    given: list[str], workers: str, runs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dev = _dev()
    monkeypatch.setenv("AIOSCHED_TEST_WORKERS", workers)
    cores = dev._usable_cores()
    expected = [str(cores) if arg == "CORES" else arg for arg in runs]
    if cores <= 1 and not workers and "CORES" in runs:
        expected = list(given)
    assert dev.pytest_arguments(given) == expected


def test_a_worker_count_that_is_not_a_number_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIOSCHED_TEST_WORKERS", "many")
    with pytest.raises(SystemExit, match="AIOSCHED_TEST_WORKERS='many' is not a number"):
        _dev().pytest_arguments([])
