"""Paging through a spooled output by numbered lines: offset / limit, tail, and grep.

Lines are numbered from 0. A line longer than ``wrap`` bytes counts as several numbered lines
of ``wrap`` bytes each (boundaries moved forward to the next character start, so no UTF-8
character is split), so a one-line 50 MB JSON document can be paged like any other text.

Finding line ``n`` in a big file must not mean reading it from the start every time: the
first read of a file builds a sparse index (the byte offset of every 256th physical line and
its line number), so later reads walk at most 256 lines from a checkpoint.
"""

from __future__ import annotations

import bisect
import re
from collections import deque
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

from attrs import define

from ._tokens import estimate_from_sizes

Buffer = Any  # bytes or mmap.mmap: both support find(), slicing and indexing
_STEP = 256
_BLOCK = 1 << 20


@define
class LineIndex:
    """Checkpoints of one file: ``positions[i]`` is the byte offset of a physical line start
    whose first numbered line is ``lines[i]``; ``total`` numbered lines in all."""

    wrap: int
    size: int
    positions: list[int]
    lines: list[int]
    total: int


def _segments(length: int, wrap: int) -> int:
    return 1 if length <= wrap else -(-length // wrap)


def build_index(buf: Buffer, wrap: int, block: int = _BLOCK) -> LineIndex:
    """One pass over ``buf``, a block of about 1 MB at a time: ``split`` and ``accumulate``
    do the per-line work in C, and a Python loop runs only per checkpoint (and per line in
    a block that holds a line longer than ``wrap``)."""
    size = len(buf)
    positions, lines = [0], [0]
    pos = vline = count = 0
    while pos < size:
        end = min(size, pos + block)
        if end < size:
            nl = buf.rfind(b"\n", pos, end)
            if nl < 0:  # one line longer than a block: take it whole
                nl = buf.find(b"\n", end)
            end = size if nl < 0 else nl + 1
        chunk = buf[pos:end]
        parts = chunk.split(b"\n")
        if chunk.endswith(b"\n"):
            parts.pop()  # the empty piece after the last newline is not a line
        lens = list(map(len, parts))
        starts = list(accumulate((n + 1 for n in lens[:-1]), initial=pos))
        if max(lens) <= wrap:
            vlines: list[int] | range = range(vline, vline + len(lens) + 1)
        else:
            vlines = list(accumulate((_segments(n, wrap) for n in lens), initial=vline))
        for i in range((-count) % _STEP, len(lens), _STEP):
            if count + i > 0:
                positions.append(starts[i])
                lines.append(vlines[i])
        vline = vlines[len(lens)]
        count += len(lens)
        pos = end
    return LineIndex(wrap, size, positions, lines, vline)


def _char_start(buf: Buffer, b: int, end: int) -> int:
    # UTF-8 continuation bytes are 0b10xxxxxx: move forward to the next character start.
    while b < end and (buf[b] & 0xC0) == 0x80:
        b += 1
    return b


def _physical_lines(buf: Buffer, pos: int, size: int) -> Iterator[tuple[int, int]]:
    find = buf.find
    while pos < size:
        nl = find(b"\n", pos)
        end = size if nl < 0 else nl
        yield pos, end
        pos = end + 1


def iter_lines(buf: Buffer, index: LineIndex, start: int) -> Iterator[tuple[int, int, int]]:
    """``(number, byte_start, byte_end)`` of every numbered line from ``start`` on."""
    i = bisect.bisect_right(index.lines, start) - 1
    pos, vline = index.positions[i], index.lines[i]
    wrap = index.wrap
    for s, e in _physical_lines(buf, pos, index.size):
        n = _segments(e - s, wrap)
        if vline + n <= start:
            vline += n
            continue
        if n == 1:
            yield vline, s, e
        else:
            for k in range(max(0, start - vline), n):
                a = s if k == 0 else _char_start(buf, s + k * wrap, e)
                b = e if k == n - 1 else _char_start(buf, s + (k + 1) * wrap, e)
                yield vline + k, a, b
        vline += n


def line_at(buf: Buffer, index: LineIndex, pos: int) -> tuple[int, int, int]:
    """The numbered line containing byte ``pos``: ``(number, byte_start, byte_end)``."""
    i = bisect.bisect_right(index.positions, pos) - 1
    start, vline = index.positions[i], index.lines[i]
    wrap = index.wrap
    for s, e in _physical_lines(buf, start, index.size):
        n = _segments(e - s, wrap)
        if pos <= e:
            if n == 1:
                return vline, s, e
            k = min((pos - s) // wrap, n - 1)
            a = s if k == 0 else _char_start(buf, s + k * wrap, e)
            if pos < a:
                k -= 1
                a = s if k == 0 else _char_start(buf, s + k * wrap, e)
            b = e if k == n - 1 else _char_start(buf, s + (k + 1) * wrap, e)
            return vline + k, a, b
        vline += n
    return max(0, index.total - 1), index.size, index.size


def count_lines(data: bytes, wrap: int) -> int:
    """Numbered lines in ``data`` (a prefix of a spooled output that ends at a line end)."""
    return build_index(data, wrap).total


def grep_pattern(grep: str) -> re.Pattern[bytes]:
    """Literal alternatives separated by ``|``, ASCII case-insensitive.

    Literal on purpose: the pattern comes from a model (and so, possibly, from text injected
    into a tool output), and a regular expression could backtrack for hours over 50 MB.
    """
    alternatives = [a for a in grep.split("|") if a.strip()]
    if not alternatives:
        raise ValueError("grep is empty; give the text to search for ('error|warning' finds "
                         "either)")
    return re.compile(b"|".join(re.escape(a.encode("utf-8")) for a in alternatives),
                      re.IGNORECASE)


class _Budget:
    """Stops a reply before it goes over the token limit (at least one line is returned)."""

    def __init__(self, max_tokens: int) -> None:
        self.left = max_tokens
        self.used_any = False

    def take(self, text: str, nbytes: int) -> bool:
        cost = estimate_from_sizes(len(text), nbytes) + 1
        if self.used_any and cost > self.left:
            return False
        self.left -= cost
        self.used_any = True
        return True


def _decode(buf: Buffer, a: int, b: int) -> str:
    return bytes(buf[a:b]).decode("utf-8", "replace").rstrip("\r")


def read_lines(buf: Buffer, index: LineIndex, handle: str, *, offset: int, limit: int,
               max_tokens: int) -> str:
    """Lines ``offset`` .. ``offset + limit - 1`` with a header and a footer for the model."""
    total = index.total
    if total == 0:
        return f"[{handle}: the output is empty]"
    if offset >= total:
        return (f"[{handle}: offset {offset} is past the end; the output has {total} lines "
                f"(0-{total - 1})]")
    budget = _Budget(max_tokens)
    out: list[str] = []
    last = offset - 1
    for number, a, b in iter_lines(buf, index, offset):
        if number >= offset + limit:
            break
        text = _decode(buf, a, b)
        if not budget.take(text, b - a):
            break
        out.append(text)
        last = number
    header = f"[{handle}: lines {offset}-{last} of {total} (numbered from 0)]"
    if last + 1 >= total:
        footer = "[end of output]"
    elif last + 1 < offset + limit:
        footer = f"[stopped at the size limit; continue with offset={last + 1}]"
    else:
        footer = f"[continue with offset={last + 1}]"
    return "\n".join([header, *out, footer])


def grep_lines(buf: Buffer, index: LineIndex, handle: str, grep: str, *, offset: int,
               limit: int, tail: int | None, max_tokens: int) -> str:
    """Numbered lines (from ``offset`` on) containing ``grep``: the first ``limit``, or the
    last ``tail``."""
    pattern = grep_pattern(grep)
    total = index.total
    if total == 0 or offset >= total:
        return f"[{handle}: no lines from {offset} on (the output has {total} lines)]"
    start = next(iter_lines(buf, index, offset))[1]
    wanted = tail if tail is not None else limit
    found: deque[tuple[int, int, int]] = deque(maxlen=tail) if tail is not None else deque()
    more = False
    pos = start
    size = index.size
    while pos <= size:
        match = pattern.search(buf, pos)
        if match is None:
            break
        hit = line_at(buf, index, match.start())
        if tail is None and len(found) >= wanted:
            more = True
            break
        found.append(hit)
        pos = max(hit[2], match.start() + 1)
    if not found:
        return f"[{handle}: no line from {offset} on contains {grep!r}]"
    budget = _Budget(max_tokens)
    out: list[str] = []
    shown = 0
    for number, a, b in found:
        text = f"{number}: {_decode(buf, a, b)}"
        if not budget.take(text, b - a):
            more = True
            break
        out.append(text)
        shown += 1
    which = "last" if tail is not None else "first"
    header = (f"[{handle}: {which} {shown} lines containing {grep!r} (line numbers from 0; "
              f"read around one with offset=N)]")
    if more and tail is None:
        next_offset = found[shown - 1][0] + 1
        footer = f"[more matches; continue with grep={grep!r}, offset={next_offset}]"
    else:
        footer = "[no more matches]" if tail is None else "[end of matches]"
    return "\n".join([header, *out, footer])
