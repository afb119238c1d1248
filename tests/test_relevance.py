"""Phase B (mini_rag/answer/relevance.py): each noise rule, relevance, codes, de-duplication, cap."""
import copy
import json
import math
import unittest
from pathlib import Path

from mini_rag.text.analysis import Analyzer
from mini_rag.config import DEFAULTS
from mini_rag.answer.facts import phase_a
from mini_rag.records import Fact, Hit, Retrieval
from mini_rag.answer.relevance import (covered, expansion_bridges, is_artifact, is_bare_heading, is_boilerplate,
                                is_page_furniture, is_revision_table, near_duplicate, phase_b,
                                phase_b_detail, question_codes, question_terms, term_weights,
                                weighted_share)

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "phases" / "evidence.json"


class FakeIndex:
    """doc_freq from the fixture; idf is Lucene's BM25 idf written out here independently."""

    def __init__(self, num_chunks, doc_freq):
        self.num_chunks, self.df = num_chunks, doc_freq
        self.analyzer = Analyzer()

    def doc_freq(self, term):
        return self.df.get(term, 0)

    def idf(self, term):
        df = self.doc_freq(term)
        return math.log(1 + (self.num_chunks - df + 0.5) / (df + 0.5))


def load():
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return Retrieval.from_json(data["retrieval"]), FakeIndex(data["num_chunks"], data["doc_freq"])


def fact(cid, quote, score=0.5, page=1):
    return Fact(quote=quote, pdf=cid.split("#")[0], page=page, chunk_id=cid, score=score)


def capped(question, facts, limit):
    """Phase B with ``max_context_chunks = limit``: (kept chunk ids, dropped chunk ids)."""
    _, index = load()
    cfg = copy.deepcopy(DEFAULTS)
    cfg["retrieval"]["max_context_chunks"] = limit
    kept, dropped = phase_b_detail(question, facts, Retrieval(question=question, hits=[]), index, cfg)
    return [f.chunk_id for f in kept], [d["chunk_id"] for d in dropped]


class NoiseRulesTest(unittest.TestCase):
    def test_artifact(self):
        cases = [("Refunds take 5 days.", False), ("refund", True), ("12 .... 14 .... 16 refund", True),
                 ("| 1 | 2 | 3 |", True), ("--------", True), ("Logs: 90 days, 30 days.", False)]
        for text, expected in cases:
            with self.subTest(text=text):
                self.assertIs(is_artifact(text), expected)

    def test_bare_heading(self):
        cases = [("# Refund window", False, True), ("REFUND REQUESTS", False, True),
                 ("3.2 Refund Requests", False, True), ("Section 4 Retention", False, True),
                 ("Refund Requests and Appeals", False, True),
                 ("Refunds take 5 days", False, False),          # not title case
                 ("Refund Window:", False, False),               # ends with ':' -> a lead-in, not a heading
                 ("Customers may request a refund within 30 days of purchase.", False, False),
                 ("Refunds take 5 days.", True, True),           # the index says it is a heading
                 ("# Title\nBody text follows here.", False, False)]
        for text, flag, expected in cases:
            with self.subTest(text=text):
                self.assertIs(is_bare_heading(text, flag), expected)

    def test_boilerplate(self):
        cases = [("This page intentionally left blank.", True), ("All rights reserved.", True),
                 ("Copyright (c) 2024 Halvard Ltd. All rights reserved.", True),
                 ("CONFIDENTIAL - Internal use only", True),
                 ("Confidential data must be encrypted at rest.", False),
                 ("Refunds take 5 days.", False)]
        for text, expected in cases:
            with self.subTest(text=text):
                self.assertIs(is_boilerplate(text), expected)

    def test_page_furniture(self):
        cases = [("Page 2 of 10", "", True), ("Page 7", "", True), ("- 12 -", "", True), ("3/10", "", True),
                 ("Refund Policy", "Refund Policy", True), ("Refund  policy", "Refund Policy", True),
                 ("Refund Policy applies to all plans.", "Refund Policy", False),
                 ("Page 2 of 10\nMore text here.", "", False)]
        for text, title, expected in cases:
            with self.subTest(text=text):
                self.assertIs(is_page_furniture(text, title), expected)

    def test_revision_table(self):
        table = "| Version | Date | Author |\n| 1.0 | 2024-01-01 | Refund desk |"
        plain_table = "| Plan | Refund window |\n| Pro | 30 days |"
        cases = [(table, "", "How long do refunds take?", True),
                 (table, "", "Which version of the policy is current?", False),   # the question asks for it
                 (plain_table, "", "How long do refunds take?", False),
                 ("Refunds take 5 days.", "Revision history", "How long do refunds take?", True),
                 ("Refunds take 5 days.", "Change log", "How long?", True),
                 ("Refunds take 5 days.", "Refund window", "How long?", False)]
        for text, heading, question, expected in cases:
            with self.subTest(text=text, heading=heading, question=question):
                self.assertIs(is_revision_table(text, heading, question), expected)


