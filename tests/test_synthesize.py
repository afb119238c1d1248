"""Phase C (mini_rag/answer/synthesize.py): sentence units, question-type cues, scoring arithmetic,
refusal rules (near miss, missing value type, threshold), multi-part questions, verbatim
copying and the contract's text form."""
import copy
import json
import math
import os
import subprocess
import sys
import unittest
from types import SimpleNamespace
from pathlib import Path

from mini_rag.text.analysis import Analyzer
from mini_rag.config import DEFAULTS
from mini_rag.records import Fact, Hit, Retrieval
from mini_rag.answer.synthesize import (Answer, AnswerSentence, format_answer, phase_c, question_type,
                                 split_question, split_sentences, unknown_names, value_match,
                                 category_terms, echo_words, general_terms, is_pending, is_deferral,
                                 is_task_request, unknown_subject, is_enumeration, is_exception,
                                 cue_spelling)

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "phases" / "evidence.json"


class FakeIndex:
    """doc_freq from the fixture; Lucene's BM25 idf written out independently."""

    def __init__(self, num_chunks, doc_freq):
        self.num_chunks, self.df = num_chunks, doc_freq
        self.analyzer = Analyzer()

    def idf(self, term):
        df = self.df.get(term, 0)
        return math.log(1 + (self.num_chunks - df + 0.5) / (df + 0.5))


DATA = json.loads(FIXTURE.read_text(encoding="utf-8"))
INDEX = FakeIndex(DATA["num_chunks"], DATA["doc_freq"])
REFUND = Retrieval.from_json(DATA["retrieval"])
REFUND_FACT = Fact(REFUND.hits[0].text, "refund-policy", 1, "refund-policy#p2", 0.82)


def fact(cid, quote, score=0.5, page=1):
    return Fact(quote=quote, pdf=cid.split("#")[0], page=page, chunk_id=cid, score=score)


def cfg(**answer):
    c = copy.deepcopy(DEFAULTS)
    c["answer"].update(answer)
    return c


def run(question, facts, index=None, retrieval=None, **answer):
    return phase_c(question, facts, retrieval or Retrieval(question=question, hits=[]), index, cfg(**answer))


class SplitSentencesTest(unittest.TestCase):
    def test_table(self):
        cases = [
            ("One. Two! Three?", ["One.", "Two!", "Three?"]),
            ("The fee is 2.5 percent. It is due.", ["The fee is 2.5 percent.", "It is due."]),
            ("See Sec. 4 and No. 7 of the plan. Next.", ["See Sec. 4 and No. 7 of the plan.", "Next."]),
            ("Use e.g. a card, i.e. Visa. Then stop.", ["Use e.g. a card, i.e. Visa.", "Then stop."]),
            ("Approved by J. Smith on Monday. Done.", ["Approved by J. Smith on Monday.", "Done."]),
            ("Version v1.2.3 of ISO-27001 applies. Ok.", ["Version v1.2.3 of ISO-27001 applies.", "Ok."]),
            ("It ends here. 30 days apply.", ["It ends here.", "30 days apply."]),
            ('He said "stop." Then left.', ['He said "stop."', "Then left."]),
            ("lower case. after a period", ["lower case. after a period"]),    # no capital: no split
            ("Intro line.\n- item one. Still item.\n- item two\n1) third", [
                "Intro line.", "- item one. Still item.", "- item two", "1) third"]),
            ("| Plan | Days |\n| Pro | 30 |", ["| Plan | Days |", "| Pro | 30 |"]),
            ("# Heading\nBody. More.", ["# Heading", "Body.", "More."]),
            ("   ", []),
        ]
        for text, expected in cases:
            with self.subTest(text=text):
                units = split_sentences(text)
                self.assertEqual(units, expected)
                for u in units:
                    self.assertIn(u, text)       # verbatim


