#!/usr/bin/env python3
"""Bench check: two score_eval.py files give byte-identical outputs on the committed traces.

Usage: python3 bench/bench_identical.py --before FILE [--after score_eval.py] [--data DIR ...]

A speed change to the scorer must not change a report.  This runs both scorers on the same
commands and compares every output byte for byte: stdout (the JSON report, the compact
summary, trec_eval's format), the exit status and the files written (--out, --items,
--markdown, --html, --csv, --metrics-csv, --junit).  The commands cover the committed traces:

* gold/ with the traces ``make eval`` writes (runs/trace.baseline.jsonl, runs/trace.perturb.jsonl;
  skipped when they are missing) against gates.toml, with per-item outputs and without;
* examples/seed (its chunks, [seed] of gates.toml) and examples/llm (prose, inline citations,
  sentence grounding; its own gates file);
* seed 002's command (``--gates`` string, no gates file) and reference-free mode (trace alone);
* TREC mode on trec_eval's test collection (tests/data/trec_eval_test: binary and graded qrels),
  JSON and ``--format trec -q``;
* ``--data DIR``: a folder holding gold.jsonl + trace.jsonl (e.g. bench_scorer's generated rows),
  seed 002's command with and without gates.toml, the whole JSON report with its items;
* ``--shared``: the labelled sets of ../shared/data (EVOUNA NQ, RefChecker, FaithBench,
  chatgpt_refusals, ragtruth_gen; skipped, named, when missing) written as gold + trace + chunks
  (every row an answerable question; the answer as the claim; the source or passages as the
  cited chunk), each scored with seed 002's command and with an LLM gates file (sentence
  grounding, answer correctness, refusals) writing the JSON report and the items.

``--before FILE`` is another version of the scorer (e.g. ``git show main:score_eval.py >
/tmp/before.py``).  Prints one line per command and exits 1 when any output differs.

The one difference allowed (issue 40): a run computes only the measures its gates, outputs and
flags ask for, so seed 002's command (no gates file) leaves out of its JSON report the measures
computed only on request (those with ``needs`` in the --after scorer's registry: answer and
context relevance, the rank measures) and the scorecard; every value still reported must be
the same, in the same order ("identical but for ..." below), and the same command with
``--compute all`` must give the same bytes as before.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED_GATES = "precision=0.80,chr=0.75,under=0.05,over=0.10"
OUT_FLAGS = ("--out", "--items", "--markdown", "--html", "--csv", "--metrics-csv", "--junit")


def commands(data_dirs):
    """(name, argv after the script, cwd or None) for every check whose inputs exist."""
    r = str(ROOT)
    out = []
    gold, perturb = ROOT / "gold" / "gold.jsonl", ROOT / "gold" / "gold_perturb.jsonl"
    for tag, g, ds in (("baseline", gold, "baseline"), ("perturb", perturb, "perturb")):
        trace = ROOT / "runs" / ("trace.%s.jsonl" % tag)
        if not trace.exists():
            continue
        base = ["--gold", str(g), "--trace", str(trace), "--dataset", ds, "--gates-file", r + "/gates.toml",
                "--k", "1,3,5,10"]
        out.append(("eval %s, gates.toml, per-item outputs" % tag,
                    base + ["--out", "@report.json", "--items", "@items.jsonl", "--markdown", "@report.md",
                            "--html", "@report.html", "--csv", "@items.csv", "--metrics-csv", "@metrics.csv",
                            "--junit", "@junit.xml", "--junit-items", "--full"], None))
        out.append(("eval %s, gates.toml" % tag, base, None))
        out.append(("eval %s, seed 002's command" % tag,
                    ["--gold", str(g), "--trace", str(trace), "--k", "5", "--gates", SEED_GATES], "@"))
        out.append(("eval %s, seed 002's command --compute all" % tag,
                    ["--gold", str(g), "--trace", str(trace), "--k", "5", "--gates", SEED_GATES, "--compute", "all"],
                    "@"))
        out.append(("eval %s, reference-free (trace alone)" % tag, ["--trace", str(trace), "--gates", "none"], "@"))
    seed = ROOT / "examples" / "seed"
    out.append(("examples/seed, [seed] of gates.toml",
                ["--gold", str(seed / "gold.jsonl"), "--trace", str(seed / "trace.jsonl"), "--chunks",
                 str(seed / "chunks.jsonl"), "--gates-file", r + "/gates.toml", "--dataset", "seed"], None))
    out.append(("examples/seed, seed 002's command",
                ["--gold", str(seed / "gold.jsonl"), "--trace", str(seed / "trace.jsonl"), "--k", "5",
                 "--gates", SEED_GATES], "@"))
    llm = ROOT / "examples" / "llm"
    out.append(("examples/llm, its gates file, items",
                ["--gold", str(llm / "gold.jsonl"), "--trace", str(llm / "trace.jsonl"), "--chunks",
                 str(llm / "chunks.jsonl"), "--gates-file", str(llm / "gates.toml"), "--dataset", "llm",
                 "--items", "@items.jsonl", "--full", "--out", "@report.json"], None))
    out.append(("examples/llm, seed 002's command",
                ["--gold", str(llm / "gold.jsonl"), "--trace", str(llm / "trace.jsonl"), "--k", "5",
                 "--gates", SEED_GATES], "@"))
    out.append(("examples/llm, --compute all",
                ["--gold", str(llm / "gold.jsonl"), "--trace", str(llm / "trace.jsonl"), "--chunks",
                 str(llm / "chunks.jsonl"), "--gates", "none", "--compute", "all"], "@"))
    trec = ROOT / "tests" / "data" / "trec_eval_test"
    for qrels in ("qrels.test", "qrels.rel_level"):
        if (trec / qrels).exists() and (trec / "results.test").exists():
            base = ["--qrels", str(trec / qrels), "--run", str(trec / "results.test"), "--gates", "none"]
            out.append(("trec %s, JSON" % qrels, base + ["-m", "all_trec"], "@"))
            out.append(("trec %s, --format trec -q" % qrels, base + ["-m", "all_trec", "--format", "trec", "-q"], "@"))
    for d in data_dirs:
        d = Path(d).resolve()
        common = ["--gold", str(d / "gold.jsonl"), "--trace", str(d / "trace.jsonl"), "--k", "5", "--gates",
                  SEED_GATES, "--quiet"]
        out.append(("%s: seed 002's command" % d.name, common, "@"))
        out.append(("%s: seed 002's command --compute all" % d.name, common + ["--compute", "all"], "@"))
        out.append(("%s: seed 002's command + gates.toml" % d.name, common + ["--gates-file", r + "/gates.toml"], "@"))
    return out


SHARED = Path(os.environ.get("MINI_RAG_DATA") or ROOT.parent / "shared" / "data")   # MINI_RAG_DATA: elsewhere
LLM_GATES = """[scorer]
grounding = "sentences"

