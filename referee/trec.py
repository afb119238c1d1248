"""trec_eval's measures (TREC mode: qrels and a run) and their names."""
from __future__ import annotations

import difflib
import math
import random
import re
from functools import partial
from itertools import compress
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from .base import ScoreError, Z95
from .registry import Measure
from .fmt import _r
from .stats import _entry, _normal_ci
from .retrieval import (MetricRef, hits_at, ideal_dcg, ideal_gains, measure_ndcg, measure_p,
    measure_r, measure_rr, measure_success, relevant_positions)
from .treccalc import TopicRels, extra_measure

# --------------------------------------------------------------------------- trec_eval measures
#
# With --qrels/--run the scorer also computes trec_eval's own measures under trec_eval's names
# (``-m map -m ndcg_cut.10``, ``--measures map,P.5``) and can print them as trec_eval does
# (``--format trec``: ``measure<TAB>qid|all<TAB>value``, ``-q`` adds one block per query).
# Conventions are trec_eval's: a document is relevant when its level is >= 1 (-l N: >= N), the
# ranking is score descending then docno descending (-M N keeps its first N), every qrels
# topic counts (a topic the run forgot scores 0: trec_eval -c, which -c and --average all
# ask for and is the default), "all" is the mean over topics (the sum for the num_* counts,
# the geometric mean for gm_*).  Every measure of trec_eval 10.0's ``-m all_trec`` is here;
# its output equals trec_eval's expected outputs (tests/data/trec_eval_test) line for line.


class TrecMeasure(NamedTuple):
    """One trec_eval measure: its name, default cutoffs (() = none), how "all" is formed
    ("mean", "sum", "geomean": trec_eval's geometric mean with each value floored at GM_FLOOR,
    "text": runid, "count": num_q, "none": relstring, printed per topic only), a one-line
    description, whether -q prints it per topic, its parameters ("" none; "cut": integer
    cutoffs, NAME_K; "level": decimal cutoffs, NAME_0.20; "list": numbers, "pairs":
    level=gain, both printed NAME_<parameters as given>), a "list" measure's default numbers,
    and the direction of a bare gate on it."""
    name: str
    cutoffs: Tuple[float, ...]
    total: str
    description: str
    per_topic: bool = True
    param: str = ""
    defaults: Tuple[float, ...] = ()
    better: str = "higher"


