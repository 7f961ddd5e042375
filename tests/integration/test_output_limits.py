"""A source that cuts long results asks the kernel's ``output_limits`` seam whether a plugin
keeps them whole (the MCP plugin and the spool plugin meet there, never naming each other)."""

from __future__ import annotations

import sys
from pathlib import Path

from toolregistry import ToolRegistry

SERVER = Path(__file__).resolve().parents[2] / "plugins" / "mcp" / "tests" / "servers" / \
    "demo_server.py"
MB = 1024 * 1024


def test_a_spooling_setting_made_at_run_time_keeps_mcp_results_whole(tmp_path: Path) -> None:
    """The spool plugin's ``all_tools`` turned on with ``configure()`` (not in the file): the
    MCP plugin read the spool plugin's configuration table, so it cut the result to its own
    100,000 characters before the spool plugin took it; through the seam it asks the spool
    plugin's settings in force."""
    import toolregistry_spool

    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.toolregistry.plugins.mcp]\nshutdown-grace = 0.3\n",
                      encoding="utf-8")
    with ToolRegistry(config=config) as registry:
        registry.register_from_mcp({"command": sys.executable, "args": [str(SERVER)]},
                                   namespace="s", include=["big"])
        # follows the spool plugin's own all-tools setting
        registry.update_tool_metadata("s-big", too_long_to_file=None)
        toolregistry_spool.configure(registry, all_tools=True, directory=str(tmp_path / "spool"))
        result = registry.invoke("s-big", {"mb": 1})
        assert result.ok, result.content
        spooled = result.metadata["spool"]
        assert spooled["handle"] and spooled["size"] == MB, spooled
        assert len(Path(spooled["path"]).read_text(encoding="utf-8")) == MB
        toolregistry_spool.configure(registry, all_tools=False)
        cut = registry.invoke("s-big", {"mb": 1})  # nobody keeps it: cut
        assert "spool" not in cut.metadata
        assert "[truncated by toolregistry-mcp" in cut.text
