#!/usr/bin/env python3
"""Bench: score_eval.py's TREC mode against pytrec_eval (trec_eval's C code) on one run.

Usage: python3 bench/bench_trec.py [--queries 1000] [--docs 1000] [--rounds 1] [--keep DIR]

1. Generates a qrels file (per query 60 judged documents: levels 0-3, about a third
   relevant) and a run (``--docs`` documents per query, random scores, about half of the
   judged documents among them), seeded, so every run sees the same bytes.
2. Installs ``pytrec-eval-terrier`` into a throwaway virtualenv (runs/venv-trec, pip from the
   package registry) the first time; without it the peer is skipped with a message.
3. Runs, as child processes, back to back: ``score_eval.py --qrels --run --format trec -m ...``
   and a pytrec_eval script that reads the same files (``pytrec_eval.parse_qrel`` /
   ``parse_run``) and evaluates the same measures; both print every query's values.  CPU
   time is the child's user + system time (``os.wait4``); with ``--rounds`` each is the best.
4. Checks that the "all" values agree to 4 decimals and prints the CPU ratio ours / peer.

Exit status 0 when the values agree (or the peer is missing), 1 when they differ.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / "runs" / "venv-trec"
PEER = "pytrec-eval-terrier==0.5.11"
MEASURES = ["num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "P", "recall",
            "ndcg_cut", "success"]
PEER_SCRIPT = r'''
import sys, pytrec_eval
with open(sys.argv[1]) as f:
    qrel = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
measures = set(sys.argv[3].split(","))
res = pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)
names = sorted(next(iter(res.values())))
out = []
for name in names:
    vals = [res[q][name] for q in res]
    total = sum(vals) if name.startswith("num_") else sum(vals) / len(vals)
    out.append("%s\tall\t%.4f" % (name, total))
sys.stdout.write("\n".join(out) + "\n")
'''


def generate(folder: Path, queries: int, docs: int, seed: int) -> None:
    rng = random.Random(seed)
    with open(folder / "qrels", "w") as q, open(folder / "run", "w") as r:
        for n in range(queries):
            topic = "q%d" % n
            judged = {}
            for j in range(60):
                level = rng.choice((0, 0, 0, 0, 1, 1, 2, 3)) if rng.random() < 0.95 else -1
                judged["d%d" % rng.randrange(docs * 20)] = level
            for d, level in judged.items():
                q.write("%s 0 %s %d\n" % (topic, d, level))
            ids = [d for d in judged if rng.random() < 0.5]
            seen = set(ids)
            while len(ids) < docs:
                d = "d%d" % rng.randrange(docs * 20)
                if d not in seen:
                    seen.add(d)
                    ids.append(d)
            for rank, d in enumerate(ids[:docs], 1):
                r.write("%s Q0 %s %d %.6f bench\n" % (topic, d, rank, rng.random() * 20))


def ensure_peer(log) -> str:
    py = VENV / "bin" / "python"
    if py.exists() and subprocess.run([str(py), "-c", "import pytrec_eval"], capture_output=True).returncode == 0:
        return str(py)
    try:
        if not py.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, capture_output=True)
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", PEER],
                       check=True, capture_output=True, timeout=600)
        return str(py)
    except (subprocess.SubprocessError, OSError) as exc:
        log("bench-trec: pytrec_eval not installed (%s); the peer is skipped" % exc)
        return ""


def measure(cmd, out_path: Path):
    """(exit status, wall s, CPU s = the child's user + system time, peak RSS MiB)."""
    with open(out_path, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, cwd=str(out_path.parent))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
    return code, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def all_values(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "all" and parts[0] != "num_q":
            out[parts[0]] = float(parts[2])
    return out


def compare(folder: Path, rounds: int, log=print, before: str = "") -> dict:
    """Run ours (and ``before``, another score_eval.py) and the peer; best CPU over rounds."""
    qrels, run = str(folder / "qrels"), str(folder / "run")
    m = []
    for name in MEASURES:
        m += ["-m", name]
    cmds = {"score_eval": [sys.executable, str(ROOT / "score_eval.py"), "--qrels", qrels, "--run", run,
                           "--gates", "none", "--format", "trec"] + m}
    if before:
        cmds["before"] = [sys.executable, before] + cmds["score_eval"][2:]
    peer = ensure_peer(log)
    if peer:
        (folder / "peer.py").write_text(PEER_SCRIPT)
        cmds["pytrec_eval"] = [peer, str(folder / "peer.py"), qrels, run, ",".join(MEASURES)]
    best: dict = {}
    for _ in range(rounds):
        for name, cmd in cmds.items():
            r = measure(cmd, folder / (name + ".out"))
            old = best.get(name)
            best[name] = r if old is None else (r[0], min(old[1], r[1]), min(old[2], r[2]), min(old[3], r[3]))
    agree = None
    if peer:
        ours, theirs = all_values(folder / "score_eval.out"), all_values(folder / "pytrec_eval.out")
        diff = [k for k in theirs if k in ours and abs(ours[k] - theirs[k]) > 1.5e-4]
        missing = [k for k in theirs if k not in ours]
        agree = not diff and len(theirs) > 0
        if diff or missing:
            log("bench-trec: values differ: %s; only the peer has: %s" % (", ".join(diff) or "none", ", ".join(missing) or "none"))
    return {"runs": best, "agree": agree}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--docs", type=int, default=1000, help="documents per query in the run (default 1000)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--before", default="", help="also run this score_eval.py")
    ap.add_argument("--keep", help="generate into this directory and keep it (reused when it holds the same sizes)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_trec_") as tmp:
        folder = Path(args.keep or tmp).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        stamp = folder / ("q%d-d%d-s%d" % (args.queries, args.docs, args.seed))
        if not stamp.exists():
            generate(folder, args.queries, args.docs, args.seed)
            stamp.write_text("")
        res = compare(folder, args.rounds, before=args.before)
        for name, (code, wall, cpu, rss) in res["runs"].items():
            print("%-12s exit %d  wall %6.2fs  CPU %6.2fs  peak RSS %7.1f MiB" % (name, code, wall, cpu, rss))
        if "pytrec_eval" in res["runs"]:
            p = res["runs"]["pytrec_eval"][2]
            for name in [n for n in res["runs"] if n != "pytrec_eval"]:
                print("ratio %s / pytrec_eval: CPU %.2f" % (name, res["runs"][name][2] / p))
            print("values agree (all, 4 decimals): %s" % ("yes" if res["agree"] else "NO"))
        return 0 if res["agree"] in (True, None) else 1


if __name__ == "__main__":
    sys.exit(main())
