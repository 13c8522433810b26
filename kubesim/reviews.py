"""The authentication and authorization APIs: nothing stored, every POST answered at once.

- authentication.k8s.io/v1 TokenReview: who a bearer token is (what delegated authentication,
  as in kube-scheduler's secure port, asks); SelfSubjectReview (`kubectl auth whoami`);
- authorization.k8s.io/v1 SubjectAccessReview: whether a user may do something (delegated
  authorization), SelfSubjectAccessReview (`kubectl auth can-i`), decided by RBAC (rbac.py);
- core/v1 serviceaccounts/NAME/token (TokenRequest, `kubectl create token`): a token for a
  service account (authn.py).

Shapes, defaults and validation messages are upstream's (pkg/registry/authentication,
pkg/registry/authorization, pkg/apis/authorization/validation).
"""

from __future__ import annotations

import copy
from typing import Any

from kubesim import errors
from kubesim.authn import (
    API_AUDIENCES,
    DEFAULT_EXPIRATION_SECONDS,
    MAX_EXPIRATION_SECONDS,
    MIN_EXPIRATION_SECONDS,
    Authenticator,
    issue,
)
from kubesim.meta import Obj, rfc3339
from kubesim.rbac import Attributes, Authorizer, UserInfo
from kubesim.resources import ResourceType, lookup

AUTHENTICATION = "authentication.k8s.io"
AUTHORIZATION = "authorization.k8s.io"
TOKEN_REVIEWS = f"{AUTHENTICATION}/tokenreviews"
SELF_SUBJECT_REVIEWS = f"{AUTHENTICATION}/selfsubjectreviews"
SUBJECT_ACCESS_REVIEWS = f"{AUTHORIZATION}/subjectaccessreviews"
SELF_SUBJECT_ACCESS_REVIEWS = f"{AUTHORIZATION}/selfsubjectaccessreviews"
REVIEW_KEYS = frozenset(
    {TOKEN_REVIEWS, SELF_SUBJECT_REVIEWS, SUBJECT_ACCESS_REVIEWS, SELF_SUBJECT_ACCESS_REVIEWS}
)


def _resource(key: str) -> ResourceType:
    group, _, plural = key.rpartition("/")
    found = lookup(group, "v1", plural)
    assert found is not None, key
    return found


def _object(resource: ResourceType, body: Obj) -> Obj:
    """The request echoed back as upstream's registries answer: the kind's identity, the
    object's own metadata, no server-set fields."""
    answer = copy.deepcopy(body)
    answer["apiVersion"], answer["kind"] = resource.api_version, resource.kind
    meta = answer.get("metadata")
    answer["metadata"] = meta if isinstance(meta, dict) else {}
    answer["metadata"].setdefault("creationTimestamp", None)
    if not isinstance(answer.get("spec"), dict):
        answer["spec"] = {}
    return answer


def review(
    key: str,
    body: Any,
    user: UserInfo,
    authenticator: Authenticator,
    authorizer: Authorizer,
    now: float,
) -> Obj:
    """Answer a POST of one of REVIEW_KEYS by `user`."""
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    resource = _resource(key)
    answer = _object(resource, body)
    spec = answer["spec"]
    if key == TOKEN_REVIEWS:
        answer["status"] = token_review_status(spec, authenticator, now)
    elif key == SELF_SUBJECT_REVIEWS:
        answer["status"] = {"userInfo": user.to_json()}
    elif key == SUBJECT_ACCESS_REVIEWS:
        _validate_access_review(resource, spec, self_review=False)
        subject = UserInfo(
            str(spec.get("user") or ""),
            str(spec.get("uid") or ""),
            tuple(str(g) for g in spec.get("groups") or []),
            {str(k): [str(v) for v in vs] for k, vs in (spec.get("extra") or {}).items()},
        )
        answer["status"] = _decide(authorizer, subject, spec)
    else:
        _validate_access_review(resource, spec, self_review=True)
        answer["status"] = _decide(authorizer, user, spec)
    return answer


def token_review_status(spec: Obj, authenticator: Authenticator, now: float) -> Obj:
    token = spec.get("token")
    if not token or not isinstance(token, str):
        raise errors.bad_request("token is required for TokenReview in authentication")
    wanted = [str(a) for a in spec.get("audiences") or []] or list(API_AUDIENCES)
    found = authenticator.authenticate(token, now)
    if found is None:
        return {"user": {}, "error": "invalid bearer token"}
    if authenticator.is_admin(token):
        audiences = wanted  # a static token is audience-agnostic: it matches what is asked
    else:
        audiences = [a for a in wanted if a in found.audiences]
        if not audiences:
            return {
                "user": {},
                "error": f"token audiences {list(found.audiences)!r} is invalid for the target "
                f"audiences {wanted!r}",
            }
    return {"authenticated": True, "user": found.user.to_json(), "audiences": audiences}


