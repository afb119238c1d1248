"""Command line: ``python -m mini_rag <command> ...``.

Each command lives with the stage it drives; this module only gathers them:

* ``cmd_retrieval``: ``index``, ``search``
* ``cmd_answer``: ``ask``, ``run``, ``eval``, ``compare``
* ``cmd_gold``: ``check-gold``, ``perturb``

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

COMMAND_MODULES = ("cmd_retrieval", "cmd_answer", "cmd_gold")
# Commands that open a retriever, hence may need the embedding model ([retrieval] mode).
EMBED_COMMANDS = ("index", "search", "ask", "run", "eval", "compare")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mini_rag",
        description="A pure-Python retrieval-augmented QA system that writes traces for score_eval.py.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module("mini_rag." + name).register(sub)
    for name in EMBED_COMMANDS:
        if name in sub.choices:
            sub.choices[name].add_argument(
                "--embed-model", metavar="PATH",
                help="embedding model folder or .whl for [retrieval] mode dense/hybrid "
                     "(default: $MINI_RAG_EMBED_MODEL, else [embed] model)")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    from .embed.hybrid import cli_model
    try:
        with cli_model(getattr(args, "embed_model", None)):
            return int(args.func(args) or 0)
    except MiniRagError as exc:
        print("mini_rag: %s" % exc, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mini_rag: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
