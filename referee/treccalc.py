"""trec_eval's measures computed from one topic's relevance list (trec_eval's "res_rels"): the
measures of ``-m all_trec`` beyond the ranking core of trec.py (infAP, Rprec_mult, utility,
11pt_avg, binG, G, gain-parameterised ndcg, ndcg_rel, Rndcg, map_cut, relative_P, set_*,
num_nonrel_judged_ret, rbp, rbp_resid, unj, relstring)."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

# --------------------------------------------------------------------------- trec_eval's res_rels
#
# Each definition below follows trec_eval 10.0's (its m_<name>.c): written from those
# definitions, not copied.  A topic is its retrieved documents in trec_eval's order (score
# descending, then docno descending), cut to -M documents, each mapped to its qrels level:
# the level (>= 0) when judged, UNJUDGED (-2) when the qrels list it with a negative level
# (in the pool, not judged), NONPOOL (-1) when the qrels do not list it.  ``rel_level`` (-l)
# is the least level that is relevant.  Gains (ndcg, ndcg_rel, Rndcg, G, rbp) are the levels
# unless ``level=gain`` parameters change them; the ideal ordering takes every judged
# document of the topic by gain, largest first, while the gain is positive.

NONPOOL, UNJUDGED = -1, -2
INFAP_EPSILON = 0.00001                 # trec_eval's INFAP_EPSILON


class TopicRels:
    """One topic for trec_eval's measures: ``rels`` (each retrieved document's value, see
    above), ``counts`` (judged documents per level >= 0), the relevant ones (num_rel) and the
    relevant retrieved ones (num_rel_ret) at ``rel_level``."""
    __slots__ = ("rels", "counts", "max_level", "rel_level", "num_ret", "num_rel", "num_rel_ret")

    def __init__(self, ranking: List[str], judged: Dict[str, int], rel_level: int = 1) -> None:
        get = judged.get
        self.rels = [NONPOOL if g is None else (g if g >= 0 else UNJUDGED) for g in map(get, ranking)]
        counts: Dict[int, int] = {}
        for g in judged.values():
            if g >= 0:
                counts[g] = counts.get(g, 0) + 1
        self.counts = counts
        self.max_level = max(counts) if counts else -1
        self.rel_level = rel_level
        self.num_ret = len(self.rels)
        self.num_rel = sum(c for g, c in counts.items() if g >= rel_level)
        self.num_rel_ret = sum(1 for r in self.rels if r >= rel_level)


def _lround(x: float) -> int:
    """C's lround for x >= 0: nearest integer, halves away from zero."""
    whole = math.floor(x)
    return int(whole) + (1 if x - whole >= 0.5 else 0)


def infap(t: TopicRels) -> float:
    """infAP (Yilmaz and Aslam): at each judged relevant document at 0-based rank j > 0, 1/(j+1)
    + j/(j+1) * (judged above / j) * (relevant above + eps) / (judged above + 2 eps), where
    documents outside the pool count in "above" for the first ratio only as rank, and those in
    the pool but unjudged in neither ratio's judged part; / num_rel."""
    total = 0.0
    nonrel = rel = unjudged = 0
    for j, r in enumerate(t.rels):
        if r == NONPOOL:
            continue
        if r == UNJUDGED:
            unjudged += 1
            continue
        if r < t.rel_level:
            nonrel += 1
            continue
        rel += 1
        if j == 0:
            total += 1.0
        else:
            fj = float(j)
            total += 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((rel - 1 + nonrel + unjudged) / fj) * \
                ((rel - 1 + INFAP_EPSILON) / (rel - 1 + nonrel + 2 * INFAP_EPSILON))
    return total / t.num_rel if t.num_rel else total


def bpref_value(t: TopicRels) -> float:
    """bpref at ``rel_level`` (gm_bpref's per-topic value): judged non-relevant are the levels
    from 0 below rel_level."""
    num_nonrel = sum(c for g, c in t.counts.items() if g < t.rel_level)
    total = 0.0
    nonrel = 0
    for r in t.rels:
        if r < 0:
            continue
        if r < t.rel_level:
            nonrel += 1
        elif nonrel:
            total += 1.0 - min(nonrel, t.num_rel) / min(num_nonrel, t.num_rel)
        else:
            total += 1.0
    return total / t.num_rel if t.num_rel else total


