"""kube-scheduler's secure-serving, authentication and authorization flags on `aiosched run`:
every one upstream has is honoured or refused with its reason, never "unrecognized".

The flag lists are upstream's (k8s.io/apiserver/pkg/server/options serving.go, authentication.go,
authorization.go, v1.36: the options cmd/kube-scheduler/app/options adds)."""

from __future__ import annotations

import argparse
import ssl

import pytest

from scheduler.app.cli import build_parser
from scheduler.app.commands.run import command_line_flags, serving_context
from scheduler.app.commands.serving_flags import REFUSED
from scheduler.server.delegated_auth import DelegatedAuth, always_allowed

#: (flag, a value kube-scheduler accepts for it)
UPSTREAM_FLAGS = [
    ("--bind-address", "0.0.0.0"),
    ("--secure-port", "10259"),
    ("--disable-http2-serving", "true"),
    ("--cert-dir", "/var/run/kubernetes"),
    ("--tls-cert-file", "c.pem"),
    ("--tls-private-key-file", "k.pem"),
    ("--tls-cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
    ("--tls-min-version", "VersionTLS12"),
    ("--tls-sni-cert-key", "c.pem,k.pem"),
    ("--http2-max-streams-per-connection", "1000"),
    ("--permit-port-sharing", "true"),
    ("--permit-address-sharing", "true"),
    ("--requestheader-username-headers", "X-Remote-User"),
    ("--requestheader-uid-headers", "X-Remote-Uid"),
    ("--requestheader-group-headers", "X-Remote-Group"),
    ("--requestheader-extra-headers-prefix", "X-Remote-Extra-"),
    ("--requestheader-client-ca-file", "ca.pem"),
    ("--requestheader-allowed-names", "front"),
    ("--client-ca-file", "ca.pem"),
    ("--authentication-kubeconfig", "a.kubeconfig"),
    ("--authentication-token-webhook-cache-ttl", "10s"),
    ("--authentication-skip-lookup", "true"),
    ("--authentication-tolerate-lookup-failure", "true"),
    ("--authorization-kubeconfig", "a.kubeconfig"),
    ("--authorization-webhook-cache-authorized-ttl", "10s"),
    ("--authorization-webhook-cache-unauthorized-ttl", "10s"),
    ("--authorization-always-allow-paths", "/healthz,/readyz,/livez,/metrics"),
]


def parse(*argv: str) -> argparse.Namespace:
    parser, _ = build_parser()
    return parser.parse_args(["run", *argv])


@pytest.mark.parametrize(("flag", "value"), UPSTREAM_FLAGS)
def test_every_upstream_serving_flag_is_honoured_or_refused_with_a_reason(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if flag not in REFUSED:
        parse(f"{flag}={value}")
        return
    with pytest.raises(SystemExit) as stop:
        parse(f"{flag}={value}")
    assert stop.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == f"aiosched run: {flag}: not supported: {REFUSED[flag]}"


def test_tls_min_version_and_cipher_suites_shape_the_secure_port() -> None:
    args = parse("--tls-min-version=VersionTLS13")
    context = serving_context(args, "127.0.0.1")
    assert isinstance(context, ssl.SSLContext)
    assert context.minimum_version == ssl.TLSVersion.TLSv1_3

    args = parse("--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256")
    context = serving_context(args, "127.0.0.1")
    assert context is not None
    tls12 = {c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert tls12 == {"ECDHE-RSA-AES256-GCM-SHA384"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--tls-min-version=TLS12",), "unknown tls version 'TLS12'"),
        (("--tls-cipher-suites=TLS_FOO",), "Cipher suite TLS_FOO not supported or doesn't exist"),
        (("--authorization-always-allow-paths=/a*b",), "only trailing * allowed in '/a*b'"),
    ],
)
def test_bad_values_name_the_flag(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse(*argv)
    error = capsys.readouterr().err
    assert argv[0].split("=")[0] in error and message in error


def test_always_allow_paths_replace_the_health_paths_with_upstream_s_rule() -> None:
    args = parse("--authorization-always-allow-paths=/healthz,/metrics*")
    paths = args.authorization_always_allow_paths
    allowed = [
        p
        for p in (
            "/healthz",
            "/healthz/ping",
            "/livez",
            "/metrics",
            "/metrics/resources",
            "/debug/view",
        )
        if always_allowed(p, paths)
    ]

    assert allowed == ["/healthz", "/metrics", "/metrics/resources"]


class _Denying:
    def __init__(self) -> None:
        self.reviews = 0

    async def request(self, method: str, path: str, *, body: object = None) -> tuple[int, object]:
        self.reviews += 1
        return 201, {"status": {"allowed": False}}


async def test_denials_are_kept_for_the_unauthorized_ttl() -> None:
    from scheduler.server.delegated_auth import User

    now = [0.0]
    api = _Denying()
    auth = DelegatedAuth(api, api, ttl=10, denied_ttl=2, clock=lambda: now[0])
    user = User("fresh")
    await auth.authorize(user, "get", "/metrics")
    now[0] = 1.9
    await auth.authorize(user, "get", "/metrics")
    assert api.reviews == 1
    now[0] = 2.1
    await auth.authorize(user, "get", "/metrics")
    assert api.reviews == 2


def test_flagz_lists_neither_removed_nor_refused_flags() -> None:
    flags = command_line_flags(parse())

    assert "tls-min-version" in flags and "authorization-always-allow-paths" in flags
    assert not {flag[2:] for flag in REFUSED} & set(flags)
