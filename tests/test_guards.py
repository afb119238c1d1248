"""Guards (mini_rag/guard/guards.py): citations, risk, freshness, ambiguity, low confidence."""
import datetime
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mini_rag.guard import guards  # noqa: E402
from mini_rag.text.analysis import Analyzer  # noqa: E402
from mini_rag.config import DEFAULTS  # noqa: E402
from mini_rag.errors import MiniRagError  # noqa: E402
from mini_rag.records import Fact, Hit, Retrieval  # noqa: E402

AN = Analyzer()
GUARDS = dict(DEFAULTS["guards"], as_of="2026-11-01")


def fact(doc, n, text):
    return Fact(quote=text, pdf=doc, page=1, chunk_id="%s#p%d" % (doc, n), score=0.5)


class Citations(unittest.TestCase):
    RET = ["a#p0", "a#p1", "b#p0", "c#p0", "d#p0", "e#p0", "f#p0"]

    def test_table(self):
        cases = [
            ("valid answer", ["a#p0", "b#p0"], False, []),
            ("refusal may cite nothing", [], True, []),
            ("non-refusal without citations", [], False, ["answer has no citations"]),
            ("unknown id", ["a#p0", "x#p9"], False, ["citation 'x#p9' does not match any retrieved chunk"]),
            ("duplicate", ["a#p0", "a#p0"], False, ["duplicate citation 'a#p0'"]),
            ("missing slot", ["a#p0", None], False, ["sentence 2 has no citation"]),
            ("empty string slot", [""], False, ["sentence 1 has no citation"]),
            ("six distinct, at most five", ["a#p0", "a#p1", "b#p0", "c#p0", "d#p0", "e#p0"], False,
             ["6 citations, at most 5 allowed"]),
            ("five is fine", ["a#p0", "a#p1", "b#p0", "c#p0", "d#p0"], False, []),
            ("errors collected together", ["x#p1", "x#p1"], False,
             ["citation 'x#p1' does not match any retrieved chunk",
              "citation 'x#p1' does not match any retrieved chunk", "duplicate citation 'x#p1'"]),
        ]
        for name, cites, refusal, errors in cases:
            with self.subTest(name):
                check = guards.validate_citations(cites, self.RET, refusal, max_citations=5)
                self.assertEqual(check.errors, errors)
                self.assertEqual(check.valid, not errors)

    def test_keyword_overlap_is_a_warning_only(self):
        texts = {"a#p0": "Refunds are paid within 10 business days.", "b#p0": "The cafeteria opens at 8."}
        check = guards.validate_citations(["a#p0", "b#p0"], self.RET, False, 5,
                                          sentences=["Refunds are paid within 10 business days.",
                                                     "Invoices are retained for seven years."],
                                          chunk_texts=texts, analyzer=AN)
        self.assertTrue(check.valid)
        self.assertEqual(check.warnings, ["sentence 2 shares no keyword with its cited chunk 'b#p0'"])


class Risk(unittest.TestCase):
    def test_table(self):
        risk = DEFAULTS["risk"]
        cases = [
            ("What is our refund policy?", "high", ["policy", "refund"]),
            ("How long do we retain chat transcripts?", "high", ["retain"]),
            ("Is personal data deleted after closure?", "high", ["delete", "personal data"]),  # deletion = delete: one position, first phrase
            ("What is the API rate limit?", "medium", ["rate limit"]),      # longer phrase wins
            ("What are the API rate limits and the export limit?", "high", ["limit", "rate limit"]),
            ("What is the monthly uptime commitment?", "medium", ["uptime"]),
            ("Can we store SSNs in plaintext?", "high", ["SSNs"]),
            ("When does the cafeteria open?", "low", []),
        ]
        for q, level, matched in cases:
            with self.subTest(q):
                r = guards.classify_risk(q, AN, risk)
                self.assertEqual((r.level, r.matched), (level, matched))

    def test_equal_length_high_beats_medium(self):
        r = guards.classify_risk("quota", AN, {"high": ["quota"], "medium": ["quota"]})
        self.assertEqual(r.level, "high")


