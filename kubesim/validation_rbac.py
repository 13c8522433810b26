"""RBAC validation (pkg/apis/rbac/validation/validation.go): roles' rules, bindings' roleRef
(immutable) and subjects, with upstream's field paths and messages."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from apimachinery.validation import is_dns1123_subdomain, is_valid_path_segment_name
from kubesim.validation_fields import Cause, invalid, invalid_each, not_supported, required

RBAC_GROUP = "rbac.authorization.k8s.io"
_SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def _go_strings(values: Any) -> str:
    """A []string as %v-quoted Go prints it in field errors: []string{"a", "b"}."""
    items = values if isinstance(values, list) else [values]
    return "[]string{" + ", ".join(json.dumps(str(v)) for v in items) + "}"


def _invalid_shown(path: str, shown: str, detail: str) -> Cause:
    """field.Invalid for a value already printed as Go prints it."""
    return Cause(path, "FieldValueInvalid", f"Invalid value: {shown}: {detail}")


def _validate_policy_rule(rule: Any, namespaced: bool, path: str) -> list[Cause]:
    if not isinstance(rule, Mapping):
        return [invalid(path, rule, "must be an object")]
    causes: list[Cause] = []
    if not rule.get("verbs"):
        causes.append(required(f"{path}.verbs", "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        field = f"{path}.nonResourceURLs"
        if namespaced:
            causes.append(
                _invalid_shown(
                    field, _go_strings(urls), "namespaced rules cannot apply to non-resource URLs"
                )
            )
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            causes.append(
                _invalid_shown(
                    field,
                    _go_strings(urls),
                    "rules cannot apply to both regular resources and non-resource URLs",
                )
            )
        return causes
    if not rule.get("apiGroups"):
        causes.append(
            required(f"{path}.apiGroups", "resource rules must supply at least one api group")
        )
    resources = rule.get("resources") or []
    if not resources:
        causes.append(
            required(f"{path}.resources", "resource rules must supply at least one resource")
        )
    if rule.get("resourceNames") and len(resources) > 1:
        causes.append(
            required(f"{path}.resourceNames", "resource names cannot apply to multiple resources")
        )
    return causes


def _validate_subject(subject: Any, namespaced: bool, path: str) -> list[Cause]:
    if not isinstance(subject, Mapping):
        return [invalid(path, subject, "must be an object")]
    causes: list[Cause] = []
    name = subject.get("name") or ""
    kind = subject.get("kind") or ""
    group = subject.get("apiGroup") or ""
    if not name:
        causes.append(required(f"{path}.name"))
    if kind == "ServiceAccount":
        if name:
            causes += invalid_each(f"{path}.name", name, is_dns1123_subdomain(name))
        if group:
            causes.append(not_supported(f"{path}.apiGroup", group, [""]))
        if not namespaced and not subject.get("namespace"):
            causes.append(required(f"{path}.namespace"))
    elif kind in ("User", "Group"):
        if not name:
            causes.append(invalid(f"{path}.name", name, f"{kind.lower()} name cannot be empty"))
        if group != RBAC_GROUP:
            causes.append(not_supported(f"{path}.apiGroup", group, [RBAC_GROUP]))
    else:
        causes.append(not_supported(f"{path}.kind", kind, _SUBJECT_KINDS))
    return causes


def _go_role_ref(ref: Mapping[str, Any]) -> str:
    return (
        f"rbac.RoleRef{{APIGroup:{json.dumps(ref.get('apiGroup') or '')}, "
        f"Kind:{json.dumps(ref.get('kind') or '')}, Name:{json.dumps(ref.get('name') or '')}}}"
    )


def validate_rbac(kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    """Roles' rules; bindings' roleRef (immutable) and subjects."""
    namespaced = kind in ("Role", "RoleBinding")
    causes: list[Cause] = []
    if kind in ("Role", "ClusterRole"):
        rules = obj.get("rules") or []
        if not isinstance(rules, list):
            return [invalid("rules", rules, "must be a list")]
        for i, rule in enumerate(rules):
            causes += _validate_policy_rule(rule, namespaced, f"rules[{i}]")
        return causes
    ref = obj.get("roleRef")
    if not isinstance(ref, Mapping):
        ref = {}
    if (ref.get("apiGroup") or "") != RBAC_GROUP:
        causes.append(not_supported("roleRef.apiGroup", ref.get("apiGroup") or "", [RBAC_GROUP]))
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if ref.get("kind") not in kinds:
        causes.append(not_supported("roleRef.kind", ref.get("kind") or "", kinds))
    ref_name = ref.get("name") or ""
    if not ref_name:
        causes.append(required("roleRef.name"))
    else:
        causes += invalid_each("roleRef.name", ref_name, is_valid_path_segment_name(ref_name))
    subjects = obj.get("subjects") or []
    for i, subject in enumerate(subjects if isinstance(subjects, list) else []):
        causes += _validate_subject(subject, namespaced, f"subjects[{i}]")
    if old is not None:
        old_ref = old.get("roleRef") or {}
        if old_ref != ref:
            causes.append(_invalid_shown("roleRef", _go_role_ref(ref), "cannot change roleRef"))
    return causes
