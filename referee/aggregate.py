"""Aggregation: per-item verdicts summed into rates and means with intervals, categories and
failure modes."""
from __future__ import annotations

import math
from collections import Counter
from itertools import compress, filterfalse

from .base import _GROUNDING
from .registry import (FLAG_LETTERS, F_ANS, F_ANSOK, F_CONT, F_CUTOFF, F_DEC, F_DECOK, F_EXPREF,
    F_FB, F_FBUSED, F_GOLD, F_GOLDRET, F_HALL, F_HIT, F_HMEAS, F_NOLAB, F_NOTRET, F_OKCLAR,
    F_OKCONF, F_OKDOCS, F_OKSTALE, F_POLV, F_REQCLAR, F_REQCONF, F_REQDOCS, F_REQSTALE, F_SHIP,
    F_SRCV, F_TRACE, F_UNSUP, NOT_COMPUTED, REGISTRY, SEED_ONLY, _BY_NAME, _EXTRA_RATES, _PAIRED)
from .stats import _counted_sums, _entry, _normal_ci, _sample_ci, wilson
from .retrieval import measure_p
from .names import parse_metric

# --------------------------------------------------------------------------- aggregation


def aggregate(scorer: Scorer, idx, trec: bool) -> Dict[str, dict]:
    """Every registry metric (families at every k) over the items ``idx``; unrounded."""
    flags = scorer.flags
    combos = Counter(map(flags.__getitem__, idx))
    out: Dict[str, dict] = {}

    def rate(name: str):
        den, num = _PAIRED[name]
        n = c = 0
        for f, cnt in combos.items():
            if den(f):
                n += cnt
                if num(f):
                    c += cnt
        return c, n

    gidx = list(compress(idx, map(F_GOLD.__and__, map(flags.__getitem__, idx))))
    ng = len(gidx)
    aidx = None   # answerable items, for the seed's recall@K
    hits_at_k: Dict[int, Counter] = {}     # k -> how many items have each number of hits (P@K, Success@K)
    for m in REGISTRY:
        if m.name in EXTRA_METRICS or m.name in ANSWER_METRICS:
            continue
        if m.name in SEED_ONLY or m.name == "recall@K":
            names = [m.name] if m.name != "recall@K" else ["recall@%d" % k for k in scorer.ks]
            for name in names:
                if trec:    # --qrels/--run carry no answers: only retrieval metrics exist
                    continue
                if name.startswith("recall@"):
                    if aidx is None:
                        aidx = list(compress(idx, map(F_ANS.__and__, map(flags.__getitem__, idx))))
                    c, n = sum(map(scorer.seed_rec[int(name[7:])].__getitem__, aidx)), len(aidx)
                    out[name] = _entry(c / n if n else m.empty, c, n, wilson(c, n))
                    continue
                if name == "fallback_used_count":
                    with_field = sum(cnt for f, cnt in combos.items() if f & F_FB)
                    c = sum(cnt for f, cnt in combos.items() if f & F_FBUSED)
                    out[name] = (_entry(c, c, with_field, None) if with_field else
                                 _entry(None, None, 0, None, "not measured: no trace row carries fallback_used"))
                    continue
                c, n = rate(name)
                reason = None
                value = c / n if n else m.empty
                if name == "hallucination":
                    unmeasured = sum(cnt for f, cnt in combos.items() if f & F_SHIP and not f & F_HMEAS)
                    if unmeasured:
                        first = min((i for i in idx if i in scorer.no_text), default=None)
                        where = "" if first is None else " (first: qid %s, chunk %s)" % (
                            scorer.gold.qids[first], scorer.no_text[first])
                        reason = ("not measured: no chunk text for %d of %d shipped claims%s; give the trace "
                                  "cited_chunks or --chunks FILE" % (unmeasured, n, where))
                        value = None
                elif name.startswith("fallback_used_rate") and n == 0:
                    reason = ("not measured: no trace row carries fallback_used" if name == "fallback_used_rate"
                              else "not measured: no answerable item's trace carries fallback_used")
                elif name == "decision_accuracy" and n == 0:
                    reason = "not measured: no item has both gold expected_decision and trace decision"
                elif name == "pass_rate" and n == 0:
                    reason = "not measured: no items"
                out[name] = _entry(value if reason is None else None, c, n,
                                   wilson(c, n) if reason is None else None, reason)
            continue
        # retrieval families over items with gold citations
        base = m.name.split("@")[0]
        ks = [None] if m.name == "RR" else scorer.ks
        for k in ks:
            name = m.name if k is None else "%s@%d" % (base, k)
            if ng == 0:
                out[name] = _entry(None, None, 0, None, "not measured: no item has gold citations")
                continue
            if base in ("P", "Success"):     # hits per item: a few small integers, counted
                hits = hits_at_k.get(k)
                if hits is None:
                    hits = hits_at_k[k] = Counter(map(scorer.hits[k].__getitem__, gidx))
                if base == "Success":
                    c = ng - hits[0]        # measure_success: 1 for hits > 0
                    out[name] = _entry(c / ng, c, ng, wilson(c, ng))
                else:
                    total, sq = _counted_sums({measure_p(h, k): c for h, c in hits.items()})
                    out[name] = _entry(total / ng, None, ng, _normal_ci(total, sq, ng))
                continue
            if base == "R":
                vals = list(map(scorer.rec[k].__getitem__, gidx))
            elif base == "nDCG":
                vals = list(map(scorer.ndcg[k].__getitem__, gidx))
            else:  # RR
                vals = list(map((scorer.rr if k is None else scorer.rrk[k]).__getitem__, gidx))
            total = math.fsum(vals)
            out[name] = _entry(total / ng, None, ng, _sample_ci(vals, total))
    if not trec:
        out.update(_extra_metrics(scorer, idx, combos))
        out.update(_answer_metrics(scorer, idx))
        if scorer.gold.unlabelled:
            _skip_gold_metrics(out)
    return out