class Freshness(unittest.TestCase):
    AS_OF = datetime.date(2026, 11, 1)

    def _days_before(self, n):
        return (self.AS_OF - datetime.timedelta(days=n)).isoformat()

    def test_table(self):
        d = self._days_before
        cases = [
            # (name, effective, metadata, risk, stale rule or None)
            ("review_by passed", "2026-01-01", {"review_by": "2026-10-31"}, "high", "review_by"),
            ("review_by on as_of is not passed", "2020-01-01", {"review_by": "2026-11-01"}, "high", None),
            ("review_by wins over an old effective date", "2010-01-01", {"review_by": "2027-01-01"}, "high", None),
            ("high risk: 366 days old", d(366), {}, "high", "effective"),
            ("high risk: 365 days old", d(365), {}, "high", None),
            ("medium risk: 731 days old", d(731), {}, "medium", "effective"),
            ("medium risk: 366 days old", d(366), {}, "medium", None),
            ("low risk uses freshness_days too", d(731), {}, "low", "effective"),
            ("no dates: nothing to measure", "", {}, "high", None),
            ("unreadable review_by counts as stale", "2026-01-01", {"review_by": "soon"}, "high",
             "invalid_review_by"),
            # a document no longer in force is stale whatever its dates and the risk
            ("superseded_by names a successor", d(10), {"superseded_by": "new-policy"}, "low", "superseded"),
            ("status superseded", d(10), {"status": "Superseded"}, "low", "superseded"),
            ("status withdrawn wins over review_by", d(10), {"status": "withdrawn", "review_by": "2030-01-01"},
             "high", "superseded"),
            ("status current", d(10), {"status": "current", "superseded_by": " "}, "low", None),
        ]
        for name, effective, meta, risk, rule in cases:
            with self.subTest(name):
                res = guards.check_freshness([("x#p1", "x", effective, meta)], risk, GUARDS)
                self.assertEqual(res.stale, rule is not None)
                self.assertEqual([s["rule"] for s in res.sources], [rule] if rule else [])
                self.assertEqual(res.threshold_days, 365 if risk == "high" else 730)

    def test_age_is_reported(self):
        res = guards.check_freshness([("x#p1", "x", "2024-11-01", {})], "high", GUARDS)
        self.assertEqual(res.sources, [{"chunk_id": "x#p1", "doc_id": "x", "age_days": 365 + 365,
                                        "date": "2024-11-01", "rule": "effective"}])

    def test_successor_is_reported(self):
        res = guards.check_freshness([("old#p1", "old", "2019-04-01", {"superseded_by": "new", "review_by": "2020-04-01"})],
                                     "low", GUARDS)
        self.assertEqual(res.sources, [{"chunk_id": "old#p1", "doc_id": "old", "by": "new", "rule": "superseded"}])

    def test_as_of_comes_from_config(self):
        cfg = dict(GUARDS, as_of="2030-01-01")
        res = guards.check_freshness([("x#p1", "x", "2026-01-01", {"review_by": "2027-01-01"})], "high", cfg)
        self.assertTrue(res.stale)
        with self.assertRaises(MiniRagError) as ctx:
            guards.check_freshness([], "high", dict(GUARDS, as_of="01/11/2026"))
        self.assertEqual(str(ctx.exception), "config [guards] as_of must be a date YYYY-MM-DD, got '01/11/2026'")


