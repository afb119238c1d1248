#!/usr/bin/env python3
"""Fit score_eval.py's grounding model (``make fit-grounding``) on the FIT halves of FaithBench and RAGTruth.

FaithBench (../shared/data/faithbench/faithbench.jsonl, CC BY-NC-SA 4.0) holds 750 LLM
summaries of 75 source passages with the spans people flagged; ``source_id``
``faithbench-bN-sM`` with N even is the fit half (400 summaries).  RAGTruth
(../shared/data/ragtruth_gen/ragtruth_gen.jsonl, MIT) holds 400 summaries and data-to-text
answers of six LLMs; ``source_id`` number even is the fit half (203 answers).  The held-out
halves (odd) are never read here.  Both files are read where they lie, never copied; the data
folder is ../shared/data or $MINI_RAG_DATA.

1. Each answer is read as score_eval.py reads a shipped answer (``answer_sentences``:
   markers and list numbers blanked, lead-ins about the sources removed, meta sentences
   and declining clauses set aside); each checked sentence gets ``grounding_features``
   against the source (a JSON record read field by field: ``structured_text``).  A sentence
   is labelled unsupported when it overlaps a span people flagged (FaithBench: Questionable
   or Unwanted; Benign spans are harmless additions; RAGTruth: every span).
2. Two logistic regressions (L2 ``--l2``, Newton's method, standard library) of that label
   on GROUND_FEATURES: the prose model on FaithBench's fit-half sentences, the record model
   (answers whose chunk is a JSON record: data-to-text, told from the row itself) on
   RAGTruth's data-to-text fit-half sentences.  A sentence's score is the fitted
   probability that people flag it.
3. The operating points: an answer is unsupported when one of its checked sentences has a
   number or a name found in no chunk, a changed negation or modality, more than
   ``share_cut`` of its content words found in no chunk, or a score at or above
   ``threshold``.  The prose pair and the record pair are chosen together, on the fit
   halves, for the best of the LOWER of two per-answer balanced accuracies: FaithBench's
   and RAGTruth's (both tasks pooled) -- a point good on one set only is not taken.  Grid:
   share_cut in SHARE_CUTS, threshold 0.10, 0.11, ..., 0.99; for each prose pair the record
   pair of best RAGTruth balanced accuracy; ties: the first in that order.
4. What kind of mismatch matters, from the spans (reported, FaithBench fit half): for each
   kind of word found in no chunk (number, name, other content word) and for negation /
   modality mismatches, the share of occurrences inside a flagged span.

Writes bench/grounding_fit.json (weights rounded to 6 decimals, the command, the data files'
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

DATA_DIR = os.environ.get("MINI_RAG_DATA") or os.path.join(os.path.dirname(ROOT), "shared", "data")
DATA = os.path.join(DATA_DIR, "faithbench", "faithbench.jsonl")
OUT = os.path.join(ROOT, "bench", "grounding_fit.json")
COMMAND = "make fit-grounding  (python3 bench/fit_grounding.py)"
FLAGGED = ("Questionable", "Unwanted")
SHARE_CUTS = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5)      # 1.0: off (a share is never above 1)
GRID = [round(0.1 + 0.01 * i, 2) for i in range(90)]


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
    """Per answer: (hallucinated, [(features, missing, flagged, unsupported words)], structured)."""
    out = []
    for r in rows:
        cs = se.chunkset([r["source_text"]])
        spans = [(s["start"], s["end"]) for s in r["spans"] if s["label"] in FLAGGED]
        sents = []
        for start, end, _, text in se.answer_sentences(r["response"]):
            if text is None:
                continue
            feats, missing, unsup, flips = se.grounding_features(text, cs)
            if not feats[6] and not missing and not flips:
                continue                # set aside by ground too: nothing to check
            flagged = any(a < end and b > start for a, b in spans)
            sents.append((feats, missing + flips, flagged, unsup))
        out.append((bool(r["hallucinated"]), sents, cs.structured))
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
    """Per answer: unsupported (a missing number / name, a flip, a share of words in no chunk
    above share_cut, or a score >= threshold), with the record model on a structured source."""
    out = []
    share = se.GROUND_FEATURES.index("unsupported_share")
    for _, sents, structured in data:
        m = model["structured"] if structured and "structured" in model else model
        out.append(any(miss or f[share] > m["share_cut"] or se._model_score(f, m) >= m["threshold"]
                       for f, miss, _, _ in sents))
    return out


def mismatch_table(data):
    """What people flag: share of each kind of mismatch that lies in a flagged sentence."""
    kinds = {"number found in no chunk": [0, 0], "name found in no chunk": [0, 0],
             "other content word found in no chunk": [0, 0], "negation mismatch": [0, 0],
             "modality mismatch": [0, 0], "no mismatch of these kinds": [0, 0]}
    neg = se.GROUND_FEATURES.index("negation_mismatch")
    mod = se.GROUND_FEATURES.index("modality_mismatch")
    for _, sents, _ in data:
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


def _logistic(data, l2: float) -> dict:
    xs = [f for _, sents, _ in data for f, _, _, _ in sents]
    ys = [1.0 if flagged else 0.0 for _, sents, _ in data for _, _, flagged, _ in sents]
    bias, weights = fit_logistic(xs, ys, l2)
    return {"bias": round(bias, 6), "weights": [round(w, 6) for w in weights], "threshold": 0.5, "share_cut": 1.0,
            "sentences": len(xs), "flagged": int(sum(ys))}


def _points(data, model) -> dict:
    """(share_cut, threshold) -> (tp, fp, tn, fn) of ``data`` under ``model``'s weights."""
    out = {}
    labels = [y for y, _, _ in data]
    for cut in SHARE_CUTS:
        for t in GRID:
            out[(cut, t)] = confusion(labels, verdicts(data, dict(model, threshold=t, share_cut=cut)))
    return out


