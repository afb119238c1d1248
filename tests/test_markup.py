"""The document reader on documentation trees (issue 31 item 2): text/markup.py's blocks and
what corpus.py makes of them.  Expected values written by hand from the module docstrings."""
import io
import os
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stderr

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from mini_rag.indexing.index import build_index, indexed_text  # noqa: E402
from mini_rag.text.corpus import load_chunks, load_corpus  # noqa: E402
from mini_rag.text.markup import blocks  # noqa: E402


def kinds(text, syntax):
    return [(b.kind, b.lines, b.level) for b in blocks(text.split("\n"), syntax)]


class Blocks(unittest.TestCase):
    CASES = (
        # (syntax, text, [(kind, lines, level)])
        ("md", "Intro line\nwrapped.\n\nNext.", [("text", ["Intro line", "wrapped."], 0), ("text", ["Next."], 0)]),
        ("md", "Run this:\n```sh\npip install x\n\npip list\n```\nAfter.",
         [("text", ["Run this:"], 0), ("code", ["pip install x", "", "pip list"], 0), ("text", ["After."], 0)]),
        ("md", "````{tab} Linux\n```\n~/.cache/pip\n```\n\nIt respects `XDG`.\n````",
         [("code", ["~/.cache/pip"], 0), ("text", ["It respects `XDG`."], 0)]),
        ("md", "```{note}\n:class: x\nA {ref}`cache <caching>` note.\n```", [("text", ["A cache note."], 0)]),
        ("md", "(label)=\n\n# Title", [("text", ["# Title"], 0)]),
        ("md", "| Vehicle | Rate |\n|---|:--:|\n| Bicycle | £0.12 |",
         [("table", ["| Vehicle | Rate |", "|---|:--:|", "| Bicycle | £0.12 |"], 0)]),
        ("md", "| a | b |\n| c | d |", [("text", ["| a | b |", "| c | d |"], 0)]),
        ("rst", "=====\nTitle\n=====\n\nSub\n---\n\nText ``code`` and :ref:`a link <x>`.",
         [("heading", ["Title"], 1), ("heading", ["Sub"], 2), ("text", ["Text `code` and a link."], 0)]),
        ("rst", "Example::\n\n    pip install x\n\n      more\n\nBack.",
         [("text", ["Example:"], 0), ("code", ["pip install x", "", "  more"], 0), ("text", ["Back."], 0)]),
        ("rst", "Lead ::\n\n    x = 1\n", [("text", ["Lead"], 0), ("code", ["x = 1"], 0)]),
        ("rst", ".. note::\n\n   Keep it.\n\n.. code-block:: shell\n\n   ls -l\n\n.. _target:\n\n.. toctree::\n   a\n   b\n\nEnd.",
         [("text", ["Keep it."], 0), ("code", ["ls -l"], 0), ("text", ["End."], 0)]),
        ("txt", "A\nB\n\n\nC", [("text", ["A", "B"], 0), ("text", ["C"], 0)]),
    )

    def test_cases(self):
        for syntax, text, want in self.CASES:
            with self.subTest(syntax=syntax, text=text):
                self.assertEqual(kinds(text, syntax), want)

    def test_tab_label_is_context(self):
        got = blocks("````{tab} Windows\nUse `%APPDATA%`.\n````".split("\n"), "md")
        self.assertEqual([(b.kind, b.context) for b in got], [("text", ("Windows",))])


class Tree(unittest.TestCase):
    FILES = {
        "index.md": "---\ntitle: Home\ndescription: Everything about widgets\ntags:\n  - a\n  - b\n---\n# Home\n\nWelcome.\n",
        "guide/index.md": "# Guide\n\n## Install\n\n### Defaults\n\nThe default port is 8080.\n\n```\nwidget --port 8080\n```\n",
        "guide/setup.rst": "Setup\n=====\n\nOptions\n-------\n\nThe timeout is 30 seconds.\n\n.. code-block:: ini\n\n   timeout = 30\n",
        "notes.txt": "Plain text notes.\n",
    }

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        for rel, text in self.FILES.items():
            path = os.path.join(self.tmp, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        self.chunks = {c.chunk_id: c for c in load_chunks(self.tmp)}

    def test_doc_ids_from_relative_paths(self):
        self.assertEqual([d.doc_id for d in load_corpus(self.tmp)], ["guide/index", "guide/setup", "index", "notes"])

    def test_chunk_ids_kinds_and_sections(self):
        want = {
            "index#p0": ("heading", ["Home"]),
            "index#p1": ("text", ["Home"]),
            "guide/index#p0": ("heading", ["Guide"]),
            "guide/index#p1": ("heading", ["Guide", "Install"]),
            "guide/index#p2": ("heading", ["Guide", "Install", "Defaults"]),
            "guide/index#p3": ("text", ["Guide", "Install", "Defaults"]),
            "guide/index#p4": ("code", ["Guide", "Install", "Defaults"]),
            "guide/setup#p0": ("heading", ["Setup"]),
            "guide/setup#p1": ("heading", ["Setup", "Options"]),
            "guide/setup#p2": ("text", ["Setup", "Options"]),
            "guide/setup#p3": ("code", ["Setup", "Options"]),
            "notes#p0": ("text", []),
        }
        self.assertEqual({cid: (c.kind, c.section) for cid, c in self.chunks.items()}, want)
        self.assertEqual(self.chunks["guide/setup#p2"].title, "Setup")
        self.assertEqual(self.chunks["guide/index#p4"].text, "widget --port 8080")
        self.assertEqual(self.chunks["guide/setup#p3"].line, 9)

    def test_indexed_text_has_description_and_section(self):
        self.assertEqual(indexed_text(self.chunks["index#p1"]),
                         "Home\nEverything about widgets\nWelcome.")
        self.assertEqual(indexed_text(self.chunks["guide/index#p3"]),
                         "Guide\nInstall\nDefaults\nThe default port is 8080.")
        self.assertEqual(load_corpus(self.tmp)[2].metadata["tags"], "a, b")

    def test_code_is_found_but_never_shipped(self):
        from mini_rag.answer.relevance import chunk_kind
        index = build_index(list(self.chunks.values()))
        self.assertEqual(chunk_kind("guide/index#p4", index), "code")
        self.assertEqual(chunk_kind("guide/index#p3", index), "text")
        self.assertTrue(index.terms(list(self.chunks).index("guide/index#p4")))

    def test_undated_corpus_prints_no_date(self):
        from mini_rag.commands.runconfig import open_pipeline, resolve
        err = io.StringIO()
        with redirect_stderr(err):
            config = resolve(None, self.tmp, os.path.join(self.tmp, "idx.json.gz"))
            pipeline = open_pipeline(config)
        row = pipeline.answer("What is the default port?").row
        self.assertIsNone(row["signals"]["as_of"])
        self.assertNotIn("0001", err.getvalue() + str(row))


if __name__ == "__main__":
    unittest.main()
