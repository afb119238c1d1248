"""Find every regular expression in score_eval.py and mini_rag, and time each on hostile text.

Used by tests/test_regex_time.py and runnable by hand to see the slowest patterns::

    python3 tests/regex_audit.py [--size 100000] [--top 20]

Patterns are found two ways, so a new one cannot hide:

1. every compiled ``re.Pattern`` reachable from a module's globals (also inside tuples,
   lists, dicts and class attributes);
2. every ``re.compile/search/match/fullmatch/findall/finditer/sub/subn/split`` call whose
   pattern is a string literal, found in the source with ``ast`` (patterns built inside
   functions).

Hostile inputs are built from each pattern's own characters (``sre_parse``): each literal
and a sample of each class repeated to the full size, the same followed by a character
that makes the match fail at the end, every literal run of the pattern repeated, the
pattern's characters in order repeated, and pairs of its first characters alternating.
These are the shapes that make a backtracking matcher quadratic (``\\s+$`` on many spaces
then a letter, ``(a|ab)*c`` on ``abab...``).
"""
from __future__ import annotations

import argparse
import ast
import functools
import importlib
import os
import pkgutil
import re
import sys
import time
import warnings
from typing import Dict, Iterator, List, Tuple

try:  # Python 3.11+
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - 3.9 / 3.10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import sre_parse  # type: ignore[no-redef]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALLS = ("compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split")
_CATEGORY_SAMPLES = {"DIGIT": "0", "NOT_DIGIT": "a", "SPACE": " \n", "NOT_SPACE": "a", "WORD": "a_é",
                     "NOT_WORD": "!", "LINEBREAK": "\n", "NOT_LINEBREAK": "a"}


def modules():
    """score_eval and every mini_rag module, imported."""
    sys.path.insert(0, ROOT) if ROOT not in sys.path else None
    out = [importlib.import_module("score_eval")]
    import mini_rag
    for info in pkgutil.walk_packages(mini_rag.__path__, "mini_rag."):   # subpackages too (embed)
        if info.name.endswith(".__main__"):
            continue
        out.append(importlib.import_module(info.name))
    return out


def _patterns_in(value, depth: int = 0) -> Iterator[re.Pattern]:
    if isinstance(value, re.Pattern):
        yield value
    elif depth < 3 and isinstance(value, (tuple, list, frozenset, set)):
        for v in value:
            yield from _patterns_in(v, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for v in value.values():
            yield from _patterns_in(v, depth + 1)
    elif depth < 1 and isinstance(value, type):
        for v in vars(value).values():
            yield from _patterns_in(v, depth + 1)


ANCHORED = frozenset(("match", "fullmatch"))


@functools.lru_cache(maxsize=1)
def find_patterns() -> Dict[Tuple[str, int], Tuple[str, bool]]:
    """``{(pattern, flags): (where, anchored)}`` for every pattern found either way.

    ``anchored``: the code only ever calls it with ``match``/``fullmatch`` (one start
    position); every other pattern is timed as ``finditer``, which tries every start."""
    found: Dict[Tuple[str, int], Tuple[str, bool]] = {}
    for mod in modules():
        name = mod.__name__
        path = mod.__file__
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
        tree = ast.parse(source)
        calls: Dict[str, set] = {}          # name -> the methods called on it (``name.method(``)
        for obj, method in re.findall(r"\b(\w+)\.(\w+)\(", source):
            calls.setdefault(obj, set()).add(method)
        for attr, value in sorted(vars(mod).items()):
            if attr.startswith("__"):
                continue
            used = calls.get(attr, set())
            anchored = bool(used) and used <= ANCHORED and isinstance(value, re.Pattern)
            for p in _patterns_in(value):
                if isinstance(p.pattern, str):
                    found.setdefault((p.pattern, p.flags & ~re.UNICODE), ("%s.%s" % (name, attr), anchored))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                    and node.func.attr in CALLS and node.args):
                continue
            arg = node.args[0]
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                continue
            flags = 0
            flag_arg = None
            if node.func.attr in ("compile",) and len(node.args) > 1:
                flag_arg = node.args[1]
            for kw in node.keywords:
                if kw.arg == "flags":
                    flag_arg = kw.value
            flags = _flags(flag_arg)
            compiled = re.compile(arg.value, flags)
            found.setdefault((compiled.pattern, compiled.flags & ~re.UNICODE),
                             ("%s:%d" % (os.path.relpath(path, ROOT), node.lineno), node.func.attr in ANCHORED))
    return found


def _flags(node) -> int:
    if node is None:
        return 0
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "re":
        return int(getattr(re, node.attr))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _flags(node.left) | _flags(node.right)
    return 0


