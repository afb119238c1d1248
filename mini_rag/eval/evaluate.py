"""Evaluation orchestration: ``make eval`` and ``make compare`` (issue 4 items 6 and 9).

====================================  =====================================================
function                              what it does
====================================  =====================================================
``read_gold(path)``                   gold rows ``(line, row)``; qid and question checked
``run_gold(pipeline, gold, out)``     one trace row per gold item, gold order, atomic write
``score(...)``                        ``score_eval.py`` as a subprocess -> (exit, report)
``evaluate(config, ...)``             index -> both gold sets -> traces -> scores -> the
                                      combined ``runs/report.json`` and ``runs/report.md``
``compare(base_cfg, cand_cfg, ...)``  both configs on both gold sets; the candidate is
                                      scored with ``--baseline`` (regression gates); deltas
====================================  =====================================================

``evaluate`` writes, under ``runs/`` (``--runs DIR``):

* ``trace.baseline.jsonl``, ``trace.perturb.jsonl``: the pipeline's trace rows;
* ``report.<dataset>.json`` / ``.md`` / ``items.<dataset>.jsonl``: the scorer's outputs
  for ``--dataset <dataset> --gates-file gates.toml --k 1,5,10``;
* ``report.json``: ``{"pass": <every dataset passed>, "datasets": {"baseline": <report>,
  "perturb": <report>}}``, the scorer's reports verbatim (their key order is stable);
* ``report.<dataset>.html`` and ``report.html`` (both datasets on one page, the scorer's
  ``merge-html``): the self-contained HTML report;
* ``report.md``: a summary table per dataset, a pass-rate table per category, then both
  scorer Markdown reports.

The gold sets are ``gold/gold.jsonl`` (dataset ``baseline``) and ``gold/gold_perturb.jsonl``
(``perturb``).  A missing gold set, named or default, is exit 2 with its path: nothing
falls back.  The seed's worked example in ``examples/seed/`` (its committed trace and chunk
texts, dataset ``seed`` of gates.toml) is scored only when asked (``seed=True``:
``eval --dataset seed``, ``make eval-seed``).
A gold set of one's own (``--gold`` other than gold/gold.jsonl) never falls back to the
repository's perturbation set: ``evaluate`` generates one from it (``perturb``) into
``runs/gold_perturb.generated.jsonl``; ``perturb="none"`` skips that dataset and
``gates="none"`` scores without gates.  ``report.json`` also carries the ``as_of`` the
answers were judged at.

``eval`` prints ``summary(...)`` (compact JSON: verdict, each dataset's summary and gated
metrics with n and 95% intervals, failed gates, the paths of the files above; well under
150 lines) on stdout and ``summary_text(...)`` on stderr.

Exit status (``main`` of ``eval``): 0 every gate passed, 1 a gate failed, 2 input error
(the scorer's exit 2 is passed on with its message).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import MiniRagError
from ..fileio import (MAX_QUESTION_CHARS, atomic_write_text, dumps_jsonl, join_errors, read_jsonl,
                     write_set_manifest)
from ..progress import Progress

__all__ = ["DATASETS", "SEED_EXAMPLE", "read_gold", "run_gold", "score", "evaluate", "compare",
           "combined_markdown", "SUMMARY_METRICS", "summary", "summary_json", "summary_text", "NONE"]

DATASETS = (("baseline", os.path.join("gold", "gold.jsonl")),
            ("perturb", os.path.join("gold", "gold_perturb.jsonl")))
SEED_EXAMPLE = os.path.join("examples", "seed")
K_VALUES = "1,5,10"
NONE = "none"            # --gates none: score without gates; --perturb none: skip that set
GENERATED_PERTURB = "gold_perturb.generated.jsonl"     # the perturbation set eval derives from a gold set of one's own
#: Metrics in the summary tables of report.md and in compare's delta table, in this order.
SUMMARY_METRICS = ("pass_rate", "precision", "chr", "under_refusal", "over_refusal", "hallucination",
                   "incorrect_refusal", "fallback_used_rate_answerable", "decision_accuracy",
                   "recall@5", "recall@10")
# The scorer runs as a command in a process of its own (its limits, signal handlers and exit
# status are its own): this interpreter running the package ``referee``, the command that
# ``score_eval.py`` is built from (tests/test_package_file_same.py: the same bytes out).
SCORER = [sys.executable, "-m", "referee"]


def _scorer_env() -> Dict[str, str]:
    """The environment of a scorer process: the folder holding ``referee`` first on its path."""
    import referee
    root = os.path.dirname(os.path.dirname(os.path.abspath(referee.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# ------------------------------------------------------------------ gold and runs

def read_gold(path: str) -> List[Tuple[int, dict]]:
    """Gold rows with line numbers.  Every row needs a non-empty string ``qid`` (unique)
    and ``question``; all bad rows are reported at once as ``path:line: ...``."""
    rows = read_jsonl(path)
    errors: List[str] = []
    seen: Dict[str, int] = {}
    for lineno, row in rows:
        qid = row.get("qid", row.get("q_id"))
        if not isinstance(qid, str) or not qid:
            errors.append("%s:%d: qid must be a non-empty string, got %r" % (path, lineno, qid))
        elif qid in seen:
            errors.append("%s:%d: duplicate qid (first on line %d), got %r" % (path, lineno, seen[qid], qid))
        else:
            seen[qid] = lineno
        q = row.get("question")
        if not isinstance(q, str) or not q.strip():
            errors.append("%s:%d: question must be a non-empty string, got %r" % (path, lineno, q))
        elif len(q) > MAX_QUESTION_CHARS:
            errors.append("%s:%d: question is longer than %d characters, got %d characters"
                          % (path, lineno, MAX_QUESTION_CHARS, len(q)))
    if errors:
        raise MiniRagError(join_errors(errors))
    if not rows:
        raise MiniRagError("%s:1: gold file has no rows, got an empty file" % path)
    return rows


def run_gold(pipeline, gold_path: str, out_path: str, timings: bool = False,
             label: str = "answering", quiet: bool = False, doc_scope: Optional[str] = None) -> int:
    """Answer every gold question in gold order and write the trace atomically.

    A gold row's ``doc_scope`` (a doc_id) restricts its retrieval to that document;
    ``doc_scope`` given here applies to every row instead.  Progress goes to stderr
    (``progress.Progress``; none with ``quiet``).  Returns the number of rows.
    """
    gold = read_gold(gold_path)
    rows = []
    with Progress(len(gold), label, enabled=False if quiet else None) as progress:
        for n, (line, item) in enumerate(gold, 1):
            qid = item.get("qid", item.get("q_id"))
            scope = doc_scope or item.get("doc_scope")
            if scope is not None and not (isinstance(scope, str) and scope):
                raise MiniRagError("%s:%d: doc_scope must be a non-empty string, got %s"
                                   % (gold_path, line, json.dumps(scope)))
            rows.append(pipeline.answer(item["question"], qid=qid, timings=timings, doc_scope=scope).row)
            progress.update(n)
    atomic_write_text(out_path, dumps_jsonl(rows))
    return len(rows)


# ------------------------------------------------------------------ scoring

def score(dataset: str, gold: str, trace: str, out_dir: str, gates: str, refusal: str,
          baseline: Optional[str] = None, chunks: Optional[str] = None,
          tag: Optional[str] = None, warned: Optional[set] = None,
          quiet: bool = False) -> Tuple[int, Dict[str, Any]]:
    """Run the scorer in a subprocess (``python -m referee``) and read its JSON report.

    Writes ``report.<tag>.json``, ``report.<tag>.md`` and ``items.<tag>.jsonl`` in
    ``out_dir`` (``tag`` defaults to ``dataset``).  Returns (exit status 0 or 1, report).
    The scorer's stderr is passed through (``pass_on``: each warning once per run, none
    with ``quiet``); its exit 2 raises MiniRagError.
    """
    tag = tag or dataset
    out = os.path.join(out_dir, "report.%s.json" % tag)
    argv = SCORER + ["--gold", gold, "--trace", trace, "--dataset", dataset]
    argv += ["--gates", "none"] if gates == NONE else ["--gates-file", gates]
    argv += ["--k", K_VALUES, "--out", out,
            "--markdown", os.path.join(out_dir, "report.%s.md" % tag),
            "--items", os.path.join(out_dir, "items.%s.jsonl" % tag), "--refusal", refusal,
            "--html", os.path.join(out_dir, "report.%s.html" % tag)]
    if baseline:
        argv += ["--baseline", baseline]
    if chunks:
        argv += ["--chunks", chunks]
    os.makedirs(out_dir, exist_ok=True)
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, env=_scorer_env())
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode == 2:
        raise MiniRagError("score_eval.py exited with status %d for %s:\n%s"
                           % (proc.returncode, trace, err.strip()))
    if proc.returncode not in (0, 1):   # the scorer crashed: an internal error, never a verdict
        raise RuntimeError("score_eval.py exited with status %d for %s: %s"
                           % (proc.returncode, trace, err.strip()))
    if err:
        pass_on(err, set() if warned is None else warned, quiet, dataset=tag)
    try:
        with open(out, encoding="utf-8") as fh:
            report = json.load(fh)
    except (OSError, ValueError) as exc:
        raise MiniRagError("%s: cannot read the scorer's report: %s" % (out, exc)) from None
    return proc.returncode, report


WARNING = "score_eval: warning: "


def pass_on(err: str, warned: set, quiet: bool = False, stream=None, dataset: str = "") -> None:
    """The scorer's stderr, line by line: a warning (``score_eval: warning: ...``) is written
    once per run (``warned`` holds those already written: one eval scores two datasets and
    the same warning came twice) and never with ``quiet``; any other line (a failed gate)
    as it came, after ``score_eval: <dataset>:`` so two datasets' lines tell apart."""
    stream = stream if stream is not None else sys.stderr
    for line in err.splitlines():
        if line.startswith(WARNING):
            if quiet or line in warned:
                continue
            warned.add(line)
        elif dataset and line.startswith("score_eval: "):
            line = "score_eval: %s: %s" % (dataset, line[len("score_eval: "):])
        stream.write(line + "\n")


