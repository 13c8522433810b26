"""HTTPExtender against a real aiohttp server: wire format, verbs, errors, interest, TLS.

Upstream: pkg/scheduler/extender.go and extender_test.go (TestIsInterested,
TestConvertToMetaVictims, TestConvertToVictims).
"""

from __future__ import annotations

import base64
import ssl
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from fake_extender import FakeExtender, node_names, sleeping

from kubesim.tls import self_signed
from profiles.config import Extender, ExtenderManagedResource, ExtenderTLS
from scheduler.extenders import (
    DEFAULT_EXTENDER_TIMEOUT,
    ExtenderConfigError,
    ExtenderError,
    ExtenderSet,
    HostPriority,
    HTTPExtender,
    MetaVictims,
    Victims,
)
from scheduler.extenders.tls import ssl_context_for
from scheduler.extenders.types import convert_to_meta_victims
from scheduler.testing import make_node, make_node_info, make_pod, snapshot_of


def extender(url: str, **kwargs: Any) -> HTTPExtender:
    return HTTPExtender(Extender(url_prefix=url, **kwargs))


NODES = [make_node_info(make_node(f"node{i}", labels={"i": str(i)})) for i in range(3)]
POD = make_pod("p", uid="uid-p", containers=[{"cpu": "1"}])


# ---- wire format ------------------------------------------------------------------------------


@pytest.mark.parametrize("cache_capable", [False, True])
async def test_filter_sends_upstream_extender_args(cache_capable: bool) -> None:
    async with FakeExtender({"filter": lambda args: {"NodeNames": ["node1"]}}) as server:
        ext = extender(server.url, filter_verb="filter", node_cache_capable=cache_capable)
        await ext.filter(POD, NODES)
        await ext.close()
    [(path, args)] = server.requests
    assert path == "/filter"
    assert set(args) == {"Pod", "Nodes", "NodeNames"}
    assert args["Pod"]["metadata"]["uid"] == "uid-p"
    if cache_capable:
        assert args["Nodes"] is None
        assert args["NodeNames"] == ["node0", "node1", "node2"]
    else:
        assert args["NodeNames"] is None
        assert args["Nodes"]["metadata"] == {}
        assert [n["metadata"]["labels"]["i"] for n in args["Nodes"]["items"]] == ["0", "1", "2"]


@pytest.mark.parametrize(
    ("prefix", "url_suffix"),
    [("", ""), ("/scheduler", "/scheduler"), ("/scheduler", "/scheduler/")],
)
async def test_url_is_prefix_slash_verb(prefix: str, url_suffix: str) -> None:
    async with FakeExtender({"sort": lambda args: []}, prefix=prefix) as server:
        base = server.url.removesuffix(prefix) + url_suffix
        ext = extender(base, prioritize_verb="sort", weight=1)
        assert await ext.prioritize(POD, NODES) == ([], 1)
        await ext.close()
    assert [path for path, _ in server.requests] == [f"{prefix}/sort"]


FILTER_CASES = [
    # (name, cache capable, answer, want passed, want failed, want unresolvable)
    ("node names", True, {"NodeNames": ["node2", "node0"]}, ["node2", "node0"], {}, {}),
    (
        "node list",
        False,
        {"Nodes": {"items": [{"metadata": {"name": "node1"}}]}},
        ["node1"],
        {},
        {},
    ),
    (
        "names ignored without a node cache",
        False,
        {"NodeNames": ["node1"], "Nodes": {"items": []}},
        [],
        {},
        {},
    ),
    (
        "node list used when a cache-capable extender sends no names",
        True,
        {"Nodes": {"items": [{"metadata": {"name": "node0"}}]}},
        ["node0"],
        {},
        {},
    ),
    (
        "keys matched case-insensitively, as Go does",
        True,
        {"nodenames": ["node1"], "failedNodes": {"node0": "no"}},
        ["node1"],
        {"node0": "no"},
        {},
    ),
    (
        "failed and unresolvable maps",
        True,
        {
            "NodeNames": [],
            "FailedNodes": {"node0": "busy", "node1": "busy"},
            "FailedAndUnresolvableNodes": {"node1": "never", "node2": "never"},
        },
        [],
        {"node0": "busy", "node1": "busy"},
        {"node1": "never", "node2": "never"},
    ),
    ("null answer keeps nothing", True, None, [], {}, {}),
]


