#!/usr/bin/env python3
"""Fit score_eval.py's grounding model (``make fit-grounding``) on the FIT half of FaithBench.

FaithBench (../shared/data/faithbench/faithbench.jsonl, CC BY-NC-SA 4.0: read here, never
copied into the repository) holds 750 LLM summaries of 75 source passages with the spans
people flagged.  Split by source: ``source_id`` ``faithbench-bN-sM`` with N even is the fit
half (400 summaries), N odd the held-out half (350), which this script never reads.

1. Each summary is read as score_eval.py reads a shipped answer (``answer_sentences``:
   markers and list numbers blanked, lead-ins about the sources removed, meta sentences
   and declining clauses set aside); each checked sentence gets ``grounding_features``
   against the source passage.  A sentence is labelled unsupported when it overlaps a span
   that people labelled Questionable or Unwanted (FaithBench's hallucinated classes; Benign
   spans are harmless additions).
2. A logistic regression (L2 ``--l2``, Newton's method, standard library) of that label on
   GROUND_FEATURES gives the weights: the score of a sentence is the fitted probability that
   people flag it.
3. The thresholds: a summary is unsupported when one of its checked sentences has a number
   or a name found in no chunk, a changed negation or modality, more than ``share_cut`` of
   its content words found in no chunk, or a score at or above ``threshold``; the pair is
   the one of best balanced accuracy of that per-summary verdict against ``hallucinated``
   on the fit half (share_cut in SHARE_CUTS, threshold in 0.100, 0.105, ..., 0.995; ties:
   the first in that order).
4. What kind of mismatch matters, from the spans (reported, fit half): for each kind of word
   found in no chunk (number, name, other content word) and for negation / modality
   mismatches, the share of occurrences inside a flagged span.

Writes bench/grounding_fit.json (weights rounded to 6 decimals, the command, the data file's
sha256, the fit-half figures); the same data give the same bytes.  ``--check`` refits and
exits 1 unless the file is byte-identical AND score_eval.GROUNDING_MODEL holds the same
numbers.  Without the data it says so and exits 0 (nothing to check against).
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
import score_eval as se  # noqa: E402

DATA = os.path.join(os.path.dirname(ROOT), "shared", "data", "faithbench", "faithbench.jsonl")
OUT = os.path.join(ROOT, "bench", "grounding_fit.json")
COMMAND = "make fit-grounding  (python3 bench/fit_grounding.py)"
FLAGGED = ("Questionable", "Unwanted")
SHARE_CUTS = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5)      # 1.0: off (a share is never above 1)
GRID = [round(0.1 + 0.005 * i, 3) for i in range(180)]


def half_of(row) -> str:
    """"fit" for source_id faithbench-bN-sM with N even, "held" for N odd."""
    batch = row["source_id"].split("-")[1]
    return "fit" if int(batch[1:]) % 2 == 0 else "held"


def load(path: str, half: str):
    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [r for r in rows if half_of(r) == half]


def ragtruth_half(path: str, half: str):
    """RAGTruth's rows of one half (``source_id`` number even = fit, odd = held), every span people
    marked counted as flagged (RAGTruth's spans are all unsupported content)."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            if ("fit" if int(r["source_id"].rsplit("-", 1)[1]) % 2 == 0 else "held") == half:
                r["spans"] = [{"start": sp["start"], "end": sp["end"], "label": "Unwanted"} for sp in r["spans"]]
                out.append(r)
    return out


def sentence_rows(rows):
    """Per summary: (hallucinated, [(features, missing, flagged, unsupported words)])."""
    out = []
    for r in rows:
        cs = se.chunkset([r["source_text"]])
        spans = [(s["start"], s["end"]) for s in r["spans"] if s["label"] in FLAGGED]
        sents = []
        for start, end, _, text in se.answer_sentences(r["response"]):
            if text is None:
                continue
            feats, missing, unsup, flips = se.grounding_features(text, cs)
            flagged = any(a < end and b > start for a, b in spans)
            sents.append((feats, missing + flips, flagged, unsup))
        out.append((bool(r["hallucinated"]), sents))
    return out


def _solve(a, b):
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c and m[r][c]:
                f = m[r][c] / m[c][c]
                for k in range(c, n + 1):
                    m[r][k] -= f * m[c][k]
    return [m[i][n] / m[i][i] for i in range(n)]


def fit_logistic(xs, ys, l2: float, iters: int = 50):
    """(bias, weights) of an L2-penalised logistic regression (bias not penalised), Newton."""
    d = len(xs[0]) + 1
    w = [0.0] * d
    for _ in range(iters):
        g = [0.0] * d
        h = [[0.0] * d for _ in range(d)]
        for x, y in zip(xs, ys):
            xx = [1.0] + list(x)
            z = math.fsum(a * b for a, b in zip(w, xx))
            p = 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))
            for i in range(d):
                g[i] += (p - y) * xx[i]
                hi = h[i]
                for j in range(d):
                    hi[j] += p * (1 - p) * xx[i] * xx[j]
        for i in range(1, d):
            g[i] += l2 * w[i]
            h[i][i] += l2
        step = _solve(h, g)
        w = [a - b for a, b in zip(w, step)]
        if max(abs(s) for s in step) < 1e-12:
            break
    return w[0], w[1:]


