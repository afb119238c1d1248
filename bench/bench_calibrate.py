#!/usr/bin/env python3
"""Calibration on 50 questions, measured on held-out halves (``make bench-calibrate``; issue 43).

For SQuAD 2.0 and ContractNLI (``answer_data.py``: even = fit, odd = held out), five seeded
draws of 50 questions from the FIT half each play a user's labelled sample: the operating point
is chosen on the draw exactly as ``python -m mini_rag calibrate`` chooses it
(:mod:`mini_rag.eval.calibrate`: every candidate scored by ``score_eval.py`` under the packaged
user gates, :func:`~mini_rag.eval.calibrate.choose`), then the HELD-OUT half is answered at the
chosen point and scored (k 5, no gates).  Systems:

* **rules**: the default decision, phase C's rules; candidates ``RULE_GRID``;
* **model**: the fitted lexical answerability model (``[answer] answerability = true``);
  candidates its threshold;
* **model+embed**: the same with the MiniLM features, when numpy and the model are there
  (``--embed-model``, ``$MINI_RAG_EMBED_MODEL`` or ``runs/wheels/``), else skipped with a note.

Next to them: mini_rag's default (no calibration), each model at its fitted threshold, and the
naive baseline (``naive_baseline.py``, cover 0.6).  The box (issue 30/43): precision >= naive's +
0.05, under-refusal <= naive's, over-refusal <= naive's + 0.05; the table says in how many of
the five draws the held-out half lands inside it.

``--target fit`` scores the chosen points on the whole fit half instead (for choosing the
objective and grid without reading the held-out half).  Pipeline rows are cached per half,
system and point under ``runs/bench/calibrate/`` (a later run answers only what is missing);
``--fresh`` empties that cache.

    python3 bench/bench_calibrate.py [--sets squad,cnli] [--draws 5] [--size 50] [--target held|fit]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import answer_data  # noqa: E402
from bench_answer import _merge, embed_system  # noqa: E402
from naive_baseline import Naive  # noqa: E402

from mini_rag.calibration import POINT_KEYS  # noqa: E402
from mini_rag.errors import MiniRagError  # noqa: E402
from mini_rag.eval import calibrate as cal  # noqa: E402
from mini_rag.eval.evaluate import read_gold  # noqa: E402
from mini_rag.fileio import atomic_write_bytes, atomic_write_text, dumps_jsonl  # noqa: E402

OUT = os.path.join("runs", "bench", "calibrate")
USER_GATES = os.path.join(ROOT, "mini_rag", "data", "user_gates.toml")
KEYS = ("precision", "under_refusal", "over_refusal", "pass_rate")
SEEDS = (1, 2, 3, 4, 5)


def point_key(values):
    return ",".join("%s=%g" % (k, v) for k, v in sorted(values.items())) or "default"


class Half:
    """One half of one set: its corpus, index, retriever, gold rows and row caches."""

    def __init__(self, base_cfg, name, half, out):
        self.label = "%s-%s" % (name, half)
        self.dir = os.path.join(out, self.label)
        info = answer_data.prepare(name, half, self.dir)
        if info is None:
            raise LookupError(self.label)
        from mini_rag.indexing.index import build_or_load
        from mini_rag.search.retrieve import Retriever
        self.cfg = _merge(base_cfg, {"corpus": {"path": info["corpus"]},
                                     "index": {"path": os.path.join(self.dir, "index.json.gz")}})
        self.gold_path = info["gold"]
        self.gold = read_gold(self.gold_path)
        self.retriever = Retriever(build_or_load(self.cfg), self.cfg)
        self.refusal = self.cfg["answer"]["refusal"]
        self._pipes = {}

    def pipeline(self, system_cfg, values):
        from mini_rag.pipeline import Pipeline
        key = (json.dumps(system_cfg, sort_keys=True), point_key(values))
        if key not in self._pipes:
            self._pipes[key] = Pipeline(_merge(_merge(self.cfg, system_cfg), {"answer": values}),
                                        retriever=self.retriever)
        return self._pipes[key]

    def rows(self, system, system_cfg, values, qids):
        """{qid: {"row", "p"}} for ``qids`` at ``values``, from the cache or answered now."""
        path = os.path.join(self.dir, "rows", system, point_key(values) + ".jsonl.gz")
        have = {}
        if os.path.isfile(path):
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                for line in fh:
                    rec = json.loads(line)
                    have[rec["qid"]] = rec
        missing = set(qids) - set(have)
        todo = [g for _, g in self.gold if g["qid"] in missing]
        if todo:
            pipe = self.pipeline(system_cfg, values)
            for n, g in enumerate(todo, 1):
                res = pipe.answer(g["question"], qid=g["qid"], doc_scope=g.get("doc_scope"))
                have[g["qid"]] = {"qid": g["qid"], "row": res.row, "p": res.answer.detail.get("answerability")}
                if n % 200 == 0:
                    print("  %s %s %s: %d/%d" % (self.label, system, point_key(values), n, len(todo)),
                          file=sys.stderr, flush=True)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            text = "".join(json.dumps(have[q], sort_keys=True) + "\n" for q in sorted(have))
            atomic_write_bytes(path, gzip.compress(text.encode("utf-8"), mtime=0))
        return have

    def naive_rows(self, cover=0.6):
        naive = Naive(self.retriever, self.refusal)
        return [naive.row(g["qid"], g["question"], naive.choose(g["question"], g.get("doc_scope")), cover)
                for _, g in self.gold]


class System:
    """A decision calibrated on the draws: its config, mode and candidate points."""

    def __init__(self, name, cfg):
        self.name, self.cfg = name, cfg
        self.mode = name
        self.points = cal.candidate_points(name, cal.default_point(name))

    def run_values(self, values):
        """The values a pipeline is run at: rules at the point, a model at threshold 0."""
        if self.mode == "rules":
            return values
        return {POINT_KEYS[self.mode][0]: 0.0}

    def default_point(self):
        return cal.default_point(self.mode)

    def rows_at(self, half, values, qids, order):
        """Trace rows of ``order`` (qids) at ``values``."""
        got = half.rows(self.name, self.cfg, self.run_values(values), qids)
        rows = [got[q]["row"] for q in order]
        if self.mode == "rules":
            return rows
        key = POINT_KEYS[self.mode][0]
        return cal.cut_rows(rows, [got[q]["p"] for q in order], values[key], half.refusal)


def score_rows(gold_path, rows, work, tag):
    os.makedirs(work, exist_ok=True)
    res = cal.score_point(gold_path, rows, work, tag, "none", "baseline", "not in context")
    return {k: res["metrics"][k]["value"] for k in KEYS}


def calibrate_draw(system, fit, sample, work):
    """The point chosen on ``sample`` (gold rows of the fit half), and its table row."""
    gold_path = os.path.join(work, "sample.jsonl")
    atomic_write_text(gold_path, dumps_jsonl([g for _, g in sample]))
    order = [g["qid"] for _, g in sample]
    table = []
    for i, values in enumerate(system.points):
        rows = system.rows_at(fit, values, order, order)
        res = cal.score_point(gold_path, rows, work, "p%02d" % i, USER_GATES, "baseline", fit.refusal)
        table.append(dict(res, point=values))
    chosen = cal.choose(table, system.default_point())
    return table[chosen]


def inside_box(m, naive):
    return (m["precision"] is not None and m["precision"] >= naive["precision"] + 0.05 - 1e-9
            and m["under_refusal"] <= naive["under_refusal"] + 1e-9
            and m["over_refusal"] <= naive["over_refusal"] + 0.05 + 1e-9)


def measure_set(name, systems, args, base_cfg):
    fit = Half(base_cfg, name, "fit", args.out)
    target = fit if args.target == "fit" else Half(base_cfg, name, "held", args.out)
    order = [g["qid"] for _, g in target.gold]
    naive = score_rows(target.gold_path, target.naive_rows(), os.path.join(target.dir, "score"), "naive")
    result = {"naive": naive, "systems": {}}
    print("%s naive: %s" % (target.label, naive), file=sys.stderr, flush=True)
    for system in systems:
        scored = {}

        def held(values):
            k = point_key(values)
            if k not in scored:
                rows = system.rows_at(target, values, order, order)
                scored[k] = score_rows(target.gold_path, rows, os.path.join(target.dir, "score"),
                                       "%s.%s" % (system.name, k))
            return scored[k]
        default = system.default_point()
        entry = {"default": dict(held(default), point=default), "draws": []}
        for seed in SEEDS[:args.draws]:
            sample = random.Random(seed).sample(fit.gold, args.size)
            work = os.path.join(fit.dir, "draws", "%s.seed%d" % (system.name, seed))
            os.makedirs(work, exist_ok=True)
            row = calibrate_draw(system, fit, sample, work)
            got = held(row["point"])
            entry["draws"].append({"seed": seed, "point": row["point"], "passes_gates": row["passes"],
                                   "sample": cal.figures(row["metrics"]), "held": got,
                                   "inside": inside_box(got, naive)})
            print("%s %s seed %d: %s -> %s%s" % (target.label, system.name, seed, point_key(row["point"]), got,
                                                 " inside" if entry["draws"][-1]["inside"] else ""),
                  file=sys.stderr, flush=True)
        result["systems"][system.name] = entry
    return target.label, result


def _mean_sd(values):
    vals = [v for v in values if v is not None]
    if not vals:
        return "—"
    sd = statistics.pstdev(vals) if len(vals) > 1 else 0.0
    return "%.3f ± %.3f" % (statistics.mean(vals), sd)


def render(results):
    lines = ["| set | system | operating point (per draw) | precision | under-refusal | over-refusal | pass rate "
             "| inside the box |", "|---|---|---|---|---|---|---|---|"]
    for label, r in results.items():
        nv = r["naive"]
        for name, e in r["systems"].items():
            d = e["default"]
            lines.append("| %s | %s, default (%s) | — | %.3f | %.3f | %.3f | %.3f | %s |" % (
                label, name, point_key(d["point"]), d["precision"], d["under_refusal"], d["over_refusal"],
                d["pass_rate"], "yes" if inside_box(d, nv) else "no"))
            draws = e["draws"]
            if not draws:
                continue
            lines.append("| %s | %s, calibrated on 50 fit questions | %s | %s | %s | %s | %s | %d of %d |" % (
                label, name, "; ".join(point_key(x["point"]) for x in draws),
                _mean_sd(x["held"]["precision"] for x in draws), _mean_sd(x["held"]["under_refusal"] for x in draws),
                _mean_sd(x["held"]["over_refusal"] for x in draws), _mean_sd(x["held"]["pass_rate"] for x in draws),
                sum(1 for x in draws if x["inside"]), len(draws)))
        lines.append("| %s | naive (cover 0.6) | — | %.3f | %.3f | %.3f | %.3f | box: P >= %.3f, under <= %.3f, "
                     "over <= %.3f |" % (label, nv["precision"], nv["under_refusal"], nv["over_refusal"],
                                         nv["pass_rate"], nv["precision"] + 0.05, nv["under_refusal"],
                                         nv["over_refusal"] + 0.05))
    lines.append("")
    lines.append("Per draw (sample figures are the scorer's on the 50 drawn questions with Wilson 95% intervals; "
                 "held: the target half at the chosen point):")
    lines.append("")
    for label, r in results.items():
        for name, e in r["systems"].items():
            for x in e["draws"]:
                s = x["sample"]["pass_rate"]
                lines.append("- %s %s seed %d: %s; sample pass rate %.2f [%.2f, %.2f]%s; held P %.3f / under %.3f / "
                             "over %.3f / pass %.3f%s" % (
                                 label, name, x["seed"], point_key(x["point"]), s["value"], s["low"], s["high"],
                                 "" if x["passes_gates"] else " (no point passed the gates)", x["held"]["precision"],
                                 x["held"]["under_refusal"], x["held"]["over_refusal"], x["held"]["pass_rate"],
                                 ", inside" if x["inside"] else ""))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Calibration on 50 fit questions, measured on the held-out halves.")
    ap.add_argument("--sets", default="squad,cnli", help="comma list of squad, cnli")
    ap.add_argument("--systems", default="rules,model,model+embed", help="comma list of rules, model, model+embed")
    ap.add_argument("--draws", type=int, default=5, help="seeded draws (at most %d)" % len(SEEDS))
    ap.add_argument("--size", type=int, default=50, help="questions per draw")
    ap.add_argument("--target", choices=("held", "fit"), default="held",
                    help="score the chosen points on the held-out half (default) or the fit half")
    ap.add_argument("--config", default=None, help="TOML config (default: configs/default.toml)")
    ap.add_argument("--out", default=OUT, help="output folder (default: %s)" % OUT)
    ap.add_argument("--embed-model", default="", metavar="PATH", help="MiniLM folder or .whl for model+embed")
    ap.add_argument("--fresh", action="store_true", help="empty the row cache first")
    args = ap.parse_args(argv)
    if not 1 <= args.draws <= len(SEEDS):
        ap.error("--draws must be 1 to %d" % len(SEEDS))
    from mini_rag.commands.cmd_answer import resolve_config
    base = resolve_config(args.config)
    wanted = [s for s in args.systems.split(",") if s]
    embed, why = embed_system(args.embed_model)
    systems = []
    for name in wanted:
        if name == "rules":
            systems.append(System("rules", {}))
        elif name == "model":
            systems.append(System("model", {"answer": {"answerability": True}}))
        elif name == "model+embed":
            if embed is None:
                print("bench-calibrate: model+embed skipped: %s" % why, file=sys.stderr)
                continue
            systems.append(System("model+embed", embed[1]))
        else:
            ap.error("--systems: unknown %r" % name)
    if args.fresh and os.path.isdir(args.out):
        shutil.rmtree(args.out)
    results = {}
    try:
        for name in [s for s in args.sets.split(",") if s]:
            if name not in answer_data.SETS:
                ap.error("--sets: unknown %r" % name)
            try:
                label, r = measure_set(name, systems, args, base)
            except LookupError:
                print("bench-calibrate: %s skipped: data absent" % name, file=sys.stderr)
                continue
            results[label] = r
    except MiniRagError as exc:
        print("bench-calibrate: %s" % exc, file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    atomic_write_text(os.path.join(args.out, "summary.%s.json" % args.target),
                      json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
