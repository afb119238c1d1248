"""One scoring run: the argument parser, the run from inputs to outputs, and the summary."""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from typing import NamedTuple

from .base import (DESCRIPTION, DEFAULT_GATES, DEFAULT_GATES_FILE, EXIT_GATE, EXIT_PASS, MAX_ERRORS,
    MAX_INPUT_BYTES, MAX_INPUT_LINES, MAX_K, MAX_LINE_BYTES, MAX_STDIN_LINES, REFUSAL, SCHEMA,
    ScoreError, _GROUNDING, _LIMITS, __version__)
from .registry import F_GOLD, F_SHIP, NEEDS, REGISTRY, SEED_ONLY, _BY_NAME, needs_for
from .fmt import _r, _rounded
from .inputs import _Errors, _RAGAS_PATHS, _show, ragas_layout
from .trec import (TREC_DEFAULT, _measure_specs, parse_trec_measures, render_trec, trec_evaluate,
    trec_help, trec_metric_entries, trec_per_topic, trec_significance)
from .names import _metric_help, metric_table_markdown, parse_metric
from .aggregate import (ANSWER_METRICS, EXTRA_METRICS, MODE_ORDER, _SKIPPED, aggregate,
    failure_mode, flag_string, not_computed)
from .config import Regression, Rules, _GATES_DOCS, gates_doc, load_gates_file, load_rules, parse_gates_string
from .contracts import gold_from_trace, read_chunks, read_gold, read_qrels, read_run
from .judge import Scorer, gc_paused, score_run, score_trace
from .gates import blocking_pass, check_gates, compare, load_baseline, order_by_tier
from .scorecard import ItemStages, SCORECARD_K, STAGES, resolve_weights, scorecard, scorecard_gaps
from .outputs import (atomic_write, check_output_sets, check_outputs, manifest_listable, remove_output, render_json,
    render_markdown, terminal_safe, write_manifest)
from .reports import _item_lines, _worst, write_reports
from .shards import merge_partials, merged_runs, write_partial

# --------------------------------------------------------------------------- main


def _parse_ks(text: str) -> List[int]:
    ks = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or len(part) > 6 or not 1 <= int(part) <= MAX_K:
            raise ScoreError("--k: cutoffs must be integers from 1 to %d separated by commas, got %r"
                             % (MAX_K, text))
        if int(part) not in ks:
            ks.append(int(part))
    return ks


def _trec_names(args, trec: bool) -> List[str]:
    """The trec_eval measures to compute (IR mode); the IR-only flags are refused otherwise."""
    if not trec:
        if args.m or args.measures or args.format == "trec" or args.per_query or args.average != "all" \
                or args.complete or args.rel_level is not None or args.max_docs is not None:
            raise ScoreError("usage: -m, --measures, --format trec, -q, -c, -l, -M and --average need --qrels and --run")
        return []
    if args.complete and args.average != "all":
        raise ScoreError("usage: -c (average over every qrels topic) contradicts --average %s" % args.average)
    for flag, value in (("-l", args.rel_level), ("-M", args.max_docs)):
        if value is not None and not 1 <= value <= 1 << 40:
            raise ScoreError("%s: must be an integer from 1, got %d" % (flag, value))
    specs = _measure_specs(args.m, args.measures)
    return parse_trec_measures(specs or list(TREC_DEFAULT))


def _note(args, text: str) -> None:
    """A note on stderr (which default file or gates apply), unless --quiet."""
    if not args.quiet:
        sys.stderr.write(terminal_safe("score_eval: %s\n" % text))


def _has_table(path: str, name: str) -> bool:
    """Whether the TOML file has a ``[name]`` table (True when unreadable: the reader reports it)."""
    try:
        doc, _ = gates_doc(path)
    except ScoreError:
        return True
    return isinstance(doc.get(name), dict)


def _check_gate_modes(gates, trec: bool, trec_names: List[str]) -> None:
    """IR mode gates retrieval measures only; trec_eval names need IR mode.  Adds the trec
    measures that gates name to ``trec_names``."""
    errors = []
    for g in gates:
        is_trec = g.ref.metric not in REGISTRY
        if trec and (g.ref.metric.name in SEED_ONLY or g.ref.metric.name == "recall@K"):
            errors.append("gate %r needs answers (--gold/--trace); --qrels/--run measure retrieval only: "
                          "put IR gates in an [ir] table or --gates, got %r" % (g.ref.spelled, g.ref.spelled))
        elif not trec and is_trec:
            errors.append("gate %r is a trec_eval measure, computed only with --qrels/--run, got %r"
                          % (g.ref.spelled, g.ref.spelled))
        elif is_trec and g.ref.metric.name not in trec_names:
            trec_names.append(g.ref.metric.name)
    if errors:
        raise ScoreError("\n".join(errors))