_TREC_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_RECALL_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_R_MULTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
GM_FLOOR = 0.00001                      # trec_eval's MIN_GEO_MEAN
_GAINS = " (gains: the levels, or level=gain parameters, e.g. NAME.1=3,2=9)"
T = TrecMeasure
#: The registry of trec_eval measures, in trec_eval 10.0's own output order (its measure
#: table): lines are printed in this order whatever the order of -m.
TREC_MEASURES: Tuple[TrecMeasure, ...] = (
    T("runid", (), "text", "the run's tag (the 6th field of its last line), all only", per_topic=False),
    T("num_q", (), "count", "topics evaluated (every qrels topic with --average all), all only", per_topic=False),
    T("num_ret", (), "sum", "documents retrieved"),
    T("num_rel", (), "sum", "relevant documents in the qrels (level >= 1, or -l)"),
    T("num_rel_ret", (), "sum", "relevant documents retrieved"),
    T("map", (), "mean", "average precision: the sum of the precision at the rank of each "
      "relevant retrieved document / num_rel (0 when num_rel is 0)"),
    T("gm_map", (), "geomean", "geometric mean over topics of average precision, each floored "
      "at 0.00001 (all only, as trec_eval)", per_topic=False),
    T("Rprec", (), "mean", "precision after num_rel documents (0 when num_rel is 0)"),
    T("bpref", (), "mean", "binary preference: mean over the relevant documents of 1 - "
      "min(judged non-relevant ranked above it, R) / min(R, N); unretrieved ones add 0"),
    T("recip_rank", (), "mean", "1 / rank of the first relevant document, 0 when none is retrieved"),
    T("iprec_at_recall", _RECALL_LEVELS, "mean", "interpolated precision at recall level L (0 to 1): "
      "the highest precision at any rank holding at least floor(L * num_rel + 0.5) relevant "
      "documents (trec_eval's rounding), 0 when none", param="level"),
    T("P", _TREC_CUTS, "mean", "relevant documents in the top K / K", param="cut"),
    T("relstring", (), "none", "the levels of the first N (default 10) documents, one character each "
      "(0-9, > above 9, - not in the qrels, . unjudged), per topic only", param="list", defaults=(10.0,)),
    T("recall", _TREC_CUTS, "mean", "relevant documents in the top K / num_rel (0 when num_rel is 0)",
      param="cut"),
    T("infAP", (), "mean", "inferred average precision (Yilmaz and Aslam) for sampled judgments"),
    T("gm_bpref", (), "geomean", "geometric mean over topics of bpref, each floored at 0.00001 (all only)",
      per_topic=False),
    T("Rprec_mult", _R_MULTS, "mean", "precision after int(M * num_rel + 0.9) documents", param="level"),
    T("utility", (), "mean", "p1 * relevant retrieved + p2 * non-relevant retrieved + p3 * relevant not "
      "retrieved + p4 * (-relevant not retrieved - non-relevant retrieved); default 1,-1,0,0",
      param="list", defaults=(1.0, -1.0, 0.0, 0.0)),
    T("11pt_avg", (), "mean", "interpolated precision averaged over the recall levels 0, 0.1, ..., 1 "
      "(or the numbers given), a level reached at lround(L * num_rel) relevant documents",
      param="list", defaults=_RECALL_LEVELS),
    T("binG", (), "mean", "mean over the relevant documents of 1 / log2(2 + non-relevant ranked above)"),
    T("G", (), "mean", "each document's gain / log2(2 + ideal gain so far - gain so far), summed, / the "
      "ideal total gain" + _GAINS, param="pairs"),
    T("ndcg", (), "mean", "sum of level / log2(rank + 1) over the whole ranking, divided by the "
      "same for the ideal ordering of the qrels (0 when nothing is relevant)" + _GAINS, param="pairs"),
    T("ndcg_rel", (), "mean", "nDCG averaged over the relevant documents (an unretrieved one: the "
      "nDCG of the whole ranking)" + _GAINS, param="pairs"),
    T("Rndcg", (), "mean", "nDCG averaged at the ranks where the ideal gain changes" + _GAINS, param="pairs"),
    T("ndcg_cut", _TREC_CUTS, "mean", "sum of level / log2(rank + 1) over the top K, divided "
      "by the same for the ideal ordering of the qrels (0 when nothing is relevant)", param="cut"),
    T("map_cut", _TREC_CUTS, "mean", "average precision over the top K", param="cut"),
    T("relative_P", _TREC_CUTS, "mean", "relevant documents in the top K / min(K, num_rel)", param="cut"),
    T("success", (1, 5, 10), "mean", "1 when a relevant document is in the top K, else 0", param="cut"),
    T("set_P", (), "mean", "relevant retrieved / retrieved"),
    T("set_relative_P", (), "mean", "relevant retrieved / min(retrieved, num_rel)"),
    T("set_recall", (), "mean", "relevant retrieved / num_rel"),
    T("set_map", (), "mean", "relevant retrieved squared / (retrieved * num_rel)"),
    T("set_F", (), "mean", "(x + 1) P R / (x P + R) of the retrieved set, x 1 by default", param="list",
      defaults=(1.0,)),
    T("num_nonrel_judged_ret", (), "sum", "judged non-relevant documents retrieved"),
    T("rbp", (), "mean", "rank-biased precision (1 - p) sum gain p^(rank - 1), p 0.9 (rbp.p=0.95)" + _GAINS,
      param="pairs"),
    T("rbp_resid", (), "mean", "rbp's residual: p^retrieved + (1 - p) sum over the unjudged retrieved of "
      "p^(rank - 1), 0 when all are judged", param="pairs", better="lower"),
    T("unj", (5, 10, 20), "mean", "documents in the top K the qrels do not judge / K", param="cut",
      better="lower"),
)
del T
_TREC_BY_NAME = {m.name: m for m in TREC_MEASURES}
_TREC_ORDER = {m.name: i for i, m in enumerate(TREC_MEASURES)}
_BY_LENGTH = sorted(_TREC_BY_NAME, key=len, reverse=True)
#: trec_eval's nicknames for sets of measures.
TREC_NICKNAMES: Dict[str, Tuple[str, ...]] = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P"),
    "all_trec": tuple(m.name for m in TREC_MEASURES),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
}
#: trec_eval's default (no -m): its "official" measures.
TREC_DEFAULT = TREC_NICKNAMES["official"]
#: -m all_trec: every measure above with its default cutoffs.
TREC_ALL = TREC_NICKNAMES["all_trec"]
#: Measures computed by trec_query itself (the others: treccalc.extra_measure).
_CORE = frozenset(("num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
                   "iprec_at_recall", "P", "recall", "ndcg_cut", "success"))


