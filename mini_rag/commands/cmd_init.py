"""``init``: write the gates file for a gold set of one's own (issue 31 item 3, issue 42 item 3).

``python -m mini_rag init [DIR] [--force]`` copies the packaged ``mini_rag/data/user_gates.toml``
(seed 002's four gates, with comments) to ``DIR/gates.toml`` (DIR is made when its parent exists).  Without DIR: the current folder,
except in the repository's own folder (the checkout holding this package, whose ``gates.toml``
is ``make eval``'s), where it is ``my-gates/`` (made when missing), said on stderr.  An existing
file is never overwritten without ``--force``, and the repository's own ``gates.toml`` never,
``--force`` or not: the message names a folder to give instead.  The file is written
atomically and never through a symlink, FIFO or device.  Exit 0 written, 2 refused.
"""
from __future__ import annotations

import os
import sys

from ..errors import MiniRagError
from ..fileio import atomic_write_text

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_GATES = os.path.join(PACKAGE, "data", "user_gates.toml")
#: The checkout holding this package: its gates.toml is the repository's (make eval's).
REPOSITORY = os.path.dirname(PACKAGE)
#: Where ``init`` without a folder writes in the repository's folder.
OWN_FOLDER = "my-gates"


def user_gates_text() -> str:
    try:
        with open(USER_GATES, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise MiniRagError("%s: cannot read the packaged gates file: %s" % (USER_GATES, exc.strerror)) from None


def register(subparsers) -> None:
    p = subparsers.add_parser("init", help="write gates.toml for a gold set of your own (seed 002's four gates)",
                              description="Write DIR/gates.toml: the four gates every gold set can measure "
                                          "(precision, chr, under_refusal, over_refusal), with comments.")
    p.add_argument("dir", nargs="?", default=None,
                   help="folder to write gates.toml into (default: the current folder; in the repository's "
                        "own folder, %s/, so its gates.toml is never touched)" % OWN_FOLDER)
    p.add_argument("--force", action="store_true",
                   help="overwrite an existing gates.toml of your own (never the repository's)")
    p.set_defaults(func=cmd_init)


def repository_gates() -> str:
    """The repository's own gates file (``make eval``'s), whether or not it exists."""
    return os.path.join(REPOSITORY, "gates.toml")


def _same(a: str, b: str) -> bool:
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def cmd_init(args) -> int:
    folder = args.dir
    if folder is None:
        folder = "."
        if _same(".", REPOSITORY) and os.path.lexists(repository_gates()):
            folder = OWN_FOLDER
            print("mini_rag: in the repository's folder: writing into %s/ (its gates.toml is make eval's; "
                  "'init DIR' to choose another folder)" % OWN_FOLDER, file=sys.stderr)
    if not os.path.lexists(folder) and os.path.isdir(os.path.dirname(os.path.abspath(folder))):
        os.mkdir(folder)                        # one new folder (my-gates/), never a path of them
    if not os.path.isdir(folder):
        raise MiniRagError("%s: no such folder" % folder)
    out = os.path.join(folder, "gates.toml")
    if os.path.lexists(out) and _same(out, repository_gates()):
        raise MiniRagError("%s: is the repository's own gates file (make eval's), never replaced; give another "
                           "folder: python3 -m mini_rag init %s" % (out, OWN_FOLDER))
    if os.path.lexists(out) and not args.force:
        raise MiniRagError("%s: already exists (--force to overwrite your copy, or give another folder: "
                           "python3 -m mini_rag init DIR)" % out)
    atomic_write_text(out, user_gates_text())
    print("mini_rag: wrote %s (seed 002's four gates; edit the numbers for your release bar)" % out, file=sys.stderr)
    return 0
