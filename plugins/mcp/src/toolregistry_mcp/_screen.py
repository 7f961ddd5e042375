"""Tool-poisoning screening: hidden instructions in the definitions an MCP server sends.

A model reads every tool description and parameter description it is given, and obeys what
it finds there; a server can use that to steer it ("tool poisoning"). These checks look at
the texts of each imported definition -- description, title, and every ``description`` /
``title`` in its input and output schemas -- for:

- ``invisible_characters``: zero-width and other format characters, Unicode tag characters
  (which carry text no one sees: it is decoded into the finding), variation selectors,
  Hangul fillers;
- ``bidi_controls``: bidirectional overrides and isolates, which make text read differently
  than it is;
- ``tag_block``: pseudo-markup that addresses the model (``<IMPORTANT>``, ``<system>``,
  ``[INST]``, ...);
- ``secret_access``: instructions to read files, keys, credentials or environment variables;
- ``exfiltration``: instructions to send data to an address, or to smuggle it out through an
  argument;
- ``cross_tool``: instructions about how *other* tools are to be used, or naming another
  source's tool;
- ``concealment``: instructions to keep something from the user;
- ``instruction_override``: "ignore previous instructions" and the like;
- ``shadowing``: the tool has the name of a tool another source already provides.

They are heuristics: they catch the known patterns cheaply and say what they saw; they do not
prove a definition safe. What happens with a finding is the source's ``screening`` action.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from attrs import frozen

if TYPE_CHECKING:
    import mcp_types

__all__ = ["ACTIONS", "Finding", "Screener", "strip_invisible"]

Action = Literal["off", "warn", "strip", "disable", "refuse"]
ACTIONS: tuple[str, ...] = ("off", "warn", "strip", "disable", "refuse")

_EXCERPT = 120


@frozen
class Finding:
    """One suspicious thing in a tool's definition: its ``kind``, ``where`` it is (``name``,
    ``description``, ``title``, or a path into a schema such as
    ``inputSchema.properties.path.description``) and an ``excerpt`` (invisible characters
    shown as ``<U+200B>``)."""

    kind: str
    where: str
    excerpt: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "where": self.where, "excerpt": self.excerpt}


# -- characters ------------------------------------------------------------------------------
_BIDI = frozenset(chr(c) for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F),
                                   *range(0x2066, 0x206A)))
_FILLERS = frozenset(chr(c) for c in (0x115F, 0x1160, 0x3164, 0xFFA0))
_EMOJI_JOINERS = frozenset(("\u200d", "\ufe0f"))  # legitimate inside emoji sequences


def _is_variation_selector(ch: str) -> bool:
    cp = ord(ch)
    return 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF


def _is_hidden(text: str, i: int) -> bool:
    """Is ``text[i]`` a character a reader does not see (bidi controls included)?"""
    ch = text[i]
    if ch in _EMOJI_JOINERS and i and unicodedata.category(text[i - 1]) == "So":
        return False
    return (ch in _BIDI or ch in _FILLERS or _is_variation_selector(ch)
            or unicodedata.category(ch) == "Cf")


def _hidden(text: str) -> Iterator[tuple[int, str]]:
    """Positions and characters that a reader does not see."""
    return ((i, ch) for i, ch in enumerate(text) if _is_hidden(text, i))


def _tag_text(text: str) -> str:
    """Text carried by Unicode tag characters (U+E0020..U+E007E map to ASCII)."""
    return "".join(chr(ord(ch) - 0xE0000) for ch in text if 0xE0020 <= ord(ch) <= 0xE007E)


def _visible(text: str) -> str:
    return "".join(f"<U+{ord(ch):04X}>" if _is_hidden(text, i) else ch
                   for i, ch in enumerate(text))


def _character_findings(text: str, where: str) -> list[Finding]:
    hidden = list(_hidden(text))
    if not hidden:
        return []
    out: list[Finding] = []
    bidi = [ch for _, ch in hidden if ch in _BIDI]
    if bidi:
        names = sorted({f"U+{ord(ch):04X}" for ch in bidi})
        out.append(Finding("bidi_controls", where,
                           f"{len(bidi)} bidirectional control(s) {', '.join(names)}"))
    invisible = [ch for _, ch in hidden if ch not in _BIDI]
    if invisible:
        carried = _tag_text(text)
        names = sorted({f"U+{ord(ch):04X}" for ch in invisible})[:8]
        what = f"{len(invisible)} invisible character(s) {', '.join(names)}"
        if carried.strip():
            what += f"; hidden text: {carried.strip()[:_EXCERPT]!r}"
        out.append(Finding("invisible_characters", where, what))
    return out


# -- instructions ----------------------------------------------------------------------------
_SENSITIVE = (
    r"(?:~|\$HOME|%USERPROFILE%)?/?\.(?:ssh|aws|gnupg|kube|docker|config/gcloud|cursor|npmrc"
    r"|netrc|pypirc|git-credentials|bash_history|env)\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b"
    r"|\bmcp\.json\b|claude_desktop_config|/etc/(?:passwd|shadow)|\bcredentials?\b"
    r"|\bprivate[ _-]?keys?\b|\bapi[ _-]?keys?\b|\bsecret[ _-]?(?:keys?|tokens?)?\b"
    r"|\baccess[ _-]?tokens?\b|\bauth(?:orization)?[ _-]?tokens?\b|\bpasswords?\b"
    r"|\bcookies?\b|\bseed phrase\b|\benvironment variables?\b|\benv(?:ironment)? vars?\b"
    r"|\bos\.environ\b|\bprocess\.env\b|\bgetenv\b|\b[A-Z][A-Z0-9]*_(?:API_)?(?:KEY|TOKEN"
    r"|SECRET|PASSWORD)\b"
)
_READ = (r"\b(?:read|open|cat|load|access|retrieve|get|fetch|extract|collect|copy|include"
         r"|pass|provide|send|upload|attach|print|dump|list|look up|append|add)\b")
_ADDRESS = (r"(?:https?://\S+|\b[\w.+-]+@[\w-]+\.[\w.-]+\b|\bthis (?:address|url|endpoint"
            r"|server|webhook)\b|\bwebhook\b|\b[\w-]+(?:\.[\w-]+)*\.(?:com|net|org|io|co|dev"
            r"|app|xyz|info|site|online|ru|cn|tk|top|example|invalid)\b)")

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE | re.DOTALL)) for kind, pattern in (
        ("tag_block",
         r"<\s*/?\s*(?:important|system|sys|instructions?|secret|hidden|admin|assistant"
         r"|context|note|critical|override|prompt|rules?|directive)\b[^<>]{0,40}>"
         r"|\[/?INST\]|<<\s*/?SYS\s*>>|<\|im_start\|>|<\|system\|>"),
        ("secret_access", rf"{_READ}[^.\n]{{0,80}}?(?:{_SENSITIVE})"),
        ("exfiltration",
         rf"\b(?:send|post|upload|forward|transmit|exfiltrate|leak|report|mail|email|bcc|cc"
         rf"|copy|redirect|deliver)\b[^.\n]{{0,80}}?\b(?:to|at|into)\b[^.\n]{{0,20}}?{_ADDRESS}"
         r"|\bpass\s+(?:its|their|the|all|this|that)\s+(?:content|contents|value|values|data"
         r"|output)\b[^.\n]{0,40}?\b(?:as|in|into)\b"
         r"|\bbcc\b\s*:?\s*[\w.+-]+@"),
        ("cross_tool",
         r"\b(?:when|whenever|before|after|instead of|rather than)\s+(?:you\s+)?(?:use|using"
         r"|call|calling|invoke|invoking|run|running)\s+(?!this\b)(?:the\s+|any\s+|other\s+"
         r"|another\s+)?[\w-]+\s+tools?\b"
         r"|\b(?:when|whenever|if)\s+(?:the\s+|any\s+)?(?!this\b)[\w-]+\s+tool\s+is\s+"
         r"(?:used|called|invoked|run)\b"
         r"|\b(?:all|any|every)\s+other\s+tools?\b"
         r"|\b(?:do not|don't|never|must not)\s+(?:use|call|invoke)\s+(?:the\s+|any\s+)?\S+"
         r"\s+tool\b"
         r"|\bthis tool (?:replaces|overrides|supersedes|must be used instead)\b"
         r"|\b(?:all|every)\s+(?:emails?|messages?|requests?|payments?|transfers?)\s+(?:must"
         r"|should|are to)\b"),
        ("concealment",
         r"\b(?:do not|don't|never|must not)\s+(?:tell|mention|inform|reveal|notify|show"
         r"|disclose|alert|explain|say)\b[^.\n]{0,60}?\b(?:user|anyone|human)\b"
         r"|\bwithout\s+(?:telling|informing|notifying|alerting|asking)\s+(?:the\s+)?user\b"
         r"|\b(?:the\s+)?user\s+(?:must|should)\s+not\s+(?:know|see|notice|be told)\b"
         r"|\bkeep\s+(?:this|it)\s+(?:secret|hidden|confidential)\b"),
        ("instruction_override",
         r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous"
         r"|prior|above|earlier|other|system)\s+(?:instructions|prompts?|rules|messages)\b"
         r"|\byou are now\b|\bnew instructions\s*:"),
    ))


def _excerpt(text: str, start: int, end: int) -> str:
    lo = max(0, start - 20)
    hi = min(len(text), max(end, start + 40) + 20)
    piece = " ".join(text[lo:hi].split())
    if len(piece) > _EXCERPT:
        piece = piece[:_EXCERPT] + "..."
    return _visible(piece)


def _texts(tool: mcp_types.Tool) -> Iterator[tuple[str, str]]:
    """Every text of a definition a model reads, with where it is."""
    if tool.description:
        yield "description", tool.description
    if tool.title:
        yield "title", tool.title
    if tool.annotations is not None and tool.annotations.title:
        yield "annotations.title", tool.annotations.title
    for label, schema in (("inputSchema", tool.input_schema), ("outputSchema", tool.output_schema)):
        if isinstance(schema, dict):
            yield from _schema_texts(schema, label)


def _schema_texts(node: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{where}.{key}"
            if key in ("description", "title") and isinstance(value, str):
                yield path, value
            else:
                yield from _schema_texts(value, path)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _schema_texts(item, f"{where}.{i}")


def _identifier_like(name: str) -> bool:
    """A tool name that cannot be an ordinary word (``send_email``, ``readFile``)."""
    return len(name) >= 4 and ("_" in name or "-" in name
                               or any(c.isupper() for c in name[1:]))


class Screener:
    """Screens the definitions of one source. ``action`` is the source's ``screening``
    setting; ``others`` maps the names of tools that other sources provide (original and
    registry names) to how a finding names them: a tool with one of those names shadows it,
    and a text naming one is about it."""

    def __init__(self, action: str, others: Mapping[str, str] | None = None) -> None:
        self.action = action
        self.others = dict(others or {})
        names = [n for n in self.others if _identifier_like(n)]
        self._mention = (re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, names))
                                    + r")(?![\w-])") if names else None)

    def check(self, tool: mcp_types.Tool) -> tuple[mcp_types.Tool, list[Finding]]:
        """``tool`` as it is to be registered (invisible characters stripped when the action
        is ``strip``) and its findings."""
        if self.action == "off":
            return tool, []
        findings = self.findings(tool)
        if self.action == "strip" and any(f.kind in _CHARACTER_KINDS for f in findings):
            stripped = strip_invisible(tool)
            kept = [Finding(f.kind, f.where, f"stripped {f.excerpt}") for f in findings
                    if f.kind in _CHARACTER_KINDS]
            return stripped, kept + [f for f in self.findings(stripped)
                                     if f.kind not in _CHARACTER_KINDS]
        return tool, findings

    def findings(self, tool: mcp_types.Tool) -> list[Finding]:
        """Everything suspicious in ``tool``'s definition (at most one finding of a kind per
        text)."""
        findings: list[Finding] = []
        if tool.name in self.others:
            findings.append(Finding("shadowing", "name",
                                    f"{tool.name!r} is also the name of {self.others[tool.name]}"))
        for where, text in _texts(tool):
            findings.extend(_character_findings(text, where))
            # Read what the model reads: hidden characters out, text in tag characters in.
            plain = _plain(text)
            found: set[str] = set()
            match = self._mention.search(plain) if self._mention is not None else None
            if match is not None and match.group(0) != tool.name:
                found.add("cross_tool")
                findings.append(Finding(
                    "cross_tool", where, f"names {self.others[match.group(0)]}: "
                    f"{_excerpt(plain, match.start(), match.end())}"))
            for kind, pattern in _PATTERNS:
                if kind not in found and (match := pattern.search(plain)) is not None:
                    found.add(kind)
                    findings.append(Finding(kind, where, _excerpt(plain, match.start(),
                                                                  match.end())))
        return findings


_CHARACTER_KINDS = frozenset(("invisible_characters", "bidi_controls"))


def _plain(text: str) -> str:
    """What a model reads in ``text``: hidden characters dropped, the text that tag
    characters carry kept."""
    out = []
    for i, ch in enumerate(text):
        cp = ord(ch)
        if 0xE0020 <= cp <= 0xE007E:
            out.append(chr(cp - 0xE0000))
        elif not _is_hidden(text, i):
            out.append(ch)
    return "".join(out)


def _strip(text: str) -> str:
    drop = {i for i, _ in _hidden(text)}
    return "".join(ch for i, ch in enumerate(text) if i not in drop) if drop else text


def _strip_schema(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip(v) if k in ("description", "title") and isinstance(v, str)
                else _strip_schema(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_strip_schema(item) for item in node]
    return node


def strip_invisible(tool: mcp_types.Tool) -> mcp_types.Tool:
    """A copy of ``tool`` whose texts have no invisible or bidirectional control characters
    (the text that tag characters carried goes with them)."""
    changes: dict[str, Any] = {
        "description": _strip(tool.description) if tool.description else tool.description,
        "title": _strip(tool.title) if tool.title else tool.title,
        "input_schema": _strip_schema(tool.input_schema),
    }
    if tool.output_schema is not None:
        changes["output_schema"] = _strip_schema(tool.output_schema)
    if tool.annotations is not None and tool.annotations.title:
        changes["annotations"] = tool.annotations.model_copy(
            update={"title": _strip(tool.annotations.title)})
    return tool.model_copy(update=changes)