class QuestionTypeTest(unittest.TestCase):
    def test_cue_table(self):
        cases = [
            ("How many requests per hour are allowed?", "number"),
            ("How many days do refunds take?", "duration"),
            ("How much does the Pro plan cost?", "amount"),
            ("What is the fee for a chargeback?", "amount"),
            ("How much storage is included?", "number"),
            ("How long are logs kept?", "duration"),
            ("How often are backups tested?", "frequency"),
            ("How frequently are keys rotated?", "frequency"),
            ("What is the review interval for access rights?", "frequency"),
            ("How many times can a code be used?", "frequency"),
            ("Within what period must incidents be reported?", "duration"),
            ("What is the retention period for invoices?", "duration"),
            ("What is the refund window?", "duration"),
            ("When does the contract renew?", "date"),
            ("By when must the form be filed?", "date"),
            ("What is the deadline for appeals?", "date"),
            ("In what year was the company founded?", "date"),
            ("What percentage of the fee is refunded?", "percentage"),
            ("What share of revenue goes to partners?", "percentage"),
            ("What is the maximum file size?", "number"),
            ("What is the API rate limit?", "number"),
            ("Who approves access requests?", "person"),
            ("Which team owns the incident process?", "person"),
            ("Which firm performs our annual penetration test?", "organization"),
            ("What vendors are Tier 1?", "organization"),
            ("Can customers export their data?", "polarity"),
            ("Is encryption required at rest?", "polarity"),
            ("What does ALCOA stand for?", "definition"),
            ("How does ICH Q9 define risk?", "definition"),
            ("What is a legal hold?", "definition"),
            ("What is CAPA?", "definition"),
            ("What is the meaning of RTO?", "definition"),
            ("In continuous processing, what counts as a state of control?", "definition"),
            ("What is our uptime SLA?", None),                 # a possessive: not a term to define
            ("What is the typical residence time of the line?", "duration"),   # "what is the ... time"
            ("What is the response time for P1 tickets?", "duration"),
            ("What are residence time distribution models used for?", None),   # "time" is not the head
            ("What is the recovery time objective?", None),
            ("What time does support open?", "date"),
            ("Explain the escalation process.", None),
            ("What happens when a refund is denied?", None),   # 'when' as a conjunction
            # an opening clause, then a yes/no question: not "when" asking for a date
            ("When someone signs several records, must every signing use a password?", "polarity"),
            ("At submission, must validation data be in the dossier?", "polarity"),
            ("If a customer asks for erasure, do we delete their invoices?", "polarity"),
            ("When someone quits, how quickly is their access cut off?", "duration"),
            ("At what point are audit trails reviewed?", "date"),
        ]
        for question, expected in cases:
            with self.subTest(question=question):
                self.assertEqual(question_type(question), expected)

    def test_value_match(self):
        cases = [
            ("number", "Up to 300 requests are allowed.", 1.0), ("number", "Up to three requests.", 1.0),
            ("number", "Requests are unlimited.", 1.0), ("number", "Requests are throttled.", 0.0),
            # a calendar date is a time, not a count or a size
            ("number", "The payroll transfer may use SFTP until 2027-06-30.", 0.0),
            ("number", "Valid until 30 June 2027.", 0.0), ("number", "Valid until June 30, 2027.", 0.0),
            ("number", "Version 1.2 is required until 2027-06-30.", 1.0),
            # a digit inside a code names something: "SOP-MFG-007", "Q13", "CM-2" state no value
            ("number", "See Halvard SOP-MFG-007 Continuous Line Operations.", 0.0),
            ("number", "The ICH Q13 summary applies to line CM-2.", 0.0),
            ("number", "A CM-2 batch is 1,000 kg.", 1.0),
            ("date", "The payroll transfer may use SFTP until 2027-06-30.", 1.0),
            ("duration", "Logs are kept for 90 days.", 1.0), ("duration", "They last a 30-day period.", 1.0),
            ("duration", "Backups are tested quarterly.", 1.0), ("duration", "Tested every week.", 1.0),
            ("duration", "Stored in 3 regions.", 0.5), ("duration", "Logs are kept.", 0.0),
            ("date", "Effective 2026-03-01.", 1.0), ("date", "It renews on 1 March.", 1.0),
            ("date", "Founded in 1998.", 1.0), ("date", "Filed within 72 hours.", 1.0),
            ("date", "Renewal happens upon request.", 1.0), ("date", "It renews automatically.", 0.0),
            ("date", "You may renew.", 0.0),                                  # modal 'may' is not a month
            ("amount", "The fee is $15.", 1.0), ("amount", "It costs 49 per month.", 1.0),
            ("amount", "Exports are free of charge.", 1.0), ("amount", "Plan 2 applies.", 0.5),
            ("amount", "Fees apply.", 0.0),
            ("percentage", "A 20% fee applies.", 1.0), ("percentage", "Half is refunded.", 1.0),
            ("percentage", "20 units apply.", 0.5),
            ("person", "The security team approves.", 1.0), ("person", "Approved by Maria Lopez.", 1.0),
            ("person", "it is approved.", 0.0),
            # an organization is named: a capitalized word not opening the sentence
            ("organization", "The test is run by Acme Security Ltd.", 1.0),
            ("organization", "An independent firm performs the test.", 0.0),
            ("polarity", "Exports are not allowed.", 1.0), ("polarity", "Exports run nightly.", 0.0),
            ("frequency", "Backups are tested quarterly.", 1.0), ("frequency", "Keys rotate every 90 days.", 1.0),
            ("frequency", "Reviewed twice a year.", 1.0), ("frequency", "Checked at each login.", 1.0),
            ("frequency", "Used at most 3 times.", 1.0), ("frequency", "Tested at 6-month intervals.", 1.0),
            ("frequency", "A 20-minute module.", 0.0),                     # a length, not a rate
            ("frequency", "Systems are periodically evaluated.", 0.0),     # no rate stated
            ("frequency", "Kept for a year.", 0.0), ("frequency", "Each system is validated.", 0.0),
            ("definition", "Risk is the combination of probability and severity.", 0.0),  # no echo: no subject
            ("definition", "RPO means the maximum data loss.", 1.0),
            ("definition", "**Legal hold**: a suspension of deletion.", 0.0),              # no echo given
            ("definition", "Tier 1 has a recovery point objective (RPO) of 15 minutes.", 1.0),
            ("definition", "Tier 2 systems have an RPO of 24 hours.", 0.0),
            (None, "Anything.", 1.0),
        ]
        for kind, sentence, expected in cases:
            with self.subTest(kind=kind, sentence=sentence):
                self.assertEqual(value_match(kind, sentence), expected)

    def test_value_match_ignores_the_questions_own_words(self):
        # (question, kind, sentence, expected): a value made only of the question's words
        # is the question repeated.
        cases = [
            ("When does the Black Friday promotion start?", "date",
             "Terms apply to Black Friday offers.", 0.0),                 # weekday inside a name
            ("When will records go live on line CM-2?", "date",
             "Records are planned for line CM-2.", 0.0),                  # the code's digit
            ("When will records go live on line CM-2?", "date",
             "Records go live on CM-2 in March.", 1.0),
            ("How many days are logs kept?", "duration", "Logs are kept for 30 days.", 1.0),
            ("How many days are logs kept?", "duration", "Logs are kept for days.", 0.0),
            ("How many days are logs kept for Tier 2?", "duration", "Tier 2 logs are kept.", 0.0),
            ("What share of revenue?", "percentage", "A 20% share.", 1.0),   # '%' has no word
            # definitions: the defined subject must be a word of the question
            ("How does ICH Q9 define risk?", "definition", "Risk is the combination of harms.", 1.0),
            ("How does ICH Q9 define risk?", "definition", "ICH Q9 does not require any tool.", 0.0),
            ("What is a legal hold?", "definition", "**Legal hold**: a suspension of deletion.", 1.0),
            ("What is a legal hold?", "definition", "Legal holds are the exception to deletion.", 1.0),
        ]
        for question, kind, sentence, expected in cases:
            with self.subTest(question=question, sentence=sentence):
                self.assertEqual(value_match(kind, sentence, echo_words(question)), expected)
        self.assertEqual(value_match("date", "Terms apply to Black Friday offers."), 1.0)   # no echo given

    def test_is_deferral(self):
        table = [
            ("Photostability testing is covered by ICH Q1B and is not summarized here.", True),
            ("Bulk export endpoints are not covered by these limits and have their own quotas.", True),
            ("The detailed procedure is outside the scope of this policy.", True),
            ("Each region has its own data protection rules.", True),
            ("Logs are not covered by the backup policy.", False),     # says something: not backed up
            ("Exports are limited to 20 jobs per day.", False),
            ("Our own staff review every request.", False),
        ]
        for sentence, want in table:
            with self.subTest(sentence=sentence):
                self.assertEqual(is_deferral(sentence), want)

    def test_is_task_request(self):
        table = [
            ("Tell me a joke about databases.", True),
            ("Please write a short poem about encryption.", True),
            ("Can you tell us a funny story?", True),
            ("Tell me the refund window.", False),
            ("Write down the steps to reset MFA.", False),
            ("What jokes are banned by the acceptable use policy?", False),   # a question about jokes
        ]
        for question, want in table:
            with self.subTest(question=question):
                self.assertEqual(is_task_request(question), want)
        a = run("Tell me a joke about refunds.", [REFUND_FACT], KNOWN, REFUND)
        self.assertEqual((a.refused, a.reasons), (True, ["task_request"]))

    def test_table_header_is_no_answer(self):
        from mini_rag.answer.synthesize import _is_table_header, sentence_spans
        text = "Intro line.\n| Plan | Seats |\n| --- | :---: |\n| Pro | 100 |"
        units = [(text[a:b], _is_table_header(text, b)) for a, b in sentence_spans(text)]
        self.assertEqual(units, [("Intro line.", False), ("| Plan | Seats |", True),
                                 ("| --- | :---: |", False), ("| Pro | 100 |", False)])
        # without a rule line: the first of two or more rows, when it holds no digit
        text = "Intro.\n| Plan | Seats |\n| Pro | 100 |\n| Free | 1 |"
        self.assertEqual([_is_table_header(text, b) for a, b in sentence_spans(text)], [False, True, False, False])
        text = "| 2024 | 2025 |\n| 10 | 12 |"                  # digits: data, not column names
        self.assertEqual([_is_table_header(text, b) for a, b in sentence_spans(text)], [False, False])
        text = "| Plan | Seats |"                               # one row alone: no table to head
        self.assertEqual([_is_table_header(text, b) for a, b in sentence_spans(text)], [False])

    def test_is_enumeration(self):
        table = [
            ("What are the four elements of the ICH Q10 quality system?", True),
            ("What are the 3 tiers?", True),
            ("List the steps of the incident process.", True),
            ("What are the risk categories?", True),
            ("What is the first element?", False),
            ("What are the fees?", False),
            ("Name of the DPO?", False),
        ]
        for question, want in table:
            with self.subTest(question=question):
                self.assertEqual(is_enumeration(question), want)

    def test_is_pending(self):
        table = [
            ("The classification of training data is being reviewed by the Council.", True),
            ("A revised draft was published in 2025 and is not yet final.", True),
            ("Electronic batch records are planned for line CM-2.", True),
            ("The launch date is to be announced.", True),
            ("The fee has not been decided.", True),
            ("The matter is under review.", True),
            ("Logs are reviewed every quarter.", False),
            ("Changes are planned and approved by the board.", False),   # 'planned' as a past participle in a list
            ("The plan was finalised in 2024.", False),
        ]
        for sentence, expected in table:
            with self.subTest(sentence=sentence):
                self.assertEqual(is_pending(sentence), expected)

    def test_is_exception(self):
        table = [
            ("The only exception to the TLS requirement is the payroll transfer.", True),
            ("Validation may be completed after approval, provided the dossier has a scheme.", True),
            ("Refunds are not given unless the customer agrees in writing.", True),
            ("Testing is allowed only with prior written approval.", True),
            ("Invoices are exempt from erasure requests.", True),
            ("However, emergency changes may be made first.", True),
            ("This rule does not apply to archived records.", True),
            ("Data in transit must use TLS 1.2 or higher.", False),
            ("Only administrators can export data.", False),   # "only" before a noun restricts, no exception
            ("The provider sends a monthly report.", False),  # "provide" is not "provided (that)"
            ("Laptops are provided to all staff.", False),
            ("Access is granted provided that training is complete.", True),
        ]
        for sentence, expected in table:
            with self.subTest(sentence=sentence):
                self.assertEqual(is_exception(sentence), expected)

    def test_cue_spelling(self):
        # the retriever corrected "deffine" to the term of "define" and "oftn" to "often":
        # the question's type is read from the cue words as meant; other words stay as typed
        a = Analyzer()
        r = Retrieval(question="", hits=[], corrections={"deffine": "defin", "oftn": "often",
                                                         "riks": "risk"})
        self.assertEqual(cue_spelling("How does ICH Q9 deffine riks?", r, a), "How does ICH Q9 define riks?")
        self.assertEqual(question_type(cue_spelling("How does ICH Q9 deffine riks?", r, a)), "definition")
        self.assertEqual(cue_spelling("How oftn are backups run?", r, a), "How often are backups run?")
        self.assertEqual(cue_spelling("How oftn?", Retrieval(question="", hits=[]), a), "How oftn?")
        self.assertEqual(cue_spelling("How oftn?", None, a), "How oftn?")

    def test_general_terms(self):
        a = Analyzer()
        table = [
            ("Does the Free plan come with an uptime commitment?", "polarity", ["come"]),
            ("How much does additional storage cost?", "amount", ["cost"]),
            ("How often do employees get a new laptop?", "duration", ["get"]),
            ("Who has to make sure the system works?", "person", ["make"]),
            ("What is the price of storage?", "number", []),      # 'price' names the type only for amount
            # a yes/no question's modality: the answer says "must" or "are exempt" instead
            ("Is MFA mandatory on admin accounts?", "polarity", ["mandatori"]),
            ("Are pets allowed or forbidden in the office?", "polarity", ["allow", "forbidden"]),
            ("Which approvals are required?", "person", []),      # only a yes/no question's
            # a vague quantity says how many, not what about
            ("Can several users share one account?", "polarity", ["sever"]),
            ("Are multiple or various keys allowed?", "polarity", ["multipl", "various", "allow"]),
        ]
        for question, kind, expected in table:
            with self.subTest(question=question):
                self.assertEqual(general_terms(question, kind, a), expected)

    def test_split_question(self):
        cases = [
            ("What is the refund window and does it apply to gift cards?",
             ["What is the refund window", "does it apply to gift cards"]),
            ("How long are logs kept? Who reviews them?", ["How long are logs kept", "Who reviews them"]),
            ("Are refunds and credits allowed?", ["Are refunds and credits allowed"]),   # 'and' joins nouns
            ("Refunds; when?", ["Refunds", "when"]),
            # a preposition before the question word of the second part
            ("What does ALCOA+ add, and in what year was it first used?",
             ["What does ALCOA+ add", "in what year was it first used"]),
            ("Are fees and taxes in scope?", ["Are fees and taxes in scope"]),
            ("?", ["?"]),
        ]
        for question, expected in cases:
            with self.subTest(question=question):
                self.assertEqual(split_question(question), expected)


