"""compose.yaml and the Dockerfile cannot run here (no Docker); check that everything they
reference exists and agrees with the code: files, ports, OTEL_* variables, the aiosched command
line, the mounted configuration, the image's entry point."""

from __future__ import annotations

import ast
import asyncio
import fnmatch
import json
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from observability.http import ObservabilityServer
from observability.tracing import resolve_tracing_config
from profiles.api import load_config
from scheduler.app.cli import build_parser
from scheduler.app.commands.run import DEFAULT_HTTP_ADDRESS
from scheduler.cycle.profile_set import registry_for_config
from scheduler.server.certificate import self_signed_context

REPO = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((REPO / "compose.yaml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
K3S_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTg==
    server: https://127.0.0.1:6443
  name: default
contexts:
- context: {cluster: default, user: default}
  name: default
current-context: default
users:
- name: default
  user: {client-certificate-data: LS0t, client-key-data: LS0t}
"""


# ---- helpers: compose.yaml -------------------------------------------------------------------


@dataclass(frozen=True)
class Mount:
    source: str  # a named volume or a host path ("./...")
    target: str
    read_only: bool

    @property
    def is_bind(self) -> bool:
        return self.source.startswith((".", "/"))


def mounts(service: str) -> list[Mount]:
    result = []
    for spec in SERVICES[service].get("volumes", []):
        source, target, *mode = spec.split(":")
        result.append(Mount(source, target, mode == ["ro"]))
    return result


def published(service: str) -> dict[int, int]:
    """Container port → host port."""
    ports = {}
    for spec in SERVICES[service].get("ports", []):
        host, container = str(spec).split(":")
        ports[int(container)] = int(host)
    return ports


def host_path(service: str, container_path: str) -> tuple[Mount, PurePosixPath]:
    """The mount holding `container_path` in `service`, and the path inside it."""
    for mount in mounts(service):
        target = PurePosixPath(mount.target)
        path = PurePosixPath(container_path)
        if path.is_relative_to(target):
            return mount, path.relative_to(target)
    raise AssertionError(f"{container_path} is not on a volume of service {service}")


def aiosched_args() -> Any:
    parser, _ = build_parser()
    return parser.parse_args(SERVICES["aiosched"]["command"])


def port_of(address: str) -> int:
    return int(address.rpartition(":")[2])


def healthcheck_command(service: str) -> list[str]:
    test = SERVICES[service]["healthcheck"]["test"]
    assert test[0] == "CMD"
    return list(test[1:])


# ---- helpers: Dockerfile ---------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for line in (REPO / "Dockerfile").read_text().splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        keyword, _, rest = (pending + stripped).partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
        pending = ""
    return instructions


def instruction(keyword: str) -> list[str]:
    return [rest for key, rest in dockerfile_instructions() if key == keyword]


def exec_form(keyword: str) -> list[str]:
    (rest,) = instruction(keyword)
    value = json.loads(rest)  # exec form: signals reach aiosched, no shell in between
    assert isinstance(value, list)
    return value


def dockerignored(path: str) -> bool:
    patterns = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    parts = PurePosixPath(path).parts
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(
        fnmatch.fnmatch(prefix, pattern.removeprefix("**/")) or fnmatch.fnmatch(prefix, pattern)
        for pattern in patterns
        for prefix in prefixes
    )


# ---- files -----------------------------------------------------------------------------------


def test_build_context_and_dockerfile_exist() -> None:
    build = SERVICES["aiosched"]["build"]
    context = REPO / build["context"]
    assert context.resolve() == REPO
    assert (context / build["dockerfile"]).is_file()


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_every_mounted_host_path_exists_and_named_volumes_are_declared(service: str) -> None:
    for mount in mounts(service):
        if mount.is_bind:
            assert (REPO / mount.source).exists(), f"{service}: {mount.source} is missing"
        else:
            assert mount.source in COMPOSE["volumes"], f"{service}: volume {mount.source}"


def test_every_depends_on_names_a_service() -> None:
    for name, service in SERVICES.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in SERVICES, f"{name} depends on unknown {dependency}"


# ---- k3s and the kubeconfig aiosched uses ----------------------------------------------------


def test_k3s_runs_without_its_own_scheduler() -> None:
    k3s = SERVICES["k3s"]
    assert k3s["command"][0] == "server"
    assert "--disable-scheduler" in k3s["command"]
    assert k3s["privileged"] is True


def identity_args() -> tuple[str, str, str, str, str]:
    """(script, admin kubeconfig, output kubeconfig, server, manifests) inside `identity`."""
    service = SERVICES["identity"]
    assert service["entrypoint"] == ["/bin/sh"]
    script, admin, out, server, manifests = service["command"]
    return script, admin, out, server, manifests


def test_aiosched_gets_the_service_account_s_kubeconfig_and_never_the_admin_s() -> None:
    k3s_output = SERVICES["k3s"]["environment"]["K3S_KUBECONFIG_OUTPUT"]
    script, admin, out, server, manifests = identity_args()
    written_by_k3s = host_path("k3s", k3s_output)
    read_by_identity = host_path("identity", admin)
    written_by_identity = host_path("identity", out)
    read_by_aiosched = host_path("aiosched", aiosched_args().kubeconfig)

    assert (written_by_k3s[0].source, written_by_k3s[1]) == (
        read_by_identity[0].source,
        read_by_identity[1],
    )
    assert read_by_identity[0].read_only
    assert (written_by_identity[0].source, written_by_identity[1]) == (
        read_by_aiosched[0].source,
        read_by_aiosched[1],
    )
    # the admin kubeconfig's volume is not mounted into aiosched at all
    assert written_by_k3s[0].source not in {m.source for m in mounts("aiosched")}
    assert host_path("identity", script)[0].source == "./deploy/serviceaccount-kubeconfig.sh"
    assert host_path("identity", manifests)[0].source == "./deploy/kubernetes"
    # aiosched reaches k3s by service name, which k3s's serving certificate must cover.
    host = urlsplit(server).hostname
    assert host in SERVICES
    assert f"--tls-san={host}" in SERVICES["k3s"]["command"]
    assert port_of(server) in published("k3s")  # the port kubectl on the host uses too
    assert SERVICES["identity"]["image"] == SERVICES["k3s"]["image"]  # its kubectl and sh
    assert SERVICES["identity"]["depends_on"]["k3s"]["condition"] == "service_healthy"
    assert (
        SERVICES["aiosched"]["depends_on"]["identity"]["condition"]
        == "service_completed_successfully"
    )


def run_identity(
    tmp_path: Path, admin: Path, server: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "aiosched.kubeconfig"
    result = subprocess.run(
        [
            "sh",
            str(REPO / "deploy" / "serviceaccount-kubeconfig.sh"),
            str(admin),
            str(out),
            server,
            str(REPO / "deploy" / "kubernetes"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return result, out


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
def test_identity_script_writes_a_kubeconfig_with_the_service_account_s_token(
    tmp_path: Path,
) -> None:
    from processes import Kubectl, start_cluster, stopping

    cluster = start_cluster(tmp_path)
    with stopping(cluster):
        result, out = run_identity(tmp_path, tmp_path / "kubeconfig", cluster.url)

        assert result.returncode == 0, result.stderr
        written = yaml.safe_load(out.read_text())
        admin = yaml.safe_load((tmp_path / "kubeconfig").read_text())
        assert written["clusters"][0]["cluster"] == {
            "server": cluster.url,
            "certificate-authority-data": admin["clusters"][0]["cluster"][
                "certificate-authority-data"
            ],
        }
        (user,) = written["users"]
        assert set(user["user"]) == {"token"}
        assert out.stat().st_mode & 0o777 == 0o644  # readable by aiosched's non-root user
        whoami = Kubectl(tmp_path)("auth", "whoami", f"--kubeconfig={out}", "-o", "json")
        assert json.loads(whoami)["status"]["userInfo"]["username"] == (
            "system:serviceaccount:kube-system:aiosched"
        )


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
def test_identity_script_fails_without_writing_when_the_cluster_is_unreachable(
    tmp_path: Path,
) -> None:
    admin = tmp_path / "admin.kubeconfig"
    admin.write_text(K3S_KUBECONFIG)

    result, out = run_identity(tmp_path, admin, "https://127.0.0.1:1")

    assert result.returncode != 0
    assert not out.exists()
    assert not list(tmp_path.glob("aiosched.kubeconfig.tmp*"))


def test_k3s_healthcheck_reads_the_kubeconfig_it_writes() -> None:
    command = healthcheck_command("k3s")
    kubeconfig = command[command.index("--kubeconfig") + 1]
    assert kubeconfig == SERVICES["k3s"]["environment"]["K3S_KUBECONFIG_OUTPUT"]


# ---- aiosched: command line, configuration, endpoints ----------------------------------------


def test_aiosched_command_parses_with_the_real_parser() -> None:
    args = aiosched_args()

    assert args.command == "run"
    assert args.embedded is False
    assert args.config == "/etc/aiosched/config.yaml"


def test_mounted_config_passes_load_config_with_the_real_registry() -> None:
    mount, inside = host_path("aiosched", aiosched_args().config)
    assert mount.is_bind and mount.read_only

    config = load_config(REPO / mount.source / inside, registry_for_config())

    assert [p.scheduler_name for p in config.profiles] == ["default-scheduler", "bin-packing"]
    assert config.leader_election.leader_elect is False  # one replica


def test_example_pod_asks_for_a_profile_the_config_defines() -> None:
    mount, inside = host_path("aiosched", aiosched_args().config)
    config = load_config(REPO / mount.source / inside, registry_for_config())
    pod = yaml.safe_load((REPO / "deploy" / "example-pod.yaml").read_text())

    assert pod["spec"]["schedulerName"] in {p.scheduler_name for p in config.profiles}
    assert "nodeName" not in pod["spec"]


def test_http_port_agrees_with_the_code_and_is_published() -> None:
    address = aiosched_args().http_address
    port = port_of(address)

    assert port == port_of(DEFAULT_HTTP_ADDRESS)
    assert address.startswith("0.0.0.0:")  # reachable from outside the container
    assert published("aiosched") == {port: port}
    assert f"127.0.0.1:{port}/healthz" in " ".join(healthcheck_command("aiosched"))


async def test_healthcheck_command_passes_against_the_real_endpoint() -> None:
    command = healthcheck_command("aiosched")
    assert command[0] == "python"  # the image has no curl; its python is on PATH
    port = port_of(aiosched_args().http_address)
    assert not aiosched_args().insecure_http  # the secure port, with its self-signed certificate
    context, _ = self_signed_context("0.0.0.0")
    async with ObservabilityServer(port=0, ssl_context=context) as server:
        code = command[-1].replace(f":{port}/", f":{server.port}/")
        process = await asyncio.create_subprocess_exec(sys.executable, *command[1:-1], code)
        assert await asyncio.wait_for(process.wait(), 30) == 0


# ---- tracing ---------------------------------------------------------------------------------


def otel_variables_the_code_reads() -> set[str]:
    return {
        node.value
        for module in (REPO / "observability" / "tracing").glob("*.py")
        for node in ast.walk(ast.parse(module.read_text()))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("OTEL_")
    }


def test_every_otel_variable_is_one_the_tracing_code_reads() -> None:
    environment = SERVICES["aiosched"]["environment"]
    otel = {name for name in environment if name.startswith("OTEL_")}

    assert otel
    assert otel <= otel_variables_the_code_reads()


def test_tracing_resolves_to_the_jaeger_otlp_http_receiver() -> None:
    environment = {k: str(v) for k, v in SERVICES["aiosched"]["environment"].items()}

    config = resolve_tracing_config(environ=environment)

    assert config is not None
    assert (config.service_name, config.sampler, config.protocol) == (
        "aiosched",
        "parentbased_always_on",
        "http/protobuf",
    )
    endpoint = urlsplit(config.endpoint)
    assert endpoint.hostname == "jaeger"
    assert endpoint.path == "/v1/traces"
    assert endpoint.port == 4318
    assert endpoint.port in published("jaeger")


def test_jaeger_receives_otlp_and_serves_its_ui() -> None:
    jaeger = SERVICES["jaeger"]
    assert jaeger["image"].startswith("jaegertracing/all-in-one:")
    assert str(jaeger["environment"]["COLLECTOR_OTLP_ENABLED"]).lower() == "true"
    assert {16686, 4318} <= set(published("jaeger"))


# ---- Dockerfile ------------------------------------------------------------------------------


def test_images_are_python_311_slim() -> None:
    assert [rest.split()[0] for rest in instruction("FROM")] == ["python:3.11-slim"] * 2


def test_entrypoint_is_the_console_script() -> None:
    entrypoint = exec_form("ENTRYPOINT")

    assert entrypoint == ["aiosched"]
    assert PYPROJECT["project"]["scripts"]["aiosched"] == "scheduler.app.cli:main"


def test_default_cmd_parses_with_the_real_parser() -> None:
    parser, _ = build_parser()

    args = parser.parse_args(exec_form("CMD"))

    assert args.command == "run"
    assert port_of(args.http_address) == port_of(DEFAULT_HTTP_ADDRESS)
    assert instruction("EXPOSE") == [str(port_of(DEFAULT_HTTP_ADDRESS))]


def test_installs_the_project_without_dev_tools_and_runs_unprivileged() -> None:
    runs = " ".join(instruction("RUN"))
    assert "pip install ." in runs
    assert "[dev]" not in runs
    (user,) = instruction("USER")
    assert user.split(":")[0] not in ("root", "0")


def copied_sources() -> list[str]:
    sources = []
    for rest in instruction("COPY"):
        words = shlex.split(rest)
        if any(word.startswith("--from") for word in words):
            continue
        sources += words[:-1]
    return sources


def test_copied_files_exist_and_are_in_the_build_context() -> None:
    for source in copied_sources():
        assert (REPO / source).exists(), source
        assert not dockerignored(source.rstrip("/")), f"{source} is excluded by .dockerignore"


def test_every_package_and_file_pip_install_needs_is_copied() -> None:
    copied = {source.rstrip("/") for source in copied_sources()}
    packages = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    needed = {pattern.rstrip("*") for pattern in packages}
    needed |= {"pyproject.toml", PYPROJECT["project"]["readme"]}

    assert needed <= copied


@pytest.mark.parametrize(
    ("path", "ignored"),
    [(".venv", True), ("scheduler/__pycache__", True), ("tests", True), ("scheduler", False)],
)
def test_dockerignore_keeps_the_context_small(path: str, ignored: bool) -> None:
    assert dockerignored(path) is ignored
