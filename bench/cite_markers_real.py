#!/usr/bin/env python3
"""Citation markers score_eval.py reads in real LLM text that cites nothing (false markers).

Usage: python3 bench/cite_markers_real.py [--show N]

Runs score_eval.read_citations (built-in patterns) over the responses of three sets of real
LLM output in ../shared/data (none of them asked the models to cite by marker):
refchecker/responses.jsonl (``response``), evouna_nq/nq.jsonl (``answer``) and
faithbench/faithbench.jsonl (``response``), each response read against ten retrieved ids
``ctx-1`` ... ``ctx-10`` (MS MARCO's ten passages; "[3]" resolves by rank).  Prints, per set, the responses,
those with a trigger character, those where a marker was found, the markers (resolved and
bad) and how many responses changed; ``--show N`` prints N found markers with their context
on stderr, to be read (the rows are never written anywhere).  Nothing is committed from the
data; the figures go in the README.
"""
import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import score_eval  # noqa: E402

DATA = Path(os.environ.get("MINI_RAG_DATA", ROOT.parent / "shared" / "data"))
SETS = (("refchecker", "refchecker/responses.jsonl", "response"),
        ("evouna_nq", "evouna_nq/nq.jsonl", "answer"),
        ("faithbench", "faithbench/faithbench.jsonl", "response"))
RETRIEVED = ["ctx-%d" % n for n in range(1, 11)]
LIST_ONLY = tuple(p for p in score_eval.citation_patterns() if "sources" in p[1].groupindex)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--show", type=int, default=0, help="print N found markers in context on stderr")
    args = ap.parse_args(argv)
    shown = 0
    print("| set | responses | with a trigger character | with a marker | markers resolved | markers bad | sources lists |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, rel, field in SETS:
        path = DATA / rel
        if not path.exists():
            print("| %s | (missing: %s) | | | | | |" % (name, path))
            continue
        n = trig = hit = good = bad = lists = 0
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                text = json.loads(line).get(field) or ""
                n += 1
                if score_eval._CITE_TRIGGER.search(text):
                    trig += 1
                rd = score_eval.read_citations(text, RETRIEVED)
                if rd.citations or rd.bad:
                    hit += 1
                    good += len(rd.citations)
                    bad += len(rd.bad)
                    only = score_eval.read_citations(text, RETRIEVED, (), LIST_ONLY)
                    lists += bool(only.citations or only.bad)
                    if shown < args.show:
                        shown += 1
                        sys.stderr.write("--- %s: citations %s bad %s\n%s\n=> %s\n" % (name, rd.citations, rd.bad, text, rd.claim))
        print("| %s | %d | %d | %d | %d | %d | %d |" % (name, n, trig, hit, good, bad, lists))
    return 0


if __name__ == "__main__":
    sys.exit(main())
