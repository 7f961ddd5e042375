"""What the formats share about a result's parts: the parts in order, the text that stands
in for a part a provider cannot take (so nothing is dropped silently), and the structured
result beside the text."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolregistry.types import Audio, EmbeddedResource, ResourceLink, ToolResult

__all__ = ["blocks_after_text", "by_kind", "link_text", "parts_of", "resource_text", "split_parts", "stand_in",
           "structured_of"]

Render = Callable[[dict[str, Any]], "dict[str, Any] | None"]


def parts_of(result: ToolResult) -> list[dict[str, Any]]:
    """The result's content as parts, in order (a string is one text part)."""
    content = result.content
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)


def resource_text(resource: EmbeddedResource) -> str:
    """A text resource as text the model reads: a header naming it, then its text."""
    return f"[resource {resource.uri} ({resource.media_type})]\n{resource.text}"


def link_text(link: ResourceLink) -> str:
    """A resource link as one line of text."""
    line = f"[resource link {link.uri} {link.name!r}"
    if link.mime_type:
        line += f" ({link.mime_type})"
    return line + (f": {link.description}]" if link.description else "]")


def _size(data: bytes | None) -> str:
    return "" if data is None else f", {len(data):,} bytes"


def stand_in(part: dict[str, Any], provider: str) -> str:
    """The text that takes the place of a part ``provider`` cannot carry in a tool result:
    what the tool returned and that it was left out."""
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text", ""))
    if kind == "resource":
        resource: EmbeddedResource = part["resource"]
        if resource.text is not None:
            return resource_text(resource)
        return (f"[the tool returned the resource {resource.uri} ({resource.media_type}"
                f"{_size(resource.data)}); not shown: {provider} takes no such file in a tool "
                "result]")
    if kind == "resource_link":
        return link_text(part["resource_link"])
    if kind == "audio":
        audio: Audio = part["audio"]
        where = f" at {audio.url}" if audio.url and not audio.url.startswith("data:") else ""
        size = _size(audio.data) if audio.data is not None else ""
        return (f"[the tool returned audio ({audio.media_type}{size}){where}; not heard: "
                f"{provider} takes no such audio in a tool result]")
    if kind == "image":
        image = part["image"]
        return (f"[the tool returned an image ({image.media_type}); not shown: {provider} "
                "takes no such image in a tool result]")
    return f"[the tool returned a {kind} part; not shown: {provider} has no place for it]"


def structured_of(result: ToolResult) -> tuple[dict[str, Any] | None, str]:
    """The structured result (``None`` for an error or when there is none) and the text that
    says more than it: ``""`` when the text is only the structured result as JSON."""
    text = result.text
    data = None if result.is_error else result.structured_content
    if data is None:
        return None, text
    try:
        same = json.loads(text) == data if text.strip() else True
    except ValueError:
        same = False
    return data, "" if same else text


def by_kind(**render: Callable[[Any], dict[str, Any] | None]) -> Render:
    """A ``render`` for :func:`split_parts` from one function per part kind, each given the
    part's value (``by_kind(image=image_block, resource=document_block)``)."""

    def rendered(part: dict[str, Any]) -> dict[str, Any] | None:
        kind = part.get("type")
        if not isinstance(kind, str) or kind not in render:
            return None
        return render[kind](part[kind])

    return rendered


def split_parts(result: ToolResult, provider: str, render: Render, *,
                skip_text: bool = False) -> tuple[list[str], list[dict[str, Any]]]:
    """The result's parts as ``(texts, blocks)``: each part ``render`` turns into the
    provider's block goes to ``blocks``; the text parts and the stand-ins of the others go to
    ``texts``, in order (``skip_text``: not the text parts, when a structured result says
    the same)."""
    texts: list[str] = []
    blocks: list[dict[str, Any]] = []
    for part in parts_of(result):
        block = render(part)
        if block is not None:
            blocks.append(block)
        elif not (skip_text and part.get("type") == "text"):
            texts.append(stand_in(part, provider))
    return texts, blocks


def blocks_after_text(result: ToolResult, provider: str, render: Render, text_type: str
                      ) -> str | list[dict[str, Any]]:
    """A result as a string when nothing in it renders as a block, else a ``text_type``
    block of its text (text parts and stand-ins) followed by the rendered blocks."""
    if isinstance(result.content, str):
        return result.content
    texts, blocks = split_parts(result, provider, render)
    text = "\n".join(texts)
    if not blocks:
        return text
    return ([{"type": text_type, "text": text}] if text else []) + blocks
