"""``[tool.toolregistry.plugins.discovery]``: the plugin's options, validated by pydantic."""

from __future__ import annotations

import importlib.util

from pydantic import BaseModel, ConfigDict, Field

from toolregistry.plugin import ConfigPath


def semantic_available(embedder: object = None) -> bool:
    """Whether hybrid retrieval can run by default: an embedder was given, or the ``semantic``
    extra (the default model's packages) is installed. Looks for them, imports nothing."""
    if embedder is not None:
        return True
    try:
        return all(importlib.util.find_spec(m) is not None
                   for m in ("wordllama", "tokenizers", "safetensors"))
    except (ImportError, ValueError):  # a module set to None in sys.modules
        return False


class DiscoverySettings(BaseModel):
    """Options of the discovery plugin (TOML keys use dashes: ``semantic-weight``).

    ``semantic``: hybrid retrieval, dense embeddings fused with BM25F; unset, it is on when the
    ``semantic`` extra is installed (or an ``embedder`` is given). ``embedder``: ``"pkg.module:attr"``, a callable from a list of texts to one vector
    per text (a class there is instantiated without arguments); default: WordLlama's model
    shipped in its wheel. ``embedding_cache``: ``true`` for the user cache folder, a file
    path, or ``false``. ``semantic_weight``: how much the dense side counts (0 turns it off).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    semantic: bool | None = None
    embedder: str | None = Field(default=None, pattern=r"^[\w.]+:[\w.]+$")
    embedding_cache: bool | ConfigPath = True
    semantic_weight: float = Field(default=1.0, ge=0.0, allow_inf_nan=False)

    def semantic_is_default(self) -> bool:
        """Whether no semantic option differs from its default."""
        return (self.embedder is None and self.embedding_cache is True
                and self.semantic_weight == 1.0)

    def semantic_options(self) -> object:
        """The :class:`~._semantic.SemanticOptions` these settings describe."""
        from ._semantic import SemanticOptions

        return SemanticOptions(embedder=self.embedder, cache=self.embedding_cache,
                               weight=self.semantic_weight)
