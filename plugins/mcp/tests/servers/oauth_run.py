"""One run of an application calling a protected MCP tool, in a process of its own:
``python oauth_run.py CONFIG RESOURCE AUTH_JSON`` prints the tool's answer. The registry's
configuration (``CONFIG``) says which store it shares with other runs."""

from __future__ import annotations

import json
import sys

from toolregistry import ToolRegistry


def main() -> None:
    config, resource, auth = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    with ToolRegistry(config=config) as registry:
        registry.register_from_mcp(resource, namespace="u", auth=auth, connect_timeout=20)
        result = registry.invoke("u-files-read", {"path": "q"})
        if result.is_error:
            raise SystemExit(f"call failed: {result.text}")
        print(result.content)


if __name__ == "__main__":
    main()
