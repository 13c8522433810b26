"""kube-scheduler's secure-serving, authentication and authorization flags beyond the basic
ones (run_flags.py): each is honoured, or refused with the reason and what to do instead, so
that a kube-scheduler manifest's command line never fails as "unrecognized arguments".

Upstream's flags: k8s.io/apiserver/pkg/server/options serving.go (SecureServingOptions),
authentication.go (DelegatingAuthenticationOptions) and authorization.go
(DelegatingAuthorizationOptions), which cmd/kube-scheduler/app/options adds; the TLS names are
component-base/cli/flag/ciphersuites_flag.go's.
"""

from __future__ import annotations

import argparse
import ssl
from typing import Any, Final

from scheduler.app.commands.upstream_flags import RemovedFlag, go_bool, go_duration

#: --tls-min-version's values (component-base's TLSVersion map).
TLS_VERSIONS: Final = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}

#: --tls-cipher-suites' names (Go's crypto/tls, as component-base accepts them) -> OpenSSL's.
#: TLS 1.3's suites are accepted and, as in Go, not configurable: None.
CIPHER_SUITES: Final[dict[str, str | None]] = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_AES_128_GCM_SHA256": None,
    "TLS_AES_256_GCM_SHA384": None,
    "TLS_CHACHA20_POLY1305_SHA256": None,
}

#: Flags kube-scheduler has that aiosched does not do, and why: given, `aiosched run` stops
#: with that line (never "unrecognized arguments").
REFUSED: Final = {
    "--cert-dir": "aiosched keeps its self-signed certificate in memory and writes no file; "
    "give --tls-cert-file and --tls-private-key-file to serve a certificate from files",
    "--tls-sni-cert-key": "aiosched serves one certificate (--tls-cert-file) for every name",
    "--permit-port-sharing": "aiosched binds its secure port alone (no SO_REUSEPORT)",
    "--permit-address-sharing": "aiosched binds its secure port alone (no SO_REUSEADDR)",
    "--client-ca-file": "aiosched's secure port authenticates bearer tokens only (TokenReview), "
    "not client certificates; give callers a token",
    "--requestheader-client-ca-file": "aiosched authenticates bearer tokens only, not an "
    "authenticating proxy's request headers",
    "--requestheader-allowed-names": "aiosched authenticates bearer tokens only, not an "
    "authenticating proxy's request headers",
    "--requestheader-username-headers": "aiosched authenticates bearer tokens only, not an "
    "authenticating proxy's request headers",
    "--requestheader-uid-headers": "aiosched authenticates bearer tokens only, not an "
    "authenticating proxy's request headers",
    "--requestheader-group-headers": "aiosched authenticates bearer tokens only, not an "
    "authenticating proxy's request headers",
    "--requestheader-extra-headers-prefix": "aiosched authenticates bearer tokens only, not an "
    "authenticating proxy's request headers",
    "--authentication-skip-lookup": "aiosched reads no extension-apiserver-authentication "
    "ConfigMap (it authenticates bearer tokens only), so there is no lookup to skip",
    "--authentication-tolerate-lookup-failure": "aiosched reads no "
    "extension-apiserver-authentication ConfigMap, so there is no lookup to fail",
}


class RefusedFlag(RemovedFlag):
    """Stops the command with one line naming the flag and why aiosched does not do it."""

    def reason(self, flag: str) -> str:
        return f"not supported: {REFUSED[flag]}"


def tls_min_version(text: str) -> ssl.TLSVersion:
    if text not in TLS_VERSIONS:
        allowed = ", ".join(TLS_VERSIONS)
        raise argparse.ArgumentTypeError(f"unknown tls version {text!r}; one of {allowed}")
    return TLS_VERSIONS[text]


def cipher_suites(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    for name in names:
        if name not in CIPHER_SUITES:
            # component-base's TLSCipherSuites error
            raise argparse.ArgumentTypeError(f"Cipher suite {name} not supported or doesn't exist")
    return names


def allow_paths(text: str) -> tuple[str, ...]:
    paths = tuple(path.strip() for path in text.split(",") if path.strip())
    for path in paths:
        # authorizerfactory.NewPathAuthorizer: "*" only at the end, as a prefix match
        if "*" in path[:-1]:
            raise argparse.ArgumentTypeError(f"only trailing * allowed in {path!r}")
    return paths


def add_serving_flags(serving: Any) -> None:
    """Adds the flags to `serving`, `aiosched run`'s serving group."""
    serving.add_argument(
        "--tls-min-version",
        type=tls_min_version,
        metavar="VERSION",
        help="lowest TLS version the secure port accepts: VersionTLS12 (default, as Go's "
        "servers) or VersionTLS13; VersionTLS10 and VersionTLS11 as far as the OpenSSL "
        "underneath still allows them",
    )
    serving.add_argument(
        "--tls-cipher-suites",
        type=cipher_suites,
        metavar="SUITES",
        help="comma-separated Go cipher suite names (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, "
        "...) for TLS 1.2; TLS 1.3's suites are accepted and, as in Go, not configurable "
        "(default: OpenSSL's secure defaults)",
    )
    serving.add_argument(
        "--authorization-always-allow-paths",
        type=allow_paths,
        metavar="PATHS",
        help="paths served without authentication or authorization, exact or a prefix ending "
        'in "*" (default /healthz,/readyz,/livez and their checks); "" makes every path ask',
    )
    serving.add_argument(
        "--authentication-token-webhook-cache-ttl",
        type=go_duration,
        metavar="DURATION",
        help="how long a TokenReview's answer is kept (default 10s)",
    )
    serving.add_argument(
        "--authorization-webhook-cache-authorized-ttl",
        type=go_duration,
        metavar="DURATION",
        help="how long an allowing SubjectAccessReview's answer is kept (default 10s)",
    )
    serving.add_argument(
        "--authorization-webhook-cache-unauthorized-ttl",
        type=go_duration,
        metavar="DURATION",
        help="how long a denying SubjectAccessReview's answer is kept (default 10s)",
    )
    serving.add_argument(
        "--disable-http2-serving",
        type=go_bool,
        nargs="?",
        const=True,
        metavar="BOOL",
        help="accepted: aiosched's secure port serves HTTP/1.1 only, never HTTP/2",
    )
    serving.add_argument(
        "--http2-max-streams-per-connection",
        type=int,
        metavar="N",
        help="accepted: aiosched's secure port serves HTTP/1.1 only, so no HTTP/2 stream limit "
        "applies",
    )
    for flag in REFUSED:
        serving.add_argument(flag, action=RefusedFlag, dest=f"refused_{flag[2:]}")


def apply_tls_flags(context: ssl.SSLContext, args: argparse.Namespace) -> ssl.SSLContext:
    """--tls-min-version and --tls-cipher-suites on the secure port's context."""
    if args.tls_min_version is not None:
        context.minimum_version = args.tls_min_version
    if args.tls_cipher_suites:
        openssl = [CIPHER_SUITES[name] for name in args.tls_cipher_suites]
        tls12 = [name for name in openssl if name is not None]
        if tls12:
            context.set_ciphers(":".join(dict.fromkeys(tls12)))
    return context
