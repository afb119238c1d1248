#!/usr/bin/env python3
"""Grounding against people's labels (``make bench-grounding``): FaithBench held-out and fit halves.

For each summary of ../shared/data/faithbench/faithbench.jsonl (CC BY-NC-SA 4.0: read here,
never copied into the repository) the per-answer verdict ``unsupported_answer`` is computed
exactly as score_eval.py computes it for a shipped answer whose cited chunk is the source
passage (``score_eval.ground``), and compared with people's ``hallucinated`` label.  Beside it:

- the 8 released detectors of the ``detectors`` field, each at its own 0.5 cut (a score
  below 0.5 = hallucinated; the two rows where true_nli is null are left out of its line);
- today's ``hallucination`` rule (strict: a content word or number of the answer in no
  chunk, ``score_eval.unsupported_tokens``);
- flag-all (every summary hallucinated).

Halves by source: ``faithbench-bN-sM`` with N even = fit (the model was fitted there, by
bench/fit_grounding.py), N odd = held-out.  Also measured: the cost of grounding per answer
(against the strict rule), and on ../shared/data/refchecker (real RAG answers, no passages)
how often the meta-language filter sets a sentence aside and what kind of sentence.

``--docs`` rewrites the figures block of docs/grounding.md.  Without the data: skipped, exit 0.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import score_eval as se  # noqa: E402
import fit_grounding as fg  # noqa: E402

REFCHECKER = os.path.join(os.path.dirname(ROOT), "shared", "data", "refchecker", "responses.jsonl")
DOC = os.path.join(ROOT, "docs", "grounding.md")
DETECTORS = ("hhemv1", "gpt_4o", "gpt-4-turbo", "hhem-2.1", "trueteacher", "hhem-2.1-english", "true_nli",
             "gpt-3.5-turbo")


def unsupported_answer(row) -> bool:
    return bool(se.ground(row["response"], [row["source_text"]]).unsupported)


def table(rows) -> list:
    """[(name, scores)] for score_eval's grounding, the detectors, the strict rule, flag-all."""
    labels = [bool(r["hallucinated"]) for r in rows]
    out = [("score_eval unsupported_answer (grounding = \"sentences\")",
            fg.scores(labels, [unsupported_answer(r) for r in rows]))]
    for d in DETECTORS:
        have = [r for r in rows if r["detectors"].get(d) is not None]
        out.append(("%s (released detector, score < 0.5)" % d,
                    fg.scores([bool(r["hallucinated"]) for r in have], [r["detectors"][d] < 0.5 for r in have])))
    out.append(("score_eval hallucination (grounding = \"strict\", today's rule)",
                fg.scores(labels, [bool(se.unsupported_tokens(r["response"], [r["source_text"]])) for r in rows])))
    out.append(("flag all", fg.scores(labels, [True] * len(rows))))
    return out


def cost(rows, repeat: int = 3) -> dict:
    """Microseconds per answer: grounding (chunk support cache cleared each pass) vs the strict rule."""
    def timed(fn):
        best = None
        for _ in range(repeat):
            se._CHUNKSETS.clear()
            t0 = time.perf_counter()
            for r in rows:
                fn(r)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        return round(best / len(rows) * 1e6)
    return {"grounding_us_per_answer": timed(unsupported_answer),
            "strict_us_per_answer": timed(lambda r: se.unsupported_tokens(r["response"], [r["source_text"]]))}


_KINDS = (("declines / says the sources lack it", re.compile(
    r"\b(?:not|n't|no|cannot|unable)\b.{0,60}\b(?:mention|say|state|specify|include|contain|provide|find|"
    r"determine|answer|information|details?)\b", re.I)),
          ("courtesy (hope this helps, let me know ...)", re.compile(r"\b(?:hope|let me know|feel free)\b", re.I)),
          ("announces the answer (here is a summary ...)", re.compile(r"\bhere (?:is|are)\b", re.I)))


def meta_stats(path: str) -> dict:
    """How often the meta filter fires on real RAG answers, and what it sets aside (kinds only)."""
    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    answers = fired = sentences = aside = leadin = clause = 0
    kinds: Counter = Counter()
    for r in rows:
        answers += 1
        hit = False
        for _, _, sent, text in se.answer_sentences(r["response"] or ""):
            sentences += 1
            if text is None:
                aside += 1
                hit = True
                kind = next((k for k, rx in _KINDS if rx.search(sent)), "only words about the sources / answer")
                kinds[kind] += 1
            elif text != sent:
                if len(text) < len(sent) - 1 and not sent.endswith(text):
                    clause += 1
                else:
                    leadin += 1
                hit = True
        fired += hit
    return {"answers": answers, "answers_with_a_sentence_set_aside_or_trimmed": fired, "sentences": sentences,
            "sentences_set_aside": aside, "lead_ins_removed": leadin, "declining_clauses_set_aside": clause,
            "set_aside_by_kind": dict(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))}


