"""OAuth that keeps working across runs: the SDK's authorization-code client with what it
lacks for a long-lived application.

- The access token's expiry is kept with the tokens (the SDK keeps it in memory only), so a
  new process refreshes an expired token *before* a request instead of sending it, being
  refused and signing the user in again.
- A request refused with 401 while a refresh token is held is retried once after a refresh
  (a token revoked or expired early); only when that fails does a full sign-in follow.
- Another process sharing the storage may have refreshed already: a stale token is re-read
  from the storage first (refresh tokens may rotate: the old one would be refused).
- An authorization server that forgot this client (``invalid_client``: restarted, or the
  registration expired) makes the stored registration go: the next sign-in registers again,
  instead of sending the user to a sign-in page for an unknown client.

Storages may offer ``expires_at()`` and ``forget_client()`` for this (ours do); an
application's storage without them gets the SDK's behaviour.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import AsyncGenerator
from typing import Any

from toolregistry.plugin import log

__all__ = ["resilient_provider"]


def _error_code(body: bytes) -> str | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    code = data.get("error") if isinstance(data, dict) else None
    return code if isinstance(code, str) else None


def _metadata_request(url: str) -> Any:
    from mcp.client.auth.utils import create_oauth_metadata_request

    return create_oauth_metadata_request(url)


@functools.cache
def resilient_provider() -> type[Any]:
    """The SDK's ``OAuthClientProvider`` with expiry kept, refresh on 401 and registration
    again on ``invalid_client`` (built on first use: the SDK is imported lazily)."""
    import httpx2
    from mcp.client.auth import OAuthClientProvider

    class ResilientOAuthProvider(OAuthClientProvider):
        async def _restore(self) -> None:
            """Tokens and their expiry as the storage has them now."""
            expires_at = getattr(self.context.storage, "expires_at", None)
            if expires_at is None:
                return
            tokens = await self.context.storage.get_tokens()
            if tokens is not None:
                self.context.current_tokens = tokens
                self.context.token_expiry_time = await expires_at()

        def _discovery(self) -> list[str]:
            """Where to find the authorization server's metadata (its token endpoint) when
            this process has not discovered it yet: from the issuer the stored registration
            names (the SDK's refresh would otherwise go to the MCP server's own ``/token``)."""
            from mcp.client.auth.utils import (
                build_oauth_authorization_server_metadata_discovery_urls,
            )

            issuer = getattr(self.context.client_info, "issuer", None)
            if self.context.oauth_metadata is not None or not issuer:
                return []
            return build_oauth_authorization_server_metadata_discovery_urls(
                str(issuer), self.context.server_url)

        async def _discovered(self, response: httpx2.Response) -> bool:
            """Take the metadata from ``response``; True: stop looking."""
            from mcp.client.auth.utils import handle_auth_metadata_response

            ok, metadata = await handle_auth_metadata_response(response)
            if metadata is not None:
                self.context.oauth_metadata = metadata
            return not ok or metadata is not None

        async def _initialize(self) -> None:
            await super()._initialize()
            await self._restore()

        async def _perform_authorization_code_grant(self) -> tuple[str, str]:
            from ._deadline import waiting_on_a_person

            # The user signs in: that time is not the server's, as the SDK's own request
            # clock has it.
            with waiting_on_a_person():
                return await super()._perform_authorization_code_grant()

        async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
            if response.status_code != 200:
                code = _error_code(await response.aread())
                forget = getattr(self.context.storage, "forget_client", None)
                if code == "invalid_client" and forget is not None and await forget():
                    log.warning("mcp.oauth_client_forgotten", server=self.context.server_url,
                                client_id=self.context.client_info.client_id
                                if self.context.client_info else None)
                    self.context.client_info = None
            return bool(await super()._handle_refresh_response(response))

        async def _auth_flow(self, request: httpx2.Request
                             ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
            if self._initialized and not self.context.is_token_valid():
                await self._restore()  # another process may have refreshed it
            if not self._initialized:
                await self._initialize()
            if self.context.can_refresh_token() and not self.context.is_token_valid():
                for url in self._discovery():  # a new process: where to refresh
                    if await self._discovered((yield _metadata_request(url))):
                        break
            flow = super()._auth_flow(request)
            retried = False
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    if (outgoing is request and response.status_code == 401 and not retried
                            and self.context.can_refresh_token()):
                        # Refused with a token we held: refresh it once before anything else.
                        retried = True
                        await flow.aclose()
                        log.info("mcp.oauth_refresh_on_401", server=self.context.server_url)
                        self.context.token_expiry_time = time.time() - 1
                        for url in self._discovery():
                            if await self._discovered((yield _metadata_request(url))):
                                break
                        flow = super()._auth_flow(request)
                        outgoing = await flow.__anext__()
                        continue
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()

    return ResilientOAuthProvider
