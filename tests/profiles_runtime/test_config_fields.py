"""Every field of KubeSchedulerConfiguration that profiles/ accepts is applied or refused.

The table below has one case per leaf field, built from the decoder's own field lists
(profiles.fields.accepted_paths()): a file that sets the field, and where the value must show up
in a running Scheduler (or its client, lease or caveats), or the error that refuses it.
Reloadable fields are checked after a reload (a scheduler built from the defaults, then swapped
to the file); restart-only fields are checked at start and must be reported by
restart_required().
"""

from __future__ import annotations

import base64
import dataclasses
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from kubesim.tls import self_signed
from profiles.api import load_config_text
from profiles.config import ResolvedConfig
from profiles.errors import ConfigInvalidError
from profiles.fields import FIELDS, Effect, accepted_paths, caveats, restart_required
from profiles.spec import EXTENSION_POINTS, MULTI_POINT
from scheduler.app.commands.run import client_settings
from scheduler.client.leaderelection import LeaderElector
from scheduler.client.rest import KubeClient, load_configuration
from scheduler.cycle.profile_set import registry_for_config
from scheduler.cycle.scheduler import Scheduler
from scheduler.framework.interface import EXTENSION_POINT_METHODS
from scheduler.framework.registry import PluginEntry, Registry
from scheduler.framework.runtime import Framework
from scheduler.plugins.registry import in_tree_registry

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


# ---- a plugin at every extension point, with args -----------------------------------------


class Everywhere:
    name = "Everywhere"

    def __init__(self, args: dict[str, Any] | None, handle: Any) -> None:
        self.mark = (args or {}).get("mark", 0)


for _method in EXTENSION_POINT_METHODS.values():
    setattr(Everywhere, _method, lambda self, *a, **k: None)


def _registry() -> Registry:
    registry = in_tree_registry()
    registry.register(PluginEntry("Everywhere", Everywhere, lambda raw: dict(raw or {})))
    return registry


REGISTRY = _registry()


# ---- what a case sees -------------------------------------------------------------------------


@dataclass
class Applied:
    config: ResolvedConfig
    scheduler: Scheduler
    files: Path

    def framework(self, name: str = "default-scheduler") -> Framework:
        return self.scheduler.profiles[name].framework

    def plugins(self, point: str) -> list[str]:
        return self.framework().list_plugins().get(point, [])


Check = Callable[[Applied], Awaitable[None] | None]


@dataclass
class Case:
    body: str  # YAML after apiVersion/kind; "{files}" is the test's directory
    check: Check | None = None
    refused: str = ""  # a substring of the error, when the value is refused


def load(body: str, files: Path) -> ResolvedConfig:
    text = HEADER + body.replace("{files}", str(files))
    return load_config_text(text, registry_for_config(REGISTRY), source="fields.yaml")


# ---- the cases --------------------------------------------------------------------------------


def _backoff(expected: tuple[float, float]) -> Check:
    def check(a: Applied) -> None:
        assert a.scheduler.queue.backoff == expected

    return check


def _elector(attribute: str, expected: Any) -> Check:
    def check(a: Applied) -> None:
        elector = LeaderElector.from_config(
            a.scheduler.client,
            a.config.leader_election,
            on_started_leading=lambda: None,
            on_stopped_leading=lambda: None,
        )
        if attribute == "lease":
            assert elector.describe() == expected
        else:
            assert getattr(elector, attribute) == expected

    return check


def _kubeconfig(a: Applied) -> Awaitable[None]:
    async def check() -> None:
        configuration = await load_configuration(client_settings(a.config, None, None))
        assert configuration.host == "https://from-the-config.example:6443"

    return check()


def _limiter(attribute: str, expected: float) -> Check:
    async def check(a: Applied) -> None:
        settings = client_settings(a.config, None, None)
        client = KubeClient(Configuration(host="http://127.0.0.1:9"), settings)
        try:
            assert getattr(client._limiter, attribute) == expected
        finally:
            await client.close()

    return check


