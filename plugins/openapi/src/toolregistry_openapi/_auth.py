"""Credentials and security schemes: what the user passed as ``auth``, normalised
(:class:`Credentials`), and where an operation's security requirement puts it (headers,
query, cookies)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from ._errors import OpenAPIError
from ._operations import Operation

__all__ = ["Credentials", "alt_satisfiable", "apply_security"]


@frozen
class Credentials:
    """What the user passed as ``auth``, normalised.

    ``token``: one secret for every bearer / OAuth2 / API-key scheme; ``basic``: a
    (user, password) pair; ``per_scheme``: values by securitySchemes name; ``httpx_auth``: an
    ``httpx.Auth`` used as is.
    """

    token: str | None = None
    basic: tuple[str, str] | None = None
    per_scheme: Mapping[str, Any] = {}
    httpx_auth: Any = None

    @classmethod
    def from_option(cls, auth: Any) -> Credentials:
        if auth is None:
            return cls()
        if isinstance(auth, str):
            return cls(token=auth)
        if isinstance(auth, (tuple, list)) and len(auth) == 2 and all(
            isinstance(a, str) for a in auth
        ):  # a list too: TOML has no tuples
            return cls(basic=(auth[0], auth[1]))
        if isinstance(auth, Mapping):
            return cls(per_scheme=dict(auth))
        import httpx

        if isinstance(auth, httpx.Auth):
            return cls(httpx_auth=auth)
        raise OpenAPIError(
            f"auth must be a token string, a (user, password) tuple, a mapping of "
            f"securitySchemes name to credential, or an httpx.Auth; got {type(auth).__name__}"
        )

    def for_scheme(self, name: str, scheme: Mapping[str, Any]) -> Any:
        if name in self.per_scheme:
            return self.per_scheme[name]
        kind = str(scheme.get("type", "")).lower()
        if (kind == "http" and str(scheme.get("scheme", "")).lower() == "basic") or kind == "basic":
            return self.basic
        return self.token

    @property
    def empty(self) -> bool:
        return not (self.token or self.basic or self.per_scheme or self.httpx_auth)


def _basic(value: Any) -> str | None:
    if isinstance(value, str) and ":" in value:
        user, _, pw = value.partition(":")
        value = (user, pw)
    if isinstance(value, (tuple, list)) and len(value) == 2:
        raw = f"{value[0]}:{value[1]}".encode()
        return "Basic " + base64.b64encode(raw).decode("ascii")
    return None


def _apply_scheme(name: str, scheme: Mapping[str, Any], value: Any, headers: dict[str, str],
                  query: list[tuple[str, str]], cookies: dict[str, str]) -> bool:
    kind = str(scheme.get("type", "")).lower()
    if kind == "apikey":
        where, key = str(scheme.get("in", "header")), str(scheme.get("name", ""))
        if not isinstance(value, str) or not key:
            return False
        if where == "query":
            query.append((key, value))
        elif where == "cookie":
            cookies[key] = value
        else:
            headers[key] = value
        return True
    if kind in ("http", "basic"):
        http_scheme = "basic" if kind == "basic" else str(scheme.get("scheme", "")).lower()
        if http_scheme == "basic":
            encoded = _basic(value)
            if encoded is None:
                return False
            headers["Authorization"] = encoded
            return True
        if not isinstance(value, str):
            return False
        label = "Bearer" if http_scheme in ("bearer", "") else http_scheme.capitalize()
        headers["Authorization"] = f"{label} {value}"
        return True
    if kind in ("oauth2", "openidconnect"):
        if not isinstance(value, str):
            return False
        headers["Authorization"] = f"Bearer {value}"
        return True
    return False  # mutualTLS and unknown kinds: configure the client instead


def apply_security(op: Operation, schemes: Mapping[str, Mapping[str, Any]], creds: Credentials,
                   headers: dict[str, str], query: list[tuple[str, str]],
                   cookies: dict[str, str]) -> None:
    """Put credentials where the operation's security requirement says.

    The first alternative whose schemes all have credentials wins; an operation with no
    declared security gets a plain token / basic pair as ``Authorization`` when one was given.
    """
    if creds.empty or creds.httpx_auth is not None:
        return
    if not op.security:
        if op.security is None or op.security == ():
            if creds.token:
                headers.setdefault("Authorization", f"Bearer {creds.token}")
            elif creds.basic:
                headers.setdefault("Authorization", _basic(creds.basic) or "")
        return
    for alternative in sorted(op.security, key=lambda alt: not alt):
        if not alt_satisfiable(alternative, schemes, creds):
            continue
        for name in alternative:
            scheme = schemes[name]
            _apply_scheme(name, scheme, creds.for_scheme(name, scheme), headers, query, cookies)
        return


def alt_satisfiable(alternative: Mapping[str, Any], schemes: Mapping[str, Mapping[str, Any]],
                    creds: Credentials) -> bool:
    for name in alternative:
        scheme = schemes.get(name)
        if scheme is None:
            return False
        probe_h: dict[str, str] = {}
        if not _apply_scheme(name, scheme, creds.for_scheme(name, scheme), probe_h, [], {}):
            return False
    return True
