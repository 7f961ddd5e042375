"""Permission rules: the rule model (from code or a TOML table, checked with errors naming
the rule), what a rule matches of a tool (:class:`ToolFacts`) and of a call's arguments
(:class:`ArgumentCheck`: the reference semantics of ``inside``, ``hosts``, ``min`` / ``max``,
``one-of``). ``_decider`` compiles the rules that concern a tool into one function."""

from __future__ import annotations

import decimal
import fnmatch
import functools
import ipaddress
import math
import numbers
import os
import re
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from attrs import field, frozen

from toolregistry.errors import ConfigError

__all__ = ["RULE_KEYS", "ArgumentCheck", "Compiled", "Rule", "ToolFacts", "canonical_host",
           "compile_rules", "host_allowed", "hostname", "ip_address", "is_number",
           "path_inside", "tool_facts", "url_host"]

Kind = Literal["allow", "deny", "ask"]
KINDS = ("allow", "deny", "ask")

# MCP tool annotations (their wire names) and the ToolMetadata fields that hold them.
ANNOTATIONS = {
    "readOnlyHint": "read_only_hint",
    "destructiveHint": "destructive_hint",
    "idempotentHint": "idempotent_hint",
    "openWorldHint": "open_world_hint",
}
# Provenance kinds as a rule names them: "python" covers functions and classes.
SOURCES = {"python": ("function", "class"), "function": ("function",), "class": ("class",),
           "mcp": ("mcp",), "openapi": ("openapi",), "langchain": ("langchain",),
           "manual": ("manual",), "plugin": ("plugin",)}
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")
RULE_KEYS = ("name", "decision", "reason", "tools", "namespaces", "tags", "sources",
             "annotations", "methods", "arguments", "when")
CHECK_KEYS = ("inside", "hosts", "min", "max", "one-of")
_GLOB = re.compile(r"^[A-Za-z0-9_\-*?\[\]!.]+$")


@frozen
class ToolFacts:
    """What rules can match about a tool, read once per tool."""

    name: str
    namespace: str | None
    tags: frozenset[str]
    source: str
    annotations: Mapping[str, bool | None]
    method: str | None


def tool_facts(tool: Any) -> ToolFacts:
    """The facts of a registry tool (name, namespace, tags, source, annotations, method)."""
    meta = tool.metadata
    tags = frozenset({str(t.value) for t in meta.tags} | set(meta.custom_tags))
    openapi = meta.extra.get("openapi") if isinstance(meta.extra, Mapping) else None
    method = openapi.get("method") if isinstance(openapi, Mapping) else None
    annotations = {wire: getattr(meta, attr) for wire, attr in ANNOTATIONS.items()}
    if meta.is_read_only and annotations["readOnlyHint"] is None:
        annotations["readOnlyHint"] = True
    return ToolFacts(tool.name, tool.namespace, tags, tool.provenance.kind, annotations,
                     str(method).upper() if method else None)


def _strs(value: Any, where: str, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple, set, frozenset)) or not value or not all(
            isinstance(v, str) and v for v in value):
        empty = isinstance(value, (list, tuple, set, frozenset)) and not value
        raise ConfigError(f"{where}: {key} must be a non-empty string or list of strings, "
                          f"got {value!r}" + (f" (an empty list is refused; leave {key} out "
                                              "for a rule about every tool)" if empty else ""))
    return tuple(value)


def _glob(pattern: str, where: str, key: str) -> re.Pattern[str]:
    if not _GLOB.match(pattern) or pattern.count("[") != pattern.count("]"):
        raise ConfigError(f"{where}: {key} has a bad glob {pattern!r}: tool names and "
                          "namespaces are letters, digits, '_' and '-', with '*', '?' and "
                          "[...] as wildcards")
    return re.compile(fnmatch.translate(pattern))


# -- argument predicates ------------------------------------------------------------------

