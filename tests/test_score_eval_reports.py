"""score_eval.py issue 21: gate tiers, the weighted scorecard, judge calibration and the report
files (HTML, JUnit, CSV, step summary).

Expected values are written as the arithmetic that derives them from the small fixtures below.
Independent implementations (scipy, scikit-learn, junitparser) are used when importable, or from
a throwaway virtualenv at runs/.peers (see README, "Tiers, scorecard, calibration and reports");
those tests skip otherwise.
"""
import csv
import html.parser
import io
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import score_eval  # noqa: E402
from tests.test_score_eval import TempDir, gold_row, run_cli, trace_row, write_jsonl  # noqa: E402

PEERS = Path(os.environ.get("SCORE_EVAL_PEERS", ROOT / "runs" / ".peers"))
PEERS_HINT = ("python3 -m venv runs/.peers && runs/.peers/bin/pip install scipy scikit-learn junitparser")


def peer_python(*modules):
    """An interpreter that imports ``modules``: this one, else runs/.peers; None when neither."""
    try:
        for m in modules:
            __import__(m)
        return sys.executable
    except ImportError:
        pass
    exe = PEERS / "bin" / "python"
    if exe.exists():
        probe = subprocess.run([str(exe), "-c", "import " + ", ".join(modules)], capture_output=True)
        if probe.returncode == 0:
            return str(exe)
    return None


