#!/usr/bin/env python3
"""Issue 44's table of hostile rows: each one written as gold + trace (+ gates file), run through
score_eval.py in a process of its own, measured (CPU seconds, peak memory, exit status, last
message line).  ``bench/fuzz_inputs.py`` (``make bench-badinputs``) runs every row, at several
sizes and among good rows, as its ``hostile-row`` kind; this script prints the before/after
table of the issue.

Usage: python3 bench/hostile_rows.py [--scorer score_eval.py] [--rows NAME,...] [--good N]
                                     [--cpu-limit S] [--scale X]

``--good N``: the hostile row is one among N good rows (its exit status must be the good
rows' alone).  ``--cpu-limit``: a process past this many CPU seconds is killed (RLIMIT_CPU)
and reported as such.  Nothing here is fitted on; every text is generated.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHUNK_ID = "refund-policy#p1"
GOOD_CHUNK = "Refunds are approved by the finance team within 30 days of the request."
SENTENCES = 'grounding = "sentences"\n'
PI = ("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798"
      "21480865132823066470938446095505822317253594081284811174502841027019385211055596446229489549303819644"
      "28810975665933446128475648233786783165271201909145648566923460348610454326648213393607260249141273724"
      "58700660631558817488152092096282925409171536436789259036001133053054882046652138414695194151160943305")


def _words(n: int, seed: int = 0) -> list:
    """n distinct made-up words (letters only), deterministic."""
    out = []
    for i in range(seed, seed + n):
        w, k = "", i
        while True:
            w += "bcdfghjklmnpqrstvwxz"[k % 20] + "aeiou"[(k // 20) % 5]
            k //= 100
            if not k:
                break
        out.append(w + "m")
    return out


def _sentences(n: int, words: int, seed: int) -> str:
    ws = _words(n * words, seed)
    return " ".join(" ".join(ws[i * words:(i + 1) * words]).capitalize() + "." for i in range(n))


def _spread(n: int, words: int, chunk_sentences: int) -> str:
    """n answer sentences of ``words`` words each, every word a word of the chunk that
    _pairs(chunk_sentences) writes, no two neighbours from one chunk sentence (so each pair
    is looked for, and missed, in every chunk sentence)."""
    vocab = _words(2 * chunk_sentences)
    out = []
    for i in range(n):
        ws = [vocab[2 * ((i * words + j) % min(chunk_sentences, 5000))] for j in range(words)]
        out.append(" ".join(ws).capitalize() + ".")
    return " ".join(out)


def _pairs(chunk_sentences: int) -> str:
    vocab = _words(2 * chunk_sentences)
    return " ".join("%s %s." % (vocab[2 * i].capitalize(), vocab[2 * i + 1]) for i in range(chunk_sentences))


def _long_answer(words: int) -> str:
    return " ".join(_words(words, 5000)) + "."


# name -> (what the table says, builder(scale) -> dict of claim / golds / chunk / gates)
def _row(claim, golds=None, chunk=GOOD_CHUNK, gates="", question="Who approves refunds?"):
    return {"claim": claim, "golds": golds, "chunk": chunk, "gates": gates, "question": question}


ROWS = {
    "hundreds-answer": ('"one hundred hundred ... hundred" (2,200 words) in an answer',
                        lambda s: _row("one" + " hundred" * int(2199 * s), ["the finance team"])),
    "hundreds-gold": ('"one hundred hundred ... hundred" (2,200 words) in a gold answer',
                      lambda s: _row("the finance team", ["one" + " hundred" * int(2199 * s)])),
    "million-answer": ('a number of 309+ digits followed by "million" in an answer',
                       lambda s: _row("9" * int(309 * s) + " million", ["the finance team"])),
    "million-gold": ('a number of 309+ digits followed by "million" in a gold answer',
                     lambda s: _row("the finance team", ["9" * int(309 * s) + " million"])),
    "pi-claim": ('pi written to 400 digits in a claim, grounding = "sentences"',
                 lambda s: _row("Refunds take %s days [1]." % (PI * max(1, int(s)))[:max(402, int(402 * s))],
                                chunk="Refunds take 3.14 days.", gates=SENTENCES)),
    "big-number-chunk": ('a 309-digit number in a chunk, grounding = "sentences"',
                         lambda s: _row("Refunds take 30 days [1].",
                                        chunk="Refunds take %s days." % ("9" * int(309 * s)), gates=SENTENCES)),
    "sources-2000": ('"Sources:" headers repeated 2,000 times (20 KB)',
                     lambda s: _row("The finance team approves refunds.\n" + "Sources: \n" * int(2000 * s))),
    "sources-4000": ('"Sources:" headers repeated 4,000 times (40 KB)',
                     lambda s: _row("The finance team approves refunds.\n" + "Sources: \n" * int(4000 * s))),
    "references-loop": ('2,000 x "References: see the company handbook." (150 KB)',
                        lambda s: _row("The finance team approves refunds. "
                                       + "References: see the company handbook.\n\n" * int(2000 * s))),
    "markers-101k": ('101,000 distinct [x#pN] markers (1 MB)',
                     lambda s: _row("Refunds. " + "".join("[x#p%d]" % i for i in range(int(101000 * s))))),
    "markers-300k": ('distinct [x#pN] markers (300 KB)',
                     lambda s: _row("Refunds. " + "".join("[x#p%d]" % i for i in range(int(30000 * s))))),
    "brackets-5mb": ('5 MB of [1][2][3][4][5]',
                     lambda s: _row("Refunds. " + "[1][2][3][4][5]" * int(350000 * s))),
    "ground-25k": ('a 200-sentence answer (104 KB) against a chunk of 25,000 sentences',
                   lambda s: _row(_spread(int(200 * s), 80, int(25000 * s)) + " [1]",
                                  chunk=_pairs(int(25000 * s)), gates=SENTENCES)),
    "ground-5x25k": ('the same against five chunks of 25,000 sentences',
                     lambda s: dict(_row(_spread(int(200 * s), 80, int(25000 * s)) + " [1][2][3][4][5]",
                                         chunk=_pairs(int(25000 * s)), gates=SENTENCES), chunks=5)),
    "numbers-10k": ('10,000 numbers in the answer against 10,000 in a chunk',
                    lambda s: _row(" ".join("%d.5 units," % (7 * i + 3) for i in range(int(10000 * s))) + " [1]",
                                   chunk=" ".join("%d.25 units," % (11 * i + 1) for i in range(int(10000 * s))),
                                   gates=SENTENCES)),
    "golds-100k": ('100,000 short gold_answers (989 KB)',
                   lambda s: _row(_long_answer(3000), ["no. %d" % i for i in range(int(100000 * s))])),
    "gold-or-100k": ('one gold answer with 100,000 " or " alternatives',
                     lambda s: _row(_long_answer(3000), [" or ".join("alt%d" % i for i in range(int(100000 * s)))])),
}


# Inputs of issue 44's item 6: markup and terminal controls in every field of the input
MARKUP = ("<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "<a href=javascript:alert(1)>x</a>",
          "![x](http://example.invalid/x.png)", "[x](javascript:alert(1))", "<svg onload=alert(1)>")
MARKUP_FIELDS = ("qid", "category", "question", "claim", "citation", "chunk id", "reason", "decision",
                 "policy message", "gate message")


def markup_case(folder: str, field: str, bad: str) -> list:
    """Gold, trace and gates file whose ``field`` holds ``bad``; the score_eval.py arguments
    (JSON, Markdown and HTML reports and the items file asked for)."""
    qid = bad if field == "qid" else "Q1"
    cid = bad if field == "chunk id" else CHUNK_ID
    gold = {"qid": qid, "question": bad if field == "question" else "Who approves refunds?", "answerable": True,
            "gold_claim_substr": ["finance team"], "gold_citations": [CHUNK_ID],
            "category": bad if field == "category" else "c"}
    trace = {"qid": qid, "retrieved_ids": [CHUNK_ID, cid], "retrieved_scores": [1.0, 0.5],
             "cited_chunks": {CHUNK_ID: GOOD_CHUNK},
             "decision": bad if field == "decision" else "ANSWER", "reasons": [bad if field == "reason" else "ok"],
             "answer_json": {"claim": (bad + " ") * (field == "claim") + "The finance team approves refunds [2].",
                             "citations": [bad] if field == "citation" else []}}
    paths = {}
    for name, obj in (("gold", gold), ("trace", trace)):
        paths[name] = os.path.join(folder, name + ".jsonl")
        with open(paths[name], "w", encoding="utf-8") as fh:
            fh.write(json.dumps(obj) + "\n")
    gates = os.path.join(folder, "gates.toml")
    msg = json.dumps(bad)
    with open(gates, "w", encoding="utf-8") as fh:
        fh.write("[policy.p]\nmessage = %s\npatterns = ['\\bfinance\\b']\n[baseline]\n"
                 "precision = { min = 0.99, message = %s }\n" % (msg if field == "policy message" else '"m"',
                                                               msg if field == "gate message" else '"m"'))
    out = {k: os.path.join(folder, "report." + k) for k in ("json", "md", "html")}
    return ["--gold", paths["gold"], "--trace", paths["trace"], "--gates-file", gates, "--out", out["json"],
            "--markdown", out["md"], "--html", out["html"], "--items", os.path.join(folder, "items.jsonl")]


def raw_markup(path: str, bad: str) -> bool:
    """Whether the report at ``path`` holds ``bad`` as written: in Markdown any of MARKUP, in
    HTML a tag (a Markdown link is text there)."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    return bad in text and (path.endswith(".md") or bad.startswith("<"))


