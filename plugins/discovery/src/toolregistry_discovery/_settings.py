"""``[tool.toolregistry.plugins.discovery]``: the plugin's options, validated by pydantic."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from toolregistry.plugin import ConfigPath


class DiscoverySettings(BaseModel):
    """Options of the discovery plugin (TOML keys use dashes: ``semantic-weight``).

    ``semantic``: hybrid retrieval, dense embeddings fused with BM25F (needs the ``semantic``
    extra). ``embedder``: ``"pkg.module:attr"``, a callable from a list of texts to one vector
    per text (a class there is instantiated without arguments); default: WordLlama's model
    shipped in its wheel. ``embedding_cache``: ``true`` for the user cache folder, a file
    path, or ``false``. ``semantic_weight``: how much the dense side counts (0 turns it off).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    semantic: bool = False
    embedder: str | None = Field(default=None, pattern=r"^[\w.]+:[\w.]+$")
    embedding_cache: bool | ConfigPath = True
    semantic_weight: float = Field(default=1.0, ge=0.0, allow_inf_nan=False)

    def semantic_options(self) -> object:
        """The :class:`~._semantic.SemanticOptions` these settings describe."""
        from ._semantic import SemanticOptions

        return SemanticOptions(embedder=self.embedder, cache=self.embedding_cache,
                               weight=self.semantic_weight)