def _bacc(*cells) -> float:
    tp, fp, tn, fn = (sum(c[i] for c in cells) for i in range(4))
    return ((tp / (tp + fn) if tp + fn else 0.0) + (tn / (tn + fp) if tn + fp else 0.0)) / 2


def choose(fb, rt_prose, rt_record, prose, record):
    """The (prose, record) operating points of best min(FaithBench, RAGTruth) balanced accuracy."""
    a, b, c = _points(fb, prose), _points(rt_prose, prose), _points(rt_record, record)
    best = None
    for k in a:
        rk = max(c, key=lambda j: (_bacc(b[k], c[j]), -list(c).index(j)))
        value = min(_bacc(a[k]), _bacc(b[k], c[rk]))
        if best is None or value > best[0]:
            best = (value, k, rk)
    return best[1], best[2]


def fit(path: str, l2: float, ragtruth: str) -> dict:
    """Both models and their operating points, from the fit halves of ``path`` and ``ragtruth``."""
    rows = load(path, "fit")
    rt_rows = ragtruth_half(ragtruth, "fit")
    fb = sentence_rows(rows)
    rt = sentence_rows(rt_rows)
    rt_prose = [d for d in rt if not d[2]]
    rt_record = [d for d in rt if d[2]]
    prose = _logistic(fb, l2)
    record = _logistic(rt_record, l2)
    (pc, pt), (rc, rt_t) = choose(fb, rt_prose, rt_record, prose, record)
    counts = {"prose": (prose.pop("sentences"), prose.pop("flagged")),
              "record": (record.pop("sentences"), record.pop("flagged"))}
    prose.update(threshold=pt, share_cut=pc)
    record.update(threshold=rt_t, share_cut=rc)
    model = dict(prose, structured=record)
    return {
        "what": "score_eval.py GROUNDING_MODEL: logistic score of a checked sentence (probability that people "
                "flag it) over GROUND_FEATURES and the per-answer operating point; \"structured\": the same for "
                "answers whose chunk is a JSON record (data-to-text)",
        "command": COMMAND,
        "data": {"faithbench": {"file": "shared/data/faithbench/faithbench.jsonl", "sha256": answer_data.sha256_of(path),
                                "half": "fit: source_id faithbench-bN-sM with N even", "answers": len(rows),
                                "checked_sentences": counts["prose"][0], "flagged_sentences": counts["prose"][1]},
                 "ragtruth": {"file": "shared/data/ragtruth_gen/ragtruth_gen.jsonl",
                              "sha256": answer_data.sha256_of(ragtruth),
                              "half": "fit: source_id ragtruth-src-N with N even", "answers": len(rt_rows),
                              "record_answers": len(rt_record), "record_checked_sentences": counts["record"][0],
                              "record_flagged_sentences": counts["record"][1]}},
        "l2": l2,
        "features": list(se.GROUND_FEATURES),
        "model": model,
        "fit_half": {"faithbench": scores([y for y, _, _ in fb], verdicts(fb, model)),
                     "ragtruth": scores([y for y, _, _ in rt], verdicts(rt, model)),
                     "ragtruth_summaries": scores([y for y, _, _ in rt_prose], verdicts(rt_prose, model)),
                     "ragtruth_data_to_text": scores([y for y, _, _ in rt_record], verdicts(rt_record, model))},
        "mismatch_kinds_fit_half": mismatch_table(fb),
    }


def render(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--check", action="store_true", help="refit; exit 1 unless --out and GROUNDING_MODEL match")
    ap.add_argument("--ragtruth", metavar="FILE", help="RAGTruth's rows (default: ragtruth_gen/ragtruth_gen.jsonl "
                    "beside --data's folder)")
    args = ap.parse_args(argv)
    ragtruth = args.ragtruth or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(args.data))),
                                             "ragtruth_gen", "ragtruth_gen.jsonl")
    for need in (args.data, ragtruth):
        if not os.path.isfile(need):
            print("fit_grounding: %s not found: skipped" % need, file=sys.stderr)
            return 0
    text = render(fit(args.data, args.l2, ragtruth))
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
        print("fit_grounding: copy the model into referee/grounding.py's GROUNDING_MODEL, then make single-file",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
