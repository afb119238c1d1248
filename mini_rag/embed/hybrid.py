"""Dense and hybrid retrieval: the ``[retrieval] mode`` hook of ``retrieve.py``.

Modes (``[retrieval] mode``):

* ``bm25`` (default): nothing here runs; numpy is never imported.
* ``dense``: chunks ranked by the cosine of their vector (``dense.py``) with the query's.
* ``hybrid``: the BM25 run and the dense run, each cut to its ``fusion_depth`` best
  chunks, fused by ``fusion``:

  - ``rrf``: reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009),
    ``score(c) = sum over runs holding c of 1 / (rrf_k + rank)``, ``rrf_k = 60``;
  - ``convex``: ``fusion_alpha * mm(bm25) + (1 - fusion_alpha) * mm(cosine)`` with ``mm``
    the min-max normalization over that run's top ``fusion_depth`` (best 1, last 0; a
    run whose scores are all equal gives 1); a chunk missing from a run gets 0 there.

Ties: score descending, then chunk_id ascending (the index's ``tie_rank``), as in BM25.
Cosines are rounded to 6 decimals before use, so float noise of the BLAS library (about
1e-7) cannot reorder chunks on another machine except at exact 6-decimal boundaries.

Similarity, the scale the QA contract's thresholds read (``min_similarity``,
``fallback_min_similarity``, the signals), per chunk:

* ``dense``: the cosine, clipped to [0, 1];
* ``hybrid``: ``fusion_alpha * s_bm25 + (1 - fusion_alpha) * max(0, cosine)``, with
  ``s_bm25`` the BM25 similarity of ``retrieve.py`` (0 for a chunk outside BM25's top
  ``fusion_depth``).  Both parts are absolute (not relative to the other chunks), so the
  same threshold means the same thing for every question.

Then, along the fused ranking, each chunk's similarity is raised to the largest similarity
of the chunks ranked below it (a running maximum from the bottom): similarity never rises
down the ranking, so a threshold cuts the *fused* ranking after its last chunk whose own
similarity reaches it, and ``retrieve``'s order (similarity, then score) is the fused
order.  ``Hit.score`` is the fused score (RRF sum, convex value or cosine).
"""
from __future__ import annotations

import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import MiniRagError

MODES = ("bm25", "dense", "hybrid")
FUSIONS = ("rrf", "convex")
ENV_MODEL = "MINI_RAG_EMBED_MODEL"

Run = List[Tuple[int, float]]

_cli_model: List[str] = []          # --embed-model of the running command (see cli_model)
_encoders: Dict[Tuple[str, str, int, int], Any] = {}


class cli_model:
    """``with cli_model(path):`` a command's ``--embed-model`` overrides the environment and
    the config while the command runs."""

    def __init__(self, path: Optional[str]) -> None:
        self.path = path

    def __enter__(self):
        if self.path:
            _cli_model.append(self.path)
        return self

    def __exit__(self, *exc) -> None:
        if self.path:
            _cli_model.pop()


def model_path(config: Dict[str, Any]) -> str:
    """``--embed-model``, else ``$MINI_RAG_EMBED_MODEL``, else ``[embed] model`` ("" if none)."""
    if _cli_model:
        return _cli_model[-1]
    return os.environ.get(ENV_MODEL) or (config.get("embed") or {}).get("model", "")


def get_encoder(config: Dict[str, Any], log=None):
    """The encoder configured by ``config`` (loaded once per process and settings)."""
    from .model import load_encoder
    e = config.get("embed") or {}
    path = model_path(config)
    key = (os.path.abspath(path) if path else "", e.get("sha256", ""), int(e.get("max_seq_length", 256)),
           int(e.get("batch_size", 8)))
    enc = _encoders.get(key)
    if enc is None:
        enc = load_encoder(path, e.get("sha256", ""), key[2], key[3], log)
        _encoders.clear()
        _encoders[key] = enc
    return enc


def cosine_scores(question: str, texts: Sequence[str], config: Dict[str, Any]) -> List[float]:
    """Cosine of ``question`` with each of ``texts`` under the configured encoder, in [-1, 1],
    rounded to 6 places (MiniRagError without numpy or model).  Vectors of texts seen before
    are cached, so the sentences of a chunk are encoded once per process."""
    return get_encoder(config).cosine_scores(question, texts)


