"""Documentation-shaped answers (mini_rag/answer/docshape.py, issue 43 item 4): the shape
readers on hand-written units, and phase C end to end on small Markdown and reST pages whose
right answer is a list item, a definition-list entry, a table row or an inline code span.
Every expected value is read off the snippet by hand."""
import io
import os
import shutil
import tempfile
import unittest
from contextlib import redirect_stderr

from mini_rag.text.analysis import Analyzer
from mini_rag.answer import docshape


class Readers(unittest.TestCase):
    def test_is_item(self):
        cases = [("- run it", True), ("* run it", True), ("+ run it", True), ("\u2022 run it", True),
                 ("1. run it", True), ("2) run it", True), ("a. run it", True), ("-run it", False),
                 ("--proxy is an option", False), ("Run it.", False), ("12.5 days", False)]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(docshape.is_item(text), want)

    def test_is_lead_in(self):
        cases = [("pip can be configured in various ways:", True), ("Example::", False),
                 ("Run it.", False), (":", False), ("Each item in the list can be:  ", True)]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(docshape.is_lead_in(text), want)

    def test_is_synopsis(self):
        cases = [("$ pip install Jinja2", True), ("$ python -m venv .env", True),
                 ("$ pip install x\n$ x --version", False), ("pip install x", False),
                 ("$5 per seat", False), ("$ " + "x" * 199, False)]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(docshape.is_synopsis(text), want)

    def test_lead_in_of_and_introduces_list(self):
        from types import SimpleNamespace as C
        chunks = [C(chunk_id="a#p0", doc_id="a", kind="text", text="Configure it in three ways:"),
                  C(chunk_id="a#p1", doc_id="a", kind="text", text="- with an option"),
                  C(chunk_id="a#p2", doc_id="a", kind="text", text="- in a file"),
                  C(chunk_id="a#p3", doc_id="a", kind="text", text="The values are:"),
                  C(chunk_id="a#p4", doc_id="a", kind="table", text="Name: x; Value: 1"),
                  C(chunk_id="b#p0", doc_id="b", kind="text", text="- an item of another page"),
                  C(chunk_id="b#p1", doc_id="b", kind="text", text="It ends here:")]
        ids = [c.chunk_id for c in chunks]
        index = C(chunks=chunks, position=lambda cid: ids.index(cid) if cid in ids else -1)
        # a#p2 walks back over a#p1 to the lead-in; b#p0 has none (the page starts with it)
        self.assertEqual(docshape.lead_in_of(["a#p2", "a#p4", "b#p0", "a#p0"], index),
                         {0: "Configure it in three ways:", 1: "The values are:"})
        self.assertTrue(docshape.introduces_list("Configure it in three ways:", chunks[0].text, "a#p0", index))
        self.assertTrue(docshape.introduces_list("The values are:", chunks[3].text, "a#p3", index))
        self.assertFalse(docshape.introduces_list("It ends here:", chunks[6].text, "b#p1", index))  # last chunk
        self.assertTrue(docshape.introduces_list("Two ways:", "Two ways:\n- one\n- two", "x#p0", index))
        self.assertFalse(docshape.introduces_list("Two ways:", "Two ways:\nSee below.", "x#p0", index))
        self.assertEqual(docshape.lead_in_of(["a#p2"], C()), {})     # an index without chunk order

    def test_list_after(self):
        # text.shape.list_after: the chunks of the list (or table) a lead-in ending its chunk
        # introduces, as retrieval joins them (retrieve.py step 7); each expected list read off
        # the stub page by hand
        from types import SimpleNamespace as C
        from mini_rag.text import shape

        def page(*specs):
            return [C(chunk_id="%s#p%d" % (d, n), doc_id=d, kind=k, text=t) for n, (d, k, t) in enumerate(specs)]
        lead = ("a", "text", "Some words first.\nIt can be set in these ways:")
        item = ("a", "text", "- with an option\n- in a file")
        cases = [
            ("a list chunk after the lead-in", page(lead, item, ("a", "text", "Done.")), 0, 3, [1]),
            ("items go on up to the cap", page(lead, item, item, item, item), 0, 3, [1, 2, 3]),
            ("an enumerated list", page(lead, ("a", "text", "1. first"), ("a", "text", "a) second")), 0, 3, [1, 2]),
            ("the document ends the list", page(lead, item, ("b", "text", "- another page")), 0, 3, [1]),
            ("a table, and nothing after it", page(lead, ("a", "table", "Name: x; Value: 1"), item), 0, 3, [1]),
            ("an item ending with its own lead-in", page(lead, ("a", "text", "- one\n- two, as follows:"), item), 0, 3, [1]),
            ("the lead-in is not the chunk's last line", page(("a", "text", "These ways:\nSee below."), item), 0, 3, []),
            ("a literal block's ::", page(("a", "text", "For example::"), item), 0, 3, []),
            ("a contract's (a) is no list item", page(lead, ("a", "text", "(a) the first party")), 0, 3, []),
            ("code that looks like a list", page(lead, ("a", "code", "- name: x\n  value: 1")), 0, 3, []),
            ("a heading is no lead-in", page(("a", "heading", "Ways:"), item), 0, 3, []),
            ("the last chunk of the index", page(item, lead), 1, 3, []),
            ("a position outside the index", page(lead, item), 5, 3, []),
        ]
        for name, chunks, pos, limit, want in cases:
            with self.subTest(name):
                self.assertEqual(shape.list_after(chunks, pos, limit), want)
                if want:
                    # the answering stage reads the same lead-in for every joined chunk
                    ids = [c.chunk_id for c in chunks]
                    index = C(chunks=chunks, position=lambda cid, ids=ids: ids.index(cid) if cid in ids else -1)
                    got = docshape.lead_in_of([chunks[k].chunk_id for k in want], index)
                    self.assertEqual(got, {i: "It can be set in these ways:" for i in range(len(want))})

    def test_entry_label(self):
        cases = [("`truncate.leeway`: Configures the leeway. The default is `5`.", "truncate.leeway"),
                 ("**Legal hold**: an instruction to preserve records.", "Legal hold"),
                 ("**A**: one. **B**: two.", ""),          # two entries in one chunk: no label
                 ("See `x`: it is fine.", ""),              # the label must open the chunk
                 ("Plain text: no label.", "")]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(docshape.entry_label(text), want)

    def test_asks_literal(self):
        cases = [("Which option turns off the cache?", True),
                 ("What is the command to install it?", True),
                 ("Which context setting do I use for -h?", True),
                 ("How do I start the server on another port?", True),
                 ("How can I tell where a value came from?", True),
                 ("How long are logs kept?", False),
                 ("Which team owns the runbook?", False),
                 ("What happens when the key changes?", False)]
        for question, want in cases:
            with self.subTest(question=question):
                self.assertEqual(docshape.asks_literal(question), want)

    def test_has_literal(self):
        cases = [("Use the `--python` option.", True), ("pass --no-cache-dir to pip", True),
                 ("call enable_tracing() first", True), ("set PIP_CONFIG_FILE to a path", True),
                 ("A well-known co-operative option.", False), ("It is - as said - fine.", False),
                 ("Use Python 3.10 or newer.", False)]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(docshape.has_literal(text), want)

    def test_asked_subject(self):
        cases = [("What does a Signer do?", "Signer"), ("What is pluggy?", "pluggy"),
                 ("In its terms, what is the host program?", "host program"),
                 ("What does RPO stand for?", "RPO"), ("What does the sandbox do for me?", "sandbox"),
                 ("What does it return?", None), ("How long is it?", None),
                 ("What is the thing that one uses for a very long time?", None)]
        for question, want in cases:
            with self.subTest(question=question):
                self.assertEqual(docshape.asked_subject(question), want)

    def test_defines_subject(self):
        an = Analyzer()
        signer = an.analyze("Signer")
        cases = [("The `Signer` signs a given bytes value.", True),      # article, then a verb in -s
                 ("Signer: the basic signing system", True),             # an entry labelled X
                 ("- ``Signer`` - the basic system", True),              # a list item with a dash
                 ("Signer is the basic system.", True),
                 ("Signer is issued by the server.", False),             # "is" + a participle: no definition
                 ("Use a serializer, not a Signer.", False),             # X is not where the unit opens
                 ("Signer", False),                                      # nothing said of it
                 ("Variable: Signer; Description: signs bytes", True)]   # a table row read with its header
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(docshape.defines_subject(text, signer, an), want)


