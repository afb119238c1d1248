#!/usr/bin/env python3
"""Write the metric table, generated from the scorer's registry, into README.md and docs/design.md.

Usage: python3 tools/metric_tables.py [--check]   (``make metric-tables``)

The table (``referee.names.metric_table_markdown``: one row per measure of
``referee.registry.REGISTRY``, the same as ``score_eval.py --print-metric-table``) replaces what
lies between ``<!-- metrics:begin -->`` and ``<!-- metrics:end -->`` in each file.  Edit a
measure in referee/registry.py, then run this.  ``--check`` writes nothing and exits 1 when a
file's table differs from the registry's (tests/test_score_eval.py checks it too).
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = ("README.md", os.path.join("docs", "design.md"))
BEGIN, END = "<!-- metrics:begin -->", "<!-- metrics:end -->"


def with_table(text: str, table: str, name: str) -> str:
    """``text`` with the part between the markers replaced by ``table``."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise SystemExit("metric_tables: %s must hold %s once, then %s once" % (name, BEGIN, END))
    head, rest = text.split(BEGIN, 1)
    return head + BEGIN + "\n" + table + END + rest.split(END, 1)[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 when a table is out of date")
    args = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    from referee.names import metric_table_markdown
    table = metric_table_markdown()
    stale = []
    for name in FILES:
        path = os.path.join(ROOT, name)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        new = with_table(text, table, name)
        if new == text:
            continue
        stale.append(name)
        if not args.check:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(new)
    if stale:
        print("metric_tables: %s %s" % ("out of date:" if args.check else "rewrote", ", ".join(stale)))
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
