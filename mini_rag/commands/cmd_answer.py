"""Commands ``ask``, ``run``, ``eval`` and ``compare`` (the answering stage's command line).

``python -m mini_rag ask "question" [--json] [--debug] [--timings] [--config FILE]``
    prints the QA contract's text form on stdout::

        ANSWER:
        1. <sentence> (<doc>, p<page>, <chunk_id>)
        CONFIDENCE: High|Medium|Low

    (each sentence as plain text; ``p<page>`` only for a document with pages, a form feed)

    or, for any other decision, the refusal token alone on the first line (``[answer]
    refusal``, exactly) and the human message (why, naming conflicting sources, or the
    clarifying question) on the second.  ``--json`` prints the trace row instead (one
    compact JSON line).  ``--debug`` prints the contract's ``FACTS:`` lines (phase A)
    and the phase B survivors, decision and reasons to **stderr**, so stdout stays the
    contract's text and can be compared or piped.
``python -m mini_rag run --gold FILE --out FILE [--config FILE] [--timings]``
    one trace row per gold item, in gold order, written atomically; progress on stderr
    only when it is a terminal.  ``--timings`` adds ``timings_ms`` to every row; without
    it two runs are byte-identical.
``python -m mini_rag eval [--config FILE] [--runs DIR] [--gold F] [--perturb F|none] [--gates F|none]``
    ``make eval``: see :mod:`mini_rag.eval.evaluate`.  Prints a compact JSON summary on stdout
    (``evaluate.summary``: verdict, each dataset's metrics with n and intervals, failed
    gates, the paths of the full reports under ``runs/``) and a short human summary on
    stderr; both say which answer/refuse operating point was used (``operating_point``: the committed
    defaults, values set in the config, or a calibration written by ``calibrate``, issue 43).
    ``ask``, ``run`` and ``eval`` take ``--corpus``, ``--index`` and ``--quiet``
    (:mod:`mini_rag.commands.runconfig`: a corpus of one's own gets corpus-neutral defaults).
``python -m mini_rag compare --candidate FILE [--baseline-config FILE]``
    ``make compare``: both configurations on both gold sets, the candidate gated against
    the baseline by the scorer's regression gates; prints the deltas.

Exit status: ``ask``/``run`` 0 on success, 1 when the generator failed on an item (that
item is BLOCKed with reason ``generator_error:<kind>``; ``run`` still writes every row and
prints the count); ``eval``/``compare`` 0 when every gate passes, 1 when one fails; 2 for
bad input (missing or malformed gold, config, corpus).
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict

from ..config import DEFAULT_CONFIG_PATH, load_config
from ..errors import MiniRagError
from ..fileio import (MAX_QUESTION_CHARS, check_outputs, check_question, json_terminal_safe, read_limited,
                      terminal_safe)

__all__ = ["register", "resolve_config"]


def resolve_config(path) -> Dict[str, Any]:
    """``--config FILE``, else configs/default.toml when present, else the defaults."""
    if path is None and os.path.exists(DEFAULT_CONFIG_PATH):
        path = DEFAULT_CONFIG_PATH
    return load_config(path)


def _config_flag(p) -> None:
    p.add_argument("--config", metavar="FILE",
                   help="TOML config overriding the defaults (default: %s when present and the corpus "
                        "is the committed one)" % DEFAULT_CONFIG_PATH)


def _corpus_flags(p) -> None:
    """--corpus, --index and --quiet (ask, run, eval); see mini_rag.commands.runconfig."""
    p.add_argument("--corpus", metavar="DIR|FILE",
                   help="corpus folder of .md/.rst/.txt files or BEIR .jsonl file (default: [corpus] path); "
                        "a corpus of one's own gets corpus-neutral defaults (as_of = its newest date)")
    p.add_argument("--index", dest="index_path", metavar="FILE",
                   help="index file (default: [index] path, or runs/index-<hash>.json.gz for a corpus of one's own)")
    p.add_argument("--quiet", action="store_true", help="no progress and no notes on stderr (errors still)")


def _resolve(args) -> Dict[str, Any]:
    from .runconfig import resolve
    return resolve(args.config, args.corpus, args.index_path, quiet=args.quiet)


def register(subparsers) -> None:
    a = subparsers.add_parser("ask", help="answer one question (the contract's text form)",
                              description="Answer one question: retrieve, phases A/B/C, guards, decision.")
    a.add_argument("question", nargs="?",
                   help="the question to answer (at most %d characters); - reads it from stdin"
                        % MAX_QUESTION_CHARS)
    a.add_argument("--question-file", metavar="FILE",
                   help="read the question from FILE (UTF-8; - is stdin) instead of the argument")
    a.add_argument("--json", action="store_true", help="print the trace row (one JSON line) instead of text")
    a.add_argument("--debug", action="store_true",
                   help="print the FACTS: lines, phase B survivors and the decision's reasons to stderr")
    a.add_argument("--timings", action="store_true",
                   help="add timings_ms to the trace row (breaks byte-identical output)")
    a.add_argument("--scope", metavar="DOC", help="answer from one document only (its doc_id)")
    _config_flag(a)
    _corpus_flags(a)
    a.set_defaults(func=cmd_ask)

    r = subparsers.add_parser("run", help="answer every question of a gold file into a trace",
                              description="Write one trace row per gold item (gold order) for score_eval.py.")
    r.add_argument("--gold", required=True, metavar="FILE", help="gold JSONL (each row needs qid and question)")
    r.add_argument("--out", required=True, metavar="FILE", help="trace JSONL to write (atomically)")
    r.add_argument("--timings", action="store_true",
                   help="add timings_ms to every row (breaks byte-identical traces)")
    r.add_argument("--force", action="store_true",
                   help="replace an existing --out file that is not a trace (never an input)")
    r.add_argument("--scope", metavar="DOC",
                   help="answer every question from this document only (default: each gold row's doc_scope)")
    _config_flag(r)
    _corpus_flags(r)
    r.set_defaults(func=cmd_run)

    e = subparsers.add_parser("eval", help="make eval: both gold sets, scored against gates.toml",
                              description="Build/load the index, run and score both gold sets, "
                                          "print the combined report; exit 1 when a gate fails.")
    _config_flag(e)
    e.add_argument("--out-dir", "--runs", dest="runs", metavar="DIR",
                   help="output folder (default: runs; with --corpus of one's own, runs/<corpus name>-<hash>/, "
                        "so the repository's reports and another corpus's are never overwritten; with "
                        "--dataset seed, runs/seed/)")
    e.add_argument("--gold", metavar="FILE", help="baseline gold set (default: gold/gold.jsonl)")
    e.add_argument("--perturb", metavar="FILE",
                   help="perturbation gold set (default: gold/gold_perturb.jsonl; with a --gold of one's own, "
                        "one generated from it by perturb); 'none' skips it")
    e.add_argument("--gates", metavar="FILE",
                   help="gates file (default: gates.toml for the repository's gold sets; for a --gold of one's "
                        "own the packaged user gates, seed 002's four, the same as score_eval.py's fallback; "
                        "said on stderr); 'none' scores without gates")
    e.add_argument("--dataset", choices=("gold", "seed"), default="gold",
                   help="gold: the gold sets (default; a missing one is exit 2); seed: only the seed's "
                        "worked example in examples/seed/ (its committed trace, dataset [seed] of the gates)")
    _corpus_flags(e)
    e.set_defaults(func=cmd_eval)

    c = subparsers.add_parser("compare", help="make compare: gate a candidate config against the committed one",
                              description="Run the committed config and a candidate on both gold sets; "
                                          "the candidate must pass the scorer's regression gates.")
    c.add_argument("--candidate", required=True, metavar="FILE", help="candidate TOML config")
    c.add_argument("--baseline-config", metavar="FILE",
                   help="baseline TOML config (default: %s when present, else the defaults)" % DEFAULT_CONFIG_PATH)
    c.add_argument("--out-dir", default=os.path.join("runs", "compare"), metavar="DIR",
                   help="output folder (default: runs/compare)")
    c.add_argument("--gold", metavar="FILE", help="baseline gold set (default: gold/gold.jsonl)")
    c.add_argument("--perturb", metavar="FILE", help="perturbation gold set (default: gold/gold_perturb.jsonl)")
    c.add_argument("--gates", default="gates.toml", metavar="FILE", help="gates file (default: gates.toml)")
    c.set_defaults(func=cmd_compare)


def cmd_ask(args) -> int:
    from ..answer.facts import format_facts
    from ..trace import format_text, paged_documents
    question = read_question(args.question, args.question_file)
    from ..pipeline import open_pipeline
    config = _resolve(args)
    pipeline = open_pipeline(config, quiet=args.quiet)
    result = pipeline.answer(question, timings=args.timings, doc_scope=args.scope)
    if result.generator_error:
        print("mini_rag: %s" % result.row["validation"]["errors"][-1], file=sys.stderr)
    if args.debug:
        err = sys.stderr
        print(terminal_safe(format_facts(result.facts_a)), file=err)
        print("PHASE B: %s" % (", ".join(f.chunk_id for f in result.facts_b) or "(none)"), file=err)
        if result.answer.refused:
            print("PHASE C: refused (%s)" % ", ".join(result.answer.reasons), file=err)
        for w in result.citation_check.warnings + result.validator_errors:
            print(terminal_safe("WARNING: %s" % w), file=err)
        print("DECISION: %s %s" % (result.decision.decision, json.dumps(result.decision.reasons)), file=err)
    if args.json:
        print(json_terminal_safe(json.dumps(result.row, ensure_ascii=False, separators=(",", ":"))))
    else:
        row = result.row
        sentences = result.answer.sentences if row["decision"] == "ANSWER" else []
        paged = paged_documents(pipeline.index, [s.chunk_id for s in sentences]) if pipeline.index else None
        print(terminal_safe(format_text(row["decision"], sentences, row["confidence"],
                                        config["answer"]["refusal"], row["message"], paged=paged,
                                        markup=pipeline.markup_docs)))
    return 1 if result.generator_error else 0


def read_question(argument, path) -> str:
    """The question of ``ask``: the argument, or ``--question-file`` (``-`` is stdin) read
    within the length limit; exactly one of them."""
    if (argument is None) == (path is None):
        raise MiniRagError("usage: give the question as an argument or with --question-file, not %s"
                           % ("both" if path is not None else "neither"))
    if argument == "-":
        path = "-"
    if path is not None:
        # 4 bytes per character at most; anything longer is over the limit anyway
        try:
            data = read_limited(path, "question file", 4 * MAX_QUESTION_CHARS + 16)
        except MiniRagError as exc:
            if "larger than" not in str(exc):
                raise
            raise MiniRagError("%s: the question is longer than %d characters" % (path, MAX_QUESTION_CHARS)) from None
        try:
            argument = data.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise MiniRagError("%s: question file is not UTF-8 text" % path) from None
    return check_question(argument, "question" if path is None else "%s: the question" % path)


def cmd_run(args) -> int:
    from ..eval.evaluate import read_gold, run_gold
    from ..pipeline import open_pipeline
    read_gold(args.gold)                          # bad gold is reported before the index is opened
    config = _resolve(args)
    check_outputs([("--out", args.out, "trace"), ("--index", config["index"]["path"], "index")],
                  [("--gold", args.gold), ("--config", args.config)], args.force)
    counted = _FailureCount(open_pipeline(config, quiet=args.quiet))
    n = run_gold(counted, args.gold, args.out, timings=args.timings, quiet=args.quiet, doc_scope=args.scope)
    if not args.quiet:
        from ..search.retrieve import dated_as_of
        print("mini_rag: wrote %d trace rows to %s (as_of %s)" % (n, args.out, dated_as_of(config["guards"]["as_of"])
                                                                  or "none: no document has a date"),
              file=sys.stderr)
    if counted.failed:
        print("mini_rag: %d of %d items BLOCKed by generator_error (first: %s)"
              % (counted.failed, n, counted.first), file=sys.stderr)
        return 1
    return 0


class _FailureCount:
    """A pipeline that counts the items whose generator failed (``run`` exits 1 then)."""

    def __init__(self, pipeline) -> None:
        self.pipeline = pipeline
        self.failed = 0
        self.first = ""

    def answer(self, question: str, qid: str = "", timings: bool = False, doc_scope=None):
        result = self.pipeline.answer(question, qid=qid, timings=timings, doc_scope=doc_scope)
        if result.generator_error:
            self.failed += 1
            self.first = self.first or "%s: %s" % (qid, result.row["validation"]["errors"][-1])
        return result


def cmd_eval(args) -> int:
    from ..config import DEFAULTS
    from ..eval.evaluate import DATASETS, evaluate, summary, summary_json, summary_text
    from .runconfig import resolve, same_path
    config = resolve(args.config, args.corpus, args.index_path, quiet=args.quiet)
    if args.corpus and not args.gold and not same_path(config["corpus"]["path"], DEFAULTS["corpus"]["path"]):
        raise MiniRagError("eval --corpus %s needs --gold FILE: %s is about the committed corpus"
                           % (args.corpus, DATASETS[0][1]))
    own_corpus = not same_path(config["corpus"]["path"], DEFAULTS["corpus"]["path"])
    own_gold = bool(args.gold) and not same_path(args.gold, DATASETS[0][1])
    if args.runs is None:
        args.runs = default_runs(config["corpus"]["path"] if own_corpus else None,
                                 args.gold if own_gold else None, args.dataset == "seed")
        if args.runs != "runs" and not args.quiet:
            print("mini_rag: writing to %s (--out-dir DIR to choose another)" % args.runs, file=sys.stderr)
    gates = args.gates
    if gates is None and (own_corpus or own_gold):
        from .cmd_init import USER_GATES
        gates = USER_GATES
        if not args.quiet:
            print("mini_rag: a gold set of your own: using the packaged gates %s (seed 002's four: precision, chr, "
                  "under_refusal, over_refusal; 'python3 -m mini_rag init' writes a copy to edit; --gates FILE to choose "
                  "another, e.g. --gates gates.toml for the repository's)" % gates, file=sys.stderr)
    if gates is None:
        gates = "gates.toml"
        if not args.quiet and os.path.isfile(gates):
            print("mini_rag: using the gates file %s (--gates FILE to choose another, --gates none for no gates)"
                  % gates, file=sys.stderr)
    if args.dataset == "seed" and (args.gold or args.perturb or args.corpus):
        raise MiniRagError("usage: eval --dataset seed scores examples/seed/ only: no --gold, --perturb or --corpus")
    status, combined = evaluate(config, runs=args.runs, gold=args.gold, perturb=args.perturb,
                                gates=gates, quiet=args.quiet, seed=args.dataset == "seed")
    short = summary(combined, args.runs)
    if args.dataset != "seed":
        short["operating_point"] = operating_point_of(config)
    if not args.quiet:
        sys.stderr.write(summary_text(short))
    sys.stdout.write(json_terminal_safe(summary_json(short)) + "\n")
    return status


def default_runs(own_corpus, own_gold, seed: bool) -> str:
    """``eval``'s output folder without ``--out-dir``: ``runs/`` for ``make eval`` only; a
    corpus of one's own gets ``own_runs_dir(corpus)``, a gold set of one's own on the
    committed corpus ``own_runs_dir(gold)``, the seed example ``runs/seed/``: no other run
    replaces ``make eval``'s reports (issue 42 item 5)."""
    if seed:
        return os.path.join("runs", "seed")
    if own_corpus or own_gold:
        return own_runs_dir(own_corpus or own_gold)
    return "runs"


