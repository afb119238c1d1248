#!/usr/bin/env python3
"""Bench: score_eval.py's throughput on LLM-style rows next to seed-contract rows (same run).

Usage: python3 bench/bench_scorer_llm.py [--rows 100000] [--seed 7] [--keep DIR] [--docs docs/performance.md]

1. Generates ``--rows`` gold rows and two traces for them (seeded random: every run sees the
   same bytes): the seed-contract trace of bench/bench_scorer.py (extractive claims, a
   citations list, the refusal token), and an LLM-style trace of the same items: prose
   answers with a lead-in ("Based on the provided documents, ..."), an inline citation in
   one of the styles score_eval reads ([2], [1, 3], [doc#p3], (Source: X), 【1†source】,
   <sup>1</sup>, ^[1]) or a trailing "Sources:" list, most rows with no citations list (read
   from the text); prose refusals ("I'm sorry, but the provided documents do not mention
   ..."); a few markers that resolve to nothing; every retrieved chunk's text in cited_chunks
   (an LLM trace carries its contexts).
2. Scores each trace in a child process with the same options (``--gates-file gates.toml``:
   its refusal patterns and policies apply to both, ``--gates`` seed 002's four gates), one
   after the other, and reads the child's CPU time (user + system, ``os.wait4``): rows per
   second per core = trace rows / CPU seconds (the scorer is single-threaded).
3. Prints a table (and with ``--docs FILE`` rewrites its section of FILE between the markers
   ``<!-- begin:bench-scorer-llm -->`` and ``<!-- end:bench-scorer-llm -->``).

Exit status: 0, or 1 when a child failed (exit status other than 0 or 1).
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
sys.path.insert(0, str(ROOT / "bench"))
from bench_scorer import GATES, chunk_text, generate  # noqa: E402

BEGIN, END = "<!-- begin:bench-scorer-llm -->", "<!-- end:bench-scorer-llm -->"
LEADS = ("Based on the provided documents, ", "According to the context, ", "The passages say that ",
         "From the sources given, ", "")
REFUSALS = ("I'm sorry, but the provided documents do not mention %s.",
            "There is no information about %s in the context.",
            "I cannot answer that: the documents do not contain anything on %s.",
            "not in context")


def marker(rng: random.Random, ret, cid):
    """An inline marker for ``cid`` (rank in ``ret``), in one of the styles, and the claim's tail."""
    rank = ret.index(cid) + 1
    style = rng.randrange(9)
    if style == 0:
        return " [%d]" % rank, ""
    if style == 1:
        other = rng.randrange(len(ret)) + 1
        return " [%d, %d]" % (min(rank, other), max(rank, other)), ""
    if style == 2:
        return " [%s]" % cid, ""
    if style == 3:
        return " (Source: %s)" % cid, ""
    if style == 4:
        return "\u3010%d\u2020source\u3011" % rank, ""
    if style == 5:
        return "<sup>%d</sup>" % rank, ""
    if style == 6:
        return "^[%d]" % rank, ""
    if style == 7:
        return "", "\n\nSources:\n- %s" % cid
    return " [%d][%d]" % (rank, len(ret) + 1 + rng.randrange(3)), ""     # a marker past the retrieved


def llm_trace(folder: Path, seed: int) -> int:
    """Rewrite the seed-contract trace as an LLM writes it (same items, same retrieval)."""
    rng = random.Random(seed + 1)
    rows = 0
    with open(folder / "trace.jsonl", encoding="utf-8") as src, \
            open(folder / "trace.llm.jsonl", "w", encoding="utf-8") as out:
        for line in src:
            row = json.loads(line)
            aj = row["answer_json"]
            ret = row["retrieved_ids"]
            if aj["claim"] == "not in context":
                topic = " ".join(chunk_text(rng).lower().split()[:3])
                aj["claim"] = rng.choice(REFUSALS).replace("%s", topic)
            else:
                cid = aj["citations"][0]
                mark, tail = marker(rng, ret, cid)
                lead = rng.choice(LEADS)
                body = aj["claim"].rstrip(".")
                if lead:
                    body = body[0].lower() + body[1:]
                extra = " This applies to every region, as the policy explains." if rng.random() < 0.3 else ""
                aj["claim"] = "%s%s%s.%s%s" % (lead, body, mark, extra, tail)
                if rng.random() < 0.8:
                    del aj["citations"]            # read from the text
                row["cited_chunks"] = {c: chunk_text(random.Random(c)) for c in ret}   # every context
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            rows += 1
    return rows


