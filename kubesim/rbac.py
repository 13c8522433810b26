"""RBAC authorization over the stored Roles, ClusterRoles and their bindings.

What a request may do is decided as upstream's RBAC authorizer decides it
(plugin/pkg/auth/authorizer/rbac/rbac.go and rbac/v1 helpers): the ClusterRoleBindings whose
subjects name the user grant their ClusterRole's rules everywhere; the RoleBindings of the
request's namespace grant their Role's (or ClusterRole's) rules in that namespace. The
`system:masters` group is allowed everything without a look, as upstream's privileged-group
authorizer allows it. Rules only add: there is no deny.

The bootstrap policy kubesim creates on start is the part of upstream's
(plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go) every authenticated client relies
on: discovery, health and version paths, self reviews, and cluster-admin for system:masters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubesim.meta import Obj

RBAC_GROUP = "rbac.authorization.k8s.io"
CLUSTER_ROLES = f"{RBAC_GROUP}/clusterroles"
CLUSTER_ROLE_BINDINGS = f"{RBAC_GROUP}/clusterrolebindings"
ROLES = f"{RBAC_GROUP}/roles"
ROLE_BINDINGS = f"{RBAC_GROUP}/rolebindings"
SYSTEM_MASTERS = "system:masters"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"

# Reads a stored object: (storage key, namespace, name) -> object or None.
Get = Callable[[str, str, str], "Obj | None"]
# Lists stored objects: (storage key, namespace or None for all) -> objects.
Items = Callable[[str, "str | None"], "list[Obj]"]


@dataclass(frozen=True, slots=True)
class UserInfo:
    """Who a request is from (k8s.io/apiserver/pkg/authentication/user.Info)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"username": self.name, "uid": self.uid, "groups": list(self.groups)}
        if self.extra:
            body["extra"] = {k: list(v) for k, v in self.extra.items()}
        return body


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a request asks to do (authorizer.Attributes). A resource request names a verb,
    API group, resource (and subresource, namespace, name); any other is a path and a verb."""

    user: UserInfo
    verb: str
    resource_request: bool
    path: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""


# --- rule matching (pkg/apis/rbac/v1/evaluation_helpers.go) ------------------------------------


def _verb_matches(rule: Obj, verb: str) -> bool:
    verbs = rule.get("verbs") or []
    return "*" in verbs or verb in verbs


def _group_matches(rule: Obj, group: str) -> bool:
    groups = rule.get("apiGroups") or []
    return "*" in groups or group in groups


def _resource_matches(rule: Obj, combined: str, subresource: str) -> bool:
    for wanted in rule.get("resources") or []:
        if wanted in ("*", combined):
            return True
        # "*/status" matches the status of every resource
        if subresource and wanted == f"*/{subresource}":
            return True
    return False


def _name_matches(rule: Obj, name: str) -> bool:
    names = rule.get("resourceNames") or []
    return not names or name in names


def _url_matches(rule: Obj, path: str) -> bool:
    for url in rule.get("nonResourceURLs") or []:
        if url in ("*", path):
            return True
        if url.endswith("*") and path.startswith(url[:-1]):
            return True
    return False


def rule_allows(attributes: Attributes, rule: Obj) -> bool:
    if not _verb_matches(rule, attributes.verb):
        return False
    if not attributes.resource_request:
        return _url_matches(rule, attributes.path)
    combined = attributes.resource
    if attributes.subresource:
        combined += "/" + attributes.subresource
    return (
        _group_matches(rule, attributes.api_group)
        and _resource_matches(rule, combined, attributes.subresource)
        and _name_matches(rule, attributes.name)
    )


def _applies_to(subject: Obj, user: UserInfo, binding_namespace: str) -> bool:
    """rbac.go appliesToUser: a ServiceAccount subject without a namespace is in the
    binding's."""
    kind, name = subject.get("kind"), subject.get("name") or ""
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and user.name == f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"
    return False


def _describe_subject(subject: Obj, binding_namespace: str) -> str:
    kind, name = subject.get("kind"), subject.get("name") or ""
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return f'ServiceAccount "{name}/{namespace}"'
    return f'{kind} "{name}"'


