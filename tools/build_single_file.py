#!/usr/bin/env python3
"""Build score_eval.py, the one file users copy, from the scorer's package ``referee/``.

Usage: python3 tools/build_single_file.py [--check] [--out PATH]   (``make single-file``)

The file is the package's modules, in the order data flows through them (``MODULES``), each
module's lines as they are, under a banner naming the module; a table of contents with the line
each module starts at comes first.  What the build takes out of a module:

* its docstring (kept, as comment lines under the banner) and ``from __future__ import annotations``
  (once, at the top);
* its standard-library imports at top level (merged into one block at the top of the file);
* its imports of other modules of the package (``from .x import a, b``): in one file every
  name is already defined above the line that uses it, because a module imports only modules
  listed before it (tests/test_single_file.py checks that, and that nothing is defined twice).

The top of the file is the package's docstring (``referee/__init__.py``) and the early
interrupt handler of ``referee/__main__.py``; the bottom is its ``if __name__ == "__main__"``.
Nothing is code inside strings: the result is plain Python a reviewer can read.

``--check`` builds in memory and exits 1 when the committed file differs (0 when identical).
"""
import argparse
import ast
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "referee")
# The stages, in the order data flows; a module may import only modules listed before it.
MODULES = (
    "base", "lexicon", "registry", "fmt", "stats", "retrieval", "tomlsub", "inputs",
    "text", "citations", "refusals", "answers", "grounding",
    "treccalc", "trec", "names", "aggregate", "config", "contracts", "response", "judge",
    "gates", "scorecard", "outputs", "reports", "calibration", "shards", "run", "cli",
)
BANNER = "# " + "=" * 75 + " referee/%s.py"
EARLY_BEGIN = "# -- early interrupt handler (copied to the top of score_eval.py) --"
EARLY_END = "# -- end of the early interrupt handler --"


class BuildError(Exception):
    pass


def _read(name: str) -> str:
    with open(os.path.join(PACKAGE, name), encoding="utf-8") as fh:
        return fh.read()


def _raw_docstring(text: str, tree):
    """The module's docstring as written (escapes kept), without its quotes; None if none."""
    if ast.get_docstring(tree, clean=False) is None:
        return None
    raw = ast.get_source_segment(text, tree.body[0].value)
    for quote in ('"""', "'''"):
        if raw.startswith(quote):
            return raw[3:-3]
    raise BuildError("a docstring must be triple-quoted: %s" % raw[:40])


def _module_parts(name: str):
    """(docstring, stdlib import nodes, body lines) of referee/<name>.py."""
    text = _read(name + ".py")
    lines = text.split("\n")
    tree = ast.parse(text, name + ".py")
    drop = set()
    doc = _raw_docstring(text, tree)
    imports = []
    for node in tree.body:
        first_stmt = node is tree.body[0]
        span = range(node.lineno, node.end_lineno + 1)
        if first_stmt and doc is not None:
            drop.update(span)
        elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
            drop.update(span)
        elif isinstance(node, ast.ImportFrom) and node.level:
            drop.update(span)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
            drop.update(span)
    body = [line for i, line in enumerate(lines, 1) if i not in drop]
    while body and not body[0].strip():
        body.pop(0)
    while body and not body[-1].strip():
        body.pop()
    return doc or "", imports, body


def _merged_imports(nodes) -> list:
    plain, froms = set(), {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                plain.add(a.name + (" as " + a.asname if a.asname else ""))
        else:
            names = froms.setdefault(node.module, set())
            for a in node.names:
                names.add(a.name + (" as " + a.asname if a.asname else ""))
    out = ["import %s" % p for p in sorted(plain)]
    for mod in sorted(froms):
        out.append("from %s import %s" % (mod, ", ".join(sorted(froms[mod]))))
    return out


def _early_handler() -> list:
    lines = _read("__main__.py").split("\n")
    try:
        a, b = lines.index(EARLY_BEGIN), lines.index(EARLY_END)
    except ValueError:
        raise BuildError("referee/__main__.py: the early interrupt handler's markers are missing") from None
    return lines[a + 1:b]


def build() -> str:
    init_text = _read("__init__.py")
    doc = _raw_docstring(init_text, ast.parse(init_text))
    if doc is None:
        raise BuildError("referee/__init__.py: no docstring (it is the file's docstring)")
    parts = [(m,) + _module_parts(m) for m in MODULES]
    imports = _merged_imports([n for p in parts for n in p[2]])
    head = ["#!/usr/bin/env python3", '"""%s"""' % doc, "from __future__ import annotations", ""]
    head += _early_handler() + [""] + imports + [""]
    sections = []
    for name, mdoc, _, body in parts:
        block = [BANNER % name]
        block += [("# " + line).rstrip() for line in mdoc.strip().split("\n")]
        block += [""] + body
        sections.append(block)
    tail = ["", "", 'if __name__ == "__main__":', "    sys.exit(main())"]
    toc = ["# Contents: generated from referee/ by tools/build_single_file.py (make single-file); edit",
           "# the modules there, never this file.  Each module starts at the line given:",
           "#"] + [None] * len(MODULES) + [""]
    out = head + toc
    for block in sections:
        out += ["", ""] + block
    first = len(head) + 3
    for k, name in enumerate(MODULES):
        out[first + k] = "# %6d  referee/%s.py" % (out.index(BANNER % name) + 1, name)
    return "\n".join(out + tail) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the committed file differs from a build")
    ap.add_argument("--out", default=os.path.join(ROOT, "score_eval.py"))
    args = ap.parse_args(argv)
    try:
        text = build()
    except (BuildError, SyntaxError, OSError) as exc:
        print("build_single_file: %s" % exc, file=sys.stderr)
        return 2
    if args.check:
        try:
            with open(args.out, encoding="utf-8") as fh:
                same = fh.read() == text
        except OSError:
            same = False
        if not same:
            print("build_single_file: %s differs from a build of referee/; run make single-file" % args.out,
                  file=sys.stderr)
        return 0 if same else 1
    tmp = args.out + ".build-tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
