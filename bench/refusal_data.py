#!/usr/bin/env python3
"""The labelled refusal sets (issue 28, item 2): which responses, which split, which label.

Real LLM output, labelled by hand (labels in ``bench/labels/``, README there):

* **refchecker** (``../shared/data/refchecker/responses.jsonl``, 1,400 RAG responses of 7
  models): every response the HEDGE expression matches, plus the 150 others whose
  ``sha256("refusal-sample:" + id)`` is smallest.  Split by the integer ``example_id``:
  even = ``fit``, odd = ``dev`` (the 7 models' answers to one question stay in one half).
* **evouna** (``../shared/data/evouna_nq/nq.jsonl``, LLM answers to NQ questions): the 260
  rows the HEDGE expression matches with the smallest ``sha256("refusal-sample:" + id)``,
  plus the 60 non-matching rows of the LLMs (not ``fid``, whose answers are short spans)
  with the smallest such hash.  Split by the question number N of ``qid`` ``evouna-nq-N``:
  even = ``fit``, odd = ``dev``.

``python3 bench/refusal_data.py --dump SET SPLIT`` prints the selected responses (for reading
them to label); ``--counts`` prints the selection's sizes.  Nothing here is copied into
the repository: the labels files hold ids and labels only.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("MINI_RAG_DATA") or os.path.join(os.path.dirname(ROOT), "shared", "data")
LABELS = os.path.join(ROOT, "bench", "labels")
WRITTEN = os.path.join(ROOT, "tests", "data", "refusal_written.jsonl")
LABEL_NAMES = ("answer", "refusal", "partial_refusal")

# The selection expression: words that refusals and hedges use.  It decides only which
# responses were read and labelled (oversampling likely refusals), never a label.
HEDGE = re.compile(
    r"not possible|cannot|can't|can not|couldn't|could not|unable|sorry|no information|"
    r"not (?:provide|mention|contain|specif|clear|enough|sure|able)|does not|doesn't|"
    r"don't know|do not know|unfortunately|insufficient|not found|no (?:mention|answer|specific)|"
    r"unclear|however|afraid|as an ai|not given|don't have|do not have", re.I)

SETS = {
    "refchecker": (os.path.join("refchecker", "responses.jsonl"), "response", 10 ** 9, 150),
    "evouna": (os.path.join("evouna_nq", "nq.jsonl"), "answer", 260, 60),
}


def _key(row_id: str) -> str:
    return hashlib.sha256(("refusal-sample:" + row_id).encode("utf-8")).hexdigest()


def split_of(name: str, row: dict) -> str:
    if name == "refchecker":
        n = int(row["example_id"])
    else:
        n = int(row["qid"].rsplit("-", 1)[1])
    return "fit" if n % 2 == 0 else "dev"


def available(name: str = "refchecker") -> bool:
    return os.path.exists(os.path.join(DATA, SETS[name][0]))


@functools.lru_cache(maxsize=None)
def select(name: str):
    """The selected rows of set ``name`` as (id, split, text), in file order (a tuple)."""
    path, field, n_hedge, n_rest = SETS[name]
    rows = []
    with open(os.path.join(DATA, path), encoding="utf-8") as fh:
        for line in fh:
            rows.append(json.loads(line))
    hedged = [r for r in rows if HEDGE.search(r[field])]
    rest = [r for r in rows if not HEDGE.search(r[field]) and r.get("model") != "fid"]
    chosen = set(r["id"] for r in sorted(hedged, key=lambda r: _key(r["id"]))[:n_hedge])
    chosen |= set(r["id"] for r in sorted(rest, key=lambda r: _key(r["id"]))[:n_rest])
    return tuple((r["id"], split_of(name, r), r[field]) for r in rows if r["id"] in chosen)


def load_labels(name: str) -> dict:
    out = {}
    with open(os.path.join(LABELS, "refusal_%s.jsonl" % name), encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                out[rec["id"]] = rec["label"]
    return out


def labelled(name: str, split: str = None):
    """(id, split, text, label) of the labelled rows of ``name`` (``split``: fit / dev / None)."""
    labels = load_labels(name)
    out = []
    for rid, sp, text in select(name):
        if rid in labels and (split is None or sp == split):
            out.append((rid, sp, text, labels[rid]))
    return out


def labelled_extra():
    """(id, "fit", text, label) of the extra EVOUNA fit-half rows labelled for fitting the refusal
    model only (``bench/labels/refusal_evouna_extra.jsonl``, README there): never part of the
    fit / dev figures.  Every id must be a fit-half row outside ``select("evouna")``."""
    path, field, _, _ = SETS["evouna"]
    labels = {}
    with open(os.path.join(LABELS, "refusal_evouna_extra.jsonl"), encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                labels[rec["id"]] = rec["label"]
    chosen = set(rid for rid, _, _ in select("evouna"))
    out = []
    with open(os.path.join(DATA, path), encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["id"] in labels:
                if split_of("evouna", row) != "fit" or row["id"] in chosen:
                    raise ValueError("refusal_evouna_extra.jsonl: %s is not an unselected fit-half row" % row["id"])
                out.append((row["id"], "fit", row[field], labels[row["id"]]))
    if len(out) != len(labels):
        raise ValueError("refusal_evouna_extra.jsonl: %d ids not found" % (len(labels) - len(out)))
    return out


def written():
    """The written multilingual / safety set: dicts with text, label, lang, kind."""
    with open(WRITTEN, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", nargs=2, metavar=("SET", "SPLIT"))
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--count", type=int, default=10 ** 9)
    ap.add_argument("--counts", action="store_true")
    args = ap.parse_args(argv)
    if args.counts:
        for name in SETS:
            sel = select(name)
            print(name, len(sel), {s: sum(1 for _, sp, _ in sel if sp == s) for s in ("fit", "dev")})
    if args.dump:
        name, split = args.dump
        sel = [s for s in select(name) if split == "all" or s[1] == split]
        for n, (rid, sp, text) in enumerate(sel[args.start:args.start + args.count], args.start):
            print("### %d %s" % (n, rid))
            print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
