#!/usr/bin/env python3
"""Build ``mini_rag/data/background_en.txt``, the general-English background (issue 43 item 2).

Source: SCOWL (Spell Checker Oriented Word Lists, Kevin Atkinson), as Debian packages it
(``scowl`` 2020.12.07-2: ``apt-get install scowl``, or ``apt-get download scowl`` and
``--deb scowl_2020.12.07-2_all.deb``).  SCOWL sorts English words into *size* levels by how
common they are: 10 (the 1,000 most common words, per Moby Words II and Brian Kelk's
frequency classes), 20, 35 (a small dictionary), 40, 50 (a standard one), 55, 60, 70 (a
large one), 80 and 95 (rare and obscure words, left out here).  Its licence (the Debian
package's ``copyright`` file) allows use, modification and redistribution with its notice,
which the data file's header carries.

The file holds, for each level from 10 to 70, the terms of the project's default analyzer
(Snowball stop words, Porter2 stemmer: ``mini_rag.text.analysis.Analyzer()``) of the words of
``english-words``, ``american-words`` and ``british-words`` at that level (possessives left
out), each term at the lowest level of any of its words.  One line per level:
``LEVEL term term ...``, terms sorted.  The build is deterministic.

    python3 tools/build_background.py [--dir /usr/share/dict/scowl | --deb FILE.deb] [--check]

``--check`` compares the build with the committed file (exit 1 when they differ).
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import tarfile
from typing import Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from mini_rag.text.analysis import Analyzer  # noqa: E402

OUT = os.path.join(ROOT, "mini_rag", "data", "background_en.txt")
LEVELS = (10, 20, 35, 40, 50, 55, 60, 70)
VARIANTS = ("english", "american", "british")
MEMBER = "./usr/share/dict/scowl/%s-words.%d"
NOTICE = """\
# General-English background for mini_rag's term weights (issue 43 item 2; mini_rag/indexing/background.py).
# Built by tools/build_background.py from SCOWL (Spell Checker Oriented Word Lists) by Kevin Atkinson,
# Debian package scowl 2020.12.07-2 (english-, american- and british-words, levels 10 to 70),
# each word reduced to the terms of mini_rag's default analyzer; a line is "LEVEL term term ...".
# SCOWL's notice (from the package's copyright file):
#   Copyright 2000-2011 by Kevin Atkinson
#   Permission to use, copy, modify, distribute and sell these word
#   lists, the associated scripts, the output created from the scripts,
#   and its documentation for any purpose is hereby granted without fee,
#   provided that the above copyright notice appears in all copies and
#   that both that copyright notice and this permission notice appear in
#   supporting documentation. Kevin Atkinson makes no representations
#   about the suitability of this array for any purpose. It is provided
#   "as is" without express or implied warranty.
# The level 10 list draws on Moby Words II and Brian Kelk's "UK English Wordlist with Frequency
# Classification", both in the public domain (see the same copyright file).
"""


def _deb_members(path: str) -> Dict[str, bytes]:
    """The SCOWL word files of a Debian package (an ``ar`` archive holding ``data.tar.*``)."""
    with open(path, "rb") as fh:
        blob = fh.read()
    if not blob.startswith(b"!<arch>\n"):
        raise SystemExit("%s: not a Debian package" % path)
    pos, data = 8, None
    while pos + 60 <= len(blob):
        name = blob[pos:pos + 16].decode("ascii").strip().rstrip("/")
        size = int(blob[pos + 48:pos + 58].decode("ascii").strip())
        if name.startswith("data.tar"):
            data = blob[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)
    if data is None:
        raise SystemExit("%s: no data.tar member" % path)
    wanted = {MEMBER % (v, lv) for v in VARIANTS for lv in LEVELS}
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for m in tar.getmembers():
            if m.name in wanted:
                out[m.name] = tar.extractfile(m).read()
    return out


def read_words(directory: str = "", deb: str = "") -> Dict[int, List[str]]:
    """{level: words} of the SCOWL word files (a missing variant file is skipped)."""
    members = _deb_members(deb) if deb else {}
    out: Dict[int, List[str]] = {}
    for level in LEVELS:
        words: List[str] = []
        for variant in VARIANTS:
            name = MEMBER % (variant, level)
            if deb:
                raw = members.get(name)
            else:
                path = os.path.join(directory, os.path.basename(name))
                raw = open(path, "rb").read() if os.path.isfile(path) else None
            if raw is not None:
                words.extend(w for w in raw.decode("utf-8").split() if "'" not in w)
        out[level] = words
    return out


def build(words: Dict[int, List[str]]) -> str:
    analyze = Analyzer().analyze
    level_of: Dict[str, int] = {}
    for level in LEVELS:
        for word in words.get(level, ()):
            for term in analyze(word):
                level_of.setdefault(term, level)
    lines = [NOTICE.rstrip("\n")]
    for level in LEVELS:
        lines.append("%d %s" % (level, " ".join(sorted(t for t, lv in level_of.items() if lv == level))))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default="/usr/share/dict/scowl", help="SCOWL's installed word files")
    ap.add_argument("--deb", default="", help="the scowl Debian package file instead of --dir")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--check", action="store_true", help="compare with the committed file")
    args = ap.parse_args(argv)
    words = read_words(args.dir, args.deb)
    if not any(words.values()):
        print("build_background: no SCOWL word files found (apt-get install scowl, or --deb)", file=sys.stderr)
        return 2
    text = build(words)
    if args.check:
        same = os.path.isfile(args.out) and open(args.out, encoding="utf-8").read() == text
        print("build_background: %s" % ("same" if same else "DIFFERS"))
        return 0 if same else 1
    with open(args.out + ".tmp", "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    os.replace(args.out + ".tmp", args.out)
    print("build_background: wrote %s (%d terms)" % (args.out, sum(len(line.split()) - 1 for line in text.splitlines()
                                                                   if not line.startswith("#"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