def merge_html(out: str, pages: List[str]) -> None:
    """``runs/report.html``: the scorer's per-dataset HTML reports on one page."""
    proc = subprocess.run(SCORER + ["merge-html", out] + pages, stderr=subprocess.PIPE, check=False,
                          env=_scorer_env())
    if proc.returncode != 0:
        raise MiniRagError("score_eval.py merge-html failed:\n%s" % proc.stderr.decode("utf-8", "replace").strip())


def _datasets(gold: Optional[str], perturb: Optional[str], runs: str = "runs",
              config: Optional[Dict[str, Any]] = None, quiet: bool = False) -> List[Tuple[str, str, bool]]:
    """(dataset, gold path, is_seed_fallback) for the two gold sets.

    A gold set of one's own (``gold`` other than gold/gold.jsonl) never falls back to the
    repository's perturbation set: without ``perturb`` one is generated from it with
    ``perturb`` (all kinds, one row per item) under ``runs``; ``perturb="none"`` skips it.
    Both cases are said on stderr (unless ``quiet``).
    """
    if gold and perturb is None and not _same_file(gold, DATASETS[0][1]):
        if not os.path.isfile(gold):
            raise MiniRagError("%s: cannot read: no such file" % gold)
        perturb = _generate_perturb(gold, runs, config, quiet)
    elif perturb == NONE and not quiet:
        print("mini_rag: --perturb none: the perturbation set is skipped", file=sys.stderr)
    out = []
    for (name, default), given in zip(DATASETS, (gold, perturb)):
        if given == NONE:
            continue
        path = given or default
        if os.path.isfile(path):
            out.append((name, path, False))
        elif given:
            raise MiniRagError("%s: cannot read: no such file" % path)
        else:
            raise MiniRagError("%s: cannot read: no such file (the default gold set of dataset %s; "
                               "--gold FILE names another; the seed example runs only when asked: "
                               "--dataset seed or make eval-seed)" % (path, name))
    return out


