"""Abbreviations a corpus defines (mini_rag/query/abbrev.py) and the bridges they make
(relevance.expansion_bridges): Schwartz & Hearst's matching, worked by hand."""
import unittest
from types import SimpleNamespace

from mini_rag.query.abbrev import _match, abbreviation_table, find_abbreviations
from mini_rag.text.analysis import Analyzer
from mini_rag.answer.relevance import covered, expansion_bridges

A = Analyzer()


class FakeIndex:
    """The two attributes abbreviation_table reads, and the df expansion_bridges reads."""

    def __init__(self, texts):
        self.chunks = [SimpleNamespace(text=t) for t in texts]
        self.analyzer = A
        self._terms = set()
        for t in texts:
            self._terms.update(A.analyze(t))

    def doc_freq(self, term):
        return 1 if term in self._terms else 0


def index_of(*texts):
    return FakeIndex(texts)


class FindTest(unittest.TestCase):
    def test_definitions(self):
        cases = [
            # long form (SHORT): the letters C, C, B matched right to left, the first C at
            # the start of "Change"
            ("Major changes are approved by the Change Control Board (CCB).",
             [("CCB", "Change Control Board")]),
            # SHORT (long form), inside Markdown bold
            ("**RPO (recovery point objective)**: the maximum data loss.",
             [("RPO", "recovery point objective")]),
            # letters inside words count (Schwartz & Hearst): P-harmaceutical Q-uality S-ystem
            ("The pharmaceutical quality system (PQS) covers the lifecycle.",
             [("PQS", "pharmaceutical quality system")]),
            # the window is min(len + 5, 2 * len) = 6 words for CAPA: "corrective action and
            # preventive action" is 5, "Use" is outside the match
            ("Use corrective action and preventive action (CAPA) for findings.",
             [("CAPA", "corrective action and preventive action")]),
            # two in one text, in order
            ("Recovery point objective (RPO) and recovery time objective (RTO) are set per tier.",
             [("RPO", "Recovery point objective"), ("RTO", "recovery time objective")]),
        ]
        for text, want in cases:
            with self.subTest(text):
                self.assertEqual(find_abbreviations(text), want)

    def test_not_definitions(self):
        cases = [
            "See the appendix (see below) for details.",            # not a short form
            "Versions are listed (v2).",                            # one capital only
            "The limit is enforced per workspace (WS).",            # matches one word only: "workspace"
            "Backups run nightly (UTC).",                           # U, T, C not in "Backups run nightly"
            "A sentence ends here. (ABC) starts the next one.",     # nothing before it in the sentence
            "Tier 1 (Critical)",                                    # one word inside, not a short form
        ]
        for text in cases:
            with self.subTest(text):
                self.assertEqual(find_abbreviations(text), [])

    def test_match_table(self):
        cases = [
            ("CCB", "approved by the Change Control Board", "Change Control Board"),
            ("HTTP", "the protocol", None),
            ("KMS", "through the key management service", "key management service"),
            ("DSR", "a data subject request", "data subject request"),
        ]
        for short, long, want in cases:
            with self.subTest(short=short):
                self.assertEqual(_match(short, long), want)


class TableTest(unittest.TestCase):
    def test_table_and_cache(self):
        idx = index_of("Approved by the Change Control Board (CCB).", "The CCB meets on Thursdays.",
                       "Keys live in the key management service (KMS).")
        table = abbreviation_table(idx)
        self.assertEqual(table, {"ccb": [frozenset({"chang", "control", "board"})],
                                 "kms": [frozenset({"key", "manag", "servic"})]})
        self.assertIs(abbreviation_table(idx), table)            # computed once per index
        self.assertEqual(abbreviation_table(SimpleNamespace()), {})

    def test_bridges(self):
        idx = index_of("Approved by the Change Control Board (CCB).", "The CCB meets on Thursdays.")
        meets = set(A.analyze("The CCB meets on Thursdays."))
        # a whole long form in the question: each of its terms is covered by the short form
        b = expansion_bridges("When does the Change Control Board meet?", {}, A, idx)
        self.assertTrue(all(covered(t, meets, b) for t in ("chang", "control", "board")))
        # a short form in the question: covered by all terms of its long form
        b = expansion_bridges("Who sits on the CCB?", {}, A, idx)
        self.assertTrue(covered("ccb", set(A.analyze("the change control board")), b))
        self.assertFalse(covered("ccb", set(A.analyze("the control board")), b))
        # part of a long form is not enough: "control" alone does not mean the CCB
        b = expansion_bridges("Who owns access control?", {}, A, idx)
        self.assertFalse(covered("control", meets, b))
        # switched off
        b = expansion_bridges("When does the Change Control Board meet?", {"answer": {"abbreviations": False}}, A, idx)
        self.assertFalse(covered("board", meets, b))


if __name__ == "__main__":
    unittest.main()