# ---------------------------------------------------------------- fusion (pure Python)

def _ordered(scores: Dict[int, float], tie_rank: Sequence[int]) -> Run:
    return sorted(scores.items(), key=lambda kv: (-kv[1], tie_rank[kv[0]]))


def fuse_rrf(runs: Sequence[Run], tie_rank: Sequence[int], k: int = 60) -> Run:
    """Reciprocal rank fusion of ranked runs ``[(position, score), ...]``.

    >>> fuse_rrf([[(0, 9.0), (1, 5.0)], [(1, 0.8), (2, 0.7)]], [0, 1, 2], k=60)
    [(1, 0.03252247488101534), (0, 0.01639344262295082), (2, 0.016129032258064516)]
    """
    acc: Dict[int, float] = {}
    for run in runs:
        for rank, (pos, _score) in enumerate(run, 1):
            acc[pos] = acc.get(pos, 0.0) + 1.0 / (k + rank)
    return _ordered(acc, tie_rank)


def _minmax(run: Run) -> Dict[int, float]:
    if not run:
        return {}
    hi, lo = max(s for _, s in run), min(s for _, s in run)
    if hi == lo:
        return {p: 1.0 for p, _ in run}
    return {p: (s - lo) / (hi - lo) for p, s in run}


def fuse_convex(bm25: Run, dense: Run, tie_rank: Sequence[int], alpha: float = 0.5) -> Run:
    """``alpha * minmax(bm25) + (1 - alpha) * minmax(dense)``, 0 where a run lacks a chunk.

    >>> fuse_convex([(0, 4.0), (1, 2.0)], [(1, 0.9), (2, 0.5)], [0, 1, 2], 0.5)
    [(1, 0.5), (0, 0.5), (2, 0.0)]
    """
    a, b = _minmax(bm25), _minmax(dense)
    fused = {p: alpha * a.get(p, 0.0) + (1.0 - alpha) * b.get(p, 0.0) for p in set(a) | set(b)}
    return _ordered(fused, tie_rank)


def lift(values: Sequence[float]) -> List[float]:
    """Running maximum from the end: ``out[i] = max(values[i:])``.

    >>> lift([0.3, 0.5, 0.1, 0.2])
    [0.5, 0.5, 0.2, 0.2]
    """
    out = list(values)
    for i in range(len(out) - 2, -1, -1):
        if out[i + 1] > out[i]:
            out[i] = out[i + 1]
    return out


def dense_rank(dense, index, query_vector, k: int, allowed=None) -> Run:
    """The ``k`` chunks with the largest cosine to ``query_vector``: ``(position, cosine)``,
    cosine rounded to 6 places, ties by chunk_id; only positions in ``allowed`` if given."""
    import numpy as np
    if dense.matrix.shape[0] == 0 or k <= 0:
        return []
    sims = np.round((dense.matrix @ query_vector).astype(np.float64), 6)
    rows = np.asarray(dense.row_of, dtype=np.int64)
    valid = rows >= 0
    if allowed is not None:
        keep = np.zeros(len(rows), dtype=bool)
        keep[list(allowed)] = True
        valid &= keep
    pos = np.nonzero(valid)[0]
    if not len(pos):
        return []
    scores = sims[rows[pos]]
    if len(pos) > k:
        cut = np.partition(scores, len(scores) - k)[len(scores) - k]
        sel = scores >= cut                       # ties at the cut are all kept, then sorted
        pos, scores = pos[sel], scores[sel]
    tie = np.asarray(index.tie_rank, dtype=np.int64)[pos]
    order = np.lexsort((tie, -scores))[:k]
    return [(int(pos[i]), float(scores[i])) for i in order]


# ---------------------------------------------------------------- the retriever hook