def fuzz_cases(quick: bool):
    """(name, row, good rows) of the ``hostile-row`` kind of bench/fuzz_inputs.py: every row of
    the table at three sizes, alone and among 1,000 good rows (quick: a twentieth, alone)."""
    for name, (_, build) in ROWS.items():
        for scale in ((0.05,) if quick else (0.1, 0.5, 1.0)):
            for good in ((0,) if quick else (0, 1000)):
                yield "%s x%s%s" % (name, scale, " among %d good rows" % good if good else ""), build(scale), good


def write_case(folder: str, row: dict, good: int = 0) -> list:
    """Gold, trace and gates file for one hostile row (qid H) among ``good`` good rows; the
    score_eval.py arguments after the script."""
    gold, trace = [], []
    for n in range(good):
        q = "G%d" % n
        gold.append({"qid": q, "question": "Who approves refunds?", "answerable": True,
                     "gold_claim_substr": ["finance team"], "gold_citations": [CHUNK_ID], "category": "good",
                     "gold_answers": ["the finance team"]})
        trace.append({"qid": q, "retrieved_ids": [CHUNK_ID], "retrieved_scores": [1.0],
                      "cited_chunks": {CHUNK_ID: GOOD_CHUNK},
                      "answer_json": {"claim": "The finance team approves refunds [1].", "citations": []}})
    k = row.get("chunks", 1)
    ids = [CHUNK_ID] + ["refund-policy#p%d" % (j + 2) for j in range(k - 1)]
    g = {"qid": "H", "question": row["question"], "answerable": True, "gold_claim_substr": ["finance team"],
         "gold_citations": [CHUNK_ID], "category": "hostile"}
    if row["golds"] is not None:
        g["gold_answers"] = row["golds"]
    gold.append(g)
    trace.append({"qid": "H", "retrieved_ids": ids, "retrieved_scores": [1.0 - j / 10.0 for j in range(k)],
                  "cited_chunks": {c: row["chunk"] for c in ids},
                  "answer_json": {"claim": row["claim"], "citations": []}})
    paths = {}
    for name, rows in (("gold", gold), ("trace", trace)):
        paths[name] = os.path.join(folder, name + ".jsonl")
        with open(paths[name], "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
    gates = os.path.join(folder, "gates.toml")
    with open(gates, "w", encoding="utf-8") as fh:
        fh.write("[scorer]\n%s\n[baseline]\nprecision = { min = 0.0 }\nanswer_correct_rate = { min = 0.0 }\n" % row["gates"])
    return ["--gold", paths["gold"], "--trace", paths["trace"], "--gates-file", gates,
            "--out", os.path.join(folder, "report.json"), "--markdown", os.path.join(folder, "report.md")]


def measure(argv: list, cpu_limit: float) -> dict:
    """Run ``argv`` in a process of its own: exit status (None when killed), CPU seconds, peak
    resident memory in MB, last line of stderr."""
    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_limit), int(cpu_limit) + 1))
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, preexec_fn=limit, cwd=ROOT)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = 0
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    code = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return {"exit": code if code >= 0 else None, "cpu": round(ru.ru_utime + ru.ru_stime, 2),
            "peak_mb": round(ru.ru_maxrss / 1024.0, 1), "traceback": "Traceback" in text,
            "message": lines[-1][:160] if lines else "", "stderr": text}


