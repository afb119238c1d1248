"""Tests for mini_rag.text.analysis: tokenizer rule, stop list, Analyzer, manifest settings.

Expected tokens are derived by hand from the rule in the analysis module docstring
(the step is named in each row).  Expected stems come from the published Porter2
rules (tests/test_stem.py checks the stemmer itself against the official list).
"""

from __future__ import annotations

import doctest
import importlib
import json
import os
import subprocess
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mini_rag.text.analysis import (  # noqa: E402
    ENGLISH_STOPWORDS,
    TOKEN_PATTERN,
    TOKENIZER_VERSION,
    Analyzer,
    content_terms,
    tokenize,
)
from mini_rag.errors import MiniRagError  # noqa: E402
from mini_rag.text.stem import ALGORITHM  # noqa: E402


def data_dir() -> Path:
    env = os.environ.get("MINI_RAG_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


# (text, expected tokens, rule)
TOKENIZE_TABLE = [
    ("", [], "empty text"),
    ("  \n\t ", [], "only separators"),
    ("Hello, World!", ["hello", "world"], "case-fold, punctuation separates"),
    # Codes: a group containing a digit is one token.
    ("WH-12", ["wh-12"], "code with -"),
    ("2-8", ["2-8"], "range/code of digits"),
    ("ISO-27001", ["iso-27001"], "code"),
    ("GDPR-17", ["gdpr-17"], "code"),
    ("Q13", ["q13"], "letters+digits run"),
    ("ICH Q13", ["ich", "q13"], "two tokens"),
    ("SARS-CoV-2", ["sars-cov-2"], "any part with a digit keeps the whole group"),
    ("24/7 support", ["24/7", "support"], "code with /"),
    ("v1.2.3", ["v1.2.3"], "code with ."),
    ("2024-01-15", ["2024-01-15"], "date is one code token"),
    ("covid-19's", ["covid-19's"], "inner apostrophe stays in the token"),
    # Numbers.
    ("2.5", ["2.5"], "decimal point"),
    ("1,000", ["1000"], "thousands comma removed"),
    ("1,000,000.50", ["1000000.50"], "several thousands commas"),
    ("99.9%", ["99.9"], "% is a separator"),
    ("$1,250", ["1250"], "currency sign is a separator"),
    ("2,5", ["2", "5"], "decimal comma is a separator (not 3 digits)"),
    ("1,2345", ["1", "2345"], "comma followed by 4 digits is a separator"),
    ("a,b", ["a", "b"], "comma between letters separates"),
    ("version 2.", ["version", "2"], "a trailing . is not a joiner"),
    ("-5", ["5"], "a leading - is not a joiner"),
    # Plain alphabetic groups split at - / .
    ("non-refundable", ["non", "refundable"], "hyphenated word split"),
    ("and/or", ["and", "or"], "slash split"),
    ("e.g.", ["e", "g"], "abbreviation split"),
    ("state-of-the-art", ["state", "of", "the", "art"], "many parts"),
    ("a--b", ["a", "b"], "two joiners in a row separate"),
    ("snake_case", ["snake", "case"], "underscore separates"),
    # Apostrophes.
    ("customer's", ["customer's"], "inner apostrophe kept"),
    ("customer\u2019s", ["customer's"], "curly apostrophe normalized"),
    ("don\u02bct", ["don't"], "modifier apostrophe normalized"),
    ("\u2018quoted\u2019", ["quoted"], "apostrophes at the ends dropped"),
    ("customers'", ["customers"], "trailing apostrophe dropped"),
    ("rock'n'roll", ["rock'n'roll"], "several inner apostrophes"),
    # Short tokens are never dropped by the tokenizer.
    ("a I x 7", ["a", "i", "x", "7"], "1-character tokens kept"),
    # Unicode.
    ("Café", ["café"], "letters with accents"),
    ("Cafe\u0301", ["café"], "NFKC composes e + combining acute"),
    ("\uff31\uff11\uff13", ["q13"], "fullwidth letters/digits (NFKC)"),
    ("\ufb01nance", ["finance"], "ligature fi (NFKC)"),
    ("Straße", ["strasse"], "casefold ß -> ss"),
    ("x\u00b2", ["x2"], "superscript two (NFKC)"),
    ("\u0939\u093f\u0928\u094d\u0926\u0940 \u092d\u093e\u0937\u093e",
     ["\u0939\u093f\u0928\u094d\u0926\u0940", "\u092d\u093e\u0937\u093e"],
     "combining marks continue a word (Devanagari)"),
    ("\u041c\u043e\u0441\u043a\u0432\u0430", ["\u043c\u043e\u0441\u043a\u0432\u0430"],
     "Cyrillic case-folded"),
    ("°C", ["c"], "degree sign separates"),
]


class TokenizeTest(unittest.TestCase):
    def test_table(self):
        for text, expected, rule in TOKENIZE_TABLE:
            with self.subTest(text=text, rule=rule):
                self.assertEqual(tokenize(text), expected)

    def test_lowercase_false_keeps_case(self):
        self.assertEqual(tokenize("WH-12 Café", lowercase=False), ["WH-12", "Café"])

    def test_rejects_non_str(self):
        with self.assertRaises(MiniRagError) as ctx:
            tokenize(b"bytes")
        self.assertEqual(str(ctx.exception), "tokenize: text must be a str, got bytes")


class StopwordTest(unittest.TestCase):
    def test_snowball_list(self):
        # The Snowball English stop.txt has 174 uncommented entries.
        self.assertEqual(len(ENGLISH_STOPWORDS), 174)
        self.assertIsInstance(ENGLISH_STOPWORDS, frozenset)
        rows = [
            ("the", True), ("and", True), ("not", True), ("no", True), ("nor", True),
            ("don't", True), ("there's", True), ("would", True), ("ought", True),
            ("us", False),      # United States
            ("will", False), ("can", False), ("may", False), ("must", False),
            ("never", False),   # commented out upstream
            ("refund", False),
        ]
        for word, is_stop in rows:
            with self.subTest(word=word):
                self.assertEqual(word in ENGLISH_STOPWORDS, is_stop)

    def test_all_lower_case_and_tokenizable(self):
        # A stopword the tokenizer can never produce would be dead weight.
        for word in sorted(ENGLISH_STOPWORDS):
            with self.subTest(word=word):
                self.assertEqual(tokenize(word), [word])


class AnalyzeTest(unittest.TestCase):
    def test_end_to_end(self):
        rows = [
            # (settings, text, expected terms)
            ({}, "The customer's refunds were not processed",
             ["custom", "refund", "process"]),
            ({}, "Refunds: 2 refunded orders, 1,000 units (WH-12).",
             ["refund", "2", "refund", "order", "1000", "unit", "wh-12", "wh", "12"]),
            # Code parts (step 5): after the whole code, its parts through steps 2-4.
            ({}, "p53-dependent apoptosis", ["p53-dependent", "p53", "depend", "apoptosi"]),
            ({}, "ISO/IEC-27001 and the-12", ["iso/iec-27001", "iso", "iec", "27001",
                                            "the-12", "12"]),
            ({}, "x.y-12", ["x.y-12", "x", "y", "12"]),
            ({}, "v1.2.3 2.5 1,000", ["v1.2.3", "2.5", "1000"]),
            ({"code_parts": False}, "p53-dependent WH-12", ["p53-dependent", "wh-12"]),
            ({"min_token_len": 2}, "WH-12 x-1", ["wh-12", "wh", "12", "x-1"]),
            ({}, "Non-refundable generously", ["non", "refund", "generous"]),
            ({}, "COVID-19's spread", ["covid-19", "covid", "19", "spread"]),
            ({"code_parts": False}, "COVID-19's spread", ["covid-19", "spread"]),
            ({"stemmer": "none"}, "COVID-19's", ["covid-19's", "covid", "19's"]),
            ({}, "ICH Q13 continuous manufacturing", ["ich", "q13", "continu", "manufactur"]),
            ({}, "It’s the universities’ policy", ["universiti", "polici"]),
            # Stopwords go before stemming: "under" is dropped, "underlying" stems to it.
            ({}, "under the underlying", ["under"]),
            ({"stopwords": "none"}, "the refunds", ["the", "refund"]),
            ({"stemmer": "none"}, "the refunds", ["refunds"]),
            ({"stopwords": "none", "stemmer": "none", "code_parts": False}, "The WH-12 pumps",
             ["the", "wh-12", "pumps"]),
            ({"min_token_len": 3}, "an ox at 42 jumped 100",
             ["jump", "100"]),
            ({"lowercase": False}, "Refunds refunds THE",
             ["Refunds", "refund"]),
        ]
        for kwargs, text, expected in rows:
            with self.subTest(settings=kwargs, text=text):
                self.assertEqual(Analyzer(**kwargs).analyze(text), expected)

    def test_cache_does_not_change_results(self):
        text = "Refunds refunded; refunding WH-12 and wh-12's non-refundable items."
        expected = Analyzer().analyze(text)
        small = Analyzer()
        small.CACHE_SIZE = 2  # forces clear-when-full on every few tokens
        for _ in range(3):
            self.assertEqual(small.analyze(text), expected)
            self.assertLessEqual(len(small._cache), 2)

    def test_call_is_analyze(self):
        a = Analyzer()
        self.assertEqual(a("refunds"), a.analyze("refunds"))

    def test_content_terms(self):
        self.assertEqual(content_terms("Refund the refunded order, refund!"), ["refund", "order"])
        self.assertEqual(content_terms("The the", Analyzer(stopwords="none")), ["the"])

    def test_rejects_non_str(self):
        with self.assertRaises(MiniRagError) as ctx:
            Analyzer().analyze(None)
        self.assertEqual(str(ctx.exception), "analyze: text must be a str, got NoneType")

    def test_same_terms_under_any_hash_seed(self):
        code = ("import json, sys; sys.path.insert(0, sys.argv[1]);"
                "from mini_rag.text.analysis import Analyzer, ENGLISH_STOPWORDS;"
                "a = Analyzer();"
                "print(json.dumps([a.analyze('The refunds of WH-12, 1,000 units and cafés'),"
                " a.settings(), sorted(ENGLISH_STOPWORDS)]))")
        outputs = set()
        for seed in ("0", "1", "12345"):
            env = dict(os.environ, PYTHONHASHSEED=seed)
            proc = subprocess.run([sys.executable, "-c", code, str(ROOT)], env=env,
                                  capture_output=True, text=True, check=True)
            outputs.add(proc.stdout)
        self.assertEqual(len(outputs), 1)


class SettingsTest(unittest.TestCase):
    def test_defaults_recorded(self):
        s = Analyzer().settings()
        self.assertEqual(s["tokenizer"], TOKENIZER_VERSION)
        self.assertEqual(s["token_pattern"], TOKEN_PATTERN)
        self.assertEqual(s["normalization"], "NFKC")
        self.assertIs(s["lowercase"], True)
        self.assertEqual(s["min_token_len"], 1)
        self.assertEqual(s["stopwords"], "english")
        self.assertEqual(s["stopwords_count"], 174)
        self.assertEqual(len(s["stopwords_sha256"]), 64)
        self.assertEqual(s["stemmer"], "english")
        self.assertEqual(s["stemmer_version"], ALGORITHM)
        self.assertEqual(Analyzer(stemmer="none").settings()["stemmer_version"], None)
        self.assertEqual(Analyzer(stopwords="none").settings()["stopwords_count"], 0)
        self.assertIs(s["code_parts"], True)

    def test_round_trip_through_json(self):
        for kwargs in ({}, {"stopwords": "none"}, {"stemmer": "none"},
                       {"lowercase": False, "min_token_len": 2}, {"code_parts": False}):
            with self.subTest(settings=kwargs):
                a = Analyzer(**kwargs)
                restored = Analyzer.from_settings(json.loads(json.dumps(a.settings())))
                self.assertEqual(restored, a)
                self.assertEqual(restored.settings(), a.settings())
                self.assertEqual(repr(restored), repr(a))

    def test_minimal_settings_accepted(self):
        a = Analyzer.from_settings({"lowercase": True, "stopwords": "none",
                                    "stemmer": "english", "min_token_len": 1,
                                    "code_parts": True})
        self.assertEqual(a, Analyzer(stopwords="none"))

    def test_mismatches_reported(self):
        good = Analyzer().settings()
        rows = [
            ({"stemmer_version": "snowball-english-2.2.0"},
             "analysis setting 'stemmer_version' was 'snowball-english-2.2.0' when the index "
             f"was built, this mini_rag uses {ALGORITHM!r}; rebuild the index"),
            ({"tokenizer": "mini_rag-tokenizer-0"},
             "analysis setting 'tokenizer' was 'mini_rag-tokenizer-0' when the index was "
             f"built, this mini_rag uses {TOKENIZER_VERSION!r}; rebuild the index"),
            ({"stopwords_sha256": "0" * 64},
             f"analysis setting 'stopwords_sha256' was {'0' * 64!r} when the index was "
             f"built, this mini_rag uses {good['stopwords_sha256']!r}; rebuild the index"),
            ({"colour": "red"}, "unknown analysis setting 'colour'"),
            ({"stemmer": "porter"},
             "analysis setting 'stemmer' must be one of 'english', 'none', got 'porter'"),
            ({"stopwords": "lucene"},
             "analysis setting 'stopwords' must be one of 'english', 'none', got 'lucene'"),
            ({"min_token_len": 0},
             "analysis setting 'min_token_len' must be an integer >= 1, got 0"),
            ({"min_token_len": True},
             "analysis setting 'min_token_len' must be an integer >= 1, got True"),
            ({"lowercase": "yes"},
             "analysis setting 'lowercase' must be true or false, got 'yes'"),
            ({"code_parts": 1},
             "analysis setting 'code_parts' must be true or false, got 1"),
        ]
        for change, message in rows:
            with self.subTest(change=change):
                with self.assertRaises(MiniRagError) as ctx:
                    Analyzer.from_settings(dict(good, **change))
                self.assertEqual(str(ctx.exception), message)

    def test_all_problems_reported_together(self):
        with self.assertRaises(MiniRagError) as ctx:
            Analyzer.from_settings({"lowercase": True, "zeta": 1, "alpha": 2})
        self.assertEqual(str(ctx.exception).split("\n"), [
            "unknown analysis setting 'alpha'",
            "unknown analysis setting 'zeta'",
            "missing analysis setting 'stopwords'",
            "missing analysis setting 'stemmer'",
            "missing analysis setting 'min_token_len'",
            "missing analysis setting 'code_parts'",
        ])

    def test_not_a_dict(self):
        with self.assertRaises(MiniRagError) as ctx:
            Analyzer.from_settings(["english"])
        self.assertEqual(str(ctx.exception), "analysis settings must be a JSON object, got list")

    def test_error_class_is_value_error(self):
        with self.assertRaises(ValueError):
            Analyzer(stemmer="porter")


class SciFactInvariantsTest(unittest.TestCase):
    """Properties that must hold on real text (first 300 SciFact documents)."""

    @classmethod
    def setUpClass(cls):
        path = data_dir() / "beir" / "scifact" / "corpus.jsonl"
        if not path.is_file():
            raise unittest.SkipTest(f"SciFact corpus not found at {path} (set MINI_RAG_DATA)")
        cls.texts = []
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                doc = json.loads(line)
                cls.texts.append(doc["title"] + "\n" + doc["text"])
                if len(cls.texts) == 300:
                    break

    def test_invariants(self):
        a = Analyzer(code_parts=False)
        for i, text in enumerate(self.texts):
            tokens = tokenize(text)
            terms = a.analyze(text)
            with self.subTest(doc=i):
                self.assertTrue(all(tokens), "no empty token")
                self.assertTrue(all(t == t.casefold() for t in tokens), "tokens case-folded")
                self.assertFalse([t for t in tokens if t[0] in "-/.,'" or t[-1] in "-/.,'"],
                                 "no token starts or ends with a joiner or apostrophe")
                # Stopwords are removed before stemming, so a stem may equal one
                # ("underlying" -> "under"); what must hold is one term per kept token.
                kept = [t for t in tokens if t not in ENGLISH_STOPWORDS]
                self.assertEqual(len(terms), len(kept), "one term per non-stopword token")
                self.assertEqual(Analyzer(stopwords="none", stemmer="none", code_parts=False).analyze(text),
                                 tokens, "analyze without filters is tokenize")
                self.assertEqual(a.analyze(text), terms, "repeatable (cache warm)")


class DocstringExamplesTest(unittest.TestCase):
    def test_doctests(self):
        result = doctest.testmod(importlib.import_module("mini_rag.text.analysis"), verbose=False)
        self.assertGreater(result.attempted, 0)
        self.assertEqual(result.failed, 0)


if __name__ == "__main__":
    unittest.main()


class FastPathMatchesRule(unittest.TestCase):
    """``Analyzer.analyze`` splits on white space and caches per piece; these tests compare
    it with the rule applied directly (``_TOKEN_RE`` over the whole normalized text, then
    steps 2-5 per match), an independent path through the same definitions."""

    @staticmethod
    def reference(analyzer, text):
        from mini_rag.text import analysis
        out = []
        for raw in analysis._TOKEN_RE.findall(analysis._normalize(text, analyzer.lowercase)):
            out.extend(analyzer._terms_of(raw))
        return out

    def test_tricky_texts(self):
        rows = [
            "(WH-12), 'quoted' text; 1,000. and 1, 000 or 2,5%",
            "e.g. -5 x--y co-op's covid-19's non-refundable/and/or 24/7.",
            "Q13—ICH Q13… «continuous» “manufacturing” [ISO-27001]: p53-dependent?!",
            "It’s don't 'tis o'neill's ''double'' ...dots... ,comma-led 3.14.",
            "मनुष्य के अधिकार\u00a0العَرَبِيَّة café\u2003naïve ＱＡ ﬁne ² Straße",
            "under_score a_b 1_2 #hash @at $5.00 50% x^2 a+b=c ~tilde |pipe| \\back`tick`",
            "",
            "   \t\n ",
        ]
        settings = [{}, {"stopwords": "none", "stemmer": "none"}, {"lowercase": False},
                    {"code_parts": False, "min_token_len": 2}]
        for kwargs in settings:
            analyzer = Analyzer(**kwargs)
            for text in rows:
                with self.subTest(settings=kwargs, text=text):
                    expected = self.reference(Analyzer(**kwargs), text)
                    self.assertEqual(analyzer.analyze(text), expected)
                    self.assertEqual(analyzer.analyze(text), expected)   # second time: cached

    def test_every_white_space_character_separates(self):
        # No token match can cross white space, so splitting on it first is exact.
        from mini_rag.text import analysis
        spaces = [chr(cp) for cp in range(0x110000) if chr(cp).isspace()]
        self.assertGreater(len(spaces), 20)
        analyzer = Analyzer(stopwords="none", stemmer="none")
        for ch in spaces:
            for left, right in (("wh-12", "x"), ("1,", "000"), ("a'", "b"), ("a.", "b"), ("a", "\u0301b")):
                text = left + ch + right
                with self.subTest(char=hex(ord(ch)), text=text):
                    self.assertEqual(analyzer.analyze(text), self.reference(analyzer, text))
                    self.assertNotIn(ch, "".join(analysis._TOKEN_RE.findall(text)))

    def test_edge_separators_are_never_token_characters(self):
        from mini_rag.text import analysis
        for ch in analysis._EDGE_SEPARATORS:
            with self.subTest(char=ch):
                self.assertFalse(ch.isalnum())
                self.assertNotEqual(__import__("unicodedata").category(ch)[0], "M")

    def test_term_counts(self):
        a = Analyzer()
        text = "Refunds refunded; WH-12 and wh-12's non-refundable refund."
        for _ in range(2):   # cold, then cached
            counts = a.term_counts(text)
            self.assertEqual(list(counts.items()),
                             [("refund", 4), ("wh-12", 2), ("wh", 2), ("12", 2), ("non", 1)])
        with self.assertRaises(MiniRagError) as ctx:
            a.term_counts(None)
        self.assertEqual(str(ctx.exception), "analyze: text must be a str, got NoneType")