class Fusion:
    """What ``Retriever`` calls instead of its BM25 ranking when ``mode`` is not ``bm25``."""

    def __init__(self, config: Dict[str, Any], encoder, dense) -> None:
        r = config["retrieval"]
        self.mode = r.get("mode", "bm25")
        self.method = r.get("fusion", "rrf")
        self.rrf_k = r.get("rrf_k", 60)
        self.alpha = r.get("fusion_alpha", 0.5)
        self.depth = r.get("fusion_depth", 100)
        self.encoder = encoder
        self.dense = dense

    def rank(self, retriever, text: str, terms: Sequence[str], k: int, scope: str = "MIXED",
             alternatives=None, doc_scope=None) -> List[Tuple[int, float, float]]:
        """``(position, fused score, similarity)`` of the ``k`` best chunks (module doc);
        ``doc_scope`` (a doc_id) keeps one document's chunks, as the BM25 ranking does."""
        depth = max(k, self.depth)
        allowed = retriever._scope_filter(scope, doc_scope)
        qv = self.encoder.encode_cached([text])[0]
        dense = dense_rank(self.dense, retriever.index, qv, depth, allowed)
        cos = dict(dense)
        if self.mode == "dense":
            fused: Run = dense
            sims = [min(1.0, max(0.0, s)) for _, s in dense[:k]]
        else:
            bm = retriever.rank_terms(terms, depth, scope, alternatives, doc_scope)
            bm_sim = {p: sim for p, _s, sim in bm}
            bm_run = [(p, s) for p, s, _sim in bm]
            tie = retriever.index.tie_rank
            if self.method == "convex":
                fused = fuse_convex(bm_run, dense, tie, self.alpha)
            else:
                fused = fuse_rrf([bm_run, dense], tie, self.rrf_k)
            # A chunk outside the dense top `depth`: its cosine is computed directly.
            missing = [p for p, _ in fused[:k] if p not in cos]
            if missing:
                row_of = self.dense.row_of
                for p in missing:
                    r = row_of[p]
                    cos[p] = round(float(self.dense.matrix[r] @ qv), 6) if r >= 0 else 0.0
            sims = [self.alpha * bm_sim.get(p, 0.0) + (1.0 - self.alpha) * max(0.0, cos[p])
                    for p, _ in fused[:k]]
        sims = lift(sims)
        return [(p, s, sim) for (p, s), sim in zip(fused[:k], sims)]


def check_settings(config: Dict[str, Any]) -> str:
    """The validated mode (MiniRagError naming the bad value)."""
    r = config["retrieval"]
    mode = r.get("mode", "bm25")
    if mode not in MODES:
        raise MiniRagError("[retrieval] mode must be one of %s, got %r" % (", ".join(MODES), mode))
    if r.get("fusion", "rrf") not in FUSIONS:
        raise MiniRagError("[retrieval] fusion must be one of %s, got %r" % (", ".join(FUSIONS), r.get("fusion")))
    if not 0.0 <= r.get("fusion_alpha", 0.5) <= 1.0:
        raise MiniRagError("[retrieval] fusion_alpha must be from 0 to 1, got %r" % r.get("fusion_alpha"))
    if r.get("rrf_k", 60) < 0 or r.get("fusion_depth", 100) < 1:
        raise MiniRagError("[retrieval] rrf_k must be >= 0 and fusion_depth >= 1, got %r and %r"
                           % (r.get("rrf_k"), r.get("fusion_depth")))
    e = config.get("embed") or {}
    if e.get("batch_size", 8) < 1:
        raise MiniRagError("[embed] batch_size must be >= 1, got %r" % e.get("batch_size"))
    return mode


def build_dense(config: Dict[str, Any], index, log=None, progress: bool = True):
    """``(encoder, dense index)`` for ``index``, built or loaded beside the BM25 index."""
    from .dense import build_or_load, dense_path
    encoder = get_encoder(config, log)
    return encoder, build_or_load(index, encoder, dense_path(config), log=log, progress=progress)


def attach(retriever, config: Dict[str, Any], log=None) -> None:
    """Give ``retriever`` its dense or hybrid ranking when ``[retrieval] mode`` asks for one."""
    if check_settings(config) == "bm25":
        return
    encoder, dense = build_dense(config, retriever.index, log if log is not None else sys.stderr)
    retriever.fusion = Fusion(config, encoder, dense)


__all__ = ["MODES", "FUSIONS", "Fusion", "attach", "build_dense", "check_settings", "cli_model",
           "cosine_scores", "dense_rank", "fuse_convex", "fuse_rrf", "get_encoder", "lift", "model_path"]
