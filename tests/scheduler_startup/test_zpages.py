"""kube-scheduler's debug pages (scheduler/server/zpages.py): /configz, /debug/flags/v, /statusz
and /flagz, their content, Accept negotiation and authorization behind the secure port's guard.

Facts from upstream: component-base/configz/configz.go, pkg/scheduler/apis/config/types.go,
apiserver/pkg/server/routes/flags.go, apiserver/pkg/server/{statusz,flagz}/ (handlers, text
serializers, negotiation) and test/integration/serving/serving_test.go (TestSchedulerZPages:
the Accept cases and kube-scheduler's listed paths).
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from aiohttp import ClientSession

from observability.http import ObservabilityServer
from observability.logs import V
from profiles.api import load_config
from scheduler.app.service import SchedulerService
from scheduler.cycle.profile_set import full_registry, registry_for_config
from scheduler.server import zpages
from scheduler.server.certificate import self_signed_context
from scheduler.server.delegated_auth import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS, DelegatedAuth

STATUSZ_BETA = "application/json;v=v1beta1;g=config.k8s.io;as=Statusz"
STATUSZ_ALPHA = "application/json;v=v1alpha1;g=config.k8s.io;as=Statusz"
FLAGZ_BETA = "application/json;v=v1beta1;g=config.k8s.io;as=Flagz"
FLAGZ_ALPHA = "application/json;v=v1alpha1;g=config.k8s.io;as=Flagz"
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: default-scheduler
- schedulerName: packed
  plugins:
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""


READER = {"username": "system:serviceaccount:monitoring:reader", "groups": ["system:monitoring"]}


class FakeApiServer:
    """Answers TokenReviews for one token and SubjectAccessReviews from an allow list."""

    def __init__(self) -> None:
        self.allowed: set[tuple[str, str, str]] = set()
        self.requests: list[tuple[str, dict[str, Any]]] = []

    async def request(self, method: str, path: str, *, body: Any = None) -> tuple[int, Any]:
        self.requests.append((path, body))
        spec = body["spec"]
        if path == TOKEN_REVIEWS:
            known = spec["token"] == "reader-token"
            return 201, {**body, "status": {"authenticated": known, "user": READER}}
        assert path == SUBJECT_ACCESS_REVIEWS
        attributes = spec["nonResourceAttributes"]
        allowed = (spec["user"], attributes["verb"], attributes["path"]) in self.allowed
        return 201, {**body, "status": {"allowed": allowed}}


def resolved(text: str, tmp_path: Path) -> Any:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return load_config(path, registry_for_config(full_registry()))


class Levels:
    def __init__(self) -> None:
        self.set: list[int] = []

    def __call__(self, level: int) -> None:
        self.set.append(level)


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[tuple[str, SchedulerService, Levels]]:
    """The z-pages as `aiosched run --insecure-http` serves them (no guard)."""
    levels = Levels()
    service = SchedulerService(
        config_path=None,
        http_host="127.0.0.1",
        http_port=0,
        flags={"leader-elect-resource-name": "kube-scheduler", "v": "0"},
        set_verbosity=levels,
    )
    config = resolved(CONFIG, tmp_path)
    service.configz.set(config)
    async with ObservabilityServer(port=0, routes=service.zpage_routes(config)) as server:
        yield server.url, service, levels


async def get(url: str, accept: str | None = None, **headers: str) -> tuple[int, Any, str]:
    if accept is not None:
        headers["Accept"] = accept
    async with ClientSession() as session, session.get(url, headers=headers, ssl=False) as r:
        return r.status, r.headers, await r.text()


# --------------------------------------------------------------------------------- /configz


async def test_configz_serves_the_component_config(
    plain: tuple[str, SchedulerService, Levels],
) -> None:
    url, _, _ = plain
    status, headers, body = await get(url + "/configz")
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Content-Type-Options"] == "nosniff"
    document = orjson.loads(body)
    assert list(document) == ["componentconfig"]
    config = document["componentconfig"]
    # Go field names of the internal type, durations as Go writes metav1.Duration
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["Parallelism"] == 16
    assert config["LeaderElection"]["LeaderElect"] is False
    assert config["LeaderElection"]["LeaseDuration"] == "15s"
    assert config["ClientConnection"]["QPS"] == 50
    assert config["EnableProfiling"] is True
    assert config["PodMaxBackoffSeconds"] == 10
    assert [p["SchedulerName"] for p in config["Profiles"]] == ["default-scheduler", "packed"]
    packed = config["Profiles"][1]
    score = [p["Name"] for p in packed["Plugins"]["Score"]["Enabled"]]
    assert "NodeResourcesBalancedAllocation" not in score
    assert "NodeResourcesFit" in score
    fit = next(c for c in packed["PluginConfig"] if c["Name"] == "NodeResourcesFit")
    assert fit["Args"]["kind"] == "NodeResourcesFitArgs"
    assert fit["Args"]["scoringStrategy"]["type"] == "MostAllocated"


async def test_configz_follows_a_reload_but_keeps_restart_only_fields(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    service = SchedulerService(config_path=path, http_host="127.0.0.1", http_port=0)
    running = service.load_config()
    service.running_config = running
    service.configz.set(running)

    class Swapper:
        def build_profiles(self, config: Any) -> Any:
            return type("Profiles", (), {"names": lambda self: ["x"]})()

        def swap_profiles(self, profiles: Any) -> None:
            pass

    service.scheduler = Swapper()  # type: ignore[assignment]
    path.write_text(
        CONFIG.replace("leaderElect: false", "leaderElect: false, leaseDuration: 30s")
        + "podMaxBackoffSeconds: 20\n"
    )
    assert await service.reload()
    async with ObservabilityServer(port=0, routes=service.zpage_routes(running)) as server:
        _, _, body = await get(server.url + "/configz")
    config = orjson.loads(body)["componentconfig"]
    assert config["PodMaxBackoffSeconds"] == 20  # reloaded
    assert config["LeaderElection"]["LeaseDuration"] == "15s"  # restart-only: the running value


# --------------------------------------------------------------------------- /debug/flags/v


async def test_put_changes_the_verbosity(plain: tuple[str, SchedulerService, Levels]) -> None:
    url, _, levels = plain
    async with ClientSession() as session:
        async with session.put(url + "/debug/flags/v", data=b"4") as r:
            assert r.status == 200
            assert r.headers["Content-Type"] == "text/plain"
            assert await r.text() == "successfully set klog.logging.verbosity to 4\n"
        async with session.put(url + "/debug/flags/v", data=b"four") as r:
            assert r.status == 400
            assert await r.text() == (
                'failed set klog.logging.verbosity four: strconv.ParseUint: parsing "four": '
                "invalid syntax\n"
            )
        async with session.get(url + "/debug/flags/v") as r:
            assert r.status == 406
            assert await r.text() == "unsupported http method\n"
        async with session.get(url + "/debug/flags/") as r:
            assert r.status == 200
            assert "<tr>v<br>" in await r.text()
    assert levels.set == [4]


@pytest.mark.parametrize(
    ("text", "level"), [("0", 0), ("10", 10), ("0x10", 16), ("010", 8), ("1_0", 10)]
)
def test_levels_parse_as_klog_parses_them(text: str, level: int) -> None:
    assert zpages.parse_klog_level(text) == level


@pytest.mark.parametrize("text", ["", " 3", "3\n", "-1", "+1", "x", "4294967296"])
def test_levels_klog_refuses(text: str) -> None:
    with pytest.raises(ValueError, match=r"strconv\.ParseUint"):
        zpages.parse_klog_level(text)


def test_the_default_setter_moves_the_root_logger() -> None:
    root = logging.getLogger()
    before = root.level
    try:
        service = SchedulerService(config_path=None, http_host="127.0.0.1", http_port=0)
        service.set_verbosity(5)
        assert root.level == V(5) == logging.DEBUG
    finally:
        root.setLevel(before)


async def test_without_enable_profiling_there_are_no_debug_flags(tmp_path: Path) -> None:
    service = SchedulerService(config_path=None, http_host="127.0.0.1", http_port=0)
    config = resolved(CONFIG + "enableProfiling: false\n", tmp_path)
    async with (
        ObservabilityServer(port=0, routes=service.zpage_routes(config)) as server,
        ClientSession() as session,
        session.put(server.url + "/debug/flags/v", data=b"3") as r,
    ):
        assert r.status == 404


# ---------------------------------------------------------------------- /statusz and /flagz


async def test_statusz_text(plain: tuple[str, SchedulerService, Levels]) -> None:
    url, _, _ = plain
    status, headers, body = await get(url + "/statusz")
    assert status == 200
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert body.startswith(
        "\nkube-scheduler statusz\nWarning: This endpoint is not meant to be machine parseable"
    )
    delim = r"(?:: |:|=| )"
    unix_date = r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \S+ \d{4}"
    assert re.search(rf"\nStarted{delim} {unix_date}\n", body)
    assert re.search(rf"\nUp{delim} 0 hr 00 min 0\d sec\n", body)
    assert re.search(rf"\nBinary version{delim} \S+\n\n", body)
    assert re.search(rf"\nPaths{delim} /configz /flagz /healthz /livez /metrics /readyz\n$", body)


@pytest.mark.parametrize(
    ("accept", "status", "structured", "deprecated"),
    [  # TestSchedulerZPages' statusz cases (CBOR off: the CBORServingAndStorage gate's default)
        ("text/plain", 200, None, False),
        (STATUSZ_BETA, 200, "json", False),
        ("", 200, None, False),
        ("application/xml", 406, None, False),
        ("application/json", 406, None, False),
        ("application/json;v=v1beta1;g=config.k8s.io", 406, None, False),
        ("*/*", 200, None, False),
        ("application/json;v=foo;g=config.k8s.io;as=Statusz,*/*", 200, None, False),
        ("application/yaml;v=v1beta1;g=config.k8s.io;as=Statusz", 200, "yaml", False),
        ("application/cbor;v=v1beta1;g=config.k8s.io;as=Statusz", 406, None, False),
        (f"{STATUSZ_ALPHA},{STATUSZ_BETA}", 200, "json", True),
        (f"{STATUSZ_BETA},{STATUSZ_ALPHA}", 200, "json", False),
        (f"{STATUSZ_ALPHA};q=0.5,{STATUSZ_BETA}", 200, "json", False),
    ],
)
async def test_statusz_negotiation(
    plain: tuple[str, SchedulerService, Levels],
    accept: str,
    status: int,
    structured: str | None,
    deprecated: bool,
) -> None:
    url, _, _ = plain
    got, headers, body = await get(url + "/statusz", accept)
    assert got == status
    if status == 406:
        problem = orjson.loads(body)
        assert (problem["kind"], problem["reason"], problem["code"]) == (
            "Status",
            "NotAcceptable",
            406,
        )
        return
    if structured is None:
        assert "kube-scheduler statusz" in body
        return
    document = orjson.loads(body) if structured == "json" else yaml.safe_load(body)
    version = "v1alpha1" if deprecated else "v1beta1"
    assert headers["Content-Type"] == f"application/{structured}"
    assert document["kind"] == "Statusz"
    assert document["apiVersion"] == f"config.k8s.io/{version}"
    assert document["metadata"] == {"name": "kube-scheduler"}
    assert document["paths"] == ["/configz", "/flagz", "/healthz", "/livez", "/metrics", "/readyz"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", document["startTime"])
    assert document["uptimeSeconds"] >= 0
    assert document["binaryVersion"]
    assert ("deprecated" in headers.get("Warning", "")) is deprecated


async def test_flagz(plain: tuple[str, SchedulerService, Levels]) -> None:
    url, _, _ = plain
    status, _, body = await get(url + "/flagz")
    assert status == 200
    assert body.startswith(
        "\nkube-scheduler flagz\nWarning: This endpoint is not meant to be machine parseable"
    )
    assert re.search(r"\nleader-elect-resource-name(?:: |:|=| )kube-scheduler\nv", body)
    status, headers, body = await get(url + "/flagz", FLAGZ_BETA)
    assert status == 200
    assert orjson.loads(body) == {
        "kind": "Flagz",
        "apiVersion": "config.k8s.io/v1beta1",
        "metadata": {"name": "kube-scheduler"},
        "flags": {"leader-elect-resource-name": "kube-scheduler", "v": "0"},
    }
    status, headers, _ = await get(url + "/flagz", f"{FLAGZ_ALPHA},{FLAGZ_BETA}")
    assert "deprecated" in headers["Warning"]
    assert (await get(url + "/flagz", STATUSZ_BETA))[0] == 406  # as=Statusz is not a Flagz


async def test_feature_gates_turn_the_pages_off(tmp_path: Path) -> None:
    service = SchedulerService(
        config_path=None,
        http_host="127.0.0.1",
        http_port=0,
        feature_gates={"ComponentStatusz": False, "ComponentFlagz": False},
    )
    routes = {path for _, path, _ in service.zpage_routes(resolved(CONFIG, tmp_path))}
    assert zpages.STATUSZ_PATH not in routes
    assert zpages.FLAGZ_PATH not in routes
    assert zpages.CONFIGZ_PATH in routes
    assert "/statusz" not in service.served_paths()


def test_flag_values_print_as_pflag_prints_them() -> None:
    import argparse

    from scheduler.app.commands.run import command_line_flags

    parser = argparse.ArgumentParser()
    from scheduler.app.commands.run_flags import add_arguments

    add_arguments(parser)
    flags = command_line_flags(parser.parse_args(["--leader-elect=false", "--v", "3"]))
    assert flags["leader-elect"] == "false"
    assert flags["v"] == "3"
    assert "ComponentFlagz=true" in flags["feature-gates"]


def test_text_delimiters_are_upstreams() -> None:
    assert zpages.DELIMITERS == (":", ": ", "=", " ")
    statusz = zpages.Statusz(("/metrics",), rng=random.Random(0))
    assert statusz.paths == ("/metrics",)


# ------------------------------------------------------------------------------ authorization


@pytest.fixture
async def guarded(tmp_path: Path) -> AsyncIterator[tuple[str, FakeApiServer, Levels]]:
    api = FakeApiServer()
    auth = DelegatedAuth(api, api, ttl=0.0)  # no cached denial between the steps
    levels = Levels()
    service = SchedulerService(
        config_path=None, http_host="127.0.0.1", http_port=0, set_verbosity=levels
    )
    config = resolved(CONFIG, tmp_path)
    service.configz.set(config)
    async with ObservabilityServer(
        port=0,
        ssl_context=self_signed_context("127.0.0.1")[0],
        guard=auth.guard,
        routes=service.zpage_routes(config),
    ) as server:
        yield server.url, api, levels


@pytest.mark.parametrize("path", ["/configz", "/statusz", "/flagz", "/debug/flags/v"])
async def test_pages_need_an_authenticated_and_authorized_user(
    guarded: tuple[str, FakeApiServer, Levels], path: str
) -> None:
    url, api, _ = guarded
    assert (await get(url + path))[0] == 401
    assert (await get(url + path, Authorization="Bearer reader-token"))[0] == 403
    api.allowed.add((READER["username"], "get", path))
    status, _, _ = await get(url + path, Authorization="Bearer reader-token")
    assert status == (406 if path == "/debug/flags/v" else 200)  # GET is not how v is set


async def test_changing_the_verbosity_needs_put_on_the_path(
    guarded: tuple[str, FakeApiServer, Levels],
) -> None:
    url, api, levels = guarded
    headers = {"Authorization": "Bearer reader-token"}
    api.allowed.add((READER["username"], "get", "/debug/flags/v"))
    async with ClientSession() as session:
        async with session.put(url + "/debug/flags/v", data=b"2", headers=headers, ssl=False) as r:
            assert r.status == 403
            assert 'cannot put path \\"/debug/flags/v\\"' in await r.text()
        api.allowed.add((READER["username"], "put", "/debug/flags/v"))
        async with session.put(url + "/debug/flags/v", data=b"2", headers=headers, ssl=False) as r:
            assert r.status == 200
    assert levels.set == [2]
    reviews = [body["spec"] for path, body in api.requests if "subjectaccessreviews" in path]
    assert {"path": "/debug/flags/v", "verb": "put"} in [
        r["nonResourceAttributes"] for r in reviews
    ]


def test_flagz_leaves_out_the_flags_kube_scheduler_removed() -> None:
    """--address, --algorithm-provider ... are recognised only to refuse them with a reason:
    /flagz lists the flags a kube-scheduler of today has, not those."""
    import argparse

    from scheduler.app.commands.run import command_line_flags
    from scheduler.app.commands.run_flags import add_arguments
    from scheduler.app.commands.upstream_flags import REMOVED

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = command_line_flags(parser.parse_args([]))

    assert {"address", "algorithm-provider", "port", "policy-config-file"} <= {
        name[2:] for name in REMOVED
    }
    assert not {name[2:] for name in REMOVED} & set(flags)
    assert {"secure-port", "bind-address", "leader-elect"} <= set(flags)


async def test_statusz_names_no_go_version(plain: tuple[str, SchedulerService, Levels]) -> None:
    url, _, _ = plain
    _, _, text = await get(url + "/statusz")
    _, _, structured = await get(url + "/statusz", STATUSZ_BETA)

    assert "Go version" not in text and "CPython" not in text
    assert "goVersion" not in orjson.loads(structured)