def _asked(args, gates, regression, gates_file: Optional[str], weights: Dict[str, float],
           trec: bool) -> Tuple[set, bool]:
    """What this run computes beyond the seed's verdicts (issue 40): the NEEDS of the measures
    named by its gates, [regression] and --compute, and whether it reports the weighted
    scorecard (then also the NEEDS of its weighted stages, so one trace gets one overall score
    whoever computes it).  The scorecard is asked for by a gates file, --weights, or --compute
    scorecard; everything by --compute all, an output beside the JSON report (--items,
    --markdown, --html, --csv, --metrics-csv, --junit, $GITHUB_STEP_SUMMARY), --baseline or a
    --partial shard.  Seed 002's command (--gates, no gates file) asks for nothing: its JSON
    report holds every measure read off the verdicts, none of the others.  IR mode (``trec``)
    measures rankings only: its rank measures and scorecard are always computed."""
    names = [n.strip() for n in args.compute.split(",")] if args.compute else []
    refs = [parse_metric(n) for n in names if n not in ("all", "scorecard")] + [g.ref for g in gates]
    if (trec or "all" in names or args.items or args.markdown or args.html or args.csv or args.junit
            or args.metrics_csv or args.baseline or os.environ.get("GITHUB_STEP_SUMMARY")
            or getattr(args, "partial", None)):
        return set(NEEDS), True
    needs = needs_for(refs + _regression_refs(regression))
    if gates_file is not None:          # grounding by default (issue 41), "strict" in the file turns it off
        needs.add("grounding")
    card = gates_file is not None or args.weights is not None or "scorecard" in names
    if card:
        needs |= needs_for(_BY_NAME[s.metric] for s in STAGES if weights[s.name] > 0 and s.metric in _BY_NAME)
    return needs, card


def check_matched(args, gold, stats: dict, trec: bool) -> None:
    """An empty trace (run), or one whose rows name no gold qid (qrels topic), is an input error
    whatever the gates (issue 42): there is nothing to score, a verdict would be about nothing."""
    n = len(gold)
    if not n or stats["missing"] < n:
        return
    path, rows, key = (args.run, "lines", "qrels topic") if trec else (args.trace, "rows", "gold qid")
    source = args.qrels if trec else args.gold
    if not stats["rows"]:
        raise ScoreError("%s: the %s is empty (0 %s): nothing to score against %s"
                         % (path, "run" if trec else "trace", rows, source))
    raise ScoreError("%s: no %s names a %s of %s (%d %s; theirs e.g. %s; the %s are e.g. %s): wrong file?"
                     % (path, rows[:-1], key, source, stats["rows"], rows,
                        ", ".join(_show(q, 40) for q in stats["unknown_ex"][:3]), key + "s",
                        ", ".join(_show(q, 40) for q in gold.qids[:3])))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="score_eval.py", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_metric_help() + "\n\n" + trec_help())
    ap.add_argument("--gold", help="gold JSONL (qid, answerable, gold_claim_substr, gold_citations, ...)")
    ap.add_argument("--trace", help="trace JSONL (qid, retrieved_ids, answer_json {claim, citations}, ...); streamed")
    ap.add_argument("--qrels", help="TREC qrels file (topic iter docno rel), instead of --gold")
    ap.add_argument("--run", help="TREC run file (topic Q0 docno rank score tag), instead of --trace")
    ap.add_argument("--k", default="5", help="rank cutoffs, comma-separated (default 5); the first is the seed's k")
    ap.add_argument("--gates", help="seed-style gates 'precision=0.80,chr=0.75,under=0.05,over=0.10' "
                                    "(also name>=v / name<=v); replaces the dataset's file gates; "
                                    "'none': no gates (exit 0 unless the input is bad)")
    ap.add_argument("--gates-file", help="TOML gates file (default ./gates.toml; without it and without "
                                         "--gates, seed 002's default gates apply)")
    ap.add_argument("--dataset", help="section of the gates file to check (default baseline; ir with --qrels/--run, "
                                      "where a file without [ir] means no gates)")
    ap.add_argument("--refusal", help="refusal token (default from [scorer] refusal, else 'not in context'); "
                                      "compared after strip + lower-case")
    ap.add_argument("--chunks", help="JSONL of {id, text} chunks (BEIR {_id, text} too) for the hallucination check")
    ap.add_argument("--by", default="category", help="gold field for the per-category breakdown (default category)")
    ap.add_argument("--baseline", help="an earlier report (JSON from --out/stdout) to compare against")
    ap.add_argument("--out", help="also write the JSON report to this file (atomically); stdout then gets the "
                                  "compact summary (--full for the whole report)")
    ap.add_argument("--summary", action="store_true",
                    help="stdout: the compact summary (verdict, gates, overall score, files) instead of the report")
    ap.add_argument("--full", action="store_true", help="stdout: the whole JSON report even with --out")
    ap.add_argument("--markdown", help="write a human report (gates, metrics, categories, failure modes, worst items)")
    ap.add_argument("--items", help="write one JSON line per gold item with its verdicts")
    ap.add_argument("--compute", metavar="NAMES", help="also compute these optional measures (comma-separated), "
                    "which seed 002's command does not: e.g. answer_relevance, nDCG@10; 'scorecard' (the weighted "
                    "scorecard), 'all'; a gate, [regression], the scorecard or an output beside the JSON asks too")
    ap.add_argument("--weights", help="JSON object of stage weights for the scorecard, e.g. '{\"faithfulness\": 0.4}' "
                                      "(over the gates file's [weights], over seed 004's defaults)")
    ap.add_argument("--html", help="write a self-contained HTML report (no JavaScript, no network)")
    ap.add_argument("--junit", help="write JUnit XML: one testsuite for the dataset, one testcase per gate")
    ap.add_argument("--junit-items", action="store_true", help="with --junit: add a testsuite with one testcase per item")
    ap.add_argument("--csv", help="write one CSV row per item (verdicts, failure mode, stage scores)")
    ap.add_argument("--metrics-csv", help="write one CSV row per metric (value, count, n, 95%% CI)")
    ap.add_argument("--max-errors", type=int, default=MAX_ERRORS, help="bad lines listed before the rest are only "
                                                                       "counted (default %d)" % MAX_ERRORS)
    _add_trec_flags(ap)
    ap.add_argument("--quiet", action="store_true",
                    help="no progress lines and no notes on stderr (past 100,000 trace rows the scorer "
                         "reports progress; errors and gate failures are still printed)")
    ap.add_argument("--version", action="version", version="score_eval.py " + __version__,
                    help="print the version and exit")
    ap.add_argument("--manifest", metavar="FILE", help="after --out/--items/--markdown, write FILE naming each "
                                                        "with its sha256 (removed first: no manifest = torn set)")
    ap.add_argument("--force", action="store_true",
                    help="replace an existing output file that is not of the output's kind (never an input)")
    _add_input_limit_flags(ap)
    ap.add_argument("--debug", action="store_true",
                    help="on an internal error (exit 3), print the traceback instead of saving it to a file")
    ap.add_argument("--partial", metavar="OUT.json",
                    help="shard run: write this shard's verdicts to OUT.json ('-': stdout) for "
                         "'score_eval.py merge P1.json P2.json ...' instead of a report")
    ap.add_argument("--print-metric-table", action="store_true",
                    help="print the README metric table (Markdown, from the registry) and exit")
    return ap