@pytest.mark.parametrize(
    ("name", "cache_capable", "answer", "passed", "failed", "unresolvable"),
    FILTER_CASES,
    ids=[case[0] for case in FILTER_CASES],
)
async def test_filter_results(
    name: str,
    cache_capable: bool,
    answer: Any,
    passed: list[str],
    failed: dict[str, str],
    unresolvable: dict[str, str],
) -> None:
    async with FakeExtender({"filter": lambda args: answer}) as server:
        ext = extender(server.url, filter_verb="filter", node_cache_capable=cache_capable)
        got, got_failed, got_unresolvable = await ext.filter(POD, NODES)
        await ext.close()
    assert [info.node_name for info in got] == passed
    assert all(info in NODES for info in got)  # the scheduler's own NodeInfos
    assert got_failed == failed
    assert got_unresolvable == unresolvable


def _status(code: int) -> Any:
    return lambda args: web.Response(status=code, text="no")


ERROR_CASES = [
    # (name, verb, handler, message fragment)
    ("error field", "filter", lambda args: {"Error": "disk pressure"}, "disk pressure"),
    (
        "unknown node name",
        "filter",
        lambda args: {"NodeNames": ["node9"]},
        "extender '<ext>' claims a filtered node 'node9' which is not found in the input node list",
    ),
    (
        "HTTP 500",
        "filter",
        _status(500),
        "failed filter with extender at URL <ext>/filter, code 500",
    ),
    ("HTTP 404", "prioritize", _status(404), "failed prioritize with extender at URL"),
    (
        "not JSON",
        "filter",
        lambda args: web.Response(text="{nope"),
        "extender <ext> filter: invalid response:",
    ),
    (
        "wrong JSON type",
        "filter",
        lambda args: [1, 2],
        "extender <ext> filter: invalid response: cannot unmarshal array into ExtenderFilterResult",
    ),
    (
        "float score",
        "prioritize",
        lambda args: [{"Host": "node0", "Score": 1.5}],
        "cannot unmarshal number into HostPriority.Score of type int64",
    ),
    ("bind error field", "bind", lambda args: {"Error": "quota exceeded"}, "quota exceeded"),
]


@pytest.mark.parametrize(
    ("name", "verb", "handler", "fragment"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES]
)
async def test_errors_name_the_extender_and_verb(
    name: str, verb: str, handler: Any, fragment: str
) -> None:
    async with FakeExtender({verb: handler}) as server:
        ext = extender(
            server.url,
            filter_verb="filter",
            prioritize_verb="prioritize",
            bind_verb="bind",
            weight=1,
            node_cache_capable=True,
        )
        with pytest.raises(ExtenderError) as caught:
            if verb == "filter":
                await ext.filter(POD, NODES)
            elif verb == "prioritize":
                await ext.prioritize(POD, NODES)
            else:
                await ext.bind("p", "default", "uid-p", "node0")
        await ext.close()
    assert fragment.replace("<ext>", server.url) in str(caught.value)
    assert caught.value.extender == server.url
    assert caught.value.verb == verb


async def test_prioritize_scores_and_weight() -> None:
    answer = [{"Host": "node0", "Score": 3}, {"host": "node1", "score": 10}]
    async with FakeExtender({"prioritize": lambda args: answer}) as server:
        ext = extender(server.url, prioritize_verb="prioritize", weight=4)
        assert await ext.prioritize(POD, NODES) == (
            [HostPriority("node0", 3), HostPriority("node1", 10)],
            4,
        )
        await ext.close()


async def test_verbs_not_configured_make_no_calls() -> None:
    async with FakeExtender({}) as server:
        ext = extender(server.url)
        assert await ext.filter(POD, NODES) == (NODES, {}, {})
        assert await ext.prioritize(POD, NODES) == (
            [HostPriority(n.node_name, 0) for n in NODES],
            0,
        )
        with pytest.raises(ExtenderError, match="unexpected empty bindVerb in extender"):
            await ext.bind("p", "default", "uid-p", "node0")
        with pytest.raises(ExtenderError, match="preempt verb is not defined"):
            await ext.process_preemption(POD, {}, snapshot_of(NODES))
        await ext.close()
    assert server.requests == []


async def test_bind_sends_binding_args() -> None:
    async with FakeExtender({"bind": lambda args: {"Error": ""}}) as server:
        ext = extender(server.url, bind_verb="bind")
        await ext.bind("p", "ns", "uid-p", "node1")
        await ext.close()
    assert server.calls("bind") == [
        {"PodName": "p", "PodNamespace": "ns", "PodUID": "uid-p", "Node": "node1"}
    ]


# ---- transport --------------------------------------------------------------------------------


async def test_timeout_is_http_timeout() -> None:
    async with FakeExtender({"filter": lambda args: sleeping(2, {})}) as server:
        ext = extender(server.url, filter_verb="filter", http_timeout=0.2)
        with pytest.raises(ExtenderError, match=r'Post ".*/filter": timed out after 0.2s'):
            await ext.filter(POD, NODES)
        await ext.close()


