"""Issue 31 item 9: the distribution and console-script names are free on the package index
(checked against the shared package list when it is on this machine), and python3 -m mini_rag
keeps working."""
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST = "/work/.library/env/packages/pypi.tsv"


def ultranormal(name):
    """The package index's name comparison: case, '-', '_' and '.' ignored."""
    return re.sub(r"[-_.]+", "", name).lower()


class Names(unittest.TestCase):
    def names(self):
        with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as fh:
            text = fh.read()
        dist = re.search(r'^name = "([^"]+)"', text, re.M).group(1)
        scripts = re.findall(r'^([A-Za-z0-9_.-]+) = "[^"]+:main"', text.split("[project.scripts]")[1], re.M)
        return dist, scripts

    def test_names(self):
        dist, scripts = self.names()
        self.assertEqual((dist, scripts), ("rag-referee", ["referee-score", "referee-rag"]))

    def test_free_on_the_index(self):
        if not os.path.isfile(LIST):
            self.skipTest("no package list at %s" % LIST)
        wanted = {ultranormal(n) for n in [self.names()[0]] + self.names()[1]}
        taken = set()
        with open(LIST, encoding="utf-8") as fh:
            for line in fh:
                key = ultranormal(line.split("\t", 1)[0])
                if key in wanted:
                    taken.add(key)
        self.assertEqual(taken, set())

    def test_module_entry_still_works(self):
        p = subprocess.run([sys.executable, "-m", "mini_rag", "--version"], cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("mini_rag "))


if __name__ == "__main__":
    unittest.main()
