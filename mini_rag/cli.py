"""Command line: ``python -m mini_rag <command> ...``.

Each command lives with the stage it drives; this module only gathers them:

* ``cmd_retrieval``: ``index``, ``search``
* ``cmd_answer``: ``ask``, ``run``, ``eval``, ``compare``
* ``cmd_gold``: ``check-gold``, ``perturb``
* ``serve``: ``serve`` (the HTTP API)

A command module exposes ``register(subparsers)`` which adds its parsers with
``set_defaults(func=handler)``; a handler takes the parsed arguments and returns the exit
status.  Bad input raises :class:`~mini_rag.errors.MiniRagError`, which becomes a message
on stderr and exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import List, Optional

from .errors import MiniRagError

COMMAND_MODULES = ("cmd_retrieval", "cmd_answer", "cmd_gold", "serve")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mini_rag",
        description="A pure-Python retrieval-augmented QA system that writes traces for score_eval.py.")
    from . import __version__
    parser.add_argument("--version", action="version", version="mini_rag " + __version__,
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module("mini_rag." + name).register(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:          # --help, --version (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except MiniRagError as exc:
        print("mini_rag: %s" % exc, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mini_rag: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