PAGES = {
    "proxy.rst": """Proxy Server
============

When installing packages, pip requires internet access through a proxy server.

pip can be configured to connect through a proxy server in various ways:

* using the ``--proxy`` command-line option to specify a proxy
* using ``proxy`` in a config file
* by setting the environment variables ``http_proxy`` and ``https_proxy``.
""",
    "policies.rst": """Policies
========

The policies change how filters behave.

``truncate.leeway``:
    Configures the leeway default for the truncate filter.  The default
    is `5`.

``urlize.rel``:
    A string that defines the rel attribute of links.  The default is `noopener`.
""",
    "loop.md": """# Loop variables

Inside of a for-loop block, you can access some special variables:

| Variable | Description |
|---|---|
| `loop.index` | The current iteration of the loop, counted from 1. |
| `loop.revindex` | The number of iterations from the end of the loop. |
""",
    "caching.md": """# Caching

No option should disable the caching of downloads unless you cache at a higher level.
The caching of downloads is disabled by passing the `--no-cache-dir` option.
""",
    "install.md": """# Installation

Install the most recent version with pip:

```text
$ pip install Widget
```

```text
$ pip install Widget
$ widget --version
```
""",
    "signer.md": """# Signing

A serializer wraps a signer to sign other data besides bytes.

The signer is the basic system that signs a given bytes value.
""",
}


