"""Provider formats: one object per provider dialect, in a table keyed by name.

A format owns everything provider-specific about tool calling: its schema dialect and tool
envelope, recognising and reading its calls, the answer messages, and ``tool_choice``. Every
``api_format=`` argument is looked up in the registry's :class:`FormatTable`: the built-in
formats below, then those plugins return from their ``provider_formats()`` hook.

To add a provider, subclass :class:`ProviderFormat` in its own module and list an instance
in :data:`BUILTIN_FORMATS` (in the kernel) or return it from ``provider_formats()`` (in a
plugin); see docs/formats.md.
"""

from __future__ import annotations

from ._base import (
    FEATURES,
    Answer,
    ChoiceMode,
    Definition,
    Feature,
    ProviderFormat,
    RawCall,
    args_json,
    as_dict,
    copy_json,
    field,
    has_field,
)
from ._table import FormatConflict, FormatTable
from .anthropic import Anthropic
from .bedrock_converse import BedrockConverse
from .gemini import Gemini
from .langchain import LangChain
from .mcp import Mcp
from .openai_chat import OpenAIChat
from .openai_responses import OpenAIResponses

__all__ = [
    "API_FORMATS",
    "BUILTIN",
    "BUILTIN_FORMATS",
    "FEATURES",
    "Answer",
    "ChoiceMode",
    "Definition",
    "Feature",
    "FormatConflict",
    "FormatTable",
    "ProviderFormat",
    "RawCall",
    "args_json",
    "as_dict",
    "copy_json",
    "field",
    "has_field",
]

# The built-in formats, in the order they are listed and asked to recognise a call.
BUILTIN_FORMATS: tuple[ProviderFormat, ...] = (
    OpenAIChat(),
    OpenAIResponses(),
    Anthropic(),
    Gemini(),
    Mcp(),
    LangChain(),
    BedrockConverse(),
)

BUILTIN = FormatTable(BUILTIN_FORMATS)
"""The table of the built-in formats alone (what a registry has when no plugin adds one)."""

API_FORMATS: tuple[str, ...] = BUILTIN.names("schemas")
"""Names of the built-in formats that emit schemas."""
