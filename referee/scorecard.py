"""The weighted scorecard over seed 004's stages: an overall score per run and per item."""
from __future__ import annotations

import difflib
import json
import math
from typing import NamedTuple, Tuple

from .base import ScoreError
from .registry import F_GOLD, F_HMEAS, _BY_NAME, _PAIRED
from .fmt import _fmt_num, _r
from .retrieval import MetricRef
from .inputs import _show
from .names import parse_metric
from .config import _num, gates_doc
from .judge import Scorer

# --------------------------------------------------------------------------- weighted scorecard

# Seed 004's stages and the registry metric that scores each: the one table of the mapping.
# A stage whose metric is not in the registry or was not measured in this run (or, see
# scorecard_gaps, measured on only part of the items it should judge) is left out of
# the overall score and the other weights are renormalized (the report names it).  A metric
# where lower is better scores 1 - value.  Default weights are seed 004's pack defaults; gate
# stages are the ones seed 004 marks is_gate (a stage whose metric a block gate checks is one too).
#: The rank cutoff of the scorecard's retrieval stage (recall@5, seed 002's k), whatever --k
#: says: one trace has one overall score, whoever computes it (make eval passes --k 1,5,10,
#: a plain run --k 5).  Always computed in QA mode; IR mode uses the first --k.
SCORECARD_K = 5


class Stage(NamedTuple):
    name: str
    metric: str       # registry name; "recall@K" means recall@SCORECARD_K (IR mode: the first --k)
    weight: float     # default weight
    gate: bool


STAGES: Tuple[Stage, ...] = (
    Stage("retrieval", "recall@K", 0.10, False),
    Stage("context_relevance", "context_relevance", 0.10, False),
    Stage("faithfulness", "hallucination", 0.20, False),
    Stage("answer_relevance", "answer_relevance", 0.15, False),
    Stage("citation", "chr", 0.15, False),
    Stage("source_policy", "source_policy_compliance", 0.10, True),
    Stage("policy_compliance", "policy_compliance", 0.10, True),
    Stage("rejection_calibration", "rejection_calibration", 0.10, False),
)
STAGE_ALIASES = {"groundedness": "faithfulness"}
# Issue 29: with [scorer] grounding = "sentences" the faithfulness stage scores the metric
# faithfulness (sentence grounding); with "strict" (default) it scores 1 - hallucination.
STAGE_GROUNDING = {"sentences": {"faithfulness": "faithfulness"}}


def stages_for(grounding: str = "strict") -> Tuple[Stage, ...]:
    """STAGES with the faithfulness stage's metric chosen by [scorer] grounding."""
    swap = STAGE_GROUNDING.get(grounding, {})
    return tuple(s._replace(metric=swap.get(s.name, s.metric)) for s in STAGES)
WEIGHT_SUM_TOLERANCE = 0.05     # |sum - 1| above this: normalized with a warning
WEIGHT_MAX = 0.60               # one stage above this (after normalization): error
WEIGHT_LIMIT = 1e6              # a weight above this is refused (their sum must stay finite)
GATE_STAGE_MIN = 0.05           # a gate stage below this: warning


def _stage_ref(stage: Stage) -> Optional[MetricRef]:
    """The stage's metric, or None when the registry does not (yet) have it."""
    if stage.metric == "recall@K":
        return parse_metric("recall@k")
    m = _BY_NAME.get(stage.metric)
    return MetricRef(stage.metric, m, None) if m is not None and "@K" not in m.name else None


def _stage_name(name: str) -> str:
    name = STAGE_ALIASES.get(name, name)
    if name not in {s.name for s in STAGES}:
        close = difflib.get_close_matches(name, [s.name for s in STAGES] + list(STAGE_ALIASES), n=1, cutoff=0.5)
        raise ScoreError("unknown stage %r%s; stages: %s" % (
            name, "; did you mean %r?" % close[0] if close else "", ", ".join(s.name for s in STAGES)))
    return name


def _weights_from_file(path: str) -> Tuple[Dict[str, float], List[str]]:
    """The ``[weights]`` table of a gates file: stage = weight (stage names or aliases)."""
    doc, lines = gates_doc(path)     # load_gates_file has already read and checked it
    table = doc.get("weights")
    if table is None:
        return {}, []
    loc = "%s:%d" % (path, lines.get(("weights",), 0))
    if not isinstance(table, dict):
        return {}, ["%s: [weights] must be a table of stage = weight, got %s" % (loc, _show(table))]
    return _check_weights(table, lambda k: "%s:%d: [weights]" % (path, lines.get(("weights", k), 0)))


