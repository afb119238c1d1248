#!/usr/bin/env python3
"""Bench: score_eval.py against seed 002's reference scorer on generated gold + trace rows.

Usage: python3 bench/bench_scorer.py [--rows 1000000] [--seed 7] [--keep DIR]

1. Generates ``--rows`` gold rows and as many trace rows (seeded random, so every run sees the
   same bytes) in a temporary directory.  Trace rows carry everything the full metric suite
   reads: retrieved_ids with retrieved_scores, answer_json, cited_chunks (hallucination),
   decision (decision accuracy), fallback_used, and ``q``, the gold row's question: a question
   with content words (make_question), so the reference-free figures that read it (answer and
   context relevance) do their work when a run asks for them; gold rows carry category and
   expected_decision.  About 1% of trace rows are duplicates and 1% of gold items have no trace.
2. Extracts the reference scorer from the seed (the ```python block of
   ../shared/seeds/002_080cdb9eab6f891d.txt) into that directory at run time; it is never
   committed.
3. Runs both as child processes of this one, one after the other, and reads each child's wall
   time and peak resident memory (``os.wait4`` returns the child's own ``ru_maxrss``).
4. Checks that the seed's keys agree, then prints the ratios ours / reference (< 1 is better).

Exit status: 0 when the numbers agree, 1 when they differ, 2 when the seed is missing.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = Path(os.environ.get("MINI_RAG_SEEDS", ROOT.parent / "shared" / "seeds")) / "002_080cdb9eab6f891d.txt"
SEED_KEYS = ("answered", "refused", "answerable", "unanswerable", "precision", "chr", "under_refusal",
             "over_refusal", "recall@k", "k", "gates", "pass")
GATES = "precision=0.80,chr=0.75,under=0.05,over=0.10"

WORDS = ("retention policy records archive legal hold billing refund invoice customer account "
         "encryption plaintext storage key rotation access review audit vendor contract limit "
         "request hour minute region backup restore incident severity response window quarter "
         "approval manager exception promotion discount renewal notice period days months").split()


def extract_reference(seed_text: str) -> str:
    """The seed's ```python block that defines the reference scorer."""
    for block in re.findall(r"```python\n(.*?)```", seed_text, re.S):
        if "def citation_hit" in block and "REFUSAL" in block:
            return block
    raise SystemExit("bench: no reference scorer block in %s" % SEED)


def chunk_text(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(18, 30))]
    words.insert(rng.randint(0, len(words)), str(rng.randint(1, 5000)))
    return " ".join(words).capitalize() + "."


QUESTIONS = ("What is the %s for %s?", "How many days does the %s %s take?", "When does the %s apply to %s %s?",
             "Which %s covers %s?", "Who approves a %s %s?", "What does the policy say about %s %s?")


def make_question(rng: random.Random, text) -> str:
    """A question with content words, as a user writes one: for an answerable item mostly words
    of its gold chunk's text (so answer and context relevance have terms to find), otherwise
    (and for a quarter of answerable items) words of the vocabulary at large."""
    form = rng.choice(QUESTIONS)
    pool = [w for w in text.lower().rstrip(".").split() if w.isalpha()] if text and rng.random() < 0.75 else WORDS
    return form % tuple(rng.choice(pool) for _ in range(form.count("%s")))


