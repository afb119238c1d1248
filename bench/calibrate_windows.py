#!/usr/bin/env python3
"""Where a threshold can land inside naive's box, and where calibration puts it (issue 43 item 1).

For the answerability model, with and without MiniLM features, on SQuAD 2.0 and ContractNLI
(``answer_data.py``: even = fit, odd = held out): every question of both halves is answered once
at threshold 0 (rows cached by ``bench_calibrate.Half``) and scored once with ``score_eval.py
--items``; a threshold ``t`` then refuses the shipped rows whose probability is below ``t``
(exactly :func:`mini_rag.eval.calibrate.cut_rows`), so each threshold's figures are counted per
question without answering again:

* precision = shipped answerable items that pass / shipped items; under-refusal = unanswerable
  items shipped / unanswerable; over-refusal = answerable items refused / answerable; pass rate
  = the scorer's (the ``pass`` of its items);
* **box window**: the thresholds of 0, 0.02, ..., 0.80 inside naive's box on a half (precision >=
  naive's + 0.05, under <= naive's, over <= naive's + 0.05), with naive (cover 0.6) scored on the
  same half;
* **objectives** on five seeded draws of 50 fit questions (the draws of ``bench_calibrate.py``):
  ``pass`` (``calibrate``'s: highest pass rate, ties to the committed threshold), ``smooth`` (pass
  rate averaged over the two neighbours each side) and ``bagged`` (the median of ``pass``'s choice
  over 100 seeded bootstrap resamples of the draw); and ``pass`` on the whole fit half.

    python3 bench/calibrate_windows.py [--sets squad,cnli] [--embed-model PATH]

Writes ``runs/bench/calibrate/windows.json`` and prints a Markdown table.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import bench_calibrate as bc  # noqa: E402
from bench_answer import embed_system  # noqa: E402

from mini_rag.eval.calibrate import THRESHOLDS  # noqa: E402
from mini_rag.fileio import atomic_write_text, dumps_jsonl, scorer  # noqa: E402

SEEDS = (1, 2, 3, 4, 5)


def items_at_zero(half, system):
    """[{ans, shipped, pass, p}] of every question of ``half``, answered at threshold 0."""
    order = [g["qid"] for _, g in half.gold]
    got = half.rows(system.name, system.cfg, system.run_values(system.default_point()), order)
    work = os.path.join(half.dir, "windows")
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, "trace.%s.jsonl" % system.name)
    items = os.path.join(work, "items.%s.jsonl" % system.name)
    atomic_write_text(trace, dumps_jsonl([got[q]["row"] for q in order]))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        status = scorer().main(["--gold", half.gold_path, "--trace", trace, "--k", "5", "--gates", "none",
                                "--items", items, "--refusal", half.refusal,
                                "--out", os.path.join(work, "report.%s.json" % system.name)])
    if status != 0:
        raise SystemExit("calibrate_windows: score_eval exited %d on %s" % (status, trace))
    with open(items, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    return [{"ans": r["answerable"], "shipped": r["shipped"], "pass": r["pass"], "p": got[r["qid"]]["p"]}
            for r in rows]


def figures(items, t):
    shipped = answerable = unanswerable = good = shipped_u = refused_a = passed = 0
    for it in items:
        ships = it["shipped"] and (it["p"] is None or it["p"] >= t)
        if it["ans"]:
            answerable += 1
            refused_a += not ships
            passed += bool(it["pass"] and ships)
        else:
            unanswerable += 1
            shipped_u += ships
            passed += not ships
        if ships:
            shipped += 1
            good += bool(it["ans"] and it["pass"])
    return {"precision": good / shipped if shipped else 1.0,
            "under_refusal": shipped_u / unanswerable if unanswerable else 0.0,
            "over_refusal": refused_a / answerable if answerable else 0.0,
            "pass_rate": passed / len(items)}


def inside(m, naive):
    return bc.inside_box(m, naive)


def best(items, default, objective):
    return min(THRESHOLDS, key=lambda t: (-objective(items, t), abs(t - default), t))


def pass_rate(items, t):
    return figures(items, t)["pass_rate"]


def smooth(items, t):
    near = [min(max(round(t + 0.02 * k, 2), 0.0), 0.8) for k in (-2, -1, 0, 1, 2)]
    return statistics.mean(pass_rate(items, x) for x in near)


def bagged(items, default, seed=0, resamples=100):
    rnd = random.Random(seed)
    picks = [best([items[rnd.randrange(len(items))] for _ in items], default, pass_rate) for _ in range(resamples)]
    return statistics.median(picks)


def study(fit, held, naive_fit, naive_held, default):
    out = {"fit_window": [t for t in THRESHOLDS if inside(figures(fit, t), naive_fit)],
           "held_window": [t for t in THRESHOLDS if inside(figures(held, t), naive_held)]}
    whole = best(fit, default, pass_rate)
    out["whole_fit_pass"] = {"t": whole, "held": figures(held, whole), "inside": inside(figures(held, whole), naive_held)}
    choosers = {"pass": lambda s: best(s, default, pass_rate), "smooth": lambda s: best(s, default, smooth),
                "bagged": lambda s: bagged(s, default)}
    for name, choose in choosers.items():
        picks = [choose(random.Random(seed).sample(fit, 50)) for seed in SEEDS]
        out[name] = {"t": picks, "inside": sum(inside(figures(held, t), naive_held) for t in picks)}
    return out


def render(results):
    lines = ["| set | model | box window, fit half | box window, held-out half | pass rate on the whole fit half: t, "
             "held P / under / over | draws of 50 inside (t per draw): pass | smooth | bagged |",
             "|---|---|---|---|---|---|---|---|"]
    for (name, system), r in results.items():
        w = r["whole_fit_pass"]
        h = w["held"]
        cells = ["%d/5 (%s)" % (r[o]["inside"], ", ".join("%g" % t for t in r[o]["t"])) for o in ("pass", "smooth", "bagged")]
        lines.append("| %s | %s | %s | %s | %g: %.3f / %.3f / %.3f%s | %s |" % (
            name, system, ", ".join("%g" % t for t in r["fit_window"]) or "none",
            ", ".join("%g" % t for t in r["held_window"]) or "none", w["t"], h["precision"], h["under_refusal"],
            h["over_refusal"], " (inside)" if w["inside"] else "", " | ".join(cells)))
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="squad,cnli")
    ap.add_argument("--embed-model", default="", metavar="PATH")
    args = ap.parse_args(argv)
    from mini_rag.commands.cmd_answer import resolve_config
    base = resolve_config(None)
    systems = [bc.System("model", {"answer": {"answerability": True}})]
    embed, why = embed_system(args.embed_model)
    if embed is None:
        print("calibrate_windows: model+embed skipped: %s" % why, file=sys.stderr)
    else:
        systems.append(bc.System("model+embed", embed[1]))
    results = {}
    for name in [s for s in args.sets.split(",") if s]:
        try:
            fit, held = bc.Half(base, name, "fit", bc.OUT), bc.Half(base, name, "held", bc.OUT)
        except LookupError:
            print("calibrate_windows: %s skipped: data absent" % name, file=sys.stderr)
            continue
        naive = [bc.score_rows(h.gold_path, h.naive_rows(), os.path.join(h.dir, "score"), "naive") for h in (fit, held)]
        for system in systems:
            default = system.default_point()[bc.POINT_KEYS[system.mode][0]]
            results[(name, system.name)] = study(items_at_zero(fit, system), items_at_zero(held, system),
                                                 naive[0], naive[1], default)
    os.makedirs(bc.OUT, exist_ok=True)
    atomic_write_text(os.path.join(bc.OUT, "windows.json"),
                      json.dumps({"%s/%s" % k: v for k, v in results.items()}, indent=2, sort_keys=True) + "\n")
    print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
