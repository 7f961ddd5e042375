"""A registry served over streamable HTTP with the options given as JSON in argv[1] (or over
stdio with ``--stdio``):
tools in two namespaces with tags, one that reports progress and logs, one that is slow."""

from __future__ import annotations

import json
import logging
import sys
import time

from toolregistry import ToolContext, ToolMetadata, ToolRegistry
from toolregistry_mcp import serve

registry = ToolRegistry(name="served")
logger = logging.getLogger("served.tools")


@registry.register(namespace="files", metadata=ToolMetadata(tags=["read_only"]))
def read(path: str) -> str:
    """Read a file (pretend)."""
    return f"contents of {path}"


@registry.register(namespace="files", metadata=ToolMetadata(tags=["destructive"]))
def delete(path: str) -> str:
    """Delete a file (pretend)."""
    return f"deleted {path}"


@registry.register(namespace="admin", metadata=ToolMetadata(custom_tags=["ops"]))
def restart() -> str:
    """Restart the service (pretend)."""
    return "restarted"


@registry.register
def work(steps: int, ctx: ToolContext) -> str:
    """Count to ``steps``, reporting progress and logging each step."""
    for i in range(1, steps + 1):
        logger.debug("step %d of %d (debug)", i, steps)
        logger.info("step %d of %d", i, steps)
        ctx.report_progress(i, steps, f"step {i}")
        time.sleep(0.01)
    logger.warning("done with %d steps", steps)
    return f"worked {steps} steps"


@registry.register
async def awork(steps: int, ctx: ToolContext) -> str:
    """The async twin of ``work``."""
    for i in range(1, steps + 1):
        logger.info("async step %d", i)
        ctx.report_progress(i, steps)
    return f"async worked {steps} steps"


@registry.register
def slow(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return f"slept {seconds}"


if __name__ == "__main__":
    if sys.argv[1:] == ["--stdio"]:
        serve(registry)
    else:
        options = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
        serve(registry, "streamable-http", **options)
