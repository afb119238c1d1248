"""Answering without repeated work (issue 32 item 2): the caches change no result.

* ``text.memo.text_memo``: a memo's value is the function's, its limits hold.
* The analyzer's whole-text cache: the same terms as an analyzer that never saw the text,
  a fresh list each call, bounded.
* MMR's per-chunk TF-IDF vectors: the cosine of the plain formula (computed here by hand
  and by the formula written out), bit for bit.
* ``Hit.copy``: what ``Hit.from_json(hit.to_json())`` gives, independent of the hit.
* The memoized text rules hand out fresh lists and dicts (a caller's change cannot leak).
* The synonym-group and example-list lookups: the same bridges as scanning every group.
* Order: the committed gold questions answered cold in file order and warm in reverse
  order give the same trace rows.
"""
import copy
import json
import math
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from mini_rag.config import DEFAULTS  # noqa: E402
from mini_rag.guard import conflicts  # noqa: E402
from mini_rag.answer import synthesize  # noqa: E402
from mini_rag.query import derive, glossary, synonyms  # noqa: E402
from mini_rag.records import Hit  # noqa: E402
from mini_rag.search import retrieve  # noqa: E402
from mini_rag.text import memo  # noqa: E402
from mini_rag.text.analysis import Analyzer  # noqa: E402


class TextMemo(unittest.TestCase):
    def counted(self, **limits):
        calls = []

        @memo.text_memo(**limits)
        def words(text, *rest):
            calls.append(text)
            return tuple(text.split()) + rest
        return words, calls

    def test_value_and_calls(self):
        words, calls = self.counted()
        # (text, extra args, expected value)
        cases = [("a b", (), ("a", "b")), ("", (), ()), ("a b", (1,), ("a", "b", 1)), ("x  y z", (), ("x", "y", "z"))]
        for text, rest, expected in cases:
            with self.subTest(text=text, rest=rest):
                self.assertEqual(words(text, *rest), expected)
                self.assertEqual(words(text, *rest), expected)
        self.assertEqual(calls, ["a b", "", "a b", "x  y z"])     # each (text, args) computed once

    def test_long_text_not_kept(self):
        words, calls = self.counted(max_text=5)
        words("abcdef")
        words("abcdef")
        words("abc")
        words("abc")
        self.assertEqual(calls, ["abcdef", "abcdef", "abc"])
        self.assertEqual(list(words.memo_table), ["abc"])

    def test_entry_and_char_limits(self):
        words, _ = self.counted(max_entries=2)
        for t in ("a", "b", "c"):
            words(t)
        self.assertEqual(list(words.memo_table), ["c"])          # cleared when full, then "c"
        words, _ = self.counted(max_chars=5)
        for t in ("abc", "de", "f"):
            words(t)
        self.assertEqual(list(words.memo_table), ["f"])          # 3 + 2 = 5, "f" would make 6

    def test_clear_all(self):
        words, calls = self.counted()
        words("a")
        memo.clear_all()
        words("a")
        self.assertEqual(calls, ["a", "a"])


class AnalyzerTextCache(unittest.TestCase):
    TEXTS = ["The customer's refunds were not processed", "WH-12 ships 1,000 units (ISO-27001).",
             "", "Refunds: 2 refunded orders", "The customer's refunds were not processed"]

    def test_same_terms_as_a_fresh_analyzer(self):
        warm = Analyzer()
        for text in self.TEXTS:
            with self.subTest(text=text):
                got = warm.analyze(text)
                self.assertEqual(got, Analyzer().analyze(text))
                got.append("poison")                              # the caller's list is its own
                self.assertEqual(warm.analyze(text), Analyzer().analyze(text))

    def test_bounded(self):
        a = Analyzer()
        a.TEXT_CACHE_SIZE, a.TEXT_CACHE_MAX = 2, 10
        for text in ("one", "two", "three", "a text longer than ten"):
            a.analyze(text)
        self.assertEqual(list(a._text_cache), ["three"])
        self.assertEqual(a.analyze("three"), ["three"])


def plain_cosine(a, b, idf):
    """The formula as it was written before the vectors were kept: sorted terms, fsum."""
    if not a or not b:
        return 0.0
    wa = {t: (1.0 + math.log(tf)) * idf(t) for t, tf in a.items()}
    wb = {t: (1.0 + math.log(tf)) * idf(t) for t, tf in b.items()}
    dot = math.fsum(wa[t] * wb[t] for t in sorted(wa) if t in wb)
    if dot == 0.0:
        return 0.0
    na = math.sqrt(math.fsum(v * v for v in wa.values()))
    nb = math.sqrt(math.fsum(v * v for v in wb.values()))
    return min(1.0, dot / (na * nb))


