"""The process's connection to Ray: made on first need, shared by every registry of the
process that uses Ray (Ray allows one per process), and ended when the last one closes --
unless the application connected itself, in which case it is left as it found it."""

from __future__ import annotations

import concurrent.futures as cf
import socket
import threading
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from toolregistry.errors import ConfigError, MissingPluginError
from toolregistry.plugin import log

from ._settings import DISTRIBUTION, PLUGIN_NAME, RaySettings


class RayUnavailableError(ConfigError):
    """The configured Ray cluster cannot be reached (or Ray would not start)."""


def import_ray(feature: str) -> ModuleType:
    """``ray``, or a :class:`MissingPluginError` naming the distribution to install."""
    try:
        import ray
    except ImportError as exc:
        raise MissingPluginError(feature, PLUGIN_NAME, DISTRIBUTION) from exc
    return ray


class _Connection:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.owned = False  # this plugin called ray.init, so it calls ray.shutdown
        # ray.init runs on one thread that lives as long as the process: a local Ray's
        # processes are started with a parent-death signal tied to the *thread* that started
        # them, so starting them from a short-lived thread would kill them when it ends.
        self.starter = cf.ThreadPoolExecutor(1, thread_name_prefix="toolregistry-ray")

    def acquire(self, settings: RaySettings) -> None:
        """Count one more user, connecting (or starting a local Ray) when needed."""
        ray = import_ray("running tools on Ray")
        address = settings.address
        if address not in (None, "auto", "local"):
            _check_reachable(address, settings.connect_timeout)
        with self.lock:
            if not ray.is_initialized():
                options: dict[str, Any] = {"include_dashboard": False,
                                           "configure_logging": False}
                options.update(settings.init_options)
                try:
                    self.starter.submit(ray.init, address=address, **options).result()
                except Exception as exc:
                    where = "a local Ray" if address is None else f"Ray at {address!r}"
                    raise RayUnavailableError(
                        f"ray plugin: could not connect to {where}: {type(exc).__name__}: "
                        f"{exc}. Check [tool.toolregistry.plugins.ray] address (and that the "
                        "cluster runs the same Ray and Python versions)") from None
                self.owned = True
                self.users = 0
                log.info("ray.connected", address=address or "local",
                         gcs=ray.get_runtime_context().gcs_address)
            self.users += 1

    def release(self) -> None:
        """One user fewer; the last one stops the Ray this plugin started."""
        with self.lock:
            self.users = max(0, self.users - 1)
            if self.users or not self.owned:
                return
            self.owned = False
        import ray

        ray.shutdown()
        log.info("ray.disconnected")


CONNECTION = _Connection()


def _check_reachable(address: str, timeout: float) -> None:
    """Fail now, with the address in the message, when nothing listens there."""
    parts = urlsplit(address if "://" in address else f"gcs://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if not host or port is None:
        raise RayUnavailableError(
            f"ray plugin: address {address!r} is not 'auto', 'host:port' or "
            "'ray://host:port' ([tool.toolregistry.plugins.ray] address)")
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        raise RayUnavailableError(
            f"ray plugin: cannot reach the Ray cluster at {address!r} ({exc}); start it "
            "(`ray start --head`) or fix [tool.toolregistry.plugins.ray] address") from None