def _plugin_cases() -> dict[str, Case]:
    cases: dict[str, Case] = {}
    for point in (*EXTENSION_POINTS, MULTI_POINT):
        everywhere = list(EXTENSION_POINTS) if point == MULTI_POINT else [point]
        # enabled[]: Everywhere runs there (queueSort holds one plugin: PrioritySort goes).
        off = ", disabled: [{name: PrioritySort}]" if point == "queueSort" else ""
        sort_off = (
            "    queueSort: {disabled: [{name: PrioritySort}]}\n" if point == MULTI_POINT else ""
        )

        def enabled(a: Applied, points: list[str] = everywhere) -> None:
            for p in points:
                assert "Everywhere" in a.plugins(p), p

        cases[f"profiles[].plugins.{point}.enabled[].name"] = Case(
            f"profiles:\n- plugins:\n    {point}: {{enabled: [{{name: Everywhere}}]{off}}}\n"
            + sort_off,
            enabled,
        )
        if point in ("score", MULTI_POINT):

            def weighted(a: Applied) -> None:
                assert a.framework().score_weights["Everywhere"] == 7

            weight_check: Check = weighted
        else:

            def unweighted(a: Applied, p: str = point) -> None:
                assert "Everywhere" in a.plugins(p)  # accepted; only Score uses weights

            weight_check = unweighted
        cases[f"profiles[].plugins.{point}.enabled[].weight"] = Case(
            f"profiles:\n- plugins:\n    {point}: "
            f"{{enabled: [{{name: Everywhere, weight: 7}}]{off}}}\n" + sort_off,
            weight_check,
        )
        # disabled[]: Everywhere everywhere through multiPoint, then switched off here.
        base = "profiles:\n- plugins:\n    multiPoint: {enabled: [{name: Everywhere}]}\n"
        if point == MULTI_POINT:
            body = base.replace(
                "[{name: Everywhere}]}", "[{name: Everywhere}], disabled: [{name: PrioritySort%s}]}"
            )

            def disabled(a: Applied) -> None:
                assert all("PrioritySort" not in a.plugins(p) for p in EXTENSION_POINTS)
                assert a.plugins("queueSort") == ["Everywhere"]

        else:
            body = base
            if point != "queueSort":
                body += "    queueSort: {disabled: [{name: Everywhere}]}\n"
            body += f"    {point}: {{disabled: [{{name: Everywhere%s}}]}}\n"

            def disabled(a: Applied, p: str = point) -> None:
                assert "Everywhere" not in a.plugins(p)
                assert "Everywhere" in a.plugins("filter" if p != "filter" else "score")

        cases[f"profiles[].plugins.{point}.disabled[].name"] = Case(body % "", disabled)
        cases[f"profiles[].plugins.{point}.disabled[].weight"] = Case(
            body % ", weight: 3", disabled
        )
    return cases