ANSWER_METRICS = ("answer_correct_rate", "answer_f1")


def _answer_metrics(scorer: Scorer, idx) -> Dict[str, dict]:
    """Issue 28: answer_correct_rate and answer_f1 over the measured items of ``idx``."""
    flags, f1s = scorer.flags, scorer.answer_f1
    measured = list(compress(idx, map(math.isfinite, map(f1s.__getitem__, idx))))   # NaN: not measured
    n = len(measured)
    if not n:
        why = ("not measured: no shipped item has gold_answers" +
               ("" if scorer.answer_substr else " (gate answer_correct_rate to match gold_claim_substr)"))
        return {name: _entry(None, None, 0, None, why) for name in ANSWER_METRICS}
    c = sum(1 for i in measured if flags[i] & F_ANSOK)
    vals = [f1s[i] for i in measured]
    total = math.fsum(vals)
    return {"answer_correct_rate": _entry(c / n, c, n, wilson(c, n)),
            "answer_f1": _entry(total / n, None, n, _sample_ci(vals, total))}


EXTRA_METRICS = ("faithfulness", "unsupported_answer_rate",
                 "refusal_rate", "partial_refusal_rate", "rejection_calibration", "policy_compliance", "source_policy_compliance",
                 "answer_relevance", "context_relevance", "citation_coverage", "conflict_correct_rate",
                 "staleness_correct_rate", "clarify_correct_rate", "latency_p50", "latency_p95", "cost_per_item")

_PAIRED.update(_EXTRA_RATES)     # per-item yes/no verdicts: --baseline pairs them too
_EMPTY_WHY = {"refusal_rate": "no items", "partial_refusal_rate": "no items", "rejection_calibration": "no item is labelled",
              "citation_coverage": "no gold item lists required_citation_doc_ids",
              "conflict_correct_rate": "no gold item has required_behavior must_surface_conflict",
              "staleness_correct_rate": "no gold item has required_behavior must_detect_staleness",
              "clarify_correct_rate": "no gold item has required_behavior must_clarify"}
