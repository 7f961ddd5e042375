"""Who may call a served registry: bearer tokens checked against configured secrets, or OAuth
2.1 access tokens (JWTs) checked against an authorization server's JWKS.

Both are the SDK's ``TokenVerifier``: they answer ``verify_token(token)`` with an
``AccessToken`` (here a :class:`GrantedToken`, which also says what the client may see) or
``None``, which the SDK's bearer middleware turns into ``401`` with ``WWW-Authenticate``. They
never raise: a malformed, expired or foreign token is ``None`` and an ``mcp.token_rejected``
event, never a traceback.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from attrs import frozen
from mcp.server.auth.provider import AccessToken
from pydantic import ConfigDict

from toolregistry.errors import ConfigError
from toolregistry.plugin import log

from ._access import EVERYTHING, Access

if TYPE_CHECKING:
    import jwt

__all__ = ["GrantedToken", "JWTVerifier", "StaticTokens", "TokenGrant", "is_loopback", "read_secret"]

MAX_TOKEN_CHARS = 8192
"""Longer bearer tokens are refused before any parsing."""

DEFAULT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
                      "ES512", "EdDSA")
"""Asymmetric signatures only: a served registry never shares a secret with its issuer."""


class GrantedToken(AccessToken):
    """A verified token, with the tools its client may see (``access``) and a name for logs."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    access: Access = EVERYTHING
    name: str = ""


# --------------------------------------------------------------------------- bearer tokens
@frozen
class TokenGrant:
    """One accepted bearer token: its ``name`` (who, in logs and to tools), the secret, and
    what it may see."""

    name: str
    secret: str
    access: Access = EVERYTHING


def read_secret(*, env: str | None = None, file: str | os.PathLike[str] | None = None,
                what: str = "token") -> str:
    """A secret from an environment variable or a file (its first line); errors name the
    source and never the secret."""
    if (env is None) == (file is None):
        raise ConfigError(f"{what}: give exactly one of 'env' (a variable name) or 'file'")
    if env is not None:
        value = os.environ.get(env, "").strip()
        if not value:
            raise ConfigError(f"{what}: environment variable {env} is not set or empty")
        return value
    path = Path(os.fspath(file)).expanduser()  # type: ignore[arg-type]
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None
    lines = text.strip().splitlines()
    value = lines[0].strip() if lines else ""
    if not value:
        raise ConfigError(f"{what}: {path} is empty")
    return value


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


class StaticTokens:
    """Bearer tokens compared in constant time (each against every configured token, as
    SHA-256 digests, so neither the match nor the length leaks through timing)."""

    def __init__(self, grants: Iterable[TokenGrant]) -> None:
        self._grants = [(_digest(g.secret), g) for g in grants]
        if not self._grants:
            raise ConfigError("bearer authentication needs at least one token")
        names = [g.name for _, g in self._grants]
        if len(set(names)) != len(names):
            raise ConfigError(f"bearer token names must be unique, got {sorted(names)}")
        digests = [d for d, _ in self._grants]
        if len(set(digests)) != len(digests):
            raise ConfigError("two bearer tokens have the same secret")

    async def verify_token(self, token: str) -> AccessToken | None:
        if not token or len(token) > MAX_TOKEN_CHARS:
            _rejected("bearer", "malformed token")
            return None
        presented = _digest(token)
        match: TokenGrant | None = None
        for digest, grant in self._grants:
            if hmac.compare_digest(presented, digest):
                match = grant
        if match is None:
            _rejected("bearer", "unknown token")
            return None
        return GrantedToken(token=token, client_id=match.name, scopes=[], access=match.access,
                            name=match.name)


# --------------------------------------------------------------------------- OAuth / JWT
def is_loopback(host: str | None) -> bool:
    """``localhost`` or an address in 127.0.0.0/8 or ``::1``."""
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_https(url: str, what: str) -> str:
    """``url`` must be https (plain http only on loopback, for local development and tests)."""
    parts = urlsplit(url)
    if parts.scheme == "https" or (parts.scheme == "http" and is_loopback(parts.hostname)):
        return url
    raise ConfigError(f"{what} {url!r} must be an https:// URL (http:// only on loopback)")


