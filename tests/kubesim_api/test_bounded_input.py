"""Bounded input over HTTP: nesting depth, body size, huge quantities, refused query parameters
and media types. Every refusal is a Status with upstream's code, and nothing is stored."""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

from kubesim import errors, json_limits
from kubesim.cluster import Cluster, ClusterConfig
from kubesim.server import ServerOptions, build_app

TOKEN = "bounded-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PODS = "/api/v1/namespaces/default/pods"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


def nested(depth: int) -> str:
    """JSON text of an object nested `depth` levels ({"x": {"x": ... {}}})."""
    return '{"x":' * (depth - 1) + "{}" + "}" * (depth - 1)


def pod_with_unknown_field(name: str, depth: int) -> bytes:
    """A pod with spec.zz nested so that the whole pod is `depth` levels deep."""
    inner = nested(depth - 2)  # pod -> spec -> zz
    return (
        f'{{"metadata":{{"name":"{name}"}},"spec":{{"containers":[{{"name":"c",'
        f'"image":"busybox"}}],"zz":{inner}}}}}'
    ).encode()


class Http:
    def __init__(self, client: TestClient[Any, Any]) -> None:
        self.client = client

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str | None = "application/json",
        **params: str,
    ) -> tuple[int, Any]:
        data = body if body is None or isinstance(body, bytes) else orjson.dumps(body)
        headers = dict(AUTH)
        if content_type is not None:
            headers["Content-Type"] = content_type
        async with self.client.request(
            method, path, data=data, headers=headers, params=params
        ) as response:
            raw = await response.read()
            return response.status, orjson.loads(raw) if raw else None

    async def pods(self) -> list[tuple[str, str]]:
        status, body = await self.call("GET", PODS)
        assert status == 200, body
        return [(p["metadata"]["name"], p["metadata"]["resourceVersion"]) for p in body["items"]]


@contextlib.asynccontextmanager
async def serving(token: str) -> AsyncIterator[TestClient[Any, Any]]:
    """A client of a fresh in-process kubesim (no nodes) that takes `token`."""
    cluster = Cluster(ClusterConfig(nodes=0, token=token), rng=random.Random(3))
    await cluster._bootstrap()
    app = build_app(cluster.api, ServerOptions(token=token))
    async with TestClient(TestServer(app)) as client:
        yield client


@pytest.fixture
async def http() -> AsyncIterator[Http]:
    async with serving(TOKEN) as client:
        yield Http(client)


def assert_status(status: int, body: Any, code: int, reason: str) -> None:
    assert (status, body["kind"], body["code"], body["reason"]) == (code, "Status", code, reason)


# ---- nesting depth -------------------------------------------------------------------------------


async def test_a_body_nested_300_deep_is_refused_and_nothing_is_stored(http: Http) -> None:
    before = await http.pods()
    status, body = await http.call("POST", PODS, pod_with_unknown_field("deep", 300))
    assert_status(status, body, 400, "BadRequest")
    assert "nested deeper than 100 levels" in body["message"]
    assert await http.pods() == before  # listing still works: nothing poisoned it


async def test_a_body_at_the_depth_limit_is_accepted_and_served_back(http: Http) -> None:
    raw = pod_with_unknown_field("deepest", json_limits.MAX_REQUEST_DEPTH)
    status, body = await http.call("POST", PODS, raw, fieldValidation="Ignore")
    assert status == 201, body
    assert [name for name, _ in await http.pods()] == ["deepest"]


@pytest.mark.parametrize(
    ("method", "suffix", "content_type"),
    [
        ("PUT", "/p", "application/json"),
        ("PUT", "/p/status", "application/json"),
        ("PATCH", "/p", MERGE_PATCH),
        ("PATCH", "/p", STRATEGIC_PATCH),
        ("PATCH", "/p/status", MERGE_PATCH),
        ("POST", "/p/binding", "application/json"),
        ("POST", "/p/eviction", "application/json"),
    ],
)
async def test_deep_bodies_are_refused_on_every_write(
    http: Http, method: str, suffix: str, content_type: str
) -> None:
    assert (await http.call("POST", PODS, pod("p")))[0] == 201
    before = await http.pods()
    raw = pod_with_unknown_field("p", 300)
    status, body = await http.call(method, PODS + suffix, raw, content_type)
    assert_status(status, body, 400, "BadRequest")
    assert await http.pods() == before


