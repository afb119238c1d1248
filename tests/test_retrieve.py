"""The QA contract's retrieval rules (mini_rag/search/retrieve.py), each on a small fixture:
threshold, fallback and its gate, expansion merge, MMR order, scope filter, typo
correction, signals, determinism and the command line."""
import argparse
import contextlib
import copy
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from mini_rag.commands import cmd_retrieval
from mini_rag.text.analysis import Analyzer
from mini_rag.config import DEFAULTS
from mini_rag.errors import MiniRagError
from mini_rag.indexing.index import build_index
from mini_rag.records import Chunk
from mini_rag.search.retrieve import Retriever, osa_distance, typo_distance

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = str(ROOT / "tests" / "fixtures" / "corpus")
PLAIN = Analyzer(stopwords="none", stemmer="none")


def chunk(cid, text, **kw):
    return Chunk(chunk_id=cid, doc_id=cid.split("#")[0], ordinal=int(cid.split("#p")[1]),
                 page=kw.pop("page", 1), text=text, **kw)


def config(expansion=None, **retrieval):
    cfg = copy.deepcopy(DEFAULTS)
    cfg["retrieval"].update(retrieval)
    if expansion is not None:
        cfg["expansion"] = expansion
    return cfg


# The three-document corpus of test_index, with doc ids chosen for the fallback gate.
# Query "apple cherry": N = 3, avgdl = 3, k1 = 1.2, b = 0.75 (set explicitly in fruit_index,
# whatever the configured default, so that the values below stay hand-derived).
IDF_APPLE = math.log(1 + 2.5 / 1.5)
IDF_CHERRY = math.log(1 + 1.5 / 2.5)
CEILING = IDF_APPLE + IDF_CHERRY
SIM_D1 = IDF_APPLE * 2 * 2.2 / (2 + 1.2) / CEILING            # 0.9296...
SIM_D3 = IDF_CHERRY * 3 * 2.2 / (3 + 1.2 * 1.25) / CEILING    # 0.4751...
SIM_D2 = IDF_CHERRY * 2.2 / (1 + 1.2 * 0.75) / CEILING        # 0.3751...


def fruit_index(first_id="apple-notes"):
    return build_index([chunk(first_id + "#p0", "apple banana apple", authority="FDA",
                              effective="2024-01-15"),
                        chunk("d2#p0", "banana cherry", authority="EMA", effective="2020-03-01"),
                        chunk("d3#p0", "cherry cherry cherry date", authority="fda")], PLAIN, k1=1.2, b=0.75)


class Threshold(unittest.TestCase):
    def test_min_similarity(self):
        table = [(0.20, ["apple-notes#p0", "d3#p0", "d2#p0"]),
                 (0.40, ["apple-notes#p0", "d3#p0"]),
                 (0.50, ["apple-notes#p0"]),
                 (0.95, [])]
        for threshold, ids in table:
            with self.subTest(min_similarity=threshold):
                r = Retriever(fruit_index(), config(min_similarity=threshold, use_mmr=False,
                                                    fallback_min_similarity=0.99))
                result = r.retrieve("apple cherry")
                self.assertEqual([h.chunk_id for h in result.hits], ids)
                self.assertEqual(len(result.candidates), 3)       # before the threshold
                self.assertFalse(result.fallback_used)
                self.assertEqual(result.signals["threshold"], threshold)

    def test_similarity_values(self):
        r = Retriever(fruit_index(), config(use_mmr=False))
        sims = {h.chunk_id: h.similarity for h in r.retrieve("apple cherry").hits}
        self.assertAlmostEqual(sims["apple-notes#p0"], SIM_D1, places=12)
        self.assertAlmostEqual(sims["d3#p0"], SIM_D3, places=12)
        self.assertAlmostEqual(sims["d2#p0"], SIM_D2, places=12)

    def test_top_k_caps_candidates(self):
        r = Retriever(fruit_index(), config(top_k=2, use_mmr=False))
        result = r.retrieve("apple cherry")
        self.assertEqual([h.chunk_id for h in result.candidates], ["apple-notes#p0", "d3#p0"])