def _same_file(a: str, b: str) -> bool:
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def _generate_perturb(gold: str, runs: str, config: Optional[Dict[str, Any]], quiet: bool = False) -> str:
    """A perturbation set derived from a gold set of one's own (``perturb``: every kind, one
    row per item) written to ``runs/gold_perturb.generated.jsonl``; NONE when no kind applies
    to any item.  Says which on stderr."""
    from ..config import load_config
    from .perturb import KINDS, expansion_rules, run_perturb
    out = os.path.join(runs, GENERATED_PERTURB)
    os.makedirs(runs, exist_ok=True)
    counts = run_perturb([gold], out, (), tuple(KINDS), 1, expansion_rules(config or load_config()))
    if not sum(counts.values()):
        os.remove(out)
        if not quiet:
            print("mini_rag: no perturbation applies to %s: the perturbation set is skipped" % gold, file=sys.stderr)
        return NONE
    if not quiet:
        print("mini_rag: perturbation set generated from %s: %s (%d rows; --perturb FILE to give one, "
              "--perturb none to skip)" % (gold, out, sum(counts.values())), file=sys.stderr)
    return out


def _check_eval_outputs(runs: str, sets, gates: str, config: Dict[str, Any]) -> None:
    """The output policy for ``eval``'s files in ``runs`` (issue 33): none may be an input
    (a gold set, the gates file, the index) or a device, FIFO or folder."""
    from ..fileio import check_outputs
    outputs = [(os.path.join(runs, "manifest.json"), "manifest")]
    for name, _, is_seed in sets:
        for kind, ext, what in (("trace", "jsonl", "trace"), ("report", "json", "report"), ("report", "md", "markdown"),
                                ("report", "html", "html"), ("items", "jsonl", "items")):
            if kind != "trace" or not is_seed:
                outputs.append((os.path.join(runs, "%s.%s.%s" % (kind, name, ext)), what))
    outputs += [(os.path.join(runs, "report.json"), "eval-report"), (os.path.join(runs, "report.md"), ""),
                (os.path.join(runs, "report.html"), "html")]
    inputs = [("gold set %s" % name, path) for name, path, _ in sets]
    inputs += [("--gates", gates if gates != NONE else None), ("[index] path", config["index"]["path"])]
    check_outputs([("eval output", path, kind) for path, kind in outputs], inputs)