_SKIPPED = "skipped: needs gold labels (reference-free mode: no --gold, or gold rows without labels)"


def nearest_rank(sorted_values: List[float], p: float) -> float:
    """The ceil(p * n)-th smallest value (1-based; p in (0, 1]); the list must be non-empty."""
    return sorted_values[max(1, math.ceil(p * len(sorted_values) - 1e-9)) - 1]


def _extra_metrics(scorer: Scorer, idx, combos: Counter) -> Dict[str, dict]:
    """Issue 20's metrics over the items ``idx`` (``combos``: their flags, counted)."""
    out: Dict[str, dict] = {}
    for name, (den, num) in _EXTRA_RATES.items():
        n = c = 0
        for f, cnt in combos.items():
            if den(f):
                n += cnt
                if num(f):
                    c += cnt
        m = _BY_NAME[name]
        if name == "unsupported_answer_rate":
            out[name] = _grounding_entry(scorer, idx, c, n)
        elif name == "policy_compliance" and not scorer.policy_measured:
            out[name] = _entry(None, c, n, None, "not measured: no [policy.*] patterns in the gates file "
                                                 "and no gold policy rejection")
        elif n == 0 and m.empty is None:
            out[name] = _entry(None, 0, 0, None, "not measured: " + _EMPTY_WHY[name])
        else:
            out[name] = _entry(c / n if n else m.empty, c, n, wilson(c, n))
    for name, arr, what in (("answer_relevance", scorer.answer_rel, "no shipped item has a question (q) with content terms"),
                            ("context_relevance", scorer.context_rel, "no item has a question, retrieved chunks and all "
                                                                      "their texts (give --chunks)")):
        if _BY_NAME[name].needs not in scorer.needs:
            out[name] = _entry(None, None, 0, None, NOT_COMPUTED % name)
            continue
        vals = list(filterfalse(math.isnan, map(arr.__getitem__, idx)))     # NaN: not measured
        total = math.fsum(vals)
        out[name] = (_entry(total / len(vals), None, len(vals), _sample_ci(vals, total))
                     if vals else _entry(None, None, 0, None, "not measured: " + what))
    vals = list(filterfalse(math.isnan, map(scorer.faith.__getitem__, idx)))
    total = math.fsum(vals)
    out["faithfulness"] = _grounding_entry(scorer, idx, None, len(vals), total / len(vals) if vals else None,
                                           _sample_ci(vals, total))
    lat = sorted(filterfalse(math.isnan, map(scorer.latency.__getitem__, idx)))
    for name, p in (("latency_p50", 0.50), ("latency_p95", 0.95)):
        out[name] = (_entry(nearest_rank(lat, p), None, len(lat), None) if lat else
                     _entry(None, None, 0, None, "not measured: no trace row carries timings_ms.total"))
    cost = list(filterfalse(math.isnan, map(scorer.cost.__getitem__, idx)))
    out["cost_per_item"] = (_entry(math.fsum(cost) / len(cost), None, len(cost), None) if cost else
                            _entry(None, None, 0, None, "not measured: no trace row carries cost"))
    return {m.name: out[m.name] for m in REGISTRY if m.name in out}


def _grounding_entry(scorer: Scorer, idx, c, n, value=None, ci=None) -> dict:
    """faithfulness (c None) or unsupported_answer_rate: null when grounding was not computed
    or some shipped answer's chunk text is unknown (fail closed, like hallucination)."""
    if not scorer.grounding_on:
        return _entry(None, c, n, None, 'not computed: set [scorer] grounding = "sentences" in the gates file, '
                                        'or gate faithfulness / unsupported_answer_rate (tier = "monitor" to report only)')
    lack = [i for i in idx if i in scorer.ground_no_text]
    if lack:
        return _entry(None, c, n, None, "not measured: no chunk text for %d shipped answers (first: qid %s, chunk %s); "
                      "give the trace cited_chunks or --chunks FILE" % (
                          len(lack), scorer.gold.qids[lack[0]], scorer.ground_no_text[lack[0]]))
    if c is None:
        if not n:
            return _entry(None, None, 0, None, "not measured: no shipped answer has a checked sentence")
        return _entry(value, None, n, ci)
    return _entry(c / n if n else 0.0, c, n, wilson(c, n))


