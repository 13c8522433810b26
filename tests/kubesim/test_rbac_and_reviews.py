"""RBAC objects, service account tokens, TokenReview and SubjectAccessReview in kubesim.

RBAC objects are validated and defaulted as upstream's; a token from `serviceaccounts/NAME/token`
authenticates as the service account and its requests are decided by RBAC with upstream's 403
message; TokenReview and SubjectAccessReview answer what delegated authentication and
authorization (kube-scheduler's secure port) ask.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesim import rbac
from kubesim.authn import ADMIN

Kube = Any  # the `kube` fixture (tests/kubesim/conftest.py)

RBAC = "/apis/rbac.authorization.k8s.io/v1"
SA = "system:serviceaccount:default:robot"


def cluster_role(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": list(rules),
    }


def binding(
    kind: str, name: str, role_kind: str, role: str, *subjects: dict[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "roleRef": {"kind": role_kind, "name": role},
        "subjects": list(subjects),
    }


ROBOT = {"kind": "ServiceAccount", "name": "robot", "namespace": "default"}


async def service_account_token(kube: Kube, name: str = "robot", **spec: Any) -> str:
    status, _ = await kube.call(
        "POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": name}}
    )
    assert status in (201, 409)
    status, body = await kube.call(
        "POST",
        f"/api/v1/namespaces/default/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
    )
    assert status == 201, body
    return str(body["status"]["token"])


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# ---- RBAC objects ----------------------------------------------------------------------------


async def test_roles_take_colon_names_and_bindings_are_defaulted(kube: Kube) -> None:
    status, role = await kube.call(
        "POST",
        f"{RBAC}/clusterroles",
        cluster_role(
            "aiosched:reader", {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}
        ),
    )
    assert status == 201, role
    user = {"kind": "User", "name": "alice"}
    status, created = await kube.call(
        "POST",
        f"{RBAC}/clusterrolebindings",
        binding(
            "ClusterRoleBinding", "aiosched:reader", "ClusterRole", "aiosched:reader", user, ROBOT
        ),
    )
    assert status == 201, created
    assert created["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    assert created["subjects"][0]["apiGroup"] == "rbac.authorization.k8s.io"
    assert "apiGroup" not in created["subjects"][1]


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (
            f"{RBAC}/clusterroles",
            cluster_role("r", {"apiGroups": [""], "resources": ["pods"]}),
            'ClusterRole.rbac.authorization.k8s.io "r" is invalid: rules[0].verbs: Required '
            "value: verbs must contain at least one value",
        ),
        (
            f"{RBAC}/namespaces/default/roles",
            {
                "metadata": {"name": "r"},
                "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
            },
            'Role.rbac.authorization.k8s.io "r" is invalid: rules[0].nonResourceURLs: Invalid '
            'value: []string{"/metrics"}: namespaced rules cannot apply to non-resource URLs',
        ),
        (
            f"{RBAC}/clusterroles",
            cluster_role(
                "r", {"nonResourceURLs": ["/metrics"], "resources": ["pods"], "verbs": ["get"]}
            ),
            'ClusterRole.rbac.authorization.k8s.io "r" is invalid: rules[0].nonResourceURLs: '
            'Invalid value: []string{"/metrics"}: rules cannot apply to both regular resources '
            "and non-resource URLs",
        ),
        (
            f"{RBAC}/clusterrolebindings",
            binding("ClusterRoleBinding", "b", "Role", "r", ROBOT),
            'ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef.kind: '
            'Unsupported value: "Role": supported values: "ClusterRole"',
        ),
        (
            f"{RBAC}/clusterrolebindings",
            binding(
                "ClusterRoleBinding",
                "b",
                "ClusterRole",
                "r",
                {"kind": "ServiceAccount", "name": "robot"},
            ),
            'ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: '
            "subjects[0].namespace: Required value",
        ),
        (
            f"{RBAC}/clusterroles",
            cluster_role("a/b"),
            'ClusterRole.rbac.authorization.k8s.io "a/b" is invalid: metadata.name: Invalid '
            "value: \"a/b\": may not contain '/'",
        ),
    ],
)
async def test_invalid_rbac_objects_are_refused_with_upstream_messages(
    kube: Kube, path: str, body: dict[str, Any], message: str
) -> None:
    status, answer = await kube.call("POST", path, body)

    assert (status, answer["reason"], answer["message"]) == (422, "Invalid", message)


async def test_a_binding_s_role_ref_cannot_change(kube: Kube) -> None:
    body = binding("ClusterRoleBinding", "b", "ClusterRole", "one", ROBOT)
    status, created = await kube.call("POST", f"{RBAC}/clusterrolebindings", body)
    assert status == 201, created
    created["roleRef"]["name"] = "two"

    status, answer = await kube.call("PUT", f"{RBAC}/clusterrolebindings/b", created)

    assert status == 422
    assert answer["message"].endswith(
        "roleRef: Invalid value: rbac.RoleRef{APIGroup:"
        '"rbac.authorization.k8s.io", Kind:"ClusterRole", '
        'Name:"two"}: cannot change roleRef'
    )


async def test_the_bootstrap_policy_is_there(kube: Kube) -> None:
    status, roles = await kube.call("GET", f"{RBAC}/clusterroles")
    assert status == 200
    names = {r["metadata"]["name"] for r in roles["items"]}
    assert {
        "cluster-admin",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
    } <= names


# ---- service account tokens and RBAC on requests ---------------------------------------------


async def test_a_service_account_token_is_authorized_by_rbac(kube: Kube) -> None:
    token = await service_account_token(kube)

    status, answer = await kube.call("GET", "/api/v1/nodes", headers=bearer(token))
    assert status == 403
    assert answer["message"] == (
        f'nodes is forbidden: User "{SA}" cannot list resource "nodes" in API group "" at the '
        "cluster scope"
    )
    assert (await kube.call("GET", "/version", headers=bearer(token)))[0] == 200  # discovery

    await kube.call(
        "POST",
        f"{RBAC}/clusterroles",
        cluster_role(
            "node-reader", {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}
        ),
    )
    await kube.call(
        "POST",
        f"{RBAC}/clusterrolebindings",
        binding("ClusterRoleBinding", "robot-nodes", "ClusterRole", "node-reader", ROBOT),
    )
    assert (await kube.call("GET", "/api/v1/nodes", headers=bearer(token)))[0] == 200


async def test_role_bindings_grant_in_their_namespace_and_resource_names_narrow(kube: Kube) -> None:
    token = await service_account_token(kube)
    role = {
        "metadata": {"name": "lease"},
        "rules": [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "resourceNames": ["mine"],
                "verbs": ["get", "update"],
            },
        ],
    }
    assert (await kube.call("POST", f"{RBAC}/namespaces/default/roles", role))[0] == 201
    rb = binding(
        "RoleBinding", "lease", "Role", "lease", {"kind": "ServiceAccount", "name": "robot"}
    )
    assert (await kube.call("POST", f"{RBAC}/namespaces/default/rolebindings", rb))[0] == 201
    leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    lease = {"metadata": {"name": "mine"}, "spec": {"holderIdentity": "me"}}

    assert (await kube.call("POST", leases, lease, headers=bearer(token)))[0] == 201
    assert (await kube.call("GET", f"{leases}/mine", headers=bearer(token)))[0] == 200
    status, answer = await kube.call("GET", f"{leases}/other", headers=bearer(token))
    assert status == 403
    assert answer["message"] == (
        f'leases.coordination.k8s.io "other" is forbidden: User "{SA}" cannot get resource '
        '"leases" in API group "coordination.k8s.io" in the namespace "default"'
    )
    elsewhere = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/mine"
    assert (await kube.call("GET", elsewhere, headers=bearer(token)))[0] == 403


async def test_tokens_stop_working_with_their_service_account(kube: Kube) -> None:
    token = await service_account_token(kube)
    assert (await kube.call("GET", "/version", headers=bearer(token)))[0] == 200

    await kube.call("DELETE", "/api/v1/namespaces/default/serviceaccounts/robot")

    assert (await kube.call("GET", "/version", headers=bearer(token)))[0] == 401
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert (await kube.call("GET", "/version", headers=bearer(forged)))[0] == 401


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"expirationSeconds": 60},
            "spec.expirationSeconds: Invalid value: 60: may not specify "
            "a duration less than 10 minutes",
        ),
        ({"expirationSeconds": 1 << 33}, "may not specify a duration larger than 2^32 seconds"),
    ],
)
async def test_token_requests_are_validated(kube: Kube, spec: dict[str, Any], message: str) -> None:
    await kube.call(
        "POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "robot"}}
    )

    status, answer = await kube.call(
        "POST", "/api/v1/namespaces/default/serviceaccounts/robot/token", {"spec": spec}
    )

    assert status == 422
    assert message in answer["message"]


async def test_a_token_for_a_missing_service_account_is_not_found(kube: Kube) -> None:
    status, answer = await kube.call(
        "POST", "/api/v1/namespaces/default/serviceaccounts/ghost/token", {"spec": {}}
    )

    assert (status, answer["message"]) == (404, 'serviceaccounts "ghost" not found')


async def test_the_admin_may_impersonate_and_the_impersonated_user_is_authorized(
    kube: Kube,
) -> None:
    status, answer = await kube.call(
        "GET", "/api/v1/namespaces/default/pods", headers={"Impersonate-User": "alice"}
    )
    assert status == 403
    assert 'User "alice" cannot list resource "pods"' in answer["message"]


# ---- TokenReview and SubjectAccessReview -----------------------------------------------------


async def token_review(kube: Kube, token: str, **spec: Any) -> dict[str, Any]:
    status, answer = await kube.call(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token, **spec},
        },
    )
    assert status == 201, answer
    return dict(answer["status"])


async def test_token_review_names_the_user_of_a_token(kube: Kube) -> None:
    token = await service_account_token(kube)

    found = await token_review(kube, token)
    assert found["authenticated"] is True
    assert found["user"]["username"] == SA
    assert found["user"]["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    admin = await token_review(kube, "test-token")
    assert admin["user"]["username"] == ADMIN.name
    assert "system:masters" in admin["user"]["groups"]
    assert (await token_review(kube, "nonsense")) == {"user": {}, "error": "invalid bearer token"}
    other = await token_review(kube, token, audiences=["https://elsewhere"])
    assert "authenticated" not in other and "is invalid for the target audiences" in other["error"]


async def test_token_review_of_no_token_is_a_bad_request(kube: Kube) -> None:
    status, answer = await kube.call(
        "POST", "/apis/authentication.k8s.io/v1/tokenreviews", {"spec": {}}
    )
    assert (status, answer["message"]) == (
        400,
        "token is required for TokenReview in authentication",
    )


async def subject_access_review(kube: Kube, spec: dict[str, Any]) -> tuple[int, Any]:
    return await kube.call(
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
    )


async def test_subject_access_review_decides_paths_by_cluster_role_bindings(kube: Kube) -> None:
    await kube.call(
        "POST",
        f"{RBAC}/clusterroles",
        cluster_role("metrics", {"nonResourceURLs": ["/metrics", "/debug/*"], "verbs": ["get"]}),
    )
    await kube.call(
        "POST",
        f"{RBAC}/clusterrolebindings",
        binding("ClusterRoleBinding", "metrics", "ClusterRole", "metrics", ROBOT),
    )
    robot = {"user": SA, "groups": ["system:serviceaccounts", "system:authenticated"]}

    for path, allowed in (
        ("/metrics", True),
        ("/debug/explain/default/p", True),
        ("/debugger", False),
        ("/configz", False),
    ):
        status, answer = await subject_access_review(
            kube, {**robot, "nonResourceAttributes": {"path": path, "verb": "get"}}
        )
        assert status == 201
        assert answer["status"]["allowed"] is allowed, path
    status, answer = await subject_access_review(
        kube, {**robot, "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
    )
    assert answer["status"]["reason"] == (
        'RBAC: allowed by ClusterRoleBinding "metrics" of ClusterRole "metrics" to '
        'ServiceAccount "robot/default"'
    )
    other = {"user": "system:serviceaccount:default:other"}
    status, answer = await subject_access_review(
        kube, {**other, "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
    )
    assert answer["status"] == {"allowed": False}
    status, answer = await subject_access_review(
        kube,
        {
            "user": "x",
            "groups": ["system:masters"],
            "resourceAttributes": {"verb": "delete", "resource": "nodes"},
        },
    )
    assert answer["status"]["allowed"] is True


async def test_subject_access_review_is_validated(kube: Kube) -> None:
    status, answer = await subject_access_review(
        kube, {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
    )

    assert status == 422
    assert answer["message"] == (
        'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": '
        "at least one of user or group must be specified"
    )


# ---- request attributes (requestinfo.go) -----------------------------------------------------

U = rbac.UserInfo("u")


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/pods", {}, ("list", True, "", "pods", "", "", "")),
        ("GET", "/api/v1/pods", {"watch": "true"}, ("watch", True, "", "pods", "", "", "")),
        ("GET", "/api/v1/namespaces/ns/pods/p", {}, ("get", True, "", "pods", "", "ns", "p")),
        (
            "POST",
            "/api/v1/namespaces/ns/pods/p/binding",
            {},
            ("create", True, "", "pods", "binding", "ns", "p"),
        ),
        (
            "PATCH",
            "/api/v1/namespaces/ns/pods/p/status",
            {},
            ("patch", True, "", "pods", "status", "ns", "p"),
        ),
        (
            "DELETE",
            "/api/v1/namespaces/ns/pods",
            {},
            ("deletecollection", True, "", "pods", "", "ns", ""),
        ),
        ("GET", "/api/v1/namespaces/ns", {}, ("get", True, "", "namespaces", "", "ns", "ns")),
        (
            "PUT",
            "/api/v1/namespaces/ns/finalize",
            {},
            ("update", True, "", "namespaces", "finalize", "ns", "ns"),
        ),
        (
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/aiosched",
            {},
            ("update", True, "coordination.k8s.io", "leases", "", "kube-system", "aiosched"),
        ),
        (
            "GET",
            "/api/v1/namespaces/ns/configmaps",
            {"fieldSelector": "metadata.name=c"},
            ("list", True, "", "configmaps", "", "ns", "c"),
        ),
        ("GET", "/apis/apps/v1", {}, ("get", False, "", "", "", "", "")),
        ("GET", "/metrics", {}, ("get", False, "", "", "", "", "")),
        ("POST", "/some/path", {}, ("post", False, "", "", "", "", "")),
    ],
)
def test_request_attributes(
    method: str, path: str, query: dict[str, str], expected: tuple[Any, ...]
) -> None:
    found = rbac.request_attributes(U, method, path, query)

    assert (
        found.verb,
        found.resource_request,
        found.api_group,
        found.resource,
        found.subresource,
        found.namespace,
        found.name,
    ) == expected
    if not found.resource_request:
        assert found.path == path


@pytest.mark.parametrize(
    ("rule", "allowed"),
    [
        ({"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]}, True),
        ({"apiGroups": [""], "resources": ["*/status"], "verbs": ["patch"]}, True),
        ({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, True),
        ({"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]}, False),
        ({"apiGroups": ["apps"], "resources": ["pods/status"], "verbs": ["patch"]}, False),
        ({"apiGroups": [""], "resources": ["pods/status"], "verbs": ["update"]}, False),
        (
            {
                "apiGroups": [""],
                "resources": ["pods/status"],
                "resourceNames": ["p"],
                "verbs": ["patch"],
            },
            True,
        ),
        (
            {
                "apiGroups": [""],
                "resources": ["pods/status"],
                "resourceNames": ["q"],
                "verbs": ["patch"],
            },
            False,
        ),
    ],
)
def test_rule_matching(rule: dict[str, Any], allowed: bool) -> None:
    attributes = rbac.request_attributes(U, "PATCH", "/api/v1/namespaces/ns/pods/p/status", {})

    assert rbac.rule_allows(attributes, rule) is allowed