class ScoringTest(unittest.TestCase):
    """Without an index every term weighs 1.0, so scores are plain arithmetic."""

    FACT = fact("audit#p1", "Audit logs are kept for 90 days. Backups are separate.", score=0.8)

    def test_score_arithmetic_and_high_confidence(self):
        a = run("How long are audit logs kept?", [self.FACT])
        part = a.detail["parts"][0]
        self.assertEqual((part["terms"], part["key_terms"], part["question_type"]),
                         (["audit", "log", "kept"], ["audit", "log", "kept"], "duration"))
        # coverage 1 (all 3 terms in the sentence and the chunk), type 1 ("90 days"),
        # proximity 3/3 (audit log kept adjacent), retrieval 0.8
        self.assertAlmostEqual(part["best_score"], 0.55 * 1 + 0.2 * 1 + 0.1 * 3 / 3 + 0.15 * 0.8, places=6)
        # "Backups are separate.": 0 own terms, chunk share 1 -> coverage 0.3; no value, no terms
        self.assertAlmostEqual(part["runner_up"], 0.55 * (0.7 * 0 + 0.3 * 1) + 0.15 * 0.8, places=6)
        self.assertEqual(a.sentences, [AnswerSentence("Audit logs are kept for 90 days.", "audit", 1, "audit#p1")])
        self.assertEqual((a.confidence, a.refused, a.reasons), ("High", False, []))
        self.assertEqual(a.claim("not in context"), "Audit logs are kept for 90 days.")
        self.assertEqual(a.citations(), ["audit#p1"])

    def test_proximity(self):
        cases = [
            # (sentence, proximity): audit(0) log(2) kept(3) -> 3 terms over a span of 4
            ("Audit entries and logs are kept for 30 days.", 3 / 4),
            # audit(0) trail(1) system(2) log(3) kept(4): "of", "and" are stopwords -> span 5
            ("Audit trails of systems and logs kept 30 days.", 3 / 5),
        ]
        for sentence, prox in cases:
            with self.subTest(sentence=sentence):
                a = run("How long are audit logs kept?", [fact("x#p0", sentence)])
                self.assertAlmostEqual(a.detail["parts"][0]["best_score"],
                                       0.55 + 0.2 + 0.1 * prox + 0.15 * 0.5, places=6)
        # "retained" is found where the sentence says "kept" (a one-word synonym): audit(0)
        # log(1) per(2) polici(3) text(4) kept(5) -> 3 terms over 6, not audit and log over 2
        a = run("How long are audit logs retained?", [fact("x#p0", "Audit logs, per the policy text, are kept 30 days.")])
        self.assertAlmostEqual(a.detail["parts"][0]["best_score"], 0.55 + 0.2 + 0.1 * 3 / 6 + 0.15 * 0.5, places=6)
        a = run("How long are audit entries kept?", [fact("x#p0", "Entries: 30 days. Audit rules are kept apart.")],
                min_key_coverage=0.0)
        # "Entries: 30 days." holds entri only (1 of 3 terms) -> proximity 0.5, coverage 0.7/3 + 0.3
        self.assertAlmostEqual(a.detail["parts"][0]["best_score"],
                               0.55 * (0.7 * 1 / 3 + 0.3 * 1) + 0.2 + 0.1 * 0.5 + 0.15 * 0.5, places=6)

    def test_key_coverage_threshold_and_medium_low_confidence(self):
        q = "Are audit logs encrypted?"
        f = fact("audit#p2", "Audit logs are stored in the EU.", score=0.5)
        # key terms audit, log, encrypt; the chunk has 2 of 3 -> 2/3 < 0.7
        a = run(q, [f])
        self.assertEqual((a.refused, a.reasons), (True, ["key_terms_not_covered"]))
        self.assertAlmostEqual(a.detail["parts"][0]["key_coverage"], 2 / 3, places=6)
        # 2/3 >= 0.6: answered; coverage 2/3, no polarity word, proximity 2/2, retrieval 0.5
        expected = 0.55 * 2 / 3 + 0.2 * 0 + 0.1 * 2 / 2 + 0.15 * 0.5
        a = run(q, [f], min_key_coverage=0.6)
        self.assertAlmostEqual(a.detail["parts"][0]["best_score"], expected, places=6)
        self.assertEqual((a.refused, a.confidence), (False, "Medium"))
        a = run(q, [f], min_key_coverage=0.6, confidence_medium=expected + 0.01)
        self.assertEqual(a.confidence, "Low")
        a = run(q, [f], min_key_coverage=0.6, confidence_high=0.5, confidence_margin=expected + 0.01)
        self.assertEqual(a.confidence, "Medium")          # margin over the runner-up (none: 0) too small
        a = run(q, [f], min_key_coverage=0.6, confidence_high=0.5, confidence_margin=expected - 0.01)
        self.assertEqual(a.confidence, "High")

    def test_below_threshold(self):
        q = "How long are audit logs kept?"
        best = 0.55 + 0.2 + 0.1 + 0.15 * 0.8
        for min_score, refused in ((best + 0.001, True), (best - 0.001, False)):
            with self.subTest(min_score=min_score):
                a = run(q, [self.FACT], min_score=min_score)
                self.assertEqual(a.refused, refused)
                self.assertEqual(a.reasons, ["below_threshold"] if refused else [])

    def test_extra_sentence_within_margin(self):
        q = "Which team reviews audit logs and backups?"
        facts = [fact("a#p0", "The security team reviews audit logs monthly.", 0.5),
                 fact("b#p0", "Backups are reviewed by the same team.", 0.5)]
        # a: 4 of 5 terms, type (team) 1, proximity 4/4 -> 0.55*0.8+0.2+0.1+0.075
        # b: 3 of 5 terms, type 1, proximity 3/3          -> 0.55*0.6+0.2+0.1+0.075
        sa, sb = 0.55 * 0.8 + 0.2 + 0.1 + 0.075, 0.55 * 0.6 + 0.2 + 0.1 + 0.075
        cases = [({"min_key_coverage": 0.5}, ["a#p0", "b#p0"]),                       # b adds "backup"
                 ({"min_key_coverage": 0.5, "extra_sentence_margin": sa - sb - 0.01}, ["a#p0"]),
                 ({"min_key_coverage": 0.5, "max_extra_sentences": 0}, ["a#p0"]),
                 ({"min_key_coverage": 0.5, "max_sentences": 1}, ["a#p0"]),
                 ({}, ["a#p0"])]                     # b's chunk covers 3/5 < 0.7 of the key terms
        for answer_cfg, cited in cases:
            with self.subTest(cfg=answer_cfg):
                a = run(q, facts, **answer_cfg)
                self.assertEqual(a.citations(), cited)
        a = run(q, facts, min_key_coverage=0.5)
        self.assertAlmostEqual(a.detail["parts"][0]["best_score"], sa, places=6)
        self.assertAlmostEqual(a.detail["parts"][0]["chosen"][1]["score"], sb, places=6)