def rprec_mult(t: TopicRels, mult: float) -> float:
    """Precision after int(mult * num_rel + 0.9) documents (trec_eval's rounding), documents past
    the ranking counting as non-relevant; 0 when that cutoff is 0."""
    cut = int(mult * t.num_rel + 0.9)
    if cut <= 0:
        return 0.0
    top = t.rels[:cut]
    return sum(1 for r in top if r >= t.rel_level) / cut


def utility(t: TopicRels, params: Tuple[float, ...]) -> float:
    """p1 * relevant retrieved + p2 * non-relevant retrieved + p3 * relevant not retrieved +
    p4 * (-N 0 + relevant retrieved - retrieved - relevant): trec_eval's contingency utility."""
    a = t.num_rel_ret
    return (params[0] * a + params[1] * (t.num_ret - a) + params[2] * (t.num_rel - a)
            + params[3] * (0 + a - t.num_ret - t.num_rel))


def pt_avg(t: TopicRels, levels: Tuple[float, ...]) -> float:
    """Interpolated precision averaged over recall levels (11pt_avg): level L is reached at
    lround(L * num_rel) relevant documents; a level past the relevant retrieved adds 0; levels
    reached add the best precision at or after the rank that reaches them (level 0: the best
    precision of the ranking)."""
    cuts = [_lround(p * t.num_rel) for p in levels]
    cur = len(cuts) - 1
    while cur >= 0 and cuts[cur] > t.num_rel_ret:
        cur -= 1
    best = t.num_rel_ret / t.num_ret if t.num_ret else 0.0
    found = t.num_rel_ret
    total = 0.0
    i = t.num_ret
    while i > 0 and found > 0:
        best = max(best, found / i)
        if t.rels[i - 1] >= t.rel_level:
            while cur >= 0 and found == cuts[cur]:
                total += best
                cur -= 1
            found -= 1
        i -= 1
    for _ in range(cur + 1):                # (one addition each, as trec_eval sums them)
        total += best
    return total / len(levels)


def bin_g(t: TopicRels) -> float:
    """binG: mean over the relevant documents of 1 / log2(2 + non-relevant ranked above)."""
    total = 0.0
    found = 0
    for i, r in enumerate(t.rels):
        if r >= t.rel_level:
            found += 1
            total += 1.0 / math.log2(3 + i - found)
    return total / t.num_rel if found else 0.0


class Gains:
    """Gain per level: the level itself, or a ``level=gain`` parameter; ``ideal`` is the ideal
    ordering's gains (the topic's judged documents by gain, largest first, while positive),
    ``top`` the largest gain (where trec_eval's walk down the ideal ordering starts)."""
    __slots__ = ("gain_of", "ideal", "top", "low", "high")

    def __init__(self, t: TopicRels, pairs: Tuple[Tuple[int, float], ...] = ()) -> None:
        given = dict(pairs)
        gain_of = {lvl: float(lvl) for lvl in range(t.max_level + 1) if lvl not in given} \
            if t.max_level <= 4096 else {lvl: float(lvl) for lvl in t.counts if lvl not in given}
        gain_of.update(given)
        entries = sorted(((g, t.counts.get(lvl, 0)) for lvl, g in gain_of.items()), key=lambda e: e[0])
        ideal: List[float] = []
        for g, n in reversed(entries):
            if n and g <= 0:
                break
            ideal.extend([g] * n)
        self.gain_of = gain_of
        self.ideal = ideal
        self.top = entries[-1][0] if entries else 0.0
        self.low = entries[0][0] if entries else 0.0
        self.high = self.top

    def of(self, r: int) -> float:
        return self.gain_of.get(r, 0.0)


def _dcg_parts(t: TopicRels, gains: Gains) -> Tuple[List[float], List[float]]:
    """(the ranking's gain at each rank, each rank's discount 1 / log2(rank + 1)) up to
    max(retrieved, ideal length)."""
    n = max(t.num_ret, len(gains.ideal))
    return [gains.of(r) for r in t.rels], [1.0 / math.log2(i + 2) for i in range(n)]


def ndcg_gains(t: TopicRels, gains: Gains) -> float:
    """nDCG with gains: the whole ranking's DCG / the ideal ordering's (0 when the ideal is 0)."""
    got, _ = _dcg_parts(t, gains)
    dcg = ideal = 0.0
    for i, g in enumerate(got):
        if g != 0:
            dcg += g / math.log2(i + 2)
    for i, g in enumerate(gains.ideal):
        ideal += g / math.log2(i + 2)
    return dcg / ideal if ideal > 0.0 else 0.0


