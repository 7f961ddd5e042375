"""Embedders for semantic discovery (the ``semantic`` extra): the default
:class:`WordLlamaEmbedder`, one named by import path (:func:`resolve_embedder`), and the checks
and normalisation of what an embedder returns.

An *embedder* is any callable from a list of texts to one vector per text (a sequence of
sequences of floats, or a 2-D array). It may have ``model_id`` (a string naming the model and
its version: vectors cached on disk under it) and ``covers(text) -> bool`` (whether it
understands a query; a query it does not cover is answered by BM25F alone). What is embedded,
the cache and the index are ``_semantic``'s.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from toolregistry.plugin import import_target

from ._settings import semantic_available

__all__ = ["INSTALL_HINT", "Embedder", "WordLlamaEmbedder", "resolve_embedder"]

Embedder = Callable[[list[str]], Any]

INSTALL_HINT = "install the extra: pip install 'toolregistry-discovery[semantic]'"


def _is_latin(ch: str) -> bool:
    return ch < "\u0250"  # Basic Latin to Latin Extended-B


class WordLlamaEmbedder:
    """WordLlama's ``l2_supercat`` static embeddings, read offline from the weights and
    tokenizer that the ``wordllama`` wheel ships (256 dimensions, the only size it ships).

    A text's vector is the mean of its tokens' vectors, as ``WordLlama.embed`` computes it.
    The model was trained Matryoshka-style: ``dim=128`` or ``dim=64`` keeps the first
    columns of the table (as ``WordLlama.load(trunc_dim=...)``), for less memory and lower
    quality. The files are read with ``tokenizers`` and ``safetensors`` without importing
    ``wordllama``: importing it configures the root logger (``logging.basicConfig``), and its
    loader downloads from the model hub unless told otherwise. The model was trained on
    English, so :meth:`covers` accepts text that is mostly Latin script.
    """

    CONFIG = "l2_supercat"
    DIM = 256
    DIMS = (64, 128, 256)

    def __init__(self, dim: int = DIM) -> None:
        if isinstance(dim, bool) or dim not in self.DIMS:
            raise ValueError(f"WordLlamaEmbedder dim must be one of {self.DIMS} (the shipped "
                             f"256-dimension model or a Matryoshka truncation of it), got {dim!r}")
        spec = importlib.util.find_spec("wordllama")
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError(
                f"semantic discovery's default embedder needs the wordllama package: "
                f"{INSTALL_HINT}")
        try:
            from safetensors import safe_open
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - wordllama depends on both
            raise ModuleNotFoundError(f"{exc}: {INSTALL_HINT}") from exc
        root = Path(next(iter(spec.submodule_search_locations)))
        weights = root / "weights" / f"{self.CONFIG}_{self.DIM}.safetensors"
        vocab = root / "tokenizers" / f"{self.CONFIG}_tokenizer_config.json"
        for path in (weights, vocab):
            if not path.is_file():
                raise FileNotFoundError(
                    f"wordllama at {root} does not ship {path.relative_to(root)}; "
                    f"reinstall it ({INSTALL_HINT})")
        self._tokenizer = Tokenizer.from_file(str(vocab))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        # This tokenizer has no pre-tokenizer: BPE sees a whole text as one word, and its
        # word cache would keep every text embedded (tens of MiB at 10,000 tools) for no gain.
        resize = getattr(self._tokenizer.model, "_resize_cache", None)
        if callable(resize):
            resize(0)
        with safe_open(str(weights), framework="np") as fh:
            table = fh.get_tensor("embedding.weight")  # float16, kept as shipped
        if table.ndim != 2 or table.shape[1] != self.DIM:
            raise ValueError(f"unexpected embedding table {table.shape} in {weights}")
        # float16 as shipped; a truncation keeps only its columns (a contiguous copy).
        self._table = table if dim == self.DIM else np.ascontiguousarray(table[:, :dim])
        self._dim = dim
        suffix = "" if dim == self.DIM else f"/trunc{dim}"
        self.model_id = (f"wordllama-{metadata.version('wordllama')}/{self.CONFIG}_{self.DIM}"
                         f"{suffix}")

    @property
    def dim(self) -> int:
        return self._dim

    def covers(self, text: str) -> bool:
        """Whether most letters of ``text`` are Latin script (what the model knows)."""
        letters = [c for c in text if c.isalpha()]
        return sum(map(_is_latin, letters)) * 2 >= len(letters)

    def __call__(self, texts: list[str]) -> Any:
        table = self._table
        last = table.shape[0] - 1
        encode = self._tokenizer.encode
        out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
        # Text by text, on this thread: the batch encoder's thread pool and large gathers
        # leave tens of MiB in the allocator's arenas after a build, for little speed.
        for row, text in enumerate(texts):
            ids = encode(text, add_special_tokens=False).ids
            if ids:
                rows = np.minimum(np.asarray(ids, dtype=np.int64), last)
                np.divide(table[rows].sum(axis=0, dtype=np.float32), len(ids), out=out[row])
        return out


@functools.cache
def _default_embedder() -> WordLlamaEmbedder:
    # One table per process, shared by every registry: it is read-only, and loading it
    # takes a quarter of a second.
    return WordLlamaEmbedder()


def resolve_embedder(spec: str | Embedder | None) -> tuple[Embedder, str | None]:
    """The embedder ``spec`` names and its cache id (``None``: not cached on disk)."""
    if spec is None:
        # Not installed (any more): the constructor's error names the extra to install.
        default = _default_embedder() if semantic_available() else WordLlamaEmbedder()
        return default, default.model_id
    if isinstance(spec, str):
        target = import_target(spec, "semantic discovery embedder")
        if isinstance(target, type):
            target = target()
        if not callable(target):
            raise TypeError(f"semantic discovery embedder {spec!r} is not callable "
                            f"(texts -> vectors): {target!r}")
        model_id = getattr(target, "model_id", None)
        return target, str(model_id) if model_id else spec
    model_id = getattr(spec, "model_id", None)
    return spec, str(model_id) if model_id else None


def _as_matrix(raw: Any, n: int, source: str) -> Any:
    try:
        vectors = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{source} returned something that is not numbers: {exc}") from None
    if vectors.ndim != 2 or vectors.shape[0] != n or vectors.shape[1] == 0:
        raise ValueError(f"{source} must return one vector per text ({n} texts): got an "
                         f"array of shape {vectors.shape}")
    if not np.isfinite(vectors).all():
        raise ValueError(f"{source} returned NaN or infinite values")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    vectors /= norms
    return vectors


def _unit(vec: Any) -> Any:
    """``vec`` as a float32 unit vector (a cached float16 vector is unit up to rounding)."""
    out = np.asarray(vec, dtype=np.float32)
    norm = float(np.linalg.norm(out))
    return out / norm if norm > 0 else out