class RefusalTest(unittest.TestCase):
    def test_no_evidence_and_no_terms(self):
        self.assertEqual(run("How long?", []).reasons, ["no_evidence"])
        a = run("What is it?", [ScoringTest.FACT])
        self.assertEqual((a.refused, a.reasons), (True, ["no_question_terms"]))
        self.assertEqual(a.claim("not in context"), "not in context")
        self.assertEqual(a.citations(), [])

    def test_near_miss_absent_qualifier(self):
        # "gift" is unseen (largest idf) and "card" is rare: both are key terms; the chunk
        # holds only "card", idf(card) / (idf(gift) + idf(card)) < 0.7.
        a = run("What is the refund window for gift cards?", [REFUND_FACT], INDEX, REFUND)
        part = a.detail["parts"][0]
        self.assertEqual((a.refused, a.reasons), (True, ["key_terms_not_covered"]))
        self.assertEqual(part["key_terms"], ["gift", "card"])
        self.assertAlmostEqual(part["key_coverage"], INDEX.idf("card") / (INDEX.idf("gift") + INDEX.idf("card")),
                               places=6)

    def test_answerable_twin_of_the_near_miss(self):
        a = run("What is the refund window for card payments?", [REFUND_FACT], INDEX, REFUND)
        self.assertFalse(a.refused)
        self.assertEqual(a.citations(), ["refund-policy#p2"])
        for s in a.sentences:
            for unit in split_sentences(s.sentence):
                self.assertIn(unit, REFUND_FACT.quote)

    def test_answer_type_missing(self):
        q = "How often are audit logs reviewed?"
        no_value = fact("a#p0", "Audit logs are reviewed by the security team.")
        with_value = fact("b#p0", "Audit logs are reviewed every week.", 0.3)
        a = run(q, [no_value])
        self.assertEqual((a.refused, a.reasons), (True, ["answer_type_missing"]))
        a = run(q, [no_value, with_value])
        self.assertEqual(a.sentences, [AnswerSentence("Audit logs are reviewed every week.", "b", 1, "b#p0")])

    def test_answer_pending(self):
        q = "What classification applies to training data?"
        f = fact("a#p0", "The classification of training data is being reviewed by the Council.")
        a = run(q, [f])
        self.assertEqual((a.refused, a.reasons), (True, ["answer_pending"]))
        settled = fact("a#p0", "The classification of training data is Confidential.")
        self.assertFalse(run(q, [settled]).refused)

    def test_echoed_value_is_not_an_answer(self):
        q = "When does the Black Friday promotion start?"
        f = fact("p#p1", "These terms apply to promotions such as Black Friday offers.")
        self.assertEqual(run(q, [f]).reasons, ["answer_type_missing"])
        dated = fact("p#p2", "The Black Friday promotion starts on 27 November.")
        self.assertEqual(run(q, [dated]).citations(), ["p#p2"])

    def test_value_sentence_preferred_for_value_questions(self):
        q = "How long are audit logs kept?"
        f = fact("a#p0", "Audit logs are kept by the audit logs team, audit logs kept. They are kept for 90 days.")
        a = run(q, [f], min_key_coverage=0.5)
        self.assertIn("90 days", a.claim("x"))