class Fallback(unittest.TestCase):
    # Nothing reaches 0.95; the top candidate (0.9296) reaches the fallback's 0.90.
    def run_case(self, doc_id, question="apple cherry", **kw):
        settings = dict(min_similarity=0.95, fallback_min_similarity=0.90, use_mmr=False)
        settings.update(kw)
        return Retriever(fruit_index(doc_id), config(**settings)).retrieve(question)

    def test_gate(self):
        table = [
            ("apple-notes", True),        # the question's term 'apple' is in the doc id
            ("fruit-notes", False),       # no question term names the document
            ("cherry_guide", True),       # '_' separates words in a doc id
        ]
        for doc_id, passes in table:
            with self.subTest(doc_id=doc_id):
                result = self.run_case(doc_id)
                self.assertEqual(result.fallback_used, passes)
                self.assertEqual([h.chunk_id for h in result.hits], [doc_id + "#p0"] if passes else [])
                self.assertEqual(result.signals["threshold"], 0.90 if passes else 0.95)

    def test_title_counts_as_document_name(self):
        index = build_index([chunk("x1#p0", "apple banana apple", title="Cherry Handbook"),
                             chunk("d2#p0", "banana cherry"), chunk("d3#p0", "cherry date")], PLAIN)
        # The title is indexed, so x1 reaches similarity 1.0: a threshold above 1 makes
        # sure nothing passes without the fallback.
        r = Retriever(index, config(min_similarity=1.5, fallback_min_similarity=0.10, use_mmr=False))
        result = r.retrieve("apple cherry")
        self.assertTrue(result.fallback_used)
        self.assertEqual(result.hits[0].chunk_id, "x1#p0")

    def test_top1_below_fallback_threshold(self):
        result = self.run_case("apple-notes", fallback_min_similarity=0.93)
        self.assertFalse(result.fallback_used)
        self.assertEqual(result.hits, [])

    def test_only_if_empty(self):
        # With a hit at 0.40 the fallback (0.30) is not tried ...
        result = self.run_case("apple-notes", min_similarity=0.40, fallback_min_similarity=0.30)
        self.assertEqual([h.chunk_id for h in result.hits], ["apple-notes#p0", "d3#p0"])
        self.assertFalse(result.fallback_used)
        # ... unless fallback_only_if_empty is false.
        result = self.run_case("apple-notes", min_similarity=0.40, fallback_min_similarity=0.30,
                               fallback_only_if_empty=False)
        self.assertEqual([h.chunk_id for h in result.hits], ["apple-notes#p0", "d3#p0", "d2#p0"])
        self.assertTrue(result.fallback_used)


class Expansion(unittest.TestCase):
    RULES = {"fruit": {"match": "red fruit", "add": ["cherry", "apple"]}}

    def test_variants_and_merge(self):
        r = Retriever(fruit_index(), config(expansion=self.RULES, use_mmr=False, typo_correction=False))
        # 'apple' is already in the question: only the 'cherry' variant runs ("if missing").
        self.assertEqual(r.expansions("Red  Fruit apple"), ["cherry apple"])
        self.assertEqual(r.expansions("red fruitcake"), [])        # whole words only
        self.assertEqual(r.expansions("RED FRUIT"), ["cherry", "apple"])
        result = r.retrieve("Red  Fruit apple")
        self.assertEqual(result.expansions, ["cherry apple"])
        by_id = {h.chunk_id: h for h in result.candidates}
        # d1 scores better for "cherry apple" (0.93) than for "red fruit apple", whose
        # unknown words 'red' and 'fruit' weigh in the denominator; d3 is only found by
        # the variant.  Each chunk appears once, with its best similarity and variant.
        self.assertEqual([h.chunk_id for h in result.candidates], ["apple-notes#p0", "d3#p0", "d2#p0"])
        self.assertAlmostEqual(by_id["apple-notes#p0"].similarity, SIM_D1, places=12)
        self.assertEqual(by_id["apple-notes#p0"].query, "cherry apple")
        self.assertEqual(by_id["d3#p0"].query, "cherry apple")
        original = {h.chunk_id: h for h in r.search("Red  Fruit apple", 5)}
        self.assertLess(original["apple-notes#p0"].similarity, SIM_D1)

    def test_default_contract_rule(self):
        r = Retriever(fruit_index(), config())
        self.assertEqual(r.expansions("What is continuous processing?"),
                         ["What is continuous manufacturing?", "What is ICH Q13?"])
        self.assertEqual(r.expansions("continuous processing per ICH Q13"),
                         ["continuous manufacturing per ICH Q13"])


