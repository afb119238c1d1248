#!/usr/bin/env python3
"""Fit score_eval.py's refusal model (``make fit-refusal``) on the FIT halves of the labelled sets.

Rows: the fit halves of the labelled real LLM responses (``refusal_data.py``: refchecker by even
``example_id``, evouna by even question number; labels in ``bench/labels/``) and the English
rows of the written set (``tests/data/refusal_written.jsonl``); with ``--extra`` (an experiment,
not the committed model) also the extra EVOUNA fit-half rows ``refusal_data.labelled_extra``.  The dev halves are never read
here.  The model weighs only what the rules leave most open (``score_eval.weighed_layout``): an English
response (``score_eval.english_share`` >= ENGLISH) that opens with a decline or a disclaimer and
goes on with content ("mixed" in ``refusal_layout``); the label is 1 for ``refusal``, 0 for
``answer`` and ``partial_refusal``.  Every other row is read by the rules (counted in the
errors below as the rules read it).

1. Features: ``score_eval.refusal_features`` (structural ones, and "d:WORD" / "c:WORD" for the
   words of the declining and content sentences); word features are kept when at least
   ``min_df`` training rows hold them.
2. A logistic regression with L2 (bias not penalised), Newton's method, standard library.
3. ``l2``, ``min_df`` and the threshold are chosen by 5-fold cross-validation on the fit rows,
   folds by question (``example_id`` or question number mod 5; written rows by line): for each
   pair, the out-of-fold scores; the threshold is the one (0.05, 0.06, ..., 0.95) with the
   fewest errors on the WHOLE fit half (misses of refusals + answers read as refusals, every
   row not weighed by the model read by the rules; ties: fewer answers read as refusals, then
   the higher threshold; written and extra rows count too); the pair is the one with the fewest such errors (ties: in GRID
   order).  The final weights are refitted on all training rows.

Writes bench/refusal_fit.json (weights rounded to 6 decimals, the data files' sha256, the
choice and the cross-validated fit-half figures); the same data give the same bytes.
``--check`` refits and exits 1 unless the file is byte-identical AND score_eval.REFUSAL_MODEL
holds the same numbers.  Without the data it says so and exits 0.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import answer_data  # noqa: E402
import refusal_data as rd  # noqa: E402
import score_eval as se  # noqa: E402

OUT = os.path.join(ROOT, "bench", "refusal_fit.json")
COMMAND = "make fit-refusal  (python3 bench/fit_refusal.py)"
ENGLISH = 0.1
FOLDS = 5
GRID = [(l2, df) for df in (None, 12, 8, 5) for l2 in (1.0, 3.0, 10.0)]     # df None: structural only
THRESHOLDS = [round(0.05 + 0.01 * i, 2) for i in range(91)]


def group_of(rid: str) -> int:
    """The question number of a labelled row id (refchecker-SETTING-EXAMPLE-MODEL, evouna-nq-N-MODEL)."""
    return int(rid.split("-")[2])


CHATGPT = os.path.join("chatgpt_refusals", "fit.jsonl")


def chatgpt_fit_half():
    """(id number, text, label) of chatgpt_refusals' fit half for the refusal verdict: the shared
    file holds the even ids; id number divisible by 4 = fit (the other even ids are the held-out
    half of docs/validation.md); rows whose refusal_strict is null (grey tones) left out."""
    with open(os.path.join(rd.DATA, CHATGPT), encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [(int(r["id"].rsplit("-", 1)[1]), r["text"], "refusal" if r["refusal_strict"] else "answer")
            for r in rows if int(r["id"].rsplit("-", 1)[1]) % 4 == 0 and r["refusal_strict"] is not None]


def fit_rows(extra: bool = False, chatgpt: bool = False):
    """(fold, label, weighed, features, rule_kind) of every fit row: weighed when the model decides it."""
    out = []
    items = []
    for name in sorted(rd.SETS):
        for rid, _, text, label in rd.labelled(name, "fit"):
            items.append((group_of(rid) % FOLDS, text, label, True))
    if extra:
        for rid, _, text, label in rd.labelled_extra():
            items.append((group_of(rid) % FOLDS, text, label, "extra"))
    if chatgpt:
        for num, text, label in chatgpt_fit_half():
            items.append(((num // 4) % FOLDS, text, label, True))
    for n, r in enumerate(rd.written()):
        if r["lang"] == "en":
            items.append((n % FOLDS, r["text"], r["label"], False))
    off = dict(REFUSAL_OFF)
    for fold, text, label, real in items:
        case, sents, kinds, _ = se.refusal_layout(text)
        weighed = se.weighed_layout(case, sents, kinds, ENGLISH)
        feats = se.refusal_features(sents, kinds) if weighed else None
        rule = se.read_refusal(text, model=off)[0]
        out.append({"fold": fold, "y": 1.0 if label == "refusal" else 0.0, "weighed": weighed,
                    "feats": feats, "rule": rule, "real": real})
    return out


REFUSAL_OFF = {"bias": 0.0, "english": 1.0, "threshold": 0.5, "weights": {}}


def _solve(a, b):
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c and m[r][c]:
                f = m[r][c] / m[c][c]
                mr, mc = m[r], m[c]
                for k in range(c, n + 1):
                    mr[k] -= f * mc[k]
    return [m[i][n] / m[i][i] for i in range(n)]


def fit_logistic(xs, ys, l2: float, iters: int = 30):
    """(bias, weights) of an L2-penalised logistic regression (bias not penalised), Newton.
    xs: lists of (index, value) pairs over ``d`` features."""
    d = 1 + max((i for x in xs for i, _ in x), default=-1) + 1
    w = [0.0] * d
    for _ in range(iters):
        g = [0.0] * d
        h = [[0.0] * d for _ in range(d)]
        for x, y in zip(xs, ys):
            xx = [(0, 1.0)] + [(i + 1, v) for i, v in x]
            z = math.fsum(w[i] * v for i, v in xx)
            p = 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))
            q = p * (1 - p)
            for i, vi in xx:
                g[i] += (p - y) * vi
                hi = h[i]
                for j, vj in xx:
                    hi[j] += q * vi * vj
        for i in range(1, d):
            g[i] += l2 * w[i]
            h[i][i] += l2
        step = _solve(h, g)
        w = [a - b for a, b in zip(w, step)]
        if max(abs(s) for s in step) < 1e-10:
            break
    return w[0], w[1:]


def vocabulary(rows, min_df):
    names = set()
    df = {}
    for r in rows:
        for k in r["feats"]:
            if ":" in k:
                df[k] = df.get(k, 0) + 1
            else:
                names.add(k)
    words = sorted(k for k, n in df.items() if min_df is not None and n >= min_df)
    return sorted(names) + words


def train(rows, l2, min_df) -> dict:
    vocab = vocabulary(rows, min_df)
    index = {k: i for i, k in enumerate(vocab)}
    xs = [sorted((index[k], v) for k, v in r["feats"].items() if k in index and v) for r in rows]
    bias, weights = fit_logistic(xs, [r["y"] for r in rows], l2)
    return {"bias": round(bias, 6), "english": ENGLISH,
            "weights": {k: round(w, 6) for k, w in zip(vocab, weights) if round(w, 6)}}


def errors(rows, probs, t):
    """(refusals missed, answers read as refusals) over all rows at threshold t."""
    miss = fp = 0
    for r, p in zip(rows, probs):
        refused = (p >= t) if r["weighed"] else r["rule"] == "refusal"
        miss += r["y"] == 1.0 and not refused
        fp += r["y"] == 0.0 and refused
    return miss, fp


def best_threshold(rows, probs):
    best = None
    for t in THRESHOLDS:
        miss, fp = errors(rows, probs, t)
        key = (miss + fp, fp, -t)
        if best is None or key < best[0]:
            best = (key, t, miss, fp)
    return best[1], best[2], best[3]


def cross_validate(rows, l2, min_df):
    probs = [None] * len(rows)
    for k in range(FOLDS):
        train_rows = [r for r in rows if r["weighed"] and r["fold"] != k]
        model = train(train_rows, l2, min_df)
        for n, r in enumerate(rows):
            if r["weighed"] and r["fold"] == k:
                probs[n] = se.refusal_score(r["feats"], model)
    return probs


def fit(verbose: bool = False, extra: bool = False, chatgpt: bool = False) -> dict:
    rows = fit_rows(extra, chatgpt)
    real = [n for n, r in enumerate(rows) if r["real"] is True]        # the fit half of the figures
    tried = []
    best = None
    for l2, min_df in GRID:
        probs = cross_validate(rows, l2, min_df)
        t, miss, fp = best_threshold(rows, probs)
        rmiss, rfp = errors([rows[n] for n in real], [probs[n] for n in real], t)
        tried.append({"l2": l2, "min_df": min_df, "threshold": t, "missed": miss, "answers_as_refusals": fp,
                      "real_missed": rmiss, "real_answers_as_refusals": rfp})
        if verbose:
            print(tried[-1], file=sys.stderr)
        if best is None or (miss + fp, fp) < best[0]:
            best = ((miss + fp, fp), l2, min_df, t, probs)
    _, l2, min_df, t, probs = best
    model = train([r for r in rows if r["weighed"]], l2, min_df)
    model["threshold"] = t
    y_real = [rows[n] for n in real]
    n_ref = sum(1 for r in y_real if r["y"] == 1.0)
    rmiss, rfp = errors(y_real, [probs[n] for n in real], t)
    files = [os.path.join(rd.DATA, rd.SETS[name][0]) for name in sorted(rd.SETS)] + [rd.WRITTEN]
    if chatgpt:
        files.append(os.path.join(rd.DATA, CHATGPT))
    return {
        "what": "score_eval.py REFUSAL_MODEL: logistic probability that a mixed English response (decline cues "
                "and content) is a refusal, over refusal_features; refusal when it reaches threshold",
        "command": COMMAND,
        "data": {"files": {os.path.relpath(f, ROOT).replace(os.sep, "/"): answer_data.sha256_of(f) for f in files},
                 "labels": {name: answer_data.sha256_of(os.path.join(rd.LABELS, "refusal_%s.jsonl" % name))
                            for name in sorted(rd.SETS) + (["evouna_extra"] if extra else [])},
                 "half": "fit: refchecker even example_id, evouna even question number; plus the written English rows",
                 "rows": len(rows), "weighed_rows": sum(1 for r in rows if r["weighed"]),
                 "weighed_refusals": int(sum(r["y"] for r in rows if r["weighed"]))},
        **({"extra_rows": sum(1 for r in rows if r["real"] == "extra")} if extra else {}),
        **({"chatgpt_fit_rows": len(chatgpt_fit_half())} if chatgpt else {}),
        "choice": {"l2": l2, "min_df": min_df, "grid": tried},
        "cross_validated_fit_half": {"refusals": n_ref, "missed": rmiss,
                                     "answers": len(y_real) - n_ref, "answers_as_refusals": rfp},
        "model": model,
    }


def render(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def model_text(model: dict) -> str:
    return json.dumps(model, sort_keys=True)


def code_block(model: dict) -> str:
    """REFUSAL_MODEL as score_eval.py holds it (a Python literal that reads as the same JSON)."""
    lines, cur = [], " " * 29
    for k, v in sorted(model["weights"].items()):
        item = "%s: %s, " % (json.dumps(k), json.dumps(v))
        if len(cur) + len(item) > 111:
            lines.append(cur.rstrip())
            cur = " " * 29
        cur += item
    lines.append(cur.rstrip().rstrip(","))
    return ('REFUSAL_MODEL = {"bias": %s, "english": %s, "threshold": %s,\n                 "weights": {\n%s}}\n'
            % (json.dumps(model["bias"]), json.dumps(model["english"]), json.dumps(model["threshold"]), "\n".join(lines)))


def embed(model: dict) -> None:
    """Rewrite referee/refusals.py's REFUSAL_MODEL block with ``model`` and rebuild score_eval.py
    from the package (tools/build_single_file.py: score_eval.py is generated)."""
    path = os.path.join(ROOT, "referee", "refusals.py")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    start = text.index("REFUSAL_MODEL = {")
    end = text.index("}}\n", start) + 3
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text[:start] + code_block(model) + text[end:])
    os.replace(tmp, path)
    import subprocess
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "build_single_file.py")], check=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--check", action="store_true", help="refit; exit 1 unless --out and REFUSAL_MODEL match")
    ap.add_argument("--verbose", action="store_true", help="print each grid point's cross-validated errors")
    ap.add_argument("--extra", action="store_true", help="add the extra EVOUNA fit rows (refusal_evouna_extra.jsonl); "
                    "an experiment, not the committed model (docs/refusals.md)")
    ap.add_argument("--chatgpt", action="store_true", help="add chatgpt_refusals' fit half (id number divisible "
                    "by 4); an experiment, not the committed model (docs/refusals.md, issue 41)")
    ap.add_argument("--embed", action="store_true", help="also rewrite score_eval.py's REFUSAL_MODEL with the fit")
    args = ap.parse_args(argv)
    if not (rd.available("refchecker") and rd.available("evouna")):
        print("fit_refusal: %s not found: skipped" % rd.DATA, file=sys.stderr)
        return 0
    text = render(fit(args.verbose, args.extra, args.chatgpt))
    model = json.loads(text)["model"]
    same_code = model_text(se.REFUSAL_MODEL) == model_text(model)
    if args.check:
        with open(args.out, encoding="utf-8") as fh:
            same_file = fh.read() == text
        print("fit_refusal --check: %s %s, score_eval.REFUSAL_MODEL %s" % (
            args.out, "identical" if same_file else "DIFFERS", "identical" if same_code else "DIFFERS"))
        return 0 if same_file and same_code else 1
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, args.out)
    print("fit_refusal: wrote %s" % args.out)
    if args.embed and not same_code:
        embed(model)
        print("fit_refusal: rewrote referee/refusals.py's REFUSAL_MODEL and rebuilt score_eval.py")
    elif not same_code:
        print("fit_refusal: score_eval.py's REFUSAL_MODEL differs: run with --embed (make fit-refusal does)",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
