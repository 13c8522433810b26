"""kube-scheduler's flags on `aiosched run`: parsing, what they override, what they refuse."""

from __future__ import annotations

import argparse
import ssl
from pathlib import Path

import pytest

from profiles.api import load_config
from profiles.errors import ConfigInvalidError
from scheduler.app.cli import build_parser
from scheduler.app.commands.run import (
    DEFAULT_HTTP_ADDRESS,
    client_settings,
    config_overrides,
    listen_address,
    serving_context,
    serving_note,
)
from scheduler.app.commands.upstream_flags import REMOVED, go_bool
from scheduler.app.startup import StartupError
from scheduler.cycle.profile_set import registry_for_config

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
REGISTRY = registry_for_config()


def parse(*argv: str) -> argparse.Namespace:
    parser, _ = build_parser()
    return parser.parse_args(["run", *argv])


@pytest.mark.parametrize(
    ("text", "value"),
    [("true", True), ("T", True), ("1", True), ("False", False), ("f", False), ("0", False)],
)
def test_booleans_as_go_parses_them(text: str, value: bool) -> None:
    assert go_bool(text) is value
    assert parse(f"--leader-elect={text}").leader_elect is value


def test_bare_boolean_flag_means_true() -> None:
    assert parse("--leader-elect").leader_elect is True
    assert parse().leader_elect is None  # not given: the configuration decides


def test_leader_elect_flags_override_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        HEADER + "leaderElection: {leaderElect: false, resourceName: from-file, "
        "resourceNamespace: ns-from-file, leaseDuration: 30s}\n"
    )
    args = parse(
        "--config", str(path),
        "--leader-elect=true",
        "--leader-elect-lease-duration=7s",
        "--leader-elect-renew-deadline", "5s",
        "--leader-elect-retry-period=1s",
        "--leader-elect-resource-lock=leases",
        "--leader-elect-resource-name=second-scheduler",
    )  # fmt: skip
    le = load_config(path, REGISTRY, config_overrides(args, None)[0]).leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (
        True, 7.0, 5.0, 1.0,
    )  # fmt: skip
    assert (le.resource_lock, le.resource_name) == ("leases", "second-scheduler")
    assert le.resource_namespace == "ns-from-file"  # not given on the command line


def test_flag_values_are_validated_as_the_field_and_named() -> None:
    args = parse("--leader-elect-lease-duration=5s", "--leader-elect-resource-lock=endpoints")
    with pytest.raises(ConfigInvalidError) as error:
        load_config(None, REGISTRY, config_overrides(args, None)[0])
    message = str(error.value)
    assert (
        "<defaults>: leaderElection.leaseDuration (set by --leader-elect-lease-duration): must be "
        "greater than renewDeadline (10.0s), got 5.0s"
    ) in message
    assert (
        'leaderElection.resourceLock (set by --leader-elect-resource-lock): must be "leases"'
    ) in message


@pytest.mark.parametrize("flag", sorted(REMOVED))
def test_removed_flags_stop_with_one_line(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        parse(f"{flag}=x")
    assert stop.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"aiosched run: {flag}: kube-scheduler removed it in v1.")
    assert "; use" in lines[0] or "--config" in lines[0]


def test_removed_flag_without_a_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse("--use-legacy-policy-config")
    assert capsys.readouterr().err == (
        "aiosched run: --use-legacy-policy-config: kube-scheduler removed it in v1.23 with the "
        "Policy API; write a KubeSchedulerConfiguration (profiles, plugins) and pass it with "
        "--config\n"
    )