def run_peer(exe, code, data):
    proc = subprocess.run([exe, "-c", code], input=json.dumps(data).encode(), capture_output=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(proc.stderr.decode())
    return json.loads(proc.stdout)


# Four answerable items (k = 5):
#   A1 ships "alpha beta" citing its gold c1, chunk says "alpha beta"    -> passes
#   A2 ships "alpha gamma" citing its gold c2, chunk says "alpha"         -> hit, hallucinated (gamma)
#   A3 ships "delta" citing x (not gold); c3 is retrieved second          -> no hit, grounded
#   A4 refuses; nothing retrieved                                          -> over-refusal, recall miss
# shipped |S| = 3: hallucination 1/3 (faithfulness 2/3), chr 2/3; recall@5 over |A| = 4: 3/4.
# Issue 20's stages on this fixture, by hand:
#   source_policy: no chunk carries a policy (all summarize): 3 of 3 shipped compliant -> 1
#   rejection_calibration: all 4 labelled answerable; A1-A3 answer, A4 refuses -> 3/4
#   policy_compliance: no [policy.*] (the temp dir has no gates file), no gold policy rejection -> not measured
#   answer_relevance, context_relevance: the rows carry no question (q) -> not measured
CARD_GOLD = [gold_row("A%d" % i, True, ["alpha"], ["c%d" % i], category="cat") for i in range(1, 5)]
CARD_TRACE = [{k: v for k, v in row.items() if k != "q"} for row in [
    trace_row("A1", "alpha beta", ["c1"], ["c1"], cited_chunks={"c1": "alpha beta"}),
    trace_row("A2", "alpha gamma", ["c2"], ["c2"], cited_chunks={"c2": "alpha"}),
    trace_row("A3", "delta", ["x"], ["x", "c3"], cited_chunks={"x": "delta"}),
    trace_row("A4", "not in context", [], []),
]]
# seed 004 defaults of the measured stages (sum 0.65)
W = {"retrieval": 0.10, "faithfulness": 0.20, "citation": 0.15, "source_policy": 0.10, "rejection_calibration": 0.10}
UNMEASURED = ["context_relevance", "answer_relevance", "policy_compliance"]     # in STAGES order

# The same items with every stage measured (all default weights, sum 1):
#   questions: A1 "alpha beta?" A2 "alpha gamma epsilon?" A3 "delta omega?" A4 "alpha?"
#   answer_relevance (shipped): A1 2/2, A2 2/3 (no epsilon), A3 1/2 (no omega) -> mean 13/18
#   context_relevance: A1 c1 shares alpha -> 1/1; A2 c2 -> 1/1; A3 x "delta" shares delta, c3 "zeta"
#     shares nothing -> 1/2; A4 retrieved nothing -> no value; mean (1 + 1 + 1/2) / 3 = 5/6
#   source_policy: c1 and c2 are quote_only; "alpha beta" is verbatim in c1, "alpha gamma" is not
#     in c2 -> A2 violates: 2/3
#   policy_compliance: [policy.no_delta] matches A3's "delta": 2 of 3 shipped comply -> 2/3
#   retrieval 3/4, faithfulness 2/3, citation 2/3, rejection_calibration 3/4 as above
ALL_TRACE = [
    trace_row("A1", "alpha beta", ["c1"], ["c1"], q="alpha beta?",
              cited_chunks={"c1": {"text": "alpha beta", "policy": "quote_only"}}),
    trace_row("A2", "alpha gamma", ["c2"], ["c2"], q="alpha gamma epsilon?",
              cited_chunks={"c2": {"text": "alpha", "policy": "quote_only"}}),
    trace_row("A3", "delta", ["x"], ["x", "c3"], q="delta omega?", cited_chunks={"x": "delta", "c3": "zeta"}),
    trace_row("A4", "not in context", [], [], q="alpha?"),
]
ALL_GATES = "[baseline]\nprecision = { min = 0 }\n[policy.no_delta]\nmessage = \"no delta\"\npatterns = ['\\bdelta\\b']\n"


class Tiers(TempDir):
    GOLD = [gold_row("A", True, ["alpha"], ["c"]), gold_row("B", False)]
    TRACE = [trace_row("A", "alpha", ["c"], ["c"], cited_chunks={"c": "alpha"}), trace_row("B", "alpha", [], [])]
    # under_refusal = 1/1 (B ships), precision = 1/2

    def gates(self, text):
        (self.dir / "g.toml").write_text(text, encoding="utf-8")
        return self.score(self.GOLD, self.TRACE, "--gates-file", "g.toml", gates=None)

    def test_exit_status_by_tier(self):
        cases = [
            # (gates.toml section, exit, pass, warnings_failed)
            ('under_refusal = { max = 0.5, tier = "warn" }', 0, True, 1),
            ('under_refusal = { max = 0.5 }', 1, False, 0),
            ('under_refusal = { max = 0.5, tier = "block" }', 1, False, 0),
            ('under_refusal = { max = 0.5, tier = "monitor" }', 0, True, 0),
            ('under_refusal = { tier = "monitor" }', 0, True, 0),
            ('precision = { min = 0.5 }\nunder_refusal = { max = 0.5, tier = "warn" }', 0, True, 1),
            ('precision = { min = 0.6, tier = "warn" }\nunder_refusal = { max = 0.5, tier = "warn" }', 0, True, 2),
        ]
        for section, code, ok, warned in cases:
            with self.subTest(section=section):
                got, rep, err = self.gates("[baseline]\n" + section + "\n")
                self.assertEqual((got, rep["pass"], rep["warnings_failed"]), (code, ok, warned), err)

    def test_warn_gates_first_tier_in_json_and_stderr(self):
        code, rep, err = self.gates('[baseline]\nprecision = { min = 0.5 }\n"R@5" = { tier = "monitor" }\n'
                                    'under_refusal = { max = 0.5, tier = "warn" }\n')
        self.assertEqual(code, 0)
        self.assertEqual([(g["gate"], g["tier"]) for g in rep["gate_results"]],
                         [("under_refusal", "warn"), ("precision", "block"), ("R@5", "monitor")])
        monitor = rep["gate_results"][2]
        self.assertEqual((monitor["value"], monitor["op"], monitor["threshold"], monitor["pass"]), (1.0, None, None, True))
        self.assertIn("score_eval: warn gate failed: under_refusal: under_refusal = 1, needs <= 0.5", err)
        self.assertNotIn("score_eval: gate failed", err)
        self.assertEqual(rep["gates"], {"precision": ">=0.5", "R@5": "monitor", "under_refusal": "<=0.5"})

    def test_gates_string_prefix(self):
        cases = [("warn:under=0.5", 0, [("under", "warn")]), ("under=0.5", 1, [("under", "block")]),
                 ("precision=0.5,warn:under=0.5,monitor:nDCG@5", 0,
                  [("under", "warn"), ("precision", "block"), ("nDCG@5", "monitor")]),
                 ("monitor:under<=0.5", 0, [("under", "monitor")]), ("block:precision>=0.6", 1, [("precision", "block")])]
        for gates, code, want in cases:
            with self.subTest(gates=gates):
                got, rep, _ = self.score(self.GOLD, self.TRACE, gates=gates)
                self.assertEqual(got, code)
                self.assertEqual([(g["gate"], g["tier"]) for g in rep["gate_results"]], want)

    def test_bad_tier(self):
        code, rep, err = self.gates('[baseline]\nprecision = { min = 0.5, tier = "soft" }\n')
        self.assertEqual((code, rep), (2, None))
        self.assertEqual(err, 'g.toml:2: gate \'precision\' tier must be one of block, warn, monitor, got "soft"\n')
        code, _, err = self.gates('[baseline]\nprecision = { tier = "warn" }\n')
        self.assertEqual(code, 2)
        self.assertIn("needs exactly one of min or max", err)
        code, _, err = self.score(self.GOLD, self.TRACE, gates="soft:precision=0.5")
        self.assertEqual(code, 2)

    def test_markdown_marks_tiers(self):
        md = self.dir / "r.md"
        self.gates('[baseline]\nunder_refusal = { max = 0.5, tier = "warn" }\n"R@5" = { tier = "monitor" }\n')
        self.score(self.GOLD, self.TRACE, "--gates-file", "g.toml", "--markdown", md, gates=None)
        text = md.read_text(encoding="utf-8")
        self.assertIn("| ⚠️ | `under_refusal` (warn) | 1.0000 | <= 0.5 |", text)
        self.assertIn("| 📊 | `R@5` (monitor) | 1.0000 |  |", text)


class Weights(TempDir):
    def card(self, *args, trace=CARD_TRACE):
        code, rep, err = self.score(CARD_GOLD, trace, "--k", "5", *args)
        self.assertEqual(code, 0, err)
        return rep["scorecard"], rep["warnings"]

    def test_defaults_renormalize_over_measured_stages(self):
        card, warnings = self.card("--compute", "all")   # seed 004's default weights alone do not ask
        want = (W["retrieval"] * 3 / 4 + W["faithfulness"] * 2 / 3 + W["citation"] * 2 / 3 + W["source_policy"] * 1
                + W["rejection_calibration"] * 3 / 4) / sum(W.values())
        self.assertEqual(card["overall"], round(want, 4))
        self.assertEqual({k: v["score"] for k, v in card["stages"].items() if v["score"] is not None},
                         {"retrieval": 0.75, "faithfulness": round(2 / 3, 4), "citation": round(2 / 3, 4),
                          "source_policy": 1.0, "rejection_calibration": 0.75})
        self.assertEqual(card["stages"]["faithfulness"]["effective_weight"], round(0.20 / 0.65, 4))
        self.assertEqual(card["stages"]["faithfulness"]["metric"], "hallucination")
        self.assertEqual(card["stages"]["retrieval"]["metric"], "recall@5")
        self.assertEqual(card["not_measured"], UNMEASURED)
        self.assertEqual(card["not_measured"], [s.name for s in score_eval.STAGES if s.name not in W])
        self.assertIn("no item has a question", card["stages"]["context_relevance"]["reason"])
        self.assertIn("no shipped item has a question", card["stages"]["answer_relevance"]["reason"])
        self.assertIn("no [policy.*]", card["stages"]["policy_compliance"]["reason"])
        self.assertIn("left out of the overall score (the other weights renormalized): context_relevance", card["note"])
        self.assertFalse([w for w in warnings if w.startswith("weights")])

    def test_unmeasured_stage_renormalized_away(self):
        trace = [dict(r) for r in CARD_TRACE]
        del trace[0]["cited_chunks"]          # no chunk text for A1: hallucination is not measured
        card, _ = self.card("--compute", "scorecard", trace=trace)
        self.assertIsNone(card["stages"]["faithfulness"]["score"])
        self.assertIn("faithfulness", card["not_measured"])
        # source_policy stays 1 (no chunk has a policy, so no text is needed): retrieval, citation,
        # source_policy and rejection_calibration remain, raw weights 0.10 + 0.15 + 0.10 + 0.10
        self.assertEqual(card["overall"], round((0.10 * 3 / 4 + 0.15 * 2 / 3 + 0.10 * 1 + 0.10 * 3 / 4) / 0.45, 4))

    def test_items_carry_stage_scores(self):
        items = self.dir / "i.jsonl"
        self.card("--items", items)
        by = {r["qid"]: r["scorecard"] for r in map(json.loads, items.read_text().splitlines())}
        t = sum(W.values())
        # stages: retrieval, faithfulness, citation, source_policy, rejection_calibration; an item
        # outside a stage's denominator (A4 shipped nothing) has None there and is renormalized
        want = {"A1": ((1.0, 1.0, 1.0, 1.0, 1.0), 1.0),
                "A2": ((1.0, 0.0, 1.0, 1.0, 1.0), (0.10 + 0.15 + 0.10 + 0.10) / t),
                "A3": ((1.0, 1.0, 0.0, 1.0, 1.0), (0.10 + 0.20 + 0.10 + 0.10) / t),
                "A4": ((0.0, None, None, None, 0.0), 0.0 / (0.10 + 0.10))}
        for qid, (stages, overall) in want.items():
            with self.subTest(qid=qid):
                self.assertEqual(by[qid], {"stages": dict(zip(W, stages)),
                                           "overall": round(overall, 4)})

    def test_override_normalizes_with_warning(self):
        card, warnings = self.card("--weights", '{"faithfulness": 0.5}')
        total = 1.0 - 0.20 + 0.5
        self.assertIn("weights sum to 1.3, not 1 (tolerance 0.05); normalized to sum 1", warnings)
        self.assertEqual(card["stages"]["faithfulness"]["weight"], round(0.5 / total, 4))
        # the measured stages' raw weights (the 1.3 normalization cancels): 0.10, 0.5, 0.15, 0.10, 0.10
        want = (0.10 * 3 / 4 + 0.5 * 2 / 3 + 0.15 * 2 / 3 + 0.10 * 1 + 0.10 * 3 / 4) / (0.10 + 0.5 + 0.15 + 0.10 + 0.10)
        self.assertEqual(card["overall"], round(want, 4))
        # within the tolerance: normalized silently
        card, warnings = self.card("--weights", '{"faithfulness": 0.24}')
        self.assertFalse([w for w in warnings if w.startswith("weights")])
        self.assertEqual(card["stages"]["faithfulness"]["weight"], round(0.24 / 1.04, 4))

    def test_gate_stage_weight_warning_and_alias(self):
        card, warnings = self.card("--weights", '{"policy_compliance": 0.04, "groundedness": 0.26}')
        self.assertEqual([w for w in warnings if w.startswith("weights")], ["weights: gate stage 'policy_compliance' weighs 0.04, below 0.05: too low for a gate stage"])
        self.assertEqual(card["stages"]["faithfulness"]["weight"], 0.26)

    def test_weight_errors(self):
        cases = [
            ('{"faithfulness": 2.0}', "--weights: stage 'faithfulness' weighs %s after normalization, above 0.6: one stage "
                                      "would dominate the overall score" % round(2.0 / 2.8, 4)),
            ('{"faithfulnes": 0.2}', "--weights: unknown stage 'faithfulnes'; did you mean 'faithfulness'?"),
            ('{"citation": -1}', "--weights: weight of 'citation' must be a number from 0 to 1e+06, got -1"),
            ('{"citation": "0.2"}', '--weights: weight of \'citation\' must be a number from 0 to 1e+06, got "0.2"'),
            ('[0.2]', "--weights: expected a JSON object of stage: weight, got [0.2]"),
            ('{faithfulness: 1}', "--weights: not JSON (Expecting property name enclosed in double quotes)"),
            (json.dumps({s.name: 0 for s in score_eval.STAGES}), "--weights: all stage weights are 0"),
            ('{"faithfulness": 1e308, "retrieval": 1e308}', "--weights: weight of 'faithfulness' must be a number from "
                                                            "0 to 1e+06, got 1e+308"),
        ]
        for text, message in cases:
            with self.subTest(weights=text):
                code, rep, err = self.score(CARD_GOLD, CARD_TRACE, "--weights", text)
                self.assertEqual((code, rep), (2, None))
                self.assertTrue(err.startswith(message), err)

    def test_weights_table_in_gates_file(self):
        (self.dir / "g.toml").write_text("[baseline]\nprecision = { min = 0 }\n[weights]\nfaithfulness = 0.3\n"
                                         "citation = 0.05\n", encoding="utf-8")
        code, rep, _ = self.score(CARD_GOLD, CARD_TRACE, "--gates-file", "g.toml", "--k", "5", gates=None)
        self.assertEqual(code, 0)
        self.assertEqual(rep["scorecard"]["stages"]["citation"]["weight"], 0.05)
        # the command line overrides the file
        code, rep, _ = self.score(CARD_GOLD, CARD_TRACE, "--gates-file", "g.toml", "--weights", '{"citation": 0.15}',
                                  gates=None)
        self.assertEqual(rep["scorecard"]["stages"]["citation"]["weight"], round(0.15 / 1.1, 4))
        (self.dir / "g.toml").write_text("[baseline]\n[weights]\nfaithfulnes = 0.3\n", encoding="utf-8")
        code, _, err = self.score(CARD_GOLD, CARD_TRACE, "--gates-file", "g.toml", gates=None)
        self.assertEqual(code, 2)
        self.assertTrue(err.startswith("g.toml:3: [weights] unknown stage 'faithfulnes'"), err)

    def test_new_registry_metric_is_picked_up(self):
        """A stage's metric that joins the registry (issue 20's policy_compliance) scores the stage."""
        metrics = {"recall@5": {"value": 0.75, "n": 4, "reason": None},
                   "policy_compliance": {"value": 0.5, "n": 2, "reason": None}}
        weights = {s.name: s.weight for s in score_eval.STAGES}
        with mock.patch.dict(score_eval._BY_NAME):      # as before issue 20: not in the registry, left out
            del score_eval._BY_NAME["policy_compliance"]
            card = score_eval.scorecard(weights, metrics, 5)
        self.assertEqual(card["overall"], 0.75)
        self.assertIn("not a registry metric", card["stages"]["policy_compliance"]["reason"])
        card = score_eval.scorecard(weights, metrics, 5)     # in the registry: it scores the stage
        self.assertEqual(card["overall"], round((0.10 * 0.75 + 0.10 * 0.5) / 0.20, 4))
        self.assertEqual(card["stages"]["policy_compliance"]["effective_weight"], 0.5)

    def test_every_stage_measured(self):
        (self.dir / "g.toml").write_text(ALL_GATES, encoding="utf-8")
        card, _ = self.card("--gates-file", "g.toml", "--items", "i.jsonl", trace=ALL_TRACE)
        self.assertEqual((card["not_measured"], card["note"]), ([], "every stage measured"))
        want = {"retrieval": 3 / 4, "context_relevance": 5 / 6, "faithfulness": 2 / 3, "answer_relevance": 13 / 18,
                "citation": 2 / 3, "source_policy": 2 / 3, "policy_compliance": 2 / 3, "rejection_calibration": 3 / 4}
        self.assertEqual({k: v["score"] for k, v in card["stages"].items()}, {k: round(v, 4) for k, v in want.items()})
        # default weights sum to 1: 0.075 + 0.0833 + 0.1333 + 0.1083 + 0.1 + 0.0667 + 0.0667 + 0.075
        overall = (0.10 * 3 / 4 + 0.10 * 5 / 6 + 0.20 * 2 / 3 + 0.15 * 13 / 18 + 0.15 * 2 / 3 + 0.10 * 2 / 3
                   + 0.10 * 2 / 3 + 0.10 * 3 / 4)
        self.assertEqual(card["overall"], round(overall, 4))
        by = {r["qid"]: r["scorecard"] for r in map(json.loads, (self.dir / "i.jsonl").read_text().splitlines())}
        # per item, stages in STAGES order: retrieval, context, faithfulness, answer, citation,
        # source_policy, policy_compliance, rejection_calibration (None: not in the denominator / no value)
        items = {"A1": ((1, 1, 1, 1, 1, 1, 1, 1), 1.0),
                 "A2": ((1, 1, 0, 2 / 3, 1, 0, 1, 1), 0.10 + 0.10 + 0.15 * 2 / 3 + 0.15 + 0.10 + 0.10),
                 "A3": ((1, 1 / 2, 1, 1 / 2, 0, 1, 0, 1), 0.10 + 0.10 / 2 + 0.20 + 0.15 / 2 + 0.10 + 0.10),
                 "A4": ((0, None, None, None, None, None, None, 0), 0.0)}
        for qid, (stages, overall) in items.items():
            with self.subTest(qid=qid):
                self.assertEqual(by[qid], {"stages": {s.name: None if v is None else round(float(v), 4)
                                                      for s, v in zip(score_eval.STAGES, stages)},
                                           "overall": round(overall, 4)})

    def test_context_relevance_needs_chunk_text(self):
        (self.dir / "g.toml").write_text(ALL_GATES, encoding="utf-8")
        trace = [dict(r) for r in ALL_TRACE]
        trace[2] = dict(trace[2], cited_chunks={"x": "delta"})     # c3's text unknown: A3 has no context value
        code, rep, err = self.score(CARD_GOLD, trace, "--k", "5", "--gates-file", "g.toml", "--compute", "all",
                                    gates=None)
        self.assertEqual(code, 0, err)
        # the metric keeps its value over the items it could judge (A1 1/1, A2 1/1) ...
        self.assertEqual((rep["metrics"]["context_relevance"]["value"], rep["metrics"]["context_relevance"]["n"]),
                         (1.0, 2))
        # ... but the scorecard leaves the stage out: 1 of the 3 items with a question and retrieved
        # chunks (A1, A2, A3; A4 retrieved nothing) lacks chunk text
        card = rep["scorecard"]
        self.assertEqual(card["not_measured"], ["context_relevance"])
        self.assertIn("unknown for 1 of 3 items", card["stages"]["context_relevance"]["reason"])
        others = 1.0 - 0.10
        overall = (0.10 * 3 / 4 + 0.20 * 2 / 3 + 0.15 * 13 / 18 + 0.15 * 2 / 3 + 0.10 * 2 / 3 + 0.10 * 2 / 3
                   + 0.10 * 3 / 4) / others
        self.assertEqual(card["overall"], round(overall, 4))
        # no chunk text at all: context_relevance (and faithfulness) not measured; answer relevance
        # needs none and stays 13/18
        trace = [{k: v for k, v in r.items() if k != "cited_chunks"} for r in ALL_TRACE]
        card, _ = self.card("--gates-file", "g.toml", "--items", "i.jsonl", trace=trace)
        self.assertEqual(card["not_measured"], ["context_relevance", "faithfulness"])
        self.assertIn("all their texts", card["stages"]["context_relevance"]["reason"])
        self.assertEqual(card["stages"]["answer_relevance"]["score"], round(13 / 18, 4))
        by = {r["qid"]: r["scorecard"] for r in map(json.loads, (self.dir / "i.jsonl").read_text().splitlines())}
        self.assertNotIn("context_relevance", by["A1"]["stages"])


class Calibration(TempDir):
    def calibrate(self, human, auto, *args, hfield="score", afield="score"):
        h = write_jsonl(self.dir / "h.jsonl", [{"qid": "q%d" % i, hfield: v} for i, v in enumerate(human)])
        a = write_jsonl(self.dir / "a.jsonl", [{"qid": "q%d" % i, afield: v} for i, v in enumerate(auto)])
        return run_cli(["calibrate", "--human", h, "--auto", a] + list(args), cwd=self.dir)

    # Table 1: a permutation.  Deviations h = -2,-1,0,1,2; a = -1,-2,1,0,2: sxy = 8, sxx = syy = 10.
    H1, A1 = [1, 2, 3, 4, 5], [2, 1, 4, 3, 5]
    # Table 2: binned with width 0.5, auto -> 0, 0.5, 0.5, 1, 0.5, 0 (0.7 is nearer 0.5; 0.2 nearer 0).
    H2, A2 = [0, 0, 0.5, 1, 1, 1], [0.1, 0.3, 0.6, 0.9, 0.7, 0.2]

    def test_hand_values_table1(self):
        code, out, err = self.calibrate(self.H1, self.A1, "--bootstrap", "0")
        self.assertEqual(code, 1)                        # kappa 0 < 0.8: not gateable
        self.assertEqual(out["n"], 5)
        self.assertEqual(out["pearson"]["value"], 8 / math.sqrt(10 * 10))
        self.assertEqual(out["spearman"]["value"], round(1 - 6 * (1 + 1 + 1 + 1) / (5 * (25 - 1)), 4))
        # agree only on 5: po = 1/5; every label once per rater: pe = 5 * (1/5 * 1/5)
        self.assertEqual(out["kappa"]["value"], round((1 / 5 - 1 / 5) / (1 - 1 / 5), 4))
        self.assertEqual(out["mae"]["value"], round(4 / 5, 4))
        self.assertFalse(out["gateable"])
        self.assertIn("kappa = 0.0000, needs >= 0.8", err)

    def test_hand_values_table2_with_ties_and_bins(self):
        code, out, _ = self.calibrate(self.H2, self.A2, "--bins", "0.5", "--bootstrap", "0")
        self.assertEqual(out["bins"]["labels"], [0.0, 0.5, 1.0])
        self.assertEqual(out["confusion"], [[1, 1, 0], [0, 1, 0], [1, 1, 1]])
        po, pe = 3 / 6, (2 * 2 + 1 * 3 + 3 * 1) / 36
        self.assertEqual(out["kappa"]["value"], round((po - pe) / (1 - pe), 4))
        # mid-ranks: human 1.5, 1.5, 3, 5, 5, 5; auto 1, 3, 4, 6, 5, 2 (both mean 3.5)
        sxy = (-2 * -2.5) + (-2 * -0.5) + (-0.5 * 0.5) + (1.5 * 2.5) + (1.5 * 1.5) + (1.5 * -1.5)
        sxx = 4 + 4 + 0.25 + 3 * 2.25
        syy = 6.25 + 0.25 + 0.25 + 6.25 + 2.25 + 2.25
        self.assertEqual(out["spearman"]["value"], round(sxy / math.sqrt(sxx * syy), 4))
        self.assertEqual(out["mae"]["value"], round((0.1 + 0.3 + 0.1 + 0.1 + 0.3 + 0.8) / 6, 4))
        # width 1: bins 0 and 1 (0.5 rounds up)
        code, out, _ = self.calibrate(self.H2, self.A2, "--bins", "1", "--bootstrap", "0")
        self.assertEqual(out["bins"]["labels"], [0.0, 1.0])

    def test_bootstrap_is_deterministic_and_gateable(self):
        human = [0, 0.5, 1, 1, 0, 0.5, 1, 0, 1, 0.5, 0, 1]
        code, out, _ = self.calibrate(human, human, "--bootstrap", "200", "--seed", "7")
        self.assertEqual((code, out["gateable"], out["kappa"]["value"], out["mae"]["value"]), (0, True, 1.0, 0.0))
        self.assertEqual(out["kappa"]["ci"], [1.0, 1.0])
        auto = [0, 0.5, 1, 0.5, 0, 1, 1, 0, 1, 0.5, 0.5, 1]
        runs = [self.calibrate(human, auto, "--bootstrap", "300", "--seed", s)[1] for s in ("1", "1", "2")]
        self.assertEqual(runs[0], runs[1])
        self.assertNotEqual(runs[0]["kappa"]["ci"], runs[2]["kappa"]["ci"])
        for stat in ("pearson", "spearman", "kappa", "mae"):
            lo, hi = runs[0][stat]["ci"]
            self.assertLessEqual(lo, hi)
        self.assertEqual(runs[0]["bootstrap"], {"resamples": 300, "seed": 1, "interval": "percentile 2.5 and 97.5"})

    def test_undefined_and_inputs(self):
        code, out, _ = self.calibrate([1, 1, 1], [0, 0.5, 1], "--bootstrap", "0")
        self.assertIsNone(out["pearson"]["value"])
        self.assertEqual(out["pearson"]["reason"], "undefined: a rater gives every item the same score")
        code, out, _ = self.calibrate([1, 1], [1, 1], "--bootstrap", "0")
        self.assertEqual(out["kappa"]["reason"], "undefined: both raters put every item in one bin")
        self.assertFalse(out["gateable"])
        # booleans are 1/0, nulls are skipped, nested fields are dotted
        code, out, _ = self.calibrate([True, False, None], [{"f": 1}, {"f": 0}, {"f": 1}], "--auto-field", "s.f",
                                      "--bootstrap", "0", afield="s")
        self.assertEqual((out["n"], out["kappa"]["value"], out["unpaired"]["human_no_score"]), (2, 1.0, 1))
        bad = [(["x", 1], "h.jsonl:1: \"score\" must be a number, true/false or null, got \"x\""),
               ([None, None], "calibrate: no qid has a score in both files")]
        for human, message in bad:
            with self.subTest(human=human):
                code, out, err = self.calibrate(human, [1, 1])
                self.assertEqual((code, out), (2, None))
                self.assertIn(message, err)

    def test_against_scipy_and_sklearn(self):
        exe = peer_python("scipy", "sklearn")
        if exe is None:
            self.skipTest("scipy and scikit-learn not importable and no %s; to run: %s" % (PEERS, PEERS_HINT))
        tables = [(self.H1, self.A1), (self.H2, self.A2),
                  ([0.1, 0.4, 0.35, 0.8, 0.9, 0.55, 0.2, 0.7], [0.2, 0.5, 0.3, 0.6, 1.0, 0.5, 0.1, 0.9])]
        code = ("import json, sys\nfrom scipy.stats import pearsonr, spearmanr\nfrom sklearn.metrics import "
                "cohen_kappa_score, mean_absolute_error\nimport math\nout = []\nfor h, a in json.load(sys.stdin):\n"
                "    hb = [str(math.floor(v / 0.5 + 0.5 + 1e-9) * 0.5) for v in h]\n"
                "    ab = [str(math.floor(v / 0.5 + 0.5 + 1e-9) * 0.5) for v in a]\n"
                "    out.append([float(pearsonr(h, a)[0]), float(spearmanr(h, a)[0]), float(cohen_kappa_score(hb, ab)),"
                " float(mean_absolute_error(h, a))])\nprint(json.dumps(out))\n")
        want = run_peer(exe, code, tables)
        for (h, a), (p, s, k, m) in zip(tables, want):
            with self.subTest(human=h):
                _, out, _ = self.calibrate(h, a, "--bootstrap", "0")
                self.assertAlmostEqual(out["pearson"]["value"], p, places=4)
                self.assertAlmostEqual(out["spearman"]["value"], s, places=4)
                self.assertAlmostEqual(out["kappa"]["value"], k, places=4)
                self.assertAlmostEqual(out["mae"]["value"], m, places=4)


HOSTILE = ['<script>alert(1)</script>', '"><img src=x onerror=alert(2)>', '</style><b>bold</b>']


class _Tags(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


class Reports(TempDir):
    # H1 passes; H2 ships without its gold substring; the third refuses correctly:
    # precision 1/2 fails its block gate, pass_rate 2/3 its warn gate.
    GOLD = [gold_row("H1", True, ["alpha", "</style><i>"], ["c1"], category="x", question="Q " + " ".join(HOSTILE)),
            gold_row("H2", True, ["never said"], ["c2"], category='<i>cat</i>'),
            gold_row("=cmd|' /C calc'!A0", False, category="y")]
    TRACE = [trace_row("H1", "alpha " + HOSTILE[0], ["c1"], ["c1"], cited_chunks={"c1": "alpha " + " ".join(HOSTILE)}),
             trace_row("H2", HOSTILE[1] + HOSTILE[2], ["c2"], ["c9", "c2"], cited_chunks={"c2": HOSTILE[2] + "\x07"}),
             trace_row("=cmd|' /C calc'!A0", "not in context")]
    GATES = 'precision=0.9,warn:pass_rate=0.9,monitor:nDCG@5'

    def outputs(self, *extra, cwd=None, env=None):
        g = write_jsonl(self.dir / "gold.jsonl", self.GOLD)
        t = write_jsonl(self.dir / "trace.jsonl", self.TRACE)
        argv = ["--gold", g, "--trace", t, "--gates", self.GATES, "--html", self.dir / "r.html", "--junit",
                self.dir / "r.xml", "--csv", self.dir / "items.csv", "--metrics-csv", self.dir / "m.csv"] + list(extra)
        with mock.patch.dict(os.environ, env or {}):
            return run_cli(argv, cwd=self.dir)

    def test_html_escapes_every_input_text(self):
        code, rep, _ = self.outputs()
        self.assertEqual((code, rep["pass"], rep["warnings_failed"]), (1, False, 1))
        page = (self.dir / "r.html").read_text(encoding="utf-8")
        self.assertEqual(page.count("</style>"), 1)                 # the page's own
        self.assertEqual(page.count("<style>"), 1)
        for raw in ("<script", "<img", "<b>", "<i>"):
            self.assertNotIn(raw, page)
        for escaped in ("&lt;script&gt;alert(1)&lt;/script&gt;", "&quot;&gt;&lt;img src=x onerror=alert(2)&gt;",
                        "&lt;/style&gt;&lt;b&gt;bold&lt;/b&gt;", "&lt;i&gt;cat&lt;/i&gt;", "\\x07"):
            self.assertIn(escaped, page)
        tags = _Tags()
        tags.feed(page)
        self.assertFalse({"script", "img", "b", "i", "iframe", "link"} & set(tags.tags))
        text = "".join(tags.text)
        for raw in HOSTILE:
            self.assertIn(raw, text)                                  # shown to the reader as text
        for part in ("FAIL", "Gates", "Weighted scorecard", "Metrics", "Categories", "Failure modes", "Items"):
            self.assertIn(part, text)
        self.assertNotIn("http", page.replace("http-equiv", ""))     # nothing fetched

    def test_html_sections_tiers_and_drilldown(self):
        self.outputs()
        page = (self.dir / "r.html").read_text(encoding="utf-8")
        self.assertLess(page.index(">WARN<"), page.index(">BLOCK<"))
        self.assertLess(page.index(">BLOCK<"), page.index(">MONITOR<"))
        self.assertEqual(page.count('<details class="item">'), 3)
        self.assertIn("<code>c1</code><blockquote>alpha &lt;script&gt;", page)
        self.assertIn("<svg", page)
        self.assertNotIn("Against the baseline", page)
        self.outputs("--out", self.dir / "base.json")
        self.outputs("--baseline", self.dir / "base.json")
        page = (self.dir / "r.html").read_text(encoding="utf-8")
        self.assertIn("<h3>Against the baseline</h3>", page)
        self.assertIn('<tr><td><code>precision</code></td><td class="n">0.5000</td><td class="n">0.5000</td>'
                      '<td class="n ">0.0000</td><td class="n">0</td><td class="n">0</td><td class="n">1.0000</td></tr>', page)

    def test_merge_html(self):
        self.outputs()
        other = self.dir / "r2.html"
        other.write_text((self.dir / "r.html").read_text(encoding="utf-8"), encoding="utf-8")
        code, _, err = run_cli(["merge-html", self.dir / "all.html", self.dir / "r.html", other])
        self.assertEqual(code, 0, err)
        page = (self.dir / "all.html").read_text(encoding="utf-8")
        self.assertEqual(page.count('<section class="dataset"'), 2)
        self.assertEqual(page.count("</style>"), 1)
        (self.dir / "bad.html").write_text("<p>hi</p>", encoding="utf-8")
        code, _, err = run_cli(["merge-html", self.dir / "all.html", self.dir / "bad.html"])
        self.assertEqual(code, 2)
        self.assertIn("bad.html: not a score_eval --html report", err)

    def junit(self, *extra):
        code, rep, _ = self.outputs(*extra)
        return rep, ET.parse(str(self.dir / "r.xml")).getroot()

    def test_junit_shape(self):
        """Warn gates sit in a separate warnings suite and never fail a test (issue 42 item 8,
        replacing issue 31 item 6's <failure type="warn">): properties and a <system-out> line;
        items fail only for labels that count against a failed block gate."""
        rep, root = self.junit("--junit-items")
        self.assertEqual(root.tag, "testsuites")
        suites = root.findall("testsuite")
        self.assertEqual([s.get("name") for s in suites], ["baseline", "baseline.warnings", "baseline.items"])
        for s in suites:
            cases = s.findall("testcase")
            self.assertEqual(int(s.get("tests")), len(cases))
            self.assertEqual(int(s.get("failures")), sum(1 for c in cases if c.find("failure") is not None))
            self.assertEqual(int(s.get("skipped")), 0)
        for attr in ("tests", "failures", "skipped"):
            self.assertEqual(int(root.get(attr)), sum(int(s.get(attr)) for s in suites))
        gates = suites[0].findall("testcase")
        # precision 1/2 fails (failure), nDCG@5 passes; pass_rate 1/3 fails its warn gate
        self.assertEqual([(c.get("name"), c.get("classname")) for c in gates],
                         [("precision", "score_eval.baseline.block"), ("nDCG@5", "score_eval.baseline.monitor")])
        self.assertIsNotNone(gates[0].find("failure"))
        props = {p.get("name"): p.get("value") for p in gates[1].find("properties")}
        self.assertEqual(props["tier"], "monitor")
        self.assertEqual(props["value"], "%.4f" % rep["metrics"]["nDCG@5"]["value"])
        warns = suites[1].findall("testcase")
        self.assertEqual([(c.get("name"), c.find("failure"), c.find("skipped")) for c in warns],
                         [("pass_rate", None, None)])
        self.assertEqual(suites[1].get("failures"), "0")
        props = {p.get("name"): p.get("value") for p in warns[0].find("properties")}
        self.assertEqual((props["tier"], props["passed"], props["op"], props["threshold"]), ("warn", "false", ">=", "0.9"))
        self.assertEqual(warns[0].find("system-out").text,
                         "warn gate failed (does not block): %s" % [g for g in rep["gate_results"]
                                                                    if g["gate"] == "pass_rate"][0]["reason"])
        items = suites[2].findall("testcase")
        self.assertEqual(items[1].get("classname"), "score_eval.baseline.items.<i>cat</i>")   # parsed back unescaped
        # H2 ships a claim without its gold substring nor support (claim_miss counts against precision)
        self.assertEqual([(c.get("name"), c.find("failure") is not None) for c in items],
                         [("H1", False), ("H2", True), ("=cmd|' /C calc'!A0", False)])

    def test_junit_items_fail_only_for_failed_block_gates(self):
        """The run's block gates pass: no item testcase fails, the failing item keeps its labels."""
        self.GATES = "precision=0.5,warn:pass_rate=0.9"
        rep, root = self.junit("--junit-items")
        self.assertIs(rep["pass"], True)
        self.assertEqual(rep["warnings_failed"], 1)
        # exit 0: no failure anywhere (issue 42 item 8), the failed warn gate is said in system-out
        self.assertEqual([s.get("failures") for s in [root] + root.findall("testsuite")], ["0", "0", "0", "0"])
        self.assertIsNotNone(root.findall("testsuite")[1].find("testcase").find("system-out"))
        items = root.findall("testsuite")[-1]
        self.assertEqual(items.get("name"), "baseline.items")
        self.assertEqual(items.get("failures"), "0")
        props = {p.get("name"): p.get("value") for p in items.findall("testcase")[1].find("properties")}
        # issue 41: no gates file, so grounding is checked: the item's answer is also unsupported
        self.assertEqual(props, {"labels": "hallucination, unsupported_answer, claim_miss", "blocks": "false"})

    def test_block_relevant_table(self):
        import score_eval
        for labels, failed, want in (
                (["claim_miss"], {"precision"}, ["claim_miss"]),
                (["claim_miss"], {"hallucination"}, []),
                # issue 41: an unsupported answer counts against the grounding gates, not precision
                (["unsupported_answer"], {"precision"}, []),
                (["hallucination", "unsupported_answer"], {"unsupported_answer_rate"}, ["unsupported_answer"]),
                (["retrieval_miss", "over_refusal"], {"recall@K"}, ["retrieval_miss"]),
                (["over_refusal"], set(), []),
                (["some_new_label"], {"chr"}, ["some_new_label"]),      # unknown: counts (fail closed)
                (["hallucination"], None, ["hallucination"]),            # unresolvable failed gate: all count
        ):
            with self.subTest(labels=labels, failed=failed):
                self.assertEqual(score_eval.block_relevant(labels, failed), want)

    def test_junit_accepted_by_junitparser(self):
        exe = peer_python("junitparser")
        if exe is None:
            self.skipTest("junitparser not importable and no %s; to run: %s" % (PEERS, PEERS_HINT))
        self.junit("--junit-items")
        code = ("import json, sys\nfrom junitparser import JUnitXml, Failure, Skipped\nxml = JUnitXml.fromfile(sys.stdin.read()."
                "strip('\"'))\nout = []\nfor s in xml:\n    out.append([s.name, s.tests, s.failures, s.skipped, "
                "[[c.name, [type(r).__name__ for r in c.result]] for c in s]])\nprint(json.dumps(out))\n")
        got = run_peer(exe, code, str(self.dir / "r.xml"))
        self.assertEqual(got[0], ["baseline", 2, 1, 0, [["precision", ["Failure"]], ["nDCG@5", []]]])
        self.assertEqual(got[1], ["baseline.warnings", 1, 0, 0, [["pass_rate", []]]])
        self.assertEqual(got[2][:3], ["baseline.items", 3, 1])

    def test_csv_files(self):
        code, rep, _ = self.outputs("--k", "5")
        rows = list(csv.DictReader(io.StringIO((self.dir / "items.csv").read_text(encoding="utf-8"), newline="")))
        self.assertEqual([r["qid"] for r in rows], ["H1", "H2", "'=cmd|' /C calc'!A0"])    # no formula
        self.assertEqual(rows[1]["category"], "<i>cat</i>")
        self.assertEqual(rows[0]["stage:retrieval"], "1.0000")
        self.assertEqual(rows[0]["pass"], "true")
        self.assertEqual(rows[2]["failure_mode"], "")
        metrics = list(csv.DictReader(io.StringIO((self.dir / "m.csv").read_text(encoding="utf-8"), newline="")))
        self.assertEqual([m["metric"] for m in metrics], list(rep["metrics"]))
        self.assertEqual(metrics[0], {"metric": "precision", "value": "0.5000", "count": "1", "n": "2",
                                      "ci_low": "%.4f" % rep["metrics"]["precision"]["ci"][0],
                                      "ci_high": "%.4f" % rep["metrics"]["precision"]["ci"][1], "reason": ""})

    def test_step_summary_appended(self):
        summary = self.dir / "summary.md"
        summary.write_text("earlier step\n", encoding="utf-8")
        self.outputs(env={"GITHUB_STEP_SUMMARY": str(summary)})
        text = summary.read_text(encoding="utf-8")
        self.assertTrue(text.startswith("earlier step\n# score_eval report: baseline"), text[:80])
        target = self.dir / "target.md"
        target.write_text("", encoding="utf-8")
        link = self.dir / "link.md"
        os.symlink(str(target), str(link))
        code, _, err = self.outputs(env={"GITHUB_STEP_SUMMARY": str(link)})
        self.assertIn("is not a regular file; summary not written", err)
        self.assertEqual(target.read_text(), "")

    def test_reports_byte_identical_across_runs(self):
        g = write_jsonl(self.dir / "gold.jsonl", self.GOLD)
        t = write_jsonl(self.dir / "trace.jsonl", self.TRACE)
        outs = []
        for n, seed in enumerate(("0", "99")):
            d = self.dir / str(n)
            subprocess.run([sys.executable, str(ROOT / "score_eval.py"), "--gold", str(g), "--trace", str(t),
                            "--gates", self.GATES, "--html", str(d / "r.html"), "--junit", str(d / "r.xml"),
                            "--junit-items", "--csv", str(d / "i.csv"), "--metrics-csv", str(d / "m.csv")],
                           capture_output=True, env=dict(os.environ, PYTHONHASHSEED=seed, TZ="Asia/Tokyo" if n else "UTC"),
                           cwd=str(self.dir))
            outs.append([(d / f).read_bytes() for f in ("r.html", "r.xml", "i.csv", "m.csv")])
        self.assertEqual(outs[0], outs[1])


def png_is_blank(data: bytes) -> bool:
    """Decode an 8-bit RGB/RGBA PNG (stdlib zlib) and say whether every pixel has one colour."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours = set()
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 4 == 0:
            colours.update(bytes(line[x:x + 3]) for x in range(0, stride, bpp * 4))
        prev = line
    return len(colours) <= 1


class Screenshot(TempDir):
    GOLD, TRACE, GATES, outputs = Reports.GOLD, Reports.TRACE, Reports.GATES, Reports.outputs

    def test_chromium_renders_a_non_blank_page(self):
        browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
        if browser is None:
            self.skipTest("no chromium on PATH (apt-get install chromium); the HTML report was not rendered")
        self.outputs()
        shot = self.dir / "shot.png"
        profile = tempfile.mkdtemp(prefix="score_eval_chromium_")
        self.addCleanup(shutil.rmtree, profile, True)
        proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                               "--disable-background-networking", "--disable-component-update", "--disable-sync",
                               "--user-data-dir=" + profile, "--window-size=800,600", "--screenshot=" + str(shot),
                               (self.dir / "r.html").as_uri()], capture_output=True, timeout=120)
        self.assertTrue(shot.exists(), proc.stderr.decode("utf-8", "replace")[-500:])
        self.assertFalse(png_is_blank(shot.read_bytes()))
        self.assertTrue(png_is_blank(_blank_png(40, 30)))        # the check itself can fail


def _blank_png(w, h):
    raw = b"".join(b"\x00" + b"\xff\xff\xff" * w for _ in range(h))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


if __name__ == "__main__":
    unittest.main()