def generate(folder: Path, rows: int, seed: int) -> None:
    rng = random.Random(seed)
    n_chunks = max(100, rows // 4)
    texts = {}

    def text_of(cid):
        t = texts.get(cid)
        if t is None:
            t = texts[cid] = chunk_text(random.Random(cid))
        return t

    cats = ["answerable_direct", "answerable_numeric", "conflict", "stale", "unanswerable_absent",
            "unanswerable_near_miss", "ambiguous"]
    with open(folder / "gold.jsonl", "w", encoding="utf-8") as g, open(folder / "trace.jsonl", "w", encoding="utf-8") as t:
        progress = _progress(rows, "bench-scorer: generating rows")
        for n in range(rows):
            progress.update(n)
            qid = "Q%07d" % n
            answerable = rng.random() < 0.6
            gold_cits = ["doc%d#p%d" % divmod(rng.randrange(n_chunks), 8) for _ in range(rng.choice((1, 1, 2)))] \
                if answerable else []
            sub = " ".join(text_of(gold_cits[0]).lower().rstrip(".").split()[2:5]) if answerable else None
            expected = "ANSWER" if answerable else rng.choice(("ABSTAIN", "ABSTAIN", "CLARIFY", "BLOCK"))
            question = make_question(rng, text_of(gold_cits[0]) if answerable else None)
            g.write(json.dumps({"qid": qid, "question": question,
                                "answerable": answerable, "gold_claim_substr": [sub] if sub else [],
                                "gold_citations": gold_cits, "category": rng.choice(cats[:4] if answerable else cats[4:]),
                                "expected_decision": expected}) + "\n")
            if rng.random() < 0.01:
                continue                       # a missing trace
            retrieved = ["doc%d#p%d" % divmod(rng.randrange(n_chunks), 8) for _ in range(8)]
            if answerable and rng.random() < 0.85:
                retrieved[rng.randrange(8)] = gold_cits[0]
            retrieved = list(dict.fromkeys(retrieved))
            scores = sorted((round(rng.random(), 4) for _ in retrieved), reverse=True)
            ship = (answerable and rng.random() < 0.9) or (not answerable and rng.random() < 0.05)
            if ship:
                cited = [retrieved[rng.randrange(len(retrieved))] if rng.random() < 0.3 else
                         (gold_cits[0] if gold_cits and gold_cits[0] in retrieved else retrieved[0])]
                words = text_of(cited[0]).rstrip(".").split()
                claim = " ".join(words[:9]) + "."
                if rng.random() < 0.03:
                    claim += " Within 48 hours."
                answer = {"claim": claim, "citations": cited}
                chunks = {c: text_of(c) for c in cited}
                decision = "ANSWER"
            else:
                answer = {"claim": "not in context", "citations": []}
                chunks = {}
                decision = expected if not answerable else "ABSTAIN"
            row = {"qid": qid, "q": question, "retrieved_ids": retrieved, "retrieved_scores": scores,
                   "answer_json": answer, "cited_chunks": chunks, "decision": decision,
                   "fallback_used": rng.random() < 0.1, "timings_ms": {"retrieve": 3.1, "answer": 0.4}}
            line = json.dumps(row) + "\n"
            t.write(line)
            if rng.random() < 0.01:
                t.write(line)                  # a duplicate row (last wins)
        progress.close()


def _progress(total: int, label: str):
    """mini_rag's progress line on stderr (live on a terminal, every 30 s off one)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from mini_rag.progress import Progress
    return Progress(total, label)


def measure(cmd, out_path: Path, cwd=None):
    """Run ``cmd`` with stdout to ``out_path``; return (exit status, wall seconds, peak RSS MiB,
    CPU seconds: the child's user + system time from ``os.wait4``)."""
    with open(out_path, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, cwd=str(cwd or ROOT))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
    return proc.returncode, wall, usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime   # Linux: KiB


def compare(folder: Path, rounds: int = 1, before: str = "") -> dict:
    """Run the reference, score_eval without a gates file (run in ``folder``, where none is
    found) and score_eval with the repository's gates.toml, back to back, ``rounds`` times;
    return {name: (exit, wall, rss, cpu)} with each figure the minimum over the rounds, whether
    the seed's keys agree, and the 1-minute load average after each command's best round
    ("load": other processes share the cores; CPU time is what they inflate least)."""
    gold, trace = str(folder / "gold.jsonl"), str(folder / "trace.jsonl")
    ref = folder / "reference_score_eval.py"
    if not ref.exists():
        ref.write_text(extract_reference(SEED.read_text(encoding="utf-8")), encoding="utf-8")
    py = sys.executable
    common = ["--gold", gold, "--trace", trace, "--k", "5", "--gates", GATES]
    runs = {
        "reference": [py, str(ref)] + common,
        "score_eval": [py, str(ROOT / "score_eval.py")] + common,
        "score_eval+gates.toml": [py, str(ROOT / "score_eval.py")] + common + ["--gates-file", str(ROOT / "gates.toml")],
    }
    if before:      # another score_eval.py (e.g. the previous commit's), for a before/after table
        runs["before"] = [py, before] + common
        runs["before+gates.toml"] = [py, before] + common + ["--gates-file", str(ROOT / "gates.toml")]
    best: dict = {}
    load: dict = {}
    for _ in range(rounds):
        for name, cmd in runs.items():
            r = measure(cmd, folder / (name + ".json"), cwd=folder)
            old = best.get(name)
            if old is None or r[3] < old[3]:
                load[name] = os.getloadavg()[0]
            best[name] = r if old is None else (r[0], min(old[1], r[1]), min(old[2], r[2]), min(old[3], r[3]))
    ref_out = json.loads((folder / "reference.json").read_text())
    agree = True
    for name in [n for n in runs if n != "reference"]:
        ours = json.loads((folder / (name + ".json")).read_text())
        diff = [k for k in SEED_KEYS if k != "pass" and ref_out.get(k) != ours.get(k)]
        if "gates" not in name:
            diff += [k for k in ("pass",) if ref_out.get(k) != ours.get(k)]
        if diff:
            print("seed keys differ (%s): %s" % (name, ", ".join(diff)))
            agree = False
    return {"runs": best, "agree": agree, "load": load}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="gold rows to generate (default 1000000)")
    ap.add_argument("--seed", type=int, default=7, help="random seed for the generated data (default 7)")
    ap.add_argument("--keep", help="generate into this directory and keep it (default: a temp dir, removed); "
                    "rows already generated there with the same --rows and --seed are reused")
    ap.add_argument("--before", default="", help="also run this score_eval.py (a before/after table)")
    ap.add_argument("--rounds", type=int, default=1, help="back-to-back rounds; each figure is the best (default 1)")
    args = ap.parse_args(argv)
    if not SEED.exists():
        print("bench: seed file not found: %s" % SEED, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench_scorer_") as tmp:
        folder = Path(args.keep or tmp).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        stamp = folder / ("rows-%d-seed-%d" % (args.rows, args.seed))
        if not stamp.exists():       # a kept folder holding these rows is reused
            for old in folder.glob("rows-*-seed-*"):
                old.unlink()
            t0 = time.perf_counter()
            generate(folder, args.rows, args.seed)
            stamp.write_text("")
            size = sum((folder / f).stat().st_size for f in ("gold.jsonl", "trace.jsonl")) / 2 ** 20
            print("generated %d gold rows + trace rows (%.0f MiB) in %.1fs" % (args.rows, size, time.perf_counter() - t0))
        res = compare(folder, args.rounds, args.before)
        for name, (code, wall, rss, cpu) in res["runs"].items():
            print("%-22s exit %d  wall %7.2fs  CPU %7.2fs  peak RSS %8.1f MiB  load %.2f"
                  % (name, code, wall, cpu, rss, res["load"][name]))
        r = res["runs"]["reference"]
        for name in [n for n in res["runs"] if n != "reference"]:
            o = res["runs"][name]
            print("ratio %s / reference: CPU %.2f, wall %.2f, peak memory %.2f"
                  % (name, o[3] / r[3], o[1] / r[1], o[2] / r[2]))
        print("seed keys agree: %s" % ("yes" if res["agree"] else "NO"))
        return 0 if res["agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
