"""What a provider format is: the :class:`ProviderFormat` base class, the values that cross
it (:class:`RawCall`, :class:`Answer`) and the small helpers every format uses to read SDK
objects and dicts alike.

A format implements the parts its provider has; the table (``_table.py``) knows what a
format offers from the methods it overrides, so there is nothing to declare twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple

if TYPE_CHECKING:
    from toolregistry.tool import Tool
    from toolregistry.types import ToolCall, ToolResult

__all__ = [
    "FEATURES",
    "Answer",
    "ChoiceMode",
    "Definition",
    "Feature",
    "ProviderFormat",
    "RawCall",
    "args_json",
    "as_dict",
    "copy_json",
    "field",
    "has_field",
]

Feature = Literal["schemas", "calls", "messages", "tool_choice"]
FEATURES: tuple[Feature, ...] = ("schemas", "calls", "messages", "tool_choice")
ChoiceMode = Literal["auto", "none", "required", "tool"]

# The method whose override gives a format each feature.
_FEATURE_METHODS: dict[Feature, str] = {
    "schemas": "tool_definition",
    "calls": "read_call",
    "messages": "answer_messages",
    "tool_choice": "tool_choice",
}


class RawCall(NamedTuple):
    """The fields of one provider-native call, as the provider sent them.

    ``name`` and ``id`` may be of any type (the kernel checks them and names what was wrong);
    ``arguments`` is a JSON string, a mapping or ``None``; ``extra`` is copied into
    ``ToolCall.extra`` (data the answer must echo, e.g. Gemini's thought signature).
    """

    name: Any
    id: Any
    arguments: Any
    extra: dict[str, Any] | None = None


class Answer(NamedTuple):
    """One call and its result, paired for :meth:`ProviderFormat.answer_messages`.

    ``call.id`` is always set (the model's id, or the result's when the model sent none);
    ``model_sent_id`` says which, for providers that match by order when there was no id.
    """

    call: ToolCall
    result: ToolResult
    model_sent_id: bool


class Definition(NamedTuple):
    """What :meth:`ProviderFormat.read_definition` finds in a tool definition."""

    name: str
    description: str | None
    parameters: dict[str, Any] | None


class ProviderFormat:
    """One provider's tool-calling dialect. Subclass it, set :attr:`name`, and override the
    methods of what the provider has; a plugin returns instances from its
    ``provider_formats()`` hook.

    ============== ==================================================================
    feature        methods
    ============== ==================================================================
    schemas        :meth:`tool_definition` (the envelope) and its inverse
                   :meth:`read_definition`; :meth:`dialect` with
                   :meth:`rewrites_schema` when the provider needs a different schema
    calls          :meth:`read_call`, with :attr:`call_types` for calls that carry a
                   ``type`` field
    messages       :meth:`answer_messages`
    tool_choice    :meth:`tool_choice`
    ============== ==================================================================

    Instances are shared by every registry: keep no per-call state on them.
    """

    name: ClassVar[str] = ""
    """The canonical name, as ``api_format=`` takes it (lower case, e.g. ``"openai-chat"``)."""

    aliases: ClassVar[tuple[str, ...]] = ()
    """Other names accepted for this format (compared lower-cased, ``_`` read as ``-``)."""

    supports_strict: ClassVar[bool] = False
    """Whether ``strict=True`` means something to this format (OpenAI strict mode)."""

    call_types: ClassVar[tuple[str, ...]] = ()
    """Values of a call's ``type`` field that mark it as this format's (and no other's)."""

    call_shape: ClassVar[str] = ""
    """What this format's calls are, for the error about a call no format recognised
    (``"an Anthropic tool_use block"``)."""

    passthrough_types: ClassVar[tuple[str, ...]] = ()
    """Values of the ``type`` field of items in the model's output that are the provider's
    own server-side work (its tool search): never calls to execute; echoed back as they came
    (:meth:`echo_passthrough`), and the tools they loaded count as revealed
    (:meth:`revealed_by`)."""

    features: ClassVar[frozenset[Feature]] = frozenset()
    """What the format offers; worked out from the methods the subclass overrides."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.features = frozenset(
            feature for feature, method in _FEATURE_METHODS.items()
            if getattr(cls, method) is not getattr(ProviderFormat, method))

    # -- schemas ---------------------------------------------------------------------------
    def rewrites_schema(self, strict: bool) -> bool:
        """Whether :meth:`dialect` changes the parameters schema (then it gets a private
        copy; otherwise the tool's own schema goes out, read-only)."""
        return False

    def dialect(self, parameters: dict[str, Any], *, strict: bool, lost: list[str]
                ) -> dict[str, Any]:
        """The parameters schema in the provider's dialect.

        ``parameters`` is a private copy when :meth:`rewrites_schema` said so (edit it in
        place and return it). Append to ``lost`` a short note for everything the dialect
        cannot express (the kernel logs them as one ``schema.degraded`` event).
        """
        return parameters

    def tool_definition(self, tool: Tool, parameters: dict[str, Any], *, strict: bool
                        ) -> dict[str, Any]:
        """One tool's definition as the provider's request carries it (the envelope)."""
        raise NotImplementedError

    def read_definition(self, definition: Mapping[str, Any]) -> Definition:
        """The name, description and parameters schema inside one of this format's tool
        definitions: the inverse of :meth:`tool_definition`, for tests and tooling (the
        plugin contract checks every format's schemas with it)."""
        raise NotImplementedError

    # -- provider-native deferral ----------------------------------------------------------
    @property
    def native_search(self) -> bool:
        """Whether the provider searches deferred tools itself (:meth:`search_tools`)."""
        return type(self).search_tools is not ProviderFormat.search_tools

    def search_tools(self) -> list[dict[str, Any]]:
        """The provider's own tool-search tool definitions, sent with deferred tools when
        deferral is native. Override it only when the provider has native tool search."""
        return []

    def deferred_definitions(self, deferred: Sequence[tuple[Tool, dict[str, Any]]]
                             ) -> list[dict[str, Any]]:
        """The definitions of deferred tools (each ``(tool, its definition)``, in
        registration order) marked the provider's way; new dicts, the given ones unchanged.
        Default: ``defer_loading: true`` on each."""
        return [{**definition, "defer_loading": True} for _, definition in deferred]

    def revealed_by(self, obj: Any, kind: str) -> list[str]:
        """The names of the tools a passthrough item (``kind`` is one of
        :attr:`passthrough_types`) loaded into the model's context (``[]``: none)."""
        return []

    def echo_passthrough(self, messages: list[dict[str, Any]], items: Sequence[dict[str, Any]]
                         ) -> list[dict[str, Any]]:
        """:meth:`answer_messages`' ``messages`` with the passthrough ``items`` of the same
        turn (as dicts, in the model's order) put back where the provider expects them."""
        return messages

    # -- calls -----------------------------------------------------------------------------
    def read_call(self, obj: Any, kind: Any) -> RawCall | None:
        """The fields of ``obj`` when it is one of this format's calls, else ``None``.

        ``obj`` is an SDK object or a dict (read it with :func:`field` / :func:`has_field`,
        never ``model_dump``); ``kind`` is its ``type`` field (``None`` when absent). When
        ``kind`` is one of :attr:`call_types` this format alone is asked; otherwise every
        format is asked in table order, so recognise only shapes that are unmistakably yours.
        """
        return None

    # -- answers ---------------------------------------------------------------------------
    def answer_messages(self, answers: Sequence[Answer]) -> list[dict[str, Any]]:
        """What goes into the conversation after the model's turn: the message that echoes
        the calls, then the results (errors flagged the provider's way, each content part
        the provider's way where it takes it, else the text of ``_parts.stand_in``).
        ``answers`` may be empty."""
        raise NotImplementedError

    # -- tool choice -----------------------------------------------------------------------
    def tool_choice(self, mode: ChoiceMode, tool: str | None = None) -> Any:
        """The provider's ``tool_choice`` value: ``auto``, ``none``, ``required`` (at least
        one call), or ``tool`` (``tool`` must be called). Raise ``ValueError`` for a mode the
        provider does not have. Return a fresh object each time."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


# --- helpers for format authors ------------------------------------------------------------

def field(obj: Any, key: str) -> Any:
    """``obj[key]`` for mappings, ``obj.key`` for objects; ``None`` when absent or broken."""
    try:
        if isinstance(obj, Mapping):
            return obj.get(key)
        return getattr(obj, key, None)
    except Exception:  # a broken __getattr__ / __getitem__ is a malformed call, not a crash
        return None


def has_field(obj: Any, key: str) -> bool:
    """Whether ``obj`` has ``key`` (as a mapping key or an attribute); never raises."""
    try:
        if isinstance(obj, Mapping):
            return key in obj
        return hasattr(obj, key)
    except Exception:
        return False


def args_json(call: ToolCall) -> str:
    """The call's arguments as the JSON string the model sent (or an encoding of them)."""
    if isinstance(call.raw_arguments, str):
        return call.raw_arguments
    try:
        return json.dumps(call.arguments or {}, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return "{}"


def as_dict(obj: Any) -> dict[str, Any]:
    """An SDK object (pydantic, as the provider SDKs return them) or a mapping as a new dict
    fit to send back to the provider (``None`` fields left out)."""
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        out: dict[str, Any] = dump(mode="json", exclude_none=True, by_alias=True)
        return out
    raise TypeError(f"cannot send back a {type(obj).__name__}: pass the provider's objects "
                    "or dicts")


def copy_json(node: Any) -> Any:
    """A fast deep copy of JSON-like data (dicts, lists, scalars): each container is copied
    whole at C speed, then only its nested containers are replaced by their copies."""
    if isinstance(node, dict):
        out = dict(node)
        for k, v in node.items():
            if isinstance(v, (dict, list)):
                out[k] = copy_json(v)
        return out
    if isinstance(node, list):
        items = list(node)
        for i, v in enumerate(node):
            if isinstance(v, (dict, list)):
                items[i] = copy_json(v)
        return items
    return node