def ndcg_rel(t: TopicRels, gains: Gains) -> float:
    """nDCG averaged over the relevant documents (positive gain): at each one retrieved, the
    nDCG at its rank; each one not retrieved, the nDCG at the end of the ranking."""
    dcg = ideal = total = 0.0
    n_ideal = len(gains.ideal)
    n_rel_ret = 0
    for i, r in enumerate(t.rels):
        g = gains.of(r)
        if g != 0:
            dcg += g / math.log2(i + 2)
        if i < n_ideal:
            ideal += gains.ideal[i] / math.log2(i + 2)
        if g > 0 and ideal > 0.0:
            total += dcg / ideal
            n_rel_ret += 1
    for i in range(t.num_ret, n_ideal):
        ideal += gains.ideal[i] / math.log2(i + 2)
    if ideal <= 0.0:
        return 0.0
    total += (n_ideal - n_rel_ret) * dcg / ideal
    return total / n_ideal if total > 0.0 else 0.0


def rndcg(t: TopicRels, gains: Gains) -> float:
    """nDCG averaged at the ranks where the ideal ordering's gain changes (and at the end of
    the ranking when it ends first); 0 when nothing is relevant."""
    if t.num_rel == 0:
        return 0.0
    ideal_list = gains.ideal
    n_ideal = len(ideal_list)
    dcg = ideal = total = 0.0
    points = 0
    old = cur = gains.top
    i = 0
    while i < t.num_ret and cur > 0.0:
        cur = ideal_list[i] if i < n_ideal else 0.0
        if cur != old:
            if ideal > 0.0:
                total += dcg / ideal
                points += 1
            old = cur
        g = gains.of(t.rels[i])
        if g != 0:
            dcg += g / math.log2(i + 2)
        if cur > 0.0:
            ideal += cur / math.log2(i + 2)
        i += 1
    if i < t.num_ret:
        for j in range(i, t.num_ret):
            g = gains.of(t.rels[j])
            if g != 0:
                dcg += g / math.log2(j + 2)
        if ideal > 0.0:
            total += dcg / ideal
            points += 1
    while cur > 0.0:
        cur = ideal_list[i] if i < n_ideal else 0.0
        if cur != old:
            if ideal > 0.0:
                total += dcg / ideal
                points += 1
            old = cur
        if cur > 0.0:
            ideal += cur / math.log2(i + 2)
        i += 1
    return total / points if points else 0.0


def g_measure(t: TopicRels, gains: Gains) -> float:
    """G: each retrieved document's gain / log2(2 + ideal cost so far - gain so far), summed,
    / the ideal ordering's total gain; the cost of a rank is the ideal gain there, at least 1."""
    ideal_list = gains.ideal
    n_ideal = len(ideal_list)
    got = cost = total = ideal_sum = 0.0
    cur = gains.top
    i = 0
    while i < t.num_ret and cur > 0.0:
        g = gains.of(t.rels[i])
        got += g
        cur = ideal_list[i] if i < n_ideal else 0.0
        if cur > 0.0:
            ideal_sum += cur
        cost += cur if cur >= 1.0 else 1.0
        if g != 0:
            total += g / math.log2(2 + cost - got)
        i += 1
    while i < t.num_ret:
        g = gains.of(t.rels[i])
        got += g
        cost += 1.0
        if g != 0:
            total += g / math.log2(2 + cost - got)
        i += 1
    for j in range(i, n_ideal):
        ideal_sum += ideal_list[j]
    return total / ideal_sum if ideal_sum > 0.0 else 0.0


def map_cut(t: TopicRels, k: int) -> float:
    """Average precision over the top k (relevant documents below k add 0) / num_rel."""
    if t.num_rel == 0:
        return 0.0
    total = 0.0
    found = 0
    for i, r in enumerate(t.rels[:k]):
        if r >= t.rel_level:
            found += 1
            total += found / (i + 1)
    return total / t.num_rel


def relative_p(t: TopicRels, k: int) -> float:
    """Relevant in the top k / min(k, num_rel): precision up to R, recall after."""
    if t.num_rel == 0:
        return 0.0
    return sum(1 for r in t.rels[:k] if r >= t.rel_level) / min(k, t.num_rel)


