"""trec_eval's measures (TREC mode: qrels and a run) and their names."""
from __future__ import annotations

import difflib
import math
import random
import re
from functools import partial
from itertools import compress
from typing import Dict, NamedTuple, Optional, Tuple

from .base import ScoreError
from .registry import Measure
from .fmt import _r
from .stats import _entry, _normal_ci
from .retrieval import (MetricRef, hits_at, ideal_dcg, ideal_gains, measure_ndcg, measure_p,
    measure_r, measure_rr, measure_success)

# --------------------------------------------------------------------------- trec_eval measures
#
# With --qrels/--run the scorer also computes trec_eval's own measures under trec_eval's names
# (``-m map -m ndcg_cut.10``, ``--measures map,P.5``) and can print them as trec_eval does
# (``--format trec``: ``measure<TAB>qid|all<TAB>value``, ``-q`` adds one block per query).
# Conventions are trec_eval's: a document is relevant when its level is >= 1, the ranking is
# score descending then docno descending, every qrels topic counts (a topic the run forgot
# scores 0, trec_eval -c), "all" is the mean over topics (the sum for the num_* counts).


class TrecMeasure(NamedTuple):
    """One trec_eval measure: its name, default cutoffs (() = none), how "all" is formed
    ("mean", "sum" or "geomean": trec_eval's geometric mean with each value floored at
    GM_FLOOR), a one-line description, and whether -q prints it per topic."""
    name: str
    cutoffs: Tuple[float, ...]
    total: str
    description: str
    per_topic: bool = True


_TREC_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_RECALL_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
GM_FLOOR = 0.00001                      # trec_eval's MIN_GEO_MEAN
#: The registry of trec_eval measures, in trec_eval's own output order (its measure table):
#: lines are printed in this order whatever the order of -m.
TREC_MEASURES: Tuple[TrecMeasure, ...] = (
    TrecMeasure("num_ret", (), "sum", "documents retrieved"),
    TrecMeasure("num_rel", (), "sum", "relevant documents in the qrels (level >= 1)"),
    TrecMeasure("num_rel_ret", (), "sum", "relevant documents retrieved"),
    TrecMeasure("map", (), "mean", "average precision: the sum of the precision at the rank of each "
                "relevant retrieved document / num_rel (0 when num_rel is 0)"),
    TrecMeasure("gm_map", (), "geomean", "geometric mean over topics of average precision, each floored "
                "at 0.00001 (all only, as trec_eval)", per_topic=False),
    TrecMeasure("Rprec", (), "mean", "precision after num_rel documents (0 when num_rel is 0)"),
    TrecMeasure("bpref", (), "mean", "binary preference: mean over the relevant documents of 1 - "
                "min(judged non-relevant ranked above it, R) / min(R, N); unretrieved ones add 0"),
    TrecMeasure("recip_rank", (), "mean", "1 / rank of the first relevant document, 0 when none is retrieved"),
    TrecMeasure("iprec_at_recall", _RECALL_LEVELS, "mean", "interpolated precision at recall level L (0 to 1): "
                "the highest precision at any rank holding at least floor(L * num_rel + 0.5) relevant "
                "documents (trec_eval's rounding), 0 when none"),
    TrecMeasure("P", _TREC_CUTS, "mean", "relevant documents in the top K / K"),
    TrecMeasure("recall", _TREC_CUTS, "mean", "relevant documents in the top K / num_rel (0 when num_rel is 0)"),
    TrecMeasure("ndcg", (), "mean", "sum of level / log2(rank + 1) over the whole ranking, divided by the "
                "same for the ideal ordering of the qrels (0 when nothing is relevant)"),
    TrecMeasure("ndcg_cut", _TREC_CUTS, "mean", "sum of level / log2(rank + 1) over the top K, divided "
                "by the same for the ideal ordering of the qrels (0 when nothing is relevant)"),
    TrecMeasure("success", (1, 5, 10), "mean", "1 when a relevant document is in the top K, else 0"),
)
_TREC_BY_NAME = {m.name: m for m in TREC_MEASURES}
_TREC_ORDER = {m.name: i for i, m in enumerate(TREC_MEASURES)}
TREC_DEFAULT = ("num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
                "iprec_at_recall", "P")