class Authorizer:
    """Decides Attributes by the RBAC objects of a store (read at every call: bindings changed
    a moment ago already count, as they do upstream once its informers catch up)."""

    def __init__(self, get: Get, items: Items) -> None:
        self._get = get
        self._items = items

    def authorize(self, attributes: Attributes) -> Decision:
        user = attributes.user
        if SYSTEM_MASTERS in user.groups:
            return Decision(True)
        for binding in self._items(CLUSTER_ROLE_BINDINGS, None):
            reason = self._visit(attributes, binding, "")
            if reason:
                return Decision(True, reason)
        if attributes.resource_request and attributes.namespace:
            for binding in self._items(ROLE_BINDINGS, attributes.namespace):
                reason = self._visit(attributes, binding, attributes.namespace)
                if reason:
                    return Decision(True, reason)
        return Decision(False)

    def _visit(self, attributes: Attributes, binding: Obj, namespace: str) -> str:
        """The allow reason when `binding` grants the request, else ""."""
        subjects = [
            s
            for s in binding.get("subjects") or []
            if isinstance(s, dict) and _applies_to(s, attributes.user, namespace)
        ]
        if not subjects:
            return ""
        ref = binding.get("roleRef") or {}
        kind, name = ref.get("kind"), ref.get("name") or ""
        if kind == "ClusterRole":
            role = self._get(CLUSTER_ROLES, "", name)
        elif kind == "Role" and namespace:
            role = self._get(ROLES, namespace, name)
        else:
            role = None
        if role is None:
            return ""
        if not any(
            isinstance(rule, dict) and rule_allows(attributes, rule)
            for rule in role.get("rules") or []
        ):
            return ""
        binding_kind = "RoleBinding" if namespace else "ClusterRoleBinding"
        binding_name = binding["metadata"]["name"]
        shown = f'{binding_kind} "{binding_name}' + (f'/{namespace}"' if namespace else '"')
        return (
            f'RBAC: allowed by {shown} of {kind} "{name}" to '
            f"{_describe_subject(subjects[0], namespace)}"
        )


def forbidden_message(attributes: Attributes) -> str:
    """responsewriters.forbiddenMessage: what the 403 says after "... is forbidden: "."""
    user = attributes.user.name
    if not attributes.resource_request:
        return f'User "{user}" cannot {attributes.verb} path "{attributes.path}"'
    resource = attributes.resource
    if attributes.subresource:
        resource += "/" + attributes.subresource
    scope = (
        f'in the namespace "{attributes.namespace}"'
        if attributes.namespace
        else "at the cluster scope"
    )
    return (
        f'User "{user}" cannot {attributes.verb} resource "{resource}" in API group '
        f'"{attributes.api_group}" {scope}'
    )


# --- request attributes (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go) --------------

_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def request_attributes(user: UserInfo, method: str, path: str, query: dict[str, str]) -> Attributes:
    """The Attributes of an HTTP request, as RequestInfoFactory.NewRequestInfo derives them."""
    parts = [p for p in path.strip("/").split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return Attributes(user, method.lower(), False, path=path)
    if not rest:  # /api/v1, /apis/apps/v1: discovery
        return Attributes(user, method.lower(), False, path=path)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
        # else: /namespaces/NAME[/status]: the namespace is the object and its own scope
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if method in ("GET", "HEAD"):
        if name:
            verb = "get"
        else:
            verb = "watch" if query.get("watch") in ("1", "true", "True") else "list"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _METHOD_VERBS.get(method, method.lower())
    if not name and verb in ("list", "watch", "deletecollection"):
        # a list or watch of one object by metadata.name is that object's (requestinfo.go)
        for term in (query.get("fieldSelector") or "").split(","):
            key, sep, value = term.partition("=")
            if sep and key.strip() == "metadata.name":
                name = value.lstrip("=").strip()
    return Attributes(
        user,
        verb,
        True,
        path=path,
        api_group=group,
        api_version=version,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
    )


# --- bootstrap policy --------------------------------------------------------------------------

_BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
_AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}

# ClusterRole name -> (rules, groups bound to it), as upstream's bootstrap policy has them
# (testdata/cluster-roles.yaml and cluster-role-bindings.yaml).
BOOTSTRAP_POLICY: dict[str, tuple[list[Obj], tuple[str, ...]]] = {
    "cluster-admin": (
        [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ],
        (SYSTEM_MASTERS,),
    ),
    "system:discovery": (
        [
            {
                "nonResourceURLs": [
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
                "verbs": ["get"],
            }
        ],
        (ALL_AUTHENTICATED,),
    ),
    "system:basic-user": (
        [
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                "verbs": ["create"],
            },
            {
                "apiGroups": ["authentication.k8s.io"],
                "resources": ["selfsubjectreviews"],
                "verbs": ["create"],
            },
        ],
        (ALL_AUTHENTICATED,),
    ),
    "system:public-info-viewer": (
        [
            {
                "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
                "verbs": ["get"],
            }
        ],
        (ALL_AUTHENTICATED, ALL_UNAUTHENTICATED),
    ),
}


def bootstrap_objects() -> Iterable[tuple[str, Obj]]:
    """(storage key, object) of every bootstrap ClusterRole and ClusterRoleBinding."""
    for name, (rules, groups) in BOOTSTRAP_POLICY.items():
        labels, annotations = dict(_BOOTSTRAP_LABELS), dict(_AUTOUPDATE)
        meta = {"name": name, "labels": labels, "annotations": annotations}
        yield (
            CLUSTER_ROLES,
            {
                "apiVersion": f"{RBAC_GROUP}/v1",
                "kind": "ClusterRole",
                "metadata": meta,
                "rules": rules,
            },
        )
        yield (
            CLUSTER_ROLE_BINDINGS,
            {
                "apiVersion": f"{RBAC_GROUP}/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {**meta, "labels": dict(labels), "annotations": dict(annotations)},
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
                "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": g} for g in groups],
            },
        )
