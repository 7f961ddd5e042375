"""Our MCP client as the official conformance suite's client under test:
``python conformance_client.py URL``. It loads the server's tools into a registry with the
``auth`` option (the scenario's context, ``$MCP_CONFORMANCE_CONTEXT``, names pre-registered
clients and secrets) and calls the first tool. A sign-in is done as a browser would: the
authorization URL is followed to its redirect, whose code and state are handed back."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from toolregistry import ToolRegistry

# The client ID metadata document the suite publishes for the client under test (SEP-991).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def sign_in_handlers() -> tuple[Any, Any]:
    got: dict[str, Any] = {}

    async def redirect(url: str) -> None:
        opener = urllib.request.build_opener(_NoRedirect())
        try:
            response = opener.open(url, timeout=10)
            location = response.headers.get("Location")
        except urllib.error.HTTPError as exc:
            location = exc.headers.get("Location")
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(location or "").query)
        got.update({k: v[0] for k, v in query.items()})

    async def callback() -> Any:
        from mcp.shared.auth import AuthorizationCodeResult

        return AuthorizationCodeResult(code=got.get("code", ""), state=got.get("state"),
                                       iss=got.get("iss"))

    return redirect, callback


def _issuer(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    metadata = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    with urllib.request.urlopen(metadata, timeout=10) as response:
        return str(json.load(response)["authorization_servers"][0])


def main() -> int:
    url = sys.argv[-1]
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    store = os.path.join(tempfile.mkdtemp(), "tokens.json")
    auth: dict[str, Any] = {"token_store": store}
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if "idp_id_token" in context:
        # Enterprise-managed authorization (SEP-990): the user's ID token from the identity
        # provider, exchanged there for an ID-JAG, which the MCP authorization server takes.
        os.environ["CONFORMANCE_ID_TOKEN"] = context["idp_id_token"]
        os.environ["CONFORMANCE_SECRET"] = context["client_secret"]
        auth.update(grant="identity_assertion", client_id=context["client_id"],
                    client_secret_env="CONFORMANCE_SECRET", issuer=_issuer(url),
                    idp_token_endpoint=context["idp_token_endpoint"],
                    idp_client_id=context["idp_client_id"], id_token_env="CONFORMANCE_ID_TOKEN")
    elif "private_key_pem" in context:
        # Client credentials with private_key_jwt (SEP-1046): a signed client assertion.
        key = os.path.join(os.path.dirname(store), "client-key.pem")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "w", encoding="utf-8") as fh:
            fh.write(context["private_key_pem"])
        auth.update(grant="client_credentials", client_id=context["client_id"],
                    private_key_file=key, issuer=_issuer(url),
                    signing_algorithm=context.get("signing_algorithm", "RS256"))
    elif "client_secret" in context and "client-credentials" in scenario:
        # The issuer the client was registered with: here, the one the server names.
        auth.update(grant="client_credentials", client_id=context["client_id"],
                    client_secret=context["client_secret"], issuer=_issuer(url))
    else:
        redirect, callback = sign_in_handlers()
        auth.update(redirect_handler=redirect, callback_handler=callback,
                    client_metadata_url=CLIENT_METADATA_URL)
        if "client_id" in context:
            auth.update(client_id=context["client_id"],
                        client_secret=context.get("client_secret"))
    with ToolRegistry() as registry:
        tools = registry.register_from_mcp(url, auth=auth, timeout=20, elicitation=_accept)
        # The calls the scenario asks for, or the first tool with example arguments.
        calls = context.get("toolCalls") or _SCENARIO_CALLS.get(scenario, _first)(tools)
        for call in calls:
            result = registry.invoke(call["name"], call.get("arguments") or {})
            print(result.text[:200])
    return 0


def _first(tools: list[Any]) -> list[dict[str, Any]]:
    """The first tool, with example arguments."""
    return [{"name": tools[0].name, "arguments": _example(tools[0].parameters)}] if tools else []


def _every(tools: list[Any]) -> list[dict[str, Any]]:
    """Every tool in the server's order, each with example arguments: one multi-round-trip
    flow after another, and calls in between that must carry none of their state."""
    return [{"name": tool.name, "arguments": _example(tool.parameters)} for tool in tools]


def _echo_schema(tools: list[Any]) -> list[dict[str, Any]]:
    """The focal tool's input schema as the registry holds it, sent back to the echo tool."""
    by_name = {tool.name: tool for tool in tools}
    return [{"name": "json_schema_echo",
             "arguments": {"schema": by_name["json_schema_2020_12_tool"].parameters}}]


_SCENARIO_CALLS = {
    "sep-2322-client-request-state": _every,
    "json-schema-2020-12-preservation": _echo_schema,
}


def _accept(params: Any) -> dict[str, Any]:
    """An elicitation answered as a user accepting the form as shown: each field's default
    (SEP-1034), an example value for a required field without one."""
    schema = params.requested_schema
    defaults = {name: prop["default"] for name, prop in (schema.get("properties") or {}).items()
                if isinstance(prop, dict) and "default" in prop}
    return {"action": "accept", "content": {**_example(schema), **defaults}}


def _example(schema: Any) -> dict[str, Any]:
    """An example value for each required property of an object schema."""
    values = {"number": 1, "integer": 1, "boolean": True, "string": "example"}
    props = schema.get("properties") or {} if isinstance(schema, dict) else {}
    return {name: values.get(props.get(name, {}).get("type"), "example")
            for name in (schema.get("required") or [] if isinstance(schema, dict) else [])}


if __name__ == "__main__":
    sys.exit(main())