def _extender_cases(files: Path) -> dict[str, Case]:
    def ext(a: Applied) -> Any:
        return a.scheduler.extenders.extenders[0]

    def field(attribute: str, expected: Any) -> Check:
        def check(a: Applied) -> None:
            assert getattr(ext(a), attribute) == expected

        return check

    def config_field(attribute: str, expected: Any) -> Check:
        def check(a: Applied) -> None:
            assert getattr(ext(a).config, attribute) == expected

        return check

    def tls(attribute: str) -> Check:
        def check(a: Applied) -> None:
            extender = ext(a)
            assert isinstance(extender._ssl, ssl.SSLContext)  # built from the setting
            assert getattr(extender.config.tls_config, attribute)

        return check

    def extender(fields: str) -> str:
        return f"extenders:\n- {{urlPrefix: 'http://127.0.0.1:9/x', {fields}}}\n"

    cert = files / "tls.crt"
    key = files / "tls.key"
    cert_data = base64.b64encode(cert.read_bytes()).decode()
    key_data = base64.b64encode(key.read_bytes()).decode()

    def ignored(a: Applied) -> None:
        assert a.scheduler.extenders.ignored_resources == ("example.com/gpu",)

    def preempts(a: Applied) -> None:
        assert ext(a).supports_preemption()

    return {
        "extenders[].urlPrefix": Case(
            extender("weight: 1"), field("url_prefix", "http://127.0.0.1:9/x")
        ),
        "extenders[].filterVerb": Case(extender("filterVerb: f"), config_field("filter_verb", "f")),
        "extenders[].preemptVerb": Case(extender("preemptVerb: p"), preempts),
        "extenders[].prioritizeVerb": Case(
            extender("prioritizeVerb: s, weight: 3"), config_field("prioritize_verb", "s")
        ),
        "extenders[].weight": Case(extender("prioritizeVerb: s, weight: 3"), field("weight", 3)),
        "extenders[].bindVerb": Case(extender("bindVerb: b"), config_field("bind_verb", "b")),
        "extenders[].enableHTTPS": Case(extender("enableHTTPS: true"), tls_insecure()),
        "extenders[].httpTimeout": Case(extender("httpTimeout: 7s"), field("timeout", 7.0)),
        "extenders[].nodeCacheCapable": Case(
            extender("nodeCacheCapable: true"), field("node_cache_capable", True)
        ),
        "extenders[].ignorable": Case(extender("ignorable: true"), field("ignorable", True)),
        "extenders[].managedResources[].name": Case(
            extender("managedResources: [{name: example.com/gpu}]"),
            field("managed_resources", frozenset({"example.com/gpu"})),
        ),
        "extenders[].managedResources[].ignoredByScheduler": Case(
            extender("managedResources: [{name: example.com/gpu, ignoredByScheduler: true}]"),
            ignored,
        ),
        "extenders[].tlsConfig.insecure": Case(
            extender("tlsConfig: {insecure: true}"), tls_insecure()
        ),
        "extenders[].tlsConfig.serverName": Case(
            extender("tlsConfig: {serverName: ext.example}"), field("_server_name", "ext.example")
        ),
        "extenders[].tlsConfig.certFile": Case(
            extender(f"tlsConfig: {{certFile: {cert}, keyFile: {key}}}"), tls("cert_file")
        ),
        "extenders[].tlsConfig.keyFile": Case(
            extender(f"tlsConfig: {{certFile: {cert}, keyFile: {key}}}"), tls("key_file")
        ),
        "extenders[].tlsConfig.caFile": Case(
            extender(f"tlsConfig: {{caFile: {cert}}}"), tls("ca_file")
        ),
        "extenders[].tlsConfig.certData": Case(
            extender(f"tlsConfig: {{certData: {cert_data}, keyData: {key_data}}}"), tls("cert_data")
        ),
        "extenders[].tlsConfig.keyData": Case(
            extender(f"tlsConfig: {{certData: {cert_data}, keyData: {key_data}}}"), tls("key_data")
        ),
        "extenders[].tlsConfig.caData": Case(
            extender(f"tlsConfig: {{caData: {cert_data}}}"), tls("ca_data")
        ),
    }


def tls_insecure() -> Check:
    def check(a: Applied) -> None:
        context = a.scheduler.extenders.extenders[0]._ssl
        assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_NONE

    return check


