"""score_eval.py is one file written by several hands: a module-level name bound twice silently
replaces the first binding for every caller above it (two merged sections each defining
``_MONTHS`` broke answer normalisation once).  Every top-level name is bound once."""
import ast
import collections
import os
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def top_level_bindings(source: str) -> collections.Counter:
    seen = collections.Counter()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            seen[node.name] += 1
        elif isinstance(node, ast.Assign):
            stack = list(node.targets)       # names and tuples of names; x[k] = v rebinds nothing
            while stack:
                target = stack.pop()
                if isinstance(target, ast.Name):
                    seen[target.id] += 1
                elif isinstance(target, (ast.Tuple, ast.List)):
                    stack.extend(target.elts)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            seen[node.target.id] += 1
    return seen


class OneBindingPerName(unittest.TestCase):
    def test_the_check_sees_a_rebinding(self):
        self.assertEqual(top_level_bindings("A = 1\ndef f(): pass\nA: int = 2\n(B, A) = 3, 4\nA[0] = 5\n")["A"], 3)

    def test_score_eval(self):
        with open(os.path.join(ROOT, "score_eval.py"), encoding="utf-8") as fh:
            counts = top_level_bindings(fh.read())
        # try/except import fallbacks bind inside a Try node, not at the top level: not counted
        self.assertEqual(sorted(n for n, c in counts.items() if c > 1), [])


class NoInvalidEscapes(unittest.TestCase):
    """An invalid escape in a string ("\\w" in a docstring) is a SyntaxWarning on stderr on 3.12+
    (a DeprecationWarning before), printed on a fresh compile: every "one line on stderr" promise
    breaks.  Every Python file of the repository compiles with warnings as errors."""

    def test_every_file_compiles_cleanly(self):
        import warnings
        bad = []
        for folder, dirs, names in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("runs", "__pycache__")]
            for name in sorted(names):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as fh:
                    source = fh.read()
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    try:
                        compile(source, path, "exec")
                    except SyntaxError as exc:
                        bad.append("%s: %s" % (os.path.relpath(path, ROOT), exc))
        self.assertEqual(bad, [])


if __name__ == "__main__":
    unittest.main()
