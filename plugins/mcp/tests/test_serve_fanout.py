"""Served registries on one store (here a SQLite file: the polled fallback) share their
tool-list changes: a tool disabled on one server disappears for the clients of another, which
hear of it from their own server (real server processes over streamable HTTP)."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from toolregistry import ToolRegistry

SERVED = textwrap.dedent('''
    import sys

    from toolregistry import ToolRegistry
    from toolregistry_mcp import serve

    registry = ToolRegistry(name="served", store=sys.argv[2])

    @registry.register
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @registry.register
    def retire(name: str) -> str:
        """Take a tool out of service."""
        registry.disable(name, reason="retired")
        return "retired"

    serve(registry, "streamable-http", port=int(sys.argv[1]), stateless=True)
''')


def test_a_change_on_one_served_registry_reaches_the_clients_of_another(
        registry: ToolRegistry, tmp_path: Path, procs: Any) -> None:
    script = tmp_path / "served.py"
    script.write_text(SERVED, encoding="utf-8")
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    port_a, port_b = procs.free_port(), procs.free_port()
    with procs.listening([sys.executable, str(script), str(port_a), store], port_a, "/mcp",
                         cwd=tmp_path) as url_a, \
            procs.listening([sys.executable, str(script), str(port_b), store], port_b, "/mcp",
                            cwd=tmp_path) as url_b:
        registry.register_from_mcp(url_b, namespace="b")  # a client of B only
        assert "b-echo" in registry
        with ToolRegistry(load_plugins=["mcp"]) as operator:
            operator.register_from_mcp(url_a, namespace="a")
            assert operator.invoke("a-retire", {"name": "echo"}).content == "retired"
        deadline = time.monotonic() + 30
        while "b-echo" in registry:
            assert time.monotonic() < deadline, "B's client never heard of A's change"
            time.sleep(0.05)
        assert "b-retire" in registry