def _check_citations(sets, index, corpus: str) -> None:
    """Every gold citation of the gold sets names a chunk of the corpus (exit 2 otherwise,
    ``path:line`` for each, the first file with any); the seed example and a perturbation
    set generated here (its rows copy the gold set's citations) are not read."""
    from .goldcheck import unknown_citations
    if index is None or not hasattr(index, "position"):
        return
    for name, path, is_seed in sets:
        if is_seed or os.path.basename(path) == GENERATED_PERTURB:
            continue
        problems = unknown_citations(path, read_gold(path), index, corpus)
        if problems:
            raise MiniRagError(join_errors([str(p) for p in problems]))


def evaluate(config: Dict[str, Any], runs: str = "runs", gold: Optional[str] = None,
             perturb: Optional[str] = None, gates: str = "gates.toml",
             pipeline=None, quiet: bool = False, seed: bool = False) -> Tuple[int, Dict[str, Any]]:
    """``make eval``: returns (exit status, the combined report) after writing the files.

    ``gates="none"`` scores without gates; ``perturb="none"`` skips the perturbation set;
    ``seed=True`` scores only the seed example (``examples/seed/``, dataset ``seed``).
    """
    if gates != NONE and not os.path.isfile(gates):
        raise MiniRagError("%s: cannot read gates file: no such file" % gates)
    if seed:
        seed_gold = os.path.join(SEED_EXAMPLE, "gold.jsonl")
        for need in (seed_gold, os.path.join(SEED_EXAMPLE, "trace.jsonl")):
            if not os.path.isfile(need):
                raise MiniRagError("%s: cannot read: no such file (the seed example)" % need)
        sets = [("seed", seed_gold, True)]
    else:
        sets = _datasets(gold, perturb, runs, config, quiet)
    _check_eval_outputs(runs, sets, gates, config)
    if pipeline is None and any(not is_seed for _, _, is_seed in sets):
        from ..pipeline import open_pipeline
        pipeline = open_pipeline(config, quiet=quiet)
    _check_citations(sets, getattr(pipeline, "index", None), config["corpus"]["path"])
    manifest = os.path.join(runs, "manifest.json")
    write_set_manifest(manifest, [], start=True)
    refusal = config["answer"]["refusal"]
    reports: Dict[str, Any] = {}
    warned: set = set()          # the scorer's warnings already written (each once per run)
    worst = 0
    for name, gold_path, is_seed in sets:
        if is_seed:
            trace = os.path.join(SEED_EXAMPLE, "trace.jsonl")
            status, report = score("seed", gold_path, trace, runs, gates, refusal,
                                   chunks=os.path.join(SEED_EXAMPLE, "chunks.jsonl"), tag=name,
                                   warned=warned, quiet=quiet)
        else:
            trace = os.path.join(runs, "trace.%s.jsonl" % name)
            run_gold(pipeline, gold_path, trace, label="eval %s" % name, quiet=quiet)
            status, report = score(name, gold_path, trace, runs, gates, refusal, warned=warned, quiet=quiet)
        reports[name] = report
        worst = max(worst, status)
    combined = {"pass": all(r.get("pass") is True for r in reports.values()), "datasets": reports}
    if any(not is_seed for _, _, is_seed in sets):
        from ..search.retrieve import dated_as_of
        combined["as_of"] = dated_as_of(config["guards"]["as_of"])
    atomic_write_text(os.path.join(runs, "report.json"), json.dumps(combined, indent=2, ensure_ascii=False) + "\n")
    md_parts = []
    for name, _, _ in sets:
        try:
            with open(os.path.join(runs, "report.%s.md" % name), encoding="utf-8") as fh:
                md_parts.append(fh.read())
        except OSError:
            md_parts.append("")
    atomic_write_text(os.path.join(runs, "report.md"), combined_markdown(reports, md_parts))
    merge_html(os.path.join(runs, "report.html"), [os.path.join(runs, "report.%s.html" % n) for n, _, _ in sets])
    written = [os.path.join(runs, "%s.%s.%s" % (kind, name, ext)) for name, _, is_seed in sets
               for kind, ext in (("trace", "jsonl"), ("report", "json"), ("report", "md"), ("report", "html"),
                                 ("items", "jsonl"))
               if kind != "trace" or not is_seed]
    write_set_manifest(manifest, written + [os.path.join(runs, "report.json"), os.path.join(runs, "report.md"),
                                            os.path.join(runs, "report.html")])
    return (0 if combined["pass"] and worst == 0 else 1), combined