def cases(files: Path) -> dict[str, Case]:
    profiling = "aiosched serves no profiling endpoints"

    def parallelism(a: Applied) -> None:
        assert a.framework().parallelism == 3
        assert not any(c.startswith("parallelism") for c in caveats(a.config))
        assert restart_required(a.config, dataclasses.replace(a.config, parallelism=4)) == (
            "parallelism",
        )

    def profiling_off(a: Applied) -> None:
        assert not any("enableProfiling" in c for c in caveats(a.config))

    def percentage(a: Applied) -> None:
        assert a.scheduler.profiles["default-scheduler"].percentage_of_nodes_to_score == 30

    def scheduler_name(a: Applied) -> None:
        assert list(a.scheduler.profiles) == ["custom"]

    def plugin_args(a: Applied) -> None:
        plugin = a.framework().plugins["Everywhere"]
        assert isinstance(plugin, Everywhere) and plugin.mark == 3

    def note(name: str) -> Check:
        def check(a: Applied) -> None:
            assert f"{name} is not part of v1 and is ignored" in a.config.notes

        return check

    def json_only(a: Applied) -> None:
        assert a.config.client_connection.content_type == "application/json"

    def accept(a: Applied) -> None:
        assert "application/json" in a.config.client_connection.accept_content_types

    def delay(a: Applied) -> None:
        assert a.config.delay_cache_until_active  # SchedulerService: see test_delay_cache_*

    def leader_elect(a: Applied) -> None:
        assert a.config.leader_election.leader_elect is False  # SchedulerService.run: no elector

    plugin_config = (
        "profiles:\n- plugins: {multiPoint: {enabled: [{name: Everywhere}]}, queueSort: "
        "{disabled: [{name: Everywhere}]}}\n  pluginConfig: [{name: Everywhere, args: {mark: 3}}]\n"
    )
    table = {
        "apiVersion": Case("", refused="apiVersion"),
        "kind": Case("", refused="kind"),
        "parallelism": Case("parallelism: 3\n", parallelism),
        "percentageOfNodesToScore": Case("percentageOfNodesToScore: 30\n", percentage),
        "podInitialBackoffSeconds": Case("podInitialBackoffSeconds: 3\n", _backoff((3, 10))),
        "podMaxBackoffSeconds": Case("podMaxBackoffSeconds: 20\n", _backoff((1, 20))),
        "delayCacheUntilActive": Case("delayCacheUntilActive: true\n", delay),
        "enableProfiling": Case("enableProfiling: true\n", refused=profiling),
        "enableContentionProfiling": Case("enableContentionProfiling: true\n", refused=profiling),
        "healthzBindAddress": Case(
            "healthzBindAddress: 0.0.0.0:10251\n", note("healthzBindAddress")
        ),
        "metricsBindAddress": Case(
            "metricsBindAddress: 0.0.0.0:10251\n", note("metricsBindAddress")
        ),
        "leaderElection.leaderElect": Case("leaderElection: {leaderElect: false}\n", leader_elect),
        "leaderElection.leaseDuration": Case(
            "leaderElection: {leaseDuration: 20s}\n", _elector("_lease_duration", 20.0)
        ),
        "leaderElection.renewDeadline": Case(
            "leaderElection: {renewDeadline: 5s}\n", _elector("_renew_deadline", 5.0)
        ),
        "leaderElection.retryPeriod": Case(
            "leaderElection: {retryPeriod: 1s}\n", _elector("_retry_period", 1.0)
        ),
        "leaderElection.resourceLock": Case(
            "leaderElection: {resourceLock: endpointsleases}\n", refused='must be "leases"'
        ),
        "leaderElection.resourceName": Case(
            "leaderElection: {resourceName: mine}\n", _elector("lease", "kube-system/mine")
        ),
        "leaderElection.resourceNamespace": Case(
            "leaderElection: {resourceNamespace: ops}\n", _elector("lease", "ops/kube-scheduler")
        ),
        "clientConnection.kubeconfig": Case(
            "clientConnection: {kubeconfig: {files}/kubeconfig}\n", _kubeconfig
        ),
        "clientConnection.acceptContentTypes": Case(
            "clientConnection: {acceptContentTypes: 'application/json,application/yaml'}\n", accept
        ),
        "clientConnection.contentType": Case(
            "clientConnection: {contentType: application/json}\n", json_only
        ),
        "clientConnection.qps": Case("clientConnection: {qps: 123}\n", _limiter("qps", 123.0)),
        "clientConnection.burst": Case("clientConnection: {burst: 77}\n", _limiter("burst", 77)),
        "profiles[].schedulerName": Case("profiles: [{schedulerName: custom}]\n", scheduler_name),
        "profiles[].percentageOfNodesToScore": Case(
            "profiles: [{percentageOfNodesToScore: 30}]\n", percentage
        ),
        "profiles[].pluginConfig[].name": Case(plugin_config, plugin_args),
        "profiles[].pluginConfig[].args": Case(plugin_config, plugin_args),
        **_plugin_cases(),
        **_extender_cases(files),
    }
    return table