def operating_point_of(config: Dict[str, Any]) -> Dict[str, Any]:
    """Which answer/refuse operating point ``eval`` ran at (issue 43): the committed defaults, values
    set in the config, or a calibration (``mini_rag.calibration.operating_point``), with its one-line
    description (``text``)."""
    from ..calibration import describe, operating_point
    from ..config import DEFAULTS
    decider = None
    if config["answer"].get("answerability", False):
        from ..answer.answerability import deciding_model
        decider = deciding_model(config)
    op = operating_point(config, DEFAULTS, decider)
    op["text"] = describe(op)
    return op


def own_runs_dir(corpus: str) -> str:
    """``runs/<corpus name>-<8 hex>/``: the folder name of the corpus (a file's name without
    its extension, white space made ``-``) and the first 8 hex digits of the sha256 of its
    absolute path (``runconfig.corpus_digest``, the index file's too), so two corpora in
    folders of the same name never share one (issue 42 item 5)."""
    from .runconfig import corpus_digest
    name = os.path.basename(os.path.normpath(os.path.abspath(corpus)))
    if os.path.isfile(corpus):
        name = os.path.splitext(name)[0]
    name = "-".join(name.split()) or "corpus"
    return os.path.join("runs", "%s-%s" % (name, corpus_digest(corpus)[:8]))


def cmd_compare(args) -> int:
    from ..eval.evaluate import compare
    base = resolve_config(args.baseline_config)
    cand = load_config(args.candidate)
    return compare(base, cand, out_dir=args.out_dir, gold=args.gold, perturb=args.perturb, gates=args.gates)