#: -m all_trec: every measure above with its default cutoffs.
TREC_ALL = tuple(m.name for m in TREC_MEASURES)


def _float_param(measure: TrecMeasure) -> bool:
    return bool(measure.cutoffs) and any(isinstance(c, float) for c in measure.cutoffs)


def trec_name(measure: TrecMeasure, cut: Optional[float]) -> str:
    """The output name: ``P_5``, ``iprec_at_recall_0.10``, ``map``."""
    if cut is None:
        return measure.name
    return "%s_%.2f" % (measure.name, cut) if _float_param(measure) else "%s_%d" % (measure.name, cut)


def _trec_family(name: str) -> Tuple[str, Optional[float]]:
    """``P_5`` -> (P, 5); ``iprec_at_recall_0.10`` -> (iprec_at_recall, 0.1); ``map`` -> (map, None)."""
    got = _FAMILY_OF.get(name)
    if got is None:
        if name in _TREC_BY_NAME:
            got = (name, None)
        else:
            head, _, tail = name.rpartition("_")
            got = (head, float(tail))
        if len(_FAMILY_OF) < 4096:         # names come from -m and the registry: few
            _FAMILY_OF[name] = got
    return got


_FAMILY_OF: Dict[str, Tuple[str, Optional[float]]] = {}


def trec_sort_key(name: str) -> Tuple[int, float]:
    """trec_eval's line order: the measure's place in TREC_MEASURES, then its cutoff."""
    family, cut = _trec_family(name)
    return _TREC_ORDER.get(family, len(_TREC_ORDER)), cut if cut is not None else -1.0


def _trec_split(spec: str):
    """``"P.5,10"`` -> (P, [5, 10]); ``"P_5"`` -> (P, [5]); ``"map"`` -> (map, []);
    ``"iprec_at_recall..10,.5"`` / ``"iprec_at_recall.0.10"`` -> (iprec_at_recall, [0.1, 0.5]); None
    when ``spec`` names no measure of TREC_MEASURES (an integer cutoff is 1 to 6 ASCII digits, no
    leading 0; a recall level is a decimal from 0 to 1)."""
    name, dot, params = spec.strip().partition(".")
    if not dot and name not in _TREC_BY_NAME:
        head, _, tail = name.rpartition("_")
        if head in _TREC_BY_NAME and tail:
            name, params = head, tail
    measure = _TREC_BY_NAME.get(name)
    if measure is None or (dot and not params):
        return None
    cuts: List[float] = []
    for p in params.split(",") if params else []:
        if measure.cutoffs and _float_param(measure):
            if not re.fullmatch(r"(?:0|1)?(?:\.[0-9]{1,6})?", p) or p in ("", "."):
                return None
            v = float(p)
            if not 0.0 <= v <= 1.0:
                return None
            cuts.append(v)
            continue
        if not (p.isascii() and p.isdigit() and p[0] != "0" and len(p) <= 6):
            return None
        cuts.append(int(p))
    if cuts and not measure.cutoffs:
        return None
    return measure, cuts


def parse_trec_measures(specs: List[str]) -> List[str]:
    """trec_eval ``-m`` specs (``map``, ``P.5,10``, ``ndcg_cut.10``; ``P`` alone = its default
    cutoffs; ``all_trec`` = every measure) -> output names, without repeats, in trec_eval's
    line order (``trec_sort_key``), whatever the order of the specs.

    >>> parse_trec_measures(["ndcg_cut.10", "P.10,5", "map"])
    ['map', 'P_5', 'P_10', 'ndcg_cut_10']
    """
    out: List[str] = []
    errors: List[str] = []
    expanded: List[str] = []
    for spec in specs:
        expanded.extend(TREC_ALL if spec.strip() == "all_trec" else [spec])
    for spec in expanded:
        parsed = _trec_split(spec)
        if parsed is None:
            close = difflib.get_close_matches(spec.partition(".")[0], list(_TREC_BY_NAME) + ["all_trec"], n=1)
            errors.append("-m: unknown trec_eval measure %r%s; known: %s, all_trec" % (
                spec, "; did you mean %r?" % close[0] if close else "", ", ".join(_TREC_BY_NAME)))
            continue
        measure, cuts = parsed
        cuts = cuts or list(measure.cutoffs)
        for name in ([trec_name(measure, c) for c in cuts] if measure.cutoffs else [measure.name]):
            if name not in out:
                out.append(name)
    if errors:
        raise ScoreError("\n".join(errors))
    return sorted(out, key=trec_sort_key)