[llm]
precision = { min = 0.80 }
under_refusal = { max = 0.05 }
over_refusal = { max = 0.10 }
citation_validity = { min = 0.95 }
unsupported_answer_rate = { max = 0.2 }
faithfulness = { tier = "monitor" }
answer_correct_rate = { tier = "monitor" }
refusal_rate = { tier = "monitor" }
partial_refusal_rate = { tier = "monitor" }
answer_relevance = { tier = "monitor" }
"""


def _shared_rows(name: str, row: dict):
    """(gold row, trace row) of one labelled row, or None when the set has no answer text."""
    qid = str(row["id"])
    question = row.get("question") or row.get("prompt") or ("Summarize the source." if "source_text" in row else "")
    answer = row.get("answer") if name == "evouna_nq" else row.get("response", row.get("text"))
    if not isinstance(answer, str):
        return None
    chunks = {}
    if isinstance(row.get("source_text"), str):
        chunks[qid + "#src"] = row["source_text"]
    for i, passage in enumerate(row.get("context_passages") or []):
        chunks["%s#p%d" % (qid, i)] = passage if isinstance(passage, str) else json.dumps(passage, sort_keys=True)
    gold = {"qid": qid, "question": question or "What is the answer?", "answerable": True,
            "gold_claim_substr": [], "gold_citations": sorted(chunks)[:1]}
    if row.get("gold_answers"):
        gold["gold_answers"] = row["gold_answers"]
    trace = {"qid": qid, "q": question, "retrieved_ids": sorted(chunks),
             "answer_json": {"claim": answer, "citations": sorted(chunks)[:1]}, "cited_chunks": chunks}
    return gold, trace


def shared_sets(tmp: Path):
    """[(name, folder)] of the labelled sets written as gold.jsonl + trace.jsonl + gates.toml."""
    files = {"evouna_nq": "nq.jsonl", "refchecker": "responses.jsonl", "faithbench": "faithbench.jsonl",
             "chatgpt_refusals": "fit.jsonl", "ragtruth_gen": "ragtruth_gen.jsonl"}
    out = []
    for name, fname in files.items():
        src = SHARED / name / fname
        if not src.exists():
            print("shared: %s not found, skipped" % src)
            continue
        d = tmp / ("shared-" + name)
        d.mkdir(parents=True, exist_ok=True)
        with open(src, encoding="utf-8") as fh, open(d / "gold.jsonl", "w", encoding="utf-8") as g, \
                open(d / "trace.jsonl", "w", encoding="utf-8") as t:
            for line in fh:
                pair = _shared_rows(name, json.loads(line))
                if pair:
                    g.write(json.dumps(pair[0], sort_keys=True) + "\n")
                    t.write(json.dumps(pair[1], sort_keys=True) + "\n")
        (d / "gates.toml").write_text(LLM_GATES, encoding="utf-8")
        out.append((name, d))
    return out


def shared_commands(sets):
    out = []
    for name, d in sets:
        common = ["--gold", str(d / "gold.jsonl"), "--trace", str(d / "trace.jsonl"), "--quiet"]
        out.append(("shared %s: seed 002's command" % name, common + ["--k", "5", "--gates", SEED_GATES], "@"))
        out.append(("shared %s: seed 002's command --compute all" % name,
                    common + ["--k", "5", "--gates", SEED_GATES, "--compute", "all"], "@"))
        out.append(("shared %s: LLM gates, report + items" % name,
                    common + ["--gates-file", str(d / "gates.toml"), "--dataset", "llm", "--out", "@report.json",
                              "--items", "@items.jsonl", "--markdown", "@report.md", "--junit", "@junit.xml",
                              "--csv", "@items.csv", "--full"], "@"))
    return out


def run_one(script: str, argv, cwd, tmp: Path):
    """(exit status, stdout, {output name: bytes}) of one run; outputs go to ``tmp``."""
    tmp.mkdir(parents=True, exist_ok=True)
    args = [a.replace("@", str(tmp) + os.sep) if a.startswith("@") else a for a in argv]
    where = str(tmp) if cwd == "@" else str(ROOT)      # "@": a folder without gates.toml
    proc = subprocess.run([sys.executable, script] + args, cwd=where, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=dict(os.environ, PYTHONHASHSEED="0"))
    files = {}
    for a in argv:
        if a.startswith("@"):
            p = tmp / a[1:]
            files[a[1:]] = p.read_bytes() if p.exists() else None
    return proc.returncode, proc.stdout.replace(str(tmp).encode(), b"@"), files, proc.stderr


def on_request(script: str) -> set:
    """The measure names (families as their prefix, e.g. "nDCG@") the scorer ``script`` computes
    only when asked (a registry entry with ``needs``)."""
    spec = importlib.util.spec_from_file_location("after_scorer", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {m.name.replace("@K", "@") for m in mod.REGISTRY if getattr(m, "needs", "")}


def _optional(name: str, names: set) -> bool:
    return name in names or (name.partition("@")[0] + "@" in names and name.partition("@")[2].isdigit())


def _prune(before, names: set, after):
    """``before`` (a JSON report as nested lists of pairs) without what ``after`` left out and
    the allowance permits: the scorecard, on-request measures in metrics and categories, and
    warnings about them."""
    have = dict(after)

    def kept(pairs, present):
        return [(k, v) for k, v in pairs if k in dict(present or []) or not _optional(k, names)]

    out = []
    for key, val in before:
        if key == "scorecard" and key not in have:
            continue
        if key == "metrics":
            val = kept(val, have.get(key))
        elif key == "categories" and isinstance(val, list):
            cats = dict(have.get(key) or [])
            val = [(c, [(k, kept(v, dict(cats.get(c) or []).get("metrics")) if k == "metrics" else v)
                        for k, v in block]) for c, block in val]
        elif key == "warnings":
            val = [w for w in val if w in (have.get(key) or []) or not _optional(w.split(":", 1)[0], names)]
        out.append((key, val))
    return out


def only_on_request(before: bytes, after: bytes, names: set) -> bool:
    """Whether the JSON report ``after`` is ``before`` without fields computed only on request."""
    try:
        hook = dict(object_pairs_hook=lambda pairs: pairs)
        b, a = json.loads(before, **hook), json.loads(after, **hook)
    except ValueError:
        return False
    return isinstance(b, list) and isinstance(a, list) and _prune(b, names, a) == a


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="the other score_eval.py")
    ap.add_argument("--after", default=str(ROOT / "score_eval.py"))
    ap.add_argument("--data", action="append", default=[], help="a folder with gold.jsonl + trace.jsonl")
    ap.add_argument("--shared", action="store_true", help="also the labelled sets of ../shared/data")
    ap.add_argument("--only-shared", action="store_true", help="only the labelled sets of ../shared/data")
    args = ap.parse_args(argv)
    bad = 0
    names = on_request(args.after)
    with tempfile.TemporaryDirectory(prefix="bench_identical_") as tmp:
        cmds = [] if args.only_shared else commands(args.data)
        if args.shared or args.only_shared:
            cmds += shared_commands(shared_sets(Path(tmp)))
        for n, (name, cmd, cwd) in enumerate(cmds):
            a = run_one(args.before, cmd, cwd, Path(tmp) / ("%d-before" % n))
            b = run_one(args.after, cmd, cwd, Path(tmp) / ("%d-after" % n))
            # the folder name differs between the two runs; files are compared with it replaced
            fa = {k: (v.replace(str(Path(tmp) / ("%d-before" % n)).encode(), b"@") if v else v) for k, v in a[2].items()}
            fb = {k: (v.replace(str(Path(tmp) / ("%d-after" % n)).encode(), b"@") if v else v) for k, v in b[2].items()}
            diff = []
            if a[0] != b[0]:
                diff.append("exit %d vs %d" % (a[0], b[0]))
            if a[1] != b[1]:
                diff.append("stdout")
            diff += [k for k in fa if fa[k] != fb.get(k)]
            if a[3].replace(str(Path(tmp) / ("%d-before" % n)).encode(), b"@") != \
                    b[3].replace(str(Path(tmp) / ("%d-after" % n)).encode(), b"@"):
                diff.append("stderr")
            verdict = "identical" if not diff else "DIFFERS: " + ", ".join(diff)
            if diff and set(diff) <= {"stdout", "stderr"} and only_on_request(a[1], b[1], names) and all(
                    line in b[3].splitlines() or _optional(line.split(b"warning: ", 1)[-1].split(b":")[0].decode(), names)
                    for line in a[3].splitlines()):
                verdict, diff = "identical but for fields computed on request", []
            print("%-60s %s (exit %d, %d bytes)" % (name, verdict, b[0], len(b[1]) + sum(len(v or b"") for v in fb.values())),
                  flush=True)
            bad += bool(diff)
    print("outputs identical: %s" % ("yes" if not bad else "NO (%d commands differ)" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