# ------------------------------------------------------------------ summary (stdout, stderr)

def summary(combined: Dict[str, Any], runs: str) -> Dict[str, Any]:
    """The compact JSON ``eval`` prints on stdout (well under 150 lines; a script reads ``pass``).

    Keys: ``pass``, ``version``, ``as_of``, ``failed_gates`` (``"<dataset>: <reason>"``),
    ``datasets`` (per dataset: ``pass``, the scorer's ``dataset`` section, ``items``, the
    summary and gated metrics each ``{value, count, n, ci[, gate, pass]}``, ``files``),
    ``reports`` (the combined report.json and report.md).
    """
    from .. import __version__
    out: Dict[str, Any] = {"pass": combined["pass"], "version": __version__,
                           "as_of": combined.get("as_of"), "failed_gates": [], "datasets": {},
                           "reports": {"json": os.path.join(runs, "report.json"),
                                       "markdown": os.path.join(runs, "report.md")}}
    for name, rep in combined["datasets"].items():
        gates = {g["metric"]: g for g in rep.get("gate_results") or [] if g.get("kind") == "threshold"}
        metrics = {}
        for metric in list(SUMMARY_METRICS) + [m for m in gates if m not in SUMMARY_METRICS]:
            m = _metric(rep, metric)
            if not m:
                continue
            entry = {"value": m.get("value"), "count": m.get("count"), "n": m.get("n"), "ci": m.get("ci")}
            if metric in gates:
                g = gates[metric]
                tier = g.get("tier", "block")
                gate = "%s %s" % (g["op"], g["threshold"]) if g.get("op") else ""
                if tier != "block":
                    gate = (gate + " " if gate else "") + "(%s)" % tier
                entry.update({"gate": gate, "pass": g["pass"]})
            metrics[metric] = entry
        failed = ["%s%s: %s" % ("(warn) " if g.get("tier") == "warn" else "", g.get("gate"), g.get("reason"))
                  for g in rep.get("gate_results") or [] if not g.get("pass") and g.get("tier") != "monitor"]
        out["failed_gates"] += ["%s: %s" % (name, f) for f in failed]
        inputs = rep.get("inputs") or {}
        out["datasets"][name] = {
            "pass": rep.get("pass"), "dataset": rep.get("dataset"),
            "items": (rep.get("counts") or {}).get("gold_items"), "metrics": metrics,
            "files": {"gold": inputs.get("gold"), "trace": inputs.get("trace"),
                      "report": os.path.join(runs, "report.%s.json" % name),
                      "markdown": os.path.join(runs, "report.%s.md" % name),
                      "items": os.path.join(runs, "items.%s.jsonl" % name)}}
    return out


