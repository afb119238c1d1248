#!/usr/bin/env python3
"""Does a decision depend on what else is in the index? (issue 43, item 2)

ContractNLI's held-out half (``answer_data.py``: odd contracts; every question scoped to its
contract with ``doc_scope``) is answered twice with the same configuration:

* **all**: one index over all the held-out contracts (what ``bench_answer.py`` measures);
* **one**: one index per contract, each question asked of its own contract's index.

The bench prints how many questions get a different decision (shipped vs refused), a different
answer (claim or citations), and each arrangement's precision / under- / over-refusal / pass rate
(``score_eval.py``, k 5), with the naive baseline (``naive_baseline.py``) arranged the same way.
``--set KEY=VALUE`` (repeatable; ``answer.min_key_coverage=0.6``, JSON values) runs a variant:
``--set 'answer.term_weights="index"'`` the index's idf for scoped questions too (before issue 43
item 2; the default ``"document"`` weighs a scoped question's terms by general English and its
document's own idf, ``mini_rag/indexing/background.py``).

Indexes and traces are kept under ``runs/bench/independence/`` (an index is rebuilt only when
its corpus or settings change).

    python3 bench/bench_index_independence.py [--set 'answer.term_weights="index"'] [--tag NAME] [--squad]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import answer_data  # noqa: E402
from bench_answer import _merge  # noqa: E402
from naive_baseline import Naive  # noqa: E402

from mini_rag.errors import MiniRagError  # noqa: E402
from mini_rag.eval import calibrate as cal  # noqa: E402
from mini_rag.eval.evaluate import read_gold  # noqa: E402
from mini_rag.fileio import atomic_write_text, dumps_jsonl  # noqa: E402

OUT = os.path.join("runs", "bench", "independence")
KEYS = ("precision", "under_refusal", "over_refusal", "pass_rate")


def _retriever(cfg):
    from mini_rag.indexing.index import build_or_load
    from mini_rag.search.retrieve import Retriever
    import io
    return Retriever(build_or_load(cfg, log=io.StringIO()), cfg)


def answer_all(retriever, cfg, gold):
    from mini_rag.pipeline import Pipeline
    pipe = Pipeline(cfg, retriever=retriever)
    naive = Naive(retriever, cfg["answer"]["refusal"])
    rows, nrows = {}, {}
    for _, g in gold:
        rows[g["qid"]] = pipe.answer(g["question"], qid=g["qid"], doc_scope=g.get("doc_scope")).row
        nrows[g["qid"]] = naive.answer(g["question"], g["qid"], g.get("doc_scope"))
    return rows, nrows


def squad_figures(base, args):
    """SQuAD's half (one index over its articles, unscoped questions): mini_rag and naive."""
    d = os.path.join(args.out, "squad-%s" % args.half)
    info = answer_data.prepare("squad", args.half, d)
    if info is None:
        return {}
    gold = read_gold(info["gold"])
    cfg = _merge(base, {"corpus": {"path": info["corpus"]}, "index": {"path": os.path.join(d, "index.json.gz")}})
    rows, nrows = answer_all(_retriever(cfg), cfg, gold)
    out = {}
    os.makedirs(os.path.join(d, "score"), exist_ok=True)
    for name, got in (("mini_rag", rows), ("naive", nrows)):
        ordered = [got[g["qid"]] for _, g in gold]
        res = cal.score_point(info["gold"], ordered, os.path.join(d, "score"), "%s.%s" % (args.tag, name), "none",
                              "baseline", base["answer"]["refusal"])
        out[name] = {k: res["metrics"][k]["value"] for k in KEYS}
    return out


def split_corpus(corpus_path, out_dir):
    """One corpus file per document: {doc_id: path}."""
    docs = {}
    with open(corpus_path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            docs[row["_id"]] = row
    out = {}
    for doc_id, row in sorted(docs.items()):
        d = os.path.join(out_dir, "one", doc_id)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "corpus.jsonl")
        text = json.dumps(row, ensure_ascii=False) + "\n"
        if not os.path.isfile(path) or open(path, encoding="utf-8").read() != text:
            atomic_write_text(path, text)
        out[doc_id] = path
    return out


def shipped(row):
    return bool(row["answer_json"]["citations"])


def compare(a, b, order):
    decision = [q for q in order if shipped(a[q]) != shipped(b[q])]
    answer = [q for q in order if a[q]["answer_json"] != b[q]["answer_json"]]
    return decision, answer