class _KeySet:
    """The issuer's signing keys, fetched on first use and again (at most every
    ``min_refresh`` seconds) when a token names a key id we do not know: key rotation."""

    def __init__(self, issuer: str, jwks_url: str | None, timeout: float,
                 min_refresh: float = 30.0, max_age: float = 3600.0) -> None:
        self.issuer = issuer
        self.jwks_url = jwks_url
        self.timeout = timeout
        self.min_refresh = min_refresh
        self.max_age = max_age
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._fetched = -1e9
        self._lock: asyncio.Lock | None = None

    async def key(self, kid: str | None) -> jwt.PyJWK | None:
        age = time.monotonic() - self._fetched
        found = self._find(kid)
        if found is not None and age < self.max_age:
            return found
        if age >= self.min_refresh or not self._keys:
            await self._refresh()
            found = self._find(kid)
        return found

    def _find(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(kid)

    async def _refresh(self) -> None:
        import httpx2
        import jwt

        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if time.monotonic() - self._fetched < self.min_refresh and self._keys:
                return  # another request refreshed them meanwhile
            self._fetched = time.monotonic()
            try:
                async with httpx2.AsyncClient(timeout=self.timeout) as http:
                    url = self.jwks_url or await self._discover(http)
                    response = await http.get(url)
                    response.raise_for_status()
                    keyset = jwt.PyJWKSet.from_dict(response.json())
            except Exception as exc:
                log.warning("mcp.jwks_failed", issuer=self.issuer,
                            error=f"{type(exc).__name__}: {exc}")
                return
            keys: dict[str | None, jwt.PyJWK] = {}
            for key in keyset.keys:
                if getattr(key, "public_key_use", None) not in (None, "sig"):
                    continue
                keys[key.key_id] = key
            self._keys = keys
            log.info("mcp.jwks_loaded", issuer=self.issuer, keys=len(keys))

    async def _discover(self, http: Any) -> str:
        """``jwks_uri`` from the issuer's metadata (RFC 8414, then OpenID Connect Discovery),
        whose ``issuer`` must be the configured one."""
        from mcp.client.auth.utils import build_oauth_authorization_server_metadata_discovery_urls

        errors = []
        for url in build_oauth_authorization_server_metadata_discovery_urls(self.issuer,
                                                                             self.issuer):
            response = await http.get(url)
            if response.status_code != 200:
                errors.append(f"{url}: HTTP {response.status_code}")
                continue
            data = response.json()
            if str(data.get("issuer", "")).rstrip("/") != self.issuer.rstrip("/"):
                raise ValueError(f"{url} names issuer {data.get('issuer')!r}, not "
                                 f"{self.issuer!r}")
            jwks_uri = data.get("jwks_uri")
            if not isinstance(jwks_uri, str):
                raise ValueError(f"{url} has no jwks_uri")
            self.jwks_url = check_https(jwks_uri, "jwks_uri")
            return self.jwks_url
        raise ValueError("no authorization server metadata found: " + "; ".join(errors))


class JWTVerifier:
    """OAuth 2.1 access tokens as JWTs (RFC 9068) signed by ``issuer``: signature against the
    issuer's JWKS, ``iss``, ``aud`` (this server: RFC 8707 resource indicators), ``exp`` /
    ``nbf`` with ``leeway`` seconds, and ``required_scopes``. ``scopes`` maps an OAuth scope to
    the tools it grants; when it is empty every valid token sees every tool."""

    def __init__(
        self,
        *,
        issuer: str,
        audience: str | Iterable[str],
        jwks_url: str | None = None,
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        required_scopes: Iterable[str] = (),
        scopes: Mapping[str, Access] | None = None,
        leeway: float = 30.0,
        timeout: float = 10.0,
    ) -> None:
        self.issuer = check_https(issuer, "issuer")
        # ``iss`` is compared as a string; a configured trailing slash must not matter.
        self._issuers = (self.issuer.rstrip("/"), self.issuer.rstrip("/") + "/")
        self.audience = [audience] if isinstance(audience, str) else list(audience)
        if not self.audience:
            raise ConfigError("OAuth: an audience (this server's resource URL) is required")
        self.algorithms = tuple(algorithms)
        unsafe = [a for a in self.algorithms if not a.startswith(("RS", "PS", "ES", "Ed"))]
        if unsafe:
            raise ConfigError(f"OAuth: algorithms {unsafe} are not asymmetric signatures")
        self.required_scopes = tuple(required_scopes)
        self.scopes = dict(scopes or {})
        self.leeway = leeway
        self._keys = _KeySet(issuer, check_https(jwks_url, "jwks-url") if jwks_url else None,
                             timeout)

    async def verify_token(self, token: str) -> AccessToken | None:
        import jwt

        if not token or len(token) > MAX_TOKEN_CHARS or token.count(".") != 2:
            _rejected("oauth", "malformed token")
            return None
        try:
            header = jwt.get_unverified_header(token)
            alg = header.get("alg")
            if alg not in self.algorithms:
                _rejected("oauth", f"algorithm {alg!r} not accepted")
                return None
            key = await self._keys.key(header.get("kid"))
            if key is None:
                _rejected("oauth", "unknown signing key")
                return None
            claims = jwt.decode(
                token, key, algorithms=[alg], audience=self.audience, issuer=self._issuers,
                leeway=self.leeway, options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            _rejected("oauth", f"{type(exc).__name__}: {exc}")
            return None
        except Exception as exc:  # a token that breaks the parser in an unforeseen way
            _rejected("oauth", f"{type(exc).__name__}")
            return None
        granted = _scopes_of(claims)
        missing = [s for s in self.required_scopes if s not in granted]
        if missing:
            # The SDK answers 403 insufficient_scope for these; let it (the token is valid).
            log.info("mcp.token_scopes_missing", scopes=missing)
        client_id = str(claims.get("client_id") or claims.get("azp") or claims.get("sub") or "")
        if self.scopes:
            access = Access.union(self.scopes[s] for s in granted if s in self.scopes)
        else:
            access = EVERYTHING
        exp = claims.get("exp")
        return GrantedToken(
            token=token, client_id=client_id, scopes=granted,
            expires_at=int(exp) if isinstance(exp, (int, float)) else None,
            resource=self.audience[0], subject=str(claims["sub"]) if "sub" in claims else None,
            claims={"iss": claims.get("iss")}, access=access, name=client_id,
        )


def _scopes_of(claims: Mapping[str, Any]) -> list[str]:
    scope = claims.get("scope")
    if isinstance(scope, str):
        return scope.split()
    scp = claims.get("scp")
    if isinstance(scp, list):
        return [str(s) for s in scp]
    if isinstance(scp, str):
        return scp.split()
    return []


def _rejected(mode: str, reason: str) -> None:
    log.info("mcp.token_rejected", auth=mode, reason=reason[:200])
