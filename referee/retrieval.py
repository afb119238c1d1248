"""Retrieval measures (P@K, R@K, Success@K, RR, nDCG@K) on a ranking reduced to the positions
of its relevant documents; QA mode and TREC mode share them."""
from __future__ import annotations

import math
from bisect import bisect_left
from itertools import compress
from typing import List, NamedTuple

from .registry import Measure

# --------------------------------------------------------------------------- retrieval measures
#
# One implementation per measure of the registry's retrieval families, used by QA mode
# (Scorer._retrieval: P@K, R@K, Success@K, RR, RR@K, nDCG@K) and by TREC mode (trec_query: P_K,
# recall_K, success_K, recip_rank, ndcg_cut_K) alike.  Both reduce a ranking to ``positions``:
# the 0-based ranks of its relevant documents, ascending, with ``gains``, their levels (1 for a
# plain gold citation; the qrels level >= 1 with --qrels).

_DISC: List[float] = []


def _disc(n: int) -> List[float]:
    """1 / log2(rank + 1) for ranks 1..n (trec_eval's nDCG discount)."""
    while len(_DISC) < n:
        _DISC.append(1.0 / math.log2(len(_DISC) + 2))
    return _DISC


def relevant_positions(ranking: List[str], rel) -> Tuple[List[int], List[int]]:
    """(0-based ranks of the documents of ``rel`` in ``ranking``, their gains); ``rel`` maps an
    id to its level (>= 1), or is a collection of ids (gain 1 each)."""
    if type(rel) is dict:      # levels >= 1 (truthy); an id not in ``rel`` gives None
        levels = list(map(rel.get, ranking))
        return list(compress(range(len(levels)), levels)), list(filter(None, levels))
    positions = list(compress(range(len(ranking)), map(rel.__contains__, ranking)))
    gains = [1] * len(positions)
    return positions, gains


def hits_at(positions: List[int], k: int) -> int:
    """Relevant documents in the top ``k``."""
    return bisect_left(positions, k)


def measure_p(hits: int, k: int) -> float:
    """P@K / trec_eval P_K: relevant documents in the top K / K."""
    return hits / k


def measure_r(hits: int, nrel: int) -> float:
    """R@K / trec_eval recall_K: relevant documents in the top K / all relevant (0 when none)."""
    return hits / nrel if nrel else 0.0


def measure_success(hits: int) -> float:
    """Success@K / trec_eval success_K: 1 when a relevant document is in the top K."""
    return 1.0 if hits else 0.0


def measure_rr(positions: List[int], k: Optional[int] = None) -> float:
    """RR (k None) / RR@K / trec_eval recip_rank: 1 / rank of the first relevant document,
    0 when none is retrieved (within the top k)."""
    if positions and (k is None or positions[0] < k):
        return 1.0 / (positions[0] + 1)
    return 0.0


def ideal_gains(levels) -> List[int]:
    """The ideal ranking's gains: the positive levels, largest first."""
    return sorted((g for g in levels if g > 0), reverse=True)


def ideal_dcg(ideal: List[int], k: int) -> float:
    """DCG of the top ``k`` of the ideal ranking (``ideal``: gains largest first)."""
    disc = _disc(k)
    total = 0.0
    for pos, gain in enumerate(ideal[:k]):
        total += gain * disc[pos]
    return total


def measure_ndcg(positions: List[int], gains: List[int], k: int, idcg: float) -> float:
    """nDCG@K / trec_eval ndcg_cut_K: sum of gain / log2(rank + 1) over the top K, divided by
    ``idcg`` (ideal_dcg of the same K); 0 when nothing is relevant."""
    disc = _disc(k)
    dcg = 0.0
    for pos, gain in zip(positions, gains):
        if pos >= k:
            break
        dcg += gain * disc[pos]
    return dcg / idcg if idcg else 0.0


class MetricRef(NamedTuple):
    """A parsed metric name: registry entry plus cutoff (None for 'recall@k' = first --k)."""
    spelled: str
    metric: Measure
    k: Optional[int]

    def key(self, k0: int) -> str:
        """The name under which the report lists the value."""
        if "@K" not in self.metric.name:
            return self.metric.name
        return self.metric.name.replace("@K", "@%d" % (self.k if self.k is not None else k0))
