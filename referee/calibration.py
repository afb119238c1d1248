"""Judge calibration: agreement of an automatic judge with people's labels (the ``calibrate``
and ``merge-html`` subcommands)."""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections import Counter

from .base import MAX_ERRORS, ScoreError
from .fmt import _fmt_num, _r
from .inputs import _Errors, _jsonl, _show, open_input
from .config import _num
from .outputs import _cell, atomic_write, check_outputs
from .reports import merge_html

# --------------------------------------------------------------------------- judge calibration

CALIBRATE_USAGE = ("score_eval.py calibrate --human H.jsonl --auto A.jsonl [--field NAME] [--bins 0.5] "
                   "[--min-kappa 0.8] [--bootstrap 1000] [--seed 0] [--out FILE]")


def pearson(x: List[float], y: List[float]) -> Optional[float]:
    """Pearson's r; None when either side has no variance (or n < 2)."""
    n = len(x)
    if n < 2:
        return None
    mx, my = math.fsum(x) / n, math.fsum(y) / n
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = math.fsum((a - mx) ** 2 for a in x)
    syy = math.fsum((b - my) ** 2 for b in y)
    if sxx <= 0 or syy <= 0:
        return None
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def midranks(x: List[float]) -> List[float]:
    """Ranks 1..n, tied values sharing the mean of their ranks (as scipy's rankdata 'average')."""
    order = sorted(range(len(x)), key=x.__getitem__)
    ranks = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for t in range(i, j + 1):
            ranks[order[t]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: List[float], y: List[float]) -> Optional[float]:
    """Spearman's rho: Pearson's r of the mid-ranks."""
    return pearson(midranks(x), midranks(y))


def cohen_kappa(a: list, b: list) -> Optional[float]:
    """Cohen's kappa (po - pe) / (1 - pe) on labels; None when pe = 1 (one shared category)."""
    n = len(a)
    if n == 0:
        return None
    po = sum(1 for u, v in zip(a, b) if u == v) / n
    ca, cb = Counter(a), Counter(b)
    pe = math.fsum(ca[k] * cb[k] for k in ca) / (n * n)
    if pe >= 1.0:
        return None
    return (po - pe) / (1 - pe)


def mean_abs_error(x: List[float], y: List[float]) -> Optional[float]:
    return math.fsum(abs(a - b) for a, b in zip(x, y)) / len(x) if x else None


def bin_score(v: float, width: float) -> float:
    """The nearest multiple of ``width`` (halves round up): width 0.5 maps 0.74 -> 0.5, 0.75 -> 1.0."""
    return round(math.floor(v / width + 0.5 + 1e-9) * width, 10)


