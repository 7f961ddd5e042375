"""A hand-written stdio MCP server (no SDK), free to break the protocol's rules.

It advertises tools whose inputSchema is broken in several ways, as servers in the wild do,
next to one good tool. With ``--bad-results`` its tools are well defined but answer
``tools/call`` with results that break the MCP schema instead.
"""

from __future__ import annotations

import json
import os
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


OBJECT = {"type": "object", "properties": {}}
BAD_RESULT_TOOLS = [
    {"name": "pid", "description": "The server's process id.", "inputSchema": OBJECT},
    {"name": "unknown_block", "description": "A content block of an unknown type.",
     "inputSchema": OBJECT},
    {"name": "content_not_list", "description": "content is a string.", "inputSchema": OBJECT},
    {"name": "wrong_structure", "description": "structuredContent breaks outputSchema.",
     "inputSchema": OBJECT,
     "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}},
                      "required": ["n"]}},
]
BAD_RESULTS = {
    "pid": lambda: {"content": [{"type": "text", "text": str(os.getpid())}]},
    "unknown_block": lambda: {"content": [{"type": "hologram", "frames": 3}]},
    "content_not_list": lambda: {"content": "just a string"},
    "wrong_structure": lambda: {"content": [{"type": "text", "text": "{}"}],
                                "structuredContent": {"n": "three"}},
}


def reply(msg_id: object, result: object) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    bad_results = "--bad-results" in sys.argv
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
            reply(msg_id, {"tools": BAD_RESULT_TOOLS if bad_results else TOOLS})
        elif method == "tools/call" and bad_results:
            reply(msg_id, BAD_RESULTS[msg["params"]["name"]]())
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
