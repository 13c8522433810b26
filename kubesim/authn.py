"""Who a request is from: kubesim's admin token, or a service account token it issued.

- The admin token (the one kubesim writes into the kubeconfigs it emits) is the user
  `kubesim-admin` in the group `system:masters`: allowed everything, as a kubeadm admin.
- `POST .../serviceaccounts/NAME/token` (TokenRequest, what `kubectl create token` calls) issues
  a token for `system:serviceaccount:NAMESPACE:NAME`, in the groups `system:serviceaccounts`,
  `system:serviceaccounts:NAMESPACE` and `system:authenticated`, as upstream's service account
  authenticator names them (pkg/serviceaccount). Its requests are authorized by RBAC.

A service account token is a JWT with upstream's claims (iss, sub, aud, exp, iat, nbf and the
`kubernetes.io` claim naming the namespace and service account). kubesim signs it with HMAC-
SHA256 under a key derived from its admin token, so tokens stay valid across a restart with
--data-dir (which keeps the admin token) and no key is stored. As upstream, a token stops
working when it expires or when its service account is deleted (or recreated: the uid is
checked).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

import orjson

from kubesim.meta import Obj
from kubesim.rbac import ALL_AUTHENTICATED, SERVICE_ACCOUNT_PREFIX, SYSTEM_MASTERS, UserInfo
from kubesim.rbac import Get as GetObject

ADMIN = UserInfo("kubesim-admin", groups=(SYSTEM_MASTERS, ALL_AUTHENTICATED))
ISSUER = "https://kubernetes.default.svc.cluster.local"
# the API server's own audience (--api-audiences defaults to the issuer)
API_AUDIENCES = (ISSUER,)
SERVICE_ACCOUNTS = "serviceaccounts"
_HEADER = {"alg": "HS256", "typ": "JWT"}
# pkg/apis/authentication/validation: TokenRequest expirationSeconds bounds
MIN_EXPIRATION_SECONDS = 10 * 60
MAX_EXPIRATION_SECONDS = 1 << 32
DEFAULT_EXPIRATION_SECONDS = 60 * 60


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def signing_key(admin_token: str) -> bytes:
    return hashlib.sha256(b"kubesim service account tokens\0" + admin_token.encode()).digest()


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    return UserInfo(
        f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
        uid,
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", ALL_AUTHENTICATED),
    )


@dataclass(frozen=True, slots=True)
class Issued:
    token: str
    expiration: int  # unix seconds


def issue(
    key: bytes,
    account: Obj,
    audiences: list[str],
    expiration_seconds: int,
    now: float,
) -> Issued:
    """A signed token for the stored ServiceAccount `account`."""
    meta = account["metadata"]
    issued_at = int(now)
    expiration = issued_at + expiration_seconds
    claims = {
        "aud": audiences,
        "exp": expiration,
        "iat": issued_at,
        "iss": ISSUER,
        "nbf": issued_at,
        "sub": f"{SERVICE_ACCOUNT_PREFIX}{meta['namespace']}:{meta['name']}",
        "kubernetes.io": {
            "namespace": meta["namespace"],
            "serviceaccount": {"name": meta["name"], "uid": meta.get("uid", "")},
        },
    }
    signed = f"{_b64(orjson.dumps(_HEADER))}.{_b64(orjson.dumps(claims))}"
    signature = hmac.new(key, signed.encode(), hashlib.sha256).digest()
    return Issued(f"{signed}.{_b64(signature)}", expiration)


@dataclass(frozen=True, slots=True)
class Authenticated:
    user: UserInfo
    audiences: tuple[str, ...]


class Authenticator:
    """Turns a bearer token into a user (None: not a token kubesim knows)."""

    def __init__(self, admin_token: str, get: GetObject) -> None:
        self._admin = admin_token.encode()
        self._key = signing_key(admin_token)
        self._get = get

    @property
    def key(self) -> bytes:
        return self._key

    def is_admin(self, token: str) -> bool:
        return hmac.compare_digest(token.encode(), self._admin)

    def authenticate(self, token: str, now: float) -> Authenticated | None:
        if self.is_admin(token):
            return Authenticated(ADMIN, API_AUDIENCES)
        claims = self._verified_claims(token)
        if claims is None:
            return None
        if not isinstance(claims.get("exp"), int) or claims["exp"] <= now:
            return None
        if isinstance(claims.get("nbf"), int) and claims["nbf"] > now + 60:  # client clock skew
            return None
        private = claims.get("kubernetes.io")
        if not isinstance(private, dict):
            return None
        namespace = str(private.get("namespace") or "")
        account = private.get("serviceaccount") or {}
        name, uid = str(account.get("name") or ""), str(account.get("uid") or "")
        stored = self._get(SERVICE_ACCOUNTS, namespace, name) if namespace and name else None
        if stored is None or stored["metadata"].get("uid") != uid:
            return None  # deleted (or deleted and recreated) since the token was issued
        audiences = claims.get("aud") or []
        if isinstance(audiences, str):
            audiences = [audiences]
        return Authenticated(service_account_user(namespace, name, uid), tuple(audiences))

    def authenticate_request(self, token: str, now: float) -> Authenticated | None:
        """The user of an API request's token: one whose audiences include the API server's
        (--api-audiences; pkg/serviceaccount/jwt.go's audience check, authenticator.Audiences),
        so a token minted for another audience (`kubectl create token --audience=vault`)
        opens nothing here."""
        found = self.authenticate(token, now)
        if found is None or not set(found.audiences) & set(API_AUDIENCES):
            return None
        return found

    def _verified_claims(self, token: str) -> dict[str, Any] | None:
        parts = token.split(".")
        if len(parts) != 3:
            return None
        expected = hmac.new(self._key, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest()
        try:
            if not hmac.compare_digest(_unb64(parts[2]), expected):
                return None
            claims = orjson.loads(_unb64(parts[1]))
        except (ValueError, orjson.JSONDecodeError):
            return None
        return claims if isinstance(claims, dict) else None


def bearer_token(header: str) -> str:
    """The token of an `Authorization: Bearer TOKEN` header ("" when there is none)."""
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return ""
    return token.strip()
