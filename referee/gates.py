"""Gates and regressions: each gate checked against the report, deltas and paired tests against
a baseline report."""
from __future__ import annotations

import math

from .base import MAX_ERRORS, ScoreError, _TIER_ORDER
from .registry import _BY_NAME, _PAIRED
from .fmt import _fmt_num, _metric_sort_key, _r
from .inputs import _Errors, JsonLimit, _raw_lines, _show, json_row
from .aggregate import flag_int
from .config import Regression, _num

# --------------------------------------------------------------------------- gates, regression


def check_gates(gates, metrics: Dict[str, dict], k0: int, grounding: str = "strict") -> List[dict]:
    """Each gate against its metric; with [scorer] grounding = "sentences" a hallucination
    gate checks unsupported_answer_rate (issue 29: the grounding check for generated text)."""
    results = []
    for g in gates:
        key = g.ref.key(k0)
        if grounding == "sentences" and key == "hallucination":
            key = "unsupported_answer_rate"
        entry = metrics.get(key)
        value = entry["value"] if entry else None
        reason = None
        if entry is None:
            reason = "not measured: %s was not computed" % key
        elif value is None:
            reason = entry["reason"]
        if g.op is None:    # a monitor gate without a bound: nothing to fail
            ok = True
        else:
            ok = value is not None and (value >= g.threshold if g.op == ">=" else value <= g.threshold)
        if value is not None and not ok:
            reason = "%s = %s, needs %s %s" % (key, _fmt_num(round(value, 4)), g.op, _fmt_num(g.threshold))
        results.append({"gate": g.ref.spelled, "kind": "threshold", "metric": key, "op": g.op,
                        "threshold": g.threshold, "value": _r(value), "pass": ok,
                        "reason": reason, "message": g.message if value is not None and not ok else None,
                        "p_value": None, "worse": None, "better": None, "tier": g.tier})
    return results


def order_by_tier(gate_results: List[dict]) -> List[dict]:
    """Warn gates first, then block, then monitor; file order within a tier (stable sort).
    Regression and slice gates have no tier of their own and block."""
    for g in gate_results:
        g.setdefault("tier", "block")
    return sorted(gate_results, key=lambda g: _TIER_ORDER[g["tier"]])


def blocking_pass(gate_results: List[dict]) -> bool:
    """The run passes when no block gate failed (warn and monitor gates never fail it)."""
    return all(g["pass"] for g in gate_results if g["tier"] == "block")


def exact_paired_p(worse: int, better: int) -> float:
    """Two-sided exact (binomial, p = 1/2) test on the items that flipped (McNemar exact)."""
    n = worse + better
    if n == 0:
        return 1.0
    m = min(worse, better)
    if n <= 1000:
        tail = sum(math.comb(n, i) for i in range(m + 1)) / 2 ** n
    else:   # log space: exact integers of this size would be slow
        logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2)
                for i in range(m + 1)]
        top = max(logs)
        tail = math.exp(top) * math.fsum(math.exp(v - top) for v in logs)
    return min(1.0, 2 * tail)


def _paired_counts(name: str, base_flags: Dict[str, int], cur: Dict[str, int], qids, higher: bool):
    den, num = _PAIRED[name]
    worse = better = 0
    for q in qids:
        b, c = base_flags.get(q), cur.get(q)
        if b is None or c is None or not den(b) or not den(c):
            continue
        vb, vc = bool(num(b)), bool(num(c))
        if vb == vc:
            continue
        if (vb and not vc) == higher:
            worse += 1
        else:
            better += 1
    return worse, better