@frozen
class ArgumentCheck:
    """One argument's condition: ``inside`` directories, a URL host in ``hosts``, a number
    within ``min`` / ``max``, a value in ``one_of``; all given must hold. A missing argument
    fails the check (the rule does not match)."""

    argument: str
    inside: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    min: float | None = None
    max: float | None = None
    one_of: tuple[Any, ...] | None = None

    def __call__(self, arguments: Mapping[str, Any]) -> bool:
        try:
            value = arguments[self.argument]
        except KeyError:
            return False
        if self.inside and not path_inside(value, self.inside):
            return False
        if self.hosts and not host_allowed(value, self.hosts):
            return False
        if self.min is not None or self.max is not None:
            if not is_number(value):
                return False
            if self.min is not None and value < self.min:
                return False
            if self.max is not None and value > self.max:
                return False
        return self.one_of is None or value in self.one_of

    @classmethod
    def parse(cls, argument: str, spec: Any, where: str, base: Path | None) -> ArgumentCheck:
        """An ``arguments.<name> = {inside = [...], ...}`` table, checked."""
        if isinstance(spec, ArgumentCheck):
            return spec
        here = f"{where}: arguments.{argument}"
        if not isinstance(spec, Mapping) or not spec:
            raise ConfigError(f"{here} must be a table of {', '.join(CHECK_KEYS)}, got {spec!r}")
        spec = {str(k).replace("_", "-"): v for k, v in spec.items()}
        unknown = sorted(set(spec) - set(CHECK_KEYS))
        if unknown:
            raise ConfigError(f"{here}: unknown key {unknown[0]!r}; known: "
                              f"{', '.join(CHECK_KEYS)}")
        inside = tuple(_directory(d, base) for d in _strs(spec["inside"], here, "inside")) \
            if "inside" in spec else ()
        hosts = tuple(_host_pattern(h) for h in _strs(spec["hosts"], here, "hosts")) \
            if "hosts" in spec else ()
        bounds: dict[str, float | None] = {}
        for key in ("min", "max"):
            value = spec.get(key)
            if value is not None and (isinstance(value, bool) or
                                      not isinstance(value, (int, float)) or
                                      (isinstance(value, float) and math.isnan(value))):
                raise ConfigError(f"{here}: {key} must be a number, got {value!r}")
            bounds[key] = value
        one_of = spec.get("one-of")
        if one_of is not None and not isinstance(one_of, (list, tuple)):
            raise ConfigError(f"{here}: one-of must be a list, got {one_of!r}")
        return cls(argument, inside, hosts, bounds["min"], bounds["max"],
                   tuple(one_of) if one_of is not None else None)


def _host_pattern(host: str) -> str:
    """A ``hosts`` entry in canonical form (``*.`` kept in front of a domain)."""
    if host.startswith("*."):  # a domain: no address has subdomains
        return "*." + host[2:].strip().lower().rstrip(".")
    return canonical_host(host)


def is_number(value: Any) -> bool:
    """What ``min`` / ``max`` compare: a real number a tool may receive (``int``, ``float``,
    ``Decimal``, ``Fraction``), not a ``bool``, not NaN."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, decimal.Decimal)):
        return False
    try:
        return bool(value == value)  # noqa: PLR0124 (NaN is not equal to itself)
    except decimal.InvalidOperation:  # a signalling NaN
        return False


def _directory(path: str, base: Path | None) -> str:
    p = Path(path).expanduser()
    if not p.is_absolute() and base is not None:
        p = base / p
    return os.path.realpath(p)


def path_inside(value: Any, directories: Sequence[str]) -> bool:
    """Whether ``value`` is a path that resolves (symlinks and ``..``) inside one of the
    ``directories`` (resolved already)."""
    if not isinstance(value, (str, os.PathLike)) or not str(value) or "\x00" in str(value):
        return False
    real = os.path.realpath(Path(value).expanduser())  # symlinks and '..' resolved
    return any(real == d or real.startswith(d.rstrip(os.sep) + os.sep) for d in directories)


# What the C resolver (inet_aton) reads as an IPv4 address: one to four parts, each decimal,
# octal (leading 0) or hex (0x): 2130706433, 0x7f000001, 127.1, 0177.0.0.1.
_LEGACY_IPV4 = re.compile(r"^(?:0[xX][0-9a-fA-F]*|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]*|[0-9]+)){0,3}$")


@functools.lru_cache(maxsize=1024)
def canonical_host(host: str) -> str:
    """``host`` as the address or name a connection goes to: an IP address in its one
    canonical form (legacy IPv4 spellings as the C resolver reads them, an IPv4-mapped IPv6
    address as the IPv4 one, IPv6 compressed, brackets dropped), a name in lower case without
    a trailing dot."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    host = host.rstrip(".")
    address = ip_address(host)
    if address is None and _LEGACY_IPV4.match(host):
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:  # a part out of range: the resolver reads it as a name
            address = None
    if address is None:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address)


