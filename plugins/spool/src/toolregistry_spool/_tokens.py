"""A fast token estimate that treats CJK text correctly, and pluggable exact counters.

The estimate needs only the text's length in characters and in UTF-8 bytes, which the
spooler has anyway (it encodes the text to write it), so it costs no extra pass:

* ASCII-ish text: about 4 characters per token;
* CJK (3-byte UTF-8: Chinese, Japanese kana, Hangul): about 1 token per character;
* other 2-byte scripts (Cyrillic, Greek, accented Latin): about 0.6 tokens per character;
* 4-byte characters (emoji, rare CJK): 1.5 tokens each.

Bytes beyond the first of each character (``extra = bytes - chars``) are half a token each,
which is exactly one token per 3-byte character; the remaining characters count as ASCII.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from toolregistry.errors import ConfigError

TokenCounter = Callable[[str], int]

MAX_TOKENS_PER_CHAR = 1.5
"""An upper bound of the estimate per character (all 4-byte characters): text shorter than
``threshold / 1.5`` characters is never over the threshold, so it is not even encoded."""


def estimate_from_sizes(chars: int, nbytes: int) -> int:
    """The estimate for a text of ``chars`` characters that is ``nbytes`` bytes in UTF-8."""
    if chars <= 0:
        return 0
    extra = max(0, nbytes - chars)
    narrow = max(0.0, chars - extra / 2)
    return int(narrow / 4 + extra / 2 + 0.999)


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (~4 ASCII characters or ~1 CJK character per token)."""
    if text.isascii():  # O(1) in CPython: no pass over the text
        return (len(text) + 3) // 4
    return estimate_from_sizes(len(text), len(text.encode("utf-8", "replace")))


def load_counter(spec: str) -> TokenCounter:
    """Import ``"pkg.mod:fn"`` (``token-counter`` in the configuration)."""
    module_name, _, attr = spec.partition(":")
    try:
        target: object = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"[tool.toolregistry.plugins.spool] token-counter = {spec!r} cannot be imported "
            f"({type(exc).__name__}: {exc}); give 'package.module:function' of an installed "
            "module, a function(text) -> int"
        ) from exc
    if not callable(target):
        raise ConfigError(
            f"[tool.toolregistry.plugins.spool] token-counter = {spec!r} is not callable; "
            "it must be a function(text) -> int"
        )
    return target