def _pct(x) -> str:
    return "%.3f" % x


def render(results: dict) -> str:
    out = []
    for half, title in (("held", "Held-out half (N odd: 350 summaries of 35 sources)"),
                        ("fit", "Fit half (N even: 400 summaries of 40 sources; the model was fitted here)")):
        out.append("### %s\n" % title)
        out.append("| verdict | n | balanced accuracy | F1 (hallucinated) | precision | recall | flagged |")
        out.append("|---|---:|---:|---:|---:|---:|---:|")
        for name, s in results[half]:
            out.append("| %s | %d | %s | %s | %s | %s | %s |" % (
                name, s["n"], _pct(s["balanced_accuracy"]), _pct(s["f1"]), _pct(s["precision"]),
                _pct(s["recall"]), _pct(s["flagged"])))
        out.append("")
    fit = results.get("fitted")
    if fit:
        out.append("### What people flag (fit half, from their spans; bench/grounding_fit.json)\n")
        out.append("| checked sentence with ... | sentences | share flagged by people |")
        out.append("|---|---:|---:|")
        for kind, v in fit["mismatch_kinds_fit_half"].items():
            out.append("| %s | %d | %s |" % (kind, v["sentences"], "-" if v["flagged_share"] is None
                                              else "%.3f" % v["flagged_share"]))
        out.append("")
        fb = fit["data"]["faithbench"]
        rt = fit["data"]["ragtruth"]
        out.append("All checked sentences of the fit half: %d, flagged %d (%.3f); RAGTruth's data-to-text fit half "
                   "(the record model): %d, flagged %d. Model: %s."
                   % (fb["checked_sentences"], fb["flagged_sentences"], fb["flagged_sentences"] / fb["checked_sentences"],
                      rt["record_checked_sentences"], rt["record_flagged_sentences"],
                      json.dumps(fit["model"], sort_keys=True)))
        out.append("")
    c = results["cost"]
    out.append("Cost on the held-out half (best of 3, one core): grounding %d us per answer, the strict rule %d us."
               % (c["grounding_us_per_answer"], c["strict_us_per_answer"]))
    m = results.get("meta")
    if m:
        out.append("")
        out.append("Meta-language filter on ../shared/data/refchecker (%d real RAG answers of 7 LLMs, no passages): "
                   "%d answers (%.1f%%) have a sentence set aside or trimmed; of %d sentences, %d set aside, "
                   "%d lead-ins about the sources removed, %d declining clauses set aside. Set aside, by kind: %s."
                   % (m["answers"], m["answers_with_a_sentence_set_aside_or_trimmed"],
                      100.0 * m["answers_with_a_sentence_set_aside_or_trimmed"] / m["answers"], m["sentences"],
                      m["sentences_set_aside"], m["lead_ins_removed"], m["declining_clauses_set_aside"],
                      "; ".join("%s %d" % kv for kv in m["set_aside_by_kind"].items())))
    return "\n".join(out) + "\n"


BEGIN, END = "<!-- grounding-figures:begin -->", "<!-- grounding-figures:end -->"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=fg.DATA)
    ap.add_argument("--refchecker", default=REFCHECKER)
    ap.add_argument("--docs", action="store_true", help="rewrite the figures block of docs/grounding.md")
    args = ap.parse_args(argv)
    if not os.path.isfile(args.data):
        print("bench_grounding: %s not found: skipped" % args.data, file=sys.stderr)
        return 0
    results = {half: table(fg.load(args.data, half)) for half in ("held", "fit")}
    results["cost"] = cost(fg.load(args.data, "held"))
    if os.path.isfile(fg.OUT):
        with open(fg.OUT, encoding="utf-8") as fh:
            results["fitted"] = json.load(fh)
    if os.path.isfile(args.refchecker):
        results["meta"] = meta_stats(args.refchecker)
    text = render(results)
    sys.stdout.write(text)
    if args.docs:
        with open(DOC, encoding="utf-8") as fh:
            doc = fh.read()
        head, rest = doc.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        with open(DOC + ".tmp", "w", encoding="utf-8") as fh:
            fh.write(head + BEGIN + "\n" + text + END + tail)
        os.replace(DOC + ".tmp", DOC)
        print("bench_grounding: wrote %s" % DOC, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