class Alternatives(unittest.TestCase):
    """Derivational variants and synonyms in ranking, each at its share of the weight.

    Three chunks of two words (avgdl = 2, so the length norm is 1), k1 = 1.2, b = 0.75:
    a BM25 weight is idf * tf * 2.2 / (tf + 1.2).  N = 3; 'ticket' is in every chunk,
    'retent' and 'keep' in one each."""
    IDF_TICKET = math.log(1 + 0.5 / 3.5)
    IDF_ONE = math.log(1 + 2.5 / 1.5)               # df = 1
    IDF_NONE = math.log(1 + 3.5 / 0.5)              # df = 0 (a term the index lacks)

    def retriever(self, **weights):
        index = build_index([chunk("a#p0", "retent ticket"), chunk("b#p0", "ticket ticket"),
                             chunk("c#p0", "keep ticket")], PLAIN, k1=1.2, b=0.75)
        return Retriever(index, config(use_mmr=False, typo_correction=False, min_similarity=0.0, **weights))

    def scores(self, r, question):
        return {h.chunk_id: h.score for h in r.retrieve(question).candidates}

    def test_derivation_counts_at_its_share(self):
        t, one = self.IDF_TICKET, self.IDF_ONE
        plain = self.scores(self.retriever(derivation_weight=0.0, synonym_weight=0.0), "retain ticket")
        self.assertAlmostEqual(plain["a#p0"], t, places=12)
        self.assertAlmostEqual(plain["b#p0"], t * 2 * 2.2 / 3.2, places=12)
        r = self.retriever(derivation_weight=0.5, synonym_weight=0.0)
        result = r.retrieve("retain ticket")
        got = {h.chunk_id: h for h in result.candidates}
        # 'retain' is not indexed; its variant 'retent' (retain/retention) counts at 0.5.
        self.assertAlmostEqual(got["a#p0"].score, t + 0.5 * one, places=12)
        self.assertAlmostEqual(got["b#p0"].score, t * 2 * 2.2 / 3.2, places=12)
        self.assertAlmostEqual(got["c#p0"].score, t, places=12)
        # The similarity's denominator is still the question's own idf mass.
        self.assertAlmostEqual(got["a#p0"].similarity, (t + 0.5 * one) / (self.IDF_NONE + t), places=12)
        self.assertEqual([h.chunk_id for h in result.candidates], ["a#p0", "b#p0", "c#p0"])
        self.assertEqual(result.alternatives, {"retain": ["retent"]})
        self.assertAlmostEqual(self.scores(self.retriever(derivation_weight=1.0, synonym_weight=0.0),
                                           "retain ticket")["a#p0"], t + one, places=12)

    def test_synonym_and_its_derivation(self):
        t, one = self.IDF_TICKET, self.IDF_ONE
        r = self.retriever(derivation_weight=0.5, synonym_weight=0.5)
        # "keep" is in the keep/retain group; 'retain' is not indexed, its variant 'retent'
        # counts at 0.5 * 0.5; 'keep' itself matches c at full weight.
        result = r.retrieve("keep ticket")
        got = {h.chunk_id: h.score for h in result.candidates}
        self.assertAlmostEqual(got["a#p0"], t + 0.25 * one, places=12)
        self.assertAlmostEqual(got["c#p0"], t + one, places=12)
        self.assertEqual(result.alternatives, {"keep": ["retent"]})
        # A chunk holding the term and an alternative counts the larger, never both.
        self.assertAlmostEqual(self.scores(r, "retent ticket")["a#p0"], t + one, places=12)
        # Off: plain BM25.
        off = self.scores(self.retriever(derivation_weight=0.5, synonym_weight=0.0), "keep ticket")
        self.assertAlmostEqual(off["a#p0"], t, places=12)

    def test_search_stays_plain(self):
        r = self.retriever(derivation_weight=1.0, synonym_weight=1.0)
        self.assertAlmostEqual({h.chunk_id: h.score for h in r.search("retain ticket", 3)}["a#p0"],
                               self.IDF_TICKET, places=12)

    def test_bad_weight(self):
        for key, value in (("derivation_weight", 1.5), ("synonym_weight", -0.1), ("synonym_weight", True)):
            with self.subTest(key=key, value=value):
                with self.assertRaises(MiniRagError) as cm:
                    self.retriever(**{key: value})
                self.assertIn("[retrieval] %s must be a number from 0 to 1" % key, str(cm.exception))

    def test_clipped_ties_keep_score_order(self):
        # 'apple' once in a chunk of average length is exactly the reference: similarity
        # 1.0; twice scores higher and is clipped to 1.0 too.  The ranking's order stands
        # (z before a), not chunk_id order.
        index = build_index([chunk("z#p0", "apple apple banana"), chunk("a#p0", "apple banana cherry"),
                             chunk("m#p0", "cherry banana date")], PLAIN, k1=1.2, b=0.75)
        r = Retriever(index, config(use_mmr=False, typo_correction=False))
        result = r.retrieve("apple")
        self.assertEqual([(h.chunk_id, h.similarity) for h in result.candidates],
                         [("z#p0", 1.0), ("a#p0", 1.0)])