def _float_param(measure: TrecMeasure) -> bool:
    return measure.param == "level"


def trec_name(measure: TrecMeasure, cut: Optional[float]) -> str:
    """The output name: ``P_5``, ``iprec_at_recall_0.10``, ``map``."""
    if cut is None:
        return measure.name
    return "%s_%.2f" % (measure.name, cut) if _float_param(measure) else "%s_%d" % (measure.name, cut)


def _split_output_name(name: str) -> Tuple[Optional[str], str]:
    """``ndcg_cut_10`` -> (ndcg_cut, "10"); ``utility_2,-1,0,0`` -> (utility, "2,-1,0,0"): the
    longest measure name the output name starts with, and the rest; (None, "") if none."""
    for fam in _BY_LENGTH:
        if name.startswith(fam + "_") and len(name) > len(fam) + 1 and _TREC_BY_NAME[fam].param:
            return fam, name[len(fam) + 1:]
    return None, ""


def _trec_family(name: str) -> Tuple[str, Any]:
    """``P_5`` -> (P, 5); ``iprec_at_recall_0.10`` -> (iprec_at_recall, 0.1); ``map`` -> (map,
    None); ``utility_2,-1,0,0`` -> (utility, "2,-1,0,0")."""
    got = _FAMILY_OF.get(name)
    if got is None:
        got = (name, None)
        if name not in _TREC_BY_NAME:
            fam, tail = _split_output_name(name)
            if fam is not None:
                kind = _TREC_BY_NAME[fam].param
                got = (fam, float(tail) if kind in ("cut", "level") else tail)
        _remember(name, got)
    return got


def _remember(name: str, got: Tuple[str, Any]) -> None:
    if len(_FAMILY_OF) < 4096:         # names come from -m and the registry: few
        _FAMILY_OF.setdefault(name, got)


_FAMILY_OF: Dict[str, Tuple[str, Any]] = {}


def trec_sort_key(name: str) -> Tuple[int, float]:
    """trec_eval's line order: the measure's place in TREC_MEASURES, then its cutoff."""
    family, cut = _trec_family(name)
    return _TREC_ORDER.get(family, len(_TREC_ORDER)), cut if isinstance(cut, (int, float)) else -1.0


_NUMBER = r"[-+]?(?:[0-9]{1,12}(?:\.[0-9]{0,12})?|\.[0-9]{1,12})"


def _numbers(text: str) -> Optional[Tuple[float, ...]]:
    """``"1,-1,0,0"`` -> (1.0, -1.0, 0.0, 0.0); None when a part is not a plain decimal number."""
    parts = text.split(",")
    if not all(re.fullmatch(_NUMBER, p) for p in parts):
        return None
    return tuple(float(p) for p in parts)


def _pairs(text: str) -> Optional[Tuple[Tuple[Any, float], ...]]:
    """``"1=3,2=9,p=0.95"`` -> ((1, 3.0), (2, 9.0), ("p", 0.95)); None when malformed or a key repeats."""
    out = []
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or not re.fullmatch(_NUMBER, value) or not re.fullmatch(r"[0-9]{1,6}|p", key):
            return None
        out.append((key if key == "p" else int(key), float(value)))
    return tuple(out) if len({k for k, _ in out}) == len(out) else None