class Ambiguity(unittest.TestCase):
    CLARIFY = DEFAULTS["clarify"]

    def check(self, q, facts=()):
        return guards.check_ambiguity(q, list(facts), AN, self.CLARIFY, GUARDS)

    def test_vague_reference(self):
        cases = [
            ("Is it allowed?", True),
            ("What is the limit for that?", True),
            ("Can we do that?", True),
            ("Is it allowed to store SSNs in plaintext?", False),      # names its subject
            ("Does this apply to EU customers?", False),
            ("Is there a limit on exports?", False),                    # no referent word
        ]
        for q, want in cases:
            with self.subTest(q):
                res = self.check(q)
                self.assertEqual(res.ambiguous, want)
                self.assertEqual(res.kind, "vague_reference" if want else "")

    def test_owner_of_an_unnamed_variant(self):
        # "our plan": a possessive right before a dimension noun, and no plan named
        cases = [
            ("How much storage is included in our plan?", True, ["our plan"]),
            ("Which features does my tier include?", True, ["my tier"]),
            ("How much storage is included in our Pro plan?", False, None),   # "our pro": names it
            ("Which plan includes SSO?", False, None),                        # asks which: no owner
            ("How much storage does our workspace have?", False, None),       # not a dimension noun
        ]
        for q, want, referents in cases:
            with self.subTest(q):
                res = self.check(q)
                self.assertEqual(res.ambiguous, want)
                if want:
                    self.assertEqual((res.kind, res.detail["referents"]), ("vague_reference", referents))

    PLANS = [fact("plans", 2, "- Starter plan: downgrades take effect at the next renewal with no penalty.\n"
                              "- Enterprise plan: downgrading before the end of the term incurs a "
                              "penalty of 20% of the remaining fees.")]

    def test_variant(self):
        res = self.check("Can we downgrade without penalties?", self.PLANS)
        self.assertEqual((res.ambiguous, res.kind), (True, "variant"))
        self.assertEqual(res.detail, {"qualifiers": ["enterprise", "starter"], "chunks": ["plans#p2"]})

    def test_one_unit_enumerates_variants(self):
        f = fact("c", 1, "After cancellation, workspace content is kept for 30 days on the Free plan "
                         "and for 90 days on the Pro plan.")
        res = self.check("How long is workspace content kept after we cancel?", [f])
        self.assertEqual((res.ambiguous, res.kind), (True, "variant"))
        self.assertEqual(res.detail, {"qualifiers": ["free", "pro"], "chunks": ["c#p1"]})
        # the question names a variant; a unit missing a question term ("after we cancel"
        # asked of a table row about something else) does not enumerate the answer
        self.assertFalse(self.check("How long is workspace content kept on the Pro plan after we cancel?",
                                    [f]).ambiguous)
        self.assertFalse(self.check("How long are audit logs kept after we cancel?", [f]).ambiguous)

    def test_anchor_on_the_answer(self):
        # the variants disagree, but the answer cites a third chunk: not the answer's ambiguity
        facts = list(self.PLANS) + [fact("other", 1, "Downgrades take effect at the end of the month.")]
        q = "Can we downgrade without penalties?"
        self.assertTrue(guards.check_ambiguity(q, facts, AN, self.CLARIFY, GUARDS, anchor=["plans#p2"]).ambiguous)
        self.assertFalse(guards.check_ambiguity(q, facts, AN, self.CLARIFY, GUARDS, anchor=["other#p1"]).ambiguous)

    def test_not_variant(self):
        cases = [
            ("question names a qualifier", "What is the downgrade penalty on the Enterprise plan?", self.PLANS),
            ("same value under both qualifiers", "How long is the notice period?",
             [fact("p", 1, "- Pro plan: the notice period is 30 days.\n- Enterprise plan: the notice period is 30 days.")]),
            ("only one qualified unit", "How long is the notice period?",
             [fact("p", 1, "The notice period is 60 days.\n- Enterprise plan: the notice period is 30 days.")]),
            ("units do not speak to the question", "How are invoices delivered?",
             [fact("p", 1, "- Pro plan: the notice period is 30 days.\n- Enterprise plan: the notice period is 60 days.")]),
            ("no evidence", "How long is the notice period?", []),
            ("quantities of different kinds", "How long is the notice period?",
             [fact("p", 1, "- Pro plan: the notice period is 30 days.\n"
                           "- Enterprise plan: the notice period covers 3 sites.")]),
            ("same negation, no quantities", "Is the notice period waived?",
             [fact("p", 1, "- Pro plan: the notice period is not waived.\n"
                           "- Enterprise plan: the notice period is never waived.")]),
        ]
        for name, q, facts in cases:
            with self.subTest(name):
                self.assertFalse(self.check(q, facts).ambiguous)

    def test_region_variant_across_documents(self):
        facts = [fact("eu", 1, "EU customer data is deleted 30 days after contract end."),
                 fact("us", 1, "US customer data is deleted 90 days after contract end.")]
        res = self.check("When is customer data deleted after the contract ends?", facts)
        self.assertEqual((res.kind, res.detail["qualifiers"]), ("variant", ["eu", "us"]))
        self.assertFalse(self.check("When is EU customer data deleted after the contract ends?", facts).ambiguous)

    LINES = [fact("ops", 12, "On CM-1, material is diverted from 90 seconds before to 150 seconds after a feeder alarm."),
             fact("ops", 13, "On CM-2, material is diverted from 4 minutes before to 7 minutes after a feeder alarm.")]

    def parallel(self, q, facts, anchor=("ops#p12",)):
        return guards.check_ambiguity(q, list(facts), AN, self.CLARIFY, GUARDS, anchor=list(anchor))

    def test_parallel_variants(self):
        # Two sentences of one document, equal but for the line (CM-1 / CM-2, no dimension
        # value or noun) and its values: 11 of the 16 tokens of each match, ratio
        # 2 * 11 / 32 = 0.69 >= 0.5; the differing places are "cm-1"/"cm-2", "90 seconds"/
        # "4 minutes", "150 seconds"/"7 minutes" (3 >= 2).
        res = self.parallel("How long is material diverted after a feeder alarm?", self.LINES)
        self.assertEqual((res.ambiguous, res.kind), (True, "variant"))
        self.assertEqual(res.detail, {"qualifiers": ["cm-1", "cm-2"], "chunks": ["ops#p12", "ops#p13"]})

    def test_not_parallel_variants(self):
        other_doc = [self.LINES[0], fact("sop", 13, self.LINES[1].quote)]
        cases = [
            ("the question names a line", "How long is material diverted on CM-2 after a feeder alarm?",
             self.LINES, ["ops#p12"]),
            ("the question names a value", "Is material diverted for 150 seconds after a feeder alarm?",
             self.LINES, ["ops#p12"]),
            ("two documents: a conflict, not a variant", "How long is material diverted after a feeder alarm?",
             other_doc, ["ops#p12"]),
            ("the answer cites neither", "How long is material diverted after a feeder alarm?",
             self.LINES, ["ops#p99"]),
            ("one place differs", "How long is material diverted after a feeder alarm?",
             [self.LINES[0], fact("ops", 14, "On CM-1, material is diverted from 60 seconds before to "
                                              "150 seconds after a feeder alarm.")], ["ops#p12"]),
            ("not the same sentence", "How long is material diverted after a feeder alarm?",
             [self.LINES[0], fact("ops", 14, "Diverted material after a feeder alarm goes to waste bin 4.")],
             ["ops#p12"]),
        ]
        for name, q, facts, anchor in cases:
            with self.subTest(name):
                self.assertFalse(self.parallel(q, facts, anchor).ambiguous)


