#!/usr/bin/env python3
"""Mutation check of score_eval.py's metric code: every one-line bug must fail a test.

Usage: python3 bench/mutate.py [--list] [--only SUBSTRING] [--timeout 120] [--json FILE]

1. Parses score_eval.py and, in each function of TARGETS (the code that turns verdicts into
   the numbers gates read: the measures, their aggregation and the intervals), makes one
   mutant per change:
   - a comparison flipped to its negation (``<`` -> ``>=``, ``==`` -> ``!=``, ``in`` ->
     ``not in``, ``is`` -> ``is not``) and, for an order, moved across its boundary
     (``<`` -> ``<=``, ``>`` -> ``>=`` and back);
   - a numeric constant changed (0 -> 1, 1 -> 0, n -> n + 1; floats likewise), a boolean negated
     (``reverse=True`` -> ``False``);
   - an arithmetic operator swapped (``+`` <-> ``-``, ``*`` <-> ``/``).
   A mutant is the function re-written by ``ast.unparse`` with that one change, spliced into a
   copy of the source (the rest of the file is untouched).
2. Copies the worktree (without .git and runs/) to a temporary folder once, and for each mutant
   writes the mutated score_eval.py there and runs TEST_MODULES with unittest's fail-fast,
   most specific module first.  A mutant is *caught* when a test fails (or errors, or the run
   exceeds --timeout), *survived* when every module passes.
3. Prints one line per survivor (function, line, change) and a summary; exit 1 when a mutant
   survived, 0 when all were caught.

The trec_eval data and seeds are found where the tests find them (MINI_RAG_DATA, MINI_RAG_SEEDS
point the copied tests at ../shared).  Slow (a few seconds per mutant): a bench target
(``make mutate``), not part of ``make test``.
"""
import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "score_eval.py"
# Functions (Class.method for methods) whose comparisons and constants decide a gated number.
TARGETS = (
    "_disc", "relevant_positions", "hits_at", "measure_p", "measure_r", "measure_success", "measure_rr",
    "ideal_gains", "ideal_dcg", "measure_ndcg", "strictly_decreasing", "Scorer._retrieval", "trec_plan", "trec_query", "trec_evaluate",
    "trec_metric_entries", "wilson", "_normal_ci", "aggregate", "nearest_rank", "_Items.count",
    "_Items.unmeasured", "_Items._flags", "_Items._ranks", "_Items._values",
)
# Most specific first: fail-fast stops at the first module with a failing test.
TEST_MODULES = (
    "tests.test_score_eval_measures", "tests.test_score_eval_trec", "tests.test_score_eval",
    "tests.test_score_eval_reference", "tests.test_score_eval_trec_names", "tests.test_score_eval_issue20",
    "tests.test_score_eval_reports", "tests.test_score_eval_regression", "tests.test_score_eval_merge",
    "tests.test_grounding", "tests.test_score_eval_speed",
)