class MmrVectors(unittest.TestCase):
    def test_hand_value(self):
        # idf 1: a = (1, 1 + ln 2) on (x, y), b = (1, 1 + ln 3) on (y, z); dot = 1 + ln 2,
        # |a| = sqrt(1 + (1 + ln 2)^2) = 1.966405, |b| = sqrt(1 + (1 + ln 3)^2) = 2.324688,
        # cosine 1.693147 / 4.571278 = 0.370388
        got = retrieve._ltc_cosine(retrieve._ltc({"x": 1, "y": 2}, lambda t: 1.0),
                                   retrieve._ltc({"y": 1, "z": 3}, lambda t: 1.0))
        self.assertAlmostEqual(got, 1.693147 / (1.966405 * 2.324688), places=6)
        self.assertAlmostEqual(got, 0.370388, places=6)

    def test_bit_for_bit(self):
        idf = {"a": 1.3, "b": 0.7, "c": 2.9, "d": 1.0, "e": 0.1}.get
        bags = [{}, {"a": 1}, {"a": 3, "b": 1}, {"b": 2, "c": 1, "d": 5}, {"e": 7}, {"a": 1, "b": 1, "c": 1, "d": 1, "e": 1},
                {"c": 4, "a": 2}]
        for x in bags:
            for y in bags:
                with self.subTest(x=x, y=y):
                    want = plain_cosine(x, y, idf)
                    self.assertEqual(retrieve._cosine(x, y, idf), want)
                    if x and y:
                        self.assertEqual(retrieve._ltc_cosine(retrieve._ltc(x, idf), retrieve._ltc(y, idf)), want)


class HitCopy(unittest.TestCase):
    def test_same_as_round_trip_and_independent(self):
        metas = [{}, {"superseded_by": "x", "n": 2, "f": 1.5, "ok": True, "none": None},
                 {"tags": ["a", "b"], "nested": {"k": [1, {"z": "y"}]}, "pair": ("a", 1)}]
        for meta in metas:
            with self.subTest(meta=meta):
                h = Hit("d#p1", "d", 1, 2.5, 0.5, 1, "text", "T", "H", "FDA", "2024-01-01", "q",
                        copy.deepcopy(meta), ["S", "s"])
                c = h.copy()
                self.assertEqual(c, Hit.from_json(h.to_json()))
                c.metadata.setdefault("nested", {})["k"] = "changed"
                c.section.append("more")
                c.rank = 9
                self.assertEqual(h.metadata, meta)
                self.assertEqual((h.section, h.rank), (["S", "s"], 1))


class FreshResults(unittest.TestCase):
    """A memoized rule's result may be changed by its caller without changing the next one."""

    def test_table(self):
        text = "Refunds take 14 days. Pro plans may not export data.\n- Free plan: 30 days"
        cases = [("evidence_units", conflicts.evidence_units, text),
                 ("polarity", conflicts.polarity, "Pro plans may not export data."),
                 ("sentence_spans", synthesize.sentence_spans, text),
                 ("split_sentences", synthesize.split_sentences, text),
                 ("variants", derive.variants, "retain")]
        for name, fn, arg in cases:
            with self.subTest(rule=name):
                first = fn(arg)
                want = copy.deepcopy(first)
                self.assertTrue(want)                             # something to poison
                if isinstance(first, dict):
                    first["poison"] = "x"
                else:
                    first.append("poison")
                self.assertEqual(fn(arg), want)


def scan_synonym_bridges(question, q_terms, analyzer, extra=()):
    """synonyms.synonym_bridges as it was: every group scanned."""
    folded = " " + " ".join(synonyms._WORD.findall(question.casefold())) + " "
    have = set(q_terms)
    out = {}
    for analyzed in synonyms._analyzed_groups(analyzer, tuple(extra)):
        sources = []
        for i, (words, terms, _whole, single, broad) in enumerate(analyzed):
            if not terms or broad:
                continue
            if single:
                if terms[0] in have:
                    sources.append((terms[0], i))
            elif " %s " % words in folded:
                sources.extend((t, i) for t in terms if t in have)
        kinds = any(m[4] for m in analyzed)
        for term, i in sources:
            for j, (_words, terms, whole, _single, broad) in enumerate(analyzed):
                alt = synonyms.Synonym(terms) if kinds else synonyms.Equivalent(terms)
                if j == i or not whole or not terms or term in alt or (kinds and not broad):
                    continue
                bucket = out.setdefault(term, [])
                if alt not in bucket:
                    bucket.append(alt)
    return out


