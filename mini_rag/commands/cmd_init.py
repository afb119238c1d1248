"""``init``: write the gates file for a gold set of one's own (issue 31 item 3).

``python -m mini_rag init [DIR] [--force]`` copies the packaged ``mini_rag/data/user_gates.toml``
(seed 002's four gates, with comments) to ``DIR/gates.toml`` (DIR defaults to the current
folder).  An existing file is never overwritten without ``--force``; the file is written
atomically and never through a symlink, FIFO or device.  Exit 0 written, 2 refused.
"""
from __future__ import annotations

import os
import sys

from ..errors import MiniRagError
from ..fileio import atomic_write_text

USER_GATES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "user_gates.toml")


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
    p.add_argument("dir", nargs="?", default=".", help="folder to write gates.toml into (default: .)")
    p.add_argument("--force", action="store_true", help="overwrite an existing gates.toml")
    p.set_defaults(func=cmd_init)


def cmd_init(args) -> int:
    if not os.path.isdir(args.dir):
        raise MiniRagError("%s: no such folder" % args.dir)
    out = os.path.join(args.dir, "gates.toml")
    if os.path.lexists(out) and not args.force:
        raise MiniRagError("%s: already exists (--force to overwrite)" % out)
    atomic_write_text(out, user_gates_text())
    print("mini_rag: wrote %s (seed 002's four gates; edit the numbers for your release bar)" % out, file=sys.stderr)
    return 0
