"""Issue 30: the asked value (mini_rag/answer/asked.py), equivalent lengths of time
(synonyms.quantity_bridges) and the risk-coverage arithmetic of bench/bench_answer.py.
Expected values written out by hand."""
import os
import sys
import unittest

from mini_rag.answer import asked
from mini_rag.answer.synthesize import question_type
from mini_rag.query.synonyms import quantity_bridges
from mini_rag.text.analysis import Analyzer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))


class AskedKind(unittest.TestCase):
    CASES = (
        ("How much is the late fee?", "amount"),
        ("What is the fee for a replacement card?", "amount"),
        ("How long are audit logs kept?", "duration"),
        ("How often is the password rotated?", "duration"),
        ("How many seats does the Pro plan include?", "count"),
        ("What percentage of the deposit is refunded?", "count"),
        ("When was the treaty signed?", "date"),
        ("What time does the office open?", "time"),
        ("At what hour is the backup run?", "time"),
        ("Which form must a new supplier fill in?", "code"),
        ("Where was the treaty signed?", "place"),
        ("In what country is Normandy located?", "place"),
        ("Who approves a refund over 500 dollars?", "person"),
        ("Which vendor hosts the backups?", "person"),
        ("Can contractors use personal laptops?", "yesno"),
        ("How do I request a new laptop?", "procedure"),
        ("What steps follow a data breach?", "procedure"),
        ("What is the capital of France?", None),
    )

    def test_table(self):
        for q, want in self.CASES:
            with self.subTest(q=q):
                self.assertEqual(asked.asked_kind(q, question_type(q)), want)


class FocusGap(unittest.TestCase):
    A = Analyzer()
    # (kind, sentence, focus words, expected gap): words between the value and a focus word
    CASES = (
        ("amount", "The late fee is USD 25 per day.", ["late", "fee"], 1),      # "is" between
        ("amount", "A fee may be charged under the agreement.", ["late", "fee"], None),   # no amount
        ("duration", "Audit logs are kept for 24 months.", ["audit", "log"], 3),     # are kept for
        ("duration", "Audit logs exist. Backups run hourly.", ["audit", "log"], 3),
        ("count", "It holds 12 seats.", ["plan"], 0),                           # no focus word: 0
        ("place", "The treaty was signed in Paris.", ["treaty"], 2),             # was signed
        ("time", "The office opens at 9:00 every weekday.", ["office"], 2),
        ("code", "New suppliers complete form SUP-12 first.", ["supplier"], 1),
    )

    def test_table(self):
        for kind, sentence, focus, want in self.CASES:
            terms = [t for w in focus for t in self.A.analyze(w)]
            with self.subTest(sentence=sentence):
                self.assertEqual(asked.focus_gap(kind, sentence, terms, self.A), want)

    def test_echo_and_window(self):
        # a value made only of the question's own words is the question repeated
        terms = self.A.analyze("form")
        self.assertIsNone(asked.focus_gap("code", "Use form SUP-12.", terms, self.A, frozenset({"form", "sup", "12"})))
        self.assertTrue(asked.near_focus("duration", "Logs are kept for 24 months.", self.A.analyze("logs"), self.A, 3))
        self.assertFalse(asked.near_focus("duration", "Logs are kept for 24 months.", self.A.analyze("logs"), self.A, 2))
        self.assertIsNone(asked.near_focus(None, "Logs are kept for 24 months.", [], self.A, 2))


class QuantityBridges(unittest.TestCase):
    A = Analyzer()
    # (question, question term, expected alternative term sets, sorted)
    CASES = (
        ("Is it kept for a fortnight?", "fortnight", [["14", "day"], ["2", "week"], ["336", "hour"]]),
        ("Is it kept for two weeks?", "week", [["14", "day"], ["336", "hour"], ["fortnight"]]),
        ("Is it kept for two weeks?", "two", [["14", "day"], ["336", "hour"], ["fortnight"]]),
        ("Is it kept for a day?", "day", [["24", "hour"]]),
        ("Within 48 hours?", "48", [["2", "day"]]),
        ("Is it kept for one year?", "year", [["12", "month"], ["4", "quarter"]]),
        ("Is it kept for 18 months?", "18", [["6", "quarter"]]),   # 1.5 years: no whole number of years
        ("Is it kept for a month?", "month", []),         # no days or weeks for a month
    )

    def test_table(self):
        for q, term, want in self.CASES:
            terms = self.A.analyze(q)
            with self.subTest(q=q, term=term):
                got = quantity_bridges(q, terms, self.A).get(term, [])
                self.assertEqual(sorted(sorted(a) for a in got), want)


class RiskCoverage(unittest.TestCase):
    def test_curve_and_area(self):
        import bench_answer as B
        order = ["a", "b", "c", "d", "e"]
        conf = {"a": 0.9, "b": 0.2, "c": 0.5, "d": 0.5, "e": 0.1}
        # shipped a, b, c, d (e refused); correct a, d
        verdicts = {"a": (True, True), "b": (True, False), "c": (True, False), "d": (True, True), "e": (False, False)}
        curve = B.risk_coverage(order, conf, verdicts)
        # ranked a (0.9), c (0.5, earlier in gold order than d), d (0.5), b (0.2)
        self.assertEqual(curve["points"], [[0.2, 1.0], [0.4, 0.5], [0.6, 2 / 3], [0.8, 0.5]])
        self.assertEqual(curve["coverage"], 0.8)
        # risks 0, 0.5, 1/3, 0.5 in steps of 1/5
        self.assertAlmostEqual(B.aurc(curve), (0 + 0.5 + 1 / 3 + 0.5) / 5)
        self.assertAlmostEqual(B.aurc(curve, upto=0.4), 0.5 / 5)
        self.assertEqual(B.precision_at(curve, 0.3), 0.5)       # 0.3 x 5 = 1.5: the first 2 answers
        self.assertIsNone(B.precision_at(curve, 1.0))
        cs = B.curve_summary(dict(curve, operating=0.8))
        self.assertEqual(cs["precision_at"][19], 1.0)           # coverage 0.20: the first answer
        self.assertAlmostEqual(B._aurc_summary(cs, 0.8), B.aurc(curve), places=5)   # risks kept to 6 places


if __name__ == "__main__":
    unittest.main()