def _validate_access_review(resource: ResourceType, spec: Obj, self_review: bool) -> None:
    """pkg/apis/authorization/validation: Validate(Self)SubjectAccessReviewSpec."""
    causes: list[tuple[str, str, str]] = []
    has_resource = isinstance(spec.get("resourceAttributes"), dict)
    has_path = isinstance(spec.get("nonResourceAttributes"), dict)
    if has_resource and has_path:
        causes.append(
            (
                "spec.nonResourceAttributes",
                "FieldValueInvalid",
                'Invalid value: "object": cannot be specified in combination with '
                "resourceAttributes",
            )
        )
    if not has_resource and not has_path:
        causes.append(
            (
                "spec.resourceAttributes",
                "FieldValueInvalid",
                'Invalid value: "null": exactly one of nonResourceAttributes or '
                "resourceAttributes must be specified",
            )
        )
    if not self_review and not spec.get("user") and not spec.get("groups"):
        causes.append(
            (
                "spec.user",
                "FieldValueInvalid",
                'Invalid value: "": at least one of user or group must be specified',
            )
        )
    if causes:
        raise errors.invalid(resource, "", causes)


def _decide(authorizer: Authorizer, user: UserInfo, spec: Obj) -> Obj:
    attributes = spec.get("resourceAttributes")
    if isinstance(attributes, dict):
        asked = Attributes(
            user,
            str(attributes.get("verb") or ""),
            True,
            api_group=str(attributes.get("group") or ""),
            api_version=str(attributes.get("version") or ""),
            resource=str(attributes.get("resource") or ""),
            subresource=str(attributes.get("subresource") or ""),
            namespace=str(attributes.get("namespace") or ""),
            name=str(attributes.get("name") or ""),
        )
    else:
        path = spec.get("nonResourceAttributes") or {}
        verb, url = str(path.get("verb") or ""), str(path.get("path") or "")
        asked = Attributes(user, verb, False, path=url)
    decision = authorizer.authorize(asked)
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return status


def token_request(
    account_resource: ResourceType,
    account: Obj | None,
    namespace: str,
    name: str,
    body: Any,
    authenticator: Authenticator,
    now: float,
) -> Obj:
    """POST serviceaccounts/NAME/token: a TokenRequest with status.token filled."""
    if account is None:
        raise errors.not_found(account_resource, name)
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    raw_spec = body.get("spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    expiration = spec.get("expirationSeconds")
    if expiration in (None, 0):
        expiration = DEFAULT_EXPIRATION_SECONDS
    causes: list[tuple[str, str, str]] = []
    if not isinstance(expiration, int) or expiration < MIN_EXPIRATION_SECONDS:
        causes.append(
            (
                "spec.expirationSeconds",
                "FieldValueInvalid",
                f"Invalid value: {expiration}: may not specify a duration less than 10 minutes",
            )
        )
    elif expiration > MAX_EXPIRATION_SECONDS:
        causes.append(
            (
                "spec.expirationSeconds",
                "FieldValueInvalid",
                f"Invalid value: {expiration}: may not specify a duration larger than 2^32 seconds",
            )
        )
    if causes:
        raise errors.ApiError(
            422,
            "Invalid",
            f'TokenRequest.{AUTHENTICATION} "{name}" is invalid: {causes[0][0]}: {causes[0][2]}',
            {
                "name": name,
                "group": AUTHENTICATION,
                "kind": "TokenRequest",
                "causes": [{"field": f, "reason": r, "message": m} for f, r, m in causes],
            },
        )
    assert isinstance(expiration, int)
    audiences = [str(a) for a in spec.get("audiences") or []] or list(API_AUDIENCES)
    issued = issue(authenticator.key, account, audiences, expiration, now)
    return {
        "kind": "TokenRequest",
        "apiVersion": f"{AUTHENTICATION}/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": rfc3339(now)},
        "spec": {
            "audiences": audiences,
            "expirationSeconds": expiration,
            "boundObjectRef": spec.get("boundObjectRef"),
        },
        "status": {"token": issued.token, "expirationTimestamp": rfc3339(issued.expiration)},
    }
