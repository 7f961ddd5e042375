"""The per-registry spooler: decides, writes, previews, and serves the reader tool."""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from toolregistry import Tool, ToolMetadata, ToolResult, ToolTag
from toolregistry.errors import ConfigError, ToolCallError, ToolRegistrationError
from toolregistry.plugin import log
from toolregistry.tool import Provenance

from ._reader import LineIndex, build_index, count_lines, grep_lines, read_lines
from ._settings import PLUGIN_NAME, SpoolSettings
from ._store import HANDLE_PATTERN, Entry, SpoolError, SpoolStore
from ._tokens import MAX_TOKENS_PER_CHAR, TokenCounter, estimate_from_sizes, estimate_tokens
from ._tokens import load_counter as _load_counter

if TYPE_CHECKING:
    from toolregistry import ToolRegistry
    from toolregistry.plugin import StoreURL

    from ._shared import SharedIndex

_STATE_KEY = "spooler"
_create_lock = threading.Lock()
_MAX_LIMIT = 2000
_INDEX_CACHE = 8

READER_DESCRIPTION = (
    "Read a tool output that was too long to show in full. A truncated result names a spool "
    "handle (like sp_0123456789abcdef); pass it here to page through the full text by line "
    "number (offset, limit), read its last lines (tail), or find lines containing some text "
    "(grep). Lines are numbered from 0; very long lines are split into several numbered lines."
)

# Optional parameters accept null: models (and OpenAI strict mode, where every property is
# required) often send null for "not given", and that must not be an invalid call.
_READER_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "handle": {
            "type": "string",
            "description": "The spool handle from the truncated result, e.g. sp_0123456789abcdef.",
            "pattern": HANDLE_PATTERN,
        },
        "offset": {
            "type": ["integer", "null"],
            "minimum": 0,
            "default": 0,
            "description": "First line to return (numbered from 0).",
        },
        "limit": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": _MAX_LIMIT,
            "default": 200,
            "description": "How many lines to return at most (or matches, with grep).",
        },
        "tail": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": _MAX_LIMIT,
            "description": "Return the last N lines instead (with grep: the last N matches).",
        },
        "grep": {
            "type": ["string", "null"],
            "description": "Return only lines containing this text, with their line numbers "
                           "(case-insensitive for ASCII letters; 'error|warning' finds either).",
        },
    },
    "required": ["handle"],
    "additionalProperties": False,
}