def _measure_specs(m_flags: Optional[List[str]], measures: Optional[str]) -> List[str]:
    """``-m`` values, then ``--measures a,b.5,10`` split on commas (a bare number joins the
    spec before it, so ``P.5,10`` survives the split)."""
    specs = list(m_flags or [])
    for part in (measures.split(",") if measures else []):
        if part.strip().isdigit() and specs and "." in specs[-1]:
            specs[-1] += "," + part.strip()
        else:
            specs.append(part.strip())
    return specs


def trec_ref(name: str) -> Optional["MetricRef"]:
    """A gate on one trec_eval measure (``map``, ``ndcg_cut.10`` or ``ndcg_cut_10``), or None."""
    parsed = _trec_split(name)
    if parsed is None or len(parsed[1]) != (1 if parsed[0].cutoffs else 0):
        return None
    measure, cuts = parsed
    key = trec_name(measure, cuts[0] if cuts else None)
    return MetricRef(name, Measure(key, "mean", "higher", measure.description, "qrels, run",
                                   "0 when the topic has no relevant document", None), None)


def trec_plan(names: List[str]) -> List[Tuple[str, str, Optional[float], Optional[int]]]:
    """(name, family, cutoff, integer cutoff) per measure name (cutoffs None for a measure
    without one): trec_query's work on the names, done once per run by trec_evaluate."""
    plan = []
    for name in names:
        family, level = _trec_family(name)
        plan.append((name, family, level, None if level is None else int(level)))
    return plan


def trec_query(ranking: List[str], judged: Dict[str, int], names: List[str],
               plan: Optional[list] = None) -> Dict[str, float]:
    """Every measure of ``names`` for one topic.  ``ranking``: docnos, best first;
    ``judged``: qrels level per docno (>= 1 relevant, 0 judged non-relevant, < 0 unjudged).

    >>> v = trec_query(["a", "b", "c"], {"a": 0, "b": 1, "d": 2}, ["map", "P_2", "bpref", "ndcg_cut_3"])
    >>> v["map"] == (1 / 2) / 2, v["P_2"], v["bpref"] == (1 - 1 / 1) / 2
    (True, 0.5, True)
    """
    rel_total = sum(1 for g in judged.values() if g >= 1)
    nonrel_total = sum(1 for g in judged.values() if g == 0)
    depth = len(ranking)
    positions: List[int] = []    # 0-based ranks of the relevant retrieved documents
    gains: List[int] = []
    points: List[Tuple[int, float]] = []     # (relevant so far, precision) at each relevant retrieved document
    ap = bpref = 0.0
    found = nonrel = 0
    for rank in compress(range(1, depth + 1), map(judged.__contains__, ranking)):   # judged documents only
        level = judged[ranking[rank - 1]]
        if level >= 1:
            found += 1
            ap += found / rank
            points.append((found, found / rank))
            bpref += 1.0 - (min(nonrel, rel_total) / min(rel_total, nonrel_total) if nonrel else 0.0)
            positions.append(rank - 1)
            gains.append(level)
        elif level == 0:
            nonrel += 1
    ideal = ideal_gains(judged.values()) if any(n.startswith("ndcg") for n in names) else []
    upto = partial(hits_at, positions)

    out: Dict[str, float] = {}
    for name, family, level, k in plan or trec_plan(names):
        if family == "num_ret":
            v = float(depth)
        elif family == "num_rel":
            v = float(rel_total)
        elif family == "num_rel_ret":
            v = float(found)
        elif family in ("map", "gm_map"):
            v = ap / rel_total if rel_total else 0.0
        elif family == "iprec_at_recall":     # level L is reached at floor(L * R + 0.5) relevant documents
            need = math.floor(level * rel_total + 0.5)
            v = max((p for f, p in points if f >= need), default=0.0) if rel_total else 0.0
        elif family == "ndcg":              # the whole ranking against the ideal of every relevant document
            v = measure_ndcg(positions, gains, depth, ideal_dcg(ideal, len(ideal)))
        elif family == "Rprec":
            v = upto(rel_total) / rel_total if rel_total else 0.0
        elif family == "bpref":
            v = bpref / rel_total if rel_total else 0.0
        elif family == "recip_rank":
            v = measure_rr(positions)
        elif family == "P":
            v = measure_p(upto(k), k)
        elif family == "recall":
            v = measure_r(upto(k), rel_total)
        elif family == "success":
            v = measure_success(upto(k))
        else:   # ndcg_cut
            v = measure_ndcg(positions, gains, k, ideal_dcg(ideal, k))
        out[name] = v
    return out