@functools.lru_cache(maxsize=1024)
def hostname(value: str) -> str | None:
    """The host of a URL in canonical form (:func:`canonical_host`; ``None``: none)."""
    try:
        host = urlsplit(value.strip()).hostname
    except ValueError:
        return None
    return canonical_host(host) if host else None


def url_host(value: Any) -> str | None:
    """The canonical host of ``value``: a URL as text, or a URL object a tool may receive
    (pydantic's ``AnyUrl``, ``httpx.URL``: anything with a ``host`` that reads as a URL)."""
    if not isinstance(value, str):
        if getattr(value, "host", None) is None:
            return None
        value = str(value)
    return hostname(value)


@functools.lru_cache(maxsize=1024)
def ip_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``text`` as an IP address (``None``: it is not one)."""
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def host_allowed(value: Any, hosts: Sequence[str]) -> bool:
    """Whether ``value`` is a URL whose host is one of ``hosts`` (``*.domain``: a subdomain),
    both compared in canonical form (:func:`canonical_host`): an address matches whatever
    spelling of it either side uses."""
    host = url_host(value)
    if not host:
        return False
    for allowed in hosts:
        if allowed.startswith("*."):
            if host.endswith(allowed[1:].lower()) and ip_address(host) is None:
                return True
        elif host == canonical_host(allowed):
            return True
    return False


# -- rules ------------------------------------------------------------------------------------

def _check_decision(_inst: Any, _attr: Any, value: Any) -> None:
    if value not in KINDS:
        raise ConfigError(f"a policy rule's decision must be allow, deny or ask, got {value!r}")


@frozen
class Rule:
    """One permission rule: what it matches and what it decides (``allow``, ``deny`` with a
    ``reason`` the model reads, or ``ask`` a person).

    Every condition given must hold (a list matches when any of its items does): ``tools``
    and ``namespaces`` are globs, ``tags`` tool tags or custom tags, ``sources`` source kinds
    (``python``, ``mcp``, ``openapi``, ``langchain``, ``manual``, ``plugin``),
    ``annotations`` MCP hints (``{"destructiveHint": True}``), ``methods`` HTTP methods of
    OpenAPI tools, ``arguments`` per-argument checks (``{"path": {"inside": ["/tmp"]}}``), and
    ``when`` (code only) a predicate of the arguments. A condition left out holds for every
    tool; a list or ``annotations`` given empty (``tools=[]``) is a ``ConfigError``, never
    a match-all. Build from code with keyword arguments, or from a TOML table with
    :meth:`from_dict`.
    """

    decision: Kind = field(validator=_check_decision)
    name: str | None = None
    reason: str | None = None
    tools: Sequence[str] | None = None
    namespaces: Sequence[str] | None = None
    tags: Sequence[str] | None = None
    sources: Sequence[str] | None = None
    annotations: Mapping[str, bool] | None = None
    methods: Sequence[str] | None = None
    arguments: Mapping[str, Any] | None = None
    when: Callable[[Mapping[str, Any]], bool] | None = field(default=None, eq=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], index: int = 0) -> Rule:
        """A rule from its table; unknown keys and bad values are a ``ConfigError`` naming
        the rule."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"policy rules[{index}] must be a table, got {data!r}")
        data = {str(k).replace("_", "-"): v for k, v in data.items()}
        where = _where(data.get("name"), index)
        unknown = sorted(set(data) - {k.replace("_", "-") for k in RULE_KEYS})
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r}; known: "
                              f"{', '.join(RULE_KEYS)}")
        if "decision" not in data:
            raise ConfigError(f"{where}: needs decision = \"allow\", \"deny\" or \"ask\"")
        try:
            return cls(data["decision"], data.get("name"), data.get("reason"),
                       data.get("tools"), data.get("namespaces"), data.get("tags"),
                       data.get("sources"), data.get("annotations"), data.get("methods"),
                       data.get("arguments"), data.get("when"))
        except (TypeError, ValueError, ConfigError) as exc:
            raise ConfigError(f"{where}: {exc}") from None


def _where(name: Any, index: int) -> str:
    return f"policy rule {name!r} (rules[{index}])" if name else f"policy rules[{index}]"