class TermsTest(unittest.TestCase):
    def test_question_terms(self):
        a = Analyzer()
        cases = [
            ("How many days do we keep audit logs?", {}, ["day", "keep", "audit", "log"]),
            ("Can I please get a refund?", {}, ["refund"]),          # scaffold: can, please, get
            ("What is it?", {}, []),
            # the retriever's typo correction replaces the token's term ("" drops it)
            ("How long are audti logs kept?", {"audti": "audit"}, ["audit", "log", "kept"]),
            ("Whta is the refund window?", {"whta": ""}, ["refund", "window"]),
            ("refund refunds refunded", {}, ["refund"]),
            # the adjective after "how" frames the question (time, size); elsewhere it counts
            ("How soon must incidents be reported?", {}, ["incid", "report"]),
            ("How big is a CM-2 batch?", {}, ["cm-2", "cm", "2", "batch"]),
            ("Is there a fast track for refunds?", {}, ["fast", "track", "refund"]),
            ("What counts as a major deviation?", {}, ["major", "deviat"]),
            # "at what point", "what's the deadline": the question asks when
            ("At what point are audit trails reviewed?", {}, ["audit", "trail", "review"]),
            ("What's the deadline for reporting a breach?", {}, ["report", "breach"]),
            ("Is the deadline in the contract?", {}, ["deadlin", "contract"]),   # a deadline asked about
            # attribution, connectives and "OK" frame the question
            ("What does the ALCOA acronym require according to FDA?", {}, ["alcoa", "requir", "fda"]),
            ("Is it OK to run longer instead?", {}, ["run", "longer"]),
            # an indefinite pronoun names no subject
            ("When someone signs a record, must anybody witness it?", {}, ["sign", "record", "wit"]),
        ]
        for question, corrections, expected in cases:
            with self.subTest(question=question):
                r = Retrieval(question=question, hits=[], corrections=corrections)
                self.assertEqual(question_terms(question, r, a), expected)

    def test_weights_and_share(self):
        _, index = load()
        w = term_weights(["refund", "gift"], index)
        self.assertAlmostEqual(w["refund"], math.log(1 + 90.5 / 10.5))
        self.assertAlmostEqual(w["gift"], math.log(1 + 100.5 / 0.5))        # unseen: the largest idf
        self.assertEqual(term_weights(["a", "b"], None), {"a": 1.0, "b": 1.0})
        share = weighted_share(["refund", "gift"], w, {"refund", "other"})
        self.assertAlmostEqual(share, w["refund"] / (w["refund"] + w["gift"]))
        self.assertEqual(weighted_share([], w, {"refund"}), 0.0)
        self.assertEqual(weighted_share(["x", "y", "z"], {"x": 1.0, "y": 1.0, "z": 2.0}, {"x", "z"}), (1 + 2) / 4)

    def test_expansion_bridges(self):
        a = Analyzer()
        cfg = {"expansion": {"cp": {"match": "continuous processing",
                                    "add": ["continuous manufacturing", "ICH Q13"]}},
               "answer": {"synonyms": False}}       # synonyms.py's groups: tested in test_synonyms
        bridges = expansion_bridges("Is Continuous   processing allowed?", cfg, a)
        self.assertEqual(sorted(bridges), ["continu", "process"])
        self.assertTrue(covered("process", {"ich", "q13"}, bridges))
        self.assertTrue(covered("process", {"continu", "manufactur"}, bridges))
        self.assertFalse(covered("process", {"ich"}, bridges))       # all terms of one add phrase
        self.assertFalse(covered("allow", {"ich", "q13"}, bridges))
        self.assertEqual(expansion_bridges("What is batch processing?", cfg, a), {})

    def test_question_codes(self):
        self.assertEqual(question_codes(["storag", "wh-12", "12", "q13", "2024"]), ["wh-12", "q13"])