async def test_a_deep_json_patch_is_refused(http: Http) -> None:
    assert (await http.call("POST", PODS, pod("p")))[0] == 201
    before = await http.pods()
    ops = f'[{{"op":"add","path":"/spec/zz","value":{nested(300)}}}]'.encode()
    status, body = await http.call("PATCH", PODS + "/p", ops, JSON_PATCH)
    assert_status(status, body, 400, "BadRequest")
    assert await http.pods() == before


async def test_json_patches_cannot_grow_an_object_past_what_the_server_serializes(
    http: Http,
) -> None:
    """Each JSON patch is within the request limit (its path is a string, not nesting); together
    they would nest the stored object past orjson's 254 levels. The write that would go too deep
    is refused with 422 and changes nothing; every list still serializes. A ControllerRevision's
    `data` keeps any JSON (a RawExtension), so nothing of it is pruned."""
    revisions = "/apis/apps/v1/namespaces/default/controllerrevisions"
    created = {"metadata": {"name": "cm"}, "revision": 1, "data": {"zz": orjson.loads(nested(90))}}
    status, body = await http.call("POST", revisions, created)
    assert status == 201, body
    pointer = "/data/zz" + "/x" * 88  # the innermost {} of zz
    outcomes = []
    for _ in range(4):
        raw = f'[{{"op":"add","path":"{pointer}/y","value":{nested(90)}}}]'.encode()
        status, body = await http.call("PATCH", f"{revisions}/cm", raw, JSON_PATCH)
        outcomes.append(status)
        listed_status, listed = await http.call("GET", revisions)
        assert listed_status == 200, listed
        if status != 200:
            assert_status(status, body, 422, "Invalid")
            assert f"nested deeper than {json_limits.MAX_STORED_DEPTH} levels" in body["message"]
            break
        pointer += "/y" + "/x" * 89
    assert outcomes == [200, 422]


# ---- body size -----------------------------------------------------------------------------------


async def test_a_body_over_3_mib_is_refused_with_413(http: Http) -> None:
    big = pod("big")
    big["metadata"]["annotations"] = {"a": "x" * errors.MAX_BODY_BYTES}
    status, body = await http.call("POST", PODS, big)
    assert_status(status, body, 413, "RequestEntityTooLarge")
    assert body["message"] == f"Request entity too large: limit is {errors.MAX_BODY_BYTES}"
    assert await http.pods() == []


# ---- quantities ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cpu", "stored"),
    [
        ("1e999999999", "9223372036854775807"),  # capped at upstream's maxAllowed
        ("1e3000000", "9223372036854775807"),
        # rounded up to one nano unit, then to milli by SetDefaults_ResourceList
        ("1e-999999999", "1e-3"),
        ("0e999999999", "0"),  # a zero mantissa is zero whatever the exponent
    ],
)
async def test_huge_exponents_are_answered_with_the_bounded_value(
    http: Http, cpu: str, stored: str
) -> None:
    spec = {
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]
    }
    status, body = await http.call("POST", PODS, {"metadata": {"name": "q"}, "spec": spec})
    assert status == 201, body
    assert body["spec"]["containers"][0]["resources"]["requests"]["cpu"] == stored


async def test_an_exponent_beyond_int32_is_refused(http: Http) -> None:
    spec = {
        "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1e2147483648"}}}
        ]
    }
    status, body = await http.call("POST", PODS, {"metadata": {"name": "q"}, "spec": spec})
    assert status in (400, 422), body
    assert "unable to parse quantity's suffix" in body["message"]
    assert await http.pods() == []


