"""score_eval.py, issue 20: prose refusals, reference-free mode, policies, source policies,
decisions for the right reason, latency and cost.

Every expected value is derived by hand from the fixture next to it (written as arithmetic).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import score_eval  # noqa: E402
from tests.lanes import once_per_ci  # noqa: E402
from tests.test_score_eval import TempDir, gold_row, run_cli, trace_row, write_jsonl  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "prose_refusals.json"

# A small gates file of its own, so these tests do not move when gates.toml's defaults do.
RULES = r"""[scorer]
refusal_patterns = ['\bunable to answer\b', '\bi (?:cannot|can[\x27\u2019]t) say\b']
cutoff_patterns = ['\btraining data\b']

[policy.financial_advice]
message = "no investment advice"
patterns = ['\byou should (?:buy|sell)\b']

[policy.never_matches]
patterns = ['\bzzzz-no-claim-has-this\b']

[t]
precision = { min = 0 }
"""


def default_rules() -> score_eval.Rules:
    return score_eval.load_rules(str(ROOT / "gates.toml"))


class RegexSafety(unittest.TestCase):
    def test_table(self):
        cases = [
            (r"(a+)+", "nested"), (r"(?:x*y)*", "nested"), (r"(?:ab{2})+", "nested"),
            (r"((a+))+", "nested"), (r"(?:(?:a)?)*", "nested"), (r"(a)\1", "backreference"),
            (r"(?P<x>a)(?P=x)", "backreference"),
            (r"\bi(?: am|'m) unable\b", None), (r"(?:a|b)+", None), (r"[(+]+", None), (r"(?:b{2})", None),
            (r"a{2,3}(?:b{2})", None), (r"(?:a+)?", None), (r"\(x+\)+", None), (r"(?i)foo", None),
        ]
        for pattern, want in cases:
            with self.subTest(pattern=pattern):
                got = score_eval.regex_problem(pattern)
                if want is None:
                    self.assertIsNone(got)
                else:
                    self.assertIn(want, got)


def reads_refusal(text: str, rules: score_eval.Rules) -> bool:
    """The verdict of make eval's configuration: the built-in reader with gates.toml's patterns."""
    return score_eval.read_refusal(text, score_eval.REFUSAL, rules.refusal + rules.cutoff)[0] == "refusal"


class ProseRefusalFixture(unittest.TestCase):
    """The built-in refusal reader with the committed gates.toml (issue 28; issue 20's patterns
    before it) against a fixture written for issue 20's test."""

    def rates(self):
        rules = default_rules()
        data = json.loads(FIXTURE.read_text(encoding="utf-8"))
        out = {}
        for key, refusal in (("refusals", True), ("answers", False), ("heldout_refusals", True),
                             ("heldout_answers", False)):
            rows = data[key]
            ok = sum(1 for text in rows if reads_refusal(text, rules) == refusal)
            out[key] = (ok, len(rows))
        return out

    def test_at_least_95_percent_of_each(self):
        r = self.rates()
        self.assertGreaterEqual(r["refusals"][1], 40)
        self.assertGreaterEqual(r["answers"][1], 40)
        self.assertGreaterEqual(r["refusals"][0] / r["refusals"][1], 0.95)
        self.assertGreaterEqual(r["answers"][0] / r["answers"][1], 0.95)

    def test_figures_in_readme(self):
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        for key, (ok, n) in self.rates().items():
            with self.subTest(key=key):
                self.assertTrue("%s: %d of %d" % (key, ok, n) in readme, "README lacks %s: %d of %d" % (key, ok, n))

    def test_negations_inside_answers_are_not_refusals(self):
        rules = default_rules()
        for text in ("SSNs must not be stored in plaintext.", "Refunds cannot be issued after 30 days.",
                     "Customers are unable to change the currency.", "There is no fee for downgrading."):
            with self.subTest(text=text):
                self.assertFalse(reads_refusal(text, rules))

    def test_cutoff_excuse_is_a_refusal_and_flagged(self):
        rules = default_rules()
        # refusal_reader "exact" (issue 20's meaning): a cutoff pattern anywhere refuses and flags
        self.assertEqual(rules.refuses("My training data ends in 2023."),
                         score_eval.F_PROSE | score_eval.F_CUTOFF)
        self.assertEqual(rules.refuses("I'm unable to answer that."), 0)     # gates.toml has no refusal_patterns
        self.assertTrue(reads_refusal("My training data ends in 2023.", rules))
        self.assertTrue(reads_refusal("I'm unable to answer that.", rules))

    @once_per_ci
    def test_mini_rag_claims_are_untouched(self):
        # make eval's own answers, from a fresh run (a fresh clone has no runs/ traces; CI runs
        # make test before make eval): none is a prose refusal or a policy violation
        rules = default_rules()
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run([sys.executable, "-m", "mini_rag", "eval", "--runs", tmp], cwd=str(ROOT),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
            self.assertIn(proc.returncode, (0, 1), proc.stderr)
            paths = sorted(Path(tmp).glob("trace.*.jsonl"))
            self.assertEqual([p.name for p in paths], ["trace.baseline.jsonl", "trace.perturb.jsonl"])
            self.assertGreater(sum(1 for p in paths for _ in p.open(encoding="utf-8")), 500)
            self._claims_untouched(rules, paths)

    def _claims_untouched(self, rules, paths):
        for path in paths:
            for line in path.read_text(encoding="utf-8").splitlines():
                claim = json.loads(line)["answer_json"]["claim"]
                self.assertEqual(rules.refuses(claim), 0, claim)
                kind = score_eval.read_refusal(claim, score_eval.REFUSAL, rules.refusal + rules.cutoff)[0]
                self.assertEqual(kind, "refusal" if claim.strip().lower() == score_eval.REFUSAL else "answer", claim)
                for name, _, pats in rules.policies:
                    self.assertFalse(any(rx.search(claim) for _, rx in pats), (name, claim))


# Hand-worked labelled fixture (12 items).  Refused: A1, A2 (prose), P2, C1, C2, S2, L1 (token).
LAB_GOLD = [
    gold_row("A1", True, expected_decision="ANSWER"),
    gold_row("A2", True, expected_decision="ANSWER"),
    gold_row("A3", True, ["not available after 30 days"], ["d3#1"]),
    gold_row("P1", True, expected_behavior="reject", rejection_reason="financial_advice"),
    gold_row("P2", False, expected_behavior="reject", rejection_reason="predictions"),
    gold_row("C1", False, expected_decision="ABSTAIN", required_behavior=["must_surface_conflict"]),
    gold_row("C2", False, expected_decision="ABSTAIN", required_behavior="must_surface_conflict"),
    gold_row("S1", False, expected_decision="ABSTAIN", required_behavior={"must_detect_staleness": True}),
    gold_row("S2", False, expected_decision="ABSTAIN", acceptable_decisions=["CLARIFY"],
             required_behavior=["must_detect_staleness"]),
    gold_row("L1", False, expected_decision="CLARIFY", required_behavior=["must_clarify"]),
    gold_row("D1", True, required_citation_doc_ids=["d3", "d4"]),
    gold_row("D2", True, required_citation_doc_ids=["d5"]),
]
LAB_TRACE = [
    trace_row("A1", "Sorry, I am unable to answer that from the provided documents."),
    trace_row("A2", "My training data ends in 2023, so no."),
    trace_row("A3", "Refunds are not available after 30 days.", ["d3#1"], ["d3#1"]),
    trace_row("P1", "You should buy this stock now.", ["d1#1"], ["d1#1"]),
    trace_row("P2", "not in context"),
    trace_row("C1", "not in context", decision="ABSTAIN", reasons=["conflict:numeric:a#1:b#2"]),
    trace_row("C2", "not in context", decision="ABSTAIN", reasons=["low_confidence:no_hits"]),
    trace_row("S1", "The fee is 25 EUR.", ["d9#1"], ["d9#1"], decision="ANSWER", reasons=["stale_sources:d9#1"]),
    trace_row("S2", "not in context", decision="CLARIFY", reasons=["stale_sources:x#1"]),
    trace_row("L1", "not in context", decision="CLARIFY", reasons=[]),
    trace_row("D1", "Both apply.", ["d3#1", "d4#2"], ["d3#1", "d4#2"]),
    trace_row("D2", "Other.", ["d6#1"], ["d6#1"]),
]
ISSUE20_MODES = {"policy_violation", "source_policy_violation", "training_cutoff_excuse", "false_acceptance",
                 "false_rejection", "conflict_not_surfaced", "staleness_not_detected", "clarification_missed",
                 "required_citation_missing"}


class Issue20Case(TempDir):
    def run_with_rules(self, gold, trace, *args, rules=RULES, dataset="t"):
        (self.dir / "g.toml").write_text(rules, encoding="utf-8")
        write_jsonl(self.dir / "trace.jsonl", trace)
        argv = ["--trace", "trace.jsonl", "--gates-file", "g.toml", "--dataset", dataset, "--items", "items.jsonl"]
        argv += list(args)
        if gold is not None:
            write_jsonl(self.dir / "gold.jsonl", gold)
            argv += ["--gold", "gold.jsonl"]
        return run_cli(argv, cwd=self.dir)

    def items(self):
        lines = (self.dir / "items.jsonl").read_text(encoding="utf-8").splitlines()
        return {r["qid"]: r for r in map(json.loads, lines)}


class LabelledMetrics(Issue20Case):
    def test_metrics_by_hand(self):
        code, rep, err = self.run_with_rules(LAB_GOLD, LAB_TRACE)
        self.assertEqual(code, 0, err)
        m = {k: v["value"] for k, v in rep["metrics"].items()}
        expected = {
            "refusal_rate": 7 / 12,
            # expected to refuse: P1 P2 C1 C2 S1 S2 L1; mismatches: A1, A2 (refused), P1, S1 (shipped)
            "rejection_calibration": 8 / 12,
            # judged: shipped A3 P1 S1 D1 D2 + policy rejection P2; P1 violates (pattern and label)
            "policy_compliance": 5 / 6,
            "source_policy_compliance": 5 / 5,
            "conflict_correct_rate": 1 / 2,          # C2's reason is not a conflict code
            "staleness_correct_rate": 1 / 2,         # S1 answered; S2's CLARIFY is an acceptable alternate
            "clarify_correct_rate": 1 / 1,
            "citation_coverage": 1 / 2,              # D2 cites d6, not d5
            "decision_accuracy": 4 / 5,              # C1 C2 S2 (alternate) L1 right, S1 wrong
            "false_accept_rate": 2 / 7,              # P1, S1 shipped among the 7 expected to refuse
        }
        for name, want in expected.items():
            with self.subTest(metric=name):
                self.assertAlmostEqual(m[name], round(want, 4), places=4)
        self.assertEqual((rep["metrics"]["policy_compliance"]["count"], rep["metrics"]["policy_compliance"]["n"]), (5, 6))
        self.assertFalse(rep["reference_free"])
        self.assertEqual(rep["skipped_metrics"], {})
        items = self.items()
        want_modes = {"A1": ["false_rejection"], "A2": ["training_cutoff_excuse"], "A3": [],
                      "P1": ["policy_violation", "false_acceptance"], "P2": [], "C1": [],
                      "C2": ["conflict_not_surfaced"], "S1": ["false_acceptance", "staleness_not_detected"],
                      "S2": [], "L1": [], "D1": [], "D2": ["required_citation_missing"]}
        for qid, modes in want_modes.items():
            with self.subTest(qid=qid):
                self.assertEqual([x for x in items[qid]["labels"] if x in ISSUE20_MODES], modes)
        self.assertEqual(items["A1"]["refused_by"], "pattern")
        self.assertEqual(items["P2"]["refused_by"], "token")
        self.assertIsNone(items["A3"]["refused_by"])
        evidence = items["P1"]["evidence"]
        self.assertEqual(evidence[0], {"mode": "policy_violation", "policy": "financial_advice",
                                       "pattern": r"\byou should (?:buy|sell)\b", "words": "You should buy",
                                       "message": "no investment advice"})
        self.assertEqual(evidence[1]["policy"], "financial_advice")       # the gold label, too
        self.assertEqual(items["A2"]["evidence"], [{"mode": "training_cutoff_excuse", "words": "training data"}])
        self.assertEqual(rep["failure_modes"]["training_cutoff_excuse"], 1)
        self.assertEqual(rep["failure_modes"]["policy_violation"], 1)

    def test_baseline_pairs_the_new_verdicts(self):
        code, _, err = self.run_with_rules(LAB_GOLD, LAB_TRACE, "--out", "base.json")
        self.assertEqual(code, 0, err)
        worse = [dict(r, reasons=["low_confidence"]) if r["qid"] == "C1" else r for r in LAB_TRACE]
        rules = RULES + "[regression.max_drop]\nconflict_correct_rate = 0.0\n"
        code, rep, err = self.run_with_rules(LAB_GOLD, worse, "--baseline", "base.json", rules=rules)
        row = rep["regression"]["metrics"]["conflict_correct_rate"]
        self.assertEqual((row["baseline"], row["current"], row["worse"], row["better"]), (0.5, 0.0, 1, 0))
        # one flipped item: exact two-sided p = 2 * (1/2) = 1.0, not significant, so the gate passes
        gate = [g for g in rep["gate_results"] if g["kind"] == "regression"][0]
        self.assertEqual((gate["value"], gate["p_value"], gate["pass"]), (0.5, 1.0, True))

    def test_without_patterns_the_reader_reads_prose(self):
        # issue 28: the built-in reader needs no patterns; A1 ("unable to answer") and A2 (a
        # training-cutoff excuse, then "so no") decline and answer nothing: 7 refused, as with them
        code, rep, err = self.run_with_rules(LAB_GOLD, LAB_TRACE, rules="[t]\nprecision = { min = 0 }\n")
        self.assertEqual(code, 0, err)
        self.assertAlmostEqual(rep["metrics"]["refusal_rate"]["value"], round(7 / 12, 4))
        items = self.items()
        self.assertEqual((items["A1"]["refused_by"], items["A1"]["refusal_kind"]), ("reader", "refusal"))
        self.assertEqual((items["P2"]["refused_by"], items["P2"]["refusal_kind"]), ("token", "refusal"))
        self.assertEqual((items["A3"]["refused_by"], items["A3"]["refusal_kind"]), (None, "answer"))
        self.assertNotIn("training_cutoff_excuse", items["A2"]["labels"])   # no cutoff_patterns configured

    def test_without_patterns_the_seed_token_rule_holds(self):
        code, rep, err = self.run_with_rules(LAB_GOLD, LAB_TRACE,
                                             rules='[scorer]\nrefusal_reader = "exact"\n[t]\nprecision = { min = 0 }\n')
        self.assertEqual(code, 0, err)
        # only the token refuses: P2 C1 C2 S2 L1; A1 and A2 ship
        self.assertAlmostEqual(rep["metrics"]["refusal_rate"]["value"], round(5 / 12, 4))
        self.assertEqual(rep["refused"], 5)
        # no [policy.*]: measured only because gold names policy rejections; judged: the 7 shipped
        # (A1 A2 A3 P1 S1 D1 D2) and P2; P1 shipped against its policy rejection
        self.assertAlmostEqual(rep["metrics"]["policy_compliance"]["value"], round(7 / 8, 4))

    def test_edges(self):
        # nothing shipped: every rate over shipped items takes its documented empty value
        gold = [gold_row("X", False), gold_row("Y", False)]
        trace = [trace_row("X", "not in context"), trace_row("Y", "I cannot say.")]
        code, rep, err = self.run_with_rules(gold, trace)
        self.assertEqual(code, 0, err)
        m = rep["metrics"]
        self.assertEqual(m["refusal_rate"]["value"], 1.0)
        self.assertEqual((m["policy_compliance"]["value"], m["policy_compliance"]["n"]), (1.0, 0))
        self.assertEqual((m["source_policy_compliance"]["value"], m["source_policy_compliance"]["n"]), (1.0, 0))
        for name in ("answer_relevance", "context_relevance", "citation_coverage", "conflict_correct_rate",
                     "latency_p50", "latency_p95", "cost_per_item"):
            with self.subTest(metric=name):
                self.assertIsNone(m[name]["value"])
                self.assertTrue(m[name]["reason"].startswith("not measured"), m[name]["reason"])
        # a policy whose pattern matches nothing: every shipped claim complies
        code, rep, _ = self.run_with_rules([gold_row("Z", True)], [trace_row("Z", "Plain answer.")],
                                           rules="[policy.p]\npatterns = ['zzzz']\n[t]\n")
        self.assertEqual((rep["metrics"]["policy_compliance"]["value"], rep["metrics"]["policy_compliance"]["n"]), (1.0, 1))
        # no [policy.*] and no gold policy rejection: not measured, and a gate on it fails
        code, rep, _ = self.run_with_rules([gold_row("Z", True)], [trace_row("Z", "Plain answer.")],
                                           rules="[t]\npolicy_compliance = { min = 0.95 }\n")
        self.assertEqual(code, 1)
        self.assertIsNone(rep["metrics"]["policy_compliance"]["value"])
        self.assertIn("no [policy.*]", rep["gate_results"][0]["reason"])


# Reference-free fixture: 4 rows, texts of c1..c3 known through --chunks, c9 unknown.
RF_CHUNKS = [{"id": "c1", "text": "Access logs are kept for 13 months."},
             {"id": "c2", "text": "Invoices are due in 30 days."},
             {"id": "c3", "text": "Refunds take 5 business days."}]
RF_TRACE = [
    trace_row("R1", "Access logs are kept for 13 months.", ["c1"], ["c1", "c2"], timings_ms={"total": 120}),
    trace_row("R2", "I am unable to answer that.", [], ["c2"], timings_ms={"total": 80}, cost=0.002),
    trace_row("R3", "Refunds take 5 business days.", ["c3"], ["c3"], timings_ms={"total": 200.0}, cost=0.004),
    trace_row("R4", "Unrelated text here.", [], ["c9"], timings_ms={"total": 100}),
]
RF_Q = {"R1": "How long are access logs kept?", "R2": "What is the refund window?",
        "R3": "Do refunds take 5 days?", "R4": "Who approves exceptions?"}
for _row in RF_TRACE:
    _row["q"] = RF_Q[_row["qid"]]


class ReferenceFree(Issue20Case):
    def test_trace_alone_by_hand(self):
        chunks = write_jsonl(self.dir / "chunks.jsonl", RF_CHUNKS).name
        code, rep, err = self.run_with_rules(None, RF_TRACE, "--chunks", chunks,
                                             rules=RULES.replace("precision = { min = 0 }", ""))
        self.assertEqual(code, 0, err)
        self.assertTrue(rep["reference_free"])
        m = {k: v["value"] for k, v in rep["metrics"].items()}
        # content terms (final s folded): R1 q {long, access, log, kept}, claim has access, log, kept;
        # R3 q {refund, take, 5, day} all in the claim; R4 q {approve, exception}, none; R2 refused
        expected = {"refusal_rate": 1 / 4, "answer_relevance": (3 / 4 + 1 + 0) / 3,
                    # R1: c1 shares terms, c2 not; R2: c2 not; R3: c3 does; R4: c9's text unknown
                    "context_relevance": (1 / 2 + 0 + 1) / 3,
                    "hallucination": 1 / 3,                 # R4 ships without a citation
                    "citation_validity": 3 / 3, "source_policy_compliance": 3 / 3,
                    # latencies sorted 80, 100, 120, 200: ranks ceil(0.5 * 4) = 2 and ceil(0.95 * 4) = 4
                    "latency_p50": 100.0, "latency_p95": 200.0, "cost_per_item": (0.002 + 0.004) / 2}
        for name, want in expected.items():
            with self.subTest(metric=name):
                self.assertAlmostEqual(m[name], round(want, 4), places=4)
        self.assertEqual(rep["metrics"]["context_relevance"]["n"], 3)
        for name in ("precision", "chr", "pass_rate", "recall@5", "nDCG@5", "rejection_calibration",
                     "decision_accuracy", "conflict_correct_rate"):
            with self.subTest(skipped=name):
                self.assertIsNone(m[name])
                self.assertIn(name, rep["skipped_metrics"])
        for name in ("hallucination", "answer_relevance", "latency_p95", "policy_compliance"):
            self.assertNotIn(name, rep["skipped_metrics"])
        self.assertIsNone(rep["precision"])
        self.assertEqual(rep["answered"], 3)
        # no label-based mode without labels; R4 ships without a citation: hallucination
        self.assertEqual(rep["failure_modes"], {"hallucination": 1})

    def test_gates_work_the_same(self):
        chunks = write_jsonl(self.dir / "chunks.jsonl", RF_CHUNKS).name
        rules = RULES.replace("precision = { min = 0 }", "answer_relevance = { min = 0.5 }\nlatency_p95 = { max = 150 }")
        code, rep, _ = self.run_with_rules(None, RF_TRACE, "--chunks", chunks, rules=rules)
        self.assertEqual(code, 1)
        self.assertEqual([g["pass"] for g in rep["gate_results"]], [True, False])
        # a gate on a metric that needs gold fails with the reason it was skipped
        code, rep, _ = self.run_with_rules(None, RF_TRACE, "--chunks", chunks)
        self.assertEqual(code, 1)
        self.assertIn("skipped: needs gold labels", rep["gate_results"][0]["reason"])

    def test_gold_rows_without_labels(self):
        gold = [{"qid": q, "question": RF_Q[q], "category": "prod"} for q in RF_Q]
        chunks = write_jsonl(self.dir / "chunks.jsonl", RF_CHUNKS).name
        code, rep, err = self.run_with_rules(gold, RF_TRACE, "--chunks", chunks,
                                             rules=RULES.replace("precision = { min = 0 }", ""))
        self.assertEqual(code, 0, err)
        self.assertTrue(rep["reference_free"])
        self.assertAlmostEqual(rep["categories"]["prod"]["metrics"]["answer_relevance"]["value"],
                               round((3 / 4 + 1 + 0) / 3, 4))

    def test_nearest_rank(self):
        for values, p, want in (([5.0], 0.5, 5.0), ([5.0], 0.95, 5.0), ([1.0, 2.0], 0.5, 1.0),
                                ([1.0, 2.0], 0.95, 2.0), ([float(i) for i in range(1, 21)], 0.95, 19.0),
                                ([float(i) for i in range(1, 101)], 0.5, 50.0),
                                ([1.0, 2.0, 3.0], 1e-12, 1.0),      # ceil(p * n) = 0: still the smallest
                                ([1.0, 2.0, 3.0], 1.0, 3.0)):
            with self.subTest(n=len(values), p=p):
                self.assertEqual(score_eval.nearest_rank(values, p), want)


class SourcePolicies(Issue20Case):
    TEXTS = {"q#1": "Revenue was 81.8 billion dollars in the third quarter.",
             "s#1": "The board approved a dividend of 2 dollars per share.",
             "n#1": "one two three four five six seven eight nine ten words of a secret memo"}

    def test_table(self):
        pol = {"q#1": "quote_only", "n#1": "no_use"}
        cases = [
            # (claim, citations, retrieved, rules broken)
            ("Revenue was 81.8 billion dollars in the third quarter.", ["q#1"], ["q#1"], []),
            ("revenue  WAS 81.8 billion dollars in the third quarter", ["q#1"], ["q#1"], []),
            ("Revenue reached about 82 billion dollars.", ["q#1"], ["q#1"], ["quote_only"]),
            # the paraphrase shares more terms with the summarize chunk: attributed there
            ("The board approved a 2 dollar dividend per share.", ["q#1", "s#1"], ["q#1", "s#1"], []),
            ("Revenue was 81.8 billion dollars in the third quarter. The board paid 2 dollars.",
             ["q#1", "s#1"], ["q#1", "s#1"], []),
            ("Revenue was high in the quarter.", ["q#1", "s#1"], ["q#1", "s#1"], ["quote_only"]),
            ("Anything.", ["n#1"], ["n#1"], ["no_use"]),
            ("As noted: two three four five six seven eight nine, end.", ["s#1"], ["s#1", "n#1"], ["no_use"]),
            ("As noted: three four five six seven eight nine, end.", ["s#1"], ["s#1", "n#1"], []),   # 7 words
        ]
        for claim, cits, ret, want in cases:
            with self.subTest(claim=claim):
                got = score_eval.source_violations(claim, cits, ret, self.TEXTS, {c: p for c, p in pol.items()})
                self.assertEqual([v["rule"] for v in got], want)

    def test_end_to_end(self):
        trace = [trace_row("A", "Revenue reached about 82 billion dollars.", ["q#1"], ["q#1"],
                           cited_chunks={"q#1": {"text": self.TEXTS["q#1"], "policy": "quote_only"}}),
                 trace_row("B", "As noted: two three four five six seven eight nine, end.", ["s#1"], ["s#1", "n#1"]),
                 trace_row("C", "Revenue was 81.8 billion dollars in the third quarter.", ["q#1"], ["q#1"])]
        chunks = write_jsonl(self.dir / "chunks.jsonl", [{"id": c, "text": t, "policy": p} for c, t, p in (
            ("q#1", self.TEXTS["q#1"], "quote_only"), ("s#1", self.TEXTS["s#1"], "summarize"),
            ("n#1", self.TEXTS["n#1"], "no_use"))])
        code, rep, err = self.run_with_rules(None, trace, "--chunks", chunks)
        m = rep["metrics"]["source_policy_compliance"]
        self.assertEqual((m["value"], m["count"], m["n"]), (round(1 / 3, 4), 1, 3))
        items = self.items()
        self.assertEqual(items["B"]["evidence"][0]["words"], "two three four five six seven eight nine")
        self.assertEqual(rep["failure_modes"]["source_policy_violation"], 2)


class BadConfig(Issue20Case):
    def test_errors_name_file_and_line(self):
        cases = [
            ("[scorer]\nrefusal_patterns = ['(unclosed']\n[t]\n",
             "g.toml:2: [scorer] refusal_patterns: regex does not compile (missing ), unterminated subpattern "
             "at position 0), got \"(unclosed\""),
            ("[scorer]\ncutoff_patterns = ['(a+)+']\n[t]\n",
             "g.toml:2: [scorer] cutoff_patterns: regex nested quantifiers (a quantified group holding a "
             "quantifier) are not allowed, got \"(a+)+\""),
            ("[t]\n[policy.x]\npatterns = ['ok', '(?P=n)']\n",
             "g.toml:3: [policy.x] patterns: regex backreferences are not allowed, got \"(?P=n)\""),
            ("[t]\n[policy.x]\npattern = ['ok']\n",
             "g.toml:2: [policy.x] has unknown keys pattern; known: patterns, message, got {\"pattern\": [\"ok\"]}"),
            ("[t]\n[policy]\nx = 1\n",
             "g.toml:3: [policy] 'x' must be a table [policy.x] with patterns = [...], got 1"),
            ("[scorer]\nrefusal_patterns = 'one'\n[t]\n",
             "g.toml:2: [scorer] refusal_patterns must be an array of non-empty regex strings, got \"one\""),
        ]
        for rules, want in cases:
            with self.subTest(rules=rules):
                code, rep, err = self.run_with_rules([gold_row("A", True)], [trace_row("A", "x")], rules=rules)
                self.assertEqual(code, 2)
                self.assertIsNone(rep)
                self.assertEqual(err.strip(), want)

    def test_bad_data(self):
        cases = [
            ([gold_row("A", True, required_behavior=["must_guess"])], [trace_row("A", "x")], None,
             'gold.jsonl:1: "required_behavior" "must_guess" is unknown; known: must_surface_conflict, '
             'must_detect_staleness, must_clarify, got ["must_guess"]'),
            ([gold_row("A", True, acceptable_decisions=["MAYBE"])], [trace_row("A", "x")], None,
             'gold.jsonl:1: "acceptable_decisions" must be a list of ANSWER, ABSTAIN, CLARIFY, BLOCK, got ["MAYBE"]'),
            ([gold_row("A", True, expected_behavior="refuse")], [trace_row("A", "x")], None,
             'gold.jsonl:1: "expected_behavior" must be "answer" or "reject", got "refuse"'),
            ([gold_row("A", True), {"qid": "B"}], [trace_row("A", "x")], None,
             "gold.jsonl:2: gold mixes labelled and unlabelled rows (line 1 has labels, line 2 none: no "
             "answerable, gold_* or expected_* field); label every row or none, got 1 unlabelled"),
            ([gold_row("A", True)], [trace_row("A", "x", cited_chunks={"c": {"text": "t", "policy": "secret"}})], None,
             'trace.jsonl:1: "cited_chunks" must be an object of id -> text or {"text", "policy"} (policy one of '
             'summarize, quote_only, no_use), got {"c": {"text": "t", "policy": "secret"}}'),
            ([gold_row("A", True)], [trace_row("A", "x", timings_ms={"total": -1})], None,
             'trace.jsonl:1: "timings_ms" must be an object whose "total" is a number >= 0, got {"total": -1}'),
            ([gold_row("A", True)], [trace_row("A", "x", cost="cheap")], None,
             'trace.jsonl:1: "cost" must be a number >= 0, got "cheap"'),
            ([gold_row("A", True)], [trace_row("A", "x", reasons="conflict")], None,
             'trace.jsonl:1: "reasons" must be a list of strings, got "conflict"'),
            ([gold_row("A", True)], [trace_row("A", "x")], [{"id": "c", "text": "t", "policy": "private"}],
             'chunks.jsonl:1: "policy" must be one of summarize, quote_only, no_use, got "private"'),
        ]
        for gold, trace, chunks, want in cases:
            with self.subTest(want=want):
                extra = ["--chunks", write_jsonl(self.dir / "chunks.jsonl", chunks).name] if chunks else []
                code, rep, err = self.run_with_rules(gold, trace, *extra)
                self.assertEqual(code, 2)
                self.assertEqual(err.strip(), want)

    def test_committed_gates_file_loads(self):
        rules = default_rules()
        self.assertEqual([p[0] for p in rules.policies], ["financial_advice", "predictions", "personal_data"])
        for text, policy in (("You should buy this stock before earnings.", "financial_advice"),
                             ("I recommend selling your shares now.", "financial_advice"),
                             ("The stock will go up next quarter.", "predictions"),
                             ("Please confirm your social security number.", "personal_data"),
                             ("Tell me your account number to proceed.", "personal_data"),
                             ("Her number is 123-45-6789.", "personal_data"),
                             ("Share prices are published daily.", None)):
            with self.subTest(text=text):
                hit = [name for name, _, pats in rules.policies if any(rx.search(text) for _, rx in pats)]
                self.assertEqual(hit, [policy] if policy else [])


class MiniRagPolicyPassthrough(unittest.TestCase):
    def test_front_matter_policy_reaches_chunks_and_trace(self):
        from types import SimpleNamespace as S
        from mini_rag.text.corpus import chunk_document, parse_text_document
        from mini_rag.errors import MiniRagError
        from mini_rag.trace import build_row
        doc = parse_text_document("---\ndoc_id: memo\npolicy: quote_only\n---\nRevenue was up.\n", "memo.md", "memo")
        chunk = chunk_document(doc)[0]
        self.assertEqual(chunk.metadata, {"policy": "quote_only"})
        with self.assertRaises(MiniRagError) as ctx:
            parse_text_document("---\npolicy: secret\n---\nx\n", "bad.md", "bad")
        self.assertEqual(str(ctx.exception), "bad.md:1: policy must be one of summarize, quote_only, no_use, got 'secret'")
        hits = [S(chunk_id=chunk.chunk_id, similarity=1.0, metadata=chunk.metadata),
                S(chunk_id="plain#p0", similarity=0.5, metadata={})]
        row = build_row("Q", "q?", hits, "Revenue was up.", [chunk.chunk_id, "plain#p0"],
                        {chunk.chunk_id: chunk.text, "plain#p0": "Plain."}, "ANSWER", [], "", "High", False,
                        [], {}, {"level": "low", "matched": []}, [], {})
        self.assertEqual(row["cited_chunks"], {"memo#p0": {"text": "Revenue was up.", "policy": "quote_only"},
                                               "plain#p0": "Plain."})


if __name__ == "__main__":
    unittest.main()
