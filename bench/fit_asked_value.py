#!/usr/bin/env python3
"""Fit ``mini_rag/data/asked_value.json`` (issue 30, item 2: the asked value) on the fit halves.

``python3 bench/fit_asked_value.py`` runs mini_rag (``configs/default.toml``) once on each
external fit half (SQuAD 2.0 even articles, ContractNLI even contracts; ``answer_data.py``)
and on ``gold/gold.jsonl``, recording for every question part with an asked kind
(``asked.asked_kind``) phase C's candidate pool: each sentence's score, whether it holds a
gold answer in a gold chunk, and its word gap to the question's focus (``asked.focus_gap``).
Then, offline, for every window and margin of the grid and every kind, rule 3b of
``synthesize`` (pick the best candidate within the margin whose asked value lies within the
window of the focus, else refuse) is replayed question by question:

* a part whose pick is phase C's own choice keeps the run's outcome;
* a refusal passes when the question is unanswerable;
* another pick passes when its sentence holds a gold answer in a gold chunk.

A kind is guarded when rule 3b raises the pass count (answerable answered right plus
unanswerable refused) on the fit sets summed, lowers it on no external fit half by more than
``TOLERANCE`` questions and on ``gold/gold.jsonl`` not at all (its committed gates leave no
room: ``incorrect_refusal`` <= 0.02, so no answerable gold question it answers may be
refused); the window and margin are those of the largest total
gain (ties: the larger window, the more lenient rule, then the smaller margin).  The recorded candidates are
cached in ``runs/fit/asked_value/<set>.rows.json`` (``--cached`` replays them without
running mini_rag again).  Nothing
held out (odd halves, ``gold_perturb.jsonl``) is read.  ``--check`` compares with the
committed file instead of writing it.  Deterministic.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import answer_data  # noqa: E402
from mini_rag.answer import asked, synthesize  # noqa: E402
from mini_rag.fileio import atomic_write_text  # noqa: E402

OUT = os.path.join(ROOT, "runs", "fit", "asked_value")
WINDOWS = (2, 3, 4, 6, 8, 12)
MARGINS = (0.0, 0.05, 0.1, 0.2)
TOLERANCE = 2


def _norm(s):
    return " ".join(s.casefold().split())


def collect(cfg, gold_path):
    """Per question: (answerable, the run passed it, [per part: (kind, [(score, correct, gap)])]),
    phase C's candidates best first (at most 12)."""
    from mini_rag.eval.evaluate import read_gold
    from mini_rag.indexing.index import build_or_load
    from mini_rag.pipeline import Pipeline
    from mini_rag.search.retrieve import Retriever
    retriever = Retriever(build_or_load(cfg), cfg)
    pipe = Pipeline(cfg, retriever=retriever)
    record = []
    real, saved = synthesize._asked_pick, dict(asked._PARAMS)

    def spy(pool, kind, key, analyzer, echo, bridges, params):
        record.append((kind, [(c[0], c[3].text, c[1], asked.focus_gap(kind, c[3].text, key, analyzer, echo, bridges))
                              for c in pool[:12]]))
        return pool[0]

    out = []
    synthesize._asked_pick = spy
    asked._PARAMS[asked.DATA_FILE] = {"window": 0, "margin": 0.0, "guard_kinds": list(asked.KINDS)}
    try:
        for _, g in read_gold(gold_path):
            del record[:]
            res = pipe.answer(g["question"], qid=g["qid"], doc_scope=g.get("doc_scope"))
            subs = [_norm(x) for x in g.get("gold_claim_substr") or []]
            cites = set(g.get("gold_citations") or [])
            ans = bool(g.get("answerable", True))
            aj = res.row["answer_json"]
            shipped = bool(aj["citations"])
            passed = (shipped and ans and any(s in _norm(aj["claim"]) for s in subs) and bool(cites & set(aj["citations"]))
                      ) or (not shipped and not ans)
            parts = [(kind, [(sc, ans and any(s in _norm(text) for s in subs) and res.facts_b[fi].chunk_id in cites, gap)
                             for sc, text, fi, gap in pool]) for kind, pool in record]
            out.append((ans, passed, shipped, parts))
    finally:
        synthesize._asked_pick = real
        asked._PARAMS.clear()
        asked._PARAMS.update(saved)
    return out