def _add_trec_flags(ap: argparse.ArgumentParser) -> None:
    """The flags of IR mode (--qrels/--run): trec_eval's measures, their topics, its output format
    (and --format ragas, the other reading of the trace)."""
    ap.add_argument("-m", action="append", metavar="MEASURE",
                    help="with --qrels/--run: a trec_eval measure to compute, trec_eval's spelling "
                         "(map, Rprec, bpref, recip_rank, P.5,10, recall.10, ndcg_cut.10, success.1, num_ret, "
                         "utility.2,-1,0,0, ndcg.1=3,2=9 ...; P alone = its default cutoffs; official, all_trec, "
                         "set: trec_eval's sets; the list is below); repeatable")
    ap.add_argument("--measures", metavar="M1,M2",
                    help="the same as several -m, comma-separated: map,ndcg_cut.10,P.5")
    ap.add_argument("--average", choices=("all", "judged"), default="all",
                    help="with --qrels/--run, the trec_eval measures' topics: all (every qrels topic, a topic the "
                         "run forgot scores 0: trec_eval -c; default) or judged (the qrels topics the run has: "
                         "plain trec_eval)")
    ap.add_argument("--format", choices=("json", "trec", "ragas"), default="json",
                    help="stdout: json (the report, default) or trec (trec_eval's measure<TAB>qid|all<TAB>value "
                         "lines; --qrels/--run only); ragas: the trace is RAGAS-style rows (user_input/question, "
                         "response/answer, retrieved_contexts/contexts, reference/ground_truth; no qid), gold "
                         "derived from it without --gold; JSON report (also detected, with a note)")
    ap.add_argument("-q", dest="per_query", action="store_true",
                    help="with --format trec: one line per topic and measure before the 'all' lines (trec_eval -q)")
    ap.add_argument("-c", dest="complete", action="store_true",
                    help="with --qrels/--run: trec_eval -c, average over every qrels topic, a topic the run "
                         "forgot scoring 0 (this tool's default, --average all; accepted for trec_eval's "
                         "command lines)")
    ap.add_argument("-l", dest="rel_level", type=int, metavar="N",
                    help="with --qrels/--run: trec_eval -l, the least qrels level that is relevant for the "
                         "trec_eval measures (default 1; their nDCG gains stay the levels)")
    ap.add_argument("-M", dest="max_docs", type=int, metavar="N",
                    help="with --qrels/--run: trec_eval -M, the trec_eval measures read the first N documents "
                         "of each topic (in trec_eval's order) and drop the rest")


