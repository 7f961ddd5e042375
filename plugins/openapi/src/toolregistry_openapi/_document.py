"""Reading OpenAPI documents (file, URL, dict), parsing them safely, resolving ``$ref``.

Everything here is bounded: document size, YAML alias expansion (billion laughs), recursive
aliases, ``$ref`` chain length, number of documents reached through references. Remote
references are refused unless the user allows them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from attrs import field, frozen

from ._errors import OpenAPIError

__all__ = [
    "PROBE_PATHS",
    "Limits",
    "Origin",
    "RedirectPolicy",
    "Resolver",
    "decode_text",
    "is_url",
    "parse_text",
]

PROBE_PATHS = (
    "/openapi.json",
    "/openapi.yaml",
    "/openapi.yml",
    "/swagger.json",
    "/swagger.yaml",
    "/v3/api-docs",
    "/v2/api-docs",
    "/docs/openapi.json",
    "/api/openapi.json",
    "/api-docs",
)
"""Where a service root usually publishes its document, tried in this order."""


@frozen(kw_only=True)
class Limits:
    """Bounds that keep hostile documents from exhausting time or memory."""

    max_bytes: int = 64 * 1024 * 1024
    """Largest document (or referenced file) read, in bytes."""
    max_nodes: int = 20_000_000
    """Largest number of values a YAML document may expand to through aliases."""
    max_alias_expansion: int = 100
    """How many times more values a YAML document may expand to through aliases than it is
    written with (an alias counts as one written value): a few hundred bytes must not become
    millions of values, even under ``max_nodes``."""
    max_depth: int = 400
    """Deepest nesting of a YAML document that uses aliases (checked with the expansion)."""
    max_ref_chain: int = 64
    """Longest chain of ``$ref`` to ``$ref`` followed before giving up."""
    max_documents: int = 256
    """Most documents (files or URLs) reached through references."""
    max_schema_depth: int = 64
    """Schemas nested deeper than this are cut to ``{}`` (any value) in tool parameters."""
    max_tool_schema_bytes: int = 1024 * 1024
    """Largest parameters schema of one tool (its compact JSON text, ``$defs`` included); a
    larger one is an error for that operation (skipped with ``strict=False``)."""


DEFAULT_LIMITS = Limits()

_YAML_LOADER: Any = None
# A YAML anchor and an alias both present: only then is the expansion walk worth doing.
_ANCHOR_RE = re.compile(r"(?:^|[\s\[{,:-])&[^\s\[\]{},]+")
_ALIAS_RE = re.compile(r"(?:^|[\s\[{,:-])\*[^\s\[\]{},]+")


def is_url(text: str) -> bool:
    """True for ``http://`` and ``https://`` addresses."""
    return text[:8].lower().startswith(("http://", "https://"))


def _yaml_loader() -> Any:
    """A safe loader (the C one when PyYAML has it) with YAML 1.2-like scalars.

    Dates stay strings (``2020-01-01`` is not a JSON value) and only ``true``/``false`` are
    booleans (YAML 1.1 turns ``yes``, ``no``, ``on``, ``off`` into booleans, which breaks
    enums such as ``[on, off]``).
    """
    global _YAML_LOADER
    if _YAML_LOADER is not None:
        return _YAML_LOADER
    import yaml

    base = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    bool_tag = "tag:yaml.org,2002:bool"
    ts_tag = "tag:yaml.org,2002:timestamp"

    class _Loader(base):  # type: ignore[valid-type,misc]
        pass

    _Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in (bool_tag, ts_tag)]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    _Loader.add_implicit_resolver(
        bool_tag, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )

    def _timestamp_as_text(loader: Any, node: Any) -> Any:
        return loader.construct_scalar(node)

    _Loader.add_constructor(ts_tag, _timestamp_as_text)
    _YAML_LOADER = _Loader
    return _Loader


