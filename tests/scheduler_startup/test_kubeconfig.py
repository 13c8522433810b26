"""Where the client configuration comes from, and the one line that says what is wrong with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.client.kubeconfig import InCluster, KubeconfigError, resolve_configuration

GOOD = """apiVersion: v1
kind: Config
current-context: c
clusters: [{name: k, cluster: {server: 'https://api.example:6443'}}]
users: [{name: u, user: {token: secret}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
"""


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            None,
            "cannot read kubeconfig {path}: No such file or directory; pass --kubeconfig PATH "
            "(or set clientConnection.kubeconfig), or --master URL",
        ),
        (
            "clusters: [oops\n",
            "kubeconfig {path} is not valid YAML at line 2 (expected ',' or ']', but got "
            "'<stream end>'); fix it or pass another with --kubeconfig",
        ),
        (
            "",
            "kubeconfig {path} is not a kubeconfig (expected a mapping with clusters, users, "
            "contexts and current-context)",
        ),
        (
            GOOD.replace("current-context: c\n", ""),
            "kubeconfig {path} has no current-context (contexts: c); run `kubectl config "
            "use-context NAME --kubeconfig {path}` or pass --context NAME",
        ),
        (
            GOOD.replace("current-context: c", "current-context: gone"),
            "kubeconfig {path}: context 'gone' not found (contexts: c); pass --context NAME or "
            "fix current-context",
        ),
        (
            GOOD.replace("{server: 'https://api.example:6443'}", "{}"),
            "kubeconfig {path}: cluster 'k' has no server; set it or pass --master URL",
        ),
        (
            GOOD.replace("{token: secret}", "{client-certificate: /nonexistent/crt}"),
            "invalid kubeconfig {path}: File does not exists: /nonexistent/crt",
        ),
    ],
    ids=[
        "missing",
        "bad-yaml",
        "empty",
        "no-current-context",
        "unknown-context",
        "no-server",
        "missing-cert",
    ],
)
async def test_invalid_kubeconfig_is_one_line(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "kubeconfig"
    if content is not None:
        path.write_text(content)
    with pytest.raises(KubeconfigError) as error:
        await resolve_configuration(str(path))
    assert str(error.value) == expected.format(path=path)


async def test_kubeconfig_and_master_override(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(GOOD)
    configuration = await resolve_configuration(str(path))
    assert configuration.host == "https://api.example:6443"
    assert configuration.api_key["BearerToken"].endswith("secret")
    # --master replaces the server but keeps the kubeconfig's credentials (clientcmd's override).
    configuration = await resolve_configuration(str(path), master="https://other.example:443/")
    assert configuration.host == "https://other.example:443"
    assert configuration.api_key["BearerToken"].endswith("secret")
    # A cluster without server is fine when --master says where to go.
    path.write_text(GOOD.replace("{server: 'https://api.example:6443'}", "{}"))
    configuration = await resolve_configuration(str(path), master="https://other.example")
    assert configuration.host == "https://other.example"


async def test_master_alone_means_that_url_without_credentials() -> None:
    configuration = await resolve_configuration(None, master="http://127.0.0.1:8080")
    assert configuration.host == "http://127.0.0.1:8080"
    assert not configuration.api_key


async def test_in_cluster_service_account(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    place = InCluster(
        environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
        token_file=str(tmp_path / "token"),
        ca_file=str(tmp_path / "ca.crt"),
    )
    configuration = await resolve_configuration(None, in_cluster=place)
    assert configuration.host == "https://10.0.0.1:443"
    assert configuration.ssl_ca_cert == str(tmp_path / "ca.crt")
    assert configuration.api_key["BearerToken"] == "Bearer sa-token"


async def test_outside_a_pod_falls_back_to_kubeconfig_env(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(GOOD)
    place = InCluster(environ={"KUBECONFIG": str(path)}, token_file="/nonexistent/token")
    configuration = await resolve_configuration(None, in_cluster=place)
    assert configuration.host == "https://api.example:6443"


async def test_nothing_to_connect_to(tmp_path: Path) -> None:
    missing = tmp_path / "none"
    place = InCluster(environ={"KUBECONFIG": str(missing)}, token_file="/nonexistent/token")
    with pytest.raises(KubeconfigError) as error:
        await resolve_configuration(None, in_cluster=place)
    assert str(error.value) == (
        "no cluster to connect to: not in a pod (KUBERNETES_SERVICE_HOST is not set) and no "
        f"kubeconfig at {missing}; pass --kubeconfig PATH (or set clientConnection.kubeconfig), "
        "or --master URL"
    )