def confusion(labels, preds):
    tp = sum(1 for y, p in zip(labels, preds) if y and p)
    fn = sum(1 for y, p in zip(labels, preds) if y and not p)
    tn = sum(1 for y, p in zip(labels, preds) if not y and not p)
    fp = sum(1 for y, p in zip(labels, preds) if not y and p)
    return tp, fp, tn, fn


def scores(labels, preds) -> dict:
    """Balanced accuracy, F1 (class: hallucinated), precision, recall, accuracy, flagged share."""
    tp, fp, tn, fn = confusion(labels, preds)
    tpr = tp / (tp + fn) if tp + fn else 0.0
    tnr = tn / (tn + fp) if tn + fp else 0.0
    return {"n": len(labels), "balanced_accuracy": round((tpr + tnr) / 2, 6),
            "f1": round(2 * tp / (2 * tp + fp + fn), 6) if tp else 0.0,
            "precision": round(tp / (tp + fp), 6) if tp + fp else 0.0, "recall": round(tpr, 6),
            "accuracy": round((tp + tn) / len(labels), 6) if labels else 0.0,
            "flagged": round((tp + fp) / len(labels), 6) if labels else 0.0}


def verdicts(data, model):
    """Per summary: unsupported (a missing number / name, or a score >= threshold)."""
    out = []
    share = se.GROUND_FEATURES.index("unsupported_share")
    for _, sents in data:
        out.append(any(m or f[share] > model["share_cut"] or se._model_score(f, model) >= model["threshold"]
                       for f, m, _, _ in sents))
    return out


def mismatch_table(data):
    """What people flag: share of each kind of mismatch that lies in a flagged sentence."""
    kinds = {"number found in no chunk": [0, 0], "name found in no chunk": [0, 0],
             "other content word found in no chunk": [0, 0], "negation mismatch": [0, 0],
             "modality mismatch": [0, 0], "no mismatch of these kinds": [0, 0]}
    neg = se.GROUND_FEATURES.index("negation_mismatch")
    mod = se.GROUND_FEATURES.index("modality_mismatch")
    for _, sents in data:
        for f, missing, flagged, unsup in sents:
            hit = []
            flips = [m for m in missing if " differs from the chunk" in m]
            nums = [m for m in missing if any(ch.isdigit() for ch in m) and m not in flips]
            names = [m for m in missing if m not in nums and m not in flips]
            if nums:
                hit.append("number found in no chunk")
            if names:
                hit.append("name found in no chunk")
            if [u for u in unsup if u not in names]:
                hit.append("other content word found in no chunk")
            if f[neg]:
                hit.append("negation mismatch")
            if f[mod]:
                hit.append("modality mismatch")
            for k in hit or ["no mismatch of these kinds"]:
                kinds[k][0] += 1
                kinds[k][1] += flagged
    return {k: {"sentences": n, "flagged_share": round(c / n, 6) if n else None} for k, (n, c) in kinds.items()}