_NEGATE = {ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.Gt: ast.LtE, ast.GtE: ast.Lt, ast.Eq: ast.NotEq,
           ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
_SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
           ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.Add: "+",
           ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def functions(tree: ast.Module):
    """{qualified name: FunctionDef} of the module's functions and methods."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef):
                    out["%s.%s" % (node.name, sub.name)] = sub
    return out


def _changed_constant(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return {0: 1, 1: 0}.get(value, value + 1)
    if isinstance(value, float):
        return {0.0: 1.0, 1.0: 0.0}.get(value, value + 1.0)
    return None


def sites(func: ast.FunctionDef):
    """Every (node index in ast.walk order, description, apply(node)) mutation of ``func``.
    Docstrings are left alone; nested defs and lambdas are included."""
    out = []
    doc = func.body[0] if func.body and isinstance(func.body[0], ast.Expr) else None
    for n, node in enumerate(ast.walk(func)):
        line = getattr(node, "lineno", None)
        if isinstance(node, ast.Compare):
            for j, op in enumerate(node.ops):
                for table, kind in ((_NEGATE, "negate"), (_BOUNDARY, "boundary")):
                    new = table.get(type(op))
                    if new is None:
                        continue
                    desc = "%s: %s -> %s" % (kind, _SYMBOL[type(op)], _SYMBOL[new])

                    def apply(node, j=j, new=new):
                        node.ops[j] = new()
                    out.append((n, line, desc, apply))
        elif isinstance(node, ast.Constant) and node is not getattr(doc, "value", None):
            new = _changed_constant(node.value)
            if new is None:
                continue
            desc = "constant: %r -> %r" % (node.value, new)

            def apply(node, new=new):
                node.value = new
            out.append((n, line, desc, apply))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _ARITH:
            new = _ARITH[type(node.op)]
            desc = "arith: %s -> %s" % (_SYMBOL[type(node.op)], _SYMBOL[new])

            def apply(node, new=new):
                node.op = new()
            out.append((n, line, desc, apply))
    return out


def mutants(text: str, only: str = ""):
    """(name, line, description, mutated source) for every site of every TARGETS function."""
    tree = ast.parse(text)
    funcs = functions(tree)
    lines = text.splitlines(keepends=True)
    for name in TARGETS:
        if name not in funcs or (only and only not in name):
            continue
        func = funcs[name]
        for n, line, desc, apply in sites(func):
            copy = ast.parse(textwrap.dedent("".join(lines[func.lineno - 1:func.end_lineno]))).body[0]
            node = list(ast.walk(copy))[n]
            apply(node)
            body = textwrap.indent(ast.unparse(copy), " " * func.col_offset) + "\n"
            src = "".join(lines[:func.lineno - 1]) + body + "".join(lines[func.end_lineno:])
            yield name, line, desc, src


def copy_tree(dest: Path) -> None:
    def ignore(folder, names):
        return [n for n in names if n in (".git", "runs", "__pycache__") or n.endswith(".ragtmp")]
    shutil.copytree(str(ROOT), str(dest), ignore=ignore)


def run_tests(folder: Path, timeout: float, env: dict) -> str:
    """"caught" (a failing test, an error, a timeout) or "survived"."""
    for module in TEST_MODULES:
        try:
            proc = subprocess.run([sys.executable, "-m", "unittest", "-f", "-q", module], cwd=str(folder),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "caught (timeout in %s)" % module
        if proc.returncode != 0:
            return "caught by %s" % module
    return "survived"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="list the mutants without running the tests")
    ap.add_argument("--only", default="", help="only functions whose name contains this")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per test module (default 120)")
    ap.add_argument("--json", help="write every mutant's result to this file")
    args = ap.parse_args(argv)
    text = SOURCE.read_text(encoding="utf-8")
    todo = list(mutants(text, args.only))
    missing = [t for t in TARGETS if t not in functions(ast.parse(text))]
    print("mutate: %d mutants in %d functions of score_eval.py (not present: %s)"
          % (len(todo), len({m[0] for m in todo}), ", ".join(missing) or "none"))
    if args.list:
        for name, line, desc, _ in todo:
            print("  %s:%d %s" % (name, line, desc))
        return 0
    shared = ROOT.parent / "shared"
    env = dict(os.environ, MINI_RAG_DATA=os.environ.get("MINI_RAG_DATA", str(shared / "data")),
               MINI_RAG_SEEDS=os.environ.get("MINI_RAG_SEEDS", str(shared / "seeds")), PYTHONDONTWRITEBYTECODE="1")
    results = []
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="mutate_") as tmp:
        folder = Path(tmp) / "repo"
        copy_tree(folder)
        verdict = run_tests(folder, args.timeout, env)
        if verdict != "survived":
            print("mutate: the unmutated copy fails its tests (%s); fix them first" % verdict, file=sys.stderr)
            return 2
        for n, (name, line, desc, src) in enumerate(todo, 1):
            (folder / "score_eval.py").write_text(src, encoding="utf-8")
            verdict = run_tests(folder, args.timeout, env)
            results.append({"function": name, "line": line, "change": desc, "verdict": verdict})
            if verdict == "survived":
                print("SURVIVED %s:%d %s" % (name, line, desc), flush=True)
            print("  [%d/%d %.0fs] %s:%d %s: %s" % (n, len(todo), time.time() - start, name, line, desc, verdict),
                  file=sys.stderr, flush=True)
    survived = [r for r in results if r["verdict"] == "survived"]
    print("mutate: %d mutants, %d caught, %d survived (%.0fs)" % (len(results), len(results) - len(survived),
                                                               len(survived), time.time() - start))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
