"""score_eval.py is built from the package referee/ (issue 40): the committed file is a fresh
build, the modules import only the stages before them, nothing is defined twice, and the sizes
a reviewer can read stay in bounds.  The copied file alone runs the CLI tests."""
import ast
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, ROOT)
import build_single_file as build  # noqa: E402

PACKAGE = os.path.join(ROOT, "referee")
MAX_MODULE_LINES = 1000
MAX_FUNCTION_LINES = 80


def _modules():
    return {f[:-3]: os.path.join(PACKAGE, f) for f in os.listdir(PACKAGE) if f.endswith(".py")}


def _tree(path):
    with open(path, encoding="utf-8") as fh:
        return ast.parse(fh.read(), path)


def _relative_imports(tree):
    """Modules of the package a module imports, at any depth (function-level ones too)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name for a in node.names)
    return out


def _top_names(tree):
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names += [n.id for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        elif isinstance(node, ast.For):
            names += [n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)]
    return names


class Built(unittest.TestCase):
    def test_committed_file_is_a_fresh_build(self):
        with open(os.path.join(ROOT, "score_eval.py"), encoding="utf-8") as fh:
            committed = fh.read()
        self.assertTrue(committed == build.build(), "score_eval.py differs from a build of referee/: "
                        "run make single-file and commit the result")

    def test_every_module_is_a_listed_stage(self):
        self.assertEqual(set(_modules()) - {"__init__", "__main__"}, set(build.MODULES))

    def test_a_stage_imports_only_earlier_stages(self):
        pos = {m: i for i, m in enumerate(build.MODULES)}
        for name in build.MODULES:
            for dep in _relative_imports(_tree(_modules()[name])):
                with self.subTest(module=name, imports=dep):
                    self.assertIn(dep, pos)
                    self.assertLess(pos[dep], pos[name], "%s imports the later stage %s" % (name, dep))

    def test_no_top_level_name_defined_twice(self):
        seen = {}
        for name in build.MODULES:
            for top in _top_names(_tree(_modules()[name])):
                with self.subTest(name=top):
                    self.assertNotIn(top, seen, "%s defined in %s and %s" % (top, seen.get(top), name))
                seen[top] = name
        # the built file, as a whole, agrees
        tree = ast.parse(build.build())
        names = _top_names(tree)
        self.assertEqual(len(names), len(set(names)))

    def test_module_sizes(self):
        for name, path in sorted(_modules().items()):
            with open(path, encoding="utf-8") as fh:
                n = sum(1 for _ in fh)
            with self.subTest(module=name):
                self.assertLessEqual(n, MAX_MODULE_LINES)

    def test_function_sizes(self):
        long = set()
        for name in build.MODULES:
            for node in ast.walk(_tree(_modules()[name])):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                        long.add("%s.%s" % (name, node.name))
        self.assertEqual(sorted(long), [])

    def test_the_build_detects_a_changed_module(self):
        """--check fails on a committed file that is not the build (here: one byte more)."""
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "score_eval.py")
            with open(out, "w", encoding="utf-8") as fh:
                fh.write(build.build() + "\n")
            self.assertEqual(build.main(["--check", "--out", out]), 1)
            self.assertEqual(build.main(["--out", out]), 0)
            self.assertEqual(build.main(["--check", "--out", out]), 0)


class CopiedAlone(unittest.TestCase):
    def test_cli_tests_pass_on_the_file_alone(self):
        """score_eval.py copied into an empty folder, with the package made unimportable, passes
        the scorer's CLI tests (tests/test_score_eval.py)."""
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(ROOT, "score_eval.py"), "rb") as src, \
                    open(os.path.join(tmp, "score_eval.py"), "wb") as dst:
                dst.write(src.read())
            code = ("import sys; sys.path.insert(0, %r); sys.modules['referee'] = None\n"
                    "import score_eval\n"
                    "assert score_eval.__file__.startswith(%r), score_eval.__file__\n"
                    "sys.path.insert(1, %r)\n"
                    "import unittest\n"
                    "unittest.main(module='tests.test_score_eval', argv=['x', '-q'])\n") % (tmp, tmp, ROOT)
            p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
            self.assertEqual(p.returncode, 0, p.stderr[-3000:])
            self.assertRegex(p.stderr, r"Ran [1-9][0-9]* tests")


if __name__ == "__main__":
    unittest.main()