def _check_weights(table: dict, where) -> Tuple[Dict[str, float], List[str]]:
    out, errors = {}, []
    for key, val in table.items():
        try:
            name = _stage_name(str(key))
        except ScoreError as exc:
            errors.append("%s %s" % (where(key), exc))
            continue
        if not _num(val) or not 0 <= val <= WEIGHT_LIMIT:
            errors.append("%s weight of %r must be a number from 0 to %g, got %s"
                          % (where(key), key, WEIGHT_LIMIT, _show(val)))
            continue
        out[name] = float(val)
    return out, errors


def resolve_weights(gates_file: Optional[str], cli: Optional[str], gates) -> Tuple[Dict[str, float], List[str]]:
    """Seed defaults <- the gates file's [weights] <- ``--weights JSON``; validated, normalized.

    Returns (weights summing to 1, warnings).  Errors (exit 2): a negative or non-number
    weight, an unknown stage, all weights 0, one stage above WEIGHT_MAX after normalization.
    Warnings: the sum is off 1 by more than WEIGHT_SUM_TOLERANCE (then normalized), a gate
    stage below GATE_STAGE_MIN."""
    weights = {s.name: s.weight for s in STAGES}
    errors: List[str] = []
    if gates_file is not None:
        got, errs = _weights_from_file(gates_file)
        weights.update(got)
        errors += errs
    if cli is not None:
        try:
            table = json.loads(cli)
        except ValueError as exc:
            table = None
            errors.append("--weights: not JSON (%s), got %s" % (str(exc).split(":")[0], _show(cli)))
        if table is not None and not isinstance(table, dict):
            errors.append("--weights: expected a JSON object of stage: weight, got %s" % _show(table))
        elif table is not None:
            got, errs = _check_weights(table, lambda k: "--weights:")
            weights.update(got)
            errors += errs
    if errors:
        raise ScoreError("\n".join(errors))
    total = math.fsum(weights.values())
    source = "--weights" if cli is not None else ("%s: [weights]" % gates_file if gates_file is not None else "weights")
    if total <= 0:
        raise ScoreError("%s: all stage weights are 0; at least one must be > 0, got %s" % (source, _show(weights)))
    warnings = []
    if abs(total - 1.0) > WEIGHT_SUM_TOLERANCE:
        warnings.append("weights sum to %s, not 1 (tolerance %s); normalized to sum 1"
                        % (_fmt_num(round(total, 4)), _fmt_num(WEIGHT_SUM_TOLERANCE)))
    weights = {k: v / total for k, v in weights.items()}
    heavy = [k for k, v in weights.items() if v > WEIGHT_MAX + 1e-12]
    if heavy:
        raise ScoreError("\n".join("%s: stage %r weighs %s after normalization, above %s: one stage would "
                                   "dominate the overall score" % (source, k, _fmt_num(round(weights[k], 4)),
                                                                   _fmt_num(WEIGHT_MAX))
                                   for k in heavy))
    gated = {g.ref.metric.name for g in gates if g.tier == "block"}
    for s in STAGES:
        if (s.gate or s.metric in gated) and weights[s.name] < GATE_STAGE_MIN - 1e-12:
            warnings.append("weights: gate stage %r weighs %s, below %s: too low for a gate stage"
                            % (s.name, _fmt_num(round(weights[s.name], 4)), _fmt_num(GATE_STAGE_MIN)))
    return weights, warnings


def _oriented(ref: MetricRef, value):
    return None if value is None else (1.0 - value if ref.metric.better == "lower" else value)


def scorecard_gaps(scorer: "Scorer") -> Dict[str, str]:
    """Stage metric -> why the scorecard leaves it out although the metric has a value: its
    value covers only part of the items it should judge (context_relevance without the
    texts of some item's retrieved chunks), so it would stand for a biased subset."""
    lack = sum(getattr(scorer, "context_lack", b""))
    if not lack:
        return {}
    have = sum(1 for v in scorer.context_rel if v == v)
    return {"context_relevance": "not measured: the retrieved chunks' texts are unknown for %d of %d items with a "
                                 "question and retrieved chunks (context_relevance covers only the other %d); give "
                                 "--chunks FILE" % (lack, lack + have, have)}