def _walk(items, chars: List[str], runs: List[str]) -> None:
    run = ""
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            run += chr(av)
            chars.append(chr(av))
            continue
        if len(run) >= 2:
            runs.append(run)
        run = ""
        if name == "NOT_LITERAL":
            chars.append("a" if av != ord("a") else "b")
        elif name == "IN":
            for o, a in av:
                o = str(o)
                if o == "LITERAL":
                    chars.append(chr(a))
                elif o == "RANGE":
                    chars.extend((chr(a[0]), chr(a[1])))
                elif o == "CATEGORY":
                    chars.extend(_CATEGORY_SAMPLES.get(str(a).replace("CATEGORY_", "").replace("UNI_", ""), "a"))
                elif o == "NEGATE":
                    chars.extend("a!")
        elif name == "ANY":
            chars.extend("a ")
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            _walk(av[2], chars, runs)
        elif name == "SUBPATTERN":
            _walk(av[-1], chars, runs)
        elif name == "ATOMIC_GROUP":
            _walk(av, chars, runs)
        elif name == "BRANCH":
            for sub in av[1]:
                _walk(sub, chars, runs)
        elif name in ("ASSERT", "ASSERT_NOT"):
            _walk(av[1], chars, runs)
        elif name == "GROUPREF_EXISTS":
            for sub in av[1:]:
                if sub is not None:
                    _walk(sub, chars, runs)
    if len(run) >= 2:
        runs.append(run)


def shapes(pattern: str, flags: int) -> List[Tuple[str, str]]:
    """``(unit, tail)`` pairs: an input is ``unit`` repeated, then ``tail`` (see the docstring)."""
    chars: List[str] = []
    runs: List[str] = []
    _walk(sdiff_parse(pattern, flags), chars, runs)
    uniq = list(dict.fromkeys(chars))[:12]
    out = []
    for c in uniq:
        out.append((c, ""))
        out.append((c, "\x00" if c != "\x00" else "a"))
    for r in list(dict.fromkeys(runs))[:6]:
        out.append((r, ""))
    if uniq:
        out.append(("".join(uniq), ""))
    for i, a in enumerate(uniq[:5]):
        for b in uniq[i + 1:5]:
            out.append((a + b, ""))
            out.append((a + b + b, ""))
    return list(dict.fromkeys(out))


def make_input(shape: Tuple[str, str], size: int) -> str:
    unit, tail = shape
    body = size - len(tail)
    return (unit * (body // len(unit) + 1))[:body] + tail


def hostile_inputs(pattern: str, flags: int, size: int) -> List[str]:
    """Inputs of ``size`` characters built from the pattern's own characters."""
    return [make_input(s, size) for s in shapes(pattern, flags)]


def sdiff_parse(pattern: str, flags: int):
    return sre_parse.parse(pattern, flags)


def _time_one(rx: re.Pattern, text: str, anchored: bool) -> float:
    """CPU seconds (other processes on a busy machine do not count) for one ``match``
    (``anchored``) or one full ``finditer`` over ``text``."""
    t0 = time.process_time()
    if anchored:
        rx.match(text)
    else:
        for _ in rx.finditer(text):
            pass
    return time.process_time() - t0


def worst_time(pattern: str, flags: int, size: int, budget: float, anchored: bool = False) -> Tuple[float, str]:
    """The slowest run over every hostile input (stops early past ``budget``)."""
    rx = re.compile(pattern, flags)
    worst, worst_input = 0.0, ""
    for text in hostile_inputs(pattern, flags, size):
        dt = _time_one(rx, text, anchored)
        if dt > worst:
            worst, worst_input = dt, text[:12]
        if worst > budget:
            break
    return worst, worst_input


def screened_time(pattern: str, flags: int, anchored: bool, size: int = 100_000,
                  probe: int = 1_000, keep: int = 2) -> Tuple[float, str]:
    """Time every hostile input at ``probe`` characters, then only the ``keep`` slowest
    shapes at ``size``: the full check at a fraction of the cost (a quadratic shape is
    already the slowest at 1,000 characters).  Returns (worst seconds, input start)."""
    rx = re.compile(pattern, flags)
    found = shapes(pattern, flags)
    order = sorted(found, key=lambda sh: -_time_one(rx, make_input(sh, probe), anchored))[:keep]
    worst, sample = 0.0, ""
    for shape in order:
        text = make_input(shape, size)
        t = _time_one(rx, text, anchored)
        if t > worst:
            worst, sample = t, text[:12]
    return worst, sample


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000, help="input length (default 100000)")
    ap.add_argument("--top", type=int, default=20, help="slowest patterns shown (default 20)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each pattern as it is timed")
    args = ap.parse_args(argv)
    rows = []
    for (pattern, flags), (where, anchored) in sorted(find_patterns().items(), key=lambda kv: kv[1]):
        if args.verbose:
            print("... %s %r" % (where, pattern[:70]), file=sys.stderr, flush=True)
        t, sample = worst_time(pattern, flags, args.size, 5.0, anchored)
        rows.append((t, where + (" (match)" if anchored else ""), pattern, sample))
    rows.sort(reverse=True)
    print("%d patterns" % len(rows))
    for t, where, pattern, sample in rows[:args.top]:
        print("%8.3f s  %-45s %r  on %r..." % (t, where, pattern[:60], sample))
    return 0


if __name__ == "__main__":
    sys.exit(main())
