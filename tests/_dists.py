"""Small plugin distributions, really built as wheels and installed into folders of their own
(put on ``PYTHONPATH`` of a subprocess, their entry points are found like any installed
plugin's)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path


def install_dist(root: Path, dist: str, plugins: Mapping[str, tuple[str, str]]) -> Path:
    """Build distribution ``dist`` with one module per plugin (``{entry-point name: (module,
    code)}``) and install it into a folder of its own under ``root``; returns that folder."""
    pkg = root / "src" / dist
    for module, code in plugins.values():
        (pkg / "src" / module).mkdir(parents=True)
        (pkg / "src" / module / "__init__.py").write_text(textwrap.dedent(code))
    entry_points = "\n".join(f'{ep} = "{module}"' for ep, (module, _) in plugins.items())
    packages = ", ".join(f'"src/{module}"' for module, _ in plugins.values())
    (pkg / "pyproject.toml").write_text(textwrap.dedent('''
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"

        [project]
        name = "{dist}"
        version = "0.1.0"

        [project.entry-points."toolregistry.plugins"]
        {entry_points}

        [tool.hatch.build.targets.wheel]
        packages = [{packages}]
    ''').format(dist=dist, entry_points=entry_points, packages=packages))
    wheels = root / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(wheels), str(pkg)], check=True)
    wheel = next(wheels.glob(f"{dist.replace('-', '_')}-*.whl"))
    site = root / f"site-{dist}"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--target", str(site), str(wheel)], check=True)
    return site