def _percentile(sorted_vals: List[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default 'linear' method)."""
    pos = (len(sorted_vals) - 1) * q
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def calibration_stats(human: List[float], auto: List[float], width: float, resamples: int, seed: int) -> dict:
    """Pearson, Spearman, Cohen's kappa on binned scores and MAE, each with a percentile
    bootstrap 95% interval from ``resamples`` resamples of the pairs drawn by
    ``random.Random(seed)`` (the same draws for every statistic; resamples on which a
    statistic is undefined are skipped and counted)."""
    hb = [bin_score(v, width) for v in human]
    ab = [bin_score(v, width) for v in auto]
    stats = {"pearson": lambda ix: pearson([human[i] for i in ix], [auto[i] for i in ix]),
             "spearman": lambda ix: spearman([human[i] for i in ix], [auto[i] for i in ix]),
             "kappa": lambda ix: cohen_kappa([hb[i] for i in ix], [ab[i] for i in ix]),
             "mae": lambda ix: mean_abs_error([human[i] for i in ix], [auto[i] for i in ix])}
    n = len(human)
    whole = list(range(n))
    draws: Dict[str, List[float]] = {k: [] for k in stats}
    rng = random.Random(seed)
    for _ in range(resamples if n else 0):
        ix = [rng.randrange(n) for _ in whole]
        for k, fn in stats.items():
            v = fn(ix)
            if v is not None:
                draws[k].append(v)
    out = {}
    for k, fn in stats.items():
        v = fn(whole)
        vals = sorted(draws[k])
        ci = [round(_percentile(vals, 0.025), 4), round(_percentile(vals, 0.975), 4)] if vals else None
        reason = None
        if v is None:
            reason = ("undefined: both raters put every item in one bin" if k == "kappa"
                      else "undefined: a rater gives every item the same score" if n > 1 else "undefined: fewer than 2 items")
        out[k] = {"value": _r(v), "ci": ci, "undefined_resamples": resamples - len(vals) if n else 0, "reason": reason}
    labels = sorted(set(hb) | set(ab))
    out["confusion"] = {"labels": labels, "rows_human_cols_auto": [
        [sum(1 for u, w in zip(hb, ab) if u == a and w == b) for b in labels] for a in labels]}
    return out


def _field_value(row: dict, field: str):
    """``field`` may be dotted (``scorecard.stages.faithfulness``) to reach a nested value."""
    cur = row
    for part in field.split("."):
        if type(cur) is not dict or part not in cur:
            return None
        cur = cur[part]
    return cur


def read_scores(path: str, field: str, key: str, errors: _Errors) -> Tuple[Dict[str, float], int]:
    """{id: score} from a JSONL; true/false count as 1/0; a null or absent score is skipped."""
    out: Dict[str, float] = {}
    lines: Dict[str, int] = {}
    skipped = 0
    for lineno, row in _jsonl(path, errors, []):
        qid = row.get(key)
        if type(qid) is not str or not qid:
            errors.add("%s:%d: %s must be a non-empty string, got %s" % (path, lineno, json.dumps(key), _show(qid)))
            continue
        if qid in lines:
            errors.add("%s:%d: duplicate %s (first on line %d), got %s" % (path, lineno, key, lines[qid], _show(qid)))
            continue
        lines[qid] = lineno
        v = _field_value(row, field)
        if v is None:
            skipped += 1
        elif isinstance(v, bool):
            out[qid] = 1.0 if v else 0.0
        elif _num(v):
            out[qid] = float(v)
        else:
            errors.add("%s:%d: %s must be a number, true/false or null, got %s" % (path, lineno, json.dumps(field), _show(v)))
    return out, skipped


def calibrate(argv: List[str]) -> int:
    """``score_eval.py calibrate``: agreement of an automatic scorer with human labels."""
    ap = argparse.ArgumentParser(prog="score_eval.py calibrate", description=calibrate.__doc__.split(": ", 1)[1])
    ap.add_argument("--human", required=True, help="JSONL of human labels: {qid, <field>: score}")
    ap.add_argument("--auto", required=True, help="JSONL of automatic scores (any scorer; e.g. --items output)")
    ap.add_argument("--field", default="score", help="score field in both files, dotted for nested (default score)")
    ap.add_argument("--human-field", help="score field of --human (default --field)")
    ap.add_argument("--auto-field", help="score field of --auto (default --field), e.g. scorecard.stages.faithfulness")
    ap.add_argument("--key", default="qid", help="field pairing the rows of both files (default qid)")
    ap.add_argument("--bins", type=float, default=0.5, help="bin width for Cohen's kappa: each score goes to the "
                                                            "nearest multiple (default 0.5: bins 0, 0.5, 1)")
    ap.add_argument("--min-kappa", type=float, default=0.8, help="kappa a judge needs to be gateable (default 0.8, seed 004)")
    ap.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the 95%% intervals (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of random.Random for the bootstrap (default 0)")
    ap.add_argument("--out", help="also write the JSON result to this file (atomically)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if not (math.isfinite(args.bins) and args.bins > 0):
        raise ScoreError("calibrate: --bins must be a positive bin width, got %r" % args.bins)
    if not 0 <= args.bootstrap <= 100000:
        raise ScoreError("calibrate: --bootstrap must be between 0 and 100000, got %r" % args.bootstrap)
    errors = _Errors(MAX_ERRORS)
    hf, af = args.human_field or args.field, args.auto_field or args.field
    human, hskip = read_scores(args.human, hf, args.key, errors)
    auto, askip = read_scores(args.auto, af, args.key, errors)
    if errors.count:
        raise ScoreError(errors.text())
    ids = [q for q in human if q in auto]
    if not ids:
        raise ScoreError("calibrate: no %s has a score in both files (fields %r and %r), got %d human and %d automatic "
                         "scores" % (args.key, hf, af, len(human), len(auto)))
    hv, av = [human[q] for q in ids], [auto[q] for q in ids]
    stats = calibration_stats(hv, av, args.bins, args.bootstrap, args.seed)
    kappa = stats["kappa"]["value"]
    result = {"n": len(ids), "human": args.human, "auto": args.auto, "field": {"human": hf, "auto": af},
              "unpaired": {"human_only": sum(1 for q in human if q not in auto),
                           "auto_only": sum(1 for q in auto if q not in human),
                           "human_no_score": hskip, "auto_no_score": askip},
              "bins": {"width": args.bins, "rule": "each score goes to the nearest multiple of the width (halves up)",
                       "labels": stats["confusion"]["labels"]},
              "pearson": stats["pearson"], "spearman": stats["spearman"], "kappa": stats["kappa"], "mae": stats["mae"],
              "confusion": stats["confusion"]["rows_human_cols_auto"],
              "bootstrap": {"resamples": args.bootstrap, "seed": args.seed, "interval": "percentile 2.5 and 97.5"},
              "min_kappa": args.min_kappa, "gateable": kappa is not None and kappa >= args.min_kappa}
    text = json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    if args.out:
        atomic_write(args.out, text)
    sys.stdout.write(text)
    if not result["gateable"]:
        sys.stderr.write("score_eval: calibrate: kappa = %s, needs >= %s: the scorer is not calibrated well enough "
                         "to gate on\n" % (_cell(kappa), _fmt_num(args.min_kappa)))
    return 0 if result["gateable"] else 1


def merge_html_main(argv: List[str]) -> int:
    """``score_eval.py merge-html OUT IN.html...``: one page from several --html reports."""
    ap = argparse.ArgumentParser(prog="score_eval.py merge-html", description=merge_html_main.__doc__.split(": ", 1)[1])
    ap.add_argument("out", help="the page to write (atomically)")
    ap.add_argument("inputs", nargs="+", help="--html reports, one dataset section each, in page order")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    check_outputs([("merge-html OUT", args.out, "html")], [("input", p) for p in args.inputs])
    texts = []
    for path in args.inputs:
        try:
            with open_input(path, "HTML report") as fh:
                texts.append((path, fh.read().decode("utf-8")))
        except OSError as exc:
            raise ScoreError("%s: cannot read: %s" % (path, exc.strerror)) from None
        except UnicodeDecodeError as exc:
            raise ScoreError("%s: not UTF-8, got byte 0x%02x" % (path, exc.object[exc.start])) from None
    atomic_write(args.out, merge_html(texts))
    return 0


SUBCOMMANDS = {"calibrate": calibrate, "merge-html": merge_html_main}