def test_deprecated_client_flags_apply_only_without_config(tmp_path: Path) -> None:
    args = parse("--kube-api-qps=80", "--kube-api-burst=90", "--profiling=false")
    overrides, warnings = config_overrides(args, None)
    cc = load_config(None, REGISTRY, overrides).client_connection
    assert (cc.qps, cc.burst) == (80.0, 90)
    assert warnings[0] == (
        "--kube-api-qps is deprecated in kube-scheduler; set clientConnection.qps in a --config "
        "file instead"
    )
    path = tmp_path / "config.yaml"
    path.write_text(HEADER)
    args = parse("--config", str(path), "--kube-api-qps=80")
    overrides, warnings = config_overrides(args, None)
    assert overrides == ()
    assert warnings == [
        "--kube-api-qps is deprecated in kube-scheduler and ignored when --config is given, as "
        "there; set clientConnection.qps in the --config file instead"
    ]
    assert load_config(path, REGISTRY, overrides).client_connection.qps == 50.0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ("--kube-api-content-type=application/vnd.kubernetes.protobuf",),
            "clientConnection.contentType (set by --kube-api-content-type): aiosched's client "
            "sends application/json only",
        ),
        (
            ("--profiling",),
            "enableProfiling (set by --profiling): aiosched serves no profiling endpoints",
        ),
    ],
)
def test_deprecated_flags_with_values_aiosched_cannot_honour(
    argv: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ConfigInvalidError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_config(None, REGISTRY, config_overrides(parse(*argv), None)[0])


def test_kubeconfig_flag_wins_over_client_connection(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(HEADER + "clientConnection: {kubeconfig: /from/the/file}\n")
    args = parse("--config", str(path))
    config = load_config(path, REGISTRY, config_overrides(args, None)[0])
    assert client_settings(config, None, None).kubeconfig == "/from/the/file"
    args = parse("--config", str(path), "--kubeconfig", "/from/the/flag")
    config = load_config(path, REGISTRY, config_overrides(args, args.kubeconfig)[0])
    assert client_settings(config, None, "https://m:6443").kubeconfig == "/from/the/flag"
    assert client_settings(config, None, "https://m:6443").master == "https://m:6443"


@pytest.mark.parametrize(
    ("argv", "address"),
    [
        ((), ("127.0.0.1", 10259)),
        (("--bind-address=0.0.0.0",), ("0.0.0.0", 10259)),
        (("--secure-port=0",), ("127.0.0.1", 0)),
        (("--bind-address", "::1", "--secure-port", "9443"), ("::1", 9443)),
        (("--http-address", "0.0.0.0:8080"), ("0.0.0.0", 8080)),
        (("--http-address", "[::1]:8080"), ("::1", 8080)),
    ],
)
def test_listen_address(argv: tuple[str, ...], address: tuple[str, int]) -> None:
    assert listen_address(parse(*argv)) == address
    assert DEFAULT_HTTP_ADDRESS == "127.0.0.1:10259"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ("--http-address", "0.0.0.0:1", "--secure-port", "2"),
            "--http-address is --bind-address and --secure-port in one; give either it or them, "
            "not both",
        ),
        (("--http-address", "nowhere"), "--http-address must be HOST:PORT, got 'nowhere'"),
        (("--secure-port", "70000"), "--secure-port must be in 0..65535, got 70000"),
    ],
)
def test_listen_address_errors(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(StartupError) as error:
        listen_address(parse(*argv))
    assert str(error.value) == message


def test_logging_flags() -> None:
    args = parse("-v=4", "--logging-format=json")
    assert (args.verbosity, args.log_format) == (4, "json")
    args = parse("--v", "2", "--log-format", "json")  # aiosched's older spelling
    assert (args.verbosity, args.log_format) == (2, "json")


def test_authentication_kubeconfigs_are_used_and_unused_only_with_insecure_http() -> None:
    given = ("--authentication-kubeconfig=/etc/k/scheduler.conf", "--authorization-kubeconfig=x")

    assert config_overrides(parse(*given), None)[1] == []
    assert config_overrides(parse(*given, "--insecure-http"), None)[1] == [
        f"{flag} is not used: --insecure-http checks no tokens"
        for flag in ("--authentication-kubeconfig", "--authorization-kubeconfig")
    ]


def test_the_secure_port_serves_tls_unless_insecure_http() -> None:
    generated = serving_context(parse(), "127.0.0.1")

    assert isinstance(generated, ssl.SSLContext)
    assert serving_context(parse("--insecure-http"), "127.0.0.1") is None
    with pytest.raises(StartupError) as both:
        serving_context(
            parse("--insecure-http", "--tls-cert-file=c", "--tls-private-key-file=k"), "127.0.0.1"
        )
    assert str(both.value) == (
        "--insecure-http serves plain HTTP: drop it to serve HTTPS with --tls-cert-file and "
        "--tls-private-key-file"
    )
    with pytest.raises(StartupError, match="--tls-cert-file needs --tls-private-key-file"):
        serving_context(parse("--tls-cert-file=c"), "127.0.0.1")


@pytest.mark.parametrize(
    ("argv", "host", "note"),
    [
        (
            (),
            "127.0.0.1",
            "TLS, self-signed certificate; /metrics and /debug need a bearer "
            "token the API server authenticates and authorizes",
        ),
        (
            ("--tls-cert-file=c",),
            "0.0.0.0",
            "TLS, given certificate; /metrics and /debug need a "
            "bearer token the API server authenticates and authorizes",
        ),
        (("--insecure-http",), "127.0.0.1", "plain HTTP, no authentication: --insecure-http"),
        (
            ("--insecure-http",),
            "0.0.0.0",
            "plain HTTP, no authentication: --insecure-http; "
            "0.0.0.0 is not loopback: anyone reaching it",
        ),
    ],
)
def test_the_start_up_line_says_how_the_endpoints_are_served(
    argv: tuple[str, ...], host: str, note: str
) -> None:
    assert serving_note(parse(*argv), host) == note


def test_help_says_how_the_endpoints_are_guarded(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse("--help")
    text = " ".join(capsys.readouterr().out.split())
    assert "need a bearer token that the API server authenticates (TokenReview)" in text
    assert "--insecure-http serves plain HTTP without any check" in text
    assert "--leader-elect-resource-namespace" in text
