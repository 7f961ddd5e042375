"""The options of [tool.toolregistry.plugins.stamp]."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Settings(BaseModel):
    """[tool.toolregistry.plugins.stamp]."""

    model_config = ConfigDict(frozen=True)

    text: str = Field("stamped", min_length=1, description="what every result is stamped with")
