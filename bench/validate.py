#!/usr/bin/env python3
"""Every verdict against people's labels on every shared labelled set, in one table (``make validate``).

Usage: python3 bench/validate.py [--docs docs/validation.md]

One run reads the labelled sets of ../shared/data (or $MINI_RAG_DATA) where they lie (nothing
is copied into the repository) and computes, on each set's fit half and held-out half:

* **refusal** (score_eval.read_refusal, positive = "refusal"; a partial refusal is shipped, so it
  counts as an answer): the labelled RAG responses of bench/labels (RefChecker by even / odd
  ``example_id``, EVOUNA by even / odd question number: fit / held-out = ``dev``) and
  chatgpt_refusals' ``refusal_strict`` (the shared file holds the even ids only: id number
  divisible by 4 = fit, the other even ids = held-out).  Baselines: a prefix list
  ("I'm sorry", "I cannot", ...), issue 20's decline phrases matched anywhere (substring),
  seed 002's exact token, flag-all.  Anchor: the paper's classifiers (its own split, paper
  binarisation: every tone but "complied" is a refusal), with the reader's figure on that
  binarisation beside it (refusal or partial refusal = refusal).
* **grounding** (score_eval.ground, positive = ``unsupported_answer``, the answer's source as
  its one cited chunk): FaithBench (source ``faithbench-bN-...``: N even = fit, odd = held-out)
  and RAGTruth summaries and data-to-text (``source_id`` number even = fit, odd = held-out).
  Baselines: the strict ``hallucination`` rule (a content word or number in no chunk), flag-all.
  Anchors: FaithBench's released detector outputs (``detectors``, score < 0.5 = hallucinated),
  recomputed on the same halves.
* **answer correctness** (score_eval.match_answer, positive = correct): EVOUNA-NQ (question
  number even = fit, odd = held-out).  Baselines: the substring rule (upstream ``lexical_match``),
  flag-all (every answer correct).  Anchor: SOURCE.md's figures of ``lexical_match`` on all rows.

Columns: n, positives (by people), agreement, balanced accuracy, precision and recall of the
positive verdict, false-positive rate (negatives given the verdict: answers taken for refusals,
faithful answers flagged, wrong answers called correct), share flagged.  ``--docs FILE``
rewrites the block between ``<!-- validate:begin -->`` and ``<!-- validate:end -->``.
Without the data folder: one line naming it, exit 0.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import score_eval as se  # noqa: E402

DATA = os.environ.get("MINI_RAG_DATA") or os.path.join(os.path.dirname(ROOT), "shared", "data")
BEGIN, END = "<!-- validate:begin -->", "<!-- validate:end -->"
FAITHBENCH_ANCHORS = ("gpt_4o", "hhem-2.1")
HEADER = ("| verdict | set | half | method | n | positives | agreement | balanced accuracy | precision "
          "| recall | false-positive rate | flagged |")


def rates(labels, preds) -> dict:
    tp = sum(1 for y, p in zip(labels, preds) if y and p)
    fp = sum(1 for y, p in zip(labels, preds) if p and not y)
    pos = sum(1 for y in labels if y)
    n = len(labels)
    neg = n - pos
    rec = tp / pos if pos else None
    fpr = fp / neg if neg else None
    return {"n": n, "positives": pos, "agreement": (n - (pos - tp) - fp) / n if n else None,
            "balanced_accuracy": (rec + 1 - fpr) / 2 if rec is not None and fpr is not None else None,
            "precision": tp / (tp + fp) if tp + fp else None, "recall": rec, "fpr": fpr,
            "flagged": (tp + fp) / n if n else None}


def _path(*parts) -> str:
    return os.path.join(DATA, *parts)


def _jsonl(path: str):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _num(rid: str) -> int:
    return int(rid.rsplit("-", 1)[1])


# ---- refusal
def refusal_methods():
    import bench_refusal as br
    return (("score_eval reader", lambda t: br.reader(t) == "refusal"),
            ("prefix list (baseline)", lambda t: br.prefix(t) == "refusal"),
            ("decline phrases anywhere (substring baseline, issue 20)", lambda t: br.issue20(t) == "refusal"),
            ("exact token (seed 002)", lambda t: br.exact(t) == "refusal"),
            ("flag-all", lambda t: True))


def refusal_rows():
    import refusal_data as rd
    out = []
    if rd.available("refchecker") and rd.available("evouna"):
        for half, split in (("fit", "fit"), ("held-out", "dev")):
            rows = [(text, label == "refusal") for name in sorted(rd.SETS) for _, _, text, label in rd.labelled(name, split)]
            out += _method_rows("refusal", "labelled RAG responses (bench/labels)", half, rows, refusal_methods())
    else:
        out.append(_missing("refusal", "labelled RAG responses (bench/labels)", rd.DATA))
    path = _path("chatgpt_refusals", "fit.jsonl")
    if not os.path.exists(path):
        return out + [_missing("refusal", "chatgpt_refusals", path)]
    data = _jsonl(path)
    for half, rest in (("fit", 0), ("held-out", 2)):
        part = [r for r in data if _num(r["id"]) % 4 == rest]
        strict = [(r["text"], bool(r["refusal_strict"])) for r in part if r["refusal_strict"] is not None]
        out += _method_rows("refusal", "chatgpt_refusals (refusal_strict)", half, strict, refusal_methods())
        paper = [(r["text"], bool(r["refusal_paper"])) for r in part]
        out.append(("refusal", "chatgpt_refusals (paper binarisation)", half,
                    "score_eval reader (refusal or partial refusal)",
                    rates([y for _, y in paper], [se.read_refusal(t)[0] != "answer" for t, _ in paper])))
    for name, acc in (("fine-tuned BERT", 0.965), ("TF-IDF logistic regression", 0.906)):
        out.append(("refusal", "chatgpt_refusals (paper binarisation)", "paper's own 15% split",
                    "published: %s (SOURCE.md)" % name, {"agreement": acc}))
    return out


def _method_rows(verdict, set_name, half, rows, methods):
    labels = [y for _, y in rows]
    return [(verdict, set_name, half, name, rates(labels, [fn(t) for t, _ in rows])) for name, fn in methods]


def _missing(verdict, set_name, path):
    return (verdict, set_name, "-", "missing: %s" % path, {})


# ---- grounding
def _grounding_methods(rows):
    return (("score_eval unsupported_answer", lambda r: bool(se.ground(r["response"], [r["source_text"]]).unsupported)),
            ("strict hallucination rule (baseline)",
             lambda r: bool(se.unsupported_tokens(r["response"], [r["source_text"]]))),
            ("flag-all", lambda r: True))


def grounding_rows():
    out = []
    path = _path("faithbench", "faithbench.jsonl")
    if os.path.exists(path):
        data = _jsonl(path)
        for half, rest in (("fit", 0), ("held-out", 1)):
            part = [r for r in data if int(r["source_id"].split("-")[1][1:]) % 2 == rest]
            out += _ground_half("FaithBench summaries", half, part)
            for d in FAITHBENCH_ANCHORS:
                have = [r for r in part if r["detectors"].get(d) is not None]
                out.append(("grounding", "FaithBench summaries", half, "released detector %s (score < 0.5)" % d,
                            rates([bool(r["hallucinated"]) for r in have], [r["detectors"][d] < 0.5 for r in have])))
    else:
        out.append(_missing("grounding", "FaithBench summaries", path))
    path = _path("ragtruth_gen", "ragtruth_gen.jsonl")
    if os.path.exists(path):
        data = _jsonl(path)
        for task, label in ((None, "RAGTruth, both tasks"), ("Summary", "RAGTruth summaries"),
                            ("Data2txt", "RAGTruth data-to-text")):
            for half, rest in (("fit", 0), ("held-out", 1)):
                out += _ground_half(label, half, [r for r in data if task in (None, r["task"])
                                                  and _num(r["source_id"]) % 2 == rest])
    else:
        out.append(_missing("grounding", "RAGTruth", path))
    return out


def _ground_half(set_name, half, rows):
    labels = [bool(r["hallucinated"]) for r in rows]
    return [("grounding", set_name, half, name, rates(labels, [fn(r) for r in rows]))
            for name, fn in _grounding_methods(rows)]


# ---- answer correctness
def answer_rows():
    from pathlib import Path
    import bench_answer_correct as bac
    path = _path("evouna_nq", "nq.jsonl")
    if not os.path.exists(path):
        return [_missing("answer correctness", "EVOUNA-NQ", path)]
    fit, held = bac.load(Path(path))
    ours = bac.our_rule()
    out = []
    for half, rows in (("fit", fit), ("held-out", held)):
        labels = [bool(r["human_correct"]) for r in rows]
        for name, fn in (("score_eval answer_correct", ours), ("substring rule (baseline, lexical_match)", bac.substring_rule),
                         ("flag-all", lambda r: True)):
            out.append(("answer correctness", "EVOUNA-NQ answers of 5 systems", half, name,
                        rates(labels, [bool(fn(r)) for r in rows])))
    out.append(("answer correctness", "EVOUNA-NQ answers of 5 systems", "all rows",
                "published: lexical_match (SOURCE.md)", {"agreement": 0.840, "precision": 0.984, "recall": 0.791}))
    return out


def _f(v) -> str:
    return "" if v is None else ("%d" % v if isinstance(v, int) else "%.3f" % v)


def render(rows) -> str:
    lines = [HEADER, "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for verdict, set_name, half, method, r in rows:
        lines.append("| %s | %s | %s | %s | %s |" % (verdict, set_name, half, method, " | ".join(
            _f(r.get(k)) for k in ("n", "positives", "agreement", "balanced_accuracy", "precision", "recall", "fpr",
                                   "flagged"))))
    return "\n".join(lines) + "\n"


def table() -> str:
    return render(refusal_rows() + grounding_rows() + answer_rows())


def write_docs(path: str, block: str) -> None:
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    if BEGIN not in text or END not in text:
        raise SystemExit("%s: no %s ... %s block" % (path, BEGIN, END))
    head, rest = text.split(BEGIN, 1)
    new = head + BEGIN + "\n" + block + END + rest.split(END, 1)[1]
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(new)
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", help="rewrite the validate block of this file (docs/validation.md)")
    args = ap.parse_args(argv)
    if not os.path.isdir(DATA):
        print("validate: skipped: the shared labelled data folder %s is not there (set MINI_RAG_DATA)" % DATA)
        return 0
    block = table()
    sys.stdout.write(block)
    if args.docs:
        write_docs(args.docs, block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