# ---- query parameters and media types ------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "code", "message"),
    [
        (
            {"resourceVersion": "abc"},
            400,
            'invalid resource version: resourceVersion: Invalid value: "abc": '
            'strconv.ParseUint: parsing "abc": invalid syntax',
        ),
        (
            {"resourceVersion": "-1"},
            400,
            'invalid resource version: resourceVersion: Invalid value: "-1": '
            'strconv.ParseUint: parsing "-1": invalid syntax',
        ),
        (
            {"resourceVersion": "5", "resourceVersionMatch": "Bogus"},
            422,
            'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: '
            '"Bogus": supported values: "Exact", "NotOlderThan", ""',
        ),
        (
            {"resourceVersionMatch": "Exact"},
            422,
            'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            {"resourceVersion": "0", "resourceVersionMatch": "Exact"},
            422,
            'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
            'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        ),
        (
            {"watch": "true", "resourceVersionMatch": "Exact", "timeoutSeconds": "1"},
            422,
            'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: '
            '"Exact": supported values: "NotOlderThan"',
        ),
    ],
)
async def test_list_options_upstream_refuses(
    http: Http, params: dict[str, str], code: int, message: str
) -> None:
    status, body = await http.call("GET", PODS, **params)
    assert_status(status, body, code, "BadRequest" if code == 400 else "Invalid")
    assert body["message"] == message


@pytest.mark.parametrize(
    "params",
    [{"resourceVersion": "0"}, {"resourceVersion": "1", "resourceVersionMatch": "NotOlderThan"}],
)
async def test_list_options_upstream_accepts(http: Http, params: dict[str, str]) -> None:
    assert (await http.call("GET", PODS, **params))[0] == 200


async def test_empty_set_selector_parses_as_upstreams_does(http: Http) -> None:
    """apimachinery labels/selector.go parseValues reads "()" as the set {""}: accepted."""
    assert (await http.call("POST", PODS, pod("p")))[0] == 201
    status, body = await http.call("GET", PODS, labelSelector="a in ()")
    assert (status, body["items"]) == (200, [])
    status, body = await http.call("GET", PODS, labelSelector="a notin ()")
    assert [p["metadata"]["name"] for p in body["items"]] == ["p"]


@pytest.mark.parametrize(
    ("method", "path", "content_type", "kind"),
    [
        ("POST", PODS, "application/json", "CreateOptions"),
        ("PUT", PODS + "/p", "application/json", "UpdateOptions"),
        ("PATCH", PODS + "/p", MERGE_PATCH, "PatchOptions"),
    ],
)
async def test_an_unknown_field_validation_directive_is_refused(
    http: Http, method: str, path: str, content_type: str, kind: str
) -> None:
    assert (await http.call("POST", PODS, pod("p")))[0] == 201
    before = await http.pods()
    status, body = await http.call(method, path, pod("p"), content_type, fieldValidation="Bogus")
    assert_status(status, body, 422, "Invalid")
    assert body["message"] == (
        f'{kind}.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus": '
        'supported values: "", "Ignore", "Strict", "Warn"'
    )
    assert await http.pods() == before


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
async def test_a_create_in_an_unknown_media_type_is_refused_with_415(
    http: Http, content_type: str
) -> None:
    status, body = await http.call("POST", PODS, pod("p"), content_type)
    assert_status(status, body, 415, "UnsupportedMediaType")
    assert body["message"].startswith(
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json"
    )
    assert await http.pods() == []


async def test_a_create_without_content_type_is_read_as_json(http: Http) -> None:
    async with http.client.post(
        PODS, data=orjson.dumps(pod("p")), headers=AUTH, skip_auto_headers=["Content-Type"]
    ) as response:
        assert response.status == 201


# ---- --data-dir ----------------------------------------------------------------------------------


async def test_refused_writes_leave_the_data_dir_serving_after_restart(tmp_path: Path) -> None:
    """With a journal, a refused deep write is neither stored nor journaled: a restart from the
    data dir lists pods, and the next write is answered."""
    config = ClusterConfig(nodes=0, tls=False, data_dir=tmp_path / "data")
    for _ in range(2):
        cluster = Cluster(config, rng=random.Random(4))
        await cluster.start()
        try:
            async with aiohttp.ClientSession(
                cluster.url, headers={"Authorization": f"Bearer {cluster.token}"}
            ) as session:
                async with session.post(
                    PODS,
                    data=pod_with_unknown_field("deep", 300),
                    headers={"Content-Type": "application/json"},
                ) as r:
                    assert r.status == 400
                async with session.get(PODS) as r:
                    assert r.status == 200
                    names = [p["metadata"]["name"] for p in (await r.json())["items"]]
                async with session.post(PODS, json=pod(f"p{len(names)}")) as r:
                    assert r.status == 201
        finally:
            await cluster.stop()
    assert names == ["p0"]