def test_default_timeout_is_upstreams() -> None:
    assert DEFAULT_EXTENDER_TIMEOUT == 5.0
    assert extender("http://x").timeout == 5.0
    assert extender("http://x", http_timeout=12.0).timeout == 12.0


async def test_connection_refused() -> None:
    async with FakeExtender({}) as server:
        url = server.url
    ext = extender(url, filter_verb="filter")
    with pytest.raises(ExtenderError, match=rf'^Post "{url}/filter": '):
        await ext.filter(POD, NODES)
    await ext.close()


# ---- interest (upstream TestIsInterested) -------------------------------------------------------


def _pod_with(field: str, resources: dict[str, str], init: bool = False) -> Any:
    pod = make_pod("p")
    raw = dict(pod.raw)
    container = {"name": "c", "image": "pause", "resources": {field: resources}}
    key = "initContainers" if init else "containers"
    raw["spec"] = {"containers": [{"name": "app", "image": "pause"}], key: [container]}
    if not init:
        raw["spec"] = {"containers": [container]}
    return type(pod).from_dict(raw)


INTEREST_CASES = [
    ("empty managed resources", (), make_pod("p"), True),
    ("managed memory, empty resources", ("memory",), make_pod("p", containers=[{}]), False),
    (
        "managed memory, container requests",
        ("memory",),
        _pod_with("requests", {"memory": "0"}),
        True,
    ),
    ("managed memory, container limits", ("memory",), _pod_with("limits", {"memory": "0"}), True),
    (
        "managed memory, init container",
        ("memory",),
        _pod_with("requests", {"memory": "0"}, init=True),
        True,
    ),
    (
        "managed gpu, pod asks cpu only",
        ("example.com/gpu",),
        _pod_with("requests", {"cpu": "1"}),
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "managed", "pod", "want"), INTEREST_CASES, ids=[c[0] for c in INTEREST_CASES]
)
def test_is_interested(name: str, managed: tuple[str, ...], pod: Any, want: bool) -> None:
    ext = extender("http://x", managed_resources=tuple(ExtenderManagedResource(m) for m in managed))
    assert ext.is_interested(pod) is want


def test_extender_set_puts_ignorable_last_and_collects_ignored_resources() -> None:
    configs = [
        Extender("http://a", ignorable=True),
        Extender(
            "http://b",
            managed_resources=(
                ExtenderManagedResource("example.com/gpu", ignored_by_scheduler=True),
                ExtenderManagedResource("example.com/fpga"),
            ),
        ),
        Extender("http://c"),
    ]
    extenders = ExtenderSet(configs)
    assert [e.name for e in extenders] == ["http://b", "http://c", "http://a"]
    assert extenders.ignored_resources == ("example.com/gpu",)


# ---- preemption (upstream TestConvertToMetaVictims / TestConvertToVictims) -----------------------


def test_convert_to_meta_victims() -> None:
    p1, p2, p3, p4 = (make_pod(f"pod{i}", uid=f"uid{i}") for i in (1, 2, 3, 4))
    victims = {"node1": Victims((p1, p3), 1), "node2": Victims((p2, p4), 2)}
    assert convert_to_meta_victims(victims) == {
        "node1": MetaVictims(("uid1", "uid3"), 1),
        "node2": MetaVictims(("uid2", "uid4"), 2),
    }


@pytest.mark.parametrize("cache_capable", [True, False])
async def test_process_preemption_round_trip(cache_capable: bool) -> None:
    p1, p2 = make_pod("pod1", uid="uid1", node_name="node1"), make_pod("pod2", uid="uid2")
    node1 = make_node_info(make_node("node1"), [p1])
    snapshot = snapshot_of([node1])
    answer = {
        "NodeNameToMetaVictims": {"node1": {"Pods": [{"UID": "uid1"}], "NumPDBViolations": 1}}
    }
    async with FakeExtender({"preempt": lambda args: answer}) as server:
        ext = extender(server.url, preempt_verb="preempt", node_cache_capable=cache_capable)
        got = await ext.process_preemption(POD, {"node1": Victims((p1, p2), 0)}, snapshot)
        await ext.close()
    assert got == {"node1": Victims((p1,), 1)}
    [args] = server.calls("preempt")
    if cache_capable:
        assert args["NodeNameToVictims"] is None
        assert args["NodeNameToMetaVictims"] == {
            "node1": {"Pods": [{"UID": "uid1"}, {"UID": "uid2"}], "NumPDBViolations": 0}
        }
    else:
        assert args["NodeNameToMetaVictims"] is None
        pods = args["NodeNameToVictims"]["node1"]["Pods"]
        assert [p["metadata"]["uid"] for p in pods] == ["uid1", "uid2"]


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (
            {"NodeNameToMetaVictims": {"node9": {"Pods": []}}},
            'nodeinfo not found for node name "node9"',
        ),
        (
            {"NodeNameToMetaVictims": {"node1": {"Pods": [{"UID": "uid9"}]}}},
            "claims to preempt pod (UID: uid9) on node: node1, but the pod is not found",
        ),
    ],
)
async def test_process_preemption_inconsistent_answers(answer: Any, fragment: str) -> None:
    snapshot = snapshot_of([make_node_info(make_node("node1"))])
    async with FakeExtender({"preempt": lambda args: answer}) as server:
        ext = extender(server.url, preempt_verb="preempt")
        with pytest.raises(ExtenderError) as caught:
            await ext.process_preemption(POD, {}, snapshot)
        await ext.close()
    assert fragment in str(caught.value)