class KnownIndex(FakeIndex):
    """FakeIndex that also answers doc_freq, so unseen terms are told apart."""

    def doc_freq(self, term):
        return self.df.get(term, 0)


KNOWN = KnownIndex(DATA["num_chunks"], DATA["doc_freq"])


def idf(df, n=DATA["num_chunks"]):
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


class UnknownTermsTest(unittest.TestCase):
    def test_unknown_names(self):
        table = [
            ("Does Halvard support GraphQL?", ["Halvard", "GraphQL"]),
            ("Is HIPAA covered for refund requests?", ["HIPAA"]),
            ("Which pallet goes to WH-12?", []),             # known code
            ("Which pallet goes to WH-99?", ["WH-99"]),       # unseen code
            ("Refunds for a card in Germany?", ["Germany"]),  # capital not at the start
            ("Refunds are approved by whom?", []),            # capital at the start is not a name
            ("Is it OK to refund a card?", []),              # question scaffold is no name
            # capitals that mark nothing: a question in capitals or random case
            ("DOES HALVARD REFUND CARDS?", []),
            ("dOeS Halvard refund cards?", []),
            ("DOES HALVARD REFUND CARDS IN WH-99?", ["WH-99"]),   # a digit still marks a code
        ]
        for question, names in table:
            with self.subTest(question=question):
                self.assertEqual(unknown_names(question, KNOWN), names)

    def test_unknown_name_written_otherwise_in_the_evidence(self):
        # "MFA" is a synonym of "multi-factor authentication" (synonyms.py): the name is
        # known when the evidence holds the long form, unknown when it does not
        from mini_rag.answer.relevance import expansion_bridges
        q = "Is MFA required for refunds?"
        bridges = expansion_bridges(q, {}, Analyzer())
        self.assertIn(frozenset({"multi", "factor", "authent"}), bridges["mfa"])
        long_form = frozenset(Analyzer().analyze("Multi-factor authentication is required."))
        self.assertEqual(unknown_names(q, KNOWN, bridges, [long_form]), [])
        self.assertEqual(unknown_names(q, KNOWN, bridges, [frozenset({"refund"})]), ["MFA"])
        self.assertEqual(unknown_names(q, KNOWN, bridges), ["MFA"])
        # a name of which one term is bridged by the corpus (here an expansion rule) is known
        self.assertEqual(unknown_names("Which pallet goes to WH-99?", KNOWN), ["WH-99"])
        self.assertEqual(unknown_names("Which pallet goes to WH-99?", KNOWN, {"99": [frozenset({"twelv"})]}), [])

    def test_unknown_subject(self):
        # the head of the noun phrase after "is there / are there": known terms of the
        # fixture index are refund, card, storage, plan, ...; parking, gym, locker are not
        table = [
            ("Is there parking available at the Leeds office?", "parking"),
            ("Is there a gym?", "gym"),
            ("Are there any lockers for visitors?", "lockers"),
            ("Is there free parking for visitors?", "free parking"),   # head "parking"
            ("Is there a refund for annual plans?", None),               # known head
            ("Is there card storage?", None),                            # head "storage" known
            ("Is parking available?", None),                             # not existential
            ("Are there refunds?", None),
        ]
        for question, want in table:
            with self.subTest(question=question):
                self.assertEqual(unknown_subject(question, KNOWN), want)
        self.assertIsNone(unknown_subject("Is there a gym?", FakeIndex(10, {})))   # no doc_freq: never
        a = run("Is there parking available for annual plan customers?", [REFUND_FACT], KNOWN)
        self.assertEqual((a.refused, a.reasons), (True, ["unknown_subject"]))

    def test_category_terms(self):
        table = [
            ("Which algorithm is used to hash passwords?", ["algorithm"]),       # ended by "is"
            ("What is the maximum page size for list endpoints?", ["maximum", "size"]),
            ("What is the refund window for cards?", ["window"]),
            ("Which team approves refunds?", ["team"]),                           # no ending word: first
            # three words, then a clause opener: the third is the verb, the second the head
            ("What extra step applies when data are typed by hand?", ["step"]),
            ("What minimum notice applies if a plan is cancelled?", ["minimum", "notic"]),
            ("How long are audit logs kept?", []),                                # not which/what
            ("What does it cost?", []),
        ]
        for question, terms in table:
            with self.subTest(question=question):
                self.assertEqual(category_terms(question, KNOWN), terms)

    def test_category_word_is_not_a_key_term(self):
        a = run("Which window applies to a refund on a card?", [REFUND_FACT], KNOWN)
        part = a.detail["parts"][0]
        self.assertNotIn("window", part["key_terms"])
        self.assertFalse(a.refused)

    def test_unknown_name_refuses(self):
        a = run("What is the refund window in Germany?", [REFUND_FACT], KNOWN, REFUND)
        self.assertEqual((a.refused, a.reasons), (True, ["unknown_name"]))
        self.assertEqual(a.detail["parts"][0]["unknown_names"], ["Germany"])

    def test_key_terms_are_known_terms(self):
        # refund (df 10), window (df 4), card (df 2) are known; gift (df 0) is not.  Key terms
        # have idf >= 0.6 * idf(card).  The chunk's heading "Refund window" supplies window, so
        # every key term is covered, and the share of the whole question (gift included) is
        # (idf(10) + idf(4) + idf(2)) / (... + idf(0)) >= 0.3: on topic, answered.
        a = run("How long is the refund window for gift cards?", [REFUND_FACT], KNOWN, REFUND)
        part = a.detail["parts"][0]
        self.assertEqual(part["unknown_terms"], ["gift"])
        self.assertEqual(part["key_terms"], ["refund", "window", "card"])
        self.assertEqual(part["key_coverage"], 1.0)
        self.assertFalse(a.refused)
        # Without the heading (a bare fact), window is missing: coverage falls below 0.7.
        q = "How long is the refund window for gift cards?"
        share = (idf(10) + idf(2)) / (idf(10) + idf(4) + idf(2))
        self.assertTrue(0.6 <= share < 0.7)
        a = run(q, [REFUND_FACT], KNOWN)
        self.assertAlmostEqual(a.detail["parts"][0]["key_coverage"], share, places=6)
        self.assertEqual(a.reasons, ["key_terms_not_covered"])
        # ... but the question asks for a duration, and the fact's sentence "Refunds are
        # issued to the original payment method, e.g. a card, within 5 business days."
        # states one and holds refund and card itself: share >= min_key_coverage_typed
        # when that is lowered to 0.6, on topic.
        a = run(q, [REFUND_FACT], KNOWN, min_key_coverage_typed=0.6)
        self.assertFalse(a.refused)

    def test_a_list_asked_for_whole(self):
        # "three" and "steps" are unknown (df 0): key terms are key and rotat.  Unit 0 wins
        # (it holds both, and "begins"), and the question asks for the list: all its items
        # come back, in text order; asked how rotation begins, only the first.
        idx = KnownIndex(20, {"key": 3, "rotat": 2, "new": 5, "data": 6, "old": 4, "retir": 1,
                              "encrypt": 2, "begin": 4})
        f = fact("k#p1", "1. Key rotation begins with a new key.\n2. Data is re-encrypted with the new key.\n"
                         "3. The old key is retired after rotation.")
        a = run("What are the three steps of key rotation?", [f], idx)
        self.assertEqual([c["sentence"] for c in a.detail["parts"][0]["chosen"]], [0, 1, 2])
        # each item keeps its line; the claim reads them as prose, without their enumerators
        self.assertEqual(a.sentences[0].sentence, "1. Key rotation begins with a new key.\n2. Data is "
                         "re-encrypted with the new key.\n3. The old key is retired after rotation.")
        self.assertEqual(a.claim("no"), "Key rotation begins with a new key. Data is re-encrypted with the "
                         "new key. The old key is retired after rotation.")
        a = run("How does key rotation begin?", [f], idx)
        self.assertEqual([c["sentence"] for c in a.detail["parts"][0]["chosen"]], [0])

    def test_unknown_words_weigh_in_the_question_share(self):
        # Key term refund is covered, but the unseen sourdough/starter/kit carry most of the
        # question: share = idf(10) / (idf(10) + 3 * idf(0)) < min_question_share.
        q = "Can I get a refund on a sourdough starter kit?"
        self.assertLess(idf(10) / (idf(10) + 3 * idf(0)), DEFAULTS["answer"]["min_question_share"])
        a = run(q, [REFUND_FACT], KNOWN, REFUND)
        self.assertEqual((a.refused, a.reasons), (True, ["key_terms_not_covered"]))
        self.assertEqual(a.detail["parts"][0]["key_coverage"], 0.0)
        a = run(q, [REFUND_FACT], KNOWN, REFUND, min_question_share=0.1)
        self.assertFalse(a.refused)