@frozen
class Compiled:
    """A checked rule: its tool-level matchers and its argument checks."""

    rule: Rule
    label: str
    tools: tuple[re.Pattern[str], ...]
    namespaces: tuple[re.Pattern[str], ...]
    tags: frozenset[str]
    sources: frozenset[str]
    annotations: tuple[tuple[str, bool], ...]
    methods: frozenset[str]
    checks: tuple[Callable[[Mapping[str, Any]], bool], ...]

    @property
    def static(self) -> bool:
        """True when the rule's decision does not depend on the arguments."""
        return not self.checks

    def matches_arguments(self, arguments: Mapping[str, Any]) -> bool:
        """Whether the argument checks all hold for a call's ``arguments``, read one by one
        (the reference the compiled decision function of a tool agrees with)."""
        return all(check(arguments) for check in self.checks)

    def matches_tool(self, facts: ToolFacts) -> bool:
        """Whether the tool-level conditions hold for a tool."""
        if self.tools and not any(p.match(facts.name) for p in self.tools):
            return False
        if self.namespaces and not (facts.namespace is not None and any(
                p.match(facts.namespace) for p in self.namespaces)):
            return False
        if self.tags and not (self.tags & facts.tags):
            return False
        if self.sources and facts.source not in self.sources:
            return False
        if any(facts.annotations.get(k) is not v for k, v in self.annotations):
            return False
        return not self.methods or facts.method in self.methods


def _table(value: Any, where: str, key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not value:
        raise ConfigError(f"{where}: {key} must be a non-empty table, got {value!r} (an "
                          f"empty table is refused; leave {key} out for a rule about every "
                          "tool)")
    return value


def compile_rule(rule: Rule, index: int, base: Path | None) -> Compiled:
    """Check a rule and compile its matchers; a ``ConfigError`` names the rule. A condition
    left out (``None``) holds for every tool; one given empty is an error, not a match-all."""
    where = _where(rule.name, index)
    tools = () if rule.tools is None else tuple(
        _glob(g, where, "tools") for g in _strs(rule.tools, where, "tools"))
    spaces = () if rule.namespaces is None else tuple(
        _glob(g, where, "namespaces") for g in _strs(rule.namespaces, where, "namespaces"))
    tags = frozenset() if rule.tags is None else frozenset(_strs(rule.tags, where, "tags"))
    sources: set[str] = set()
    for s in () if rule.sources is None else _strs(rule.sources, where, "sources"):
        if s not in SOURCES:
            raise ConfigError(f"{where}: unknown source {s!r}; known: {', '.join(SOURCES)}")
        sources.update(SOURCES[s])
    annotations = []
    for key, value in ({} if rule.annotations is None else
                       _table(rule.annotations, where, "annotations")).items():
        if key not in ANNOTATIONS:
            raise ConfigError(f"{where}: unknown annotation {key!r}; known: "
                              f"{', '.join(ANNOTATIONS)}")
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: annotation {key} must be true or false, got {value!r}")
        annotations.append((key, value))
    methods = set()
    for m in () if rule.methods is None else _strs(rule.methods, where, "methods"):
        if m.upper() not in METHODS:
            raise ConfigError(f"{where}: unknown HTTP method {m!r}; known: {', '.join(METHODS)}")
        methods.add(m.upper())
    arguments = rule.arguments or {}  # no argument checks: nothing more to hold
    if not isinstance(arguments, Mapping):
        raise ConfigError(f"{where}: arguments must be a table, got {arguments!r}")
    checks: list[Callable[[Mapping[str, Any]], bool]] = [
        ArgumentCheck.parse(str(arg), spec, where, base) for arg, spec in arguments.items()]
    if rule.when is not None:
        if not callable(rule.when):
            raise ConfigError(f"{where}: when must be a function of the arguments")
        checks.append(rule.when)
    if rule.decision == "deny" and rule.reason is not None and not isinstance(rule.reason, str):
        raise ConfigError(f"{where}: reason must be a string")
    return Compiled(rule, rule.name or f"rules[{index}]", tools, spaces, tags,
                    frozenset(sources), tuple(annotations), frozenset(methods), tuple(checks))


def compile_rules(rules: Iterable[Rule | Mapping[str, Any]], base: Path | None = None
                  ) -> tuple[Compiled, ...]:
    """Rules in order (tables or :class:`Rule` objects), checked and compiled."""
    out = []
    for index, rule in enumerate(rules):
        if not isinstance(rule, Rule):
            rule = Rule.from_dict(rule, index)
        out.append(compile_rule(rule, index, base))
    return tuple(out)
