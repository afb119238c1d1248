"""Installable, versioned, licensed (issue 19 item 6).

The offline build test installs the package into a temporary virtualenv with
``pip install --no-index --no-build-isolation`` when this interpreter has pip and a build
backend (setuptools >= 61 and wheel); otherwise it skips and says why.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import mini_rag  # noqa: E402
import score_eval  # noqa: E402


def pyproject_version():
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as fh:
        project = fh.read().split("[project]", 1)[1]
    return re.search(r'^version = "([^"]+)"', project, re.M).group(1)


def run(argv, cwd, **kw):
    return subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300, **kw)


class Version(unittest.TestCase):
    def test_one_version_everywhere(self):
        v = pyproject_version()
        self.assertRegex(v, r"^\d+\.\d+\.\d+$")
        self.assertEqual((score_eval.__version__, mini_rag.__version__), (v, v))
        with open(os.path.join(ROOT, "CHANGELOG.md"), encoding="utf-8") as fh:
            self.assertIn("## %s" % v, fh.read())

    def test_pyproject_lists_every_subpackage(self):
        # pip install . ships only the packages pyproject.toml names: a new subpackage of
        # mini_rag/ left out of the list would import in the tree and fail once installed.
        with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as fh:
            listed = re.search(r"^packages = \[([^\]]*)\]", fh.read(), re.M).group(1)
        on_disk = [os.path.relpath(d, ROOT).replace(os.sep, ".")
                   for top in ("mini_rag", "referee")
                   for d, _, names in os.walk(os.path.join(ROOT, top)) if "__init__.py" in names]
        self.assertEqual(sorted(re.findall(r'"([\w.]+)"', listed)), sorted(on_disk))
        self.assertIn("mini_rag.answer", on_disk)
        self.assertIn("referee", on_disk)     # the scorer's package (score_eval.py is built from it)

    def test_pyproject_declares_no_runtime_dependency(self):
        with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as fh:
            text = fh.read()
        self.assertIn("dependencies = []", text)
        self.assertIn('numpy = ["numpy"]', text)
        self.assertIn('referee-score = "score_eval:main"', text)
        self.assertIn('referee-rag = "mini_rag.commands.cli:main"', text)
        self.assertIn('name = "rag-referee"', text)
        with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as fh:
            self.assertTrue(fh.read().startswith("MIT License"))

    def test_score_eval_copied_alone(self):
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(os.path.join(ROOT, "score_eval.py"), tmp)
            with open(os.path.join(tmp, "g.jsonl"), "w", encoding="utf-8") as fh:
                fh.write('{"qid": "a", "answerable": false, "gold_claim_substr": [], "gold_citations": []}\n')
            with open(os.path.join(tmp, "t.jsonl"), "w", encoding="utf-8") as fh:
                fh.write('{"qid": "a", "retrieved_ids": [], "answer_json": {"claim": "not in context", "citations": []}}\n')
            p = run([sys.executable, "score_eval.py", "--version"], tmp)
            self.assertEqual((p.returncode, p.stdout), (0, "score_eval.py %s\n" % score_eval.__version__))
            p = run([sys.executable, "score_eval.py", "--gold", "g.jsonl", "--trace", "t.jsonl"], tmp)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(json.loads(p.stdout)["version"], score_eval.__version__)

    def test_mini_rag_version(self):
        p = run([sys.executable, "-m", "mini_rag", "--version"], ROOT)
        self.assertEqual((p.returncode, p.stdout), (0, "mini_rag %s\n" % mini_rag.__version__))


def _offline_build_possible():
    try:
        import setuptools
        import wheel  # noqa: F401
        import pip  # noqa: F401
        import venv  # noqa: F401
    except ImportError as exc:
        return "no offline build backend (%s): pip install . needs PyPI for setuptools and wheel" % exc
    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    if (major, minor) < (61, 0):
        return "setuptools %s is older than 61 (no pyproject [project] support)" % setuptools.__version__
    return None


class OfflineInstall(unittest.TestCase):
    def test_install_into_a_fresh_venv(self):
        why = _offline_build_possible()
        if why:
            self.skipTest(why)
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "src")
            shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns("runs", ".git", "__pycache__", "build",
                                                                       "*.egg-info"))
            dist = os.path.join(tmp, "dist")
            # 1. build the wheel with this interpreter's backend, offline
            p = run([sys.executable, "-m", "pip", "wheel", "--no-index", "--no-build-isolation", "--no-deps",
                     "-q", "-w", dist, src], tmp)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            wheels = [f for f in os.listdir(dist) if f.endswith(".whl")]
            self.assertEqual(len(wheels), 1, wheels)
            # 2. install it into a fresh virtualenv, offline (a wheel needs no backend)
            env_dir = os.path.join(tmp, "venv")
            p = run([sys.executable, "-m", "venv", env_dir], tmp)
            self.assertEqual(p.returncode, 0, p.stderr)
            bindir = os.path.join(env_dir, "Scripts" if os.name == "nt" else "bin")
            p = run([os.path.join(bindir, "python"), "-m", "pip", "install", "--no-index", "--no-deps", "-q",
                     os.path.join(dist, wheels[0])], tmp)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            p = run([os.path.join(bindir, "referee-score"), "--version"], tmp)
            self.assertEqual((p.returncode, p.stdout), (0, "score_eval.py %s\n" % score_eval.__version__))
            p = run([os.path.join(bindir, "referee-rag"), "--version"], tmp)
            self.assertEqual((p.returncode, p.stdout), (0, "mini_rag %s\n" % mini_rag.__version__))


if __name__ == "__main__":
    unittest.main()