class NoDefinitionLookup(unittest.TestCase):
    """A question that only asks what a term is ranks as any other question."""

    def retriever(self, **kw):
        chunks = [chunk("hold#p1", "A legal hold stops deletion. Each legal hold names custodians, and a legal "
                                   "hold is released by Legal."),
                  chunk("hold#p2", "Legal reviews every legal hold. A legal hold lasts until released."),
                  chunk("gloss#p1", "**Legal hold**: an instruction from Legal to preserve records.",
                        authority="SOPS"),
                  chunk("other#p1", "Records are deleted after seven years.")]
        return Retriever(build_index(chunks, Analyzer(), k1=1.2, b=0.75),
                         config(use_mmr=False, typo_correction=True, top_k=2, **kw))

    def test_a_glossary_line_is_ranked_as_bm25_ranks_it(self):
        # "Definition lookup" (the glossary line put first for "What is X?") was removed in
        # session 11: it changed nothing on the external held-out halves.  Plain BM25 ranks
        # the glossary line third: the procedure paragraphs repeat the term.
        r = self.retriever()
        self.assertEqual([h.chunk_id for h in r.search("What is a legal hold?", 3)],
                         ["hold#p1", "hold#p2", "gloss#p1"])
        self.assertEqual([h.chunk_id for h in r.retrieve("What is a legal hold?").candidates],
                         ["hold#p1", "hold#p2"])
        self.assertFalse(hasattr(r, "definitions"))


class Mmr(unittest.TestCase):
    def index(self):
        # a and b are the same text (cosine 1); c has both query terms and two others.
        return build_index([chunk("a#p0", "apple cherry"), chunk("b#p0", "apple cherry"),
                            chunk("c#p0", "apple cherry date fig"), chunk("z#p0", "date fig kiwi")], PLAIN)

    def test_order(self):
        plain = Retriever(self.index(), config(use_mmr=False, min_similarity=0.0)).retrieve("apple cherry")
        self.assertEqual([h.chunk_id for h in plain.hits], ["a#p0", "b#p0", "c#p0"])
        mmr = Retriever(self.index(), config(use_mmr=True, mmr_lambda=0.6, min_similarity=0.0)).retrieve("apple cherry")
        self.assertEqual([h.chunk_id for h in mmr.hits], ["a#p0", "c#p0", "b#p0"])
        self.assertEqual([h.rank for h in mmr.hits], [1, 2, 3])
        # Why, by hand: N = 4, smoothed idf i3 = ln(5/4) + 1 (apple, cherry: df 3) and
        # i2 = ln(5/3) + 1 (date, fig: df 2); cos(a, c) = 2 i3^2 / (sqrt(2) i3 * sqrt(2 i3^2 + 2 i2^2)).
        i3, i2 = math.log(5 / 4) + 1, math.log(5 / 3) + 1
        cos_ac = 2 * i3 * i3 / (math.sqrt(2) * i3 * math.sqrt(2 * i3 * i3 + 2 * i2 * i2))
        s = {h.chunk_id: h.similarity for h in plain.hits}
        self.assertEqual((s["a#p0"], s["b#p0"]), (1.0, 1.0))   # clipped at 1
        # after a: b is worth 0.6 * 1 - 0.4 * 1, c is worth 0.6 * sim(c) - 0.4 * cos(a, c)
        self.assertGreater(0.6 * s["c#p0"] - 0.4 * cos_ac, 0.6 * 1.0 - 0.4 * 1.0)
        # lambda = 1 is pure relevance: similarity order again.
        pure = Retriever(self.index(), config(mmr_lambda=1.0, min_similarity=0.0)).retrieve("apple cherry")
        self.assertEqual([h.chunk_id for h in pure.hits], ["a#p0", "b#p0", "c#p0"])
        # lambda = 0.9: relevance dominates, b (1.0) beats c again: 0.9 - 0.1 > 0.9 * 0.84 - 0.1 * 0.63
        mild = Retriever(self.index(), config(mmr_lambda=0.9, min_similarity=0.0)).retrieve("apple cherry")
        self.assertEqual([h.chunk_id for h in mild.hits], ["a#p0", "b#p0", "c#p0"])


