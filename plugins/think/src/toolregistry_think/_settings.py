"""``[tool.toolregistry.plugins.think]``, validated by pydantic."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ._plugin import DEFAULT_DESCRIPTION


class ThinkSettings(BaseModel):
    """``[tool.toolregistry.plugins.think]``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    description: str = Field(DEFAULT_DESCRIPTION, min_length=1,
                             description="The description of the injected property.")
    required: bool = Field(False, description="List the property as required in every schema "
                                              "and refuse a call without a reason.")