class Spooler:
    """Everything the plugin keeps for one registry (in ``registry.plugin_state("spool")``)."""

    def __init__(self, settings: SpoolSettings, shared: StoreURL | None = None) -> None:
        self._lock = threading.RLock()
        self._shared = shared
        self._indexes: OrderedDict[tuple[str, int], LineIndex] = OrderedDict()
        self.reader_name: str | None = None
        self._counter: TokenCounter | None = None
        self.short_chars = -1
        self.settings = settings
        self.store = self._make_store(settings)
        self.counter = _load_counter(settings.token_counter) if settings.token_counter else None

    @property
    def counter(self) -> TokenCounter | None:
        """The exact token counter (``None``: the estimate)."""
        return self._counter

    @counter.setter
    def counter(self, counter: TokenCounter | None) -> None:
        self._counter = counter
        self.short_chars = self._short_chars()

    def _short_chars(self) -> int:
        """The length up to which a text cannot be over the threshold whatever it holds
        (-1 with an exact counter, which counts every text)."""
        if self._counter is not None:
            return -1
        return int(self.settings.threshold_tokens / MAX_TOKENS_PER_CHAR)

    # -- configuration ---------------------------------------------------------------------
    def configure(self, options: Mapping[str, Any]) -> SpoolSettings:
        from pydantic import ValidationError

        merged = {**self.settings.model_dump(), **{k.replace("-", "_"): v
                                                   for k, v in options.items()}}
        try:
            new = SpoolSettings.model_validate(merged)
        except ValidationError as exc:
            raise ConfigError.from_validation("toolregistry_spool.configure()", exc, values=False) from None
        with self._lock:
            if new.directory != self.settings.directory and self.store.directory is not None:
                raise ConfigError(
                    "toolregistry_spool.configure(directory=...) must come before the first "
                    f"output is spooled (files already live in {self.store.directory})")
            if new.directory != self.settings.directory:
                self.store.close()  # nothing spooled yet: only its index connection, if any
                self.store = self._make_store(new)
            else:
                self.store.set_keep(new.keep)
                self.store.max_age = new.max_age_seconds
                self.store.max_total = new.max_total_bytes
            if new.token_counter != self.settings.token_counter:
                self.counter = _load_counter(new.token_counter) if new.token_counter else None
            self.settings = new
            self.short_chars = self._short_chars()
        return new

    def _make_store(self, settings: SpoolSettings) -> SpoolStore:
        store = SpoolStore(settings.directory, keep=settings.keep,
                           max_age=settings.max_age_seconds, max_total=settings.max_total_bytes)
        if self._shared is not None:
            store.share(functools.partial(_open_index, self._shared))
        return store

    def opted_in(self, tool: Tool) -> bool:
        """``too_long_to_file=True``, or ``None`` with ``all-tools = true``."""
        flag = tool.metadata.too_long_to_file
        return flag is True or (flag is None and self.settings.all_tools)

    def count(self, text: str) -> int:
        """Tokens of ``text``: the exact counter when one is set, else the estimate."""
        counter = self.counter
        return int(counter(text)) if counter is not None else estimate_tokens(text)

    # -- spooling --------------------------------------------------------------------------
    def spool(self, registry: ToolRegistry, result: ToolResult) -> ToolResult | None:
        """A replacement for ``result`` when its text is over the threshold, else ``None``."""
        content = result.content
        if isinstance(content, str):
            text = content
        else:
            texts = [p for p in content if p.get("type") == "text"]
            if not texts:
                return None
            text = texts[0]["text"] if len(texts) == 1 else "\n".join(
                str(p.get("text", "")) for p in texts)
            if not isinstance(text, str):
                return None
        settings = self.settings
        threshold = settings.threshold_tokens
        counter = self.counter
        chars = len(text)
        data: bytes | None = None
        nbytes: int | None = None
        if counter is not None:
            tokens: int | None = int(counter(text))
        elif chars <= self.short_chars:
            return None  # cannot be over: not even encoded
        elif text.isascii():  # O(1): the estimate needs no pass over the text
            nbytes = chars
            tokens = estimate_from_sizes(chars, nbytes)
        elif chars / 4 > threshold:
            tokens = None  # certainly over (the estimate is >= chars / 4): known once written
        else:
            data = text.encode("utf-8", "replace")
            nbytes = len(data)
            tokens = estimate_from_sizes(chars, nbytes)
        if tokens is not None and tokens <= threshold:
            return None
        reader = self.ensure_reader(registry) if settings.reader else None
        entry: Entry | None = None
        failure: str | None = None
        try:
            entry = self.store.write([data] if data is not None else _encoded_chunks(text))
            nbytes = entry.size
        except (OSError, SpoolError) as exc:
            failure = f"{type(exc).__name__}: {exc}"
        if nbytes is None:
            nbytes = len(text.encode("utf-8", "replace"))
        if tokens is None:
            tokens = estimate_from_sizes(chars, nbytes)
        if failure is not None:
            log.warning("spool.failed", tool=result.name, call_id=result.call_id,
                        size=nbytes, error=failure)
        preview = self._preview(text, nbytes, tokens, entry, reader, failure)
        if isinstance(content, str):
            new_content: str | list[dict[str, Any]] = preview
        else:
            new_content = []
            placed = False
            for part in content:
                if part.get("type") == "text":
                    if not placed:
                        new_content.append({"type": "text", "text": preview})
                        placed = True
                    continue
                new_content.append(dict(part))  # images (and anything else) are kept
        metadata = dict(result.metadata)
        if entry is not None:
            metadata["spool"] = {"handle": entry.handle, "path": str(entry.path),
                                 "size": entry.size, "tokens": tokens}
            log.info("spool.written", tool=result.name, call_id=result.call_id,
                     handle=entry.handle, size=entry.size, tokens=tokens)
        else:
            metadata["spool"] = {"handle": None, "path": None, "size": nbytes,
                                 "tokens": tokens, "error": failure}
        return attrs.evolve(result, content=new_content, metadata=metadata)

    def _head_end(self, text: str, budget: int, ratio: float) -> int:
        n = min(len(text), int(budget * ratio))
        for _ in range(12):
            if n <= 0:
                return 0
            cut = text.rfind("\n", 0, n)
            end = cut + 1 if cut >= int(n * 0.8) else n  # prefer whole lines
            used = self.count(text[:end])
            if used <= budget:
                return end
            n = int(n * budget / used * 0.95)
        return 0

    def _tail_start(self, text: str, floor: int, budget: int, ratio: float) -> int:
        size = len(text)
        m = min(size - floor, int(budget * ratio))
        for _ in range(12):
            if m <= 0:
                return size
            start = size - m
            cut = text.find("\n", start, start + max(1, m // 5))
            begin = cut + 1 if cut >= 0 else start  # prefer whole lines
            used = self.count(text[begin:])
            if used <= budget:
                return begin
            m = int(m * budget / used * 0.95)
        return size

    def _notice(self, tokens: int, size: int, entry: Entry | None, reader: str | None,
                failure: str | None, resume: int) -> str:
        approx = "" if self.counter is not None else "~"
        what = (f"[Output too long ({approx}{tokens:,} tokens, {size:,} bytes): only its "
                "start and end are shown.")
        if entry is not None and reader is not None:
            return (f'{what} The full text is spooled as handle "{entry.handle}"; read the '
                    f'rest with {reader}(handle="{entry.handle}", offset={resume}) '
                    '(or tail=N, or grep="text" to find lines).]')
        if entry is not None:
            return f"{what} The full text is in the file {entry.path}.]"
        return f"{what} The full text could not be saved ({failure}).]"

    def _preview(self, text: str, nbytes: int, tokens: int, entry: Entry | None,
                 reader: str | None, failure: str | None) -> str:
        """Head, a marker, tail and the notice line: at most ``threshold_tokens`` in all."""
        settings = self.settings
        threshold = settings.threshold_tokens
        overhead = self.count(self._notice(tokens, nbytes, entry, reader, failure, 10**9)
                              + f"\n[... {nbytes:,} bytes not shown, from line "
                              f"{10**9} on ...]\n")
        budget = threshold - overhead - 4
        ratio = len(text) / max(tokens, 1)  # characters per token in this text
        for _ in range(6):
            preview = self._assemble(text, nbytes, tokens, entry, reader, failure, budget, ratio)
            used = self.count(preview)
            if used <= threshold:
                return preview
            budget -= used - threshold + 16  # estimates of the parts do not add up exactly
        return self._notice(tokens, nbytes, entry, reader, failure, 0)

    def _assemble(self, text: str, nbytes: int, tokens: int, entry: Entry | None,
                  reader: str | None, failure: str | None, budget: int, ratio: float) -> str:
        settings = self.settings
        budget = max(0, budget)
        tail_budget = int(budget * settings.tail_fraction)
        head_budget = budget - tail_budget
        head_end = self._head_end(text, head_budget, ratio)
        tail_start = self._tail_start(text, head_end, tail_budget, ratio) if tail_budget else (
            len(text))
        head, tail = text[:head_end], text[tail_start:]
        head_data = head.encode("utf-8", "replace")
        head_bytes = len(head_data)
        tail_bytes = len(tail.encode("utf-8", "replace"))
        resume = count_lines(head_data, settings.wrap_bytes)
        if head and not head.endswith("\n"):
            resume = max(0, resume - 1)  # the cut line is shown again in full
        omitted = nbytes - head_bytes - tail_bytes
        pieces = [head if head.endswith("\n") or not head else head + "\n"]
        if omitted > 0:
            pieces.append(f"[... {omitted:,} bytes not shown, from line {resume} on ...]\n")
        if tail:
            pieces.append(tail if tail.endswith("\n") else tail + "\n")
        pieces.append(self._notice(tokens, nbytes, entry, reader, failure, resume))
        return "".join(pieces)

    # -- the reader tool -------------------------------------------------------------------
    def reader_present(self, registry: ToolRegistry) -> bool:
        name = self.reader_name
        if name is None:
            return False
        tool = registry.get_tool(name)
        return tool is not None and tool.provenance.plugin == PLUGIN_NAME and getattr(
            tool.callable, "__self__", None) is self

    def ensure_reader(self, registry: ToolRegistry) -> str | None:
        """Register the reader tool in ``registry`` unless it is there; returns its name."""
        if self.reader_present(registry):
            return self.reader_name
        with self._lock:
            if self.reader_present(registry):
                return self.reader_name
            base = self.settings.reader_name
            name, n = base, 1
            while name in registry:
                other = registry.get_tool(name)
                if other is not None and getattr(other.callable, "__self__", None) is self:
                    break
                n += 1
                name = f"{base}_spool" if n == 2 else f"{base}_spool{n - 1}"
            if name != base:
                log.warning("spool.reader_renamed", name=name, taken=base,
                            registry=registry.name)
            try:
                if name not in registry:
                    registry.register_tools([self.make_reader(name)])
            except ToolRegistrationError as exc:
                log.warning("spool.reader_failed", name=name, error=str(exc))
                return None
            self.reader_name = name
            log.debug("spool.reader_registered", name=name, registry=registry.name)
            return name

    def renamed(self, mapping: Mapping[str, str]) -> None:
        """Follow the reader tool when it is renamed or moved into a namespace."""
        with self._lock:
            if self.reader_name is not None and self.reader_name in mapping:
                self.reader_name = str(mapping[self.reader_name])

    def make_reader(self, name: str) -> Tool:
        """The reader tool (schema-first; its callable is :meth:`read`)."""
        return Tool(
            name=name,
            description=READER_DESCRIPTION,
            parameters=_READER_PARAMETERS,
            callable=self.read,
            metadata=ToolMetadata(
                tags={ToolTag.READ_ONLY, ToolTag.IDEMPOTENT},
                read_only_hint=True,
                idempotent_hint=True,
                open_world_hint=False,
                too_long_to_file=False,  # it pages within the threshold by itself
            ),
            provenance=Provenance("plugin", "toolregistry_spool reader", name,
                                  plugin=PLUGIN_NAME),
        )

    def read(self, handle: str, offset: int | None = 0, limit: int | None = 200,
             tail: int | None = None, grep: str | None = None) -> str:
        """What the reader tool returns for one call (never more than the threshold)."""
        try:
            entry, buf = self.store.open(handle)
        except SpoolError as exc:
            raise ToolCallError(str(exc), kind="invalid_arguments") from None
        try:
            index = self._index(entry, buf)
            offset = max(0, int(offset or 0))
            limit = max(1, min(int(200 if limit is None else limit), _MAX_LIMIT))
            n_tail = None if tail is None else max(1, min(int(tail), _MAX_LIMIT))
            max_tokens = max(100, self.settings.threshold_tokens - 100)
            if grep:
                try:
                    return grep_lines(buf, index, entry.handle, grep, offset=offset,
                                      limit=limit, tail=n_tail, max_tokens=max_tokens)
                except ValueError as exc:
                    raise ToolCallError(str(exc), kind="invalid_arguments") from None
            if n_tail is not None:
                offset, limit = max(0, index.total - n_tail), n_tail
            return read_lines(buf, index, entry.handle, offset=offset, limit=limit,
                              max_tokens=max_tokens)
        finally:
            if not isinstance(buf, bytes):
                buf.close()

    def _index(self, entry: Entry, buf: Any) -> LineIndex:
        key = (entry.handle, self.settings.wrap_bytes)
        with self._lock:
            found = self._indexes.get(key)
            if found is not None and found.size == entry.size:
                self._indexes.move_to_end(key)
                return found
        index = build_index(buf, self.settings.wrap_bytes)
        with self._lock:
            self._indexes[key] = index
            while len(self._indexes) > _INDEX_CACHE:
                self._indexes.popitem(last=False)
        return index


_CHUNK_CHARS = 1 << 18


def _encoded_chunks(text: str) -> Iterator[bytes]:
    # Slicing never splits a character (a str holds code points), and "replace" handles a
    # lone surrogate inside one slice exactly as in the whole text: same bytes as encoding
    # the text at once.
    for start in range(0, len(text), _CHUNK_CHARS):
        yield text[start:start + _CHUNK_CHARS].encode("utf-8", "replace")


def get_spooler(registry: ToolRegistry) -> Spooler:
    """The spooler of ``registry`` (made on first use from its configuration)."""
    state = registry.plugin_state(PLUGIN_NAME)
    spooler: Spooler | None = state.get(_STATE_KEY)
    if spooler is not None:
        return spooler
    with _create_lock:
        spooler = state.get(_STATE_KEY)
        if spooler is None:
            spooler = Spooler(registry.plugin_settings(PLUGIN_NAME, SpoolSettings),
                              registry.store_url())
            # close() removes the files; so does garbage collection or interpreter exit when
            # the application never closes the registry (finalize runs once).
            registry.add_closer(weakref.finalize(registry, _close_store, spooler))
            state[_STATE_KEY] = spooler
    return spooler


def _open_index(url: StoreURL) -> SharedIndex:
    from toolregistry.plugin import open_store

    from ._shared import SCHEMA, SharedIndex

    # The spool files are not synced to disk either: an index entry needs no more.
    return SharedIndex(open_store(url, durable=False, schema=SCHEMA))


def _close_store(spooler: Spooler) -> None:
    spooler.store.close()


def spool_directory(registry: ToolRegistry) -> Path | None:
    """The folder ``registry``'s outputs are spooled to (``None`` until the first one)."""
    return get_spooler(registry).store.directory