# ---- TLS --------------------------------------------------------------------------------------


CERT = self_signed("127.0.0.1")
CA_DATA = base64.b64encode(CERT.cert_pem).decode()


def _tls_case(**kwargs: Any) -> Extender:
    tls = kwargs.pop("tls", None)
    return Extender("https://127.0.0.1:1", tls_config=tls, **kwargs)


TLS_CASES = [
    # (name, config, want: None | "verify" | "insecure" | error fragment)
    ("nothing set: default verification", _tls_case(), None),
    ("enableHTTPS without a CA: insecure", _tls_case(enable_https=True), "insecure"),
    (
        "enableHTTPS with caData: verify",
        _tls_case(enable_https=True, tls=ExtenderTLS(ca_data=CA_DATA)),
        "verify",
    ),
    ("insecure flag", _tls_case(tls=ExtenderTLS(insecure=True)), "insecure"),
    ("serverName only: verify", _tls_case(tls=ExtenderTLS(server_name="x")), "verify"),
    (
        "insecure with a CA",
        _tls_case(tls=ExtenderTLS(insecure=True, ca_data=CA_DATA)),
        "specifying a root certificates file with the insecure flag is not supported",
    ),
    ("bad base64", _tls_case(tls=ExtenderTLS(ca_data="!!!")), "tlsConfig.caData: not valid base64"),
    ("missing CA file", _tls_case(tls=ExtenderTLS(ca_file="/nonexistent/ca.crt")), "tlsConfig:"),
    ("cert without key", _tls_case(tls=ExtenderTLS(cert_data=CA_DATA)), "requires its key"),
]


@pytest.mark.parametrize(("name", "config", "want"), TLS_CASES, ids=[c[0] for c in TLS_CASES])
def test_tls_config_building(name: str, config: Extender, want: str | None) -> None:
    if want in (None, "verify", "insecure"):
        context = ssl_context_for(config)
        if want is None:
            assert context is None
        else:
            assert context is not None
            assert (context.verify_mode == ssl.CERT_NONE) is (want == "insecure")
    else:
        with pytest.raises(ExtenderConfigError, match=r"extenders\.tlsConfig") as caught:
            ssl_context_for(config)
        assert want in str(caught.value)


def test_client_certificate_from_data(tmp_path: Path) -> None:
    tls = ExtenderTLS(
        cert_data=base64.b64encode(CERT.cert_pem).decode(),
        key_data=base64.b64encode(CERT.key_pem).decode(),
        ca_data=CA_DATA,
    )
    assert ssl_context_for(Extender("https://x", tls_config=tls)) is not None


@pytest.mark.parametrize(
    ("config", "ok"),
    [
        ({"enable_https": True}, True),  # no CA: upstream skips verification
        ({"tls_config": ExtenderTLS(ca_data=CA_DATA)}, True),
        ({}, False),  # system roots do not know the self-signed certificate
    ],
)
async def test_https_extender(config: dict[str, Any], ok: bool) -> None:
    server_ssl = CERT.server_context()
    async with FakeExtender({"filter": node_names_answer}, ssl_context=server_ssl) as server:
        ext = extender(server.url, filter_verb="filter", node_cache_capable=True, **config)
        if ok:
            passed, _, _ = await ext.filter(POD, NODES)
            assert [i.node_name for i in passed] == ["node0", "node1", "node2"]
        else:
            with pytest.raises(ExtenderError, match="certificate"):
                await ext.filter(POD, NODES)
        await ext.close()


def node_names_answer(args: Any) -> Any:
    return {"NodeNames": node_names(args)}
