"""Conflict detection (mini_rag/guard/conflicts.py): each rule of the module docstring on a fixture."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mini_rag.text.analysis import Analyzer  # noqa: E402
from mini_rag.config import DEFAULTS  # noqa: E402
from mini_rag.guard.conflicts import (evidence_units, find_conflicts, polarity, qualifiers,  # noqa: E402
                                quantities)
from mini_rag.records import Fact  # noqa: E402

AN = Analyzer()
GUARDS = DEFAULTS["guards"]
CLARIFY = DEFAULTS["clarify"]


def stem(word):
    terms = AN.analyze(word)
    return terms[0] if terms else word


def fact(doc, n, text):
    return Fact(quote=text, pdf=doc, page=1, chunk_id="%s#p%d" % (doc, n), score=0.5)


def detect(question, facts, context=None):
    return find_conflicts(AN.analyze(question), facts, AN, GUARDS, CLARIFY, context, question)


class EvidenceUnits(unittest.TestCase):
    def test_table(self):
        cases = [
            ("One. Two.", ["One.", "Two."]),
            ("Refunds take 2.5 days. See e.g. Annex B.", ["Refunds take 2.5 days.", "See e.g. Annex B."]),
            ("- Starter plan: free\n- Pro plan: $5", ["- Starter plan: free", "- Pro plan: $5"]),
            ("| Plan | Days |\n| Pro | 30 |", ["| Plan | Days |", "| Pro | 30 |"]),   # no |---| rule: lines
            ("| Plan | Requests per minute | Burst |\n|---|---:|---|\n| Free | 60 | 5 |\n| Pro | 1,000 |",
             ["| Free plan | 60 requests per minute | 5 burst |", "| Pro plan | 1,000 requests per minute |"]),
            ("Limits:\n\n| Plan |\n| --- |\n| Pro |", ["Limits:", "| Pro plan |"]),
            ("Version v2.1 applies. Next.", ["Version v2.1 applies.", "Next."]),
            ("", []),
            # a table chunk as the corpus reader writes it (markup.read_table): the same units
            ("Plan: Free; Requests per minute: 60; Burst: 5\nPlan: Pro; Requests per minute: 1,000",
             ["| Free plan | 60 requests per minute | 5 burst |", "| Pro plan | 1,000 requests per minute |"]),
            ("Retention; United States: 1 year; European Union: 5 years",       # no header over column 1
             ["| Retention | 1 year united states | 5 years european union |"]),
            ("Version: 4.0; Change: Full rewrite; replaces v2.3\nVersion: 3.1; Change: Draft",   # a cell with "; "
             ["| 4.0 version | Full rewrite; replaces v2.3 change |", "| 3.1 version | Draft change |"]),
            # not a reading: prose, a list, one named cell a line, two headers for one row's width
            ("Note: refunds take 14 days; see Annex B.", ["Note: refunds take 14 days; see Annex B."]),
            ("- Pro plan: 30 days; Free plan: 7 days", ["- Pro plan: 30 days; Free plan: 7 days"]),
            ("Owner: Finance\nReview: yearly", ["Owner: Finance", "Review: yearly"]),
            ("Plan: Pro; Days: 30\nTier: Gold; Hours: 4", ["Plan: Pro; Days: 30", "Tier: Gold; Hours: 4"]),
        ]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(evidence_units(text), want)

    def test_read_table_gives_the_pipe_tables_units(self):
        # the corpus reader's reading of a pipe table and the table as written: one set of units
        from mini_rag.text.markup import read_table
        table = ["| Plan | Requests per minute | Burst |", "|---|---:|---|", "| Free | 60 | 5 |",
                 "| Pro | 1,000 | 20 |", "| Enterprise | 3,000 | 100 |"]
        self.assertEqual(evidence_units("\n".join(read_table(table))), evidence_units("\n".join(table)))


class Polarity(unittest.TestCase):
    def test_table(self):
        cases = [
            ("SSNs may be stored in plaintext.", {"permission": "pos", "encryption": "plaintext"}),
            ("SSNs must not be stored in plaintext.", {"permission": "neg", "encryption": "encrypted"}),
            ("Exports may not include PII.", {"permission": "neg"}),
            ("You can export reports.", {"permission": "pos"}),
            ("You cannot export reports.", {"permission": "neg"}),
            ("Resale is prohibited.", {"permission": "neg"}),
            ("Resale is not allowed.", {"permission": "neg"}),
            ("Resale is allowed.", {"permission": "pos"}),
            # both signs in one unit: no claim on that axis
            ("Customers may request a refund but must not resell.", {}),
            ("Purchases are refundable within 30 days.", {"refund": "pos"}),
            ("Promotional purchases are non-refundable.", {"refund": "neg"}),
            ("Gift cards are not refundable.", {"refund": "neg"}),
            ("There are no refunds for setup fees.", {"refund": "neg"}),
            ("Backups are encrypted with AES-256.", {"encryption": "encrypted"}),
            ("Backups are never encrypted.", {"permission": "neg"}),
            ("Reports are generated nightly.", {}),
            # "may be" + a word that is no past participle: a possibility, not a permission
            ("An instruction to preserve records that may be relevant to an audit.", {}),
            ("Passwords can be up to 64 characters long.", {}),
            ("Records may be deleted after 7 years.", {"permission": "pos"}),
            ("Records may be kept offline.", {"permission": "pos"}),
            ("Keys can be shown to auditors.", {"permission": "pos"}),
            ("Records that may be relevant must not be deleted.", {"permission": "neg"}),
        ]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(polarity(text), want)


class Quantities(unittest.TestCase):
    def test_table(self):
        cases = [
            ("Data is kept for 30 calendar days.", [("30", "day")]),
            # a business day is another unit: 10 business days may be 14 calendar days
            ("Paid within 10 business days, or 5 working days by card.", [("10", "business day"), ("5", "business day")]),
            ("The limit is 1,000 requests per hour.", [("1000", "request/hour")]),
            ("Uptime is 99.90% monthly.", [("99.9", "%")]),
            ("It costs $5/month or \u20ac50 per year.", [("5", "$/month"), ("50", "\u20ac/year")]),
            ("Use AES-256 and ISO 27001 since 2024-01-15.", []),     # codes, identifiers, dates
            ("Section 4.2 applies.", []),                            # label + number = identifier
            ("The 2021 policy is retired.", []),                     # a year is a date
            ("Support answers 24/7.", []),
            ("In 2021, we moved.", []),
            ("Up to 2000 requests per hour.", [("2000", "request/hour")]),   # a rate, not a year
            # an ISO currency code is the amount's currency, not an identifier
            ("A stipend of USD 500, or EUR 450 per year.", [("500", "$"), ("450", "\u20ac/year")]),
            ("Fees: GBP 25 and CHF 30.", [("25", "\u00a3"), ("30", "CHF")]),
        ]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(quantities(text, stem), want)


class Qualifiers(unittest.TestCase):
    def test_table(self):
        values = ["enterprise", "pro", "EU", "US"]
        nouns = ["plan", "tier"]
        cases = [
            ("On the Enterprise plan, EU data stays in Frankfurt.", ["enterprise", "eu"]),
            ("Let us know.", []),                                  # capitals entry: pronoun is not the region
            ("Data of US customers stays in Ohio.", ["us"]),
            ("The Growth plan includes SSO.", ["growth"]),         # capitalized name before a noun
            ("Growth plan includes SSO.", []),                     # sentence-initial capital is no name
            ("Your plan includes SSO.", []),
            ("The pro-rata refund applies.", []),                  # hyphenated word is not "pro"
        ]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(sorted(qualifiers(text, values, nouns)), want)

    def test_initialism(self):
        # "United States" is listed, and so is "US", its initials: one qualifier, "us".
        values = ["US", "EU", "United States", "European Union", "Latin America"]
        cases = [
            ("In the United States, a supplement is filed.", ["us"]),
            ("European Union and US rules differ.", ["eu", "us"]),
            ("Latin America has its own rules.", ["latin america"]),   # "LA" is not listed
        ]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(sorted(qualifiers(text, values, [])), want)


class FindConflicts(unittest.TestCase):
    def test_polarity_pair_names_both_sources(self):
        facts = [fact("enc-std", 1, "Social security numbers must not be stored in plaintext."),
                 fact("legacy", 1, "Social security numbers may be stored in plaintext on the file server.")]
        pairs = detect("Can we store social security numbers in plaintext?", facts)
        self.assertEqual(len(pairs), 1)
        p = pairs[0]
        self.assertEqual((p.kind, p.axis, p.doc_a, p.chunk_a, p.doc_b, p.chunk_b),
                         ("polarity", "permission", "enc-std", "enc-std#p1", "legacy", "legacy#p1"))
        self.assertIn("must not be stored", p.snippet_a)
        self.assertIn("may be stored", p.snippet_b)
        self.assertEqual(p.compact(), {"kind": "polarity", "axis": "permission", "a": "enc-std#p1",
                                       "b": "legacy#p1", "reason": "permission: neg vs pos"})

    def test_bridges_hold_question_terms(self):
        # "app" is held by "Application" only through the answering stage's bridge.
        # Without it the sides hold {app, password, expir} and {password, expir}: Jaccard
        # 2/3 = 0.667 < conflict_min_agreement 0.67 (rule 2c), no pair.
        facts = [fact("new", 1, "App passwords expire after 90 days."),
                 fact("old", 1, "Application passwords expire after 30 days.")]
        q = "When do app passwords expire?"
        self.assertEqual(find_conflicts(AN.analyze(q), facts, AN, GUARDS, CLARIFY, question=q), [])
        pairs = find_conflicts(AN.analyze(q), facts, AN, GUARDS, CLARIFY, question=q,
                               bridges={"app": [frozenset(["applic"])]})
        self.assertEqual([(p.kind, p.reason) for p in pairs], [("numeric", "90 day vs 30 day")])

    def test_numeric_pair(self):
        facts = [fact("limits-2026", 2, "The API rate limit is 300 requests per hour."),
                 fact("limits-2021", 2, "The API rate limit is 1000 requests per hour.")]
        pairs = detect("What is the API rate limit?", facts)
        self.assertEqual([(p.kind, p.axis, p.chunk_a, p.chunk_b, p.reason) for p in pairs],
                         [("numeric", "request/hour", "limits-2021#p2", "limits-2026#p2",
                           "1000 request/hour vs 300 request/hour")])

    def test_table_rows_of_two_documents(self):
        table = "| Plan | Requests per minute |\n|---|---|\n| Free | %d |\n| Pro | %d |"
        # the Free rows differ too, but the question names the Pro plan (rule 2e)
        facts = [fact("limits-2021", 3, table % (60, 300)), fact("limits-2026", 5, table % (100, 600))]
        pairs = detect("What is the API rate limit on the Pro plan?", facts,
                       context={"limits-2021#p3": "API Rate Limits", "limits-2026#p5": "API Rate Limits"})
        self.assertEqual([(p.kind, p.reason, p.snippet_a, p.snippet_b) for p in pairs],
                         [("numeric", "300 request/minut vs 600 request/minut",
                           "| Pro plan | 300 requests per minute |", "| Pro plan | 600 requests per minute |")])

    def test_no_conflict_cases(self):
        cases = [
            ("same document never conflicts", "What is the API rate limit?",
             [fact("limits", 1, "The API rate limit is 300 requests per hour."),
              fact("limits", 2, "The API rate limit is 1000 requests per hour.")]),
            ("equal values agree", "What is the API rate limit?",
             [fact("a", 1, "The API rate limit is 300 requests per hour."),
              fact("b", 1, "The API rate limit is 300 requests per hour per key.")]),
            ("overlapping value sets agree", "What is the API rate limit?",
             [fact("a", 1, "The API rate limit is 300 requests per hour."),
              fact("b", 1, "The API rate limit is 300 or 1000 requests per hour.")]),
            ("only the unit is shared", "How many days?",
             [fact("a", 1, "Invoices are due within 30 days."),
              fact("b", 1, "Tickets are closed after 7 days.")]),
            ("different units", "What is the API rate limit?",
             [fact("a", 1, "The API rate limit is 300 requests per hour."),
              fact("b", 1, "The API rate limit is 20 requests per second.")]),
            ("different variants (qualifiers)", "What is the API rate limit?",
             [fact("a", 1, "On the Pro plan the API rate limit is 300 requests per hour."),
              fact("b", 1, "On the Enterprise plan the API rate limit is 1000 requests per hour.")]),
            ("exception: question names a narrower subject one side lacks",
             "Are promotional purchases refundable?",
             [fact("promo", 1, "Promotional purchases are non-refundable."),
              fact("policy", 1, "Purchases are refundable within 30 days.")]),
            ("no question term in the units", "Who owns the cafeteria?",
             [fact("a", 1, "The API rate limit is 300 requests per hour."),
              fact("b", 1, "The API rate limit is 1000 requests per hour.")]),
            ("same sign", "Can we store social security numbers in plaintext?",
             [fact("a", 1, "Social security numbers must not be stored in plaintext."),
              fact("b", 1, "Social security numbers must never be stored in plaintext.")]),
        ]
        for name, question, facts in cases:
            with self.subTest(name):
                self.assertEqual(detect(question, facts), [])

    def test_pair_beside_the_answer(self):
        # rule 4: the answer cites promo#p1; new and old disagree on the general window,
        # which the answer does not rest on.  Without an anchor the pair is reported
        # (both speak to {purchase, refund}: agreement 2/2).
        q = "Are promotional purchases refundable?"
        facts = [fact("promo", 1, "Promotional purchases are non-refundable."),
                 fact("new", 1, "Customers may request a refund within 30 days of purchase."),
                 fact("old", 1, "Customers may request a refund within 14 days of purchase.")]
        self.assertEqual([(p.chunk_a, p.chunk_b) for p in detect(q, facts)], [("new#p1", "old#p1")])
        anchored = find_conflicts(AN.analyze(q), facts, AN, GUARDS, CLARIFY, None, q, anchor=["promo#p1"])
        self.assertEqual(anchored, [])
        anchored = find_conflicts(AN.analyze(q), facts, AN, GUARDS, CLARIFY, None, q, anchor=["new#p1"])
        self.assertEqual([(p.chunk_a, p.chunk_b) for p in anchored], [("new#p1", "old#p1")])

    def test_agreement_on_the_question_terms(self):
        # rule 2c: question terms {fail, sign, attempt, lock, account}; the legacy side says
        # "login" for "sign-in": 4 of 5 shared >= 0.67, a conflict.  A side holding only
        # {notifi, breach} of {person, data, breach, notifi, supervisori, author}
        # against one holding all six agrees on 2/6 < 0.67: different subjects.
        q = "How many failed sign-in attempts lock an account?"
        facts = [fact("new", 1, "An account is locked after 10 consecutive failed sign-in attempts."),
                 fact("old", 1, "Accounts are locked after 5 failed login attempts.")]
        self.assertEqual([(p.kind, p.chunk_a, p.chunk_b) for p in detect(q, facts)],
                         [("numeric", "new#p1", "old#p1")])
        q = "Within how many hours must a personal data breach be notified to the supervisory authority?"
        facts = [fact("irp", 1, "A personal data breach is notified to the supervisory authority within 72 hours."),
                 fact("vendor", 1, "Vendors must notify Halvard of a breach within 48 hours.")]
        self.assertEqual(detect(q, facts), [])

    def test_context_supplies_heading_terms(self):
        # rule 2c: the question term "api" is only in one chunk's text (agreement 2/3 <
        # 0.67); the other has it in its title (3/3)
        facts = [fact("a", 1, "The API rate limit is 300 requests per hour."),
                 fact("b", 1, "The rate limit is 1000 requests per hour.")]
        q = "What is the API rate limit?"
        self.assertEqual(detect(q, facts), [])
        pairs = detect(q, facts, context={"b#p1": "Limits\nAPI Rate Limits (2021)"})
        self.assertEqual([(p.chunk_a, p.chunk_b) for p in pairs], [("a#p1", "b#p1")])

    def test_units_agree_when_a_heading_adds_a_question_term(self):
        # rule 2c: the heading "Password length" puts "length" in one chunk only, so the
        # chunks agree on {password} of {password, length}: 1/2 < 0.67.  The two units
        # ("characters" is their quantity's unit, not a topic term) both hold {password}
        # of {password}: 1/1, a conflict, 14 vs 8 characters.
        q = "What is the minimum password length?"
        facts = [fact("new", 1, "Passwords must be at least 14 characters long."),
                 fact("old", 1, "Passwords must be at least 8 characters long and must be changed every 90 days.")]
        pairs = detect(q, facts, context={"new#p1": "Password length\nPassword Policy"})
        self.assertEqual([(p.kind, p.chunk_a, p.chunk_b) for p in pairs], [("numeric", "new#p1", "old#p1")])

    def test_versions_of_one_policy_skip_the_agreement_rule(self):
        # The question terms {area, supervisor, close, minor, deviat}: the new version holds
        # 3 of the 5 the old one holds, 3/5 = 0.6 < 0.67, in chunks and units alike: not
        # the same subject.  When the old document is superseded by the new one, rule 2c
        # does not apply and the two sides contradict on permission.
        q = "Is the area supervisor allowed to close minor deviations on their own?"
        facts = [fact("sop", 17, "Minor deviations must not be closed without QA approval."),
                 fact("sop-v3", 14, "Minor deviations may be closed by the area supervisor without QA approval.")]
        terms = AN.analyze(q)
        self.assertEqual(find_conflicts(terms, facts, AN, GUARDS, CLARIFY, None, q), [])
        pairs = find_conflicts(terms, facts, AN, GUARDS, CLARIFY, None, q, versions=[("sop-v3", "sop")])
        self.assertEqual([(p.kind, p.axis, p.chunk_a, p.chunk_b) for p in pairs],
                         [("polarity", "permission", "sop#p17", "sop-v3#p14")])
        # an unrelated pair of documents stays apart
        self.assertEqual(find_conflicts(terms, facts, AN, GUARDS, CLARIFY, None, q,
                                        versions=[("sop-v3", "other")]), [])

    def test_order_does_not_depend_on_input_order(self):
        facts = [fact("c", 1, "The API rate limit is 50 requests per hour."),
                 fact("b", 1, "The API rate limit is 1000 requests per hour."),
                 fact("a", 1, "The API rate limit is 300 requests per hour.")]
        q = "What is the API rate limit?"
        want = [("a#p1", "b#p1"), ("a#p1", "c#p1"), ("b#p1", "c#p1")]
        for order in (facts, facts[::-1], [facts[1], facts[2], facts[0]]):
            with self.subTest(order=[f.chunk_id for f in order]):
                self.assertEqual([(p.chunk_a, p.chunk_b) for p in detect(q, order)], want)


if __name__ == "__main__":
    unittest.main()