# ---- malformed input that used to answer 500 -----------------------------------------------------


async def bound_pod(http: Http, name: str = "b") -> None:
    status, body = await http.call("POST", PODS, pod(name, nodeName="n1"))
    assert status == 201, body


async def test_the_longest_grace_period_is_accepted(http: Http) -> None:
    await bound_pod(http)
    status, body = await http.call("DELETE", PODS + "/b", gracePeriodSeconds=str(2**63 - 1))
    assert status == 200, body
    assert body["metadata"]["deletionGracePeriodSeconds"] == 2**63 - 1
    assert body["metadata"]["deletionTimestamp"]


@pytest.mark.parametrize(
    ("options", "code", "message"),
    [
        (
            {"gracePeriodSeconds": "5"},
            400,
            "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds "
            "of type int64",
        ),
        (
            {"gracePeriodSeconds": 2**63},
            400,
            "json: cannot unmarshal number into Go struct field DeleteOptions.gracePeriodSeconds "
            "of type int64",
        ),
        (
            {"preconditions": "x"},
            400,
            "json: cannot unmarshal string into Go struct field DeleteOptions.preconditions "
            "of type v1.Preconditions",
        ),
        (
            {"preconditions": {"uid": 5}},
            400,
            "json: cannot unmarshal number into Go struct field Preconditions.preconditions.uid of "
            "type string",
        ),
        (
            {"propagationPolicy": "Bogus"},
            422,
            'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
            '"Bogus": supported values: "Foreground", "Background", "Orphan", "nil"',
        ),
        ([1], 400, "the body of the request must be a JSON object"),
    ],
)
async def test_malformed_delete_options_are_refused(
    http: Http, options: Any, code: int, message: str
) -> None:
    await bound_pod(http)
    before = await http.pods()
    for path in (PODS + "/b", PODS + "/b/eviction"):
        body = (
            options
            if path.endswith("/b") or not isinstance(options, dict)
            else {"metadata": {"name": "b"}, "deleteOptions": options}
        )
        status, answer = await http.call(
            "DELETE" if path.endswith("/b") else "POST", path, orjson.dumps(body)
        )
        assert_status(status, answer, code, "BadRequest" if code == 400 else "Invalid")
        assert answer["message"] == message
    assert await http.pods() == before


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (
            PODS + "/p/eviction",
            {"deleteOptions": "x"},
            'Eviction in version "v1" cannot be handled as a Eviction: json: cannot unmarshal '
            "string into Go struct field Eviction.deleteOptions of type v1.DeleteOptions",
        ),
        (
            PODS + "/p/binding",
            {"target": ["n1"]},
            'Binding in version "v1" cannot be handled as a Binding: json: cannot unmarshal array '
            "into Go struct field Binding.target of type v1.ObjectReference",
        ),
        (
            "/api/v1/namespaces/default/bindings",
            {"metadata": "p"},
            'Binding in version "v1" cannot be handled as a Binding: json: cannot unmarshal string '
            "into Go struct field Binding.metadata of type v1.ObjectMeta",
        ),
        (PODS + "/p/binding", None, "the body of the request must be a JSON object"),
    ],
)
async def test_malformed_subresource_bodies_are_refused(
    http: Http, path: str, body: Any, message: str
) -> None:
    assert (await http.call("POST", PODS, pod("p")))[0] == 201
    before = await http.pods()
    status, answer = await http.call("POST", path, orjson.dumps(body))
    assert_status(status, answer, 400, "BadRequest")
    assert answer["message"] == message
    assert await http.pods() == before


async def test_a_warning_about_a_field_name_with_a_line_break_is_escaped(http: Http) -> None:
    """The Warning header names the unknown field; a raw line break there broke the response."""
    body = pod("p")
    body["spec"]["a\r\nb"] = 1
    async with http.client.post(
        PODS, data=orjson.dumps(body), headers={**AUTH, "Content-Type": "application/json"}
    ) as r:
        assert r.status == 201
        assert r.headers.getall("Warning") == ['299 - "unknown field \\"spec.a\\r\\nb\\""']