def replay(rows, kinds, window, margin):
    """The pass count with rule 3b on for ``kinds`` at ``window`` / ``margin`` (see the module
    docstring); a question of several parts keeps the run's outcome unless its only part is
    replayed."""
    total = 0
    for ans, passed, shipped, parts in rows:
        if len(parts) != 1 or parts[0][0] not in kinds or not shipped:
            total += passed
            continue
        pool = parts[0][1]
        floor = pool[0][0] - margin
        pick = next((i for i, (sc, _ok, gap) in enumerate(pool) if sc >= floor and gap is not None and gap <= window),
                    None)
        if pick == 0:
            total += passed
        elif pick is None:
            total += not ans
        else:
            total += bool(pool[pick][1])
    return total


def new_refusals(rows, kinds, window, margin):
    """Answerable questions the run shipped that rule 3b would refuse."""
    n = 0
    for ans, _passed, shipped, parts in rows:
        if not ans or not shipped or len(parts) != 1 or parts[0][0] not in kinds:
            continue
        pool = parts[0][1]
        floor = pool[0][0] - margin
        if not any(sc >= floor and gap is not None and gap <= window for sc, _ok, gap in pool):
            n += 1
    return n


def fit(sets):
    """{"window", "margin", "guard_kinds", "gain"}: see the module docstring."""
    best = None
    for window in WINDOWS:
        for margin in MARGINS:
            kinds = []
            for kind in asked.KINDS:
                gains = [replay(rows, {kind}, window, margin) - replay(rows, set(), window, margin)
                         for rows in sets.values()]
                floors = [0 if name == "gold" else -TOLERANCE for name in sets]
                if sum(gains) > 0 and all(g >= f for g, f in zip(gains, floors)) and \
                        new_refusals(sets.get("gold", []), {kind}, window, margin) == 0:
                    kinds.append(kind)
            gains = {name: replay(rows, set(kinds), window, margin) - replay(rows, set(), window, margin)
                     for name, rows in sets.items()}
            key = (sum(gains.values()), window, -margin)
            if best is None or key > best[0]:
                best = (key, {"window": window, "margin": margin, "guard_kinds": kinds, "gain": gains})
    return best[1]


def cached(name, use, make):
    """The recorded rows of one set: from its cache file when ``use``, else ``make()`` (then cached)."""
    path = os.path.join(OUT, name + ".rows.json")
    if use and os.path.isfile(path):
        with open(path, encoding="utf-8") as fh:
            return [(a, p, s, [(k, [tuple(c) for c in pool]) for k, pool in parts]) for a, p, s, parts in json.load(fh)]
    rows = make()
    os.makedirs(OUT, exist_ok=True)
    atomic_write_text(path, json.dumps(rows) + "\n")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Fit mini_rag/data/asked_value.json on the fit halves.")
    ap.add_argument("--check", action="store_true", help="compare with the committed file, write nothing")
    ap.add_argument("--cached", action="store_true", help="replay the cached candidates of an earlier run")
    args = ap.parse_args(argv)
    from mini_rag.commands.cmd_answer import resolve_config
    base = resolve_config(None)
    sets, sources = {}, {}
    for name in answer_data.SETS:
        d = os.path.join(OUT, name + "-fit")
        info = answer_data.prepare(name, "fit", d)
        if info is None:
            print("fit_asked_value: %s fit half absent, not fitted" % name, file=sys.stderr)
            return 2
        cfg = copy.deepcopy(base)
        cfg["corpus"]["path"] = info["corpus"]
        cfg["index"]["path"] = os.path.join(d, "index.json.gz")
        sets[name + "-fit"] = cached(name + "-fit", args.cached, lambda: collect(cfg, info["gold"]))
        sources[name + "-fit"] = [os.path.relpath(p, os.path.dirname(ROOT)) + " sha256 " + answer_data.sha256_of(p)
                                  for p in answer_data.sources(name)]
        print("fit_asked_value: %s: %d questions" % (name, len(sets[name + "-fit"])), file=sys.stderr, flush=True)
    gold = os.path.join(ROOT, "gold", "gold.jsonl")
    sets["gold"] = cached("gold", args.cached, lambda: collect(copy.deepcopy(base), gold))
    sources["gold"] = ["gold/gold.jsonl sha256 " + answer_data.sha256_of(gold)]
    params = fit(sets)
    doc = {"command": "python3 bench/fit_asked_value.py", "fitted_on": sources,
           "grid": {"window": list(WINDOWS), "margin": list(MARGINS), "tolerance": TOLERANCE},
           "window": params["window"], "margin": params["margin"], "guard_kinds": params["guard_kinds"],
           "pass_gain_on_fit": params["gain"]}
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    if args.check:
        with open(asked.DATA_FILE, encoding="utf-8") as fh:
            same = fh.read() == text
        print("fit_asked_value: %s" % ("identical" if same else "DIFFERS"), file=sys.stderr)
        return 0 if same else 1
    atomic_write_text(asked.DATA_FILE, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