def _list_ok(measure: TrecMeasure, values: Optional[Tuple[float, ...]]) -> bool:
    """The numbers a "list" measure takes: utility 4, set_F 1 (>= 0), relstring 1 (0 to 10000),
    11pt_avg 1 to 100 recall levels from 0 to 1."""
    if values is None:
        return False
    if measure.name == "utility":
        return len(values) == 4
    if measure.name == "11pt_avg":
        return 1 <= len(values) <= 100 and all(0.0 <= v <= 1.0 for v in values)
    return len(values) == 1 and 0.0 <= values[0] <= (10000.0 if measure.name == "relstring" else 1e6)


def _cutoffs(measure: TrecMeasure, params: str) -> Optional[List[float]]:
    """The cutoffs of ``P.5,10`` (integers from 1, a fraction dropped as trec_eval does:
    23.4 -> 23) or ``iprec_at_recall..1,.5`` (decimals: recall levels 0 to 1, Rprec_mult's
    multiples 0 to 1000); None when one is malformed."""
    cuts: List[float] = []
    for p in params.split(","):
        if measure.param == "level":
            rx = r"(?:0|1)?(?:\.[0-9]{1,6})?" if measure.name == "iprec_at_recall" else r"[0-9]{0,4}(?:\.[0-9]{1,6})?"
            if not re.fullmatch(rx, p) or p in ("", "."):
                return None
            v = float(p)
            if v > (1.0 if measure.name == "iprec_at_recall" else 1000.0):
                return None
            cuts.append(v)
        elif re.fullmatch(r"[1-9][0-9]{0,5}(?:\.[0-9]*)?", p):
            cuts.append(int(p.partition(".")[0]))
        else:
            return None
    return cuts


def _trec_split(spec: str):
    """``"P.5,10"`` -> (P, [5, 10], ""); ``"P_5"`` -> (P, [5], ""); ``"map"`` -> (map, [], "");
    ``"iprec_at_recall..10,.5"`` -> (iprec_at_recall, [0.1, 0.5], ""); ``"utility.2,-1,0,0"`` ->
    (utility, [], "2,-1,0,0"); ``"ndcg.1=3,2=9"`` -> (ndcg, [], "1=3,2=9"); None when ``spec``
    names no measure of TREC_MEASURES or its parameters are not the measure's."""
    spec = spec.strip()
    name, dot, params = spec.partition(".")
    measure = _TREC_BY_NAME.get(name)
    if measure is None:                     # the output spelling: P_5, utility_2,-1,0,0
        fam, params = _split_output_name(spec)
        if fam is None:
            return None
        measure, dot = _TREC_BY_NAME[fam], "."
    if dot and not params or params and not measure.param:
        return None
    if not params:
        return measure, [], ""
    if measure.param in ("cut", "level"):
        cuts = _cutoffs(measure, params)
        return None if cuts is None else (measure, cuts, "")
    ok = _pairs(params) is not None if measure.param == "pairs" else _list_ok(measure, _numbers(params))
    return (measure, [], params) if ok else None


def _unknown(spec: str) -> str:
    close = difflib.get_close_matches(spec.partition(".")[0], list(_TREC_BY_NAME) + list(TREC_NICKNAMES), n=1)
    measure = _TREC_BY_NAME.get(spec.strip().partition(".")[0])
    hint = ""
    if measure is not None and measure.param in ("cut", "level"):
        hint = " (%s takes %s cutoffs, e.g. %s.%s)" % (measure.name, "decimal" if measure.param == "level"
                                                    else "integer", measure.name, "0.2,0.5" if measure.param
                                                    == "level" else "5,10")
    elif measure is not None and measure.param:
        hint = " (%s takes %s)" % (measure.name, "level=gain pairs, e.g. %s.1=1,2=3" % measure.name
                                   if measure.param == "pairs" else "numbers: %s" % trec_help_params(measure))
    elif measure is not None:
        hint = " (%s takes no parameters)" % measure.name
    return "-m: unknown trec_eval measure %r%s%s; known: %s, %s" % (
        spec, "; did you mean %r?" % close[0] if close and measure is None else "", hint,
        ", ".join(_TREC_BY_NAME), ", ".join(TREC_NICKNAMES))