class Scope(unittest.TestCase):
    def test_authority_scope(self):
        table = [("MIXED", ["apple-notes#p0", "d3#p0", "d2#p0"]),
                 ("FDA", ["apple-notes#p0", "d3#p0"]),        # case-insensitive: 'fda' too
                 ("ema", ["d2#p0"]),
                 ("ICH", [])]
        for scope, ids in table:
            with self.subTest(scope=scope):
                r = Retriever(fruit_index(), config(authority_scope=scope, use_mmr=False, min_similarity=0.0))
                result = r.retrieve("apple cherry")
                self.assertEqual([h.chunk_id for h in result.hits], ids)
                self.assertEqual(result.scope, scope)


class Typos(unittest.TestCase):
    def setUp(self):
        chunks = [chunk("r#p0", "The refund window for annual plans is 30 days."),
                  chunk("r#p1", "Refund requests need the invoice number."),
                  chunk("s#p0", "Quarterly access reviews are required for production."),
                  chunk("s#p1", "Requirements for Q13 and WH-12 codes.")]
        self.r = Retriever(build_index(chunks, Analyzer()), config())

    def test_corrections(self):
        table = [
            ("refnud", {"refnud": "refund"}),                    # adjacent swap: 1 edit
            ("windw", {"windw": "window"}),                      # deletion
            ("requiremnts", {"requiremnts": "requir"}),          # compared before stemming
            ("quartrely reveiws", {"quartrely": "quarter", "reveiws": "review"}),  # 8+ chars: 2 edits
            ("whta", {"whta": ""}),                              # a stopword's typo: dropped
            ("rfnd", {}),                                        # 2 edits on 4 chars: too far
            ("abc", {}),                                         # under 4 characters
            ("q14", {}),                                         # codes are never changed
            ("wh-13", {}),
            ("refund", {}),                                      # known: unchanged
        ]
        for question, corrections in table:
            with self.subTest(question=question):
                result = self.r.retrieve(question)
                self.assertEqual(result.corrections, corrections)

    def test_query_terms_after_correction(self):
        result = self.r.retrieve("Whta is the refnud windw?")
        self.assertEqual(result.query_terms, ["refund", "window"])
        self.assertEqual(result.hits[0].chunk_id, "r#p0")

    def test_osa_distance(self):
        table = [("refund", "refund", 0), ("refnud", "refund", 1), ("rfund", "refund", 1),
                 ("refundd", "refund", 1), ("rfnud", "refund", 2), ("abc", "xyz", 3),
                 ("", "ab", 2)]
        for a, b, d in table:
            with self.subTest(a=a, b=b):
                self.assertEqual(osa_distance(a, b, limit=2), min(d, 3))

    def test_typo_distance(self):
        # (typed, word, expected with limit 2; 3 means "more than 2")
        table = [("refnud", "refund", 1),      # swap
                 ("rfund", "refund", 1),       # deletion after the first character
                 ("refnd", "refund", 1),       # deletion
                 ("refundd", "refund", 1),     # duplication
                 ("refumd", "refund", 1),      # m and n are neighbours
                 ("refupd", "refund", 3),      # p is not next to n: no slip, nor a missing + an extra p
                 ("seperate", "separate", 2),  # one vowel for another: a spelling slip costs 2
                 ("properly", "property", 3),  # l is far from t: a different word
                 ("propertly", "property", 1), # an extra character
                 ("erfund", "refund", 1),      # first two swapped
                 ("efund", "refund", 3),       # first character lost
                 ("fast", "last", 3), ("tell", "well", 3),   # real words, first letter differs
                 ("leak", "lead", 3)]                          # k/d are not neighbours
        for typed, word, d in table:
            with self.subTest(typed=typed, word=word):
                self.assertEqual(typo_distance(typed, word, limit=2), d)

    def test_real_words_are_not_slips(self):
        chunks = [chunk("a#p0", "The last window is open."), chunk("a#p1", "Logs are well kept.")]
        r = Retriever(build_index(chunks, Analyzer()), config())
        self.assertEqual(r.retrieve("How fast can we tell?").corrections, {})
        self.assertEqual(r.retrieve("Is the lats window open?").corrections, {"lats": "last"})

    def test_disabled(self):
        self.r.config["retrieval"]["typo_correction"] = False
        self.assertEqual(self.r.retrieve("refnud").corrections, {})


