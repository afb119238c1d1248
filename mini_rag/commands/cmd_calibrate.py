"""``calibrate``: choose the answer/refuse operating point on a labelled sample of one's own questions (issue 43).

``python -m mini_rag calibrate --gold G [--corpus C] [--config BASE] [--gates F] [--out CONFIG] [--force]``

1. reads the sample ``G`` (gold JSONL; every row with ``answerable`` true or false; 20 to 100
   questions is the intended size, at most 1000); a bad row is exit 2 naming ``G:line``;
2. answers it at every candidate operating point of the configured decision (phase C's
   coverage thresholds, or the answerability model's threshold when ``[answer] answerability``
   is on; :mod:`mini_rag.eval.calibrate`) and scores each with ``score_eval.py`` under the
   gates ``eval`` would use (``--gates FILE``; for a gold set of one's own the packaged user
   gates, seed 002's four);
3. chooses the point of highest pass rate among those passing every blocking gate (else of
   highest pass rate; ties: the committed point, then the nearest to it);
4. writes ``CONFIG`` (default ``calibrated.toml``): the base config's settings (``--config``;
   its comments are not kept), ``[corpus] path`` when ``--corpus`` is given, the chosen values
   in ``[answer]`` and a ``[calibration]`` table with the sample's size, sha256, the chosen
   values and the expected figures with their Wilson 95% intervals, next to the committed
   defaults' figures on the same sample (:mod:`mini_rag.calibration`).  ``eval --config CONFIG``
   then says that it uses this calibrated point.

The candidate table goes to stderr, the chosen point as one JSON line to stdout.  ``CONFIG`` is
written atomically; it is never an input (the sample, the base config, the gates, the index),
and an existing file that ``calibrate`` did not write is replaced only with ``--force``.  The
traces and reports of every candidate are kept under ``--work DIR`` (default
``runs/<corpus name>/calibrate``).  Exit 0 written, 2 bad input.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any, Dict, List

from ..errors import MiniRagError
from ..fileio import atomic_write_text, terminal_safe

__all__ = ["register", "cmd_calibrate", "HEADER"]

#: The first line of every config ``calibrate`` writes (what it may replace without --force).
HEADER = "mini_rag calibration: written by `python -m mini_rag calibrate`"
DEFAULT_OUT = "calibrated.toml"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "calibrate", help="choose the answer/refuse operating point on a labelled sample of your questions",
        description="Answer a labelled sample of your own questions at every candidate operating point, score "
                    "each under your gates, and write the best point into a config (with the expected figures).")
    p.add_argument("--gold", required=True, metavar="FILE",
                   help="the labelled sample: gold JSONL, every row with qid, question, answerable (true/false) and, "
                        "for answerable rows, gold_claim_substr and gold_citations (20 to 100 questions)")
    p.add_argument("--config", metavar="FILE", help="base config (its settings are kept in the output)")
    p.add_argument("--corpus", metavar="DIR|FILE", help="corpus folder or BEIR .jsonl (default: [corpus] path)")
    p.add_argument("--index", dest="index_path", metavar="FILE", help="index file (as for eval)")
    p.add_argument("--gates", metavar="FILE",
                   help="gates file (default: as eval chooses: gates.toml for the repository's gold set, else the "
                        "packaged user gates); 'none' maximises pass rate alone")
    p.add_argument("--dataset", default="baseline", metavar="NAME",
                   help="the gates file's section to apply (default: baseline)")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="CONFIG",
                   help="config file to write (default: %s)" % DEFAULT_OUT)
    p.add_argument("--work", metavar="DIR", help="folder for the candidates' traces and reports "
                                                 "(default: runs/<corpus name>/calibrate)")
    p.add_argument("--force", action="store_true", help="replace an existing --out file calibrate did not write")
    p.add_argument("--quiet", action="store_true", help="no table and no notes on stderr (errors still)")
    p.set_defaults(func=cmd_calibrate)


def _gates_for(args, config) -> str:
    from ..config import DEFAULTS
    from ..eval.evaluate import DATASETS, NONE
    from .cmd_init import USER_GATES
    from .runconfig import same_path
    if args.gates:
        if args.gates != NONE and not os.path.isfile(args.gates):
            raise MiniRagError("%s: cannot read gates file: no such file" % args.gates)
        return args.gates
    own = not same_path(config["corpus"]["path"], DEFAULTS["corpus"]["path"]) or not same_path(args.gold, DATASETS[0][1])
    return USER_GATES if own or not os.path.isfile("gates.toml") else "gates.toml"


def _check_out(args, config) -> None:
    from ..fileio import check_outputs
    check_outputs([("--out", args.out, "config")],
                  [("--gold", args.gold), ("--config", args.config), ("--gates", args.gates),
                   ("[index] path", config["index"]["path"])])
    if os.path.isfile(args.out) and os.path.getsize(args.out) and not args.force:
        with open(args.out, "rb") as fh:
            head = fh.read(len(HEADER) + 2)
        if head != ("# " + HEADER).encode("utf-8"):
            raise MiniRagError("--out %s: exists and was not written by calibrate; refusing to replace it: choose "
                               "another path, or --force to replace it" % args.out)


def _table_text(mode: str, table: List[Dict[str, Any]], chosen: int) -> str:
    from ..eval.calibrate import FIGURES
    lines = ["calibrate: %d candidate points (%s), figures on the sample:" % (len(table), mode),
             "  %-44s %s gates" % ("point", " ".join("%-13s" % f for f in FIGURES))]
    for i, row in enumerate(table):
        cells = []
        for f in FIGURES:
            m = row["metrics"].get(f) or {}
            cells.append("%-13s" % ("n/a" if m.get("value") is None else "%.3f" % m["value"]))
        lines.append("%s %-44s %s %s" % ("*" if i == chosen else " ", ", ".join(
            "%s %g" % kv for kv in sorted(row["point"].items())), " ".join(cells), "pass" if row["passes"] else "fail"))
    return "\n".join(terminal_safe(line) for line in lines) + "\n"


def cmd_calibrate(args) -> int:
    from .. import calibration
    from ..config import DEFAULTS, merge, read_toml
    from ..eval import calibrate as cal
    from ..pipeline import Pipeline
    from .cmd_answer import own_runs_dir
    from ..pipeline import open_pipeline
    from .runconfig import resolve
    sample = cal.read_sample(args.gold)           # bad rows are reported before the index is opened
    config = resolve(args.config, args.corpus, args.index_path, quiet=args.quiet)
    config["calibration"] = {}
    gates = _gates_for(args, config)
    _check_out(args, config)
    base = open_pipeline(config, quiet=args.quiet)
    mode = cal.mode_of(config)
    default = cal.default_point(mode)
    points = cal.candidate_points(mode, default)
    pipes: Dict[str, Any] = {}

    def pipeline_for(values):
        key = json.dumps(values, sort_keys=True)
        if key not in pipes:
            pipes[key] = Pipeline(merge(config, {"answer": values}, "calibrate"), retriever=base.retriever)
        return pipes[key]
    refusal = config["answer"]["refusal"]
    if not args.quiet:
        print("mini_rag: calibrate: %d questions, %d candidate points (%s); gates %s" % (
            len(sample), len(points), mode, gates), file=sys.stderr)
    rows = cal.sample_rows(pipeline_for, sample, mode, points, refusal)
    work = args.work or os.path.join(own_runs_dir(config["corpus"]["path"]), "calibrate")
    os.makedirs(work, exist_ok=True)
    table = [dict(cal.score_point(args.gold, r, work, "p%02d" % i, gates, args.dataset, refusal), point=p)
             for i, (p, r) in enumerate(zip(points, rows))]
    chosen = cal.choose(table, default)
    row = table[chosen]
    at_default = next(r for r in table if r["point"] == default)
    record = {"mode": mode, "gold": args.gold, "gold_sha256": _sha256(args.gold),
              "corpus": config["corpus"]["path"], "sample": len(sample),
              "answerable": sum(1 for _, g in sample if g["answerable"]),
              "unanswerable": sum(1 for _, g in sample if not g["answerable"]),
              "gates": gates, "dataset": args.dataset, "objective": cal.OBJECTIVE, "candidates": len(points),
              "passes_gates": bool(row["passes"]), "point": dict(row["point"]),
              "expected": cal.figures(row["metrics"]), "defaults": cal.figures(at_default["metrics"])}
    raw = read_toml(args.config) if args.config else {}
    if args.corpus:
        raw.setdefault("corpus", {})["path"] = config["corpus"]["path"]
    text = calibration.config_toml(raw, dict(row["point"]), record, header=_header(args, record))
    merge(DEFAULTS, _reread(text, args.out), args.out)       # the file written reads back as a valid config
    atomic_write_text(args.out, text)
    if not args.quiet:
        sys.stderr.write(_table_text(mode, table, chosen))
        written = merge(DEFAULTS, _reread(text, args.out), args.out)
        print(terminal_safe("mini_rag: wrote %s: %s" % (args.out, calibration.describe(calibration.operating_point(
            written, DEFAULTS, mode if mode != "rules" else None)))), file=sys.stderr)
    print(json.dumps({"out": args.out, "mode": mode, "point": row["point"], "passes_gates": row["passes"],
                      "expected": record["expected"], "defaults": record["defaults"]}, sort_keys=True))
    return 0


def _reread(text: str, path: str) -> Dict[str, Any]:
    try:
        import tomllib
        return tomllib.loads(text)
    except ImportError:
        from ..fileio import scorer
        return scorer().parse_toml(text, path)


def _header(args, record) -> str:
    """The comment lines at the top of the written config (paths escaped: one line each)."""
    return "\n".join(terminal_safe(line) for line in [
        HEADER,
        "from %d labelled questions of %s (sha256 %s...); %d candidate points of mode %s" % (
            record["sample"], args.gold, record["gold_sha256"][:12], record["candidates"], record["mode"]),
        "objective: %s" % record["objective"],
        "[answer] holds the chosen values; [calibration] where they came from and the figures they had on the",
        "sample (Wilson 95% intervals): expect the same on questions like these, within those intervals.",
        "Use it with: python -m mini_rag eval --config %s ...   Re-run calibrate after changing the corpus." % args.out])


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