def load_baseline(path: str) -> dict:
    errors = _Errors(MAX_ERRORS)
    raw = b"".join(r for _, r in _raw_lines(path, errors, "baseline report"))
    if errors.count:
        raise ScoreError(errors.text())
    try:
        data = json_row(raw.decode("utf-8-sig"))
    except JsonLimit as exc:
        raise ScoreError("%s: %s" % (path, exc)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ScoreError("%s: baseline report is not JSON (%s), got a file of another kind" % (path, str(exc).split(":")[0])) from None
    if type(data) is not dict or type(data.get("items")) is not dict or type(data.get("metrics")) is not dict:
        raise ScoreError("%s: not a score_eval report (needs \"metrics\" and \"items\"), got keys %s"
                         % (path, _show(sorted(data) if type(data) is dict else type(data).__name__)))
    items = {}
    for q, s in data["items"].items():
        try:
            items[q] = flag_int(s)
        except (ValueError, TypeError):
            raise ScoreError("%s: item %s has unknown verdict flags, got %s" % (path, _show(q), _show(s))) from None
    data["_flags"] = items
    return data


def _metric_deltas(base: dict, metrics: Dict[str, dict], bflags: Dict[str, int], cur_flags: Dict[str, int],
                   matched: List[str], k0: int) -> Dict[str, dict]:
    """Each metric's baseline value, current value and delta; for the metrics with per-item
    verdicts, the items that got worse and better and the paired exact test's p-value."""
    out_metrics = {}
    for name, entry in metrics.items():
        b = base["metrics"].get(name)
        bv = b.get("value") if isinstance(b, dict) else None
        cv = entry["value"]
        row = {"baseline": bv, "current": _r(cv), "delta": _r(cv - bv) if _num(bv) and _num(cv) else None}
        pname = "recall@K" if name == "recall@%d" % k0 else name
        if pname in _PAIRED and (pname != "recall@K" or base.get("k") == k0):
            higher = _BY_NAME[pname].better == "higher"
            worse, better = _paired_counts(pname, bflags, cur_flags, matched, higher)
            row.update({"worse": worse, "better": better, "p_value": _r(exact_paired_p(worse, better))})
        out_metrics[name] = row
    return out_metrics


def _category_deltas(categories: Dict[str, dict], bcats: dict) -> Dict[str, dict]:
    """Per category (this run's or the baseline's), each metric's baseline, current value and delta."""
    out_cats = {}
    for cat in sorted(set(categories) | set(bcats)):
        cm = categories.get(cat, {}).get("metrics", {})
        bm = bcats.get(cat, {}).get("metrics", {}) if isinstance(bcats.get(cat), dict) else {}
        row = {}
        for name in sorted(set(cm) | set(bm), key=_metric_sort_key):
            cv = cm.get(name, {}).get("value")
            bv = bm.get(name, {}).get("value") if isinstance(bm.get(name), dict) else None
            row[name] = {"baseline": bv, "current": _r(cv),
                         "delta": _r(cv - bv) if _num(bv) and _num(cv) else None}
        out_cats[cat] = row
    return out_cats


def _regression_gates(base: dict, metrics: Dict[str, dict], bflags: Dict[str, int], cur_flags: Dict[str, int],
                      matched: List[str], reg: Regression, k0: int) -> List[dict]:
    """[regression] max_drop: a metric fails when it worsened by more than its margin and the
    paired exact test on the flipped items says so (p < alpha)."""
    gate_results = []
    for ref, margin in reg.max_drop:
        key = ref.key(k0)
        pname = ref.metric.name if "@K" not in ref.metric.name else "recall@K"
        higher = ref.metric.better == "higher"
        cv = metrics.get(key, {}).get("value")
        b = base["metrics"].get(key)
        bv = b.get("value") if isinstance(b, dict) else None
        res = {"gate": "regression:" + key, "kind": "regression", "metric": key, "op": "max_drop",
               "threshold": margin, "value": None, "pass": False, "reason": None, "message": None,
               "p_value": None, "worse": None, "better": None}
        if cv is None or not _num(bv):
            res["reason"] = "not measured: %s missing in %s" % (key, "the baseline" if not _num(bv) else "this run")
        else:
            # The baseline report holds values rounded to 4 decimals: compare like with like.
            cv = round(cv, 4)
            drop = (bv - cv) if higher else (cv - bv)
            worse, better = _paired_counts(pname, bflags, cur_flags, matched, higher)
            p = exact_paired_p(worse, better)
            res.update({"value": _r(drop), "p_value": _r(p), "worse": worse, "better": better})
            res["pass"] = not (drop > margin + 1e-12 and p < reg.alpha)
            if not res["pass"]:
                res["reason"] = ("%s worsened by %s (> %s) and the paired exact test gives p = %s < %s"
                                 % (key, _fmt_num(round(drop, 4)), _fmt_num(margin), _fmt_num(round(p, 4)),
                                    _fmt_num(reg.alpha)))
        gate_results.append(res)
    return gate_results


def _slice_gates(categories: Dict[str, dict], bcats: dict, reg: Regression, k0: int) -> List[dict]:
    """[regression] slices: each slice metric of each named category may drop by at most
    slice_max_drop; a slice new in this run passes, one missing from it fails."""
    gate_results = []
    for cat in reg.slices:
        for ref in reg.slice_metrics:
            key = ref.key(k0)
            cv = categories.get(cat, {}).get("metrics", {}).get(key, {}).get("value")
            bcat = bcats.get(cat) if isinstance(bcats.get(cat), dict) else None
            bv = bcat.get("metrics", {}).get(key, {}).get("value") if bcat else None
            res = {"gate": "slice:%s:%s" % (cat, key), "kind": "slice", "metric": key, "op": "max_drop",
                   "threshold": reg.slice_max_drop, "value": None, "pass": False, "reason": None,
                   "message": None, "p_value": None, "worse": None, "better": None}
            if cat not in categories and bcat is None:
                res["reason"] = "slice %r is in neither this run nor the baseline" % cat
            elif cat not in categories:
                res["reason"] = "slice %r is in the baseline but not in this run" % cat
            elif bcat is None:
                res["pass"], res["reason"] = True, "new slice: not in the baseline"
            elif cv is None or not _num(bv):
                res["reason"] = "not measured: %s[%s] has no value" % (key, cat)
            else:
                higher = ref.metric.better == "higher"
                cv = round(cv, 4)   # the baseline's value is rounded to 4 decimals
                drop = (bv - cv) if higher else (cv - bv)
                res["value"] = _r(drop)
                res["pass"] = drop <= reg.slice_max_drop + 1e-12
                if not res["pass"]:
                    res["reason"] = "%s on slice %r worsened by %s (allowed %s)" % (
                        key, cat, _fmt_num(round(drop, 4)), _fmt_num(reg.slice_max_drop))
            gate_results.append(res)
    return gate_results


def compare(base: dict, path: str, metrics: Dict[str, dict], categories: Dict[str, dict],
            cur_flags: Dict[str, int], reg: Optional[Regression], k0: int) -> Tuple[dict, List[dict]]:
    """Deltas per metric and category, paired exact tests, regression and slice gates.
    ``metrics``/``categories`` are this run's unrounded values; the baseline's are rounded."""
    bflags = base["_flags"]
    matched = [q for q in cur_flags if q in bflags]
    out_metrics = _metric_deltas(base, metrics, bflags, cur_flags, matched, k0)
    bcats = base.get("categories") if isinstance(base.get("categories"), dict) else {}
    out_cats = _category_deltas(categories, bcats)
    gate_results = []
    if reg is not None:
        gate_results = (_regression_gates(base, metrics, bflags, cur_flags, matched, reg, k0)
                        + _slice_gates(categories, bcats, reg, k0))
    summary = {"baseline": path, "matched_items": len(matched),
               "only_in_baseline": sum(1 for q in bflags if q not in cur_flags),
               "only_in_current": len(cur_flags) - len(matched),
               "metrics": out_metrics, "categories": out_cats}
    return summary, gate_results