def unjudged_at(t: TopicRels, k: int) -> float:
    """unj_k: documents in the top k the qrels do not judge (not listed, or listed unjudged) / k."""
    return sum(1 for r in t.rels[:k] if r < 0) / k


def set_measure(t: TopicRels, family: str, x: float = 1.0) -> float:
    """The unranked measures of the whole retrieved set: set_P, set_relative_P, set_recall,
    set_map (rel_ret^2 / (ret * rel)) and set_F (x + 1) P R / (x P + R)."""
    a, ret, rel = t.num_rel_ret, t.num_ret, t.num_rel
    if family == "set_P":
        return a / ret if ret else 0.0
    if family == "set_relative_P":
        return a / min(ret, rel) if ret and rel else 0.0
    if family == "set_recall":
        return a / rel if rel else 0.0
    if family == "set_map":
        return (float(a) * float(a)) / (float(ret) * float(rel)) if ret and rel else 0.0
    if not a:                               # set_F
        return 0.0
    p, r = a / ret, a / rel
    return (x + 1.0) * p * r / (x * p + r)


def rbp(t: TopicRels, gains: Gains, p: float) -> float:
    """Rank-biased precision (1 - p) sum gain * p^(rank - 1), gains scaled to [0, 1] when one
    lies outside it ((g - least) / (largest - least))."""
    low, high = min(gains.gain_of.values(), default=0.0), max(gains.gain_of.values(), default=0.0)
    scale = low < 0 or high > 1
    total = 0.0
    weight = 1.0
    for r in t.rels:
        g = gains.of(r)
        if scale and r in gains.gain_of:
            g = (g - low) / (high - low)
        if g != 0:
            total += g * weight
        weight *= p
    return (1.0 - p) * total


def rbp_resid(t: TopicRels, p: float) -> float:
    """RBP's residual: p^retrieved + (1 - p) sum over the unjudged retrieved of p^(rank - 1), 0
    when every retrieved document is judged (trec_eval's definition)."""
    total = 0.0
    weight = 1.0
    unjudged = 0
    for r in t.rels:
        if r < 0:
            unjudged += 1
            total += weight
        weight *= p
    return weight + (1.0 - p) * total if unjudged else 0.0


def relstring(t: TopicRels, length: int) -> str:
    """The first ``length`` retrieved documents' levels, one character each: 0-9, '>' above 9,
    '-' not in the qrels, '.' listed unjudged."""
    out = []
    for r in t.rels[:max(0, length)]:
        out.append(">" if r > 9 else str(r) if r >= 0 else "-" if r == NONPOOL else ".")
    return "".join(out)


def extra_measure(t: TopicRels, family: str, cut: Optional[float], k: Optional[int], param):
    """The value of one measure of this module (``param``: the parsed parameters)."""
    if family == "infAP":
        return infap(t)
    if family == "gm_bpref":
        return bpref_value(t)
    if family == "Rprec_mult":
        return rprec_mult(t, cut)
    if family == "utility":
        return utility(t, param)
    if family == "11pt_avg":
        return pt_avg(t, param)
    if family == "binG":
        return bin_g(t)
    if family in ("G", "ndcg", "ndcg_rel", "Rndcg"):
        gains = Gains(t, param)
        return {"G": g_measure, "ndcg": ndcg_gains, "ndcg_rel": ndcg_rel, "Rndcg": rndcg}[family](t, gains)
    if family == "map_cut":
        return map_cut(t, k)
    if family == "relative_P":
        return relative_p(t, k)
    if family == "unj":
        return unjudged_at(t, k)
    if family.startswith("set_"):
        return set_measure(t, family, param[0] if param else 1.0)
    if family == "num_nonrel_judged_ret":
        return float(sum(1 for r in t.rels if 0 <= r < t.rel_level))
    if family in ("rbp", "rbp_resid"):
        levels = tuple((lvl, g) for lvl, g in param if lvl != "p")
        p = dict((k2, v) for k2, v in param if k2 == "p").get("p", 0.9)
        return rbp(t, Gains(t, levels), p) if family == "rbp" else rbp_resid(t, p)
    if family == "relstring":
        return relstring(t, int(param[0]) if param else 10)
    raise ValueError("not a measure of treccalc: %r" % family)