def trec_help() -> str:
    """The ``--help`` lines of the trec_eval measures, from TREC_MEASURES."""
    lines = ["trec_eval measures (--qrels/--run; -m NAME or -m NAME.K1,K2; --format trec prints NAME_K):"]
    for m in TREC_MEASURES:
        spec = m.name + (".K (default K: %s)" % ",".join(map(str, m.cutoffs)) if m.cutoffs else "")
        lines.append("  %-30s %s" % (spec, m.description))
    return "\n".join(lines)


def trec_evaluate(gold: "Gold", run: Dict[str, Tuple[List[float], List[str]]],
                  names: List[str], average: str = "all") -> Tuple[Dict[str, Dict[str, float]], Dict[str, float]]:
    """(per topic {name: value} in qrels topic order, "all" {name: value}).

    ``average="all"`` (default, trec_eval -c): every qrels topic counts, a topic the run
    forgot scores 0.  ``"judged"`` (plain trec_eval): only the qrels topics the run has.
    ``run`` is read_run's: each topic's documents already in trec_eval's order."""
    per: Dict[str, Dict[str, float]] = {}
    plan = trec_plan(names)
    for qid, judged in zip(gold.qids, gold.judgments):
        if average == "judged" and qid not in run:
            continue
        per[qid] = trec_query(run.get(qid, ((), []))[1], judged, names, plan)     # read_run's order is trec_eval's
    n = len(per)
    total = {}
    for name in names:
        kind = _TREC_BY_NAME[_trec_family(name)[0]].total
        if kind == "geomean":
            total[name] = math.exp(math.fsum(math.log(max(v[name], GM_FLOOR)) for v in per.values()) / n) if n else 0.0
            continue
        s = math.fsum(v[name] for v in per.values())
        total[name] = s if kind == "sum" else (s / n if n else 0.0)
    return per, total


def trec_metric_entries(per: Dict[str, Dict[str, float]], total: Dict[str, float]) -> Dict[str, dict]:
    """Report ``metrics`` entries for the trec measures (mean with a normal 95% interval)."""
    out = {}
    n = len(per)
    for name, value in total.items():
        values = [v[name] for v in per.values()]
        ci = None if name.startswith("num_") or name == "gm_map" else _normal_ci(math.fsum(values), math.fsum(x * x for x in values), n)
        out[name] = _entry(value, None, n, ci)
    return out


