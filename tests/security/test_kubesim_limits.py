"""A real `aiosched cluster` refuses, with upstream's answers, what would otherwise take it
down or past its rules: a JSON patch of more than 10,000 operations (413) or whose copies add
more than 3 MiB (422), an object patched past 3 MiB (413, etcd's request limit), a CRD pattern
RE2 cannot compile, a backtracking pattern (matched in linear time), a selector estimated over
the CEL cost limit, a service-account token minted for another audience, unknown fields of
built-in kinds (kubectl's create and apply refuse them, or warn and drop them), and numbers too
long to be int64 (400, not 500). The store is left as it was.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from processes import Kubectl, Process, start_cluster, stopping
from security_harness import Api, nested_all

pytestmark = pytest.mark.e2e

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
JSON_PATCH = "application/json-patch+json"


@pytest.fixture(scope="module")
def kubesim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Process, Api, Path]]:
    workdir: Path = tmp_path_factory.mktemp("kubesim")
    cluster = start_cluster(workdir)
    with stopping(cluster):
        yield cluster, Api(workdir / "kubeconfig"), workdir


def configmap(api: Api, name: str, data: dict[str, str]) -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
    status, stored = api.call("POST", CONFIGMAPS, body)
    assert status == 201, stored
    return stored  # type: ignore[no-any-return]


def patch(
    api: Api, path: str, ops: Any, query: str = "", content_type: str = JSON_PATCH
) -> tuple[int, Any]:
    return api.call("PATCH", path + query, raw=json.dumps(ops).encode(), content_type=content_type)


def test_json_patch_limits(kubesim: tuple[Process, Api, Path]) -> None:
    _, api, _ = kubesim
    stored = configmap(api, "patched", {"a": "x"})
    path = f"{CONFIGMAPS}/patched"
    ops = [{"op": "test", "path": "/data/a", "value": "x"}] * 10_001
    status, answer = patch(api, path, ops)
    assert (status, answer["message"]) == (
        413,
        (
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, "
            "got 10001"
        ),
    )
    # 16 copies, each doubling the annotations: 6.5 GB unbounded
    ops = [{"op": "add", "path": "/metadata/annotations", "value": {"k": "v" * 100_000}}]
    for i in range(16):
        ops.append(
            {"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/c{i}"}
        )
    began = time.monotonic()
    status, answer = patch(api, path, ops)
    assert time.monotonic() - began < 5
    assert status == 422, answer
    assert answer["message"].startswith(
        "Unable to complete the copy, the accumulated size increase of copy is "
    )
    assert answer["message"].endswith("exceeding the limit 3145728")
    # a merge patch cannot make an object larger than etcd takes either
    big = {"data": {f"k{i}": "z" * 1_000_000 for i in range(2)}}
    status, answer = patch(api, path, big, content_type="application/merge-patch+json")
    assert status in (201, 200), answer  # 2 MB: fits
    big = {"data": {f"k{i}": "z" * 1_000_000 for i in range(2, 4)}}
    status, answer = patch(api, path, big, content_type="application/merge-patch+json")
    assert (status, answer["message"]) == (413, "Request entity too large: limit is 3145728")
    status, now = api.call("GET", path)
    assert sorted(now["data"]) == ["a", "k0", "k1"]
    assert stored["metadata"]["uid"] == now["metadata"]["uid"]


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {"name": {"type": "string", "pattern": "^(a+)+$"}},
                            }
                        },
                    }
                },
            }
        ],
    },
}
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def test_crd_patterns_are_re2(kubesim: tuple[Process, Api, Path]) -> None:
    _, api, _ = kubesim
    refused = json.loads(json.dumps(CRD).replace("^(a+)+$", "^(a)\\\\1$"))
    status, answer = api.call("POST", CRDS, refused)
    assert status == 422, answer
    assert (
        "must be a valid regular expression, but isn't: error parsing regexp: "
        "invalid escape sequence" in answer["message"]
    )
    status, answer = api.call("POST", CRDS, CRD)
    assert status == 201, answer
    widgets = "/apis/example.com/v1/namespaces/default/widgets"
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"name": "a" * 28 + "!"},
    }
    for _ in range(100):  # the CRD is served once its status says so
        began = time.monotonic()
        status, answer = api.call("POST", widgets, widget)
        if status != 404:
            break
        time.sleep(0.1)
    assert time.monotonic() - began < 1  # 12 s with a backtracking matcher
    assert status == 422, answer
    assert "spec.name in body should match '^(a+)+$'" in answer["message"]


def test_kubesim_refuses_a_selector_estimated_over_the_cost_limit(
    kubesim: tuple[Process, Api, Path],
) -> None:
    _, api, _ = kubesim
    path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"

    def claim(name: str, expression: str) -> dict[str, Any]:
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "gpu.kubesim.io",
                                "selectors": [{"cel": {"expression": expression}}],
                            },
                        }
                    ]
                }
            },
        }

    status, answer = api.call("POST", path, claim("five", nested_all(5)))
    assert status == 422, answer
    assert answer["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: too complex, exceeds cost limit",
            "field": "spec.devices.requests[0].exactly.selectors[0].cel.expression",
        }
    ]
    assert api.call("GET", f"{path}/five")[0] == 404  # nothing stored
    status, answer = api.call("POST", path, claim("three", nested_all(3)))
    assert status == 201, answer  # estimated 17,261: under the limit, as upstream


def test_a_token_for_another_audience_opens_nothing(kubesim: tuple[Process, Api, Path]) -> None:
    _, api, workdir = kubesim
    kubectl = Kubectl(workdir)
    kubectl("create", "serviceaccount", "vaulted")
    kubectl(
        "create",
        "clusterrolebinding",
        "vaulted-admin",
        "--clusterrole=cluster-admin",
        "--serviceaccount=default:vaulted",
    )
    foreign = kubectl("create", "token", "vaulted", "--audience=vault").strip()
    own = kubectl("create", "token", "vaulted").strip()
    assert api.call("GET", CONFIGMAPS, token=own)[0] == 200
    status, answer = api.call("GET", CONFIGMAPS, token=foreign)
    assert (status, answer["message"]) == (401, "Unauthorized")


def test_strict_patch_refuses_unknown_fields_of_built_in_kinds(
    kubesim: tuple[Process, Api, Path],
) -> None:
    _, api, _ = kubesim
    configmap(api, "strict", {"a": "1"})
    path = f"{CONFIGMAPS}/strict"
    status, answer = patch(
        api, path, {"bogus": 1}, "?fieldValidation=Strict", "application/merge-patch+json"
    )
    assert (status, answer["reason"]) == (422, "Invalid")
    assert answer["message"].endswith('strict decoding error: unknown field "bogus"')
    assert "bogus" not in api.call("GET", path)[1]


def run_kubectl(workdir: Path, manifest: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", *args, "-f", "-"],
        input=manifest,
        capture_output=True,
        text=True,
        env=Kubectl(workdir).env,
        timeout=60,
    )


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
def test_kubectl_refuses_or_warns_about_unknown_fields_and_never_stores_them(
    kubesim: tuple[Process, Api, Path],
) -> None:
    """kubectl sends fieldValidation=Strict: create and apply (a strategic merge patch once
    the object exists) fail as against a real API server; with --validate=warn they warn and
    the field is dropped."""
    _, _, workdir = kubesim
    kubectl = Kubectl(workdir)
    document = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "unknown-fields"},
        "spec": {"ports": [{"port": 80, "colour": "red"}], "foo": 1},
    }
    manifest = json.dumps(document)
    for verb in ("create", "apply"):
        refused = run_kubectl(workdir, manifest, verb)
        assert refused.returncode != 0
        assert (
            'Service in version "v1" cannot be handled as a Service: strict decoding error: '
            'unknown field "spec.foo", unknown field "spec.ports[0].colour"'
        ) in refused.stderr
    assert "unknown-fields" not in kubectl("get", "services", "-o", "name")
    warned = run_kubectl(workdir, manifest, "apply", "--validate=warn")
    assert warned.returncode == 0, warned.stderr
    assert 'Warning: unknown field "spec.foo"' in warned.stderr
    assert 'Warning: unknown field "spec.ports[0].colour"' in warned.stderr
    stored = kubectl.json("service", "unknown-fields")
    assert "foo" not in stored["spec"] and "colour" not in stored["spec"]["ports"][0]
    # the object exists: apply now patches it (strategic merge)
    document["spec"]["bar"] = 2
    refused = run_kubectl(workdir, json.dumps(document), "apply")
    assert refused.returncode != 0
    assert refused.stderr.startswith("The request is invalid: patch: Invalid value: ")  # 422
    assert "strict decoding error: " in refused.stderr
    assert 'unknown field "spec.bar"' in refused.stderr
    warned = run_kubectl(workdir, json.dumps(document), "apply", "--validate=warn")
    assert warned.returncode == 0, warned.stderr
    assert 'Warning: unknown field "spec.bar"' in warned.stderr
    assert "bar" not in kubectl.json("service", "unknown-fields")["spec"]


@pytest.mark.parametrize(
    "query",
    [
        "labelSelector=a>" + "9" * 5000,
        "labelSelector=a<" + "9" * 5000,
        "watch=true&timeoutSeconds=" + "9" * 400,
    ],
)
def test_numbers_too_long_for_int64_are_400(kubesim: tuple[Process, Api, Path], query: str) -> None:
    _, api, _ = kubesim
    status, answer = api.call("GET", f"{CONFIGMAPS}?{query}")
    assert status == 400, answer