class StatedExceptionTest(unittest.TestCase):
    """Rule 6b: a yes/no question answered by a rule also gets that document's exception."""
    RULE = "Data in transit over public networks must use TLS 1.2 or higher."
    EXCEPTION = "The only exception to the TLS requirement is the payroll transfer, which may use SFTP."

    def test_exception_of_the_same_document_is_added(self):
        q = "May data in transit use something other than TLS 1.2?"
        facts = [fact("enc#p7", self.RULE, 0.6), fact("enc#p8", self.EXCEPTION, 0.2)]
        a = run(q, facts)
        self.assertFalse(a.refused, a.detail)
        self.assertEqual([s.chunk_id for s in a.sentences], ["enc#p7", "enc#p8"])
        self.assertEqual(a.sentences[1].sentence, self.EXCEPTION)

    def test_not_for_other_documents_other_types_or_unrelated_exceptions(self):
        q = "May data in transit use something other than TLS 1.2?"
        other_doc = [fact("enc#p7", self.RULE, 0.6), fact("hr#p8", self.EXCEPTION, 0.2)]
        self.assertEqual([s.chunk_id for s in run(q, other_doc).sentences], ["enc#p7"])
        unrelated = [fact("enc#p7", self.RULE, 0.6),
                     fact("enc#p9", "Keys are rotated yearly unless a breach occurs.", 0.2)]
        self.assertEqual([s.chunk_id for s in run(q, unrelated).sentences], ["enc#p7"])
        # a question asking for a value is answered by the value alone
        q2 = "What TLS version must data in transit over public networks use?"
        self.assertEqual([s.chunk_id for s in run(q2, [fact("enc#p7", self.RULE, 0.6),
                                                      fact("enc#p8", self.EXCEPTION, 0.2)]).sentences],
                         ["enc#p7"])