def trec_help_params(measure: TrecMeasure) -> str:
    return ",".join("%g" % v for v in measure.defaults)


def parse_trec_measures(specs: List[str]) -> List[str]:
    """trec_eval ``-m`` specs (``map``, ``P.5,10``, ``ndcg_cut.10``, ``utility.2,-1,0,0``; a
    nickname: ``official``, ``all_trec``, ``set``) -> output names, without repeats, in
    trec_eval's line order (``trec_sort_key``), whatever the order of the specs.  As trec_eval:
    a measure named without parameters has its defaults (``P``: P_5 ... P_1000); parameters
    given replace them (several -m of one cutoff measure add up).

    >>> parse_trec_measures(["ndcg_cut.10", "P.10,5", "map"])
    ['map', 'P_5', 'P_10', 'ndcg_cut_10']
    """
    errors: List[str] = []
    marked = set()
    cuts_of: Dict[str, List[float]] = {}
    text_of: Dict[str, str] = {}
    for spec in specs:
        if spec.strip() in TREC_NICKNAMES:
            marked.update(TREC_NICKNAMES[spec.strip()])
            continue
        parsed = _trec_split(spec)
        if parsed is None:
            errors.append(_unknown(spec))
            continue
        measure, cuts, text = parsed
        marked.add(measure.name)
        if cuts:
            cuts_of.setdefault(measure.name, []).extend(cuts)
        elif text:
            if text_of.setdefault(measure.name, text) != text:
                errors.append("-m: %s is given two sets of parameters, %r and %r; give one" % (
                    measure.name, text_of[measure.name], text))
    if errors:
        raise ScoreError("\n".join(errors))
    out: List[str] = []
    for m in TREC_MEASURES:
        if m.name not in marked:
            continue
        if m.param in ("cut", "level"):
            for c in cuts_of.get(m.name) or m.cutoffs:
                name = trec_name(m, c)
                if name not in out:
                    out.append(name)
                    _remember(name, (m.name, c))
        else:
            out.append(m.name + "_" + text_of[m.name] if m.name in text_of else m.name)
    return sorted(out, key=trec_sort_key)


def _measure_specs(m_flags: Optional[List[str]], measures: Optional[str]) -> List[str]:
    """``-m`` values, then ``--measures a,b.5,10`` split on commas (a part that is a parameter,
    a number or ``level=gain``, joins the spec before it, so ``P.5,10`` and
    ``utility.2,-1,0,0`` survive the split)."""
    specs = list(m_flags or [])
    for part in (measures.split(",") if measures else []):
        param = re.fullmatch(r"\s*(?:%s|[0-9]+=\S*|p=\S*)\s*" % _NUMBER, part)
        if param and specs and "." in specs[-1]:
            specs[-1] += "," + part.strip()
        else:
            specs.append(part.strip())
    return specs


def trec_ref(name: str) -> Optional["MetricRef"]:
    """A gate on one trec_eval measure (``map``, ``ndcg_cut.10`` or ``ndcg_cut_10``), or None
    (runid, num_q and relstring are not values to gate)."""
    parsed = _trec_split(name)
    if parsed is None:
        return None
    measure, cuts, text = parsed
    if measure.total in ("text", "count", "none") or len(cuts) != (1 if measure.param in ("cut", "level") else 0):
        return None
    key = trec_name(measure, cuts[0]) if cuts else measure.name + ("_" + text if text else "")
    return MetricRef(name, Measure(key, "mean", measure.better, measure.description, "qrels, run",
                                   "0 when the topic has no relevant document", None), None)