class AmbiguityThroughBridges(unittest.TestCase):
    # the answering stage's bridges (relevance.expansion_bridges): "app" is "applic"
    LOGS = [fact("ret", 1, "Application logs are kept for 90 days after creation."),
            fact("ret", 2, "Security event logs are kept for 1 year after creation.")]

    def check(self, bridges):
        return guards.check_ambiguity("How long are app logs kept?", list(self.LOGS), AN, DEFAULTS["clarify"],
                                      GUARDS, anchor=["ret#p1"], bridges=bridges)

    def test_a_synonym_names_the_variant(self):
        # without the bridge the two sentences differ in "application"/"security event"
        # and "90 days"/"1 year", and the question names neither: rule (c)
        res = self.check(None)
        self.assertEqual((res.ambiguous, res.detail["qualifiers"]), (True, ["application", "security event"]))
        self.assertFalse(self.check({"app": [frozenset(["applic"])]}).ambiguous)


class StatedDependence(unittest.TestCase):
    """Rule (d): the cited section says the answer depends on something the question leaves open."""
    CLARIFY = DEFAULTS["clarify"]
    MARKET = [fact("sop", 17, "Retention periods for executed batch records depend on the market."),
              fact("sop", 18, "| Market | Retention |\n| United States | 1 year after expiry |\n"
                              "| European Union | 5 years after certification |")]
    WHETHER = [fact("note", 9, "The data required in the dossier depend on whether the process is "
                               "standard or non-standard.")]

    def check(self, q, facts, anchor, context=None):
        return guards.check_ambiguity(q, list(facts), AN, self.CLARIFY, GUARDS, anchor=list(anchor),
                                      context=context)

    def test_table(self):
        same_section = {"sop#p17": ("Retention", "SOP"), "sop#p18": ("Retention", "SOP")}
        other_section = {"sop#p17": ("Retention", "SOP"), "sop#p18": ("Archive", "SOP")}
        batch = "How long do we keep executed batch records?"
        dossier = "What data must be in the EU dossier?"
        cases = [
            # (name, question, facts, anchor, context, ambiguous)
            ("the cited sentence states the dependence", batch, self.MARKET, ["sop#p17"], same_section, True),
            ("... but its section lists no variants", batch, self.MARKET[:1], ["sop#p17"], None, False),
            ("the question asks whether it holds always",
             "Must the data always be in the dossier?", self.WHETHER, ["note#p9"], None, False),
            ("the question asks what it depends on", "What do retention periods for batch records depend on?",
             self.MARKET, ["sop#p17"], same_section, False),
            ("the table under the same heading is cited", batch, self.MARKET, ["sop#p18"], same_section, True),
            ("a sentence of another section", batch, self.MARKET, ["sop#p18"], other_section, False),
            ("the question names a row ('US' = 'United States')",
             "How long do we keep executed batch records for the US market?", self.MARKET, ["sop#p17"],
             same_section, False),
            ("the question names a row by its words",
             "How long do we keep executed batch records in the European Union?", self.MARKET, ["sop#p17"],
             same_section, False),
            ("a region, and the rows are not known", "How long do we keep executed batch records in the US?",
             self.MARKET[:1], ["sop#p17"], None, False),
            ("the thing that depends is not what is asked", "How long is the market open?", self.MARKET,
             ["sop#p17"], None, False),
            # "EU" is a region; the variants (standard / non-standard) are not regions
            ("a qualifier of another kind names no variant", dossier, self.WHETHER, ["note#p9"], None, True),
            ("the question names one side of 'whether'", "What data must be in the dossier for a standard process?",
             self.WHETHER, ["note#p9"], None, False),
            ("the answer cites another chunk", dossier, self.WHETHER, ["note#p1"], None, False),
        ]
        for name, q, facts, anchor, context, want in cases:
            with self.subTest(name):
                res = self.check(q, facts, anchor, context)
                self.assertEqual(res.ambiguous, want)
                if want:
                    self.assertEqual(res.kind, "variant")

    def test_detail_names_the_variants(self):
        same_section = {"sop#p17": ("Retention", "SOP"), "sop#p18": ("Retention", "SOP")}
        res = self.check("How long do we keep executed batch records?", self.MARKET, ["sop#p17"], same_section)
        self.assertEqual(res.detail, {"qualifiers": ["european union", "united states"], "chunks": ["sop#p17"],
                                      "dependence": "depend on"})
        res = self.check("What data must be in the EU dossier?", self.WHETHER, ["note#p9"])
        self.assertEqual(res.detail["qualifiers"], ["non-standard", "standard"])