def _add_input_limit_flags(ap: argparse.ArgumentParser) -> None:
    """The bounds on what a run reads: bytes of one input, lines of one input, bytes of one line."""
    ap.add_argument("--max-input-bytes", type=int, default=MAX_INPUT_BYTES, metavar="N",
                    help="largest input (a file or stdin) read, in bytes (default %d = 4 GiB)" % MAX_INPUT_BYTES)
    ap.add_argument("--max-input-lines", type=int, default=None, metavar="N",
                    help="most lines read from one input (default %d for a file, %d for stdin)"
                         % (MAX_INPUT_LINES, MAX_STDIN_LINES))
    ap.add_argument("--max-line-bytes", type=int, default=MAX_LINE_BYTES, metavar="N",
                    help="longest input line accepted, in bytes (default %d = 16 MiB)" % MAX_LINE_BYTES)


_RUN_OUTPUTS = (("out", "report"), ("markdown", "markdown"), ("items", "items"), ("html", "report-html"),
                ("junit", "junit"), ("csv", "csv"), ("metrics_csv", "csv"), ("partial", "partial"),
                ("manifest", "manifest"))
_RUN_INPUTS = ("gold", "trace", "qrels", "run", "chunks", "baseline", "gates_file")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_run_outputs(args) -> None:
    """The output policy for a scoring run (or a merge): before anything is read or written."""
    inputs = [(_flag(a), getattr(args, a, None)) for a in _RUN_INPUTS]
    if getattr(args, "gates_file", None) is None and os.path.exists(DEFAULT_GATES_FILE):
        inputs.append(("the gates file", DEFAULT_GATES_FILE))
    inputs += [("partial", p) for p in getattr(args, "merge", None) or []]
    outputs = [(_flag(a), getattr(args, a, None), kind) for a, kind in _RUN_OUTPUTS]
    check_outputs(outputs, inputs, getattr(args, "force", False))
    check_output_sets(outputs, getattr(args, "force", False))      # e.g. make eval's runs/ (issue 42)
    if getattr(args, "manifest", None):
        manifest_listable([(label, path) for label, path, kind in outputs if kind != "manifest"])


class RunSetup(NamedTuple):
    """What one run checks and computes, settled from the flags and the gates file before any
    input is read (``configure``)."""
    trec: bool                      # IR mode (--qrels/--run)
    ks: List[int]                   # the cutoffs computed; the first is the seed's k
    trec_names: List[str]           # the trec_eval measures computed (IR mode)
    gates: list                     # the gates checked (config.Gate)
    shown: dict                     # the report's "gates": each gate as spelled, with its bound
    source: Optional[str]           # where the gates come from: a file, "--gates", "none", "seed default"
    refusal: str                    # the refusal token
    regression: Optional[Regression]    # the gates file's [regression] (with --baseline)
    rules: Rules                    # [scorer] rules: refusal reader, grounding, citation patterns
    weights: dict                   # the scorecard's stage weights
    weight_warnings: List[str]      # what resolving the weights warned about
    needs: set                      # the NEEDS computed (registry)
    card: bool                      # whether the scorecard is reported (asked for)


def _run_mode(args) -> bool:
    """Whether the run is in IR mode (--qrels/--run) rather than on answers (--gold/--trace)."""
    trec = bool(args.qrels or args.run)
    if trec and (args.gold or args.trace):
        raise ScoreError("usage: give --gold/--trace or --qrels/--run, not both")
    if trec and not (args.qrels and args.run):
        raise ScoreError("usage: --qrels and --run go together")
    if not trec and not args.trace:
        raise ScoreError("usage: --trace is required (with --gold, or alone for the reference-free metrics), "
                         "or --qrels and --run")
    return trec


def _check_flag_values(args) -> None:
    """--junit-items needs --junit; at most one input is stdin; the input limits (set in _LIMITS)."""
    if args.junit_items and not args.junit:
        raise ScoreError("usage: --junit-items needs --junit FILE")
    stdin_inputs = [o for o in ("gold", "trace", "qrels", "run", "chunks", "baseline", "gates_file")
                    if getattr(args, o) == "-"]
    if len(stdin_inputs) > 1:
        raise ScoreError("usage: only one input can be - (stdin), got %s"
                         % ", ".join("--" + o.replace("_", "-") for o in stdin_inputs))
    if not 1 <= args.max_line_bytes <= 1 << 40:
        raise ScoreError("--max-line-bytes: must be from 1 to 2**40, got %d" % args.max_line_bytes)
    _LIMITS["line_bytes"] = args.max_line_bytes
    _LIMITS.update(input_bytes=MAX_INPUT_BYTES, input_lines=MAX_INPUT_LINES, stdin_lines=MAX_STDIN_LINES)
    for name in ("bytes", "lines"):
        value = getattr(args, "max_input_" + name, None)
        if value is None:
            continue
        if not 1 <= value <= 1 << 50:
            raise ScoreError("--max-input-%s: must be from 1 to 2**50, got %d" % (name, value))
        _LIMITS["input_" + name] = value
        if name == "lines":
            _LIMITS["stdin_lines"] = value