def run_child(cmd, out_path: Path):
    """(exit status, wall s, CPU s) of ``cmd`` with stdout to ``out_path``."""
    with open(out_path, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, cwd=str(ROOT))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
    return code, wall, usage.ru_utime + usage.ru_stime


def _load() -> str:
    try:
        return "%.2f" % os.getloadavg()[0]
    except OSError:                                # pragma: no cover
        return "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000, help="gold rows to generate (default 100000)")
    ap.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    ap.add_argument("--keep", help="generate into this directory and keep it (default: a temp dir, removed)")
    ap.add_argument("--docs", help="rewrite this file's bench-scorer-llm section (docs/performance.md)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_scorer_llm_") as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        generate(folder, args.rows, args.seed)
        llm_trace(folder, args.seed)
        load_start = _load()
        py = sys.executable
        results = []
        for name, trace in (("seed-contract rows", "trace.jsonl"), ("LLM-style rows", "trace.llm.jsonl")):
            n = sum(1 for _ in open(folder / trace, encoding="utf-8"))
            cmd = [py, str(ROOT / "score_eval.py"), "--gold", str(folder / "gold.jsonl"), "--trace",
                   str(folder / trace), "--k", "5", "--gates-file", str(ROOT / "gates.toml"), "--gates", GATES,
                   "--quiet"]
            code, wall, cpu = run_child(cmd, folder / (trace + ".report.json"))
            if code not in (0, 1):
                print("bench-scorer-llm: %s: score_eval exited %d" % (name, code), file=sys.stderr)
                return 1
            report = json.loads((folder / (trace + ".report.json")).read_text(encoding="utf-8"))
            m = report["metrics"]
            results.append((name, n, wall, cpu, n / cpu, m["citation_validity"]["value"], report["answered"],
                            report["refused"]))
        load_end = _load()
    lines = ["| trace | rows | wall s | CPU s | rows/s per core | citation_validity | answered | refused |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, n, wall, cpu, rate, cv, ans, ref in results:
        lines.append("| %s | %d | %.1f | %.1f | %.0f | %.4f | %d | %d |" % (name, n, wall, cpu, rate, cv, ans, ref))
    ratio = results[1][4] / results[0][4]
    text = "\n".join(lines) + "\n\nLLM-style / seed-contract throughput: %.2f (1-minute load average %s at the start, %s at the end).\n" \
        % (ratio, load_start, load_end)
    sys.stdout.write(text)
    if args.docs:
        section = ("%s\n## score_eval.py on LLM-style rows (`make bench-scorer-llm`)\n\n"
                   "Generated by `python3 bench/bench_scorer_llm.py --rows %d --docs %s` (Python %s); do not edit "
                   "by hand.  Both traces score the same %d gold items with the same options (`--gates-file "
                   "gates.toml --gates %s`); the LLM-style trace is the seed-contract one rewritten as an LLM "
                   "writes it: lead-ins, inline citations in eight styles or a Sources: list (80%% of rows with no "
                   "citations list: read from the text), prose refusals, markers past the retrieved list.  Rows "
                   "per second per core = trace rows / the child's CPU seconds.\n\n%s%s\n"
                   % (BEGIN, args.rows, args.docs, sys.version.split()[0], args.rows, GATES, text, END))
        path = Path(args.docs)
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        if BEGIN in old and END in old:
            new = old[:old.index(BEGIN)] + section + old[old.index(END) + len(END) + 1:]
        else:
            new = old.rstrip("\n") + "\n\n" + section
        tmp_path = path.with_name(path.name + ".tmp")
        tmp_path.write_text(new, encoding="utf-8")
        os.replace(tmp_path, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