def scan_example_bridges(q_terms, table, min_examples=2, forms=None):
    """glossary.example_bridges as it was: every list scanned."""
    have = set(q_terms)
    forms = forms or {}
    out = {}
    for cls, examples in table:
        if cls <= have:
            continue
        naming, held = [], 0
        for example in examples:
            hits = [t for t in dict.fromkeys(q_terms) if t in example or any(f in example for f in forms.get(t, ()))]
            reached = {x for x in example if x in have or any(x in forms.get(t, ()) for t in hits)}
            if reached == example:
                held += 1
                naming.extend(t for t in hits if t not in naming)
        if held < min_examples:
            continue
        syn = synonyms.Synonym(cls)
        for t in naming:
            bucket = out.setdefault(t, [])
            if syn not in bucket:
                bucket.append(syn)
    return out


class Lookups(unittest.TestCase):
    QUESTIONS = ["How long do we keep the logs?", "Can a departing staff member keep the laptop?",
                 "Is multi-factor authentication needed for e-mail?", "What is the maximum file size?",
                 "When must an employee report a lost badge?", "", "Retain records of personal data"]

    def test_synonym_bridges(self):
        a = Analyzer()
        for extra in ((), ("car, automobile, motor vehicle",)):
            for q in self.QUESTIONS:
                with self.subTest(question=q, extra=extra):
                    terms = a.analyze(q)
                    self.assertEqual(synonyms.synonym_bridges(q, terms, a, extra),
                                     scan_synonym_bridges(q, terms, a, extra))

    def test_example_bridges(self):
        f = frozenset
        table = [(f({"compon"}), [f({"identif", "code"}), f({"password"}), f({"token"})]),
                 (f({"fruit"}), [f({"appl"}), f({"pear"})]),
                 (f({"devic"}), [f({"laptop"}), f({"phone"}), f({"tablet"})])]
        # (question terms, forms)
        cases = [(["id", "code", "password", "session"], {"id": ["identif"]}), (["appl", "pear", "fruit"], {}),
                 (["laptop", "phone"], {}), (["laptop", "password"], {}), ([], {}), (["mobil", "tablet"], {"mobil": ["phone"]})]
        for terms, forms in cases:
            with self.subTest(terms=terms):
                self.assertEqual(glossary.example_bridges(terms, table, forms=forms),
                                 scan_example_bridges(terms, table, forms=forms))


class ColdAndWarm(unittest.TestCase):
    """The committed gold questions over the committed corpus: cold caches in file order and
    warm caches in reverse order give the same rows."""

    N = 40

    def test_rows_identical(self):
        from mini_rag.eval.evaluate import read_gold
        from mini_rag.indexing.index import build_index
        from mini_rag.pipeline import Pipeline
        from mini_rag.text.corpus import load_chunks
        cfg = copy.deepcopy(DEFAULTS)
        cfg["corpus"]["path"] = os.path.join(ROOT, "gold", "corpus")
        gold = [g for _, g in read_gold(os.path.join(ROOT, "gold", "gold.jsonl"))][:self.N]

        def fresh():
            memo.clear_all()
            index = build_index(load_chunks(cfg["corpus"]["path"]))
            return Pipeline(cfg, retriever=retrieve.Retriever(index, cfg))

        def rows(pipe, order):
            return {g["qid"]: json.dumps(pipe.answer(g["question"], qid=g["qid"]).row, sort_keys=True)
                    for g in order}
        pipe = fresh()
        cold = rows(pipe, gold)                     # cold caches, file order
        warm = rows(pipe, gold[::-1])               # the same pipeline again, reverse order
        cold_reverse = rows(fresh(), gold[::-1])    # cold caches, reverse order
        self.assertEqual(len(cold), self.N)
        for qid in cold:
            with self.subTest(qid=qid):
                self.assertEqual(warm[qid], cold[qid])
                self.assertEqual(cold_reverse[qid], cold[qid])


if __name__ == "__main__":
    unittest.main()
