"""The non-text parts a tool result may carry: :class:`Image`, :class:`Audio`, an
:class:`EmbeddedResource` and a :class:`ResourceLink`, and the part dicts that hold them.

A result's content is a string, or a list of parts in order: ``{"type": "text", "text": ...}``,
``{"type": "image", "image": Image}``, ``{"type": "audio", "audio": Audio}``,
``{"type": "resource", "resource": EmbeddedResource}`` and
``{"type": "resource_link", "resource_link": ResourceLink}`` (:data:`PART_KINDS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from attrs import field, frozen

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["PART_KINDS", "Audio", "EmbeddedResource", "Image", "ResourceLink", "part_of",
           "part_value", "sniff_audio"]


def _b64encode(raw: bytes) -> str:
    import base64  # only a result with media needs it

    return base64.b64encode(raw).decode("ascii")


def _bytes_repr(data: bytes | None) -> str:
    return f"<{len(data)} bytes>" if data else "None"


def _guess_type(name: str) -> str | None:
    import mimetypes

    guess, _ = mimetypes.guess_type(name)
    return guess


class _Media:
    """What images and audio share: one of a path, a URL or bytes, read when encoded."""

    __slots__ = ()
    path: str | None
    url: str | None
    data: bytes | None
    mime_type: str | None
    _default_type = "application/octet-stream"

    if TYPE_CHECKING:  # the attrs subclasses define it
        def __init__(self, *, path: str | None = None, url: str | None = None,
                     data: bytes | None = None, mime_type: str | None = None) -> None: ...

    @classmethod
    def from_path(cls, path: str | Path, mime_type: str | None = None) -> Self:
        """Stored in a file (read when the result is encoded for the model)."""
        return cls(path=str(path), mime_type=mime_type)

    @classmethod
    def from_url(cls, url: str, mime_type: str | None = None) -> Self:
        """At a URL (``data:`` URLs too)."""
        return cls(url=url, mime_type=mime_type)

    def _check_source(self) -> None:
        if sum(x is not None for x in (self.path, self.url, self.data)) != 1:
            raise ValueError(f"{type(self).__name__} needs exactly one of path=, url= or data=")

    @property
    def media_type(self) -> str:
        """The MIME type, guessed from the path, URL or bytes when not given."""
        if self.mime_type:
            return self.mime_type
        src = self.path or self.url or ""
        if src.startswith("data:"):
            return src[5:].split(";", 1)[0] or self._default_type
        return (self._sniff() if self.data is not None else None) or \
            _normal(_guess_type(src)) or self._default_type

    def _sniff(self) -> str | None:
        return None

    def read_bytes(self) -> bytes | None:
        """The bytes when they are local (path or data), else ``None``."""
        if self.data is not None:
            return self.data
        if self.path is not None:
            with open(self.path, "rb") as file:
                return file.read()
        if self.url and self.url.startswith("data:") and ";base64," in self.url:
            import base64

            return base64.b64decode(self.url.split(",", 1)[1])
        return None

    def base64(self) -> str | None:
        """Base64 of the bytes when local, else ``None``."""
        raw = self.read_bytes()
        return _b64encode(raw) if raw is not None else None

    def as_url(self) -> str:
        """Its own URL, or a ``data:`` URL of local bytes."""
        if self.url is not None:
            return self.url
        return f"data:{self.media_type};base64,{self.base64()}"


@frozen
class Image(_Media):
    """An image a tool returns, from a path, a URL or bytes.

    ``Image.from_path(p)``, ``Image.from_url(u)``, ``Image.from_bytes(b, mime_type)``.
    Paths are read when the result is encoded for the model.
    """

    path: str | None = None
    url: str | None = None
    data: bytes | None = field(default=None, repr=_bytes_repr)
    mime_type: str | None = None
    detail: str | None = None
    _default_type = "image/png"

    def __attrs_post_init__(self) -> None:
        self._check_source()

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str = "image/png") -> Image:
        """An image held in memory."""
        return cls(data=data, mime_type=mime_type)


# Audio containers told by their first bytes.
_AUDIO_MAGIC = ((b"fLaC", "audio/flac"), (b"OggS", "audio/ogg"), (b"ID3", "audio/mpeg"),
                (b"\xff\xfb", "audio/mpeg"), (b"\xff\xf3", "audio/mpeg"),
                (b"\xff\xf2", "audio/mpeg"))
# Spellings of the same type that the providers know by one name.
_ALIASES = {"audio/x-wav": "audio/wav", "audio/wave": "audio/wav", "audio/vnd.wave": "audio/wav",
            "audio/mp3": "audio/mpeg", "audio/x-flac": "audio/flac"}
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3", "audio/flac": "flac",
                  "audio/ogg": "ogg", "audio/aac": "aac", "audio/mp4": "m4a",
                  "audio/webm": "webm", "audio/aiff": "aiff"}


def _normal(mime: str | None) -> str | None:
    return _ALIASES.get(mime, mime) if mime else None


def sniff_audio(data: bytes) -> str | None:
    """The audio type of ``data`` by its first bytes (WAV, MP3, FLAC, Ogg), else ``None``."""
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    for magic, mime in _AUDIO_MAGIC:
        if data.startswith(magic):
            return mime
    return None


@frozen
class Audio(_Media):
    """Audio a tool returns, from a path, a URL or bytes (the media type sniffed from the
    bytes or guessed from the name when not given; ``audio/wav`` when nothing tells).

    ``Audio.from_path(p)``, ``Audio.from_url(u)``, ``Audio.from_bytes(b, mime_type)``.
    """

    path: str | None = None
    url: str | None = None
    data: bytes | None = field(default=None, repr=_bytes_repr)
    mime_type: str | None = None
    _default_type = "audio/wav"

    def __attrs_post_init__(self) -> None:
        self._check_source()

    def _sniff(self) -> str | None:
        return sniff_audio(self.data) if self.data is not None else None

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str | None = None) -> Audio:
        """Audio held in memory."""
        return cls(data=data, mime_type=mime_type)

    @property
    def format(self) -> str:
        """The short format name providers ask for (``wav``, ``mp3``, ``flac``, ...)."""
        mime = _normal(self.media_type) or ""
        return _AUDIO_FORMATS.get(mime, mime.rpartition("/")[2])


def _check_uri(uri: object, what: str) -> None:
    if not isinstance(uri, str) or not uri:
        raise ValueError(f"{what} needs a uri (a non-empty string), got {uri!r}")


@frozen
class EmbeddedResource:
    """A resource's contents returned inline (MCP's embedded resource): its ``uri``, its
    ``mime_type``, and exactly one of ``text`` or ``data`` (bytes, a blob).

    ``EmbeddedResource.from_text(uri, text)``, ``EmbeddedResource.from_bytes(uri, data)``.
    """

    uri: str
    text: str | None = None
    data: bytes | None = field(default=None, repr=_bytes_repr)
    mime_type: str | None = None

    def __attrs_post_init__(self) -> None:
        _check_uri(self.uri, "EmbeddedResource")
        if (self.text is None) == (self.data is None):
            raise ValueError("EmbeddedResource needs exactly one of text= or data=")

    @classmethod
    def from_text(cls, uri: str, text: str, mime_type: str | None = None) -> EmbeddedResource:
        """A text resource."""
        return cls(uri, text=text, mime_type=mime_type)

    @classmethod
    def from_bytes(cls, uri: str, data: bytes, mime_type: str | None = None
                   ) -> EmbeddedResource:
        """A binary resource (a blob)."""
        return cls(uri, data=data, mime_type=mime_type)

    @property
    def media_type(self) -> str:
        """The MIME type, guessed from the URI when not given (``text/plain`` for text,
        ``application/octet-stream`` for bytes when nothing tells)."""
        return self.mime_type or _normal(_guess_type(self.uri)) or (
            "text/plain" if self.text is not None else "application/octet-stream")

    @property
    def filename(self) -> str:
        """The last segment of the URI (what a provider that takes files calls it)."""
        return self.uri.rstrip("/").rpartition("/")[2] or self.uri

    def base64(self) -> str:
        """Base64 of the contents (the text as UTF-8)."""
        raw = self.data if self.data is not None else (self.text or "").encode("utf-8")
        return _b64encode(raw)


@frozen
class ResourceLink:
    """A link to a resource the client may read (MCP's resource link): ``uri`` and ``name``
    (the URI's last segment when not given), with an optional ``title``, ``description``,
    ``mime_type`` and ``size`` in bytes."""

    uri: str
    name: str = ""
    description: str | None = None
    mime_type: str | None = None
    title: str | None = None
    size: int | None = None

    def __attrs_post_init__(self) -> None:
        _check_uri(self.uri, "ResourceLink")
        if not self.name:
            object.__setattr__(self, "name", self.uri.rstrip("/").rpartition("/")[2] or self.uri)


PART_KINDS: dict[type, str] = {Image: "image", Audio: "audio", EmbeddedResource: "resource",
                               ResourceLink: "resource_link"}
"""Each part value's class and the ``type`` of its part (the part holds it under that key)."""
_CLASS_OF = {kind: cls for cls, kind in PART_KINDS.items()}


def part_of(value: Any) -> dict[str, Any] | None:
    """The part that holds ``value`` when it is an :class:`Image`, :class:`Audio`,
    :class:`EmbeddedResource` or :class:`ResourceLink`, else ``None``."""
    kind = PART_KINDS.get(type(value))
    return None if kind is None else {"type": kind, kind: value}


def part_value(part: Any) -> Any:
    """The value a well-formed non-text part holds (``part["image"]``, ...), else ``None``."""
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    cls = _CLASS_OF.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return None
    value = part.get(kind)
    return value if isinstance(value, cls) else None