class Signals(unittest.TestCase):
    def test_signals(self):
        r = Retriever(fruit_index(), config(use_mmr=False))
        s = r.retrieve("apple cherry").signals
        self.assertAlmostEqual(s["max"], SIM_D1, places=12)
        self.assertAlmostEqual(s["mean"], (SIM_D1 + SIM_D3 + SIM_D2) / 3, places=12)
        self.assertAlmostEqual(s["gap"], SIM_D1 - SIM_D3, places=12)
        self.assertEqual(s["hit_count"], 3)
        self.assertEqual((s["oldest_effective"], s["newest_effective"], s["as_of"]),
                         ("2020-03-01", "2024-01-15", "2026-11-01"))
        # 2020-03-01 -> 2026-11-01: 2020-03-01..2026-03-01 is 6 years with leap days of
        # 2024 (2020's Feb 29 is before Mar 1): 6 * 365 + 1; then Mar..Oct = 245 days.
        self.assertEqual(s["oldest_age_days"], 6 * 365 + 1 + (31 + 30 + 31 + 30 + 31 + 31 + 30 + 31))

    def test_empty(self):
        r = Retriever(fruit_index(), config())
        result = r.retrieve("zebra")
        self.assertEqual(result.hits, [])
        s = result.signals
        self.assertEqual((s["max"], s["mean"], s["gap"], s["hit_count"], s["oldest_effective"]),
                         (0.0, 0.0, None, 0, None))

    def test_json_round_trip(self):
        result = Retriever(fruit_index(), config()).retrieve("apple cherry")
        from mini_rag.records import Retrieval
        self.assertEqual(Retrieval.from_json(json.loads(json.dumps(result.to_json()))), result)


def _cli(argv):
    parser = argparse.ArgumentParser(prog="mini_rag")
    cmd_retrieval.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = args.func(args)
        except MiniRagError as exc:
            print("mini_rag: %s" % exc, file=sys.stderr)
            code = 2
    return code, out.getvalue(), err.getvalue()