def summary_json(obj: Any, depth: int = 0, inline_from: int = 4) -> str:
    """JSON with one key a line down to ``inline_from`` levels, deeper values on one line."""
    pad = "  " * (depth + 1)
    if isinstance(obj, dict) and obj and depth < inline_from:
        items = ["%s%s: %s" % (pad, json.dumps(k, ensure_ascii=False), summary_json(v, depth + 1, inline_from))
                 for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * depth + "}"
    if isinstance(obj, list) and obj and depth < inline_from and all(isinstance(v, str) for v in obj):
        return "[\n" + ",\n".join(pad + json.dumps(v, ensure_ascii=False) for v in obj) + "\n" + "  " * depth + "]"
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))


def summary_text(short: Dict[str, Any]) -> str:
    """The human summary ``eval`` writes on stderr: verdict, the gated metrics, the paths."""
    from ..fileio import escape_controls
    names = list(short["datasets"])
    lines = ["eval: %s (%s)%s" % ("PASS" if short["pass"] else "FAIL",
                                  ", ".join("%s %s" % (n, "passes" if short["datasets"][n]["pass"] else "fails")
                                            for n in names),
                                  "; as_of %s" % short["as_of"] if short.get("as_of") else "")]
    if short.get("operating_point"):
        lines.append("  " + short["operating_point"]["text"])
    gated = []
    for n in names:
        gated += [m for m, e in short["datasets"][n]["metrics"].items() if "gate" in e and m not in gated]
    if gated:
        lines.append("  %-30s" % "gated metric" + "".join("  %-26s" % n for n in names))
        for m in gated:
            cells = []
            for n in names:
                e = short["datasets"][n]["metrics"].get(m)
                cells.append("n/a" if not e or "gate" not in e else "%s %s %s" % (
                    "n/a" if e["value"] is None else "%.4f" % e["value"], e["gate"], "ok" if e["pass"] else "FAIL"))
            lines.append("  %-30s" % m + "".join("  %-26s" % c for c in cells))
    for f in short["failed_gates"]:
        lines.append("  failed: %s" % f)
    lines.append("  reports: %s, %s; per dataset: %s" % (
        short["reports"]["json"], short["reports"]["markdown"],
        ", ".join(short["datasets"][n]["files"]["report"] for n in names)))
    return "\n".join(escape_controls(line.rstrip()) for line in lines) + "\n"