def _read_gates_file(args, trec: bool, dataset_given: bool, no_gates: bool):
    """``(gates_file, refusal, file_gates, regression, source)``: the gates file the run reads
    (--gates-file, else ./gates.toml unless --gates none; None: no file) and what it holds: the
    refusal token, the gates of the dataset's table (none when --gates replaces them) and
    [regression]."""
    refusal, file_gates, regression, gates_source = REFUSAL, [], None, None
    gates_file = args.gates_file
    if gates_file is None and not no_gates and os.path.exists(DEFAULT_GATES_FILE):
        gates_file = DEFAULT_GATES_FILE
        _note(args, "using the gates file %s found in the current folder "
                    "(--gates-file FILE to choose another, --gates none for no gates)" % gates_file)
    if gates_file is not None:
        section = args.dataset if args.gates is None else None
        if trec and not dataset_given and section and not _has_table(gates_file, section):
            _note(args, "%s has no [%s] table: no gates apply to this IR run" % (gates_file, section))
            section = None
        refusal, file_gates, regression = load_gates_file(gates_file, section)
        gates_source = gates_file
    return gates_file, refusal, file_gates, regression, gates_source


def _select_gates(args, trec: bool, no_gates: bool, gates_file: Optional[str], file_gates: list,
                  gates_source: Optional[str]):
    """``(gates, shown, source)``: --gates none, else --gates, else the file's, else (no file)
    seed 002's defaults; IR mode without a file has none."""
    if no_gates:
        return [], {}, "none"
    if args.gates is not None:
        gates, shown = parse_gates_string(args.gates)
        return gates, shown, "--gates"
    if gates_file is not None:
        return file_gates, {g.ref.spelled: g.shown for g in file_gates}, gates_source
    if trec:        # IR mode: only IR gates apply ([ir] or --gates); none means exit 0
        return [], {}, gates_source
    gates, shown = parse_gates_string(DEFAULT_GATES)
    _note(args, "no gates file: seed 002's default gates apply (%s)" % DEFAULT_GATES)
    return gates, shown, "seed default"


def _regression_refs(regression: Optional[Regression]) -> list:
    """The metrics [regression] names: its max_drop metrics, then its slice metrics."""
    return [r for r, _ in regression.max_drop] + list(regression.slice_metrics) if regression else []


def _grounding_rules(rules: Rules, gates, regression: Optional[Regression]) -> Rules:
    """issue 29: grounding sentence by sentence costs a pass over each answer's sentences; a gates
    file that says [scorer] grounding = "strict" turns it off unless a gate / regression names it
    (issue 41: computed by default, with no gates file or no [scorer] grounding)."""
    named = {g.ref.metric.name for g in gates} | {r.metric.name for r in _regression_refs(regression)}
    if named & {"faithfulness", "unsupported_answer_rate"}:
        rules = rules._replace(ground=True)
    return rules


def _run_cutoffs(ks: List[int], trec: bool, gates, regression: Optional[Regression]) -> List[int]:
    """--k's cutoffs (the first stays the seed's k), the scorecard's (SCORECARD_K) and those the
    gates name, the added ones sorted."""
    if not trec and SCORECARD_K not in ks:
        ks.append(SCORECARD_K)
    for ref in [g.ref for g in gates] + _regression_refs(regression):
        if ref.k is not None and ref.k not in ks:
            ks.append(ref.k)
    return ks[:1] + sorted(ks[1:])


def configure(args) -> RunSetup:
    """The run's setup from its flags and gates file, every usage error raised before an input
    is read (the output policy included: check_run_outputs)."""
    trec = _run_mode(args)
    ks = _parse_ks(args.k)
    trec_names = _trec_names(args, trec)
    dataset_given = args.dataset is not None
    if not dataset_given:
        args.dataset = "ir" if trec else "baseline"
    no_gates = args.gates is not None and args.gates.strip().lower() == "none"
    _check_flag_values(args)
    check_run_outputs(args)
    gates_file, refusal, file_gates, regression, gates_source = _read_gates_file(args, trec, dataset_given, no_gates)
    rules = load_rules(gates_file) if gates_file is not None else Rules()
    _GROUNDING["mode"] = rules.grounding
    gates, shown, gates_source = _select_gates(args, trec, no_gates, gates_file, file_gates, gates_source)
    _check_gate_modes(gates, trec, trec_names)
    rules = _grounding_rules(rules, gates, regression)
    weights, weight_warnings = resolve_weights(gates_file, args.weights, gates)
    if args.refusal is not None:
        if not args.refusal.strip():
            raise ScoreError("--refusal: must be a non-empty string, got %r" % args.refusal)
        refusal = args.refusal
    ks = _run_cutoffs(ks, trec, gates, regression)
    needs, card = _asked(args, gates, regression, gates_file, weights, trec)
    if "grounding" not in needs:        # nothing asks for the sentence check (seed 002's command)
        rules = rules._replace(ground=False)
    return RunSetup(trec, ks, trec_names, gates, shown, gates_source, refusal, regression, rules,
                    weights, weight_warnings, needs, card)