class DuplicateTest(unittest.TestCase):
    def test_near_duplicate(self):
        base = ("Customers may request a refund within 30 days of purchase and the refund is issued to "
                "the original payment method of the order")
        cases = [
            (base, base.upper() + "!", 0.9, True),                      # same normalized key
            (base, base + " today", 0.9, True),                          # Jaccard 19/20 >= 0.9
            (base, base + " today", 0.96, False),
            (base, base.replace("30", "90"), 0.5, False),                # number differs
            (base, base.replace("may", "may not"), 0.5, False),          # polarity differs
            ("Refunds take 5 days.", "Logs are kept.", 0.1, False),
        ]
        for a, b, threshold, expected in cases:
            with self.subTest(b=b[-20:], threshold=threshold):
                self.assertIs(near_duplicate(a, b, threshold), expected)


class PhaseBTest(unittest.TestCase):
    def test_fixture_reasons(self):
        r, index = load()
        kept, dropped = phase_b_detail(r.question, phase_a(r), r, index, DEFAULTS)
        self.assertEqual([f.chunk_id for f in kept], ["refund-policy#p2"])
        self.assertEqual(dropped, [
            {"chunk_id": "refund-policy-2019#p2", "reason": "duplicate", "of": "refund-policy#p2"},
            {"chunk_id": "handbook#p0", "reason": "boilerplate"},
            {"chunk_id": "handbook#p1", "reason": "heading"},
            {"chunk_id": "handbook#p2", "reason": "page_header"},
            {"chunk_id": "handbook#p3", "reason": "revision_table"},
            {"chunk_id": "handbook#p4", "reason": "artifact"},
            {"chunk_id": "audit-standard#p1", "reason": "off_topic"},
        ])
        self.assertEqual(phase_b(r.question, phase_a(r), r, index, DEFAULTS), kept)

    def test_off_topic_threshold(self):
        # Question terms: refund (df 10), audit (df 3).  The fact holds only refund, so its
        # overlap is idf(refund) / (idf(refund) + idf(audit)).
        _, index = load()
        share = index.idf("refund") / (index.idf("refund") + index.idf("audit"))
        facts = [fact("a#p0", "Refunds are issued quickly to every customer.")]
        for threshold, kept in ((share - 0.01, 1), (share + 0.01, 0)):
            with self.subTest(threshold=threshold):
                cfg = copy.deepcopy(DEFAULTS)
                cfg["answer"]["min_fact_overlap"] = threshold
                q = "Refund audit?"
                out = phase_b(q, facts, Retrieval(question=q, hits=[]), index, cfg)
                self.assertEqual(len(out), kept)

    def test_title_and_heading_count_as_the_facts_words(self):
        _, index = load()
        q = "What does the audit standard say?"
        f = fact("a#p0", "Entries are written once and never edited.")
        bare = Retrieval(question=q, hits=[])
        titled = Retrieval(question=q, hits=[Hit("a#p0", "a", 1, 1.0, 0.5, 1, f.quote, title="Audit Standard")])
        self.assertEqual(phase_b(q, [f], bare, index, DEFAULTS), [])
        self.assertEqual(phase_b(q, [f], titled, index, DEFAULTS), [f])

    def test_code_mismatch(self):
        _, index = load()
        q = "What is the storage temperature for WH-12?"
        facts = [fact("wh13#p1", "WH-13 pallets are stored between 2 and 8 degrees; storage temperature is logged."),
                 fact("wh12#p1", "WH-12 pallets are stored between 15 and 25 degrees.")]
        kept, dropped = phase_b_detail(q, facts, Retrieval(question=q, hits=[]), index, DEFAULTS)
        self.assertEqual([f.chunk_id for f in kept], ["wh12#p1"])
        self.assertEqual(dropped, [{"chunk_id": "wh13#p1", "reason": "code_mismatch"}])
        # no fact has the code: the rule keeps everything (phase C's key terms decide)
        kept, _ = phase_b_detail(q, facts[:1], Retrieval(question=q, hits=[]), index, DEFAULTS)
        self.assertEqual([f.chunk_id for f in kept], ["wh13#p1"])

    def test_duplicate_keeps_higher_score_then_smaller_id(self):
        _, index = load()
        q = "refund window"
        text = "The refund window is 30 days for every plan."
        cases = [([fact("b#p0", text, 0.4), fact("a#p0", text, 0.9)], ["a#p0"], "b#p0"),
                 ([fact("b#p0", text, 0.9), fact("a#p0", text, 0.4)], ["b#p0"], "a#p0"),
                 ([fact("b#p0", text, 0.5), fact("a#p0", text, 0.5)], ["a#p0"], "b#p0")]
        for facts, kept_ids, dropped_id in cases:
            with self.subTest(scores=[f.score for f in facts]):
                kept, dropped = phase_b_detail(q, facts, Retrieval(question=q, hits=[]), index, DEFAULTS)
                self.assertEqual([f.chunk_id for f in kept], kept_ids)
                self.assertEqual(dropped, [{"chunk_id": dropped_id, "reason": "duplicate", "of": kept_ids[0]}])

    def test_cap_keeps_retrieval_order(self):
        _, index = load()
        q = "refund window"
        facts = [fact("d%d#p0" % i, "The refund window for plan %d is %d days." % (i, 10 + i), 0.1 * i)
                 for i in range(1, 9)]
        for limit in (6, 3, 1):
            with self.subTest(limit=limit):
                cfg = copy.deepcopy(DEFAULTS)
                cfg["retrieval"]["max_context_chunks"] = limit
                kept, dropped = phase_b_detail(q, facts, Retrieval(question=q, hits=[]), index, cfg)
                self.assertEqual(kept, facts[:limit])
                self.assertEqual(dropped, [{"chunk_id": f.chunk_id, "reason": "over_limit"} for f in facts[limit:]])

    def test_joined_list_rides_with_its_lead_in(self):
        # retrieval joined d1#p1 (a list sharing no word with the question) after its lead-in
        # d1#p0 (Retrieval.joined): it is not held to min_fact_overlap, not counted against the
        # cap, and kept exactly when its lead-in is
        _, index = load()
        q = "refund window"
        lead = fact("d1#p0", "The refund window is set per plan as follows:", 0.5)
        items = fact("d1#p1", "- Plan A: ten days\n- Plan B: twenty days", 0.5)
        plans = [fact("d%d#p0" % i, "The refund window for plan %d is %d days." % (i, 10 + i), 0.5)
                 for i in range(2, 8)]
        joined = {"d1#p1": "d1#p0"}
        cfg = copy.deepcopy(DEFAULTS)
        cfg["retrieval"]["max_context_chunks"] = 6
        # the lead-in first: it and the five next plans fill the six places, its list rides along
        facts = [lead, items] + plans
        kept, dropped = phase_b_detail(q, facts, Retrieval(question=q, hits=[], joined=joined), index, cfg)
        self.assertEqual(kept, [lead, items] + plans[:5])
        self.assertEqual(dropped, [{"chunk_id": "d7#p0", "reason": "over_limit"}])
        # the lead-in last: capped away, its list goes with it
        cfg["retrieval"]["max_context_chunks"] = 3
        facts = plans[:3] + [lead, items]
        kept, dropped = phase_b_detail(q, facts, Retrieval(question=q, hits=[], joined=joined), index, cfg)
        self.assertEqual(kept, plans[:3])
        self.assertEqual(dropped, [{"chunk_id": "d1#p0", "reason": "over_limit"},
                                   {"chunk_id": "d1#p1", "reason": "lead_in_dropped", "of": "d1#p0"}])
        # not joined (ranked on its own words): the list is off topic, as any fact
        kept, dropped = phase_b_detail(q, [lead, items], Retrieval(question=q, hits=[]), index, cfg)
        self.assertEqual((kept, dropped), ([lead], [{"chunk_id": "d1#p1", "reason": "off_topic"}]))

    def test_duplicate_keeps_the_one_that_holds_more_of_the_question(self):
        # the same sentence twice; only one sits under the heading that names the window
        _, index = load()
        q = "How long is the refund window?"
        text = "Refunds can be requested within 30 days of purchase."
        hits = [Hit("faq#p2", "faq", 1, 0.9, 0.9, 1, text, heading="Billing FAQ"),
                Hit("policy#p4", "policy", 1, 0.5, 0.5, 2, text, heading="Refund window")]
        facts = [fact("faq#p2", text, 0.9), fact("policy#p4", text, 0.5)]
        kept, dropped = phase_b_detail(q, facts, Retrieval(question=q, hits=hits), index, DEFAULTS)
        self.assertEqual([f.chunk_id for f in kept], ["policy#p4"])
        self.assertEqual(dropped, [{"chunk_id": "faq#p2", "reason": "duplicate", "of": "policy#p4"}])

    def test_cap_keeps_each_parts_best_fact(self):
        # Two parts; the audit fact ranks last.  Limit 3: share = 3 // (2 + 1) = 1 slot per
        # part for its best fact (the first on a tie), the third slot in retrieval order.
        q = "How long is the refund window, and how long are audit logs kept?"
        facts = [fact("d%d#p0" % i, "The refund window for plan %d is %d days." % (i, 10 + i), 0.5)
                 for i in range(1, 6)] + [fact("audit#p0", "Audit logs are kept for 90 days.", 0.2)]
        self.assertEqual(capped(q, facts, 3), (["d1#p0", "d2#p0", "audit#p0"], ["d3#p0", "d4#p0", "d5#p0"]))
        # one part: the refund facts are off topic
        self.assertEqual(capped("How long are audit logs kept?", facts, 3)[0], ["audit#p0"])

    def test_cap_keeps_the_facts_that_hold_most_of_the_question(self):
        # refund (df 10) and window: the last fact holds both, the others refund only
        q = "How long is the refund window?"
        facts = [fact("d%d#p0" % i, "Refunds for plan %d are paid in %d days." % (i, 10 + i), 0.5)
                 for i in range(1, 5)] + [fact("w#p0", "The refund window is 30 days.", 0.1)]
        # kept in retrieval order
        self.assertEqual(capped(q, facts, 2), (["d1#p0", "w#p0"], ["d2#p0", "d3#p0", "d4#p0"]))

    def test_no_question_terms_keeps_all_clean_facts(self):
        _, index = load()
        facts = [fact("a#p0", "Refunds take 5 days."), fact("b#p0", "Logs are kept for 90 days.")]
        self.assertEqual(phase_b("What is it?", facts, Retrieval(question="q", hits=[]), index, DEFAULTS), facts)

    def test_deterministic_under_input_order(self):
        r, index = load()
        facts = phase_a(r)
        a = phase_b_detail(r.question, facts, r, index, DEFAULTS)
        b = phase_b_detail(r.question, list(reversed(facts)), r, index, DEFAULTS)
        self.assertEqual(a[0], b[0])
        self.assertEqual(sorted(map(json.dumps, a[1])), sorted(map(json.dumps, b[1])))


if __name__ == "__main__":
    unittest.main()
