"""Start-up checks whose failures end `aiosched run` with one line that says what to do next.

Once running, the scheduler rides out an API server that goes away (informers relist, bindings
retry); at start, an address that answers nothing is far more likely a wrong --master or
kubeconfig than a restart, so it is reported at once instead of retried in silence.
"""

from __future__ import annotations

import asyncio
import errno
import ssl

from scheduler.client.rest import ApiError, KubeClient

#: How long the first request to the API server may take at start-up.
API_SERVER_TIMEOUT = 10.0


class StartupError(Exception):
    """`aiosched run` cannot start; the message is one line that says what to do next."""


async def check_api_server(client: KubeClient, timeout: float = API_SERVER_TIMEOUT) -> None:
    """GET /version once (any authenticated user may); raise StartupError if the API server
    cannot be reached, its certificate is not trusted, or it refuses our credentials."""
    where = client.host or "(no address)"
    hint = "check --master, --kubeconfig or clientConnection.kubeconfig"
    try:
        async with asyncio.timeout(timeout):
            status, _ = await client.request("GET", "/version")
    except TimeoutError:
        raise StartupError(
            f"the API server at {where} did not answer within {timeout:g}s; {hint}, and that "
            "it is reachable from here"
        ) from None
    except ApiError as exc:
        if exc.untrusted_certificate:
            raise StartupError(
                f"cannot verify the TLS certificate of the API server at {where} "
                f"({exc.reason}); check certificate-authority in the kubeconfig"
            ) from None
        raise StartupError(
            f"cannot reach the API server at {where} ({exc.reason}); {hint}, and "
            "that the API server is running"
        ) from None
    if status == 401:
        raise StartupError(
            f"the API server at {where} refused our credentials (401 Unauthorized); check the "
            "user (token or client certificate) in the kubeconfig, or the service account"
        )


def listen_error(host: str, port: int, exc: OSError) -> StartupError:
    """The one line for a failed bind of the HTTP endpoints."""
    where = f"cannot serve /metrics and /healthz on {host}:{port}"
    code = exc.errno
    if code == errno.EADDRINUSE:
        return StartupError(
            f"{where}: the port is already in use (another aiosched or kube-scheduler?); stop "
            "that process or choose another port with --secure-port (0 picks a free one)"
        )
    if code == errno.EADDRNOTAVAIL:
        return StartupError(
            f"{where}: {host} is not an address of this machine; fix --bind-address"
        )
    if code == errno.EACCES:
        return StartupError(
            f"{where}: permission denied (ports below 1024 need privileges); choose another "
            "port with --secure-port"
        )
    reason = exc.strerror or " ".join(str(exc).split())
    return StartupError(f"{where}: {reason}; check --bind-address and --secure-port")


def load_serving_certificate(cert_file: str, key_file: str) -> ssl.SSLContext:
    """The TLS context for --tls-cert-file / --tls-private-key-file (StartupError if unusable)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert_file, key_file)
    except FileNotFoundError as exc:
        raise StartupError(
            f"cannot read {exc.filename or cert_file}: no such file; fix --tls-cert-file / "
            "--tls-private-key-file"
        ) from None
    except (ssl.SSLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise StartupError(
            f"cannot use --tls-cert-file {cert_file} with --tls-private-key-file {key_file}: "
            f"{reason}; give a PEM certificate and the PEM key that matches it"
        ) from None
    return context
