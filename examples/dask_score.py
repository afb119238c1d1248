#!/usr/bin/env python3
"""Score a trace in shards on a Dask cluster, merge, and check the result against one run.

An example of issue 23's mergeable scoring on an existing distributed engine; never imported
by score_eval.py or mini_rag (Dask is not a dependency of the project).  ``make example-dask``
installs Dask into a throwaway virtualenv (runs/venv-dask) and runs this script there.

Usage::

    python examples/dask_score.py [--gold G --trace T] [--rows N] [--shards N] [--workers N]
                                  [--k 1,5,10] [--gates-file gates.toml] [--dataset NAME]
                                  [--workdir DIR]

Steps:

1. Input: ``--gold``/``--trace``, or (default) ``--rows`` generated gold and trace rows
   (bench/bench_scorer.py's generator, fixed seed) in the work directory.
2. The trace is cut into ``--shards`` consecutive pieces (score_eval's merge wants the
   shards in trace order; the gold file is read whole by every shard).
3. A ``dask.distributed.LocalCluster`` (``--workers`` worker processes, one thread each)
   runs one task per shard: ``score_eval.py --gold G --trace SHARD --partial PART.json``
   in a subprocess of the worker.
4. ``score_eval.py merge PART... --trace T --gates-file ... --out merged.json`` makes the
   report; ``score_eval.py --gold G --trace T ... --out single.json`` makes it in one process.
5. The two JSON reports, stdouts, stderrs and exit statuses must be byte-identical.

Exit status: 0 identical, 1 they differ, 2 bad arguments, Dask missing, or a shard failed.
The work directory (default: a temporary one, removed at the end) keeps
single.json, merged.json and the partials when given with ``--workdir``.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCORER = str(ROOT / "score_eval.py")


def score_shard(python: str, gold: str, shard: str, part: str, k: str) -> tuple:
    """One Dask task: score_eval.py --partial over one shard; (exit status, stderr)."""
    p = subprocess.run([python, SCORER, "--gold", gold, "--trace", shard, "--k", k, "--partial", part],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    return p.returncode, p.stderr


def split_trace(trace: Path, shards: int, folder: Path) -> list:
    """Cut ``trace`` into ``shards`` consecutive pieces of (nearly) equal line counts."""
    with open(trace, "rb") as fh:
        lines = fh.readlines()
    size = max(1, -(-len(lines) // shards))
    paths = []
    for j in range(shards):
        piece = lines[j * size:(j + 1) * size]
        if not piece and paths:
            break
        path = folder / ("shard%03d.jsonl" % j)
        with open(path, "wb") as fh:
            fh.writelines(piece)
        paths.append(path)
    return paths


def scorer_outputs(argv: list, out: Path) -> tuple:
    """(exit status, stdout, stderr, the --out report's bytes) of one score_eval.py command."""
    p = subprocess.run([sys.executable, SCORER] + argv + ["--out", str(out)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout, p.stderr, out.read_bytes() if out.exists() else b""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gold", help="gold JSONL (with --trace; default: generated rows)")
    ap.add_argument("--trace", help="trace JSONL (with --gold)")
    ap.add_argument("--rows", type=int, default=20000, help="generated rows when no --gold/--trace (default 20000)")
    ap.add_argument("--shards", type=int, default=7, help="trace shards, one Dask task each (default 7)")
    ap.add_argument("--workers", type=int, default=2, help="Dask worker processes (default 2)")
    ap.add_argument("--k", default="1,5,10", help="cutoffs, as for score_eval.py (default 1,5,10)")
    ap.add_argument("--gates-file", default=str(ROOT / "gates.toml"), help="gates (default gates.toml)")
    ap.add_argument("--dataset", help="gates section, as for score_eval.py")
    ap.add_argument("--workdir", help="keep shards, partials and both reports here (default: a temporary folder)")
    args = ap.parse_args(argv)
    if (args.gold is None) != (args.trace is None):
        print("dask_score: give both --gold and --trace, or neither", file=sys.stderr)
        return 2
    if args.rows < 1 or args.shards < 1 or args.workers < 1:
        print("dask_score: --rows, --shards and --workers must be >= 1", file=sys.stderr)
        return 2
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:
        print("dask_score: dask.distributed does not import (%s); run 'make example-dask', which "
              "installs it into runs/venv-dask" % exc, file=sys.stderr)
        return 2
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="dask_score."))
    work.mkdir(parents=True, exist_ok=True)
    try:
        return _run(args, work, Client, LocalCluster)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


def _run(args, work: Path, Client, LocalCluster) -> int:
    if args.gold:
        gold, trace = Path(args.gold).resolve(), Path(args.trace).resolve()
    else:
        sys.path.insert(0, str(ROOT / "bench"))
        from bench_scorer import generate
        generate(work, args.rows, 7)
        gold, trace = work / "gold.jsonl", work / "trace.jsonl"
    shards = split_trace(trace, args.shards, work)
    parts = [work / ("part%03d.json" % j) for j in range(len(shards))]
    print("dask_score: %s cut into %d shard(s); LocalCluster with %d worker process(es)"
          % (trace, len(shards), args.workers), file=sys.stderr)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        futures = [client.submit(score_shard, sys.executable, str(gold), str(s), str(p), args.k,
                                 key="score-shard-%03d" % j, pure=False)
                   for j, (s, p) in enumerate(zip(shards, parts))]
        results = client.gather(futures)
        workers = len(client.scheduler_info()["workers"])
    for shard, (code, err) in zip(shards, results):
        if code != 0:
            print("dask_score: shard %s failed (exit %d):\n%s" % (shard, code, err), file=sys.stderr)
            return 2
    gates = ["--gates-file", args.gates_file] + (["--dataset", args.dataset] if args.dataset else [])
    merged = scorer_outputs(["merge"] + [str(p) for p in parts] + ["--trace", str(trace)] + gates,
                            work / "merged.json")
    single = scorer_outputs(["--gold", str(gold), "--trace", str(trace), "--k", args.k] + gates,
                            work / "single.json")
    same = merged == single and bool(single[3])
    print("dask_score: %d shard task(s) on %d worker(s); merged report %s the single run's "
          "(exit %d, %d bytes of JSON)" % (len(shards), workers, "byte-identical to" if same else "DIFFERS from",
                                          single[0], len(single[3])), file=sys.stderr)
    if not same:
        for name, a, b in zip(("exit", "stdout", "stderr", "json"), merged, single):
            if a != b:
                print("dask_score: %s differs" % name, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