def result_text(r: dict, cpu_limit: float) -> str:
    if r["exit"] is None:
        return "killed at %.0f s CPU" % cpu_limit
    if r["traceback"] or r["exit"] == 3:
        return "exit %s: %s" % (r["exit"], r["message"][:90])
    warn = [ln for ln in r["stderr"].splitlines() if "H" in ln and ("warning" in ln.lower() or "unknown" in ln.lower())]
    return "exit %d%s" % (r["exit"], (", " + warn[0][:90]) if warn else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scorer", default=os.path.join(ROOT, "score_eval.py"))
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--good", type=int, default=0)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--cpu-limit", type=float, default=60.0)
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args(argv)
    results = []
    print("| row | what | CPU s | peak MB | result |\n|---|---|---|---|---|")
    for name in args.rows.split(","):
        what, build = ROWS[name]
        with tempfile.TemporaryDirectory(prefix="hostile_") as d:
            cmd = [sys.executable, args.scorer] + write_case(d, build(args.scale), args.good)
            r = measure(cmd, args.cpu_limit)
        r["result"] = result_text(r, args.cpu_limit)
        r.pop("stderr")
        r["row"] = name
        results.append(r)
        print("| %s | %s | %s | %s | %s |" % (name, what, r["cpu"], r["peak_mb"], r["result"]), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
