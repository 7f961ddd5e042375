"""The line index and reader against a naive reference, on generated text (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolregistry_spool._reader import build_index, iter_lines, line_at
from toolregistry_spool._tokens import estimate_from_sizes, estimate_tokens


def naive_lines(data: bytes, wrap: int) -> list[bytes]:
    """Numbered lines by definition: split on newlines, cut long lines every `wrap` bytes
    moved forward to a character start."""
    if not data:
        return []
    physical = data.split(b"\n")
    if data.endswith(b"\n"):
        physical.pop()
    out: list[bytes] = []
    for line in physical:
        n = max(1, -(-len(line) // wrap))
        cuts = [0]
        for k in range(1, n):
            b = k * wrap
            while b < len(line) and (line[b] & 0xC0) == 0x80:
                b += 1
            cuts.append(b)
        cuts.append(len(line))
        out.extend(line[cuts[i]:cuts[i + 1]] for i in range(n))
    return out


texts = st.lists(
    st.one_of(st.text(alphabet="abc xyz", max_size=30), st.text(alphabet="中文字é😀a", max_size=80),
              st.just("")),
    max_size=60,
).map("\n".join) | st.text(max_size=400)


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from([4, 7, 16, 1000]), st.sampled_from([8, 64, 1 << 20]),
       st.booleans())
def test_index_and_lines_match_the_definition(text: str, wrap: int, block: int,
                                              trailing_newline: bool) -> None:
    if trailing_newline:
        text += "\n"
    data = text.encode("utf-8", "replace")
    expected = naive_lines(data, wrap)
    index = build_index(data, wrap, block)
    assert index.total == len(expected)
    assert index.positions == sorted(index.positions)
    for start in {0, 1, len(expected) // 2, max(0, len(expected) - 1), len(expected)}:
        got = [data[a:b] for _, a, b in iter_lines(data, index, start)]
        assert got == expected[start:]
        numbers = [n for n, _, _ in iter_lines(data, index, start)]
        assert numbers == list(range(start, len(expected)))
    for n, a, b in iter_lines(data, index, 0):
        if a < b:
            assert line_at(data, index, a)[0] == n
            assert line_at(data, index, b - 1)[0] == n


def test_checkpoints_on_many_lines() -> None:
    data = b"".join(b"%d\n" % i for i in range(10_000))
    index = build_index(data, 100, block=1000)
    assert index.total == 10_000
    assert index.lines[:3] == [0, 256, 512] and len(index.lines) == 40
    assert [data[a:b] for _, a, b in iter_lines(data, index, 9_000)][:2] == [b"9000", b"9001"]
    assert line_at(data, index, data.index(b"\n7777\n") + 1)[0] == 7777


@given(st.text(max_size=300))
def test_estimate_matches_sizes(text: str) -> None:
    data = text.encode("utf-8", "replace")
    assert estimate_tokens(text) == estimate_from_sizes(len(text), len(data)) or text.isascii()
    assert estimate_tokens(text) <= 1.5 * len(text) + 1