def fit(path: str, l2: float, ragtruth: str = None) -> dict:
    """The fit on FaithBench's fit half; with ``ragtruth`` (the RAGTruth file, an experiment of
    issue 41, not the committed model) its fit half too, the thresholds then chosen by the mean
    of the two sets' per-answer balanced accuracy."""
    rows = load(path, "fit")
    data = sentence_rows(rows)
    sets = [data] + ([sentence_rows(ragtruth_half(ragtruth, "fit"))] if ragtruth else [])
    xs = [f for d in sets for _, sents in d for f, _, _, _ in sents]
    ys = [1.0 if flagged else 0.0 for d in sets for _, sents in d for _, _, flagged, _ in sents]
    bias, weights = fit_logistic(xs, ys, l2)
    model = {"bias": round(bias, 6), "weights": [round(w, 6) for w in weights], "threshold": 0.5, "share_cut": 1.0}
    labels = [y for y, _ in data]
    best = None
    for cut in SHARE_CUTS:
        for t in GRID:
            model["threshold"], model["share_cut"] = t, cut
            ba = sum(scores([y for y, _ in d], verdicts(d, model))["balanced_accuracy"] for d in sets) / len(sets)
            if best is None or ba > best[0]:
                best = (ba, t, cut)
    model["threshold"], model["share_cut"] = best[1], best[2]
    return {
        "what": "score_eval.py GROUNDING_MODEL: logistic score of a checked sentence (probability that people "
                "flag it) over GROUND_FEATURES, and the threshold of the per-answer verdict",
        "command": COMMAND,
        "data": {"file": "shared/data/faithbench/faithbench.jsonl", "sha256": answer_data.sha256_of(path),
                 "half": "fit: source_id faithbench-bN-sM with N even", "summaries": len(rows),
                 "checked_sentences": len(xs), "flagged_sentences": int(sum(ys))},
        "l2": l2,
        "features": list(se.GROUND_FEATURES),
        "model": model,
        "fit_half": scores(labels, verdicts(data, model)),
        "mismatch_kinds_fit_half": mismatch_table(data),
    }


def render(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--check", action="store_true", help="refit; exit 1 unless --out and GROUNDING_MODEL match")
    ap.add_argument("--ragtruth", metavar="FILE", help="also fit on RAGTruth's fit half (ragtruth_gen.jsonl); "
                    "an experiment, not the committed model (docs/grounding.md, issue 41): use --out elsewhere")
    args = ap.parse_args(argv)
    if not os.path.isfile(args.data):
        print("fit_grounding: %s not found: skipped" % args.data, file=sys.stderr)
        return 0
    text = render(fit(args.data, args.l2, args.ragtruth))
    model = json.loads(text)["model"]
    if args.check:
        with open(args.out, encoding="utf-8") as fh:
            same_file = fh.read() == text
        same_code = json.dumps(se.GROUNDING_MODEL, sort_keys=True) == json.dumps(model, sort_keys=True)
        print("fit_grounding --check: %s %s, score_eval.GROUNDING_MODEL %s" % (
            args.out, "identical" if same_file else "DIFFERS", "identical" if same_code else "DIFFERS"))
        return 0 if same_file and same_code else 1
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, args.out)
    print("fit_grounding: wrote %s: %s" % (args.out, json.dumps(model, sort_keys=True)))
    if json.dumps(se.GROUNDING_MODEL, sort_keys=True) != json.dumps(model, sort_keys=True):
        print("fit_grounding: copy the model into score_eval.py's GROUNDING_MODEL", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