def trec_plan(names: List[str]) -> List[Tuple[str, str, Optional[float], Optional[int], Any]]:
    """(name, family, cutoff, integer cutoff, parameters) per measure name (cutoffs None for a
    measure without one; parameters: a "list" measure's numbers, a "pairs" measure's pairs):
    trec_query's work on the names, done once per run by trec_evaluate."""
    plan = []
    for name in names:
        family, level = _trec_family(name)
        measure = _TREC_BY_NAME[family]
        param: Any = None
        if measure.param == "list":
            param = _numbers(level) if isinstance(level, str) else measure.defaults
        elif measure.param == "pairs":
            param = _pairs(level) if isinstance(level, str) else ()
        if isinstance(level, str):
            level = None
        plan.append((name, family, level, None if level is None else int(level), param))
    return plan


def trec_query(ranking: List[str], judged: Dict[str, int], names: List[str],
               plan: Optional[list] = None, rel_level: int = 1) -> Dict[str, Any]:
    """Every measure of ``names`` for one topic.  ``ranking``: docnos, best first;
    ``judged``: qrels level per docno (>= ``rel_level`` relevant, 0 judged non-relevant, < 0
    unjudged).  relstring's value is its string; runid and num_q are trec_evaluate's.

    >>> v = trec_query(["a", "b", "c"], {"a": 0, "b": 1, "d": 2}, ["map", "P_2", "bpref", "ndcg_cut_3"])
    >>> v["map"] == (1 / 2) / 2, v["P_2"], v["bpref"] == (1 - 1 / 1) / 2
    (True, 0.5, True)
    """
    rel_total = sum(1 for g in judged.values() if g >= rel_level)
    nonrel_total = sum(1 for g in judged.values() if 0 <= g < rel_level)
    depth = len(ranking)
    positions: List[int] = []    # 0-based ranks of the relevant retrieved documents
    gains: List[int] = []
    points: List[Tuple[int, float]] = []     # (relevant so far, precision) at each relevant retrieved document
    ap = bpref = 0.0
    found = nonrel = 0
    for rank in compress(range(1, depth + 1), map(judged.__contains__, ranking)):   # judged documents only
        level = judged[ranking[rank - 1]]
        if level >= rel_level:
            found += 1
            ap += found / rank
            points.append((found, found / rank))
            bpref += 1.0 - (min(nonrel, rel_total) / min(rel_total, nonrel_total) if nonrel else 0.0)
            positions.append(rank - 1)
            gains.append(level)
        elif level >= 0:
            nonrel += 1
    ideal = ideal_gains(judged.values()) if any(n.startswith("ndcg") for n in names) else []
    if rel_level != 1 and ideal:            # nDCG's gains are the levels >= 1 whatever -l
        gpos, ggains = relevant_positions(ranking, {d: g for d, g in judged.items() if g >= 1})
    else:
        gpos, ggains = positions, gains
    upto = partial(hits_at, positions)
    topic = None
    out: Dict[str, Any] = {}
    for name, family, level, k, param in plan or trec_plan(names):
        if family in ("runid", "num_q"):
            continue
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
        elif family == "ndcg" and not param:  # the whole ranking against the ideal of every relevant document
            v = measure_ndcg(gpos, ggains, depth, ideal_dcg(ideal, len(ideal)))
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
        elif family == "ndcg_cut":
            v = measure_ndcg(gpos, ggains, k, ideal_dcg(ideal, k))
        else:                                 # trec_eval's other measures (treccalc)
            topic = topic or TopicRels(ranking, judged, rel_level)
            v = extra_measure(topic, family, level, k, param)
        out[name] = v
    return out


def trec_help() -> str:
    """The ``--help`` lines of the trec_eval measures, from TREC_MEASURES."""
    lines = ["trec_eval measures (--qrels/--run; -m NAME or -m NAME.K1,K2; --format trec prints NAME_K; "
             "-m official (the default), all_trec, set):"]
    for m in TREC_MEASURES:
        spec = m.name + (".K (default K: %s)" % ",".join("%g" % c for c in m.cutoffs) if m.cutoffs else "")
        extra = " (default %s.%s)" % (m.name, trec_help_params(m)) if m.param == "list" else ""
        lines.append("  %-30s %s%s" % (spec, m.description, extra))
    return "\n".join(lines)


