"""The options of [tool.toolregistry.plugins.stamp], and of a ``constants`` source."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Settings(BaseModel):
    """[tool.toolregistry.plugins.stamp]."""

    model_config = ConfigDict(frozen=True)

    text: str = Field("stamped", min_length=1, description="what every result is stamped with")


class ConstantsOptions(BaseModel):
    """The own options of a ``constants`` source (the kernel validates them)."""

    description: str = Field("The constant {name}.", description="each tool's description; "
                             "{name} is replaced by the tool's name")