class SectionByVariant(unittest.TestCase):
    """Rule (d) from a heading ("... by plan") and from a table's columns ("United States
    (FDA)", "European Union (EMA)")."""
    CLARIFY = DEFAULTS["clarify"]
    PLANS = [fact("plans", 4, "- Free plan: a workspace can be closed at any time with no charge.\n"
                              "- Pro plan, monthly billing: a cancellation takes effect at month end.\n"
                              "- Pro plan, annual billing: a cancellation takes effect at renewal.\n"
                              "- Enterprise plan: an early termination fee of 50% applies when a contract "
                              "is cancelled early.")]
    BY_PLAN = {"plans#p4": ("Downgrades and cancellation by plan", "Plan changes")}
    FILING = [fact("cc", 20, "The regulatory filing that a change needs depends on its class and on the market."),
              fact("cc", 21, "| Change class | United States (FDA) | European Union (EMA) |\n"
                             "| Minor | Annual report | Type IA variation |\n"
                             "| Critical | Prior approval supplement | Type II variation |")]
    FILING_CTX = {"cc#p20": ("Regulatory filing", "SOP"), "cc#p21": ("Regulatory filing", "SOP")}

    def check(self, q, facts, anchor, context=None):
        return guards.check_ambiguity(q, list(facts), AN, self.CLARIFY, GUARDS, anchor=list(anchor),
                                      context=context)

    def test_heading_by_plan(self):
        cases = [
            ("Is there a fee for cancelling early?", self.BY_PLAN, True),
            ("Is there a fee for cancelling the Enterprise plan early?", self.BY_PLAN, False),  # names a plan
            ("Is there a fee for cancelling early?", {"plans#p4": ("Cancellation", "Plans")}, False),  # no "by plan"
            ("Is there ever a fee for cancelling early?", self.BY_PLAN, False),   # asks whether it ever holds
            # the heading's subject ("downgrades and cancellation") is not what is asked
            ("Can a workspace be closed at any time?", {"plans#p4": ("Limits by plan", "Plans")}, False),
        ]
        for q, context, want in cases:
            with self.subTest(q=q, context=context):
                self.assertEqual(self.check(q, self.PLANS, ["plans#p4"], context).ambiguous, want)
        res = self.check("Is there a fee for cancelling early?", self.PLANS, ["plans#p4"], self.BY_PLAN)
        self.assertEqual(res.detail, {"qualifiers": ["enterprise", "free", "pro"], "chunks": ["plans#p4"],
                                      "dependence": "by plan"})

    def test_paragraph_per_variant_beyond_the_evidence(self):
        # The cited paragraph names one plan; its section's other paragraphs, accepted by
        # retrieval but capped out of phase B, name the others: each opens with its plan.
        texts = ["The Free plan has no uptime commitment and no service credits.",
                 "Pro plans carry a monthly uptime commitment of 99.5%.",
                 "Enterprise plans carry a monthly uptime commitment of 99.9%."]
        heading = "Commitments by plan"
        hits = [Hit(chunk_id="sla#p%d" % i, doc_id="sla", rank=i, score=1.0, similarity=1.0, page=1, text=t,
                    heading=heading) for i, t in enumerate(texts, 2)]
        facts = [fact("sla", 2, texts[0])]
        ctx = {"sla#p2": (heading, "SLA")}
        q = "What uptime does Halvard commit to?"

        def check(question, hit_list):
            return guards.check_ambiguity(question, facts, AN, self.CLARIFY, GUARDS, anchor=["sla#p2"],
                                          context=ctx, retrieval=Retrieval(question=question, hits=hit_list))
        res = check(q, hits)
        self.assertTrue(res.ambiguous)
        self.assertEqual(res.detail, {"qualifiers": ["enterprise", "free", "pro"], "chunks": ["sla#p2"],
                                      "dependence": "by plan"})
        self.assertFalse(check(q, hits[:1]).ambiguous)       # one plan in sight: nothing to choose
        self.assertFalse(check("What uptime does the Pro plan commit to?", hits).ambiguous)
        # a paragraph naming a plan later than its fifth word does not open with it
        late = [Hit(chunk_id="sla#p3", doc_id="sla", rank=2, score=1.0, similarity=1.0, page=1,
                    text="Uptime is measured monthly for every Pro plan.", heading=heading)]
        self.assertFalse(check(q, hits[:1] + late).ambiguous)

    def test_columns_are_a_second_dimension(self):
        # the rows are chosen ("critical"), the columns (markets) are not
        res = self.check("What filing does a critical change need?", self.FILING, ["cc#p20"], self.FILING_CTX)
        self.assertTrue(res.ambiguous)
        self.assertEqual(res.detail["qualifiers"], ["european union (ema)", "united states (fda)"])
        for q in ("What filing does a critical change need in the US?",
                  "What filing does a critical change need in the European Union?"):
            with self.subTest(q=q):
                self.assertFalse(self.check(q, self.FILING, ["cc#p20"], self.FILING_CTX).ambiguous)
        # a header of attributes names no variant: one dimension, chosen by "critical"
        attrs = [self.FILING[0], fact("cc", 21, "| Change class | Filing | Timeline |\n| Critical | PAS | 4 months |"
                                                "\n| Minor | Annual report | 12 months |")]
        self.assertFalse(self.check("What filing does a critical change need?", attrs, ["cc#p20"],
                                    self.FILING_CTX).ambiguous)


