"""Plain-language synonym bridges (mini_rag/query/synonyms.py).

Expected stems are Snowball English's, worked out by hand: keep -> keep, kept -> kept,
retain -> retain, preserve -> preserv, approve -> approv, ensure -> ensur,
"make sure" -> make + sure, "every year" -> everi + year.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mini_rag.text.analysis import Analyzer                       # noqa: E402
from mini_rag.answer.relevance import covered, expansion_bridges     # noqa: E402
from mini_rag.query.synonyms import (GROUPS, comparative_bridges, number_bridges, parse_groups,   # noqa: E402
                               question_quantities, range_bridges, spelled_numbers, stated_bounds,
                               synonym_bridges, unit_bridges)

AN = Analyzer()


def alts(question, term, extra=()):
    b = synonym_bridges(question, AN.analyze(question), AN, extra)
    return sorted(sorted(a) for a in b.get(term, []))


class ParseGroups(unittest.TestCase):
    def test_table(self):
        text = "# comment\nKeep,  retain , hang   on to\n\nsolo\nA, a, b # trailing comment\n"
        self.assertEqual(parse_groups(text), [["keep", "retain", "hang on to"], ["a", "b"]])
        # "narrow > broad": the broad members are marked; one narrow member is enough
        self.assertEqual(parse_groups("Card, debit card > Payment method, means of payment\nlaptop > device"),
                         [["card", "debit card", ">payment method", ">means of payment"], ["laptop", ">device"]])

    def test_builtin_groups_are_well_formed(self):
        groups = parse_groups(GROUPS)
        self.assertGreater(len(groups), 50)
        for group in groups:
            self.assertGreaterEqual(len(group), 2, group)
            self.assertEqual(len(group), len(set(group)), group)

    def test_left_out_senses(self):
        # words with a second everyday sense are in no group (see the module docstring)
        words = {m for g in parse_groups(GROUPS) for m in g}
        for w in ("leave", "fire", "support", "free", "minor", "withdraw", "fee", "charge", "yearly", "raise a"):
            with self.subTest(word=w):
                self.assertNotIn(w, words)

    def test_second_senses_only_narrow(self):
        # a word with a second sense is at most the narrow side of a kinds line: the
        # evidence must hold the one-sense word ("gift"), and "present" in the evidence
        # ("present your badge") covers nothing
        for w in ("present", "design"):
            groups = [g for g in parse_groups(GROUPS) if w in g]
            with self.subTest(word=w):
                self.assertTrue(groups)
                for g in groups:
                    self.assertTrue(any(m.startswith(">") for m in g), g)
                    self.assertNotIn(">" + w, g)


class Bridges(unittest.TestCase):
    def test_table(self):
        cases = [
            # (question, question term, alternatives)
            ("How long do we keep tickets?", "keep", [["kept"], ["preserv"], ["retain"]]),
            ("Are tickets retained?", "retain", [["keep"], ["kept"], ["preserv"]]),
            # a phrase in the question bridges its terms; a phrase with a stop word
            # ("hold on to", "cut off") covers nothing itself
            ("How long do we hold on to tickets?", "hold", [["keep"], ["kept"], ["preserv"], ["retain"]]),
            ("When is their access cut off?", "cut", [["away", "take"], ["revok"]]),
            ("Who revokes access?", "revok", [["away", "take"]]),
            # "make sure" keeps both words: it covers "ensure" and is covered by it
            ("Who must make sure it works?", "make", [["ensur"]]),
            ("Who must ensure it works?", "ensur", [["make", "sure"]]),
            ("Is an annual test required?", "annual", [["everi", "year"]]),
            # a hyphenated member is whole: each of its words has terms
            ("Is MFA on?", "mfa", [["authent", "factor", "multi"], ["authent", "multifactor"]]),
            ("Can I get my money back?", "money", [["refund"]]),
            # "discount code" as written bridges both its words to the other code phrases
            # (and "discount" alone to its own group: price reduction, reduced price, rebate)
            ("Is a discount code valid?", "discount", [["code", "coupon"], ["code", "promo"], ["code", "promot"],
                                                      ["code", "voucher"], ["coupon"], ["price", "reduc"],
                                                      ["price", "reduct"], ["rebat"]]),
            ("When do staff get a new laptop?", "new", [["replac"], ["substitut"]]),
            ("Who do we report breaches to?", "report", [["inform"], ["notifi"], ["tell"]]),
            ("Which TLS version do internet connections need?", "internet", [["network", "public"]]),
            ("Does anything urgent skip approval?", "urgent", [["emergenc"]]),
            ("Is an emergency change allowed?", "emergenc", [["urgent"]]),
            # an irregular past participle the stemmer keeps apart
            ("How much data could we lose?", "lose", [["lost"]]),
            # a short form people type
            ("Is an ID badge required?", "id", [["identif"]]),
            ("When must we tell the regulator?", "regul", [["author", "data", "protect"], ["author", "regulatori"],
                                                          ["author", "supervisori"]]),
        ]
        for question, term, want in cases:
            with self.subTest(question=question):
                self.assertEqual(alts(question, term), want)

    def test_phrase_only_as_written(self):
        # "sign" alone (no "off") is not approval; "hang" alone is not keeping
        self.assertEqual(alts("Where do I sign the form?", "sign"), [])
        self.assertEqual(alts("Where do I hang my coat?", "hang"), [])

    def test_a_word_of_several_terms_must_be_written_whole(self):
        # "e-mail" analyzes to e + mail: it bridges only where the question says "e-mail",
        # so the "e" of "e-signature" is no e-mail
        self.assertEqual(alts("Can an e-signature be reassigned?", "e"), [])
        self.assertEqual(alts("Is e-mail archived?", "e"), [["email"]])

    def test_known_only_through_evidence(self):
        # synthesize._known_terms: a word the corpus never uses ("quit", df 0) is known
        # through a synonym only when the evidence holds that synonym; a derivation (the
        # corpus's own bridge) makes it known regardless
        from mini_rag.query.synonyms import Synonym
        from mini_rag.answer.synthesize import _known_terms

        class Index:
            @staticmethod
            def doc_freq(term):
                return {"access": 5, "resign": 2}.get(term, 0)
        syn = {"quit": [Synonym(["resign"])]}
        self.assertEqual(_known_terms(["quit", "access"], Index(), syn, [frozenset(["access"])]), ["access"])
        self.assertEqual(_known_terms(["quit", "access"], Index(), syn, [frozenset(["access", "resign"])]),
                         ["quit", "access"])
        self.assertEqual(_known_terms(["quit", "access"], Index(), {"quit": [frozenset(["resign"])]}, []),
                         ["quit", "access"])

    def test_extra_groups(self):
        self.assertEqual(alts("What is the SLA?", "sla", ["SLA, service level agreement"]),
                         [["agreement", "level", "servic"]])
        self.assertEqual(alts("What is the SLA?", "sla"), [])


class Kinds(unittest.TestCase):
    """``narrow > broad`` lines: a rule stated for the broad word covers the narrow one."""

    def test_table(self):
        cases = [
            # a card is a payment method: "refunded to the original payment method" covers it
            ("Will the refund show up on my card?", "card", [["method", "payment"]]),
            ("Was it charged to my credit card?", "credit", [["method", "payment"]]),
            # ... but a payment method need not be a card: the broad word is bridged to nothing
            ("Which payment method is accepted?", "payment", []),
            # and two narrow words are not each other ("card" is no bank transfer)
            ("Can I pay by card?", "card", [["method", "payment"]]),
            ("Can data go to a staging environment?", "stage", [["environ", "non", "product"], ["non", "product"]]),
            ("May a customer run a pentest?", "pentest", [["secur", "test"]]),
            # a comparative of size is covered by "an increase" / "a decrease", not back
            ("Is a higher flow rate riskier?", "higher", [["increas"]]),
            ("Is a faster line allowed?", "faster", [["increas"]]),
            # "longer" is left out: "no longer" says nothing about size
            ("Is the form no longer needed?", "longer", []),
            ("Are fewer checks allowed?", "fewer", [["decreas"], ["reduct"]]),
            ("Is an increase in flow rate allowed?", "increas", [["boost"], ["rais"]]),   # its own group only
            # a word with a second sense, as the narrow side: "a present" is a gift ...
            ("Who do I tell when a supplier gives me an expensive present?", "present", [["gift"]]),
            # ... but a gift is not covered by "present your badge"
            ("May I accept a gift from a supplier?", "gift", []),
            ("If something threatens patients, can we act first?", "threaten", [["harm"]]),
            ("What could harm patients?", "harm", []),
            ("What throughput is the line designed for?", "design", [["nomin"]]),
            # "raised as a deviation" is recorded as one; "raised" alone is increased
            ("Is every diversion raised as a deviation?", "rais", [["boost"], ["increas"], ["record"]]),
            ("Will the fee be raised?", "rais", [["boost"], ["increas"]]),
            ("What is the nominal rate?", "nomin", []),
            # "half-price" (one word of two terms) is a discount, both of its terms bridged
            ("Can I return a half-price item?", "half", [["discount"]]),
            ("Can I return a half-price item?", "price", [["discount"]]),
            ("Is half the team remote?", "half", []),
        ]
        for question, term, want in cases:
            with self.subTest(question=question):
                self.assertEqual(alts(question, term), want)


class Units(unittest.TestCase):
    def test_unit_bridges(self):
        others = {"week": ["day", "hour", "minut", "month", "second", "year"],
                  "day": ["hour", "minut", "month", "second", "week", "year"]}
        cases = [
            # a plural unit with no number before it asks for some length of time
            ("Unpaid for weeks?", {"week": others["week"]}),
            ("How many days do we have?", {"day": others["day"]}),
            ("For a few weeks?", {"week": others["week"]}),
            # a number before it names one length: "14 days" may not be "3 weeks"
            ("Unpaid for 3 weeks?", {}),
            ("Unpaid for three weeks?", {}),
            ("Unpaid for twenty-one days?", {}),
            # a singular unit is no length ("what day of the week")
            ("What day of the week?", {}),
        ]
        for question, want in cases:
            with self.subTest(question=question):
                got = unit_bridges(question, AN.analyze(question), AN)
                self.assertEqual({t: sorted(sorted(a)[0] for a in v) for t, v in got.items()}, want)


class Comparatives(unittest.TestCase):
    def test_comparative_bridges(self):
        cases = [
            # -ier: the -y adjective's stem and the bare noun ("lower-risk")
            ("Is it riskier than that?", {"riskier": [["riski"], ["risk"]]}),
            # -er: the base, and the base with its silent e back
            ("Is it older than 18?", {"older": [["old"]]}),
            ("Is X safer than Y?", {"safer": [["saf"], ["safe"]]}),
            # a doubled consonant is undoubled
            ("Is it bigger than that?", {"bigger": [["bigg"], ["big"]]}),
            # only before "than": "user", "order", "computer" are no comparatives
            ("Which user placed the order?", {}),
            ("Is a longer run fine?", {}),
        ]
        for question, want in cases:
            with self.subTest(question=question):
                got = comparative_bridges(question, AN.analyze(question), AN)
                self.assertEqual({t: [sorted(a) for a in v] for t, v in got.items()}, want)


class Numbers(unittest.TestCase):
    def test_spelled_numbers(self):
        cases = [
            ("a refund bigger than five thousand dollars", [(["five", "thousand"], "5000")]),
            ("a twenty-four hour window", [(["twenty", "four"], "24")]),
            ("one hundred and five days", [(["one", "hundred", "five"], "105")]),
            ("two million users", [(["two", "million"], "2000000")]),
            ("a five-day campaign", [(["five"], "5")]),            # a unit follows: a quantity
            ("three business days", [(["three"], "3")]),
            # a small count without a unit is no quantity the evidence must write as digits
            ("What are the four elements?", []),
            ("in one session", []),
            ("twelve elements", [(["twelve"], "12")]),             # ten and more: always
            ("72 hours", []),                                      # digits are no spelled number
            ("and five", []),
        ]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(spelled_numbers(text), want)

    def test_number_bridges(self):
        q = "Who approves a refund bigger than five thousand dollars?"
        b = number_bridges(q, AN.analyze(q), AN)
        self.assertEqual(b, {"five": [frozenset({"5000"})], "thousand": [frozenset({"5000"})]})
        self.assertTrue(covered("five", set(AN.analyze("Refunds above USD 5,000 need approval.")), b))
        # digits up to 99 are covered by their words
        q = "Is 72 hours the limit?"
        self.assertEqual(number_bridges(q, AN.analyze(q), AN), {"72": [frozenset(AN.analyze("seventy two"))]})
        q = "Within 5 days?"
        self.assertEqual(number_bridges(q, AN.analyze(q), AN), {"5": [frozenset({"five"})]})
        q = "Is 250 the cap?"
        self.assertEqual(number_bridges(q, AN.analyze(q), AN), {})
        # through relevance, and a synonym of a currency: "dollars" is covered by "USD"
        bridges = expansion_bridges("Who approves refunds over five thousand dollars?", {}, AN)
        sentence = set(AN.analyze("Refunds above USD 5,000 require approval from the Controller."))
        for term in ("five", "thousand", "dollar"):
            with self.subTest(term=term):
                self.assertTrue(covered(term, sentence, bridges))
        off = expansion_bridges("Who approves refunds over five thousand dollars?", {"answer": {"synonyms": False}}, AN)
        self.assertFalse(covered("five", sentence, off))


class Ranges(unittest.TestCase):
    def test_stated_bounds(self):
        cases = [
            ("A discount of 40% or more.", [("40", ">=", 40.0)]),
            ("Teams of 5 users or fewer.", [("5", "<=", 5.0)]),
            ("Orders of USD 5,000 and above.", [("5,000", ">=", 5000.0)]),
            ("At least 3 batches; no more than 10 retries.", [("3", ">=", 3.0), ("10", "<=", 10.0)]),
            ("Refunds above $5,000 need approval.", [("5,000", ">", 5000.0)]),
            ("Files of less than 2.5 GB.", [("2.5", "<", 2.5)]),
            ("Up to 20 seats are included.", [("20", "<=", 20.0)]),
            ("Logs are kept for 90 days.", []),
        ]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(stated_bounds(text), want)

    def test_question_quantities(self):
        cases = [
            ("Is a 50% discount refundable?", [("50", "%", 50.0)]),
            ("A refund of $6,000 or USD 7,000 or 8,000 dollars?",
             [("6,000", "$", 6000.0), ("7,000", "$", 7000.0), ("8,000", "$", 8000.0)]),
            ("Is a refund over five thousand dollars approved?", [("five thousand", "$", 5000.0)]),
            ("Who was president in 1962 with 12 staff?", []),        # years and counts: no kind
        ]
        for q, want in cases:
            with self.subTest(q=q):
                self.assertEqual(question_quantities(q), want)

    def test_range_bridges(self):
        evidence = ["Purchases made with a promotional discount of 40% or more are non-refundable.",
                    "Refunds above USD 5,000 require approval; teams of over 10 people need a lead."]
        cases = [
            ("Is a 50% discount refundable?", {"50": [{"40"}]}),             # 50% >= 40%
            ("Is a 40% discount refundable?", {}),                           # the bound itself: already covered
            ("Is a 30% discount refundable?", {}),                           # below the bound
            ("Who approves a $6,000 refund?", {"6000": [{"5000"}]}),          # money with money only
            ("Who approves five thousand dollars?", {}),                     # "above 5,000" excludes 5,000
            ("Who approves six thousand dollars?", {"six": [{"5000"}], "thousand": [{"5000"}]}),
            ("Do teams of 12 need a lead?", {}),                             # a count: no kind, no bridge
            ("Who led it in 1962?", {}),
        ]
        for q, want in cases:
            with self.subTest(q=q):
                got = range_bridges(q, evidence, AN)
                self.assertEqual({t: [set(a) for a in alts] for t, alts in got.items()}, want)


class InRelevance(unittest.TestCase):
    def test_covered_through_a_synonym(self):
        q = "How long do we keep closed tickets?"
        sentence = set(AN.analyze("Closed tickets are retained for 24 months."))
        self.assertTrue(covered("keep", sentence, expansion_bridges(q, {}, AN)))
        off = {"answer": {"synonyms": False}}
        self.assertFalse(covered("keep", sentence, expansion_bridges(q, off, AN)))
        extra = {"answer": {"synonyms": False, "synonym_groups": ["keep, retain"]}}
        self.assertFalse(covered("keep", sentence, expansion_bridges(q, extra, AN)))   # off is off
        extra = {"answer": {"synonym_groups": ["closed, resolved"]}}
        resolved = set(AN.analyze("Resolved tickets are retained for 24 months."))
        self.assertTrue(covered("close", resolved, expansion_bridges(q, extra, AN)))

    def test_synonym_then_derivation(self):
        # hold on to -> retain (a group) -> retent (derive.py: ain/ent), when the corpus
        # has "retention": a table headed "Retention period" covers the question
        class Index:
            analyzer = AN

            @staticmethod
            def doc_freq(term):
                return {"retent": 3}.get(term, 0)
        bridges = expansion_bridges("How long do we hold on to tickets?", {}, AN, Index())
        self.assertTrue(covered("hold", {"retent", "period"}, bridges))
        self.assertFalse(covered("hold", {"period"}, bridges))


if __name__ == "__main__":
    unittest.main()