class DocumentScopeTest(unittest.TestCase):
    """A document's scope statement ("This procedure covers ...") is context for each of
    its facts, like its title and the chunk's heading (glossary.scope_table)."""
    SCOPE = "This procedure covers requests to access or delete personal data under the GDPR."
    ANSWER = "Halvard responds to data subject requests within 30 calendar days."

    class ScopeIndex:
        """The chunks and analyzer scope_table reads; no idf, so every term weighs 1."""

        def __init__(self, *chunks):
            self.chunks = [SimpleNamespace(doc_id=c.split("#")[0], text=t) for c, t in chunks]
            self.analyzer = Analyzer()

    def test_scope_terms_cover_the_question(self):
        # terms day, answer, gdpr, access, request: the sentence holds day, request and
        # answer (through "responds"), 3 of 5 = 0.6 < min_key_coverage 0.7; with the
        # scope statement, all 5
        q = "How many days do we have to answer a GDPR access request?"
        facts = [fact("dsr#p6", self.ANSWER)]
        with_scope = self.ScopeIndex(("dsr#p1", self.SCOPE), ("dsr#p6", self.ANSWER))
        a = run(q, facts, with_scope)
        self.assertFalse(a.refused, a.detail)
        self.assertEqual(a.sentences[0].sentence, self.ANSWER)
        # the same scope statement in another document is no context for this one
        elsewhere = self.ScopeIndex(("hr#p1", self.SCOPE), ("dsr#p6", self.ANSWER))
        self.assertEqual(run(q, facts, elsewhere).reasons, ["key_terms_not_covered"])
        self.assertEqual(run(q, facts).reasons, ["key_terms_not_covered"])


class GlossaryEntryTest(unittest.TestCase):
    """A glossary entry answers questions about the term it defines, not about the words
    its definition uses in passing."""
    ENTRY = "**Service credit**: a discount on a future invoice given when Halvard misses an uptime commitment."

    def test_entry_for_another_term_is_no_answer(self):
        facts = [fact("glossary#p10", self.ENTRY)]
        a = run("What uptime commitment does Halvard give?", facts)
        self.assertTrue(a.refused)
        self.assertEqual(a.reasons, ["key_terms_not_covered"])
        for q in ("What is a service credit?", "Tell me about service credits."):
            with self.subTest(q=q):
                a = run(q, facts)
                self.assertFalse(a.refused, a.detail)
                self.assertEqual(a.sentences[0].sentence, self.ENTRY)


class StatedRangeTest(unittest.TestCase):
    def test_number_within_a_stated_bound(self):
        # terms 50, discount, refund (weight 1 each, no index): "50" is covered only through
        # "40% or more" (synonyms.range_bridges), 2/3 < min_key_coverage without it
        q = "Is a 50% discount refundable?"
        facts = [fact("refund#p13", "Purchases made with a discount of 40% or more are non-refundable.")]
        self.assertFalse(run(q, facts).refused)
        off = run(q, facts, synonyms=False)
        self.assertEqual((off.refused, off.reasons), (True, ["key_terms_not_covered"]))
        self.assertTrue(run("Is a 30% discount refundable?", facts).refused)   # below the bound


