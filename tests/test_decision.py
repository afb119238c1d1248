"""Decision precedence (mini_rag/guard/decision.py): every rule alone, every pair, and the messages."""
import itertools
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mini_rag.guard.conflicts import ConflictPair  # noqa: E402
from mini_rag.guard.decision import ABSTAIN, ANSWER, BLOCK, CLARIFY, Signals, decide  # noqa: E402

PAIR = ConflictPair("polarity", "permission", "enc-std", "enc-std#p1", "SSNs must not be stored in plaintext.",
                    "legacy", "legacy#p1", "SSNs may be stored in plaintext.", "permission: neg vs pos")
STALE = {"chunk_id": "old#p1", "doc_id": "old", "date": "2021-01-10", "rule": "review_by"}
SUPERSEDED = {"chunk_id": "legacy#p12", "doc_id": "legacy", "by": "infosec-2026", "rule": "superseded"}

# rule name -> (Signals fields that fire it, expected decision, expected first reason)
RULES = [
    ("block", {"citation_errors": ["duplicate citation 'a#p0'"]}, BLOCK,
     "invalid_citations:duplicate citation 'a#p0'"),
    ("conflict", {"conflicts": [PAIR]}, ABSTAIN, "conflict:polarity:enc-std#p1:legacy#p1"),
    ("low", {"low_confidence": ["no_hits"]}, ABSTAIN, "low_confidence:no_hits"),
    ("stale", {"stale_sources": [STALE], "risk": "high", "as_of": "2026-11-01"}, ABSTAIN,
     "stale_sources:old#p1"),
    ("clarify", {"ambiguity_kind": "variant", "ambiguity_detail": {"qualifiers": ["enterprise", "starter"]}},
     CLARIFY, "ambiguous:variant"),
]


class Precedence(unittest.TestCase):
    def test_nothing_fired_is_answer(self):
        d = decide(Signals())
        self.assertEqual((d.decision, d.reasons, d.message), (ANSWER, [], ""))

    def test_each_rule_alone(self):
        for name, fields, want, reason in RULES:
            with self.subTest(name):
                d = decide(Signals(**fields))
                self.assertEqual((d.decision, d.reasons), (want, [reason]))

    def test_every_pair_first_in_precedence_wins(self):
        # RULES is in precedence order, so the earlier rule of any pair decides and both reasons show.
        for (i, a), (j, b) in itertools.combinations(enumerate(RULES), 2):
            with self.subTest(first=a[0], second=b[0]):
                fields = dict(a[1])
                fields.update(b[1])
                d = decide(Signals(**fields))
                self.assertEqual(d.decision, a[2])
                self.assertEqual(d.reasons, [a[3], b[3]])

    def test_all_rules_at_once(self):
        fields = {}
        for _, f, _, _ in RULES:
            fields.update(f)
        d = decide(Signals(**fields))
        self.assertEqual(d.decision, BLOCK)
        self.assertEqual(d.reasons, [r[3] for r in RULES])

    def test_stale_only_abstains_for_high_and_medium_risk(self):
        for risk, want in (("high", ABSTAIN), ("medium", ABSTAIN), ("low", ANSWER)):
            with self.subTest(risk=risk):
                d = decide(Signals(stale_sources=[STALE], risk=risk, as_of="2026-11-01"))
                self.assertEqual(d.decision, want)

    def test_superseded_abstains_at_every_risk(self):
        for risk in ("high", "medium", "low"):
            with self.subTest(risk=risk):
                d = decide(Signals(stale_sources=[SUPERSEDED], risk=risk, as_of="2026-11-01"))
                self.assertEqual((d.decision, d.reasons), (ABSTAIN, ["stale_sources:legacy#p12"]))


class Messages(unittest.TestCase):
    def test_conflict_names_both_sources(self):
        d = decide(Signals(conflicts=[PAIR, PAIR]))
        self.assertEqual(d.message,
                         "I can't answer definitively because the retrieved sources conflict. "
                         "Source A (enc-std, enc-std#p1) says: \"SSNs must not be stored in plaintext.\" "
                         "Source B (legacy, legacy#p1) says: \"SSNs may be stored in plaintext.\" "
                         "Please confirm which source is authoritative. (1 more conflicting pair.)")

    def test_stale_message_has_date_and_risk(self):
        d = decide(Signals(stale_sources=[STALE], risk="medium", as_of="2026-11-01"))
        self.assertEqual(d.message, "The sources this answer would rest on are out of date, so I can't answer "
                                    "confidently. As of 2026-11-01, old was due for review by 2021-01-10; "
                                    "this medium-risk question needs current sources.")

    def test_superseded_message_names_the_successor(self):
        d = decide(Signals(stale_sources=[SUPERSEDED], risk="low", as_of="2026-11-01"))
        self.assertEqual(d.message, "The sources this answer would rest on are out of date, so I can't answer "
                                    "confidently. As of 2026-11-01, legacy is no longer in force (superseded "
                                    "by infosec-2026); an answer needs sources that are in force.")

    def test_clarify_messages(self):
        d = decide(Signals(ambiguity_kind="variant", ambiguity_detail={"qualifiers": ["enterprise", "starter"]}))
        self.assertTrue(d.message.endswith("(the documents distinguish: enterprise, starter)?"), d.message)
        d = decide(Signals(ambiguity_kind="vague_reference"))
        self.assertIn("refers to something it does not name", d.message)

    def test_block_and_low_confidence_messages(self):
        self.assertIn("citations couldn't be verified", decide(Signals(citation_errors=["x"])).message)
        self.assertIn("enough reliable evidence", decide(Signals(low_confidence=["no_hits"])).message)


class DocTests(unittest.TestCase):
    """The examples in the answering stage's docstrings run and hold."""

    def test_docstring_examples(self):
        import doctest
        import importlib
        for name in ("mini_rag.guard.guards", "mini_rag.guard.conflicts", "mini_rag.guard.decision", "mini_rag.trace",
                     "mini_rag.answer.synthesize", "mini_rag.query.synonyms", "mini_rag.query.framing", "mini_rag.query.glossary"):
            with self.subTest(module=name):
                result = doctest.testmod(importlib.import_module(name))
                self.assertEqual(result.failed, 0)
                self.assertGreater(result.attempted, 0)


if __name__ == "__main__":
    unittest.main()
