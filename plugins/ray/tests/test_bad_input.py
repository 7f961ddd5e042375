"""Bad input that needs no running Ray: an unreachable cluster, Ray missing, bad options."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import toolregistry_ray
from toolregistry import ToolMetadata, ToolRegistry
from toolregistry.errors import ConfigError, ToolRejected


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens


def test_an_unreachable_cluster_is_an_error_at_enable_time() -> None:
    port = _closed_port()
    registry = ToolRegistry()
    start = time.monotonic()
    with pytest.raises(toolregistry_ray.RayUnavailableError,
                       match=rf"cannot reach the Ray cluster at 'ray://127.0.0.1:{port}'"):
        toolregistry_ray.enable_ray(registry, address=f"ray://127.0.0.1:{port}")
    assert time.monotonic() - start < 30
    with pytest.raises(ConfigError, match="is not 'auto', 'host:port' or 'ray://host:port'"):
        toolregistry_ray.enable_ray(registry, address="somewhere")
    registry.close()


def test_an_unreachable_cluster_is_an_error_when_the_configuration_loads(tmp_path: Path
                                                                         ) -> None:
    port = _closed_port()
    (tmp_path / "crunchers.py").write_text("def crunch(n: int) -> int:\n    return n * n\n")
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(f"""
        [tool.toolregistry]
        [[tool.toolregistry.sources]]
        kind = "python"
        target = "crunchers"

        [tool.toolregistry.plugins.ray]
        tools = ["crunch"]
        address = "127.0.0.1:{port}"
    """))
    with pytest.raises(ConfigError, match=rf"cannot reach the Ray cluster at '127.0.0.1:{port}'"):
        ToolRegistry.from_config(tmp_path / "pyproject.toml")


def test_bad_options_name_what_is_wrong() -> None:
    registry = ToolRegistry()
    with pytest.raises(ConfigError, match="ship"):
        toolregistry_ray.enable_ray(registry, ship="carrier pigeon")
    with pytest.raises(ConfigError, match="num_cpus"):
        toolregistry_ray.enable_ray(registry, num_cpus=-1)
    with pytest.raises(ToolRejected, match=r"tool 'odd': metadata extra\['ray'\] must be True, "
                                           "False or a dict"):
        registry.register(lambda: 1, name="odd", metadata=ToolMetadata(extra={"ray": "yes"}))
    with pytest.raises(ToolRejected, match=r"(?s)tool 'odd2': metadata extra\['ray'\]:.*num_gpus"):
        registry.register(lambda: 1, name="odd2",
                          metadata=ToolMetadata(extra={"ray": {"num_gpus": "many"}}))
    registry.close()


def test_without_ray_the_error_names_the_distribution_to_install() -> None:
    code = textwrap.dedent("""
        import sys
        sys.modules["ray"] = None  # as if ray were not installed
        from toolregistry import ToolMetadata, ToolRegistry
        from toolregistry.errors import MissingPluginError
        registry = ToolRegistry()
        try:
            registry.register(lambda: 1, name="heavy", metadata=ToolMetadata(extra={"ray": True}))
        except MissingPluginError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == ("running tool 'heavy' on Ray needs the 'ray' plugin: install "
                                  "toolregistry-ray"), out.stderr


def _setup_worker() -> None:
    """A worker_process_setup_hook (ray.init takes a callable there)."""


def test_init_options_may_hold_callables() -> None:
    import ray

    registry = ToolRegistry()
    try:
        backend = toolregistry_ray.enable_ray(registry, init_options={
            "runtime_env": {"worker_process_setup_hook": _setup_worker}})
        assert backend.settings.init_options["runtime_env"]["worker_process_setup_hook"] \
            is _setup_worker
        again = toolregistry_ray.enable_ray(registry, tools=["x"])  # a change recompiles
        assert again is toolregistry_ray.get_ray(registry) and again is not backend
        assert not ray.is_initialized()  # a local Ray starts at the first call only
    finally:
        registry.close()
