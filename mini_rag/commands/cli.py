"""Command line: ``python -m mini_rag <command> ...``.

Each command lives with the stage it drives; this module only gathers them:

* ``cmd_retrieval``: ``index``, ``search``
* ``cmd_answer``: ``ask``, ``run``, ``eval``, ``compare``
* ``cmd_gold``: ``check-gold``, ``perturb``
* ``cmd_init``: ``init``
* ``cmd_calibrate``: ``calibrate`` (the answer/refuse operating point on a labelled sample)
* ``serve``: ``serve`` (the HTTP API)

A command module exposes ``register(subparsers)`` which adds its parsers with
``set_defaults(func=handler)``; a handler takes the parsed arguments and returns the exit
status.  Bad input raises :class:`~mini_rag.errors.MiniRagError`, which becomes a message
on stderr and exit status 2, never a traceback; any other exception is an internal error, exit 3 (see
:func:`main`), so a crash never reads as a gate verdict.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import List, Optional

from ..errors import MiniRagError
from ..fileio import scorer, terminal_safe

COMMAND_MODULES = ("cmd_retrieval", "cmd_answer", "cmd_gold", "cmd_init", "cmd_calibrate", "serve")
# Commands that open a retriever, hence may need the embedding model ([retrieval] mode).
EMBED_COMMANDS = ("index", "search", "ask", "run", "eval", "compare", "calibrate", "serve")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mini_rag",
        description="A pure-Python retrieval-augmented QA system that writes traces for score_eval.py.")
    from .. import __version__
    parser.add_argument("--version", action="version", version="mini_rag " + __version__,
                        help="print the version and exit")
    parser.add_argument("--debug", dest="debug_traceback", action="store_true",
                        help="on an internal error (exit 3), print the traceback instead of saving it to a file")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module("." + name, __package__).register(sub)
    for name in EMBED_COMMANDS:
        if name in sub.choices:
            sub.choices[name].add_argument(
                "--embed-model", metavar="PATH",
                help="embedding model folder or .whl for [retrieval] mode dense/hybrid "
                     "(default: $MINI_RAG_EMBED_MODEL, else [embed] model)")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Exit status: 0 success (every gate passed), 1 a gate failed, 2 usage or input error,
    3 internal error (a bug: one stderr line naming the exception and the file holding its
    traceback; ``--debug`` prints the traceback), 130 interrupted."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("mini_rag: interrupted", file=sys.stderr)
        return 130
    except Exception:   # never exit 1 (a gate verdict) on a crash
        return scorer().internal_error("mini_rag", "--debug" in argv)


def _main(argv: List[str]) -> int:
    if any(scorer().has_surrogate(a) for a in argv):
        print("mini_rag: usage: an argument is not valid UTF-8, got %s"
              % ascii([a for a in argv if scorer().has_surrogate(a)][0]), file=sys.stderr)
        return 2
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:          # --help, --version (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    from ..embed.hybrid import cli_model
    try:
        with cli_model(getattr(args, "embed_model", None)):
            return int(args.func(args) or 0)
    except MiniRagError as exc:
        print(terminal_safe("mini_rag: %s" % exc), file=sys.stderr)
        return 2
    except BrokenPipeError:   # stdout closed early (`| head`): say so, never a verdict
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        print("mini_rag: stdout closed before the output was written", file=sys.stderr)
        return 2