class AnswerShapeTest(unittest.TestCase):
    def test_citations_capped_at_max_citations(self):
        # Six chunks each holding a different key term: every one is worth adding, but the
        # answer may cite at most [guards] max_citations chunks.
        words = ["audit", "log", "storag", "pallet", "temperatur", "window"]
        facts = [fact("d%d#p0" % i, "The %s rule applies to every %s item." % (w, w), 0.5)
                 for i, w in enumerate(words)]
        q = "Which rule covers audit, log, storage, pallet, temperature and window items?"
        c = cfg(min_key_coverage=0.0, min_question_share=0.0, extra_sentence_margin=1.0,
                max_extra_sentences=6)
        c["guards"]["max_citations"] = 3
        a = phase_c(q, facts, Retrieval(question=q, hits=[]), None, c)
        self.assertFalse(a.refused)
        self.assertEqual(len(a.citations()), 3)

    def test_two_part_question_partial_answer(self):
        q = "What is the refund window and does it apply to gift cards?"
        a = run(q, [REFUND_FACT], INDEX, REFUND)
        self.assertFalse(a.refused)
        self.assertEqual([p["outcome"] for p in a.detail["parts"]], ["answered", "key_terms_not_covered"])
        self.assertEqual(a.citations(), ["refund-policy#p2"])

    def test_all_parts_refused_lists_each_reason_once(self):
        q = "What about gift cards? And vouchers?"
        a = run(q, [REFUND_FACT], INDEX, REFUND)
        self.assertEqual((a.refused, a.reasons), (True, ["key_terms_not_covered"]))

    def test_sentences_of_one_chunk_join_in_text_order(self):
        q = "How long are audit logs kept and when are they deleted?"
        f = fact("audit#p1", "Audit logs are kept for 90 days. Backups are separate. After that the logs are deleted.")
        a = run(q, [f])
        self.assertEqual(a.sentences, [AnswerSentence(
            "Audit logs are kept for 90 days. After that the logs are deleted.", "audit", 1, "audit#p1")])
        for unit in split_sentences(a.sentences[0].sentence):
            self.assertIn(unit, f.quote)

    def test_verbatim_on_fixture_questions(self):
        facts = [REFUND_FACT, fact("audit-standard#p1", REFUND.hits[-1].text, 0.25)]
        for q in ("How long do customers have to request a refund?", "How long are audit logs kept?",
                  "Where are refunds issued?", "When are audit logs deleted?"):
            with self.subTest(q=q):
                a = phase_c(q, facts, REFUND, INDEX, DEFAULTS)
                self.assertFalse(a.refused, a.detail)
                quotes = {f.chunk_id: f.quote for f in facts}
                for s in a.sentences:
                    for unit in split_sentences(s.sentence):
                        self.assertIn(unit, quotes[s.chunk_id])
                self.assertLessEqual(len(a.sentences), DEFAULTS["answer"]["max_sentences"])
                self.assertEqual(len(a.citations()), len(a.sentences))   # one row per chunk

    def test_deterministic_and_json(self):
        q = "How long do customers have to request a refund?"
        one = json.dumps(phase_c(q, [REFUND_FACT], REFUND, INDEX, DEFAULTS).to_json(), sort_keys=True)
        two = json.dumps(phase_c(q, [REFUND_FACT], REFUND, INDEX, DEFAULTS).to_json(), sort_keys=True)
        self.assertEqual(one, two)
        back = Answer.from_json(json.loads(one))
        self.assertEqual(back.to_json(), json.loads(one))

    def test_same_bytes_whatever_the_hash_seed(self):
        script = ("import json\n"
                  "from tests.test_synthesize import REFUND_FACT, REFUND, INDEX, fact\n"
                  "from mini_rag.config import DEFAULTS\n"
                  "from mini_rag.answer.synthesize import phase_c\n"
                  "facts = [REFUND_FACT, fact('a#p0', 'Audit logs are kept for 90 days. They are deleted after.')]\n"
                  "for q in ('How long do customers have to request a refund?', 'When are audit logs deleted?',\n"
                  "          'What is the refund window and how long are logs kept?'):\n"
                  "    print(json.dumps(phase_c(q, facts, REFUND, INDEX, DEFAULTS).to_json(), sort_keys=True))\n")
        root = str(Path(__file__).resolve().parents[1])
        outputs = []
        for seed in ("0", "4242"):
            env = dict(os.environ, PYTHONHASHSEED=seed)
            proc = subprocess.run([sys.executable, "-c", script], cwd=root, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
            self.assertEqual(proc.returncode, 0, proc.stderr.decode())
            outputs.append(proc.stdout)
        self.assertEqual(outputs[0], outputs[1])
        self.assertEqual(len(outputs[0].splitlines()), 3)

    def test_format_answer(self):
        a = Answer([AnswerSentence("Refunds take 5 days.", "refunds", 1, "refunds#p2"),
                    AnswerSentence("- Pro plan:\n  30 days", "plans", 3, "plans#p7")], "Medium")
        self.assertEqual(format_answer(a, "not in context"),
                         "ANSWER:\n1. Refunds take 5 days. (refunds, p1, refunds#p2)\n"
                         "2. Pro plan: 30 days (plans, p3, plans#p7)\nCONFIDENCE: Medium")
        # issue 42: the page only for a document with pages (plans has; refunds, Markdown, not)
        self.assertEqual(format_answer(a, "not in context", paged={"plans"}),
                         "ANSWER:\n1. Refunds take 5 days. (refunds, refunds#p2)\n"
                         "2. Pro plan: 30 days (plans, p3, plans#p7)\nCONFIDENCE: Medium")
        refused = Answer([], "Low", True, ["no_evidence"])
        self.assertEqual(format_answer(refused, "Not found in provided PDFs"), "Not found in provided PDFs")


class ConceptWeightsTest(unittest.TestCase):
    """A question term weighs no more than its commonest one-word equivalent (synonyms.py)."""

    class Index:
        IDF = {"depart": 5.4, "staff": 4.2, "member": 5.9, "employe": 2.9, "present": 4.0, "gift": 1.0,
               "quit": 7.0, "resign": 6.5}

        def idf(self, t):
            return self.IDF.get(t, 7.0)

        def doc_freq(self, t):
            return 0 if t in ("quit",) or t not in self.IDF else 3

    def weights(self, question):
        from mini_rag.answer.relevance import expansion_bridges
        from mini_rag.answer.synthesize import _concept_weights
        a = Analyzer()
        terms = [t for t in a.analyze(question)]
        return _concept_weights(terms, self.Index(), expansion_bridges(question, {}, a))

    def test_table(self):
        cases = [
            # "staff member" is "employee" (2.9): both its words weigh 2.9; "departing" has no group
            ("departing staff member", {"depart": 5.4, "staff": 2.9, "member": 2.9}),
            # a rarer equivalent does not raise a weight: quit (7.0, df 0) -> resign 6.5
            ("resign", {"resign": 6.5}),
            ("quit", {"quit": 6.5}),
            # a kinds line is no equivalence: a present is a gift, not the other way round
            ("present", {"present": 4.0}),
        ]
        for question, want in cases:
            with self.subTest(question=question):
                self.assertEqual(self.weights(question), want)


if __name__ == "__main__":
    unittest.main()
