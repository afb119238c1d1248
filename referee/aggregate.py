"""Aggregation: the measures of the registry carried out over a set of items (rates and means
with intervals, quantiles, counts); categories and failure modes."""
from __future__ import annotations

import math
from collections import Counter
from itertools import compress, filterfalse

from .base import _GROUNDING
from .registry import (FLAG_LETTERS, F_ANS, F_CONT, F_CUTOFF, F_DEC, F_DECOK, F_EXPREF, F_GOLD,
    F_GOLDRET, F_HALL, F_HIT, F_NOLAB, F_NOTRET, F_OKCLAR, F_OKCONF, F_OKDOCS, F_OKSTALE, F_POLV,
    F_REQCLAR, F_REQCONF, F_REQDOCS, F_REQSTALE, F_SHIP, F_SRCV, F_TRACE, F_UNSUP, NOT_COMPUTED, REGISTRY,
    REPORT_ORDER, Measure)
from .stats import _counted_sums, _entry, _normal_ci, _sample_ci, wilson
from .retrieval import measure_p
from .names import parse_metric

# --------------------------------------------------------------------------- aggregation
#
# aggregate() asks every measure of the run (REPORT_ORDER, families at every cutoff) for its
# entry over the items ``idx``; how a measure is summed follows from what it reads (its
# ``items`` predicates on the flags, or its ``values``) and its ``kind``.  _Items holds what
# several measures share (the flags counted, the items with gold citations, ...), computed once.

ANSWER_METRICS = tuple(m.name for m in REGISTRY if m.group == 2)
EXTRA_METRICS = tuple(m.name for m in REGISTRY if m.group == 1)
_SKIPPED = "skipped: needs gold labels (reference-free mode: no --gold, or gold rows without labels)"


def aggregate(scorer: Scorer, idx, trec: bool, memo: Optional[dict] = None) -> Dict[str, dict]:
    """Every measure this run computes (families at every k) over the items ``idx``; unrounded.
    IR mode (``trec``) has the rank measures only; a measure whose ``needs`` the run did not
    compute is left out.  ``memo``: a dict the calls of one run share (the whole gold set first,
    then its categories), so that a per-item value no item has is not looked for again."""
    items = _Items(scorer, idx, {} if memo is None else memo)
    out: Dict[str, dict] = {}
    for m in REPORT_ORDER:
        if (trec and not m.ir) or (m.needs and m.needs not in scorer.needs):
            continue
        if "@K" not in m.name:
            out[m.name] = items.entry(m, None)
            continue
        for k in scorer.ks:
            out[m.name.replace("@K", "@%d" % k)] = items.entry(m, k)
    if not trec and scorer.gold.unlabelled:
        _skip_gold_metrics(out)
    return out


def not_computed(scorer: Scorer) -> Dict[str, dict]:
    """The entries of the measures this run did not compute (their ``needs`` not asked for):
    the scorecard says why a stage that weighs one is left out."""
    return {m.name: _entry(None, None, 0, None, NOT_COMPUTED % m.name)
            for m in REGISTRY if m.needs and m.needs not in scorer.needs and "@K" not in m.name}