def decode_text(data: bytes, where: str) -> str:
    """UTF-8 text of a document, or an error naming the file and the offending byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        raise OpenAPIError(
            f"{where} is not UTF-8 text (byte 0x{bad} at offset {exc.start}): OpenAPI "
            "documents must be UTF-8; convert the file (e.g. iconv -f ISO-8859-2 -t UTF-8)"
        ) from None


def _check_expansion(doc: Any, where: str, limits: Limits) -> None:
    """Refuse alias bombs and recursive aliases: count the values the document expands to.

    Shared (aliased) nodes are counted once per use, memoised by identity, so the cost is
    linear in the distinct nodes while the bounds apply to the expanded tree: at most
    ``max_nodes`` values, and at most ``max_alias_expansion`` times the values written (each
    distinct node's children, an alias counting as one).
    """
    written = 1
    sizes: dict[int, int] = {}
    depths: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            children = node.values() if isinstance(node, dict) else node
            total = 1
            deepest = 0
            for child in children:
                if isinstance(child, (dict, list)):
                    total += sizes[id(child)]
                    deepest = max(deepest, depths[id(child)])
                else:
                    total += 1
            if total > limits.max_nodes:
                raise OpenAPIError(
                    f"{where} expands to more than {limits.max_nodes} values through YAML "
                    "aliases (Limits.max_nodes; an alias bomb?): refusing to load it"
                )
            if deepest + 1 > limits.max_depth:
                raise OpenAPIError(
                    f"{where} is nested deeper than {limits.max_depth} levels (Limits.max_depth): "
                    "refusing to load it"
                )
            sizes[key] = total
            depths[key] = deepest + 1
            continue
        if key in sizes:
            continue
        if key in active:
            raise OpenAPIError(
                f"{where} contains a recursive YAML alias (a value that contains itself): "
                "OpenAPI documents must be finite trees; use $ref for recursion"
            )
        active.add(key)
        stack.append((node, True))
        children = node.values() if isinstance(node, dict) else node
        written += len(children)
        for child in children:
            if isinstance(child, (dict, list)) and id(child) not in sizes:
                stack.append((child, False))
    expanded = sizes.get(id(doc), 1)
    if expanded > limits.max_alias_expansion * written:
        raise OpenAPIError(
            f"{where} expands to {expanded} values through YAML aliases, more than "
            f"{limits.max_alias_expansion} times the {written} values it is written with "
            "(Limits.max_alias_expansion; an alias bomb?): refusing to load it; raise "
            "limits=Limits(max_alias_expansion=...) if you trust it"
        )


def parse_text(text: str, where: str, limits: Limits = DEFAULT_LIMITS) -> Any:
    """Parse a JSON or YAML document (JSON fast path, YAML safe loading only)."""
    if len(text) > limits.max_bytes:
        raise OpenAPIError(
            f"{where} is larger than {limits.max_bytes} bytes: raise Limits.max_bytes "
            "(limits=Limits(max_bytes=...)) if you trust it"
        )
    head = text.lstrip()[:1]
    if head in ("{", "["):
        # JSON (also JSON saved as .yaml): the json parser is much faster than YAML's.
        try:
            return json.loads(text)
        except ValueError:
            pass  # YAML flow style; let YAML report the error
        except RecursionError:
            raise OpenAPIError(f"{where} is nested too deeply to parse") from None
    import yaml

    try:
        doc = yaml.load(text, Loader=_yaml_loader())
    except RecursionError:
        raise OpenAPIError(f"{where} is nested too deeply to parse") from None
    except yaml.YAMLError as exc:
        raise OpenAPIError(f"{where} is neither valid JSON nor valid YAML: {exc}") from None
    if isinstance(doc, (dict, list)) and _ANCHOR_RE.search(text) and _ALIAS_RE.search(text):
        _check_expansion(doc, where, limits)
    return doc


Fetcher = Callable[[str], bytes]
"""Reads the bytes at a URL (bounded); supplied by the loader (httpx)."""


@frozen
class Target:
    """A resolved reference: the value, the document it is in, its JSON pointer there."""

    value: Any
    uri: str | None
    pointer: str


def _unescape(part: str) -> str:
    return unquote(part).replace("~1", "/").replace("~0", "~")


_DEFAULT_PORTS = {"http": 80, "https": 443}


@frozen
class Origin:
    """Scheme, host and port of a URL (default ports filled in), as browsers compare them."""

    scheme: str
    host: str
    port: int | None

    @classmethod
    def of(cls, url: str) -> Origin:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        try:
            port = parts.port
        except ValueError:  # not a number: never equal to a real origin
            return cls(scheme, f"{parts.netloc.lower()} (invalid port)", None)
        return cls(scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme))


@frozen
class RedirectPolicy:
    """Where a fetch may be redirected: within ``origin`` (the host the user chose), or to
    its https twin (``http://host`` to ``https://host``); anywhere when ``anywhere`` (remote
    references allowed). A redirect elsewhere is refused before it is requested."""

    origin: Origin | None
    anywhere: bool = False

    def refusal(self, url: str, target: str) -> str | None:
        """``None`` when ``url`` may be redirected to ``target``, else why not."""
        if self.anywhere:
            return None
        there = Origin.of(target)
        here = self.origin
        if here is not None and (there == here or (
                (here.scheme, here.port, there.scheme, there.port) == ("http", 80, "https", 443)
                and there.host == here.host)):
            return None
        return (
            f"{url} redirects to {target}, another origin: not followed (it could reach hosts "
            "you did not choose); use the final URL, or pass allow_remote_refs=True to follow "
            "redirects and references anywhere"
        )


@frozen(kw_only=True)
class ResolverOptions:
    allow_remote_refs: bool = False
    limits: Limits = DEFAULT_LIMITS
    fetch: Fetcher | None = field(default=None, eq=False)


class Resolver:
    """Follows ``$ref`` across the root document, relative files and (if allowed) URLs.

    Documents are read once and cached by their absolute location. A root read from a URL
    may reference documents on the same origin (the user chose that host); any other URL
    needs ``allow_remote_refs=True``. A root given as a dict has no location, so relative
    references in it are an error naming the reference.
    """

    def __init__(self, root: Any, root_uri: str | None, options: ResolverOptions) -> None:
        self.root = root
        self.root_uri = root_uri
        self.options = options
        self.docs: dict[str | None, Any] = {root_uri: root}
        self._root_origin = Origin.of(root_uri) if root_uri and is_url(root_uri) else None
        # big specs point at the same shared parameters from hundreds of operations
        self._cache: dict[tuple[str, str | None], Target] = {}

    # -- locations ----------------------------------------------------------------------
    def _join(self, doc_part: str, base: str | None, ref: str) -> str:
        if is_url(doc_part):
            return doc_part
        scheme = urlsplit(doc_part).scheme
        if scheme == "file":
            if base is not None and is_url(base):
                raise OpenAPIError(
                    f"$ref {ref!r} in {base} points at a local file from a document read "
                    "over HTTP: refused"
                )
            return str(Path(unquote(urlsplit(doc_part).path)).resolve())
        if len(scheme) > 1:  # one letter is a Windows drive
            raise OpenAPIError(
                f"$ref {ref!r} in {base or 'the document'} uses the unsupported scheme "
                f"{scheme!r}: only relative files and http(s) URLs can be referenced"
            )
        if base is None:
            raise OpenAPIError(
                f"$ref {ref!r} points at another file, but the document was given as a dict "
                "with no location: load it from its file path (or URL) instead"
            )
        if is_url(base):
            return urljoin(base, doc_part)
        return str((Path(base).parent / unquote(doc_part)).resolve())

    def _load(self, uri: str, ref: str, base: str | None) -> Any:
        if uri in self.docs:
            return self.docs[uri]
        if len(self.docs) >= self.options.limits.max_documents:
            raise OpenAPIError(
                f"more than {self.options.limits.max_documents} documents reached through "
                f"$ref (at {ref!r} in {base}): refusing to read more"
            )
        where = f"{uri} (referenced as {ref!r} from {base or 'the document'})"
        if is_url(uri):
            same_origin = self._root_origin is not None and Origin.of(uri) == self._root_origin
            if not (same_origin or self.options.allow_remote_refs):
                raise OpenAPIError(
                    f"$ref {ref!r} in {base or 'the document'} points at the remote URL {uri}; "
                    "remote references are not fetched unless you pass allow_remote_refs=True"
                )
            if self.options.fetch is None:
                raise OpenAPIError(f"cannot fetch {where}: no HTTP fetcher available")
            data = self.options.fetch(uri)
        else:
            path = Path(uri)
            try:
                size = path.stat().st_size
                if size > self.options.limits.max_bytes:
                    raise OpenAPIError(
                        f"{where} is larger than {self.options.limits.max_bytes} bytes"
                    )
                data = path.read_bytes()
            except OSError as exc:
                raise OpenAPIError(
                    f"cannot read {where}: {exc.strerror or exc}: fix the reference or the file"
                ) from None
        doc = parse_text(decode_text(data, where), where, self.options.limits)
        self.docs[uri] = doc
        return doc

    # -- resolution ---------------------------------------------------------------------
    def resolve(self, ref: str, base: str | None) -> Target:
        """The value ``ref`` (relative to document ``base``) points at."""
        if not isinstance(ref, str):
            raise OpenAPIError(f"$ref must be a string, got {ref!r} in {base or 'the document'}")
        hit = self._cache.get((ref, base))
        if hit is not None:
            return hit
        target = self._resolve(ref, base)
        self._cache[(ref, base)] = target
        return target

    def _resolve(self, ref: str, base: str | None) -> Target:
        doc_part, _, pointer = ref.partition("#")
        if doc_part:
            uri: str | None = self._join(doc_part, base, ref)
            doc = self._load(uri, ref, base)  # type: ignore[arg-type]
        else:
            uri, doc = base, self.docs.get(base, self.root)
        node = doc
        pointer = pointer.rstrip("/") if pointer.strip("/") == "" else pointer
        if pointer:
            if not pointer.startswith("/"):
                raise OpenAPIError(
                    f"$ref {ref!r} in {base or 'the document'}: only JSON-pointer fragments "
                    "('#/...') are supported"
                )
            for raw in pointer[1:].split("/"):
                part = _unescape(raw)
                if isinstance(node, dict):
                    if part in node:
                        node = node[part]
                        continue
                    # integer keys (YAML status codes) looked up by their text
                    alt = next((k for k in node if str(k) == part), _MISSING)
                    if alt is not _MISSING:
                        node = node[alt]
                        continue
                elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                    node = node[int(part)]
                    continue
                raise OpenAPIError(
                    f"dangling $ref {ref!r} in {base or 'the document'}: "
                    f"{uri or 'the document'} has nothing at {pointer!r} (no {part!r}); "
                    "fix the reference"
                )
        return Target(node, uri, pointer or "")

    def deref(self, node: Any, base: str | None) -> tuple[Any, str | None]:
        """Follow ``$ref`` chains (parameters, bodies, path items) to a real value."""
        seen: list[str] = []
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            key = f"{base}#{ref}"
            if key in seen:
                raise OpenAPIError(
                    f"$ref cycle: {' -> '.join(str(s) for s in [*seen, key])}: fix the references"
                )
            if len(seen) >= self.options.limits.max_ref_chain:
                raise OpenAPIError(f"$ref chain longer than {len(seen)} at {ref!r}")
            seen.append(key)
            target = self.resolve(ref, base)
            node, base = target.value, target.uri
        return node, base


_MISSING = object()