def _skip_gold_metrics(out: Dict[str, dict]) -> None:
    """Reference-free mode: every metric whose registry entry needs gold is skipped, with why
    (answer metrics stay when rows carry gold_answers but no other label, e.g. RAGAS references)."""
    for name in out:
        if name in ANSWER_METRICS and out[name]["n"]:
            continue
        if parse_metric(name).metric.gold:
            out[name] = _entry(None, None, None, None, _SKIPPED)


# Severity order: an item's primary failure mode is its first label in this order.
MODE_ORDER = ("missing_trace", "policy_violation", "source_policy_violation", "training_cutoff_excuse",
              "under_refusal", "false_acceptance", "citation_not_retrieved", "hallucination", "unsupported_answer",
              "retrieval_miss",
              "over_refusal", "false_rejection", "conflict_not_surfaced", "staleness_not_detected",
              "clarification_missed", "required_citation_missing", "citation_miss", "claim_miss",
              "decision_mismatch")


def all_modes(f: int, trec: bool) -> List[str]:
    """Every failure label that applies to an item with flags ``f``, most severe first."""
    out = []
    if not f & F_TRACE:
        out.append("missing_trace")
    if f & F_GOLD and not f & F_GOLDRET and (trec or f & F_ANS):
        out.append("retrieval_miss")      # no gold citation was retrieved at all
    if not trec:
        out += _extra_modes(f)
        if f & F_SHIP:
            if not f & (F_ANS | F_NOLAB):
                out.append("under_refusal")
            if f & F_NOTRET:
                out.append("citation_not_retrieved")
            # issue 29: the label follows [scorer] grounding, like the hallucination gate
            if f & F_HALL and _GROUNDING["mode"] != "sentences":
                out.append("hallucination")
            if f & F_UNSUP:
                out.append("unsupported_answer")
            if f & F_ANS and not f & F_HIT:
                out.append("citation_miss")
            if f & F_ANS and not f & F_CONT:
                out.append("claim_miss")
        elif f & F_ANS:
            out.append("over_refusal")
        if f & F_DEC and not f & F_DECOK:
            out.append("decision_mismatch")
    return sorted(out, key=MODE_ORDER.index)


def _extra_modes(f: int) -> List[str]:
    """Issue 20's failure labels (seed 004's rejection calibration, policies; seed 000's
    decisions for the right reason)."""
    out = []
    if f & F_POLV:
        out.append("policy_violation")
    if f & F_SRCV:
        out.append("source_policy_violation")
    if f & F_CUTOFF:
        out.append("training_cutoff_excuse")
    if not f & F_NOLAB:
        if f & F_SHIP and f & F_EXPREF:
            out.append("false_acceptance")
        if not f & (F_SHIP | F_EXPREF | F_CUTOFF):
            out.append("false_rejection")
    for req, ok, mode in ((F_REQCONF, F_OKCONF, "conflict_not_surfaced"), (F_REQSTALE, F_OKSTALE, "staleness_not_detected"),
                          (F_REQCLAR, F_OKCLAR, "clarification_missed"), (F_REQDOCS, F_OKDOCS, "required_citation_missing")):
        if f & req and not f & ok:
            out.append(mode)
    return out


def failure_mode(f: int, trec: bool) -> Optional[str]:
    """The item's primary failure mode, or None when nothing is wrong with it."""
    labels = all_modes(f, trec)
    return labels[0] if labels else None


def flag_string(f: int) -> str:
    return "".join(ch for bit, ch in enumerate(FLAG_LETTERS) if f >> bit & 1)


def flag_int(s: str) -> int:
    f = 0
    for ch in s:
        pos = FLAG_LETTERS.find(ch)
        if pos < 0:
            raise ValueError(ch)
        f |= 1 << pos
    return f