class _Items:
    """The items of one aggregate() call, and what several measures read of them."""

    def __init__(self, scorer: Scorer, idx, memo: dict):
        self.scorer, self.idx, self.memo = scorer, idx, memo
        flags = scorer.flags
        self.whole = idx == range(len(flags))      # every item: the arrays are read as they are
        self.combos = Counter(flags if self.whole else map(flags.__getitem__, idx))   # each distinct flags value, counted
        self.subsets: Dict[str, list] = {}
        self.hits: Dict[int, Counter] = {}     # k -> how many items have each number of hits (P@K, Success@K)
        self.vals: Dict[str, list] = {}

    def entry(self, m: Measure, k: Optional[int]) -> dict:
        if m.values in ("", "seed_rec") and m.items is not None:
            return self._flags(m, k)
        if m.over == "gold":
            return self._ranks(m, k)
        return self._values(m)

    def subset(self, over: str) -> list:
        """The items with gold citations ("gold") or answerable ("answerable"), in order."""
        got = self.subsets.get(over)
        if got is None:
            bit = F_GOLD if over == "gold" else F_ANS
            flags = self.scorer.flags
            got = self.subsets[over] = list(compress(self.idx, map(bit.__and__, flags if self.whole else
                                                                    map(flags.__getitem__, self.idx))))
        return got

    def count(self, den, num) -> Tuple[int, int]:
        """(items meeting ``num`` among those meeting ``den``, items meeting ``den``)."""
        n = c = 0
        for f, cnt in self.combos.items():
            if den(f):
                n += cnt
                if num(f):
                    c += cnt
        return c, n

    def unmeasured(self, m: Measure, n: int) -> Optional[str]:
        """Why ``m`` has no value although items entered it (``requires``, ``lacks``), or None."""
        sc = self.scorer
        if m.requires and not getattr(sc, m.requires[0]):
            return m.requires[1]
        missing = getattr(sc, m.lacks[0]) if m.lacks else None
        if missing:
            lack = [i for i in self.idx if i in missing]
            if lack:
                return m.lacks[1] % {"lack": len(lack), "n": n, "qid": sc.gold.qids[lack[0]], "chunk": missing[lack[0]]}
        return None

    def _flags(self, m: Measure, k: Optional[int]) -> dict:
        """A yes/no verdict per item: a rate (Wilson interval) or a count."""
        if m.values == "seed_rec":       # seed 002's recall at cutoff k, over the answerable items
            aidx = self.subset(m.over)
            c, n = sum(map(self.scorer.seed_rec[k].__getitem__, aidx)), len(aidx)
        else:
            c, n = self.count(*m.items)
        if m.kind == "count":
            return _entry(c, c, n, None) if n else _entry(None, None, 0, None, m.why_empty)
        reason = self.unmeasured(m, n)
        if reason is None and not n and m.empty is None:
            reason = m.why_empty
        if reason is not None:
            return _entry(None, c, n, None, reason)
        return _entry(c / n if n else m.empty, c, n, wilson(c, n))

    def _ranks(self, m: Measure, k: Optional[int]) -> dict:
        """A rank measure over the items with gold citations: a mean (normal interval), or
        Success@K's rate; P@K and Success@K from the items counted by their number of hits."""
        gidx = self.subset("gold")
        ng = len(gidx)
        if ng == 0:
            return _entry(None, None, 0, None, m.why_empty)
        if m.values == "hits":
            hits = self.hits.get(k)
            if hits is None:
                hits = self.hits[k] = Counter(map(self.scorer.hits[k].__getitem__, gidx))
            if m.kind == "rate":
                c = ng - hits[0]        # measure_success: 1 for hits > 0
                return _entry(c / ng, c, ng, wilson(c, ng))
            total, sq = _counted_sums({measure_p(h, k): c for h, c in hits.items()})
            return _entry(total / ng, None, ng, _normal_ci(total, sq, ng))
        arr = getattr(self.scorer, m.values)
        vals = list(map((arr if k is None else arr[k]).__getitem__, gidx))
        total = math.fsum(vals)
        return _entry(total / ng, None, ng, _sample_ci(vals, total))

    def _values(self, m: Measure) -> dict:
        """A per-item value (NaN: none): a mean, a quantile, or a rate of the items whose flags
        have ``m.hit`` among those with a value."""
        vals = self.vals.get(m.values)
        if vals is None:
            arr = getattr(self.scorer, m.values)
            if self.memo.get(m.values) is False:     # no item of the run has a value
                vals = []
            elif self.whole:
                vals = list(filterfalse(math.isnan, arr))
                self.memo[m.values] = bool(vals)
            else:
                vals = list(filterfalse(math.isnan, map(arr.__getitem__, self.idx)))
            self.vals[m.values] = vals
        n = len(vals)
        reason = self.unmeasured(m, n)
        if reason is not None:
            return _entry(None, None, n, None, reason)
        if not n:
            hint = m.hint and not getattr(self.scorer, m.hint[0])
            return _entry(None, None, 0, None, m.why_empty + (m.hint[1] if hint else ""))
        if m.kind == "quantile":
            srt = self.vals.get("sorted " + m.values)
            if srt is None:
                srt = self.vals["sorted " + m.values] = sorted(vals)
            return _entry(nearest_rank(srt, m.quantile), None, n, None)
        if m.kind == "rate":
            arr, flags = getattr(self.scorer, m.values), self.scorer.flags
            c = sum(1 for i in self.idx if flags[i] & m.hit and arr[i] == arr[i])
            return _entry(c / n, c, n, wilson(c, n))
        total = math.fsum(vals)
        return _entry(total / n, None, n, _sample_ci(vals, total) if m.ci else None)


def nearest_rank(sorted_values: List[float], p: float) -> float:
    """The ceil(p * n)-th smallest value (1-based; p in (0, 1]); the list must be non-empty."""
    return sorted_values[max(1, math.ceil(p * len(sorted_values) - 1e-9)) - 1]


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