def _read_and_judge(args, setup: RunSetup, errors: _Errors, notes: List[str], scorer_class: type):
    """``(gold, scorer, stats, runs)``: the gold set (or qrels) read and every trace row (or
    ranking) judged by a ``scorer_class``; a merge takes the verdicts from the shards' partials.
    ``runs``: the TREC rankings read (None otherwise)."""
    ks, refusal, rules = setup.ks, setup.refusal, setup.rules
    chunks, runs = None, None
    chunk_policies: Dict[str, str] = {}
    if args.chunks and not getattr(args, "merge", None):
        chunks = read_chunks(args.chunks, errors, notes, chunk_policies)
    if getattr(args, "merge", None):          # shards' partials (merge_partials)
        gold, scorer, stats = merge_partials(args.merge, args, ks, refusal, errors, notes, rules)
        scorer.needs = set(NEEDS) if gold.unlabelled else setup.needs     # the shards computed everything
    elif setup.trec:
        gold = read_qrels(args.qrels, errors)
        runs = read_run(args.run, errors) if not errors.count else {}
        if errors.count:
            raise ScoreError(errors.text())
        scorer = scorer_class(gold, ks, refusal, chunks)
        stats = score_run(runs, scorer)
    else:
        if args.format == "ragas" or (args.format == "json" and ragas_layout(args.trace)):
            if args.format != "ragas":
                _note(args, "%s: rows have RAGAS-style fields and no qid: read as --format ragas (ids row-<line>, "
                            "contexts ctx-1..ctx-N, reference as gold_answers)" % args.trace)
            _RAGAS_PATHS.add(args.trace)
        with gc_paused():      # reading and judging make no reference cycles
            if args.gold:
                gold = read_gold(args.gold, args.by, errors, notes)
            elif args.trace in _RAGAS_PATHS:
                gold = read_gold(args.trace, args.by, errors, notes)
            else:
                gold = gold_from_trace(args.trace, args.by)
            if errors.count:
                raise ScoreError(errors.text())
            scorer = scorer_class(gold, ks, refusal, chunks, rules, chunk_policies)
            scorer.needs = set(NEEDS) if gold.unlabelled else setup.needs
            scorer.progress = not args.quiet
            scorer.answer_substr = any(g.ref.metric.name in ANSWER_METRICS for g in setup.gates)   # issue 28
            stats = score_trace(args.trace, scorer, errors, notes)
        if errors.count:
            raise ScoreError(errors.text())
    return gold, scorer, stats, runs


def _category_metrics(gold, scorer: Scorer, trec: bool, memo: dict) -> Dict[str, dict]:
    """Each category's items and metrics, categories sorted by name (``memo``: aggregate's)."""
    order = sorted(range(len(gold)), key=gold.cat.__getitem__)     # items by category, file order within one
    categories: Dict[str, dict] = {}
    start = 0
    for cid, size in sorted(Counter(gold.cat).items()):
        idx = order[start:start + size]
        categories[gold.categories[cid]] = {"items": len(idx), "metrics": aggregate(scorer, idx, trec, memo)}
        start += size
    return {c: categories[c] for c in sorted(categories)}


def _failure_modes(by_flags: Counter, trec: bool) -> Dict[str, int]:
    """Items per failure mode, the most frequent first (MODE_ORDER breaks ties)."""
    modes: Counter = Counter()
    for f, cnt in by_flags.items():
        mode = failure_mode(f, trec)
        if mode is not None:
            modes[mode] += cnt
    return {m: modes[m] for m in sorted(modes, key=lambda m: (-modes[m], MODE_ORDER.index(m)))}


def _item_flags(qids: List[str], flags) -> Dict[str, str]:
    """Each item's verdict flags as the report's string (one flag_string per distinct value)."""
    fstr_cache: Dict[int, str] = {}
    item_flags = {}
    for qid, f in zip(qids, flags):
        s = fstr_cache.get(f)
        if s is None:
            s = fstr_cache[f] = flag_string(f)
        item_flags[qid] = s
    return item_flags


def _run_warnings(warnings: List[str], stats: dict, metrics: Dict[str, dict], trec: bool):
    """``(warnings, skipped)``: ``warnings`` with what the rows and the metrics add (unknown,
    duplicate and missing rows; metrics skipped or null); ``skipped``: the metrics that
    reference-free mode skipped."""
    if stats["unknown"]:
        warnings.append("%d trace rows name qids not in the gold set and were not scored (e.g. %s)"
                        % (stats["unknown"], ", ".join(stats["unknown_ex"])))
    if stats["duplicates"]:
        warnings.append("%d duplicate trace rows: the last row per qid was scored (e.g. %s)"
                        % (stats["duplicates"], ", ".join(stats["duplicate_ex"])))
    if stats["missing"]:
        warnings.append("%d gold items have no trace row; each counts as %s" % (
            stats["missing"], "an empty ranking" if trec else "a shipped answer with an empty claim"))
    skipped = sorted(name for name, e in metrics.items() if e["reason"] == _SKIPPED)
    if skipped:
        warnings.append("reference-free mode: %d metrics need gold labels and were skipped (%s)"
                        % (len(skipped), ", ".join(skipped)))
    for name, e in metrics.items():
        if e["reason"] and not trec and e["reason"] != _SKIPPED and name not in EXTRA_METRICS \
                and name not in ANSWER_METRICS:
            warnings.append("%s: %s" % (name, e["reason"]))
    return warnings, skipped


