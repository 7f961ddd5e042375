"""Connecting to OAuth-protected MCP servers: the ``auth`` option of an MCP source, turned into
the SDK's own OAuth client (``OAuthClientProvider``: discovery through Protected Resource
Metadata, dynamic client registration, authorization code with PKCE, refresh; for machine to
machine ``ClientCredentialsOAuthProvider`` with a client secret or ``PrivateKeyJWTOAuthProvider``
with a signed client assertion (RFC 7523); for enterprise-managed authorization (SEP-990)
``IdentityAssertionOAuthProvider``, fed an ID-JAG that this module obtains from the identity
provider by token exchange (RFC 8693)), with tokens kept in a private file (mode 0600) unless
the application gives its own storage.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import tempfile
import threading
import webbrowser
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolregistry.errors import ConfigError
from toolregistry.plugin import import_target, log

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

__all__ = ["ClientAuth", "FileTokenStorage", "build_auth", "default_token_dir"]


def default_token_dir() -> Path:
    """``$XDG_STATE_HOME/toolregistry/mcp-oauth`` (else ``~/.local/state/...``)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "toolregistry" / "mcp-oauth"


class FileTokenStorage:
    """The SDK's ``TokenStorage`` in one JSON file per server and client, readable only by its
    owner (the folder 0700, the file 0600, replaced atomically)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()

    def _read(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(text)
        except ValueError:
            log.warning("mcp.token_file_unreadable", path=str(self.path))
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: Any, **more: Any) -> None:
        with self._lock:
            data = self._read()
            data[key] = value
            for name, extra in more.items():
                if extra is None:
                    data.pop(name, None)
                else:
                    data[name] = extra
            folder = self.path.parent
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tokens-")  # created 0600
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(data, fh)
                os.chmod(tmp, 0o600)
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        raw = self._read().get("tokens")
        try:
            return OAuthToken.model_validate(raw) if raw else None
        except ValidationError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True),
                    expires_at=token_expiry(tokens))

    async def expires_at(self) -> float | None:
        """When the stored access token expires (seconds since the epoch), if known."""
        value = self._read().get("expires_at")
        return float(value) if isinstance(value, (int, float)) else None

    async def forget_client(self) -> bool:
        """Drop the stored registration and its tokens (the server forgot the client)."""
        self._write("client", None, tokens=None, expires_at=None)
        return True

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._read().get("client")
        try:
            return OAuthClientInformationFull.model_validate(raw) if raw else None
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._write("client", client_info.model_dump(mode="json", exclude_none=True))


def token_expiry(tokens: OAuthToken) -> float | None:
    """When ``tokens``' access token expires, as the SDK reckons it (now + ``expires_in``)."""
    from mcp.shared.auth_utils import calculate_token_expiry

    return calculate_token_expiry(tokens.expires_in) if tokens.expires_in else None


