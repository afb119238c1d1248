"""The WordNet reader (mini_rag/query/wordnet.py) on a synthetic database in WordNet's format.

tests/data/wordnet holds entries written for these tests (not an excerpt of WordNet).  Its
synsets, in sense order per lemma (tagged senses in brackets):

* verb: keep = [keep, retain] (tagged), then [hold, keep]; retain = [keep, retain];
  hold = [hold, keep]; disclose = [disclose, reveal, let_on] (``+`` disclose -> disclosure);
  retain's sense has ``+`` retain -> retention; verb.exc: kept -> keep;
* noun: share = [share, portion]; portion = [part, portion], then [share, portion];
  licence = [licence, license, permit] (licence: no tagged sense); court_order = [court_order, writ];
* adj: oral = [oral, verbal(a)].

Expected stems are Snowball English's, by hand: retain -> retain, retention -> retent,
hold -> hold, portion -> portion, licence -> licenc, license -> licens, permit -> permit,
writ -> writ, court -> court, order -> order, reveal -> reveal, let on -> let + on (on is a
stop word: let).
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mini_rag.errors import MiniRagError                                            # noqa: E402
from mini_rag.text.analysis import Analyzer                                         # noqa: E402
from mini_rag.query.synonyms import Synonym                                          # noqa: E402
from mini_rag.query.wordnet import (WordNet, configured_bridges, open_wordnet, spelling_variant,   # noqa: E402
                                    wordnet_bridges)

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "wordnet")
AN = Analyzer()


class Reader(unittest.TestCase):
    def setUp(self):
        self.wn = WordNet(DATA)
        self.addCleanup(self.wn.close)

    def test_senses_in_order_and_tagged(self):
        keep = self.wn.senses("v", "keep")
        self.assertEqual(len(keep), 2)
        self.assertEqual(self.wn.senses("v", "keep", tagged=True), keep[:1])
        self.assertEqual(self.wn.senses("v", "retain"), keep[:1])
        self.assertEqual(self.wn.senses("v", "hold"), keep[1:])
        self.assertEqual(self.wn.senses("n", "licence", tagged=True), ())
        self.assertEqual(self.wn.senses("n", "nothing"), ())
        self.assertEqual(self.wn.senses("n", "Bad Lemma"), ())

    def test_binary_search_finds_every_lemma_and_no_other(self):
        with open(os.path.join(DATA, "index.noun")) as f:
            lemmas = [line.split()[0] for line in f if not line.startswith(" ")]
        self.assertEqual(len(lemmas), 10)
        for lemma in lemmas:
            self.assertEqual(len(self.wn.senses("n", lemma)), 2 if lemma == "portion" else 1, lemma)
        for absent in ("a", "court", "court_orders", "zzz", "licencd", "portio"):
            self.assertEqual(self.wn.senses("n", absent), (), absent)

    def test_lemmas_morphology(self):
        self.assertEqual(self.wn.lemmas("kept"), [("v", "keep")])          # verb.exc
        self.assertEqual(self.wn.lemmas("keeps"), [("v", "keep")])         # -s
        self.assertEqual(self.wn.lemmas("retained"), [("v", "retain")])    # -ed
        self.assertEqual(self.wn.lemmas("shares"), [("n", "share")])
        self.assertEqual(self.wn.lemmas("Court Order"), [("n", "court_order")])
        self.assertEqual(self.wn.lemmas("unknown"), [])

    def test_related(self):
        self.assertEqual(self.wn.related("keep", 1), ("retain",))
        self.assertEqual(self.wn.related("keep", 2), ("retain", "hold"))
        self.assertEqual(self.wn.related("kept", 1, True), ("retain",))         # no + pointer from keep
        self.assertEqual(self.wn.related("retain", 1, True), ("keep", "retention"))
        self.assertEqual(self.wn.related("disclose", 1, True), ("reveal", "let on", "disclosure"))
        self.assertEqual(self.wn.related("verbal", 1), ("oral",))             # "verbal(a)": marker dropped
        self.assertEqual(self.wn.related("oral", 1), ("verbal",))

    def test_related_mutual_and_tagged(self):
        # share's sense [share, portion] is portion's second sense: one sense each keeps them apart
        self.assertEqual(self.wn.related("share", 1), ("portion",))
        self.assertEqual(self.wn.related("share", 1, mutual=True), ())
        self.assertEqual(self.wn.related("share", 2, mutual=True), ("portion",))
        self.assertEqual(self.wn.related("portion", 1, mutual=True), ("part",))
        # licence has no tagged sense, license and permit do; another spelling of the word
        # counts whatever its senses
        self.assertEqual(self.wn.senses("n", "licence", tagged=True), ())
        self.assertEqual(self.wn.related("licence", 1, tagged=True), ("license",))
        self.assertEqual(self.wn.related("license", 1, tagged=True), ("licence", "permit"))
        self.assertEqual(self.wn.related("license", 1, tagged=True, mutual=True), ("permit", "licence"))

    def test_spelling_variant(self):
        # difflib ratio 2M/T: licence/license M = 5 + 1, T = 14 -> 0.857; catalogue/catalog
        # 14/16 = 0.875; minimise/minimum 10/15 = 0.667; tag/tab: other first three letters;
        # holdfast/hold: four letters longer
        cases = [("licence", "license", True), ("catalogue", "catalog", True), ("adviser", "advisor", True),
                 ("minimise", "minimum", False), ("tag", "tab", False), ("holdfast", "hold", False),
                 ("court_order", "court_orders", False), ("keep", "keep", False)]
        for a, b, want in cases:
            self.assertEqual(spelling_variant(a, b), want, (a, b))


class Bridges(unittest.TestCase):
    def setUp(self):
        self.wn = WordNet(DATA)
        self.addCleanup(self.wn.close)

    def test_words_and_runs(self):
        q = "Must we disclose it under a court order?"
        b = wordnet_bridges(q, AN.analyze(q), AN, self.wn)
        self.assertEqual(sorted(b), ["court", "disclos", "order"])
        self.assertEqual(b["court"], [frozenset({"writ"})])
        self.assertEqual(b["order"], [frozenset({"writ"})])
        self.assertEqual(b["disclos"], [frozenset({"reveal"}), frozenset({"let"})])
        self.assertTrue(all(isinstance(a, Synonym) for alts in b.values() for a in alts))

    def test_only_question_terms(self):
        q = "How long do we keep logs?"
        b = wordnet_bridges(q, ["log"], AN, self.wn)
        self.assertEqual(b, {})
        b = wordnet_bridges(q, ["keep", "log"], AN, self.wn, senses=2, derived=True)
        self.assertEqual(b, {"keep": [frozenset({"retain"}), frozenset({"hold"})]})

    def test_configured(self):
        q = "Can we keep it?"
        self.assertEqual(configured_bridges(q, ["keep"], AN, {"wordnet": ""}), {})
        self.assertEqual(configured_bridges(q, ["keep"], AN, {"wordnet": DATA, "wordnet_senses": 2,
                                                               "wordnet_tagged": False, "wordnet_mutual": False}),
                         {"keep": [frozenset({"retain"}), frozenset({"hold"})]})


class Optional(unittest.TestCase):
    def test_auto_absent_is_none(self):
        with tempfile.TemporaryDirectory() as empty:
            old = os.environ.get("MINI_RAG_WORDNET")
            os.environ["MINI_RAG_WORDNET"] = empty
            try:
                self.assertIsNone(open_wordnet("auto"))
            finally:
                if old is None:
                    del os.environ["MINI_RAG_WORDNET"]
                else:
                    os.environ["MINI_RAG_WORDNET"] = old
        self.assertIsNone(open_wordnet(""))

    def test_named_folder_must_hold_a_database(self):
        with tempfile.TemporaryDirectory() as empty:
            with self.assertRaises(MiniRagError) as cm:
                open_wordnet(empty)
            self.assertIn("no WordNet database", str(cm.exception))
            with self.assertRaises(MiniRagError):
                open_wordnet(os.path.join(empty, "missing"))

    def test_bad_synset_line_names_file_and_byte(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in ("index.noun", "data.noun"):
                with open(os.path.join(DATA, name), "rb") as f:
                    data = f.read()
                if name == "data.noun":
                    data = data.replace(b" 02 share 0 portion 0 000 |", b" 0x share 0 portion 0 000 |")
                with open(os.path.join(tmp, name), "wb") as f:
                    f.write(data)
            wn = WordNet(tmp)
            self.addCleanup(wn.close)
            with self.assertRaises(MiniRagError) as cm:
                wn.related("share", 1)
            self.assertIn("data.noun: byte ", str(cm.exception))
            self.assertIn("not a synset line", str(cm.exception))

    def test_long_line_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "index.noun"), "w") as f:
                f.write("a n 1 0 1 0 00000000\n" + "b" * 70000 + " n 1 0 1 0 00000000\n")
            with open(os.path.join(tmp, "data.noun"), "w") as f:
                f.write("\n")
            wn = WordNet(tmp)
            self.addCleanup(wn.close)
            with self.assertRaises(MiniRagError) as cm:
                wn.senses("n", "c")
            self.assertIn("longer than", str(cm.exception))


class Pipeline(unittest.TestCase):
    def test_config_names_file_and_key(self):
        from mini_rag.config import check_setting
        self.assertEqual(check_setting("c.toml: [answer] wordnet", "answer", "wordnet", DATA), DATA)
        self.assertEqual(check_setting("c.toml: [answer] wordnet", "answer", "wordnet", "auto"), "auto")
        with tempfile.TemporaryDirectory() as empty:
            with self.assertRaises(MiniRagError) as cm:
                check_setting("c.toml: [answer] wordnet", "answer", "wordnet", empty)
        self.assertTrue(str(cm.exception).startswith("c.toml: [answer] wordnet must be"))

    def test_off_by_default(self):
        from mini_rag.config import DEFAULTS
        self.assertEqual(DEFAULTS["answer"]["wordnet"], "")

    def test_expansion_bridges_with_wordnet(self):
        from mini_rag.answer.relevance import expansion_bridges
        q = "Must we reveal the formula?"
        cfg = {"answer": {"wordnet": DATA, "wordnet_senses": 1, "wordnet_tagged": True, "wordnet_mutual": False,
                          "wordnet_derived": False}}
        self.assertEqual(expansion_bridges(q, cfg, AN).get("reveal"), [frozenset({"disclos"}), frozenset({"let"})])
        self.assertIsNone(expansion_bridges(q, {"answer": {}}, AN).get("reveal"))


if __name__ == "__main__":
    unittest.main()
