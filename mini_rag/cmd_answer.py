"""Commands ``ask``, ``run``, ``eval`` and ``compare`` (the answering stage's command line).

``python -m mini_rag ask "question" [--json] [--debug] [--timings] [--config FILE]``
    prints the QA contract's text form on stdout::

        ANSWER:
        1. <sentence> (<doc>, p<page>, <chunk_id>)
        CONFIDENCE: High|Medium|Low

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
``python -m mini_rag eval [--config FILE] [--runs DIR] [--gold F] [--perturb F] [--gates F]``
    ``make eval``: see :mod:`mini_rag.evaluate`.  Prints ``runs/report.json``'s content
    (one JSON object) and nothing else on stdout.
``python -m mini_rag compare --candidate FILE [--baseline-config FILE]``
    ``make compare``: both configurations on both gold sets, the candidate gated against
    the baseline by the scorer's regression gates; prints the deltas.

Exit status: ``ask``/``run`` 0 on success; ``eval``/``compare`` 0 when every gate
passes, 1 when one fails; 2 for bad input (missing or malformed gold, config, corpus).
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict

from .config import DEFAULT_CONFIG_PATH, load_config
from .errors import MiniRagError
from .fileio import MAX_QUESTION_CHARS, check_question, json_terminal_safe, read_limited, terminal_safe

__all__ = ["register", "resolve_config"]


def resolve_config(path) -> Dict[str, Any]:
    """``--config FILE``, else configs/default.toml when present, else the defaults."""
    if path is None and os.path.exists(DEFAULT_CONFIG_PATH):
        path = DEFAULT_CONFIG_PATH
    return load_config(path)


def _config_flag(p) -> None:
    p.add_argument("--config", metavar="FILE",
                   help="TOML config overriding the defaults (default: %s when present)" % DEFAULT_CONFIG_PATH)


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
    _config_flag(a)
    a.set_defaults(func=cmd_ask)

    r = subparsers.add_parser("run", help="answer every question of a gold file into a trace",
                              description="Write one trace row per gold item (gold order) for score_eval.py.")
    r.add_argument("--gold", required=True, metavar="FILE", help="gold JSONL (each row needs qid and question)")
    r.add_argument("--out", required=True, metavar="FILE", help="trace JSONL to write (atomically)")
    r.add_argument("--timings", action="store_true",
                   help="add timings_ms to every row (breaks byte-identical traces)")
    _config_flag(r)
    r.set_defaults(func=cmd_run)

    e = subparsers.add_parser("eval", help="make eval: both gold sets, scored against gates.toml",
                              description="Build/load the index, run and score both gold sets, "
                                          "print the combined report; exit 1 when a gate fails.")
    _config_flag(e)
    e.add_argument("--runs", default="runs", metavar="DIR", help="output folder (default: runs)")
    e.add_argument("--gold", metavar="FILE", help="baseline gold set (default: gold/gold.jsonl)")
    e.add_argument("--perturb", metavar="FILE", help="perturbation gold set (default: gold/gold_perturb.jsonl)")
    e.add_argument("--gates", default="gates.toml", metavar="FILE", help="gates file (default: gates.toml)")
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
    from .facts import format_facts
    from .pipeline import Pipeline
    from .trace import format_text
    question = read_question(args.question, args.question_file)
    config = resolve_config(args.config)
    result = Pipeline(config).answer(question, timings=args.timings)
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
        print(terminal_safe(format_text(row["decision"], sentences, row["confidence"],
                                        config["answer"]["refusal"], row["message"])))
    return 0


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
    from .evaluate import read_gold, run_gold
    from .pipeline import Pipeline
    read_gold(args.gold)                          # bad gold is reported before the index is opened
    config = resolve_config(args.config)
    n = run_gold(Pipeline(config), args.gold, args.out, timings=args.timings)
    print("mini_rag: wrote %d trace rows to %s" % (n, args.out), file=sys.stderr)
    return 0


def cmd_eval(args) -> int:
    from .evaluate import evaluate
    config = resolve_config(args.config)
    status, combined = evaluate(config, runs=args.runs, gold=args.gold, perturb=args.perturb,
                                gates=args.gates)
    sys.stdout.write(json_terminal_safe(json.dumps(combined, indent=2, ensure_ascii=False)) + "\n")
    return status


def cmd_compare(args) -> int:
    from .evaluate import compare
    base = resolve_config(args.baseline_config)
    cand = load_config(args.candidate)
    return compare(base, cand, out_dir=args.out_dir, gold=args.gold, perturb=args.perturb, gates=args.gates)
