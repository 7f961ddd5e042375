"""A real HTTP service on 127.0.0.1 (uvicorn in a thread, a free port chosen by the OS)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "openapi"
if not DATA.is_dir():  # CI lays shared/ beside the clone
    DATA = Path(__file__).resolve().parents[4] / "shared" / "data" / "openapi"


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    import importlib.util

    import uvicorn

    spec = importlib.util.spec_from_file_location(
        "toolregistry_openapi_test_app", Path(__file__).with_name("openapi_test_app.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app = module.app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off", ws="none")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test service did not start")
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
    sock.close()


@pytest.fixture
def registry() -> Iterator[object]:
    from toolregistry import ToolRegistry

    reg = ToolRegistry()
    yield reg
    reg.close()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.skip(f"the shared OpenAPI documents are not at {DATA}")
    return DATA
