"""``ConfigPath``: the pydantic type of a plugin option that holds a file or folder path."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, ValidationInfo

from ._config import CONFIG_FOLDER, resolve_path

__all__ = ["ConfigPath"]


def _resolve(value: str, info: ValidationInfo) -> str:
    context: Any = info.context
    folder = context.get(CONFIG_FOLDER) if isinstance(context, dict) else None
    if isinstance(folder, Path):
        return resolve_path(value, folder)
    return str(Path(value).expanduser()) if "://" not in value else value


ConfigPath = Annotated[str, AfterValidator(_resolve)]
"""A path option: read from a configuration file, a relative path is taken against the
file's folder (``~`` expanded, URLs left alone); given in code, against the working
directory as usual."""