def _seed_fields(m0: Dict[str, dict], by_flags: Counter, n: int, k0: int) -> dict:
    """The report's top-level fields of seed 002 (answers only)."""
    shipped_n = sum(c for f, c in by_flags.items() if f & F_SHIP)
    return {
        "answered": shipped_n,                       # |S|
        "refused": n - shipped_n,                    # |R|
        "answerable": m0["over_refusal"]["n"],       # |A|
        "unanswerable": m0["under_refusal"]["n"],    # |U|
        "precision": _r(m0["precision"]["value"]),
        "chr": _r(m0["chr"]["value"]),
        "under_refusal": _r(m0["under_refusal"]["value"]),
        "over_refusal": _r(m0["over_refusal"]["value"]),
        "recall@k": _r(m0["recall@%d" % k0]["value"]),
    }


def _report_counts(n: int, stats: dict, by_flags: Counter) -> dict:
    """The report's "counts": gold items, trace rows and how they matched."""
    return {"gold_items": n, "trace_rows": stats["rows"],
            "matched_items": n - stats["missing"], "missing_traces": stats["missing"],
            "unknown_trace_rows": stats["unknown"],
            "duplicate_trace_rows": stats["duplicates"],
            "items_with_gold_citations": sum(c for f, c in by_flags.items() if f & F_GOLD),
            "items_without_gold_citations": sum(c for f, c in by_flags.items() if not f & F_GOLD)}


def _print_problems(report: dict) -> None:
    """The warnings and the failed block and warn gates, one stderr line each."""
    for w in report["warnings"]:
        sys.stderr.write("score_eval: warning: %s\n" % terminal_safe(w))
    for g in report["gate_results"]:
        if not g["pass"] and g["tier"] != "monitor":
            sys.stderr.write(terminal_safe("score_eval: %sgate failed: %s: %s%s\n" % (
                "warn " if g["tier"] == "warn" else "", g["gate"], g["reason"],
                (" " + g["message"]) if g.get("message") else "")))


def _write_run_outputs(args, report: dict, item_flags: Dict[str, str], scorer: Scorer, setup: RunSetup,
                       trec_result) -> None:
    """Problems on stderr; the files asked for (--out, --items, --markdown, then --html, --junit,
    --csv, --metrics-csv; --manifest removed first and written last); on stdout the report, its
    summary or trec_eval's lines (``trec_result``: (per topic, all)), unless a file is stdout."""
    trec = setup.trec
    # (trec_eval's text format on stdout and no --out: the JSON report is never shown, not rendered)
    text = render_json(report, item_flags) if args.out or args.format != "trec" else ""
    _print_problems(report)
    if args.manifest:
        remove_output(args.manifest)
    if args.out:
        atomic_write(args.out, text)
    stages = ItemStages(scorer, report["scorecard"], setup.weights) if "scorecard" in report else None
    if args.items:
        atomic_write(args.items, "".join(_item_lines(scorer, trec, stages)))
    if args.markdown:
        atomic_write(args.markdown, render_markdown(report, _worst(scorer, trec)))
    if args.format == "trec":
        text = render_trec(trec_result[0], trec_result[1], args.per_query)
    write_reports(args, report, scorer, trec, stages)
    outputs = (args.out, args.items, args.markdown, args.html, args.junit, args.csv, args.metrics_csv)
    if args.manifest:
        write_manifest(args.manifest, [p for p in outputs if p and p != "-"])
    if "-" not in outputs:
        compact = args.format != "trec" and not args.full and (args.summary or bool(args.out))
        sys.stdout.write(render_summary(report, outputs) if compact else text)
        sys.stdout.flush()


