"""Shared fixtures of the integration tests: the demo HTTP service of examples/ (Debian's
chromium is the ``chromium`` fixture of ``toolregistry.testing``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def api_url() -> Iterator[str]:
    """The demo pet service (examples/demo_api.py) on 127.0.0.1, for one test module."""
    sys.path.insert(0, str(EXAMPLES))
    from demo_api import start

    server, url = start()
    yield url
    server.shutdown()
    server.server_close()