def render_trec(per: Dict[str, Dict[str, float]], total: Dict[str, float], per_query: bool,
                num_q: bool) -> str:
    """trec_eval's output: ``"%-22s\\t%s\\t%.4f"`` lines (counts as integers), per topic
    (sorted as trec_eval sorts them) with ``-q``, then ``all``."""
    lines = []

    def line(name, qid, v):
        lines.append("%-22s\t%s\t%s" % (name, qid, "%d" % v if name.startswith("num_") else "%.4f" % v))

    if per_query:
        for qid in sorted(per):
            for name, v in per[qid].items():
                if _TREC_BY_NAME[_trec_family(name)[0]].per_topic:
                    line(name, qid, v)
    if num_q:
        line("num_q", "all", len(per))
    for name, v in total.items():
        line(name, "all", v)
    return "\n".join(lines) + "\n"


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta (Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 301):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def paired_t(diffs: List[float]) -> Tuple[Optional[float], Optional[float]]:
    """(t, two-sided p) of Student's paired t-test on the differences (scipy's ttest_rel);
    (None, None) with fewer than 2 pairs; t = 0, p = 1 when every difference is 0."""
    n = len(diffs)
    if n < 2:
        return None, None
    mean = math.fsum(diffs) / n
    var = math.fsum((d - mean) ** 2 for d in diffs) / (n - 1)
    if var == 0.0:
        return (0.0, 1.0) if mean == 0.0 else (math.copysign(math.inf, mean), 0.0)
    t = mean / math.sqrt(var / n)
    df = n - 1
    return t, min(1.0, _betainc(df / 2.0, 0.5, df / (df + t * t)))


RANDOMIZATION_EXACT_MAX = 16          # up to 2**16 sign patterns are enumerated
RANDOMIZATION_SAMPLES = 10000         # past that: this many random patterns, seeded
RANDOMIZATION_SEED = 0


def randomization_p(diffs: List[float]) -> Optional[float]:
    """Two-sided p of the paired randomization (sign-flip) test on the mean difference: the
    share of sign patterns whose |mean| is at least the observed one.  Exact (every pattern)
    for up to RANDOMIZATION_EXACT_MAX pairs, else RANDOMIZATION_SAMPLES patterns drawn with
    random.Random(RANDOMIZATION_SEED), the observed one counted (p = (hits + 1) / (samples + 1)):
    deterministic.  None without pairs."""
    n = len(diffs)
    if n == 0:
        return None
    observed = abs(math.fsum(diffs)) - 1e-12 * max(1.0, math.fsum(abs(d) for d in diffs))
    if n <= RANDOMIZATION_EXACT_MAX:
        hits = 0
        for mask in range(1 << n):
            total = math.fsum(-d if mask >> i & 1 else d for i, d in enumerate(diffs))
            hits += abs(total) >= observed
        return hits / float(1 << n)
    rng = random.Random(RANDOMIZATION_SEED)
    hits = 0
    for _ in range(RANDOMIZATION_SAMPLES):
        total = math.fsum(d if rng.random() < 0.5 else -d for d in diffs)
        hits += abs(total) >= observed
    return (hits + 1) / (RANDOMIZATION_SAMPLES + 1)


def trec_per_topic(per: Dict[str, Dict[str, float]]) -> Dict[str, Dict[str, float]]:
    """``{measure: {topic: value}}`` for the report (what a later --baseline pairs against);
    measures that have no per-topic value (gm_map) are left out."""
    out: Dict[str, Dict[str, float]] = {}
    for qid, values in per.items():
        for name, v in values.items():
            if _TREC_BY_NAME[_trec_family(name)[0]].per_topic and not name.startswith("num_"):
                out.setdefault(name, {})[qid] = v
    return out


def trec_significance(cur: Dict[str, Dict[str, float]], base: Any) -> Dict[str, dict]:
    """Per trec measure in both reports' ``trec_per_topic``: the topics paired, the mean
    difference (this run - baseline), the paired t-test (t, p) and the randomization test's p."""
    out: Dict[str, dict] = {}
    if not isinstance(base, dict):
        return out
    for name, values in cur.items():
        old = base.get(name)
        if not isinstance(old, dict):
            continue
        topics = [q for q in values if isinstance(old.get(q), (int, float)) and not isinstance(old.get(q), bool)]
        diffs = [values[q] - float(old[q]) for q in topics]
        t, p = paired_t(diffs)
        out[name] = {"n": len(diffs), "mean_delta": _r(math.fsum(diffs) / len(diffs)) if diffs else None,
                     "t": None if t is None or math.isinf(t) else _r(t), "p_t_test": None if p is None else _r(p),
                     "p_randomization": None if not diffs else _r(randomization_p(diffs))}
    return out