def run(args, scorer_class: type = Scorer) -> int:
    """One scoring run (or a merge of shards' partials, ``args.merge``): set up, read and judge,
    aggregate, gate, report.  ``scorer_class`` judges the rows: a shard run (--partial) passes
    shards._RecordingScorer, which also records the items its rows name."""
    _GATES_DOCS.clear()                   # a gates file is read once per run, never across runs
    if args.print_metric_table:
        sys.stdout.write(metric_table_markdown())
        return 0
    # 1. gates, the refusal token, cutoffs and what to compute
    setup = configure(args)
    trec, k0 = setup.trec, setup.ks[0]
    # 2. read and judge
    errors = _Errors(max(1, args.max_errors))
    notes: List[str] = []
    gold, scorer, stats, runs = _read_and_judge(args, setup, errors, notes, scorer_class)
    if getattr(args, "partial", None):        # a shard run writes its verdicts, no report
        return write_partial(args, gold, scorer, stats, notes)
    check_matched(args, gold, stats, trec)
    baseline = load_baseline(args.baseline) if args.baseline else None
    # 3. aggregate
    n = len(gold)
    memo: dict = {}         # what the aggregate calls over the gold set and its categories share
    metrics = aggregate(scorer, range(n), trec, memo)
    trec_per = trec_all = None
    if trec:
        if getattr(args, "merge", None):      # trec_eval's measures read the rankings again
            runs = merged_runs(args.merge, errors)
        trec_per, trec_all = trec_evaluate(gold, runs, setup.trec_names, args.average, args.rel_level or 1,
                                           args.max_docs)
        metrics.update(trec_metric_entries(trec_per, trec_all))
    categories = _category_metrics(gold, scorer, trec, memo)
    by_flags = Counter(scorer.flags)      # verdicts depend on flags only: count each distinct value once
    failure_modes = _failure_modes(by_flags, trec)
    gate_results = check_gates(setup.gates, metrics, k0, setup.rules.grounding)
    item_flags = _item_flags(gold.qids, scorer.flags)
    regression_block = None
    if baseline is not None:
        cur = {q: f for q, f in zip(gold.qids, scorer.flags)}
        regression_block, reg_gates = compare(baseline, args.baseline, metrics, categories, cur, setup.regression, k0)
        gate_results += reg_gates
        if trec:        # paired tests per trec_eval measure, topic by topic (ranx / trec_eval users' tests)
            regression_block["significance"] = trec_significance(trec_per_topic(trec_per),
                                                                 baseline.get("trec_per_topic"))
    # 4. warnings
    warnings, skipped = _run_warnings(list(notes) + setup.weight_warnings, stats, metrics, trec)
    gate_results = order_by_tier(gate_results)
    all_pass = blocking_pass(gate_results)
    # 5. report
    report: dict = {} if trec else _seed_fields(metrics, by_flags, n, k0)
    report.update({"k": k0, "gates": setup.shown, "pass": all_pass, "schema": SCHEMA, "version": __version__,
                   "dataset": args.dataset,
                   "inputs": {"gold": args.gold, "trace": args.trace, "qrels": args.qrels, "run": args.run,
                              "chunks": args.chunks, "gates": setup.source, "refusal": setup.refusal,
                              "k": setup.ks, "by": args.by},
                   "counts": _report_counts(n, stats, by_flags),
                   "metrics": {k: _rounded(v) for k, v in metrics.items()},
                   "gate_results": gate_results,
                   "categories": {c: {"items": b["items"], "metrics": {k: _rounded(v) for k, v in b["metrics"].items()}}
                                  for c, b in categories.items()},
                   "failure_modes": failure_modes,
                   "regression": regression_block,
                   "warnings": warnings})
    report["warnings_failed"] = sum(1 for g in gate_results if g["tier"] == "warn" and not g["pass"])
    if setup.card or gold.unlabelled:      # (reference-free mode: what there is to measure, all of it)
        report["scorecard"] = scorecard(setup.weights, {**not_computed(scorer), **metrics}, SCORECARD_K if not trec
                                        else k0, scorecard_gaps(scorer), setup.rules.grounding)
    if trec:
        report["trec_per_topic"] = trec_per_topic(trec_per)
    else:
        report["reference_free"] = gold.unlabelled
        report["skipped_metrics"] = {name: _SKIPPED for name in skipped}
    # 6. outputs
    _write_run_outputs(args, report, item_flags, scorer, setup, (trec_per, trec_all))
    return EXIT_PASS if all_pass else EXIT_GATE


def render_summary(report: dict, outputs: Tuple[Optional[str], ...] = ()) -> str:
    """The compact stdout (--summary; the default when --out holds the full report): the
    verdict, each gate's value and verdict, the overall score with its k, counts, and the
    files written.  A few dozen lines whatever the number of items."""
    names = ("out", "items", "markdown", "html", "junit", "csv", "metrics_csv")
    card = report.get("scorecard")
    short = {"pass": report["pass"], "dataset": report.get("dataset"), "schema": report.get("schema"),
             "version": report.get("version"),
             "counts": {k: report["counts"][k] for k in ("gold_items", "trace_rows", "missing_traces")
                        if k in (report.get("counts") or {})},
             "gates": [{"gate": g["gate"], "tier": g["tier"], "value": g["value"], "pass": g["pass"]}
                       for g in report.get("gate_results") or []],
             "failed": ["%s%s: %s" % ("(warn) " if g["tier"] == "warn" else "", g["gate"], g["reason"])
                        for g in report.get("gate_results") or [] if not g["pass"] and g["tier"] != "monitor"],
             "overall": (card or {}).get("overall"), "overall_k": (card or {}).get("k"),
             "files": {n: p for n, p in zip(names, outputs) if p}}
    if card is None:        # the run did not ask for the scorecard (see _asked)
        del short["overall"], short["overall_k"]
    lines = ["{"]
    keys = list(short)
    for i, k in enumerate(keys):
        v = short[k]
        if k == "gates":
            body = ",\n".join("    " + json.dumps(g, ensure_ascii=False) for g in v)
            lines.append('  "gates": [%s]%s' % ("\n" + body + "\n  " if v else "", "," if i < len(keys) - 1 else ""))
        else:
            lines.append("  %s: %s%s" % (json.dumps(k), json.dumps(v, ensure_ascii=False),
                                        "," if i < len(keys) - 1 else ""))
    return "\n".join(lines) + "\n}\n"
