#!/usr/bin/env python3
"""SQuAD 2.0 bench (``make bench-squad``): the whole pipeline on data nobody here wrote.

Steps:

1. Convert ``../shared/data/squad2/dev-v2.0.explorer-derived.json`` (``--data``) into

   * ``runs/bench/squad/corpus.jsonl``: one BEIR-style document per article (``_id`` = the
     title with every character outside ``[A-Za-z0-9._-]`` replaced by ``-``), its
     paragraphs separated by blank lines so paragraph N is chunk ``<doc>#p<N>`` by the
     corpus chunking rule; white space inside a context (newlines, tabs, form feeds)
     becomes one space each so a context stays one paragraph on one page;
   * ``runs/bench/squad/gold.jsonl``: per question ``qid`` (the SQuAD id), ``question``,
     ``answerable``, and for answerable questions ``gold_claim_substr`` = each distinct
     answer text widened to whole words (a word is a run of letters/digits), then widened
     by whole neighbouring words (the next word to the right first, else to the left) until
     it has at least 5 characters, and ``gold_citations`` = [the paragraph's chunk id];
     unanswerable questions get empty lists.  ``category`` is ``answerable`` or
     ``unanswerable``; ``expected_decision`` ANSWER or ABSTAIN.

2. Build an index with the committed configuration (``--config``, default
   configs/default.toml when present) pointed at that corpus, index file
   ``runs/bench/squad/index.json.gz``.
3. Answer every question (``--limit N``: the first N in file order), timing each
   ``Pipeline.answer`` call, and write ``runs/bench/squad/trace.jsonl``.
4. Score with ``score_eval.py`` (subprocess, seed 002's suggested gates, ``--k 1,5,10``)
   and print precision, CHR, under-/over-refusal, recall@5, pass rate, per-question
   latency p50/p95 and the total time; write ``runs/bench/squad/summary.json``.

The bench measures; it does not gate: exit 0 after a complete run whatever the scores,
2 on bad input, and 0 with a "skipped" note when the data file is absent.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from mini_rag.errors import MiniRagError  # noqa: E402
from mini_rag.fileio import atomic_write_text, dumps_jsonl  # noqa: E402
from mini_rag.progress import Progress  # noqa: E402

DEFAULT_DATA = os.path.join(os.path.dirname(ROOT), "shared", "data", "squad2", "dev-v2.0.explorer-derived.json")
OUT = os.path.join("runs", "bench", "squad")
MIN_SUBSTR = 5          # seed 002: gold substrings have at least 5 characters
SEED_GATES = "precision=0.80,chr=0.75,under=0.05,over=0.10"

_BAD_ID = re.compile(r"[^A-Za-z0-9._-]")
_SPACE = re.compile(r"\s")


def doc_id_of(title: str) -> str:
    return _BAD_ID.sub("-", title) or "untitled"


def _is_word(ch: str) -> bool:
    return ch.isalnum()


def widen(context: str, start: int, end: int) -> str:
    """The answer span ``context[start:end]`` widened to whole words, then by whole
    neighbouring words until it has >= MIN_SUBSTR characters (right first, else left).

    >>> widen("It is in France.", 9, 13)
    'France'
    >>> widen("Born in 1066 AD.", 8, 10)
    '1066 AD'
    >>> widen("A cost of $5.", 11, 12)
    'of $5'
    >>> widen("Go to NY now.", 6, 8)
    'NY now'
    """
    while start > 0 and _is_word(context[start - 1]) and _is_word(context[start]):
        start -= 1
    while end < len(context) and end > 0 and _is_word(context[end - 1]) and _is_word(context[end]):
        end += 1
    while len(context[start:end].strip()) < MIN_SUBSTR:
        j = end
        while j < len(context) and not _is_word(context[j]):
            j += 1
        if j < len(context):
            while j < len(context) and _is_word(context[j]):
                j += 1
            end = j
            continue
        i = start
        while i > 0 and not _is_word(context[i - 1]):
            i -= 1
        if i == 0:
            break
        while i > 0 and _is_word(context[i - 1]):
            i -= 1
        start = i
    return context[start:end].strip()


def answer_substrings(context: str, answers) -> list:
    """Each distinct answer text found in ``context``, widened (``widen``) to >= MIN_SUBSTR
    characters, in answer order; [] when none is usable."""
    subs = []
    for ans in answers:
        text = _SPACE.sub(" ", ans["text"]).strip()
        pos = context.find(text)
        if pos < 0 or not text:
            continue
        s = widen(context, pos, pos + len(text))
        if len(s) >= MIN_SUBSTR and s not in subs:
            subs.append(s)
    return subs


def convert(data_path: str, out_dir: str):
    """Write corpus.jsonl and gold.jsonl; return (corpus path, gold path, counts)."""
    try:
        with open(data_path, encoding="utf-8") as fh:
            squad = json.load(fh)
    except (OSError, ValueError) as exc:
        raise MiniRagError("%s: cannot read SQuAD JSON: %s" % (data_path, exc)) from None
    docs, gold = [], []
    used = {}
    for article in squad.get("data", []):
        doc_id = doc_id_of(article["title"])
        if doc_id in used:
            used[doc_id] += 1
            doc_id = "%s-%d" % (doc_id, used[doc_id])
        else:
            used[doc_id] = 1
        paragraphs = []
        for n, para in enumerate(article["paragraphs"]):
            context = _SPACE.sub(" ", para["context"]).strip()
            paragraphs.append(context)
            chunk_id = "%s#p%d" % (doc_id, n)
            for qa in para["qas"]:
                answerable = not qa.get("is_impossible", False) and bool(qa.get("answers"))
                subs = answer_substrings(context, qa["answers"]) if answerable else []
                if answerable and not subs:   # no usable answer string: not gold we can score
                    continue
                gold.append({"qid": qa["id"], "question": qa["question"], "answerable": answerable,
                             "gold_claim_substr": subs, "gold_citations": [chunk_id] if answerable else [],
                             "category": "answerable" if answerable else "unanswerable",
                             "expected_decision": "ANSWER" if answerable else "ABSTAIN"})
        docs.append({"_id": doc_id, "title": article["title"].replace("_", " "),
                     "text": "\n\n".join(paragraphs), "metadata": {}})
    corpus = os.path.join(out_dir, "corpus.jsonl")
    gold_path = os.path.join(out_dir, "gold.jsonl")
    atomic_write_text(corpus, dumps_jsonl(docs))
    atomic_write_text(gold_path, dumps_jsonl(gold))
    return corpus, gold_path, {"articles": len(docs), "paragraphs": sum(len(a["paragraphs"]) for a in squad["data"]),
                               "questions": len(gold),
                               "answerable": sum(1 for g in gold if g["answerable"])}


def percentile(values, q):
    """Nearest-rank percentile (q in [0, 100]) of a non-empty list."""
    s = sorted(values)
    k = max(1, -(-len(s) * q // 100))
    return s[int(k) - 1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="SQuAD 2.0 bench: convert, index, answer, score.")
    ap.add_argument("--data", default=DEFAULT_DATA, help="SQuAD 2.0 JSON (default: ../shared/data/squad2/...)")
    ap.add_argument("--out", default=OUT, help="output folder (default: runs/bench/squad)")
    ap.add_argument("--config", default=None, help="TOML config (default: configs/default.toml when present)")
    ap.add_argument("--limit", type=int, default=0, help="answer only the first N questions (default: all)")
    args = ap.parse_args(argv)
    if not os.path.isfile(args.data):
        print("bench-squad: skipped: %s not found" % args.data, file=sys.stderr)
        return 0
    from mini_rag.commands.cmd_answer import resolve_config
    from mini_rag.eval.evaluate import read_gold
    from mini_rag.indexing.index import build_or_load
    from mini_rag.pipeline import Pipeline
    from mini_rag.search.retrieve import Retriever
    try:
        t0 = time.perf_counter()
        corpus, gold_path, counts = convert(args.data, args.out)
        t1 = time.perf_counter()
        config = resolve_config(args.config)
        config["corpus"]["path"] = corpus
        config["index"]["path"] = os.path.join(args.out, "index.json.gz")
        with Progress(0, "bench-squad: indexing chunks") as progress:
            index = build_or_load(config, progress=progress)
        t2 = time.perf_counter()
        pipeline = Pipeline(config, retriever=Retriever(index, config))
        gold = read_gold(gold_path)
        if args.limit > 0:
            gold = gold[:args.limit]
            sub = os.path.join(args.out, "gold.limit.jsonl")
            atomic_write_text(sub, dumps_jsonl([g for _, g in gold]))
            gold_path = sub
        rows, lat = [], []
        with Progress(len(gold), "bench-squad: answering") as progress:   # off a tty: a line every 30 s
            for n, (_, g) in enumerate(gold, 1):
                s = time.perf_counter()
                rows.append(pipeline.answer(g["question"], qid=g["qid"]).row)
                lat.append(time.perf_counter() - s)
                progress.update(n)
        t3 = time.perf_counter()
        trace = os.path.join(args.out, "trace.jsonl")
        atomic_write_text(trace, dumps_jsonl(rows))
    except MiniRagError as exc:
        print("bench-squad: %s" % exc, file=sys.stderr)
        return 2
    report_path = os.path.join(args.out, "report.json")
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "score_eval.py"), "--gold", gold_path,
                           "--trace", trace, "--k", "5,1,10", "--gates", SEED_GATES, "--out", report_path,
                           "--markdown", os.path.join(args.out, "report.md")],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if proc.returncode not in (0, 1):
        print("bench-squad: score_eval.py failed:\n%s" % proc.stderr.decode("utf-8", "replace"), file=sys.stderr)
        return 2
    with open(report_path, encoding="utf-8") as fh:
        rep = json.load(fh)
    m = rep["metrics"]
    decisions = {}
    for r in rows:
        decisions[r["decision"]] = decisions.get(r["decision"], 0) + 1
    summary = {
        "data": os.path.basename(args.data), "counts": counts, "answered_questions": len(rows),
        "precision": rep["precision"], "chr": rep["chr"], "under_refusal": rep["under_refusal"],
        "over_refusal": rep["over_refusal"], "recall@5": m["recall@5"]["value"],
        "pass_rate": m["pass_rate"]["value"], "hallucination": m["hallucination"]["value"],
        "answered": rep["answered"], "refused": rep["refused"],
        "decisions": {k: decisions[k] for k in sorted(decisions)},
        "latency_ms": {"p50": round(percentile(lat, 50) * 1000, 2), "p95": round(percentile(lat, 95) * 1000, 2),
                       "mean": round(sum(lat) / len(lat) * 1000, 2) if lat else None},
        "seconds": {"convert": round(t1 - t0, 2), "index": round(t2 - t1, 2), "answer": round(t3 - t2, 2)},
        "seed_gates_pass": rep["pass"],
    }
    atomic_write_text(os.path.join(args.out, "summary.json"), json.dumps(summary, indent=2) + "\n")
    print("SQuAD 2.0 dev (%d articles, %d paragraphs, %d questions, %d answerable)"
          % (counts["articles"], counts["paragraphs"], len(rows),
             sum(1 for _, g in gold if g["answerable"])))
    for key in ("precision", "chr", "under_refusal", "over_refusal", "recall@5", "pass_rate", "hallucination"):
        print("  %-16s %.4f" % (key, summary[key]))
    print("  answered %d, refused %d; decisions %s" % (rep["answered"], rep["refused"],
                                                       json.dumps(summary["decisions"])))
    print("  latency per question: p50 %.2f ms, p95 %.2f ms" % (summary["latency_ms"]["p50"],
                                                                 summary["latency_ms"]["p95"]))
    print("  time: convert %.1f s, index %.1f s, answer %.1f s" % (t1 - t0, t2 - t1, t3 - t2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