def scorecard(weights: Dict[str, float], metrics: Dict[str, dict], k0: int,
              gaps: Optional[Dict[str, str]] = None, grounding: str = "strict") -> dict:
    """The run's stage scores and weighted overall score (unmeasured stages renormalized away;
    ``gaps``: metric -> reason for a metric that has a value but is left out, see scorecard_gaps)."""
    stages: Dict[str, dict] = {}
    used = 0.0
    acc = []
    for s in stages_for(grounding):
        ref = _stage_ref(s)
        key = ref.key(k0) if ref else s.metric
        entry = metrics.get(key) if ref else None
        reason = None
        if ref is None:
            reason = "not measured: %r is not a registry metric" % s.metric
        elif ref.metric.kind == "count":
            reason = "not measured: %r is a count, not a score in [0, 1]" % key
        elif entry is None or entry["value"] is None:
            reason = (entry or {}).get("reason") or "not measured: %s was not computed" % key
        elif gaps and key in gaps:
            reason = gaps[key]
        score = None if reason else _oriented(ref, entry["value"])
        stages[s.name] = {"metric": key, "weight": round(weights[s.name], 4), "effective_weight": None,
                          "score": score, "n": entry["n"] if entry and not reason else None, "reason": reason}
        if score is not None and weights[s.name] > 0:
            used += weights[s.name]
            acc.append((s.name, score))
    overall = math.fsum(weights[k] * v for k, v in acc) / used if used else None
    for k, _ in acc:
        stages[k]["effective_weight"] = round(weights[k] / used, 4)
    for st in stages.values():
        st["score"] = _r(st["score"])
    left_out = [k for k, st in stages.items() if st["effective_weight"] is None]
    note = ("stages not measured, left out of the overall score (the other weights renormalized): %s"
            % ", ".join(left_out)) if left_out else "every stage measured"
    return {"overall": _r(overall), "k": k0, "stages": stages, "not_measured": left_out, "note": note}


# issue 20's per-item means: metric -> the Scorer array holding each item's value (NaN: none)
_ITEM_MEANS = {"answer_relevance": "answer_rel", "context_relevance": "context_rel", "faithfulness": "faith"}


class ItemStages:
    """Per-item stage scores and overall score, for the stages the run measured.

    An item's stage score is its verdict on the stage metric (1 or 0 for a rate, oriented so
    higher is better; the per-item value for P/R/nDCG/RR families and for the per-item means
    in ``_ITEM_MEANS``); None when the item is not in the metric's denominator (for a mean:
    the item has no value, e.g. no chunk text) or the metric has no per-item verdict.  The
    item's overall is the weighted mean over its scored stages (renormalized per item)."""

    def __init__(self, scorer: "Scorer", card: dict, weights: Dict[str, float]):
        self.scorer, self.weights = scorer, weights
        self.stages = []
        for s in stages_for(getattr(scorer.rules, "grounding", "strict")):
            if card["stages"][s.name]["effective_weight"] is None:
                continue
            ref = _stage_ref(s)
            self.stages.append((s.name, ref, "recall@K" if ref.metric.name == "recall@K" else ref.metric.name))
        # stages scored from the verdict flags alone give the same answer for equal flags
        self.by_flags = all(pname in _PAIRED for _, _, pname in self.stages)
        self.cache: Dict[int, dict] = {}

    def _score(self, i: int, f: int, ref: MetricRef, pname: str):
        if pname in _ITEM_MEANS:
            v = getattr(self.scorer, _ITEM_MEANS[pname])[i]
            return None if v != v else _oriented(ref, v)     # NaN: the item has no value
        if pname in _PAIRED:
            den, num = _PAIRED[pname]
            if not den(f) or (pname == "hallucination" and not f & F_HMEAS):
                return None
            return _oriented(ref, 1.0 if num(f) else 0.0)
        base = ref.metric.name.split("@")[0]
        if not f & F_GOLD or base not in ("P", "R", "nDCG", "RR", "Success"):
            return None
        sc, k = self.scorer, ref.k if ref.k is not None else self.scorer.k0
        if base == "RR":
            return sc.rr[i] if "@" not in ref.metric.name else sc.rrk[k][i]
        return {"P": lambda: sc.hits[k][i] / k, "R": lambda: sc.rec[k][i], "nDCG": lambda: sc.ndcg[k][i],
                "Success": lambda: 1.0 if sc.hits[k][i] else 0.0}[base]()

    def __call__(self, i: int) -> dict:
        f = self.scorer.flags[i]
        if self.by_flags:
            hit = self.cache.get(f)
            if hit is None:
                hit = self.cache[f] = self._card(i, f)
            return {"stages": dict(hit["stages"]), "overall": hit["overall"]}
        return self._card(i, f)

    def _card(self, i: int, f: int) -> dict:
        scores = {name: self._score(i, f, ref, pname) for name, ref, pname in self.stages}
        used = [(self.weights[k], v) for k, v in scores.items() if v is not None and self.weights[k] > 0]
        total = math.fsum(w for w, _ in used)
        overall = math.fsum(w * v for w, v in used) / total if total else None
        return {"stages": {k: _r(v) for k, v in scores.items()}, "overall": _r(overall)}
