"""``bedrock-converse``: the Amazon Bedrock Converse API (``converse`` / ``converse_stream``).

Owns: the ``{"toolSpec": {name, description, inputSchema: {"json": ...}}}`` entries of
``toolConfig.tools``; reading ``toolUse`` content blocks (``{"toolUse": {toolUseId, name,
input}}``, or the inner block alone; server tool uses, which Bedrock runs itself, are not
calls for the registry); the answer (an assistant message of ``toolUse`` blocks, then one user
message of ``toolResult`` blocks, ``status: "error"`` for errors, images as ``image`` blocks of
bytes or an S3 location, file resources of the document formats as ``document`` blocks, a
structured result as a ``json`` block, audio as text saying it was left out, never a blank
text block, which Converse refuses); ``toolChoice``
(``{"auto": {}}``, ``{"any": {}}``, ``{"tool": {"name": n}}``: Converse has no "none").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._base import Answer, ChoiceMode, Definition, ProviderFormat, RawCall, field, has_field
from ._parts import by_kind, split_parts, structured_of

if TYPE_CHECKING:
    from toolregistry.tool import Tool
    from toolregistry.types import EmbeddedResource, Image, ToolResult

__all__ = ["BedrockConverse"]

_NO_OUTPUT = "(the tool returned no output)"
_IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg",
                  "image/gif": "gif", "image/webp": "webp"}
_DOCUMENT_FORMATS = {
    "application/pdf": "pdf", "text/csv": "csv", "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html", "text/plain": "txt", "text/markdown": "md"}


class BedrockConverse(ProviderFormat):
    """Amazon Bedrock Converse."""

    name = "bedrock-converse"
    aliases = ("converse",)
    call_shape = "a Bedrock Converse toolUse block"

    def tool_definition(self, tool: Tool, parameters: dict[str, Any], *, strict: bool
                        ) -> dict[str, Any]:
        spec: dict[str, Any] = {"name": tool.name, "inputSchema": {"json": parameters}}
        if tool.description:  # Converse refuses an empty description
            spec["description"] = tool.description
        return {"toolSpec": spec}

    def read_definition(self, definition: Mapping[str, Any]) -> Definition:
        spec = definition["toolSpec"]
        return Definition(spec["name"], spec.get("description"), spec["inputSchema"]["json"])

    def read_call(self, obj: Any, kind: Any) -> RawCall | None:
        block = field(obj, "toolUse")
        if block is not None and not isinstance(block, (str, bytes)):
            kind = field(block, "type")
        elif kind is None and has_field(obj, "toolUseId") and has_field(obj, "name"):
            block = obj
        else:
            return None
        if kind is not None:  # "server_tool_use": a tool Bedrock ran itself
            return None
        return RawCall(field(block, "name"), field(block, "toolUseId"), field(block, "input"))

    def answer_messages(self, answers: Sequence[Answer]) -> list[dict[str, Any]]:
        if not answers:
            return []
        assistant = {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": c.id, "name": c.name,
                         "input": c.arguments if c.arguments is not None else {}}}
            for c, _, _ in answers
        ]}
        blocks = []
        for call, result, _ in answers:
            block: dict[str, Any] = {"toolUseId": call.id, "content": _result_content(result)}
            if result.is_error:
                block["status"] = "error"
            blocks.append({"toolResult": block})
        return [assistant, {"role": "user", "content": blocks}]

    def tool_choice(self, mode: ChoiceMode, tool: str | None = None) -> Any:
        if mode == "tool":
            return {"tool": {"name": tool}}
        if mode == "none":
            raise ValueError(
                "bedrock-converse has no tool choice 'none' (toolChoice is auto, any or one "
                "tool): leave toolConfig out of the request, or, once the conversation has "
                "toolUse blocks and toolConfig is required, use 'auto'")
        return {"auto": {}} if mode == "auto" else {"any": {}}


def _result_content(result: ToolResult) -> list[dict[str, Any]]:
    structured, more = structured_of(result)
    # the text parts are the structured result as JSON unless they say more
    texts, blocks = split_parts(result, "bedrock-converse",
                                by_kind(image=_image_block, resource=_document_block),
                                skip_text=structured is not None and not more)
    text = "\n".join(texts)
    content: list[dict[str, Any]] = [{"json": structured}] if structured is not None else []
    if text.strip():
        content.append({"text": text})
    elif not blocks and not content:  # Converse refuses a blank text block and empty content
        content.append({"text": _NO_OUTPUT})
    return content + blocks


def _document_block(resource: EmbeddedResource) -> dict[str, Any] | None:
    fmt = _DOCUMENT_FORMATS.get(resource.media_type)
    if fmt is None or resource.data is None:
        return None  # a text resource is text
    # a document's name: letters, digits, single spaces, hyphens, parentheses, brackets
    name = "".join(c if c.isalnum() or c in "-()[]" else " " for c in resource.filename)
    return {"document": {"format": fmt, "name": " ".join(name.split()) or "document",
                         "source": {"bytes": resource.data}}}


def _image_block(img: Image) -> dict[str, Any]:
    fmt = _IMAGE_FORMATS.get(img.media_type)
    if fmt is None:
        return {"text": f"[the tool returned an image of type {img.media_type}; Bedrock takes "
                        "png, jpeg, gif or webp]"}
    if img.url is not None and img.url.startswith("s3://"):
        return {"image": {"format": fmt, "source": {"s3Location": {"uri": img.url}}}}
    data = img.read_bytes()
    if data:
        return {"image": {"format": fmt, "source": {"bytes": data}}}
    if data is not None:
        return {"text": "[the tool returned an empty image]"}
    return {"text": f"[the tool returned an image at {img.url}; Bedrock takes images as bytes "
                    "or from S3, not by URL]"}