def trec_evaluate(gold: "Gold", run: Dict[str, Tuple[List[float], List[str]]], names: List[str],
                  average: str = "all", rel_level: int = 1,
                  max_docs: Optional[int] = None) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, Any]]:
    """(per topic {name: value} in qrels topic order, "all" {name: value}).

    ``average="all"`` (default, trec_eval -c): every qrels topic counts, a topic the run
    forgot scores 0 (its utility too, as trec_eval).  ``"judged"`` (plain trec_eval): only
    the qrels topics the run has.  ``run`` is read_run's: each topic's documents already in
    trec_eval's order; ``max_docs`` (-M) keeps the first so many of each; ``rel_level`` (-l):
    the least relevant level.  "all" holds runid (the run's ``runid``) and num_q when asked."""
    per: Dict[str, Dict[str, Any]] = {}
    plan = trec_plan(names)
    forgot = [p[0] for p in plan if p[1] == "utility"]
    for qid, judged in zip(gold.qids, gold.judgments):
        got = run.get(qid)
        if got is None and average == "judged":
            continue
        ranking = got[1] if got is not None else []           # read_run's order is trec_eval's
        if max_docs is not None and len(ranking) > max_docs:
            ranking = ranking[:max_docs]
        per[qid] = values = trec_query(ranking, judged, names, plan, rel_level)
        if got is None:
            values.update(dict.fromkeys(forgot, 0.0))
    n = len(per)
    total: Dict[str, Any] = {}
    for name in names:
        kind = _TREC_BY_NAME[_trec_family(name)[0]].total
        if kind == "text":
            total[name] = getattr(run, "runid", "")
        elif kind == "count":
            total[name] = n
        elif kind == "geomean":
            total[name] = math.exp(math.fsum(math.log(max(v[name], GM_FLOOR)) for v in per.values()) / n) if n else 0.0
        elif kind != "none":
            s = math.fsum(v[name] for v in per.values())
            total[name] = s if kind == "sum" else (s / n if n else 0.0)
    return per, total


def trec_metric_entries(per: Dict[str, Dict[str, Any]], total: Dict[str, Any]) -> Dict[str, dict]:
    """Report ``metrics`` entries for the trec measures (mean with a normal 95% interval);
    runid and num_q are not values (the report's counts hold the topics)."""
    out = {}
    n = len(per)
    for name, value in total.items():
        if not isinstance(value, float):
            continue
        values = [v[name] for v in per.values()]
        ci = None if name.startswith("num_") or name.startswith("gm_") else \
            _normal_ci(math.fsum(values), math.fsum(x * x for x in values), n)
        if ci is not None and _trec_family(name)[0] == "utility":    # not within [0, 1]: not clipped
            half = Z95 * math.sqrt(max(0.0, math.fsum(x * x for x in values) / n - value * value)
                                   * n / (n - 1) / n) if n > 1 else 0.0
            ci = [value - half, value + half]
        out[name] = _entry(value, None, n, ci)
    return out


def render_trec(per: Dict[str, Dict[str, Any]], total: Dict[str, Any], per_query: bool) -> str:
    """trec_eval's output: ``"%-22s\\t%s\\t%.4f"`` lines (counts as integers, runid as it is,
    relstring quoted), per topic (sorted as trec_eval sorts them) with ``-q``, then ``all``;
    each block in trec_eval's measure order."""
    lines = []

    def line(name, qid, v):
        if isinstance(v, str):
            text = "'%s'" % v if qid != "all" else v
        else:
            text = "%d" % v if name.startswith("num_") else "%.4f" % v
        lines.append("%-22s\t%s\t%s" % (name, qid, text))

    if per_query:
        for qid in sorted(per):
            values = per[qid]
            for name in sorted(values, key=trec_sort_key):
                if _TREC_BY_NAME[_trec_family(name)[0]].per_topic:
                    line(name, qid, values[name])
    for name in sorted(total, key=trec_sort_key):
        line(name, "all", total[name])
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
            if _TREC_BY_NAME[_trec_family(name)[0]].per_topic and not name.startswith("num_") \
                    and not isinstance(v, str):
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