class EndToEnd(unittest.TestCase):
    """A small documentation tree answered by the pipeline with its defaults."""

    @classmethod
    def setUpClass(cls):
        from mini_rag.commands.runconfig import resolve
        from mini_rag.pipeline import open_pipeline
        cls.tmp = tempfile.mkdtemp()
        docs = os.path.join(cls.tmp, "docs")
        os.makedirs(docs)
        for name, text in PAGES.items():
            with open(os.path.join(docs, name), "w", encoding="utf-8") as fh:
                fh.write(text)
        with redirect_stderr(io.StringIO()):
            config = resolve(None, docs, os.path.join(cls.tmp, "idx.json.gz"), quiet=True)
            cls.pipeline = open_pipeline(config, quiet=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def answer(self, question):
        row = self.pipeline.answer(question).row
        return row["decision"], row["answer_json"].get("claim") or "", row["answer_json"].get("citations") or []

    def test_list_item_not_its_lead_in(self):
        # the lead-in (proxy#p2) covers "connect", "proxy", "server"; the item (proxy#p3) holds
        # the option: the item carries the lead-in's words and is the one shipped
        decision, claim, cites = self.answer("Which command-line option makes pip connect through a proxy server?")
        self.assertEqual(decision, "ANSWER")
        self.assertIn("--proxy", claim)
        self.assertIn("proxy#p3", cites)

    def test_inline_code_for_an_option_question(self):
        # both sentences of caching#p1 hold every question word; the first comes first, the
        # second writes the option and is shipped
        decision, claim, cites = self.answer("Which option disables the caching of downloads?")
        self.assertEqual(decision, "ANSWER")
        self.assertIn("--no-cache-dir", claim)
        self.assertNotIn("higher level", claim)

    def test_definition_list_entry(self):
        decision, claim, cites = self.answer("What is the default of the urlize.rel policy?")
        self.assertEqual(decision, "ANSWER")
        self.assertIn("noopener", claim)
        self.assertEqual(cites, ["policies#p3"])

    def test_table_row(self):
        decision, claim, cites = self.answer("What is loop.revindex?")
        self.assertEqual(decision, "ANSWER")
        self.assertIn("number of iterations from the end", claim)
        self.assertEqual(cites, ["loop#p2"])

    def test_synopsis_line(self):
        # install#p2 is the one-line block, shipped as text; install#p3 (two lines) never is
        decision, claim, cites = self.answer("What is the command to install Widget with pip?")
        self.assertEqual(decision, "ANSWER")
        self.assertIn("pip install Widget", claim)
        self.assertIn("install#p2", cites)
        self.assertNotIn("install#p3", cites)

    def test_own_definition_preferred(self):
        # "A serializer wraps a signer ..." names the signer too; the signer's own definition wins
        decision, claim, cites = self.answer("What does the signer do?")
        self.assertEqual(decision, "ANSWER")
        self.assertIn("signs a given bytes value", claim)
        self.assertNotIn("wraps", claim)


#: issue 43's defect: a lead-in whose list shares no word with the question
GUIDE = {"guide.md": "# Output\n\nThe tool supports these output formats:\n\n- JSON lines for machines\n"
                     "- Markdown tables for people\n",
         "other.md": "# Install\n\nRun the installer to set up the tool on your machine.\n"}
GUIDE_RST = {"guide.rst": "Output\n======\n\nThe tool supports these output formats:\n\n* JSON lines for machines\n"
                          "* Markdown tables for people\n",
             "other.rst": "Install\n=======\n\nRun the installer to set up the tool on your machine.\n"}
STATUS = {"status.md": "# Exit status\n\nWhen it stops, the tool returns one of these codes:\n\n| code | meaning |\n"
                       "|---|---|\n| 0 | every file was read |\n| 3 | a file could not be parsed |\n",
          "other.md": GUIDE["other.md"]}
CERTS = {"certs.md": "# Certificates\n\nThe tool verifies certificates with the bundled certifi store by default.\n\n"
                     "In order to use system trust stores, you need to:\n\n- Use Python 3.10 or newer.\n"
                     "- Install the truststore package in the environment you run the tool in.\n",
         "other.md": GUIDE["other.md"]}

STEPS = {"setup.md": "# Setup\n\nTo set up the tool:\n\n1. Run the installer.\n2. Add the tool to your path.\n",
         "other.md": "# Output\n\nThe tool writes JSON lines.\n"}


def open_tree(pages):
    """A pipeline with its defaults over ``pages`` ({file name: text}) in a fresh folder."""
    from mini_rag.commands.runconfig import resolve
    from mini_rag.pipeline import open_pipeline
    tmp = tempfile.mkdtemp()
    docs = os.path.join(tmp, "docs")
    os.makedirs(docs)
    for name, text in pages.items():
        with open(os.path.join(docs, name), "w", encoding="utf-8") as fh:
            fh.write(text)
    with redirect_stderr(io.StringIO()):
        config = resolve(None, docs, os.path.join(tmp, "idx.json.gz"), quiet=True)
        return tmp, open_pipeline(config, quiet=True)


class LeadInLists(unittest.TestCase):
    """A retrieved lead-in brings its list into the evidence (retrieve.py step 7), and the
    lead-in is shipped with its items.  Each expected answer is read off the pages by hand:
    a lead-in is shipped with its best item (the items that hold no question word tie, and
    the first wins), the whole list when the question asks for a list."""

    def run_case(self, pages, question):
        tmp, pipeline = open_tree(pages)
        try:
            result = pipeline.answer(question)
        finally:
            shutil.rmtree(tmp)
        row = result.row
        cites = row["answer_json"].get("citations") or []
        # the scorer checks citations against the retrieved chunks
        self.assertTrue(set(cites) <= set(row["retrieved_ids"]), (cites, row["retrieved_ids"]))
        return row["decision"], row["answer_json"].get("claim") or "", cites, result.retrieval

    def test_lead_in_shipped_with_its_items(self):
        cases = [
            ("Markdown list", GUIDE, "Which output formats does the tool support?",
             "The tool supports these output formats: JSON lines for machines", ["guide#p1", "guide#p2"]),
            ("reST list", GUIDE_RST, "Which output formats does the tool support?",
             "The tool supports these output formats: JSON lines for machines", ["guide#p1", "guide#p2"]),
            ("Markdown table", STATUS, "What does the tool return when it stops?",
             "When it stops, the tool returns one of these codes: code: 0; meaning: every file was read",
             ["status#p1", "status#p2"]),
            # "Use Python 3.10 or newer." holds the question's "use": the best item
            ("the item holding a question word", CERTS, "What do I need in order to use system trust stores?",
             "In order to use system trust stores, you need to: Use Python 3.10 or newer.", ["certs#p2", "certs#p3"]),
        ]
        for name, pages, question, claim, cites in cases:
            with self.subTest(name):
                got = self.run_case(pages, question)
                self.assertEqual(got[:3], ("ANSWER", claim, cites))

    def test_whole_list_when_asked_for(self):
        # the list shipped whole reads as prose: no bullet or enumerator left (main kept
        # "... for machines - Markdown tables ...": only the first bullet was stripped)
        cases = [
            ("Markdown bullets", GUIDE, "List the output formats the tool supports.",
             "The tool supports these output formats: JSON lines for machines; Markdown tables for people",
             ["guide#p1", "guide#p2"]),
            ("reST bullets", GUIDE_RST, "List the output formats the tool supports.",
             "The tool supports these output formats: JSON lines for machines; Markdown tables for people",
             ["guide#p1", "guide#p2"]),
            # items ending with a period are sentences: one space between them
            ("numbered steps", STEPS, "What are the steps to set up the tool?",
             "To set up the tool: Run the installer. Add the tool to your path.", ["setup#p1", "setup#p2"]),
        ]
        for name, pages, question, claim, cites in cases:
            with self.subTest(name):
                self.assertEqual(self.run_case(pages, question)[:3], ("ANSWER", claim, cites))

    def test_extra_lead_in_comes_with_its_item_before_it(self):
        # the best sentence is the item "Use Python 3.10 or newer." (python, version); the
        # lead-in brings "system trust stores" as an extra sentence: it goes before its item
        # (main: "Use Python 3.10 or newer. In order to use system trust stores, you need to:")
        for question in ("Which Python version is needed to use system trust stores?",
                         "Which Python version is needed to use system trust stores with the tool?"):
            with self.subTest(question):
                self.assertEqual(self.run_case(CERTS, question)[:3], (
                    "ANSWER", "In order to use system trust stores, you need to: Use Python 3.10 or newer.",
                    ["certs#p2", "certs#p3"]))

    def test_joined_list_is_never_the_reason_to_answer(self):
        # the lead-in certs#p2 does not hold the question's key terms (release, default,
        # truststore); its list (certs#p3, "truststore") is joined, and read with the lead-in's
        # words it would cover them: it is on topic only when its lead-in is, so the refusal stands
        question = "In which release did using the system trust store (truststore) become the default instead of certifi?"
        decision, claim, cites, retrieval = self.run_case(CERTS, question)
        self.assertEqual(retrieval.joined, {"certs#p3": "certs#p2"})
        self.assertEqual((decision, cites), ("ABSTAIN", []))

    def test_retrieval_joins_the_list_after_its_lead_in(self):
        tmp, pipeline = open_tree(GUIDE)
        try:
            first = pipeline.retriever.retrieve("Which output formats does the tool support?")
            again = pipeline.retriever.retrieve("Which output formats does the tool support?")
        finally:
            shutil.rmtree(tmp)
        self.assertEqual([(h.chunk_id, h.rank) for h in first.hits], [("guide#p1", 1), ("guide#p2", 2)])
        self.assertEqual(first.joined, {"guide#p2": "guide#p1"})
        self.assertEqual(first.hits[1].similarity, first.hits[0].similarity)   # the lead-in's
        self.assertEqual(first.signals["hit_count"], 1)                         # the ranking's: one hit
        self.assertEqual(first.to_json(), again.to_json())


    def test_joined_list_never_displaces_a_ranked_hit(self):
        """Joined chunks come after every ranked hit, so the trace's ranks are the retriever's:
        here the lead-in (guide#p1) and the install page's sentence (other#p1) both match
        "tool", and the list the lead-in introduces (guide#p2) is third, not second."""
        pages = dict(GUIDE, **{"other.md": "# Install\n\nThe tool supports an installer that sets up output folders.\n"})
        tmp, pipeline = open_tree(pages)
        try:
            got = pipeline.retriever.retrieve("Which output formats does the tool support?")
        finally:
            shutil.rmtree(tmp)
        self.assertEqual([(h.chunk_id, h.rank) for h in got.hits],
                         [("guide#p1", 1), ("other#p1", 2), ("guide#p2", 3)])
        self.assertEqual(got.joined, {"guide#p2": "guide#p1"})

    def test_trace_scores_keep_the_ranking(self):
        """In the trace a joined chunk scores just below every score before it, so ordering by
        score (trec_eval's order, which score_eval.py uses when scores are not strictly
        decreasing) gives the retriever's ranking; its Hit keeps the lead-in's similarity."""
        import math
        pages = dict(GUIDE, **{"other.md": "# Install\n\nThe tool supports an installer that sets up output folders.\n"})
        tmp, pipeline = open_tree(pages)
        try:
            res = pipeline.answer("Which output formats does the tool support?")
        finally:
            shutil.rmtree(tmp)
        ids, scores = res.row["retrieved_ids"], res.row["retrieved_scores"]
        self.assertEqual(ids, ["guide#p1", "other#p1", "guide#p2"])
        self.assertEqual(scores[:2], [res.retrieval.hits[0].similarity, res.retrieval.hits[1].similarity])
        self.assertEqual(scores[2], math.nextafter(min(scores[:2]), 0.0))
        self.assertEqual(res.retrieval.hits[2].similarity, res.retrieval.hits[0].similarity)
        self.assertEqual([d for _, d in sorted(zip(scores, ids), reverse=True)], ids)


class ExtraLeadIn(unittest.TestCase):
    """Rule 6 for a lead-in as an extra sentence (``synthesize._add_extra``): added only with
    an item of its list, before it (the best item when none is chosen); the expected lists are
    read off by hand (item2 scores above item1)."""

    def test_table(self):
        from types import SimpleNamespace as S
        from mini_rag.answer.synthesize import _add_extra
        lead_text = "To use system trust stores, you need to:"
        unit = lambda text: S(text=text)
        lead = (0.8, 0, 0, unit(lead_text), 0.0)
        item1 = (0.5, 1, 0, unit("- Use Python 3.10 or newer."), 0.0)
        item2 = (0.6, 1, 1, unit("- Install truststore."), 0.0)
        other = (0.9, 2, 0, unit("Certificates are verified."), 0.0)

        def infos(listed):
            return [S(fact=S(pdf="a", chunk_id="a#p1"), units=[lead[3]], lead_in=""),
                    S(fact=S(pdf="a", chunk_id="a#p2"), units=[item1[3], item2[3]],
                      lead_in=lead_text if listed else ""),
                    S(fact=S(pdf="b", chunk_id="b#p1"), units=[other[3]], lead_in="")]
        cases = [
            # (name, chosen before, room, the list is the lead-in's, chosen after)
            ("best item appended after its lead-in", [other], 2, True, [other, lead, item2]),
            ("no room for both", [other], 1, True, [other]),
            ("an item chosen: the lead-in goes before it", [item1], 1, True, [lead, item1]),
            ("the first chosen item of its list", [other, item2, item1], 1, True, [other, lead, item2, item1]),
            ("no list: not added", [other], 2, False, [other]),
        ]
        for name, chosen, room, listed, expected in cases:
            with self.subTest(name):
                chosen = list(chosen)
                _add_extra(lead, chosen, [other, lead, item2, item1], infos(listed), object(), room)
                self.assertEqual(chosen, expected)
        chosen = [item2]                # any other extra sentence is appended, as before
        _add_extra(other, chosen, [other, lead, item2, item1], infos(True), object(), 1)
        self.assertEqual(chosen, [item2, other])


class ListProse(unittest.TestCase):
    """``shape.prose``: an answer's text of a Markdown or reST page with its list items joined
    into the line of their lead-in; each expected text is the input read by hand."""

    def test_items_read_as_prose(self):
        from mini_rag.text.shape import prose
        cases = [
            ("bullets after a lead-in", "The formats are:\n- JSON lines for machines\n- Markdown tables for people",
             "The formats are: JSON lines for machines; Markdown tables for people"),
            ("bullets alone", "- JSON lines\n- Markdown tables", "JSON lines; Markdown tables"),
            ("reST bullets", "* JSON lines\n* Markdown tables", "JSON lines; Markdown tables"),
            ("numbered sentences", "1. Use Python 3.10 or newer.\n2. Install the `truststore` package.",
             "Use Python 3.10 or newer. Install the truststore package."),
            ("a wrapped item", "- JSON lines for\n  machines\n- Markdown tables", "JSON lines for\nmachines; Markdown tables"),
            ("an item after prose keeps its line", "Run it.\n- JSON lines", "Run it.\nJSON lines"),
            ("prose lines stay lines", "A wrapped\nsentence with **bold**.", "A wrapped\nsentence with bold."),
        ]
        for name, text, expected in cases:
            with self.subTest(name):
                self.assertEqual(prose(text), expected)

    def test_text_form_and_claim(self):
        from types import SimpleNamespace as S
        from mini_rag.answer.synthesize import Answer, AnswerSentence, format_answer
        from mini_rag.trace import format_text
        sents = [AnswerSentence("The tool supports these output formats:", "guide", 1, "guide#p1"),
                 AnswerSentence("- JSON lines for machines\n- Markdown tables for people", "guide", 1, "guide#p2")]
        answer = Answer(sents, "High")
        self.assertEqual(answer.claim("no"), "The tool supports these output formats: "
                                             "JSON lines for machines; Markdown tables for people")
        self.assertEqual(answer.claim("no", markup=()), "The tool supports these output formats: "
                                                         "- JSON lines for machines\n- Markdown tables for people")
        expected = "2. JSON lines for machines; Markdown tables for people (guide, guide#p2)"
        self.assertEqual(format_answer(answer, "no", paged=()).splitlines()[2], expected)
        self.assertEqual(format_text("ANSWER", [S(**s.to_json()) for s in sents], "High", "no",
                                     paged=()).splitlines()[2], expected)


if __name__ == "__main__":
    unittest.main()
