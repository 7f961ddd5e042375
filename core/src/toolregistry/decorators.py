"""The ``@tool`` decorator: a function into a :class:`~toolregistry.Tool`, ready to register.

::

    from toolregistry.decorators import tool

    @tool
    async def get_weather(city: str) -> str:
        '''Get current weather for a city.

        Best Practices:
            - Use full city names, not abbreviations.
        '''

    @tool(too_long_to_file=True, prompt_injection_builder=lambda ctx: "...")
    def read_large_file(path: str) -> str: ...

    registry.register(get_weather)
    await get_weather("Tokyo")          # calling the tool still calls the function
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, overload

import attrs

from .errors import ToolRegistrationError
from .tool import Tool, ToolMetadata

__all__ = ["tool"]

PromptInjectionBuilder = Callable[[Mapping[str, Any]], str | None]

_METADATA_FIELDS = frozenset(a.name for a in attrs.fields(ToolMetadata))


def _metadata(
    where: str,
    metadata: ToolMetadata | None,
    best_practices: Iterable[str] | str | None,
    prompt_injection_builder: PromptInjectionBuilder | None,
    too_long_to_file: bool | None,
    fields: dict[str, Any],
) -> ToolMetadata | None:
    changes = dict(fields)
    unknown = sorted(set(changes) - _METADATA_FIELDS)
    if unknown:
        known = ", ".join(sorted(_METADATA_FIELDS))
        raise ToolRegistrationError(
            f"@tool on {where}: unknown option(s) {', '.join(unknown)}; @tool takes name, "
            f"description, namespace, metadata and the ToolMetadata fields: {known}"
        )
    if best_practices is not None:
        changes["best_practices"] = best_practices
    if prompt_injection_builder is not None:
        if not callable(prompt_injection_builder):
            raise ToolRegistrationError(
                f"@tool on {where}: prompt_injection_builder must be a callable taking the "
                f"context mapping and returning text, got {type(prompt_injection_builder).__name__}"
            )
        changes["prompt_injection_builder"] = prompt_injection_builder
    if too_long_to_file is not None:
        changes["too_long_to_file"] = too_long_to_file
    if metadata is not None and not isinstance(metadata, ToolMetadata):
        raise ToolRegistrationError(
            f"@tool on {where}: metadata must be a ToolMetadata, got {type(metadata).__name__}"
        )
    if not changes:
        return metadata
    try:
        return attrs.evolve(metadata or ToolMetadata(), **changes)
    except (TypeError, ValueError) as exc:
        raise ToolRegistrationError(f"@tool on {where}: {exc}") from exc


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    tool_name: str | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    namespace: str | None = None,
    best_practices: Iterable[str] | str | None = None,
    prompt_injection_builder: PromptInjectionBuilder | None = None,
    too_long_to_file: bool | None = None,
    metadata: ToolMetadata | None = None,
    **metadata_fields: Any,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | str | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    namespace: str | None = None,
    best_practices: Iterable[str] | str | None = None,
    prompt_injection_builder: PromptInjectionBuilder | None = None,
    too_long_to_file: bool | None = None,
    metadata: ToolMetadata | None = None,
    **metadata_fields: Any,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a sync or async function a :class:`~toolregistry.Tool`.

    Use it bare (``@tool``), with options (``@tool(too_long_to_file=True)``) or with a name
    first (``@tool("multiply_numbers")``). The schema comes from the signature, the description
    and parameter descriptions from the docstring, ``best_practices`` from its
    ``Best Practices:`` section unless given here. Other ``ToolMetadata`` fields (``defer``,
    ``tags``, ``timeout``, ...) pass through as keywords. The result is registered with
    ``registry.register(t)``; calling it calls the function unchanged (an async function
    still returns a coroutine).
    """
    if isinstance(fn, str):
        if name is not None and name != fn:
            raise ToolRegistrationError(
                f"@tool({fn!r}, name={name!r}): give the tool's name once"
            )
        name, fn = fn, None

    def decorate(func: Callable[..., Any]) -> Tool:
        if isinstance(func, Tool):
            raise ToolRegistrationError(
                f"@tool applied twice to {func.name!r}: use a single @tool(...) with all options"
            )
        if not callable(func):
            raise ToolRegistrationError(f"@tool needs a function, got {type(func).__name__}")
        where = getattr(func, "__qualname__", None) or repr(func)
        meta = _metadata(where, metadata, best_practices, prompt_injection_builder,
                         too_long_to_file, metadata_fields)
        return Tool.from_function(func, name=name, description=description,
                                  namespace=namespace, metadata=meta)

    if fn is None:
        return decorate
    return decorate(fn)