# ------------------------------------------------------------------ report.md

def _metric(report: Dict[str, Any], name: str) -> Optional[Dict[str, Any]]:
    metrics = report.get("metrics") or {}
    return metrics.get(name)


def _fmt(m: Optional[Dict[str, Any]]) -> str:
    if not m or m.get("value") is None:
        return "n/a"
    value = m["value"]
    if "count" in m and m.get("n") is not None:
        return "%.4f (%s/%s)" % (value, m["count"], m["n"])
    return "%.4f" % value


def combined_markdown(reports: Dict[str, Dict[str, Any]], scorer_md: Sequence[str]) -> str:
    """Summary per dataset, pass rate per category and dataset, then the scorer reports."""
    names = list(reports)
    lines = ["# mini_rag eval report", "",
             "**%s**: %s." % ("PASS" if all(r.get("pass") is True for r in reports.values()) else "FAIL",
                              ", ".join("%s %s" % (n, "passes" if reports[n].get("pass") else "fails")
                                        for n in names)), "",
             "## Summary", "",
             "| metric | " + " | ".join(names) + " |",
             "|---|" + "---|" * len(names)]
    for metric in SUMMARY_METRICS:
        lines.append("| `%s` | %s |" % (metric, " | ".join(_fmt(_metric(reports[n], metric)) for n in names)))
    lines.append("| gates | %s |" % " | ".join(
        "%d/%d pass" % (sum(1 for g in reports[n].get("gate_results") or [] if g.get("pass")),
                        len(reports[n].get("gate_results") or [])) for n in names))
    categories = sorted({c for n in names for c in (reports[n].get("categories") or {})})
    if categories:
        lines += ["", "## Pass rate by category", "",
                  "| category | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
        for cat in categories:
            cells = []
            for n in names:
                entry = (reports[n].get("categories") or {}).get(cat)
                cells.append(_fmt((entry or {}).get("metrics", {}).get("pass_rate")) if entry else "")
            lines.append("| %s | %s |" % (cat, " | ".join(cells)))
    for n, md in zip(names, scorer_md):
        if md:
            lines += ["", "---", "", md.rstrip("\n")]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ compare

_INDEX_SECTIONS = ("corpus", "analysis", "index")


def compare(base_config: Dict[str, Any], cand_config: Dict[str, Any], out_dir: str = os.path.join("runs", "compare"),
            gold: Optional[str] = None, perturb: Optional[str] = None, gates: str = "gates.toml",
            stream=None) -> int:
    """Run both configs on both gold sets, gate the candidate against the baseline.

    The baseline runs are scored plainly; the candidate runs with ``--baseline`` the
    baseline report, so the scorer's ``[regression]`` gates apply.  A candidate whose
    index settings ([corpus], [analysis], [index] apart from the path) differ from the
    baseline's gets its own index file under ``out_dir`` so the two never overwrite
    each other.  Prints per-metric and per-category deltas to ``stream`` (stdout);
    returns the candidate's verdict: 0 all gates pass, 1 otherwise.
    """
    from ..pipeline import Pipeline
    stream = stream if stream is not None else sys.stdout
    if not os.path.isfile(gates):
        raise MiniRagError("%s: cannot read gates file: no such file" % gates)
    sets = []
    for (name, default), given in zip(DATASETS, (gold, perturb)):
        path = given or default
        if not os.path.isfile(path):
            raise MiniRagError("%s: cannot read gold set: no such file (compare needs both gold sets)" % path)
        read_gold(path)
        sets.append((name, path))
    cand_config = json.loads(json.dumps(cand_config))
    if _index_key(cand_config) != _index_key(base_config):
        cand_config["index"]["path"] = os.path.join(out_dir, "candidate", "index.json.gz")
    results: Dict[str, Dict[str, Tuple[int, Dict[str, Any]]]] = {}
    warned: set = set()
    for label, cfg in (("baseline", base_config), ("candidate", cand_config)):
        pipeline = Pipeline(cfg)
        folder = os.path.join(out_dir, label)
        results[label] = {}
        for name, path in sets:
            trace = os.path.join(folder, "trace.%s.jsonl" % name)
            run_gold(pipeline, path, trace, label="%s %s" % (label, name))
            base_report = (os.path.join(out_dir, "baseline", "report.%s.json" % name)
                           if label == "candidate" else None)
            results[label][name] = score(name, path, trace, folder, gates, cfg["answer"]["refusal"],
                                         baseline=base_report, warned=warned)
    stream.write(delta_text(results))
    ok = all(status == 0 and rep.get("pass") is True for status, rep in results["candidate"].values())
    return 0 if ok else 1


def _index_key(config: Dict[str, Any]) -> str:
    parts = {s: dict(config.get(s, {})) for s in _INDEX_SECTIONS}
    parts["index"].pop("path", None)
    return json.dumps(parts, sort_keys=True)


def delta_text(results: Dict[str, Dict[str, Tuple[int, Dict[str, Any]]]]) -> str:
    """The compare table: per dataset, each summary metric baseline -> candidate (delta),
    then pass rate per category, then the candidate's failed gates (regressions included)."""
    out: List[str] = []
    for name in results["baseline"]:
        base = results["baseline"][name][1]
        cand = results["candidate"][name][1]
        out.append("== %s: baseline %s, candidate %s" % (name, "PASS" if base.get("pass") else "FAIL",
                                                         "PASS" if cand.get("pass") else "FAIL"))
        out.append("%-32s %10s %10s %10s" % ("metric", "baseline", "candidate", "delta"))
        for metric in SUMMARY_METRICS:
            out.append(_delta_line(metric, _value(_metric(base, metric)), _value(_metric(cand, metric))))
        cats = sorted(set(base.get("categories") or {}) | set(cand.get("categories") or {}))
        if cats:
            out.append("%-32s %10s %10s %10s" % ("category (pass_rate)", "baseline", "candidate", "delta"))
            for cat in cats:
                b = ((base.get("categories") or {}).get(cat) or {}).get("metrics", {}).get("pass_rate")
                c = ((cand.get("categories") or {}).get(cat) or {}).get("metrics", {}).get("pass_rate")
                out.append(_delta_line(cat, _value(b), _value(c)))
        failed = [g for g in cand.get("gate_results") or [] if not g.get("pass")]
        for g in failed:
            out.append("FAILED %s: %s %s %s, got %s%s" % (
                g.get("kind", "gate"), g.get("gate"), g.get("op", ""), g.get("threshold", ""),
                g.get("value"), (" (%s)" % g["reason"]) if g.get("reason") else ""))
        out.append("")
    return "\n".join(out)


def _value(m: Optional[Dict[str, Any]]) -> Optional[float]:
    return None if not m else m.get("value")


def _delta_line(name: str, b: Optional[float], c: Optional[float]) -> str:
    fb = "n/a" if b is None else "%.4f" % b
    fc = "n/a" if c is None else "%.4f" % c
    fd = "n/a" if b is None or c is None else "%+.4f" % (c - b)
    return "%-32s %10s %10s %10s" % (name, fb, fc, fd)
