"""Hard rule 1 and 6: runtime code imports only the standard library, never unpickles or evals.

Two independent checks: the project's shared checker (../shared/tools/check_stdlib.py, when
present) and an AST walk here that needs nothing outside this repository.
"""
import ast
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNTIME = ["score_eval.py", "referee", "mini_rag"]
OPTIONAL = {"numpy"}                      # allowed only lazily or under try/except ImportError
NEWER_STDLIB = {"tomllib"}                # stdlib from 3.11; older versions must guard the import
FORBIDDEN_MODULES = {"pickle", "marshal", "shelve", "dill", "cloudpickle"}
FORBIDDEN_CALLS = {"eval", "exec"}

# Python 3.9 has no sys.stdlib_module_names; these are the modules runtime code may use there.
STDLIB_39 = set("""
__future__ abc argparse array ast base64 bisect codecs collections contextlib copy csv dataclasses
datetime decimal difflib enum errno fnmatch fractions functools gc glob gzip hashlib heapq hmac
importlib io itertools json keyword locale math numbers operator os pathlib platform pprint queue
random re resource secrets select shlex shutil signal stat statistics string struct subprocess sys tempfile
textwrap threading time tomllib traceback tracemalloc types typing unicodedata unittest uuid warnings
weakref zipfile zlib
html http ipaddress socket socketserver traceback urllib
""".split())


def runtime_files():
    for entry in RUNTIME:
        path = os.path.join(ROOT, entry)
        if os.path.isfile(path):
            yield path
        for dirpath, _, names in os.walk(path):
            for name in sorted(names):
                if name.endswith(".py"):
                    yield os.path.join(dirpath, name)


def guarded(tree):
    """Line numbers of imports inside a function body or a try/except ImportError."""
    lines = set()
    for node in ast.walk(tree):
        body = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
        elif isinstance(node, ast.Try):
            names = set()
            for h in node.handlers:
                t = h.type
                for n in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    names.add(getattr(n, "id", None))
            if names & {"ImportError", "ModuleNotFoundError"}:
                body = node.body
        for stmt in body:
            for sub in ast.walk(stmt):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    lines.add(sub.lineno)
    return lines


def problems(path):
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    stdlib = set(getattr(sys, "stdlib_module_names", ())) or STDLIB_39
    safe = guarded(tree)
    out = []
    for node in ast.walk(tree):
        mods = []
        if isinstance(node, ast.Import):
            mods = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods = [node.module.split(".")[0]]
        for mod in mods:
            if mod in FORBIDDEN_MODULES:
                out.append("%s:%d: forbidden module %s" % (path, node.lineno, mod))
            elif mod in ("mini_rag", "score_eval", "referee") or mod in stdlib:
                continue
            elif mod in (OPTIONAL | NEWER_STDLIB) and node.lineno in safe:
                continue
            else:
                out.append("%s:%d: non-stdlib import %s" % (path, node.lineno, mod))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in FORBIDDEN_CALLS:
            out.append("%s:%d: call to %s()" % (path, node.lineno, node.func.id))
    return out


class StdlibOnly(unittest.TestCase):
    def test_runtime_imports_are_stdlib(self):
        found = [p for f in runtime_files() for p in problems(f)]
        self.assertEqual(found, [])

    def test_checker_catches_a_bad_import(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.py")
            with open(bad, "w") as fh:
                fh.write("import numpy\nimport pickle\ntry:\n    import numpy as np\n"
                         "except ImportError:\n    np = None\nx = eval('1')\n")
            self.assertEqual([p.split(": ", 1)[1] for p in problems(bad)],
                             ["non-stdlib import numpy", "forbidden module pickle", "call to eval()"])

    def test_shared_checker(self):
        tool = os.path.join(os.path.dirname(ROOT), "shared", "tools", "check_stdlib.py")
        if not os.path.isfile(tool):
            self.skipTest("../shared/tools/check_stdlib.py not present")
        paths = [p for p in RUNTIME if os.path.exists(os.path.join(ROOT, p))]
        # tomllib is stdlib from 3.11; on older interpreters it is a guarded optional import.
        optional = ",".join(sorted(OPTIONAL | NEWER_STDLIB))
        proc = subprocess.run([sys.executable, tool, "--optional", optional] + paths, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        self.assertEqual(proc.returncode, 0, proc.stdout)


if __name__ == "__main__":
    unittest.main()
