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
from mini_rag.text.markup import blocks, plain_text  # noqa: E402


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
        # Sphinx shows a "~" target's last part and drops a "!" (its cross-reference syntax)
        ("rst", "Call :meth:`~pluggy.PluginManager.get_plugins` or :func:`!raw.name`.",
         [("text", ["Call get_plugins or raw.name."], 0)]),
        ("rst", "See :py:class:`~a.B` and :class:`C <x.C>` and :func:`plain.f()`.",
         [("text", ["See B and C and plain.f()."], 0)]),
        ("md", "Use {py:meth}`~pkg.Mod.run()` and {code}`~x.y`.", [("text", ["Use run() and `~x.y`."], 0)]),
    )

    def test_cases(self):
        for syntax, text, want in self.CASES:
            with self.subTest(syntax=syntax, text=text):
                self.assertEqual(kinds(text, syntax), want)

    def test_tab_label_is_context(self):
        got = blocks("````{tab} Windows\nUse `%APPDATA%`.\n````".split("\n"), "md")
        self.assertEqual([(b.kind, b.context) for b in got], [("text", ("Windows",))])


class Tables(unittest.TestCase):
    """A pipe table read as rows with their header (markup.read_table), within the paragraph
    numbering: one chunk, its id unmoved, its text the rows, its indexed words as written."""
    CASES = (
        # (table lines, rows read)
        (["| Vehicle | Mileage rate |", "|---|--:|", "| Bicycle | £0.12 |"], ["Vehicle: Bicycle; Mileage rate: £0.12"]),
        (["| A | B |", "|:--|:-:|", "| 1 | |", "| | 2 |", "| | |"], ["A: 1", "B: 2"]),
        (["| | Pro | Enterprise |", "|---|---|---|", "| Uptime | 99.5% | 99.9% |"],
         ["Uptime; Pro: 99.5%; Enterprise: 99.9%"]),
        (["| Key | Value |", "|---|---|", "| x | 1 | extra |"], ["Key: x; Value: 1; extra"]),
        (["| Op | Meaning |", "|---|---|", "| a \\| b | either |"], ["Op: a | b; Meaning: either"]),
        (["Name | Value", "---|---", "x | 1"], ["Name: x; Value: 1"]),   # outer pipes left out (GFM)
        (["| a | b |", "|---|", "| 1 | 2 |"], None),            # delimiter cells != header cells
        (["| a | b |", "|---|---|"], None),                     # no row
        (["| a | b |", "| c | d |", "| e | f |"], None),        # no delimiter row
        (["| {ref}`Cache <c>` | Where |", "|---|---|", "| wheels | {ref}`here <h>` |"],
         ["Cache: wheels; Where: here"]),
    )

    def test_cases(self):
        from mini_rag.text.markup import is_table, read_table
        for lines, want in self.CASES:
            with self.subTest(lines=lines):
                self.assertEqual(is_table(lines), want is not None)
                if want is not None:
                    self.assertEqual(read_table(lines), want)

    RST = (
        # (reST text, [(kind, rows read or text lines, context)])
        ("+------+-------+\n| Name | Value |\n+======+=======+\n| x    | 1     |\n| cont |       |\n+------+-------+\n| a | b | c     |\n+------+-------+\n\nAfter.",
         [("table", ["Name: x cont; Value: 1", "Name: a | b; Value: c"], ()), ("text", ["After."], ())]),
        ("+---+---+\n| a | b |\n+---+---+", [("table", ["a; b"], ())]),
        ("+---+---+\n| k | x |\n+   +---+\n|   | y |\n+---+---+", [("table", ["k; x", "y"], ())]),
        ("=====  ======\nA      A or B\n=====  ======\nFalse  False\nTrue   True\n       still\n=====  ======\n\nNext.",
         [("table", ["A: False; A or B: False", "A: True; A or B: True still"], ()), ("text", ["Next."], ())]),
        ("===  ===\n1    2\n===  ===", [("table", ["1; 2"], ())]),
        (".. list-table:: Limits\n   :header-rows: 1\n\n   * - Plan\n     - Rate\n   * - Free\n     - 60\n       a minute\n",
         [("table", ["Plan: Free; Rate: 60 a minute"], ())]),
        (".. csv-table:: Prices\n   :header: \"Item\", \"Price\"\n\n   \"Tea, green\", 2.5\n",
         [("table", ["Item: Tea, green; Price: 2.5"], ())]),
        (".. table:: Caption\n\n   ===  ===\n   K    V\n   ===  ===\n   a    ``b``\n   ===  ===\n",
         [("table", ["K: a; V: `b`"], ())]),
        (".. option:: --proxy <url>\n\n   Use a proxy.\n\n.. envvar:: PIP_CERT\n\n   A bundle.\n\n.. py:function:: f(x)\n\n   Returns x.\n\n.. image:: a.png\n   :alt: no",
         [("text", ["Use a proxy."], ("--proxy <url>",)), ("text", ["A bundle."], ("PIP_CERT",)),
          ("text", ["Returns x."], ("f(x)",))]),
        # a domain's example directive holds code, a domain's object directive prose
        (".. click:example::\n\n    @click.command()\n    @click.option('--n', default=1)\n    def hello(n):\n        pass\n\nAfter.",
         [("code", ["@click.command()", "@click.option('--n', default=1)", "def hello(n):", "    pass"], ()),
          ("text", ["After."], ())]),
        (".. click:run::\n\n    invoke(cli, args=['--help'])\n",
         [("code", ["invoke(cli, args=['--help'])"], ())]),
        (".. js:function:: f(x)\n\n   Returns x. Use f(x) to read it.",
         [("text", ["Returns x. Use f(x) to read it."], ("f(x)",))]),
    )

    def test_rst_tables_and_objects(self):
        from mini_rag.text.markup import read_table
        for text, want in self.RST:
            with self.subTest(text=text):
                got = [(b.kind, read_table(b.lines) if b.kind == "table" else b.lines, b.context)
                       for b in blocks(text.split("\n"), "rst")]
                self.assertEqual(got, want)

    def test_eval_rst_fence_read_as_rst(self):
        got = blocks("```{eval-rst}\n.. note::\n\n   Read ``this``.\n```\nAfter.".split("\n"), "md")
        self.assertEqual([(b.kind, b.lines, b.start) for b in got], [("text", ["Read `this`."], 3), ("text", ["After."], 5)])

    def test_chunk(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        with open(os.path.join(tmp, "rates.md"), "w", encoding="utf-8") as fh:
            fh.write("# Rates\n\n| Vehicle | Mileage rate |\n|---|---|\n| Bicycle | £0.12 |\n| Car | £0.45 |\n\nEnd.\n")
        chunks = {c.chunk_id: c for c in load_chunks(tmp)}
        self.assertEqual(sorted(chunks), ["rates#p0", "rates#p1", "rates#p2"])
        table = chunks["rates#p1"]
        self.assertEqual((table.kind, table.text), ("table", "Vehicle: Bicycle; Mileage rate: £0.12\n"
                                                              "Vehicle: Car; Mileage rate: £0.45"))
        # indexed: the words as written (each header once), so a table's column names do not
        # weigh by its number of rows
        self.assertEqual(indexed_text(table), "Rates\n| Vehicle | Mileage rate |\n|---|---|\n"
                                              "| Bicycle | £0.12 |\n| Car | £0.45 |")
        self.assertEqual(chunks["rates#p2"].indexed, "")

    def test_revision_table_read(self):
        from mini_rag.answer.relevance import is_revision_table
        cases = (("Version: 5.0; Date: 2026-03-01; Change: Added exceptions", "table", "", True),
                 ("Version: 5.0; Date: 2026-03-01; Change: Added exceptions", "table", "Which version changed it?", False),
                 ("Plan: Pro; Requests per minute: 600", "table", "", False),
                 ("Version: 5.0 is current.", "text", "", False))
        for text, kind, question, want in cases:
            with self.subTest(text=text, kind=kind):
                self.assertEqual(is_revision_table(text, "", question, kind), want)


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
        from mini_rag.commands.runconfig import resolve
        from mini_rag.pipeline import open_pipeline
        err = io.StringIO()
        with redirect_stderr(err):
            config = resolve(None, self.tmp, os.path.join(self.tmp, "idx.json.gz"))
            pipeline = open_pipeline(config)
        row = pipeline.answer("What is the default port?").row
        self.assertIsNone(row["signals"]["as_of"])
        self.assertNotIn("0001", err.getvalue() + str(row))


class PlainText(unittest.TestCase):
    """markup.plain_text (issue 42 item 7): a shipped sentence without its Markdown markup.
    Each expected value written by hand from CommonMark's reading of the input."""
    CASES = (
        # (name, sentence as in the chunk, as shipped)
        ("ordered marker", "1. Install the tool.", "Install the tool."),
        ("ordered paren", "2) Run it.", "Run it."),
        ("bullets", "* Tier 4 - requests go first.", "Tier 4 - requests go first."),
        ("dash", "- run load tests;", "run load tests;"),
        ("plus and bullet", "+ one \u2022 two", "one \u2022 two"),
        ("heading", "## Refund window", "Refund window"),
        ("heading closed", "### Owner ###", "Owner"),
        ("heading mark alone keeps text", "#", "#"),
        ("quote then list then box", "> 1. [x] Done.", "Done."),
        ("strong", "Every request **must** be approved.", "Every request must be approved."),
        ("strong underscore", "owned by __platform team A__.", "owned by platform team A."),
        ("emphasis", "archived to _cold storage_ and *kept*.", "archived to cold storage and kept."),
        ("nested emphasis", "*a **b** c*", "a b c"),
        ("strong then text", "**What happens?** We retry.", "What happens? We retry."),
        ("link", "See [the portal](https://x.example/a_(b)) now.", "See the portal now."),
        ("link with title", '[docs](https://x.example "Docs") here', "docs here"),
        ("reference link", "Read [the guide][guide] and [this][].", "Read the guide and this."),
        ("image", "![logo](a.png) text", "logo text"),
        ("link text with code", "[`npm ci`](cli/npm-ci.md) installs", "npm ci installs"),
        ("autolink", "Mail <https://x.example/a_b> now", "Mail https://x.example/a_b now"),
        ("code span", "Run `npm install --save` first.", "Run npm install --save first."),
        ("code span keeps markup", "Use `**kwargs` and `a_b_`.", "Use **kwargs and a_b_."),
        ("double backticks", "a ``x ` y`` b", "a x ` y b"),
        ("escapes", "\\*not emphasis\\* and \\[1\\]", "*not emphasis* and [1]"),
        ("inner list markers", "1. A system. 2. B system. 3. C.", "A system. B system. C."),
        ("inner dash after colon", "must not: - send spam; - run scans", "must not: send spam; run scans"),
        # stays as written
        ("snake case", "use the next_cursor value", "use the next_cursor value"),
        ("intraword star", "2*3*4 = 24", "2*3*4 = 24"),
        ("spaced stars", "5 * 3 * 4", "5 * 3 * 4"),
        ("unmatched", "def f(**kwargs) and a `tick", "def f(**kwargs) and a `tick"),
        ("citation marker", "Refunds take 5 days [1] [doc#p3].", "Refunds take 5 days [1] [doc#p3]."),
        ("placeholder", "--output <file> writes it", "--output <file> writes it"),
        ("hash inside", "the #sec-incident channel", "the #sec-incident channel"),
        ("decimal and range", "costs 5 - 10 euros. 1.5 more", "costs 5 - 10 euros. 1.5 more"),
        ("negative", "Range: -3 to 3", "Range: -3 to 3"),
        ("plain", "Refunds take 5 days.", "Refunds take 5 days."),
    )

    def test_cases(self):
        for name, text, want in self.CASES:
            with self.subTest(name):
                self.assertEqual(plain_text(text), want)

    def test_lines_read_one_by_one(self):
        self.assertEqual(plain_text("- Pro plan:\n  30 days"), "Pro plan:\n30 days")

    def test_no_word_is_added(self):
        """Only markup goes: every word of the plain text is a word of the original."""
        import re
        for name, text, _ in self.CASES:
            with self.subTest(name):
                self.assertLessEqual(set(re.findall(r"[^\W_]+", plain_text(text))), set(re.findall(r"[^\W_]+", text)))

    def test_hostile_lines_are_linear(self):
        import time
        for hostile in ("[" * 100000, "[](" * 30000, "`x" * 50000, "*a" * 50000, "_ " * 50000,
                        "<a:" * 30000, "\\" * 100000, "[a](" * 25000, ". - " * 25000):
            start = time.process_time()
            plain_text(hostile)
            self.assertLess(time.process_time() - start, 2.0, hostile[:8])


if __name__ == "__main__":
    unittest.main()
