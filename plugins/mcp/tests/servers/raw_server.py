"""A hand-written stdio MCP server (no SDK), free to break the protocol's rules.

It advertises tools whose inputSchema is broken in several ways, as servers in the wild do,
next to one good tool.
"""

from __future__ import annotations

import json
import sys

TOOLS = [
    {"name": "good", "description": "A well-formed tool.",
     "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}},
    {"name": "broken", "description": "properties is not an object.",
     "inputSchema": {"type": "object", "properties": 5}},
    {"name": "not_object", "description": "A string schema.",
     "inputSchema": {"type": "string"}},
    {"name": "bad_ref", "description": "A $ref that points nowhere.",
     "inputSchema": {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}},
    {"name": "no_schema", "description": "No inputSchema at all."},
]


def reply(msg_id: object, result: object) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, msg_id = msg.get("method"), msg.get("id")
        if msg_id is None:
            continue  # notifications
        if method == "initialize":
            reply(msg_id, {"protocolVersion": msg["params"]["protocolVersion"],
                           "capabilities": {"tools": {}},
                           "serverInfo": {"name": "raw", "version": "0"}})
        elif method == "tools/list":
            reply(msg_id, {"tools": TOOLS})
        elif method == "tools/call":
            reply(msg_id, {"content": [{"type": "text",
                                        "text": json.dumps(msg["params"].get("arguments"))}]})
        elif method == "ping":
            reply(msg_id, {})
        else:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {
                "code": -32601, "message": f"no method {method}"}}) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
