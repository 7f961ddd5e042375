"""The README's main job: the end-to-end demo on examples/pyproject.toml.

Starts the demo HTTP service on 127.0.0.1, then runs `toolregistry demo`: every configured
source whose plugin is installed is registered, the schemas are printed, and the batch of
provider-native tool calls in demo_calls.json is executed (bad calls included: they come back
as error results for the model, never as exceptions).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from demo_api import start  # noqa: E402

from toolregistry.cli import main  # noqa: E402


def run() -> int:
    server, url = start()
    os.environ["DEMO_API_URL"] = url
    os.environ["DEMO_DIR"] = str(HERE)
    try:
        return main(["--config", str(HERE / "pyproject.toml"), "demo"])
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    sys.exit(run())