def parse_sets(pairs):
    over = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        section, _, name = key.partition(".")
        if not section or not name or not _:
            raise SystemExit("--set: want SECTION.KEY=VALUE, got %r" % pair)
        over.setdefault(section, {})[name] = json.loads(value)
    return over


def report(args, over, n, docs, dec, ans, ndec, nans, results):
    print("ContractNLI %s half, %d questions, %d contracts; variant %s %s" % (
        args.half, n, docs, args.tag, json.dumps(over, sort_keys=True)))
    print("mini_rag: decision differs %d (%.1f%%), answer differs %d (%.1f%%)" % (
        len(dec), 100.0 * len(dec) / n, len(ans), 100.0 * len(ans) / n))
    print("naive:    decision differs %d (%.1f%%), answer differs %d (%.1f%%)" % (
        len(ndec), 100.0 * len(ndec) / n, len(nans), 100.0 * len(nans) / n))
    print("| arrangement | precision | under-refusal | over-refusal | pass rate |")
    print("|---|---|---|---|---|")
    for name, m in results.items():
        print("| %s | %.3f | %.3f | %.3f | %.3f |" % (name, m["precision"], m["under_refusal"], m["over_refusal"],
                                                     m["pass_rate"]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="ContractNLI held-out: one index per contract vs one index over all.")
    ap.add_argument("--half", default="held", choices=("held", "fit"))
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=JSON", help="config override")
    ap.add_argument("--tag", default="default", help="name of this variant's traces")
    ap.add_argument("--config", default=None)
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--squad", action="store_true",
                    help="also answer SQuAD's half of the same name (one index, unscoped) and score it with naive")
    args = ap.parse_args(argv)
    from mini_rag.commands.cmd_answer import resolve_config
    over = parse_sets(args.set)
    base = _merge(resolve_config(args.config), over)
    d = os.path.join(args.out, "cnli-%s" % args.half)
    info = answer_data.prepare("cnli", args.half, d)
    if info is None:
        print("bench-independence: ContractNLI data absent", file=sys.stderr)
        return 0
    gold = read_gold(info["gold"])
    order = [g["qid"] for _, g in gold]
    try:
        cfg = _merge(base, {"corpus": {"path": info["corpus"]}, "index": {"path": os.path.join(d, "index.json.gz")}})
        all_rows, all_naive = answer_all(_retriever(cfg), cfg, gold)
        one_rows, one_naive = {}, {}
        by_doc = {}
        for line, g in gold:
            by_doc.setdefault(g["doc_scope"], []).append((line, g))
        for doc_id, path in split_corpus(info["corpus"], d).items():
            if doc_id not in by_doc:
                continue
            c = _merge(base, {"corpus": {"path": path},
                              "index": {"path": os.path.join(os.path.dirname(path), "index.json.gz")}})
            rows, nrows = answer_all(_retriever(c), c, by_doc[doc_id])
            one_rows.update(rows)
            one_naive.update(nrows)
        results = {}
        work = os.path.join(d, "score")
        os.makedirs(work, exist_ok=True)
        for name, rows in (("all", all_rows), ("one", one_rows), ("naive-all", all_naive), ("naive-one", one_naive)):
            ordered = [rows[q] for q in order]
            atomic_write_text(os.path.join(d, "trace.%s.%s.jsonl" % (args.tag, name)), dumps_jsonl(ordered))
            res = cal.score_point(info["gold"], ordered, work, "%s.%s" % (args.tag, name), "none", "baseline",
                                  base["answer"]["refusal"])
            results[name] = {k: res["metrics"][k]["value"] for k in KEYS}
        dec, ans = compare(all_rows, one_rows, order)
        ndec, nans = compare(all_naive, one_naive, order)
    except MiniRagError as exc:
        print("bench-independence: %s" % exc, file=sys.stderr)
        return 2
    report(args, over, len(order), len(by_doc), dec, ans, ndec, nans, results)
    if args.squad:
        results["squad"] = squad_figures(base, args)
        for name, m in results["squad"].items():
            print("| SQuAD %s %s | %.3f | %.3f | %.3f | %.3f |" % (args.half, name, m["precision"], m["under_refusal"],
                                                                 m["over_refusal"], m["pass_rate"]))
    atomic_write_text(os.path.join(d, "summary.%s.json" % args.tag), json.dumps(
        {"override": over, "decision_differs": dec, "answer_differs": ans, "naive_decision_differs": ndec,
         "results": results}, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