# Values refused although the field itself is accepted (a second case per field).
REFUSED_VALUES = {
    "clientConnection.contentType": (
        "clientConnection: {contentType: application/vnd.kubernetes.protobuf}\n",
        "sends application/json only",
    ),
    "clientConnection.acceptContentTypes": (
        "clientConnection: {acceptContentTypes: application/vnd.kubernetes.protobuf}\n",
        "decodes application/json only",
    ),
}


# ---- the test ---------------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> Path:
    cert = self_signed("127.0.0.1")
    (tmp_path / "tls.crt").write_bytes(cert.cert_pem)
    (tmp_path / "tls.key").write_bytes(cert.key_pem)
    (tmp_path / "kubeconfig").write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://from-the-config.example:6443'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    return tmp_path


def test_the_table_covers_every_accepted_field(tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_text("x")
    (tmp_path / "tls.key").write_text("x")
    assert set(FIELDS) == accepted_paths()
    assert set(cases(tmp_path)) == accepted_paths()


ALL_PATHS = sorted(accepted_paths())


@pytest.fixture
async def scheduler_factory() -> AsyncIterator[Callable[[ResolvedConfig], Scheduler]]:
    clients: list[KubeClient] = []

    def build(config: ResolvedConfig) -> Scheduler:
        client = KubeClient(
            Configuration(host="http://127.0.0.1:9"), client_settings(config, None, None)
        )
        clients.append(client)
        return Scheduler(client, config, REGISTRY)

    yield build
    for client in clients:
        await client.close()


@pytest.mark.parametrize("path", ALL_PATHS)
async def test_field_is_applied_or_refused(
    path: str, files: Path, scheduler_factory: Callable[[ResolvedConfig], Scheduler]
) -> None:
    case = cases(files)[path]
    support = FIELDS[path]
    if case.refused:
        body = case.body
        if path in ("apiVersion", "kind"):
            text = (
                HEADER.replace("v1\n", "v1beta3\n")
                if path == "apiVersion"
                else HEADER.replace("KubeSchedulerConfiguration", "Policy")
            )
            with pytest.raises(ConfigInvalidError, match=path):
                load_config_text(text, registry_for_config(REGISTRY))
            return
        with pytest.raises(ConfigInvalidError) as refused:
            load(body, files)
        assert case.refused in str(refused.value)
        assert path in str(refused.value)
        return
    config = load(case.body, files)
    assert case.check is not None
    defaults = load("", files)
    if support.effect is Effect.RESTART:
        # contentType's one valid value is the default: there is nothing to change.
        expected = () if path == "clientConnection.contentType" else (path,)
        assert restart_required(defaults, config) == expected
        scheduler = scheduler_factory(config)
    else:
        assert restart_required(defaults, config) == ()
        # Reloadable (or without effect): what a reload between two cycles leaves running.
        scheduler = scheduler_factory(defaults)
        scheduler._apply_profiles(scheduler.build_profiles(config))
    outcome = case.check(Applied(config, scheduler, files))
    if outcome is not None:
        await outcome


@pytest.mark.parametrize("path", sorted(REFUSED_VALUES))
def test_values_aiosched_cannot_honour_are_refused(path: str, files: Path) -> None:
    body, message = REFUSED_VALUES[path]
    with pytest.raises(ConfigInvalidError) as refused:
        load(body, files)
    assert f"fields.yaml: {path}: " in str(refused.value) and message in str(refused.value)
    assert FIELDS[path].refused


def test_profiling_false_and_absent_are_accepted_and_serve_nothing(files: Path) -> None:
    assert any("aiosched serves no profiling" in c for c in caveats(load("", files)))
    quiet = load("enableProfiling: false\nenableContentionProfiling: false\n", files)
    assert not any("profiling" in c for c in caveats(quiet))