class CommandLine(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.index = os.path.join(self.tmp.name, "i.json.gz")

    def tearDown(self):
        self.tmp.cleanup()

    def test_index_and_search(self):
        code, out, err = _cli(["index", "--corpus", FIXTURE, "--index", self.index, "--quiet"])
        self.assertEqual((code, err), (0, ""))
        self.assertIn("3 documents, 14 chunks", out)
        code, out, err = _cli(["search", "refund purchase date", "--corpus", FIXTURE,
                               "--index", self.index, "--json", "--k", "2"])
        self.assertEqual(code, 0)
        hits = json.loads(out)
        self.assertEqual([h["chunk_id"] for h in hits][:1], ["alpha-guide#p1"])
        self.assertEqual(len(hits), 2)
        code, out, err = _cli(["search", "continuous processing", "--corpus", FIXTURE,
                               "--index", self.index, "--contract", "--json"])
        result = json.loads(out)
        self.assertEqual(result["expansions"], ["continuous manufacturing", "ICH Q13"])
        self.assertEqual(result["hits"][0]["doc_id"], "gamma-note")

    def test_errors(self):
        missing = os.path.join(self.tmp.name, "none")
        table = [
            (["index", "--corpus", missing, "--index", self.index], "%s: corpus not found" % missing),
            (["search", "x", "--corpus", FIXTURE, "--index", self.index, "--k", "0"], "--k must be from 1 to 10000, got 0"),
            (["index", "--corpus", FIXTURE, "--config", missing], "%s: cannot read config" % missing),
        ]
        for argv, message in table:
            with self.subTest(argv=argv):
                code, out, err = _cli(argv)
                self.assertEqual(code, 2)
                self.assertEqual(out, "")
                self.assertIn(message, err)

    def test_every_flag_has_help(self):
        parser = argparse.ArgumentParser(prog="mini_rag")
        sub = parser.add_subparsers()
        cmd_retrieval.register(sub)
        for name, p in sub.choices.items():
            for action in p._actions:
                with self.subTest(command=name, flag=action.dest):
                    self.assertTrue(action.help, "%s %s has no help" % (name, action.dest))


class Determinism(unittest.TestCase):
    def test_same_output_whatever_the_hash_seed(self):
        code = ("import json, sys; sys.path.insert(0, %r)\n"
                "from mini_rag.config import load_config\n"
                "from mini_rag.text.corpus import load_chunks\n"
                "from mini_rag.indexing.index import build_index\n"
                "from mini_rag.search.retrieve import Retriever\n"
                "r = Retriever(build_index(load_chunks(%r)), load_config())\n"
                "print(json.dumps([r.retrieve(q).to_json() for q in "
                "['refund within 30 days', 'continuous processing', 'data requsts', 'audit logs']]))\n"
                % (str(ROOT), FIXTURE))
        outs = set()
        for seed in ("0", "1", "12345"):
            env = dict(os.environ, PYTHONHASHSEED=seed)
            outs.add(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                    stdout=subprocess.PIPE).stdout)
        self.assertEqual(len(outs), 1)


if __name__ == "__main__":
    unittest.main()


class TopK(unittest.TestCase):
    """``Retriever._top`` (sampled threshold, then C-level sorts) against the definition:
    sort every accumulator on (score descending, chunk_id ascending), keep k."""

    def test_matches_full_sort(self):
        import random
        n_chunks = 3000
        chunks = [chunk("d%04d#p0" % ((i * 7919) % n_chunks), "w%d" % (i % 50)) for i in range(n_chunks)]
        r = Retriever(build_index(chunks, PLAIN), config())
        cid = [c.chunk_id for c in r.index.chunks]
        rng = random.Random(3)
        for n, k, levels in ((3000, 100, 1000000), (3000, 100, 7), (2500, 10, 50), (900, 200, 3),
                             (150, 100, 40), (50, 100, 5), (3000, 1, 2), (3000, 3000, 9)):
            # Few distinct levels make many ties, at the cut too; insertion order is shuffled.
            positions = rng.sample(range(n_chunks), n)
            acc = {p: float(rng.randrange(levels)) / 8 for p in positions}
            expected = sorted(acc.items(), key=lambda ps: (-ps[1], cid[ps[0]]))[:k]
            with self.subTest(n=n, k=k, levels=levels):
                self.assertEqual(r._top(acc, k), expected)
        self.assertEqual(r._top({}, 5), [])
        self.assertEqual(r._top({1: 1.0}, 0), [])

    def test_rank_is_rank_terms_without_similarity(self):
        r = Retriever(fruit_index(), config())
        for terms in (["apple", "cherry"], ["cherry", "cherry", "banana"], ["kiwi"], []):
            with self.subTest(terms=terms):
                self.assertEqual(r.rank(terms, 3), [(p, s) for p, s, _sim in r.rank_terms(terms, 3)])
        # Scope filter applies to rank too: only the FDA chunks (d1, d3), case-insensitive.
        self.assertEqual([r.index.chunks[p].chunk_id for p, _ in r.rank(["cherry", "apple"], 3, "fda")],
                         ["apple-notes#p0", "d3#p0"])
