"""The command line: ``main`` (exit 0 pass, 1 a gate failed, 2 bad input, 3 internal error; it never
raises), subcommands and the internal-error handler."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import traceback

from .base import EXIT_INPUT, EXIT_INTERNAL, MAX_ERRORS, ScoreError
from .outputs import has_surrogate, terminal_safe
from .calibration import SUBCOMMANDS
from .shards import _PARTIAL_ARGS, _RecordingScorer, _read_partial
from .run import build_parser, run

# --------------------------------------------------------------------------- shards: --partial and merge
#
# A shard run (``--partial OUT.json``) judges its slice of the trace rows and writes, instead
# of a report, the verdicts it made: for every gold item it saw, the item's slots of every
# per-item container of the Scorer (arrays, per-cutoff arrays, sparse maps), found
# generically so a metric added to the Scorer merges with no code here; the order in which
# its rows named items (to count duplicates across shards exactly); its row counts and
# notes.  ``merge P1 ... Pn`` reads the gold set again (its sha256 must match), takes each
# item's verdict from the last shard that saw it (last row wins, as in one run when the
# shards are consecutive pieces of the trace), judges the items no shard saw as missing,
# and then aggregates, gates, compares and prints through the very code of a single run:
# the output is byte-identical to one run over all the rows.  TREC runs shard by topic.


def merge_main(argv: List[str]) -> int:
    """``score_eval.py merge P1.json P2.json ... [options]``: one report from shard partials."""
    ap = argparse.ArgumentParser(
        prog="score_eval.py merge",
        description="Combine the --partial outputs of shard runs (in trace order) into the report one "
                    "run over all their rows prints, gates and --baseline comparison included.")
    ap.add_argument("partials", nargs="+", help="partial JSON files written by --partial, in trace order")
    ap.add_argument("--trace", help="trace name shown in the report's inputs (default: the shards' names, "
                                    "comma-separated)")
    for flag in ("--gates", "--gates-file", "--baseline", "--out", "--markdown", "--items"):
        ap.add_argument(flag, help="as for a single run")
    ap.add_argument("--force", action="store_true", help="as for a single run")
    ap.add_argument("--dataset", help="as for a single run (default: the shards')")
    ap.add_argument("--max-errors", type=int, default=MAX_ERRORS, help="as for a single run")
    ap.add_argument("--summary", action="store_true", help="as for a single run")
    ap.add_argument("--full", action="store_true", help="as for a single run")
    try:
        margs = ap.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        first = _read_partial(margs.partials[0])
        args = build_parser().parse_args([])
        for a in _PARTIAL_ARGS:
            setattr(args, a, first["args"].get(a))
        trec = bool(args.qrels)
        names = margs.trace or ",".join(_read_partial(p)["args"].get("run" if trec else "trace") or ""
                                        for p in margs.partials)
        if trec:
            args.run = names
        else:
            args.trace = names
        for a in ("gates", "gates_file", "baseline", "out", "markdown", "items", "max_errors", "summary", "full", "force"):
            setattr(args, a, getattr(margs, a))
        if margs.dataset is not None:
            args.dataset = margs.dataset
        args.merge = margs.partials
        return run(args)
    except ScoreError as exc:
        sys.stderr.write("%s\n" % exc)
        return 2
    except BrokenPipeError:
        return 1


def partial_main(args) -> int:
    """A shard run: ``run`` with a Scorer that records the rows' items (see --partial).  The
    class is passed to ``run``, never swapped in a module's globals: the package and the one
    file behave the same."""
    return run(args, scorer_class=_RecordingScorer)


def main(argv: Optional[List[str]] = None) -> int:
    """The command line; returns the exit status (0 pass, 1 a gate failed, 2 usage or input
    error, 3 internal error) and never raises."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        _interrupts_raise()
        return _main(argv)
    except KeyboardInterrupt:
        sys.stderr.write("score_eval: interrupted\n")
        return 130
    except Exception:   # a bug, never a verdict: exit 3, the traceback saved or (--debug) shown
        return internal_error("score_eval", "--debug" in argv)


def _interrupts_raise() -> None:
    """From here on Ctrl-C raises KeyboardInterrupt (main turns it into exit 130); before,
    the handler set at the top of the file exits 130 while the module loads."""
    import signal
    if threading_main() and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def threading_main() -> bool:
    import threading
    return threading.current_thread() is threading.main_thread()


def _main(argv: List[str]) -> int:
    bad = [a for a in argv if has_surrogate(a)]
    if bad:
        sys.stderr.write("score_eval: usage: argument is not valid UTF-8, got %s\n" % ascii(bad[0]))
        return EXIT_INPUT
    if argv and argv[0] in SUBCOMMANDS:
        try:
            return SUBCOMMANDS[argv[0]](argv[1:])
        except ScoreError as exc:
            sys.stderr.write(terminal_safe("%s\n" % exc))
            return EXIT_INPUT
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["merge"]:
        return merge_main(argv[1:])
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:   # argparse already printed usage / help
        return exc.code if isinstance(exc.code, int) else EXIT_INPUT
    try:
        return partial_main(args) if args.partial else run(args)
    except ScoreError as exc:
        sys.stderr.write(terminal_safe("%s\n" % exc))
        return EXIT_INPUT
    except BrokenPipeError:   # e.g. `| head`: the report was not delivered
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        sys.stderr.write("score_eval: stdout closed before the report was written\n")
        return EXIT_INPUT


def internal_error(prog: str, debug: bool) -> int:
    """Report the exception being handled as an internal error: one stderr line naming it
    and where its traceback was saved (a file in the system temp folder), or the traceback
    itself when ``debug``.  Returns EXIT_INTERNAL."""
    etype, exc, tb = sys.exc_info()
    where = ""
    frames = traceback.extract_tb(tb) if tb is not None else []
    if frames:
        where = " at %s:%d" % (os.path.basename(frames[-1].filename), frames[-1].lineno)
    name = etype.__name__ if etype is not None else "error"
    text = "".join(traceback.format_exception(etype, exc, tb))
    if debug:
        sys.stderr.write(text)
        sys.stderr.write("%s: internal error (exit 3): %s%s\n" % (prog, name, where))
        return EXIT_INTERNAL
    try:
        fd, saved = tempfile.mkstemp(prefix="%s-crash-" % prog, suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)
        note = "traceback in %s" % saved
    except OSError:
        note = "traceback could not be saved; rerun with --debug"
    sys.stderr.write("%s: internal error (exit 3, a bug, not a verdict): %s%s; %s\n" % (prog, name, where, note))
    return EXIT_INTERNAL