class ClientAuth(BaseModel):
    """The ``auth`` option of an MCP source (``register_from_mcp(url, auth={...})`` or
    ``auth = {...}`` in ``[[tool.toolregistry.sources]]``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True,
                              arbitrary_types_allowed=True)

    grant: Literal["authorization_code", "client_credentials", "identity_assertion"] = Field(
        "authorization_code", description="authorization_code (a user signs in, PKCE), "
                                          "client_credentials (machine to machine) or "
                                          "identity_assertion (enterprise-managed, SEP-990)")
    client_id: str | None = Field(None, alias="client-id",
                                  description="a pre-registered client (default: dynamic "
                                              "client registration)")
    client_secret: str | None = Field(None, alias="client-secret",
                                      description="prefer client-secret-env")
    client_secret_env: str | None = Field(None, alias="client-secret-env",
                                          description="environment variable holding the secret")
    issuer: str | None = Field(None, description="the authorization server the client belongs "
                                                 "to (required for client_credentials)")
    scope: str | None = Field(None, description="space-separated scopes to ask for")
    private_key_file: str | None = Field(
        None, alias="private-key-file",
        description="client_credentials with private_key_jwt: the client's PEM private key")
    private_key_env: str | None = Field(None, alias="private-key-env",
                                        description="environment variable holding that key")
    signing_algorithm: str = Field("RS256", alias="signing-algorithm",
                                   description="the client assertion's JWS algorithm")
    idp_token_endpoint: str | None = Field(
        None, alias="idp-token-endpoint",
        description="identity_assertion: the identity provider's token endpoint (RFC 8693)")
    idp_client_id: str | None = Field(None, alias="idp-client-id",
                                      description="this client at the identity provider")
    idp_client_secret_env: str | None = Field(
        None, alias="idp-client-secret-env",
        description="environment variable holding its secret at the identity provider")
    id_token_env: str | None = Field(None, alias="id-token-env",
                                     description="environment variable holding the user's "
                                                 "ID token from the identity provider")
    id_token_file: str | None = Field(None, alias="id-token-file",
                                      description="file holding that ID token")
    redirect_uri: str = Field("http://127.0.0.1:33418/callback", alias="redirect-uri",
                              description="loopback address the browser is sent back to")
    client_name: str = Field("toolregistry", alias="client-name")
    client_metadata_url: str | None = Field(
        None, alias="client-metadata-url",
        description="an https URL where this client's metadata document is published: used "
                    "as the client id by servers that support client ID metadata documents")
    token_store: str | None = Field(None, alias="token-store",
                                    description="file for tokens (default: a private file "
                                                "under ~/.local/state/toolregistry/mcp-oauth)")
    open_browser: bool = Field(True, alias="open-browser",
                               description="open the sign-in page (else it is only logged)")
    callback_timeout: float = Field(300.0, gt=0, alias="callback-timeout",
                                    description="seconds to wait for the browser's redirect")
    # Python API only: hand the sign-in to the application (a UI, a test's user agent).
    redirect_handler: Any = Field(None, alias="redirect-handler", exclude=True)
    callback_handler: Any = Field(None, alias="callback-handler", exclude=True)
    storage: Any = Field(None, exclude=True, description="a TokenStorage of the application's")
    id_token_provider: Any = Field(None, alias="id-token-provider", exclude=True,
                                   description="a callable returning the user's ID token")

    def secret(self) -> str | None:
        if self.client_secret_env:
            return _from_env(self.client_secret_env, "client-secret-env")
        return self.client_secret

    def private_key(self) -> str | None:
        """The PEM private key for private_key_jwt client authentication, if one is given."""
        if self.private_key_env and self.private_key_file:
            raise ConfigError("MCP auth: give private-key-env or private-key-file, not both")
        if self.private_key_env:
            return _from_env(self.private_key_env, "private-key-env")
        if self.private_key_file:
            return _read_secret_file(self.private_key_file, "private-key-file")
        return None

    async def id_token(self) -> str:
        """The user's ID token from the identity provider (read at each token exchange, so a
        renewed one is used)."""
        if self.id_token_provider is not None:
            value = self.id_token_provider()
            if asyncio.iscoroutine(value):
                value = await value
            return str(value)
        if self.id_token_env:
            return _from_env(self.id_token_env, "id-token-env")
        assert self.id_token_file is not None
        return _read_secret_file(self.id_token_file, "id-token-file")


def _from_env(name: str, option: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise ConfigError(f"MCP auth: environment variable {name} ({option}) is not set or empty")
    return value


def _read_secret_file(path: str, option: str) -> str:
    try:
        return Path(path).expanduser().read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"MCP auth: {option} {path!r} cannot be read: "
                          f"{exc.strerror or exc}") from None


# JWS algorithms a client assertion may use: asymmetric only (a shared secret is client-secret).
_SIGNING_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
                       "ES512", "EdDSA")


def _store(config: ClientAuth, server_url: str) -> Any:
    if config.storage is not None:
        storage = config.storage
        if isinstance(storage, str):
            storage = import_target(storage, "MCP auth: storage")
        return storage
    if config.token_store:
        return FileTokenStorage(config.token_store)
    key = storage_key(server_url, {"client-id": config.client_id, "grant": config.grant})
    return FileTokenStorage(default_token_dir() / f"{key}.json")


def storage_key(server_url: str, auth: Mapping[str, Any]) -> str:
    """What names one server's tokens and registration in a storage: the server, the
    configured client (if any) and the grant."""
    client_id = auth.get("client-id") or auth.get("client_id") or ""
    grant = auth.get("grant") or "authorization_code"
    return hashlib.sha256(f"{server_url}\n{client_id}\n{grant}".encode()).hexdigest()[:24]


def build_auth(server_url: str, value: ClientAuth | Mapping[str, Any]) -> Any:
    """The SDK's ``httpx2.Auth`` for ``server_url`` as ``value`` says; errors name the option."""
    try:
        config = value if isinstance(value, ClientAuth) else ClientAuth.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"MCP auth option {where!r}: {first['msg']}") from None
    storage = _store(config, server_url)
    if config.grant == "client_credentials":
        return _client_credentials(server_url, config, storage)
    if config.grant == "identity_assertion":
        return _identity_assertion(server_url, config, storage)
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    from ._oauth_flow import resilient_provider

    redirect, callback = config.redirect_handler, config.callback_handler
    if (redirect is None) != (callback is None):
        raise ConfigError("MCP auth: give both redirect_handler and callback_handler, or "
                          "neither (then the browser is sent to a loopback redirect_uri)")
    if redirect is None:
        redirect, callback = _browser_flow(config)
    metadata = OAuthClientMetadata(
        redirect_uris=[config.redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"], client_name=config.client_name, scope=config.scope,
        token_endpoint_auth_method="client_secret_basic" if config.client_secret
        or config.client_secret_env else "none")
    if config.client_id:
        storage = _PreRegistered(storage, OAuthClientInformationFull(
            client_id=config.client_id, client_secret=config.secret(),
            redirect_uris=[config.redirect_uri],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            token_endpoint_auth_method=metadata.token_endpoint_auth_method,
            scope=config.scope))
    try:
        return resilient_provider()(server_url=server_url, client_metadata=metadata,
                                   storage=storage, redirect_handler=redirect,
                                   callback_handler=callback,
                                   client_metadata_url=config.client_metadata_url)
    except ValueError as exc:  # the SDK's check of client_metadata_url
        raise ConfigError(f"MCP auth: {exc}") from None


def _client_credentials(server_url: str, config: ClientAuth, storage: Any) -> Any:
    """Machine to machine: a client secret, or a private key signing client assertions
    (``private_key_jwt``, RFC 7523 §2.2, the assertion's audience the issuer)."""
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    key = config.private_key()
    secret = config.secret()
    if key is not None:
        if secret is not None:
            raise ConfigError("MCP auth: client_credentials takes a client secret or a private "
                              "key (private_key_jwt), not both")
        if not (config.client_id and config.issuer):
            raise ConfigError("MCP auth: client_credentials with a private key needs client-id "
                              "and the issuer it belongs to")
        if config.signing_algorithm not in _SIGNING_ALGORITHMS:
            raise ConfigError(f"MCP auth option 'signing-algorithm': "
                              f"{config.signing_algorithm!r} is not one of "
                              f"{', '.join(_SIGNING_ALGORITHMS)}")
        _check_private_key(key, config.signing_algorithm)
        assertions = SignedJWTParameters(
            issuer=config.client_id, subject=config.client_id, signing_key=key,
            signing_algorithm=config.signing_algorithm).create_assertion_provider()
        return PrivateKeyJWTOAuthProvider(
            server_url=server_url, storage=storage, client_id=config.client_id,
            assertion_provider=assertions, scope=config.scope, issuer=config.issuer)
    if not (config.client_id and secret and config.issuer):
        raise ConfigError("MCP auth: client_credentials needs client-id, a secret "
                          "(client-secret-env) or a private key (private-key-file / "
                          "private-key-env), and the issuer it belongs to")
    return ClientCredentialsOAuthProvider(
        server_url=server_url, storage=storage, client_id=config.client_id,
        client_secret=secret, scope=config.scope, issuer=config.issuer)


def _check_private_key(pem: str, algorithm: str) -> None:
    """Refuse a key that cannot sign with ``algorithm`` now, not at the first token request."""
    import jwt

    try:
        jwt.encode({"check": True}, pem, algorithm=algorithm)
    except Exception as exc:
        raise ConfigError(f"MCP auth: the private key cannot sign {algorithm} client "
                          f"assertions ({type(exc).__name__}: {str(exc)[:200]})") from None


_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


def _identity_assertion(server_url: str, config: ClientAuth, storage: Any) -> Any:
    """Enterprise-managed authorization (SEP-990): the user's ID token is exchanged at the
    identity provider for an identity assertion grant (ID-JAG, RFC 8693), which the MCP
    server's authorization server (``issuer``, configured, never discovered) takes in a
    jwt-bearer grant (RFC 7523) for an access token; the SDK does the second leg."""
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    secret = config.secret()
    sources = [config.id_token_env, config.id_token_file, config.id_token_provider]
    missing = [name for name, value in (
        ("client-id", config.client_id), ("client-secret-env", secret),
        ("issuer", config.issuer), ("idp-token-endpoint", config.idp_token_endpoint),
        ("idp-client-id", config.idp_client_id)) if not value]
    if missing or sum(v is not None for v in sources) != 1:
        raise ConfigError("MCP auth: identity_assertion needs client-id, client-secret-env, "
                          "issuer, idp-token-endpoint, idp-client-id and one of id-token-env "
                          "/ id-token-file / id_token_provider"
                          + (f" (missing: {', '.join(missing)})" if missing else ""))
    if urlsplit(config.idp_token_endpoint or "").scheme not in ("http", "https"):
        raise ConfigError(f"MCP auth option 'idp-token-endpoint': not an http(s) URL: "
                          f"{config.idp_token_endpoint!r}")
    assert config.client_id and secret and config.issuer
    return IdentityAssertionOAuthProvider(
        server_url=server_url, storage=storage, client_id=config.client_id,
        client_secret=secret, issuer=config.issuer, scope=config.scope,
        assertion_provider=_id_jag_provider(config),
        token_endpoint_auth_method="client_secret_basic")


def _id_jag_provider(config: ClientAuth) -> Callable[[str, str], Awaitable[str]]:
    """The first leg of SEP-990: the ID token for an ID-JAG whose audience is the MCP
    authorization server and whose resource is the MCP server (RFC 8693 token exchange)."""

    async def exchange(audience: str, resource: str) -> str:
        import httpx2
        from mcp.client.auth import OAuthTokenError
        from mcp.shared._httpx_utils import create_mcp_http_client

        data = {"grant_type": _TOKEN_EXCHANGE, "subject_token": await config.id_token(),
                "subject_token_type": _ID_TOKEN, "requested_token_type": _ID_JAG,
                "audience": audience, "resource": resource}
        if config.scope:
            data["scope"] = config.scope
        auth = None
        if config.idp_client_secret_env:
            auth = httpx2.BasicAuth(config.idp_client_id or "",
                                    _from_env(config.idp_client_secret_env,
                                              "idp-client-secret-env"))
        else:
            data["client_id"] = config.idp_client_id or ""
        endpoint = config.idp_token_endpoint or ""
        async with create_mcp_http_client() as http:
            response = await http.post(endpoint, data=data, auth=auth)  # type: ignore[arg-type]
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if response.status_code != 200 or not isinstance(answer, dict) or \
                not isinstance(answer.get("access_token"), str):
            raise OAuthTokenError(f"identity provider token exchange at {endpoint} failed "
                                  f"(HTTP {response.status_code}): {response.text[:500]}")
        if answer.get("issued_token_type", _ID_JAG) != _ID_JAG:
            raise OAuthTokenError(f"identity provider at {endpoint} issued a "
                                  f"{answer.get('issued_token_type')!r}, not an ID-JAG")
        return str(answer["access_token"])

    return exchange


class _PreRegistered:
    """A storage whose client is the configured one (no dynamic registration)."""

    def __init__(self, inner: Any, client: OAuthClientInformationFull) -> None:
        self._inner = inner
        self._client = client

    async def get_tokens(self) -> OAuthToken | None:
        return await self._inner.get_tokens()  # type: ignore[no-any-return]

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._inner.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._client = client_info

    async def expires_at(self) -> float | None:
        inner = getattr(self._inner, "expires_at", None)
        return await inner() if inner is not None else None

    async def forget_client(self) -> bool:
        return False  # a configured client is not registered again


def _browser_flow(config: ClientAuth) -> tuple[Callable[[str], Awaitable[None]],
                                               Callable[[], Awaitable[Any]]]:
    """Send the user's browser to the sign-in page; take the code at the loopback
    ``redirect_uri`` (RFC 8252 §7.3)."""
    parts = urlsplit(config.redirect_uri)
    if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise ConfigError("MCP auth: redirect-uri must be a loopback http:// address "
                          f"(e.g. http://127.0.0.1:33418/callback), got {config.redirect_uri!r}")
    state: dict[str, Any] = {}

    async def redirect(url: str) -> None:
        state["server"] = await _CallbackServer.start(parts.hostname or "127.0.0.1",
                                                      parts.port or 80, parts.path or "/")
        log.warning("mcp.oauth_sign_in", url=url)
        if config.open_browser:
            # On a thread of its own: webbrowser.open waits for a $BROWSER command to exit, and
            # a browser that follows the redirect waits for this loop to answer it at the
            # listener (on the loop, the sign-in took the browser's own timeout longer).
            threading.Thread(target=webbrowser.open, args=(url,), daemon=True,
                             name="toolregistry-mcp-browser").start()

    async def callback() -> Any:
        from mcp.shared.auth import AuthorizationCodeResult

        server: _CallbackServer = state.pop("server")
        try:
            query = await asyncio.wait_for(server.result, config.callback_timeout)
        finally:
            server.close()
        if "error" in query:
            raise ConfigError(f"MCP auth: the authorization server refused: {query['error']} "
                              f"{query.get('error_description', '')}".rstrip())
        return AuthorizationCodeResult(code=query.get("code", ""), state=query.get("state"),
                                       iss=query.get("iss"))

    return redirect, callback


class _CallbackServer(asyncio.Protocol):
    """A one-request HTTP listener for the authorization redirect."""

    def __init__(self, path: str, result: asyncio.Future[dict[str, str]]) -> None:
        self.path = path
        self.result = result
        self.server: asyncio.Server | None = None

    @classmethod
    async def start(cls, host: str, port: int, path: str) -> _CallbackServer:
        loop = asyncio.get_running_loop()
        protocol = cls(path, loop.create_future())
        protocol.server = await loop.create_server(lambda: _Request(protocol), host, port)
        return protocol

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


class _Request(asyncio.Protocol):
    def __init__(self, owner: _CallbackServer) -> None:
        self.owner = owner
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if b"\r\n" not in self.buffer or self.transport is None:
            if len(self.buffer) > 16384 and self.transport is not None:
                self.transport.close()
            return
        line = self.buffer.split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = line.partition(" ")
        target = rest.rsplit(" ", 1)[0]
        url = urlsplit(target)
        if method != "GET" or url.path != self.owner.path:
            self.transport.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            self.transport.close()
            return
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        body = b"Signed in. You can close this window."
        self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
        self.transport.close()
        if not self.owner.result.done():
            self.owner.result.set_result(query)
