#!/usr/bin/env python3
"""Bench: the speed ratios of issue 32 in one table, from one run, with the load average.

Usage: python3 bench/bench_ratios.py [--rows 300000,1000000] [--rounds 1] [--before FILE] [--json FILE]

Rows of the table (CPU time of child processes, ``os.wait4``: user + system, so a busy
machine inflates wall time more than these; each figure is the best of ``--rounds``):

* scorer, N rows: ``score_eval.py`` vs seed 002's reference scorer on bench_scorer's
  generated gold + trace, without a gates file (target <= 1.0x) and with the repository's
  gates.toml (target <= 1.25x); peak memory ratio alongside.
* TREC mode: ``score_eval.py --qrels --run --format trec`` vs pytrec_eval, 1,000 queries x
  1,000 documents (bench_trec; target <= 1.5x); skipped without the peer.

``--before FILE`` adds the same rows for another score_eval.py (e.g. ``git show
HEAD~5:score_eval.py > /tmp/old.py``) from the same run, for a before/after table, and says
whether the two reports (the whole JSON, items included) are byte-identical (or identical but
for the fields computed only on request, issue 40: bench_identical.only_on_request);
bench/bench_identical.py does the same on the committed traces.
The load average (1, 5, 15 min) is printed at the start and at the end, and the 1-minute load
after each scorer row's runs (ours / the reference's) in the table.
"""
import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_identical  # noqa: E402
import bench_scorer  # noqa: E402
import bench_trec  # noqa: E402


def load() -> str:
    return "%.2f %.2f %.2f" % os.getloadavg()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="300000,1000000", help="scorer sizes, comma-separated (default 300000,1000000)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--before", default="", help="another score_eval.py to measure in the same run")
    ap.add_argument("--keep", help="keep generated data here (reused by later runs)")
    ap.add_argument("--json", help="also write the table as JSON here")
    args = ap.parse_args(argv)
    rows = []
    identical = []
    start_load = load()
    print("load average at start: %s (%d CPUs)" % (start_load, os.cpu_count() or 0), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_ratios_") as tmp:
        base = Path(args.keep or tmp).resolve()
        for n in [int(x) for x in args.rows.split(",") if x]:
            folder = base / ("scorer-%d" % n)
            folder.mkdir(parents=True, exist_ok=True)
            stamp = folder / ("rows-%d-seed-7" % n)
            if not stamp.exists():
                bench_scorer.generate(folder, n, 7)
                stamp.write_text("")
            res = bench_scorer.compare(folder, args.rounds, args.before)
            if args.before:     # the whole JSON report (items included) byte for byte
                optional = bench_identical.on_request(str(bench_scorer.ROOT / "score_eval.py"))
                for name in ("score_eval", "score_eval+gates.toml"):
                    other = "before" + name[len("score_eval"):]
                    ours, theirs = (folder / (name + ".json")).read_bytes(), (folder / (other + ".json")).read_bytes()
                    same = "identical" if ours == theirs else (
                        "identical but for fields computed on request"
                        if bench_identical.only_on_request(theirs, ours, optional) else "DIFFERS")
                    identical.append("%dk rows, %s: %s" % (n // 1000, name, same))
            ref = res["runs"]["reference"]
            for name, target in (("score_eval", 1.0), ("score_eval+gates.toml", 1.25), ("before", 1.0),
                                 ("before+gates.toml", 1.25)):
                if name in res["runs"]:
                    o = res["runs"][name]
                    rows.append({"what": "scorer %dk rows: %s" % (n // 1000, name), "ours_cpu_s": round(o[3], 2),
                                 "peer": "seed 002 reference", "peer_cpu_s": round(ref[3], 2),
                                 "ratio": round(o[3] / ref[3], 2), "target": target,
                                 "memory_ratio": round(o[2] / ref[2], 2), "agree": res["agree"],
                                 "load": "%.2f / %.2f" % (res["load"][name], res["load"]["reference"])})
        folder = base / "trec"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = folder / "q1000-d1000-s11"
        if not stamp.exists():
            bench_trec.generate(folder, 1000, 1000, 11)
            stamp.write_text("")
        res = bench_trec.compare(folder, args.rounds, before=args.before)
        peer = res["runs"].get("pytrec_eval")
        for name in ("score_eval", "before"):
            if name in res["runs"] and peer:
                o = res["runs"][name]
                rows.append({"what": "TREC mode 1000 q x 1000 docs: %s" % name, "ours_cpu_s": round(o[2], 2),
                             "peer": "pytrec_eval", "peer_cpu_s": round(peer[2], 2), "ratio": round(o[2] / peer[2], 2),
                             "target": 1.5, "memory_ratio": round(o[3] / peer[3], 2), "agree": res["agree"],
                             "load": ""})
    end_load = load()
    print()
    print("| what | ours CPU s | peer | peer CPU s | ratio | target | memory ratio | values agree | load after ours / peer |")
    print("|---|---:|---|---:|---:|---:|---:|---|---|")
    for r in rows:
        print("| %s | %.2f | %s | %.2f | %.2fx | <= %.2fx%s | %.2f | %s | %s |" % (
            r["what"], r["ours_cpu_s"], r["peer"], r["peer_cpu_s"], r["ratio"], r["target"],
            "" if r["ratio"] <= r["target"] else " (missed)", r["memory_ratio"], "yes" if r["agree"] else "NO",
            r["load"]))
    print()
    print("load average: %s at start, %s at end (1, 5, 15 min); CPU time of child processes" % (start_load, end_load))
    if identical:
        print("reports against --before (JSON with items, byte for byte): " + "; ".join(identical))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "load_start": start_load, "load_end": end_load},
                                              indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