class ReadTables(unittest.TestCase):
    """A table chunk's text as the corpus reader gives it (one row a line, ``Header: value;
    ...``: text/markup.read_table) names the same variants as the table written as pipe
    lines: the two classes above run again with their tables read."""
    MARKET = ("Market: United States; Retention: 1 year after expiry\n"
              "Market: European Union; Retention: 5 years after certification")
    FILING = ("Change class: Minor; United States (FDA): Annual report; European Union (EMA): Type IA variation\n"
              "Change class: Critical; United States (FDA): Prior approval supplement; "
              "European Union (EMA): Type II variation")

    def test_the_readings_are_the_readers(self):
        from mini_rag.text.markup import read_table
        for fixture, text in ((StatedDependence.MARKET[1], self.MARKET), (SectionByVariant.FILING[1], self.FILING)):
            lines = fixture.quote.split("\n")
            with self.subTest(text=text):
                rule = "|" + "---|" * (lines[0].count("|") - 1)
                self.assertEqual("\n".join(read_table(lines[:1] + [rule] + lines[1:])), text)

    def test_variant_names_and_columns(self):
        dims = (DEFAULTS["clarify"]["dimension_values"], DEFAULTS["clarify"]["dimension_nouns"])
        self.assertEqual(guards._variant_names(self.MARKET, ""), ["United States", "European Union"])
        self.assertEqual(guards._variant_names(self.FILING, ""), ["Minor", "Critical"])
        self.assertEqual(guards._column_variants(self.FILING, dims), ["United States (FDA)", "European Union (EMA)"])
        self.assertEqual(guards._column_variants(self.MARKET, dims), [])      # "Retention" names no market


class StatedDependenceReadTable(StatedDependence):
    MARKET = [StatedDependence.MARKET[0], fact("sop", 18, ReadTables.MARKET)]


class SectionByVariantReadTable(SectionByVariant):
    FILING = [SectionByVariant.FILING[0], fact("cc", 21, ReadTables.FILING)]


class LowConfidence(unittest.TestCase):
    def test_table(self):
        cases = [
            ("no hits", 0, True, ["no_evidence"], {}, ["no_hits"]),
            ("one hit is enough by default", 1, False, [], {}, []),
            ("min_chunks 2", 1, False, [], {"min_chunks": 2}, ["too_few_hits"]),
            ("phase C refused", 3, True, ["key_terms_not_covered"], {}, ["answer_refused:key_terms_not_covered"]),
            ("refused without a reason", 3, True, [], {}, ["answer_refused"]),
            ("too few and refused", 1, True, ["below_threshold"], {"min_chunks": 2},
             ["too_few_hits", "answer_refused:below_threshold"]),
        ]
        for name, hits, refused, reasons, override, want in cases:
            with self.subTest(name):
                self.assertEqual(guards.low_confidence(hits, refused, reasons, dict(GUARDS, **override)), want)


if __name__ == "__main__":
    unittest.main()
