"""score_eval.py: registry metrics (hand-derived), seed 002 edge rules, bad input, gates, CLI.

Expected values are written as the arithmetic that derives them from the fixture below.
Helpers here (run_cli, write_jsonl) are shared by the other tests/test_score_eval_*.py files.
"""
import ast
import contextlib
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import score_eval  # noqa: E402

SEED_EXAMPLE = ROOT / "examples" / "seed"


def run_cli(argv, cwd=None):
    """Run score_eval.main in-process; return (exit status, parsed stdout or None, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    try:
        if cwd:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = score_eval.main([str(a) for a in argv])
    finally:
        os.chdir(old)
    text = out.getvalue()
    return code, (json.loads(text) if text.startswith("{") else None), err.getvalue()


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def gold_row(qid, answerable=True, subs=None, cits=None, **extra):
    row = {"qid": qid, "question": "q " + qid, "answerable": answerable,
           "gold_claim_substr": subs if subs is not None else ([] if not answerable else ["default claim"]),
           "gold_citations": cits if cits is not None else []}
    row.update(extra)
    return row


def trace_row(qid, claim, cits=(), retrieved=(), **extra):
    row = {"qid": qid, "q": "q " + qid, "retrieved_ids": list(retrieved),
           "answer_json": {"claim": claim, "citations": list(cits)}}
    row.update(extra)
    return row


class TempDir(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="score_eval_test_"))
        self.addCleanup(shutil.rmtree, self.dir, True)

    def score(self, gold, trace, *args, gates="precision=0"):
        g = write_jsonl(self.dir / "gold.jsonl", gold)
        t = write_jsonl(self.dir / "trace.jsonl", trace)
        argv = ["--gold", g, "--trace", t] + list(args)
        if gates is not None:
            argv += ["--gates", gates]
        return run_cli(argv, cwd=self.dir)


# The hand-worked fixture: 7 gold items, 6 trace rows (G7 has none).
MIX_GOLD = [
    gold_row("G1", True, ["rejects null keys"], ["d1#1"], category="a", expected_decision="ANSWER"),
    gold_row("G2", True, ["only domain example.com"], ["d2#1"], category="a", expected_decision="ANSWER"),
    gold_row("G3", True, ["retention is 30 days"], ["d3#1", "d3#2"], category="b"),
    gold_row("G4", False, category="b", expected_decision="ABSTAIN"),
    gold_row("G5", False, category="b", expected_decision="CLARIFY"),
    gold_row("G6", True, ["legal hold"], ["d6#1"], category="a"),
    gold_row("G7", True, ["refund window"], ["d7#1"], category="c"),
]
MIX_TRACE = [
    # passes; scores put d9#9 first and break the 0.5 tie by id descending: d2#0 before d1#1
    trace_row("G1", "X rejects null keys.", ["d1#1"], ["d1#1", "d2#0", "d9#9"], retrieved_scores=[0.5, 0.5, 0.9],
              cited_chunks={"d1#1": "X rejects null keys always."}, decision="ANSWER", fallback_used=False),
    # passes the seed checks but "allowed" is in no cited chunk: hallucinated
    trace_row("G2", "Only domain example.com is allowed.", ["d2#1"], ["d2#1"],
              cited_chunks={"d2#1": "Only domain example.com is permitted."}, decision="ANSWER", fallback_used=True),
    # cites d9#9, which was not retrieved: no hit, not valid, hallucinated
    trace_row("G3", "Retention is 30 days for logs.", ["d3#1", "d9#9"], ["d3#2", "d3#1"], decision="ANSWER",
              fallback_used=True),
    # refusal with other case and spaces: a correct refusal
    trace_row("G4", "  Not In Context ", [], ["d4#1"], decision="ABSTAIN"),
    # answers an unanswerable question without citations: under-refusal, hallucinated
    trace_row("G5", "You should ask support.", [], ["d5#1"], decision="ANSWER", fallback_used=False),
    # refuses an answerable question whose gold chunk was never retrieved
    trace_row("G6", "not in context", [], ["d0#0"], decision="abstain", fallback_used=False),
]


class RegistryMetrics(TempDir):
    """Every registry metric on the hand-worked fixture (k = 5 first, then 1)."""

    def test_every_metric_by_hand(self):
        code, rep, err = self.score(MIX_GOLD, MIX_TRACE, "--k", "5,1", "--compute", "all")  # answer/context relevance too
        self.assertEqual(code, 0, err)
        m = {k: v["value"] for k, v in rep["metrics"].items()}
        # S = {1,2,3,5,7} (G7: missing trace ships), R = {4,6}, A = {1,2,3,6,7}, U = {4,5}
        expected = {
            "precision": 2 / 5, "chr": 2 / 5, "under_refusal": 1 / 2, "over_refusal": 1 / 5,
            "recall@5": 3 / 5,                     # G1, G2, G3 have all gold ids in the first 5
            "recall@1": 1 / 5,                     # only G2 (G3 needs both ids; G1's first id is d1#1 raw... see below)
            "pass_rate": 3 / 7, "correct_refusal": 1 / 2, "incorrect_refusal": 1 / 2,
            "hallucination": 4 / 5,                # G2 (unsupported word), G3 (outside), G5 and G7 (no citation)
            "citation_validity": 4 / 5,            # all but G3
            "false_accept_rate": 1 / 2,            # expected refuse: G4, G5; G5 shipped
            "false_refuse_rate": 1 / 5,            # expected answer: G1 G2 G3 G6 G7; G6 refused
            "decision_accuracy": 3 / 4,            # G1 G2 G4 right, G5 wrong (G3, G6 have no expected_decision)
            "fallback_used_count": 2, "fallback_used_rate": 2 / 5, "fallback_used_rate_answerable": 2 / 4,
            # retrieval over the 5 items with gold citations; G1 ranks d9#9, d2#0, d1#1
            "P@5": (1 / 5 + 1 / 5 + 2 / 5) / 5, "R@5": (1 + 1 + 1) / 5, "Success@5": 3 / 5,
            "RR": (1 / 3 + 1 + 1) / 5, "RR@5": (1 / 3 + 1 + 1) / 5,
            "nDCG@5": (1 / math.log2(4) + 1 + 1) / 5,
            "P@1": (0 + 1 + 1) / 5, "R@1": (0 + 1 + 1 / 2) / 5, "Success@1": 2 / 5, "RR@1": 2 / 5,
            "nDCG@1": (0 + 1 + 1) / 5,
        }
        # recall@1 (seed, trace order): G1 raw order starts with d1#1 -> hit; G2 hit; G3 needs 2 ids
        expected["recall@1"] = 2 / 5
        # issue 20: refused G4, G6; behaviour matches the label for all but G5 (shipped, expected to
        # refuse) and G6 (refused, expected to answer); no source policies; questions "q Gn" share
        # only the number n with nothing; only G2's retrieved chunk text is known (0 of 1 relevant)
        expected.update({"refusal_rate": 2 / 7, "partial_refusal_rate": 0 / 7, "rejection_calibration": 5 / 7, "source_policy_compliance": 5 / 5,
                         "answer_relevance": 0.0, "context_relevance": 0 / 1})
        unmeasured = ("policy_compliance", "citation_coverage", "conflict_correct_rate", "staleness_correct_rate",
                      "clarify_correct_rate", "latency_p50", "latency_p95", "cost_per_item",
                      "answer_correct_rate", "answer_f1",      # issue 28: no gold_answers, no answer gate
                      "faithfulness", "unsupported_answer_rate")   # issue 29: not computed unless asked
        for name in unmeasured:
            self.assertIsNone(m.pop(name), name)
        self.assertEqual(set(m), set(expected))
        for name, want in expected.items():
            with self.subTest(metric=name):
                self.assertAlmostEqual(m[name], round(want, 4), places=4)
        self.assertEqual(rep["metrics"]["precision"]["count"], 2)
        self.assertEqual(rep["metrics"]["precision"]["n"], 5)
        self.assertEqual(rep["k"], 5)
        self.assertEqual(rep["recall@k"], round(3 / 5, 4))
        self.assertEqual([rep[k] for k in ("answered", "refused", "answerable", "unanswerable")], [5, 2, 5, 2])

    def test_categories_and_failure_modes(self):
        code, rep, _ = self.score(MIX_GOLD, MIX_TRACE, "--k", "5")
        self.assertEqual(list(rep["categories"]), ["a", "b", "c"])
        cases = {"a": (3, 2 / 3), "b": (3, 1 / 3), "c": (1, 0 / 1)}
        for cat, (items, pass_rate) in cases.items():
            with self.subTest(category=cat):
                self.assertEqual(rep["categories"][cat]["items"], items)
                self.assertAlmostEqual(rep["categories"][cat]["metrics"]["pass_rate"]["value"], round(pass_rate, 4))
        self.assertEqual(rep["failure_modes"], {"missing_trace": 1, "under_refusal": 1, "retrieval_miss": 1,
                                                "citation_not_retrieved": 1, "hallucination": 1})

    def test_items_file(self):
        items = self.dir / "items.jsonl"
        self.score(MIX_GOLD, MIX_TRACE, "--k", "5", "--items", items)
        rows = [json.loads(line) for line in items.read_text().splitlines()]
        self.assertEqual([r["qid"] for r in rows], ["G%d" % i for i in range(1, 8)])
        by = {r["qid"]: r for r in rows}
        self.assertEqual(by["G2"]["unsupported"], ["allowed"])
        self.assertTrue(by["G2"]["pass"])
        self.assertEqual(by["G2"]["failure_mode"], "hallucination")
        self.assertEqual(by["G3"]["labels"], ["citation_not_retrieved", "hallucination", "citation_miss"])
        self.assertEqual(by["G1"]["retrieval"]["RR"], round(1 / 3, 4))
        self.assertIsNone(by["G4"]["retrieval"])

    def test_wilson_interval_solves_its_quadratic(self):
        # Wilson bounds are the p with (phat - p)^2 = z^2 p (1 - p) / n; check them independently.
        z = 1.959963984540054
        for count, n in ((0, 1), (2, 5), (5, 5), (37, 120), (1, 1000)):
            with self.subTest(count=count, n=n):
                lo, hi = score_eval.wilson(count, n)
                for p in (lo, hi):
                    if 0 < p < 1:
                        self.assertAlmostEqual((count / n - p) ** 2, z * z * p * (1 - p) / n, places=12)
                self.assertLessEqual(lo, count / n)
                self.assertGreaterEqual(hi, count / n)
        self.assertIsNone(score_eval.wilson(0, 0))

    def test_not_measured_metrics_are_null_with_reason(self):
        gold = [gold_row("A", True, ["alpha beta"], ["c1"])]
        trace = [trace_row("A", "alpha beta gamma", ["c1"], ["c1"])]
        code, rep, _ = self.score(gold, trace)
        for name, reason in (("hallucination", "no chunk text for 1 of 1 shipped claims (first: qid A, chunk c1)"),
                             ("decision_accuracy", "no item has both"), ("fallback_used_rate", "fallback_used"),
                             ("fallback_used_count", "fallback_used")):
            with self.subTest(metric=name):
                self.assertIsNone(rep["metrics"][name]["value"])
                self.assertIn(reason, rep["metrics"][name]["reason"])

    def test_hallucination_tokens(self):
        cases = [
            # (claim, chunk text, hallucinated?)
            ("The limit is 1,000 requests per hour.", "Limit: 1000 requests per hour.", False),
            ("The limit is 1,500 requests per hour.", "Limit: 1000 requests per hour.", True),
            ("SSNs are not stored in plaintext.", "SSNs are stored in plaintext.", True),   # negation matters
            ("It is in the archive.", "Archive.", False),                                   # stopwords skipped
            ("Keys rotate yearly.", "Keys rotate every year.", True),
            ("Version 2 applies.", "version 2 applies", False),
        ]
        for claim, text, hall in cases:
            with self.subTest(claim=claim):
                gold = [gold_row("A", True, [claim[:6]], ["c1"])]
                trace = [trace_row("A", claim, ["c1"], ["c1"], cited_chunks={"c1": text})]
                _, rep, _ = self.score(gold, trace)
                self.assertEqual(rep["metrics"]["hallucination"]["value"], 1.0 if hall else 0.0)

    def test_chunks_file_supplies_text(self):
        chunks = write_jsonl(self.dir / "chunks.jsonl", [{"id": "c1", "text": "Alpha beta."},
                                                         {"_id": "c2", "text": "Gamma."}])
        gold = [gold_row("A", True, ["alpha"], ["c1"]), gold_row("B", True, ["gamma"], ["c2"])]
        trace = [trace_row("A", "Alpha beta.", ["c1"], ["c1"]), trace_row("B", "Gamma delta.", ["c2"], ["c2"])]
        _, rep, _ = self.score(gold, trace, "--chunks", chunks)
        self.assertEqual(rep["metrics"]["hallucination"]["value"], 1 / 2)


class SeedEdgeRules(TempDir):
    """Seed 002's reference behaviour, one row per rule."""

    CASES = [
        # (rule, gold rows, trace rows, expected seed keys)
        ("refusal compared after strip + lower-case",
         [gold_row("A", False)], [trace_row("A", "  NOT IN CONTEXT\t")],
         {"answered": 0, "refused": 1, "under_refusal": 0.0}),
        ("a missing trace counts as a shipped answer",
         [gold_row("A", False), gold_row("B", True, ["abcdef"], ["c"])], [trace_row("A", "not in context")],
         {"answered": 1, "precision": 0 / 1, "over_refusal": 0 / 1}),
        ("a null claim is shipped",
         [gold_row("A", False)], [{"qid": "A", "retrieved_ids": [], "answer_json": {"claim": None}}],
         {"answered": 1, "under_refusal": 1 / 1}),
        ("a null answer_json is shipped",
         [gold_row("A", False)], [{"qid": "A", "answer_json": None}],
         {"answered": 1, "under_refusal": 1.0}),
        ("empty gold_claim_substr is vacuously contained; empty gold_citations hit only with citations == []",
         [gold_row("A", True, [], []), gold_row("B", True, [], [])],
         [trace_row("A", "anything", [], ["x"]), trace_row("B", "anything", ["x"], ["x"])],
         {"precision": 1 / 2, "chr": 1 / 2}),
        ("a missing trace with empty gold lists is, by the seed, a correct answer",
         [gold_row("A", True, [], []), gold_row("B", False)], [trace_row("Z", "x"), trace_row("B", "not in context")],
         {"answered": 1, "precision": 1.0, "chr": 1.0, "recall@k": 1.0}),
        ("substrings shorter than 5 characters never match",
         [gold_row("A", True, ["keys"], ["c"])], [trace_row("A", "keys", ["c"], ["c"])],
         {"precision": 0.0, "chr": 1.0}),
        ("a missing gold_claim_substr contains nothing",
         [{"qid": "A", "answerable": True, "gold_citations": ["c"]}], [trace_row("A", "whatever", ["c"], ["c"])],
         {"precision": 0.0, "chr": 1.0}),
        ("citations must be within retrieved_ids for a hit",
         [gold_row("A", True, ["alpha"], ["c"])], [trace_row("A", "alpha", ["c", "d"], ["c"])],
         {"precision": 0.0, "chr": 0.0}),
        ("CHR counts hits of shipped answerable items over all shipped items",
         [gold_row("A", True, ["alpha"], ["c"]), gold_row("B", False, [], ["c"])],
         [trace_row("A", "beta", ["c"], ["c"]), trace_row("B", "alpha", ["c"], ["c"])],
         {"chr": 1 / 2, "precision": 0 / 2, "under_refusal": 1 / 1}),
        ("recall@k is all-or-nothing over the first k retrieved ids",
         [gold_row("A", True, ["alpha"], ["c1", "c2"]), gold_row("B", True, ["alpha"], ["c1"])],
         [trace_row("A", "x", [], ["c1", "z", "c2"]), trace_row("B", "x", [], ["z", "c1"])],
         {"recall@k": 1 / 2}),
        ("precision and CHR are 1.0 with nothing shipped",
         [gold_row("A", True, ["alpha"], ["c"])], [trace_row("A", "not in context")],
         {"answered": 0, "precision": 1.0, "chr": 1.0, "over_refusal": 1.0}),
        ("duplicate trace rows: the last one wins",
         [gold_row("A", False)], [trace_row("A", "x"), trace_row("A", "not in context")],
         {"answered": 0, "under_refusal": 0.0}),
        ("q_id is accepted for qid",
         [gold_row("A", False)], [{"q_id": "A", "answer_json": {"claim": "not in context"}}],
         {"refused": 1}),
        ("no answerable items: over-refusal and recall@k are 0.0",
         [gold_row("A", False)], [trace_row("A", "not in context")],
         {"over_refusal": 0.0, "recall@k": 0.0}),
    ]

    def test_rules(self):
        for rule, gold, trace, want in self.CASES:
            with self.subTest(rule=rule):
                code, rep, err = self.score(gold, trace, "--k", "2")
                self.assertIn(code, (0, 1), err)
                for key, value in want.items():
                    self.assertEqual(rep[key], round(value, 4) if isinstance(value, float) else value, key)

    def test_seed_worked_example(self):
        code, rep, _ = run_cli(["--gold", SEED_EXAMPLE / "gold.jsonl", "--trace", SEED_EXAMPLE / "trace.jsonl",
                                "--k", "5", "--gates", "precision=0.80,chr=0.75,under=0.05,over=0.10"])
        self.assertEqual(code, 0)
        want = {"answered": 2, "refused": 1, "answerable": 2, "unanswerable": 1, "precision": 1.0, "chr": 1.0,
                "under_refusal": 0.0, "over_refusal": 0.0, "recall@k": 1.0, "k": 5,
                "gates": {"precision": "0.80", "chr": "0.75", "under": "0.05", "over": "0.10"}, "pass": True}
        self.assertEqual(list(rep)[:12], list(want))
        self.assertEqual({k: rep[k] for k in want}, want)

    def test_seed_example_passes_its_committed_gates(self):
        code, rep, err = run_cli(["--gold", SEED_EXAMPLE / "gold.jsonl", "--trace", SEED_EXAMPLE / "trace.jsonl",
                                  "--dataset", "seed", "--gates-file", ROOT / "gates.toml",
                                  "--chunks", SEED_EXAMPLE / "chunks.jsonl"])
        self.assertEqual(code, 0, err)
        self.assertTrue(rep["pass"])
        self.assertEqual(rep["metrics"]["hallucination"]["value"], 0.0)


class BadInput(TempDir):
    """Each malformed input: exit 2, the exact message, no traceback."""

    GOOD_GOLD = json.dumps(gold_row("A", True, ["alpha"], ["c"]))
    GOOD_TRACE = json.dumps(trace_row("A", "alpha", ["c"], ["c"]))

    GOLD_CASES = [
        (b'{"qid": "A",\n', 'gold.jsonl:1: invalid JSON (Expecting property name enclosed in double quotes), got "{\\"qid\\": \\"A\\","'),
        (b'[1, 2]\n', "gold.jsonl:1: expected a JSON object, got [1, 2]"),
        (b'{"answerable": true}\n', 'gold.jsonl:1: missing "qid", got {"answerable": true}'),
        (b'{"qid": 5, "answerable": true}\n', 'gold.jsonl:1: "qid" must be a non-empty string, got 5'),
        (b'{"qid": "A", "answerable": "yes"}\n', 'gold.jsonl:1: "answerable" must be true or false, got "yes"'),
        (b'{"qid": "A", "gold_citations": []}\n', 'gold.jsonl:1: "answerable" must be true or false, got null'),
        (b'{"qid": "A", "answerable": true, "gold_citations": "c1"}\n',
         'gold.jsonl:1: "gold_citations" must be a list of strings, got "c1"'),
        (b'{"qid": "A", "answerable": true, "gold_citations": [1]}\n',
         'gold.jsonl:1: "gold_citations" must be a list of strings, got [1]'),
        (b'{"qid": "A", "answerable": true, "gold_claim_substr": "abcde"}\n',
         'gold.jsonl:1: "gold_claim_substr" must be a list of strings, got "abcde"'),
        (b'{"qid": "A", "answerable": true, "expected_decision": "MAYBE"}\n',
         'gold.jsonl:1: "expected_decision" must be one of ANSWER, ABSTAIN, CLARIFY, BLOCK, got "MAYBE"'),
        (b'{"qid": "A", "answerable": true, "category": 3}\n', 'gold.jsonl:1: "category" must be a string, got 3'),
        (b'{"qid": "A", "answerable": true}\n\n{"qid": "A", "answerable": false}\n',
         'gold.jsonl:3: duplicate qid (first on line 1), got "A"'),
        (b'', "gold.jsonl: no gold items (the file is empty), got 0 rows"),
        (b'\n  \n', "gold.jsonl: no gold items (the file is empty), got 0 rows"),
        (b'{"qid": "A", "answerable": true, "question": "caf\xe9"}\n',
         "gold.jsonl:1: not UTF-8 (byte 0xe9 at column 50), got b'{\"qid\": \"A\", \"answerable\": true, \"question\": \"caf\\xe9\"}\\n'"),
    ]

    TRACE_CASES = [
        (b'{"q": "x"}\n', 'trace.jsonl:1: missing "qid" (or "q_id"), got {"q": "x"}'),
        (b'{"qid": 7}\n', 'trace.jsonl:1: "qid" must be a string, got 7'),
        (b'{"qid": "A", "answer_json": "x"}\n', 'trace.jsonl:1: "answer_json" must be an object, got "x"'),
        (b'{"qid": "A", "answer_json": {"claim": 5}}\n', 'trace.jsonl:1: "answer_json.claim" must be a string, got 5'),
        (b'{"qid": "A", "answer_json": {"claim": "x", "citations": "c"}}\n',
         'trace.jsonl:1: "answer_json.citations" must be a list of strings, got "c"'),
        (b'{"qid": "A", "answer_json": {"claim": "x", "citations": [null]}}\n',
         'trace.jsonl:1: "answer_json.citations" must be a list of strings, got [null]'),
        (b'{"qid": "A", "retrieved_ids": "c"}\n', 'trace.jsonl:1: "retrieved_ids" must be a list of strings, got "c"'),
        (b'{"qid": "A", "retrieved_ids": ["c"], "retrieved_scores": [1, 2]}\n',
         'trace.jsonl:1: "retrieved_scores" must be a list of numbers as long as "retrieved_ids" (1), got [1, 2]'),
        (b'{"qid": "A", "retrieved_ids": ["c"], "retrieved_scores": [true]}\n',
         'trace.jsonl:1: "retrieved_scores" must be a list of numbers as long as "retrieved_ids" (1), got [true]'),
        (b'{"qid": "A", "retrieved_ids": ["c"], "retrieved_scores": [NaN]}\n',
         'trace.jsonl:1: "retrieved_scores" must be a list of numbers as long as "retrieved_ids" (1), got [NaN]'),
        (b'{"qid": "A", "cited_chunks": {"c": 1}}\n', 'trace.jsonl:1: "cited_chunks" must be an object of id -> text or '
         '{"text", "policy"} (policy one of summarize, quote_only, no_use), got {"c": 1}'),
        (b'{"qid": "A", "decision": 1}\n', 'trace.jsonl:1: "decision" must be a string, got 1'),
        (b'{"qid": "A", "fallback_used": "no"}\n', 'trace.jsonl:1: "fallback_used" must be true or false, got "no"'),
        (b'{"qid": "A"\n', 'trace.jsonl:1: invalid JSON (Expecting \',\' delimiter), got "{\\"qid\\": \\"A\\""'),
        (b'\xff\xfe{}\n', "trace.jsonl:1: not UTF-8 (byte 0xff at column 1), got b'\\xff\\xfe{}\\n'"),
    ]

    def run_bytes(self, gold: bytes, trace: bytes):
        (self.dir / "gold.jsonl").write_bytes(gold)
        (self.dir / "trace.jsonl").write_bytes(trace)
        return run_cli(["--gold", "gold.jsonl", "--trace", "trace.jsonl", "--gates", "precision=0"], cwd=self.dir)

    def test_gold(self):
        for data, message in self.GOLD_CASES:
            with self.subTest(data=data):
                code, rep, err = self.run_bytes(data, self.GOOD_TRACE.encode() + b"\n")
                self.assertEqual((code, rep), (2, None))
                self.assertEqual(err.strip(), message)

    def test_trace(self):
        for data, message in self.TRACE_CASES:
            with self.subTest(data=data):
                code, rep, err = self.run_bytes(self.GOOD_GOLD.encode() + b"\n", data)
                self.assertEqual((code, rep), (2, None))
                self.assertEqual(err.strip(), message)

    def test_all_errors_reported_up_to_the_limit(self):
        bad = b"".join(b'{"qid": "A%d", "answerable": 1}\n' % i for i in range(25))
        code, _, err = self.run_bytes(bad, b"")
        lines = err.strip().split("\n")
        self.assertEqual(code, 2)
        self.assertEqual(len(lines), 21)
        self.assertEqual(lines[0], 'gold.jsonl:1: "answerable" must be true or false, got 1')
        self.assertEqual(lines[19], 'gold.jsonl:20: "answerable" must be true or false, got 1')
        self.assertEqual(lines[20], "... and 5 more errors")

    def test_bom_crlf_and_blank_lines_are_accepted(self):
        gold = b"\xef\xbb\xbf" + self.GOOD_GOLD.encode() + b"\r\n\r\n   \r\n"
        code, rep, err = self.run_bytes(gold, b"\n" + self.GOOD_TRACE.encode() + b"\r\n")
        self.assertEqual(code, 0, err)
        self.assertEqual(rep["precision"], 1.0)
        self.assertIn("gold.jsonl:1: UTF-8 byte-order mark ignored", rep["warnings"])

    def test_unknown_and_duplicate_trace_rows_are_counted(self):
        trace = (self.GOOD_TRACE + "\n" + json.dumps(trace_row("ZZ", "x")) + "\n" + self.GOOD_TRACE + "\n").encode()
        code, rep, err = self.run_bytes(self.GOOD_GOLD.encode() + b"\n", trace)
        self.assertEqual(code, 0)
        self.assertEqual((rep["counts"]["unknown_trace_rows"], rep["counts"]["duplicate_trace_rows"]), (1, 1))
        self.assertIn("1 trace rows name qids not in the gold set and were not scored (e.g. ZZ)", rep["warnings"])
        self.assertIn("1 duplicate trace rows: the last row per qid was scored (e.g. A)", rep["warnings"])
        self.assertIn("score_eval: warning: 1 trace rows name qids", err)

    def test_usage_errors(self):
        g = write_jsonl(self.dir / "g.jsonl", [gold_row("A", False)])
        cases = [
            (["--gold", g], "usage: --trace is required (with --gold, or alone for the reference-free metrics), "
                            "or --qrels and --run"),
            (["--gold", g, "--trace", g, "--k", "0"], "--k: cutoffs must be integers from 1 to 10000 separated by commas, got '0'"),
            (["--gold", g, "--trace", g, "--gates", "recal@5=0.5"], "--gates: unknown metric 'recal@5'; did you mean 'recall@5'?"),
            (["--gold", g, "--trace", g, "--gates", "precision=high"], "--gates: threshold for 'precision' must be a number, got 'high'"),
            (["--gold", g, "--trace", g, "--gates", "precision"], "--gates: expected name=value, got 'precision'"),
            (["--gold", self.dir / "nope.jsonl", "--trace", g], "nope.jsonl: cannot read: No such file or directory"),
            (["--qrels", g, "--gold", g, "--trace", g], "usage: give --gold/--trace or --qrels/--run, not both"),
        ]
        for argv, message in cases:
            with self.subTest(argv=argv):
                code, _, err = run_cli(argv, cwd=self.dir)
                self.assertEqual(code, 2)
                self.assertTrue(err.strip().endswith(message), err)

    def test_argparse_errors_return_2(self):
        code, _, err = run_cli(["--bogus"])
        self.assertEqual(code, 2)
        self.assertIn("unrecognized arguments: --bogus", err)


class Gates(TempDir):
    GOLD = [gold_row("A", True, ["alpha"], ["c"]), gold_row("B", False)]
    TRACE = [trace_row("A", "alpha", ["c"], ["c"], cited_chunks={"c": "alpha"}, fallback_used=True),
             trace_row("B", "not in context", fallback_used=False)]

    def gates_file(self, text):
        path = self.dir / "g.toml"
        path.write_text(text, encoding="utf-8")
        return path

    def test_thresholds(self):
        cases = [
            ("precision=1.0", 0), ("under=0", 0), ("over_refusal<=0", 0),
            ("hallucination=0", 0), ("fallback_used_rate_answerable=0.5", 1), ("fallback_used_count=1", 0),
            ("P@3=0.34", 1), ("P@3=0.33", 0), ("recall@k=1", 0), ("nDCG@10=1", 0), ("decision_accuracy=0", 1),
        ]
        for gates, code in cases:
            with self.subTest(gates=gates):
                got, rep, _ = self.score(self.GOLD, self.TRACE, gates=gates)
                self.assertEqual(got, code)
                self.assertEqual(rep["pass"], code == 0)
        # a rate threshold above 1 can never pass: a typo, an input error (issue 42)
        got, rep, err = self.score(self.GOLD, self.TRACE, gates="precision>=1.01")
        self.assertEqual((got, rep), (2, None))
        self.assertIn("--gates: threshold for 'precision' must be from 0 to 1 (precision is a rate), got 1.01", err)

    def test_not_measured_gate_fails_with_reason(self):
        trace = [trace_row("A", "alpha", ["c"], ["c"]), trace_row("B", "not in context")]
        code, rep, err = self.score(self.GOLD, trace, gates="hallucination=0")
        self.assertEqual(code, 1)
        self.assertIn("not measured: no chunk text for 1 of 1 shipped claims", rep["gate_results"][0]["reason"])
        self.assertIn("gate failed: hallucination: not measured", err)

    def test_gates_file_dataset_and_message(self):
        # refusal_reader "exact": seed 002's token rule (the built-in reader would also read the
        # bare "no answer" as a refusal, whatever the token)
        path = self.gates_file('[scorer]\nrefusal = "NO ANSWER"\nrefusal_reader = "exact"\n\n[baseline]\npass_rate = { min = 0.5 }\n\n'
                               '[perturb]\nfallback_used_rate = { max = 0.1, message = "Too much fallback." }\n')
        trace = [trace_row("A", "alpha", ["c"], ["c"], fallback_used=True), trace_row("B", "no answer")]
        code, rep, _ = self.score(self.GOLD, trace, "--gates-file", path, gates=None)
        self.assertEqual((code, rep["gates"], rep["inputs"]["refusal"]), (0, {"pass_rate": ">=0.5"}, "NO ANSWER"))
        code, rep, err = self.score(self.GOLD, trace, "--gates-file", path, "--dataset", "perturb", gates=None)
        self.assertEqual(code, 1)
        self.assertEqual(rep["gate_results"][0]["message"], "Too much fallback.")
        self.assertIn("fallback_used_rate = 1, needs <= 0.1 Too much fallback.", err)
        code, rep, _ = self.score(self.GOLD, trace, "--gates-file", path, "--refusal", "alpha", gates=None)
        self.assertEqual(rep["answered"], 1)     # "no answer" now ships, "alpha" is the refusal

    def test_gates_string_overrides_file(self):
        path = self.gates_file("[baseline]\nprecision = { min = 2 }\n")
        code, rep, _ = self.score(self.GOLD, self.TRACE, "--gates-file", path, gates="chr=0.5")
        self.assertEqual((code, rep["gates"]), (0, {"chr": "0.5"}))

    def test_default_gates_file_in_cwd_then_seed_default(self):
        code, rep, _ = self.score(self.GOLD, self.TRACE, gates=None)
        self.assertEqual(rep["gates"], {"precision": "0.80", "chr": "0.75", "under": "0.05", "over": "0.10"})
        self.gates_file("")
        (self.dir / "g.toml").rename(self.dir / "gates.toml")
        (self.dir / "gates.toml").write_text("[baseline]\nchr = { min = 0.9 }\n")
        code, rep, _ = self.score(self.GOLD, self.TRACE, gates=None)
        self.assertEqual(rep["gates"], {"chr": ">=0.9"})

    def test_gates_file_errors(self):
        cases = [
            ("[baseline]\n\"recal@5\" = { min = 0.5 }\n", "g.toml:2: [baseline] unknown metric 'recal@5'; did you mean 'recall@5'?"),
            ("[baseline]\npresicion = { min = 0.5 }\n", "g.toml:2: [baseline] unknown metric 'presicion'; did you mean 'precision'?"),
            ("[baseline]\nprecision = 0.5\n", "g.toml:2: gate 'precision' must be an inline table like { min = 0.8 } or { max = 0.05 }, got 0.5"),
            ("[baseline]\nprecision = { min = 0.5, max = 0.9 }\n", 'g.toml:2: gate \'precision\' needs exactly one of min or max, got {"min": 0.5, "max": 0.9}'),
            ("[baseline]\nprecision = { min = \"0.5\" }\n", 'g.toml:2: gate \'precision\' min must be a number, got "0.5"'),
            ("[baseline]\nprecision = { minimum = 0.5 }\n", 'g.toml:2: gate \'precision\' has unknown keys minimum; known: min, max, message, tier, got {"minimum": 0.5}'),
            ("[perturb]\nchr = { min = 0.5 }\n", "g.toml: no [baseline] section; datasets in the file: perturb"),
            ("[scorer]\nrefusl = \"x\"\n[baseline]\n", "g.toml:2: unknown [scorer] key 'refusl'; known: refusal, refusal_patterns, cutoff_patterns, citation_patterns, refusal_reader, grounding, got \"x\""),
            ("[baseline]\n[regression]\nalpha = 2\n", "g.toml:3: [regression] alpha must be a number in (0, 1), got 2"),
            ("[baseline]\n[regression.max_drop]\n\"nDCG@10\" = 0.1\n",
             "g.toml:3: [regression.max_drop] 'nDCG@10' has no per-item yes/no verdict for the paired test"),
            ("[baseline]\nprecision = { min = 0.5 }\nprecision = { min = 0.6 }\n", None),   # duplicate key
        ]
        for text, message in cases:
            with self.subTest(text=text):
                code, rep, err = self.score(self.GOLD, self.TRACE, "--gates-file", self.gates_file(text).name, gates=None)
                self.assertEqual((code, rep), (2, None))
                if message:
                    self.assertTrue(err.startswith(message), err)
                else:
                    self.assertIn("g.toml:3:", err)

    def test_committed_gates_file_loads_for_every_dataset(self):
        for dataset in ("baseline", "perturb", "seed"):
            with self.subTest(dataset=dataset):
                refusal, gates, regression = score_eval.load_gates_file(str(ROOT / "gates.toml"), dataset)
                self.assertEqual(refusal, "not in context")
                self.assertTrue(gates)
                self.assertEqual(regression.slices, ("conflict", "stale", "unanswerable_near_miss"))
        _, gates, _ = score_eval.load_gates_file(str(ROOT / "gates.toml"), "baseline")
        want = {"pass_rate": (">=", 0.95), "hallucination": ("<=", 0.0), "fallback_used_rate_answerable": ("<=", 0.15),
                "incorrect_refusal": ("<=", 0.02), "precision": (">=", 0.80), "chr": (">=", 0.75),
                "under_refusal": ("<=", 0.05), "over_refusal": ("<=", 0.10),
                # issue 20: seed 004's critical tier blocks
                "policy_compliance": (">=", 0.95)}
        self.assertEqual({g.ref.metric.name: (g.op, g.threshold) for g in gates if g.tier == "block"}, want)
        # issue 20: seed 004's quality-tier bar for right-reason refusals, as warn gates
        self.assertEqual({g.ref.metric.name: (g.op, g.threshold) for g in gates if g.tier == "warn"},
                         {"conflict_correct_rate": (">=", 0.80), "staleness_correct_rate": (">=", 0.80),
                          "clarify_correct_rate": (">=", 0.80)})
        fb = [g for g in gates if g.ref.metric.name == "fallback_used_rate_answerable"][0]
        self.assertEqual(fb.message, "Fallback retrieval triggered too often; check embeddings/index changes or "
                                     "similarity calibration.")
        _, perturb, _ = score_eval.load_gates_file(str(ROOT / "gates.toml"), "perturb")
        self.assertEqual([g.threshold for g in perturb if g.ref.metric.name == "pass_rate"], [0.90])


class Outputs(TempDir):
    def test_out_markdown_items_written_and_stdout_matches(self):
        out, md = self.dir / "r.json", self.dir / "sub" / "r.md"
        code, rep, _ = self.score(MIX_GOLD, MIX_TRACE, "--out", out, "--markdown", md, "--items", self.dir / "i.jsonl",
                                  "--full")
        self.assertEqual(json.loads(out.read_text()), rep)
        text = md.read_text()
        for part in ("# score_eval report: baseline", "## Gates", "## Categories", "## Failure modes",
                     "| missing_trace | 1 |", "## Worst items", "| G7 | c | missing_trace |"):
            with self.subTest(part=part):
                self.assertIn(part, text)
        self.assertEqual([p.name for p in self.dir.rglob(".*.ragtmp")], [])

    def test_compact_stdout_with_out_or_summary(self):
        """Issue 31 item 6: with --out (or --summary) stdout is the compact summary, the same
        verdict, gates and overall score as the full report, a few lines whatever the items.
        Issue 40: the overall score only when the run asks for the scorecard."""
        out = self.dir / "r.json"
        gold = [gold_row("A%d" % i, True, ["alpha"], ["c"]) for i in range(300)]
        trace = [trace_row("A%d" % i, "alpha", ["c"], ["c"]) for i in range(300)]
        keys = {"pass", "dataset", "schema", "version", "counts", "gates", "failed", "files"}
        for extra in (["--out", out], ["--summary"], ["--out", out, "--compute", "scorecard"],
                      ["--summary", "--compute", "scorecard"]):
            with self.subTest(extra=extra):
                code, short, _ = self.score(gold, trace, *extra)
                if "--out" not in extra:
                    self.score(gold, trace, "--out", out, *extra[1:])
                full = json.loads(out.read_text())
                if "scorecard" not in extra:
                    self.assertEqual((set(short), "scorecard" in full), (keys, False))
                    continue
                self.assertEqual(set(short), keys | {"overall", "overall_k"})
                self.assertEqual((short["pass"], short["overall"], short["overall_k"]),
                                 (full["pass"], full["scorecard"]["overall"], 5))
                self.assertEqual([g["gate"] for g in short["gates"]], [g["gate"] for g in full["gate_results"]])
                self.assertEqual(short["counts"]["gold_items"], 300)

    def test_overall_is_the_same_whatever_k(self):
        """One overall score for one trace: make eval's --k 1,5,10 and a plain --k 5 agree."""
        gold = [gold_row("A", True, ["alpha"], ["c"]), gold_row("B", True, ["beta"], ["d"])]
        trace = [trace_row("A", "alpha", ["x", "y", "c"], ["c"]), trace_row("B", "beta", ["d"], ["d"])]
        cards = [self.score(gold, trace, "--k", k, "--compute", "scorecard")[1]["scorecard"]
                 for k in ("1,5,10", "5", "1", "3")]
        self.assertEqual({(c["overall"], c["k"], c["stages"]["retrieval"]["metric"]) for c in cards},
                         {(cards[1]["overall"], 5, "recall@5")})

    def test_rounding_and_key_order(self):
        gold = [gold_row("A%d" % i, True, ["alpha"], ["c"]) for i in range(3)]
        trace = [trace_row("A0", "alpha", ["c"], ["c"])]
        code, rep, _ = self.score(gold, trace)
        self.assertEqual(rep["precision"], round(1 / 3, 4))
        self.assertEqual(list(rep)[:12], ["answered", "refused", "answerable", "unanswerable", "precision", "chr",
                                          "under_refusal", "over_refusal", "recall@k", "k", "gates", "pass"])
        self.assertEqual(list(rep)[-1], "items")

    def test_gate_uses_unrounded_value(self):
        gold = [gold_row("A%d" % i, True, ["alpha"], ["c"]) for i in range(3)]
        trace = [trace_row("A0", "alpha", ["c"], ["c"])]
        code, rep, _ = self.score(gold, trace, gates="precision=0.33335")    # 1/3 rounds to 0.3333 but is larger
        self.assertEqual(code, 1)   # 1/3 = 0.33333... < 0.33335
        code, rep, _ = self.score(gold, trace, gates="precision=0.33333")
        self.assertEqual(code, 0)

    def test_byte_identical_across_hash_seeds(self):
        g = write_jsonl(self.dir / "gold.jsonl", MIX_GOLD)
        t = write_jsonl(self.dir / "trace.jsonl", MIX_TRACE)
        outs = []
        for seed in ("0", "1", "12345"):
            env = dict(os.environ, PYTHONHASHSEED=seed)
            proc = subprocess.run([sys.executable, str(ROOT / "score_eval.py"), "--gold", str(g), "--trace", str(t),
                                   "--k", "1,5,10", "--gates", "precision=0"], capture_output=True, env=env,
                                  cwd=str(self.dir))
            outs.append(proc.stdout)
        self.assertEqual(outs[0], outs[1])
        self.assertEqual(outs[0], outs[2])
        self.assertTrue(outs[0].startswith(b"{"))


class Docs(unittest.TestCase):
    def test_help_lists_every_metric_and_every_flag_has_help(self):
        code, _, _ = run_cli(["--help"])
        self.assertEqual(code, 0)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            score_eval.build_parser().print_help()
        for m in score_eval.REGISTRY:
            with self.subTest(metric=m.name):
                self.assertIn(m.name, out.getvalue())
        for action in score_eval.build_parser()._actions:
            with self.subTest(flag=action.option_strings):
                self.assertTrue(action.help)

    def test_readme_metric_table_in_sync(self):
        """README.md's and docs/design.md's metric tables are the registry's (issue 40)."""
        begin, end = "<!-- metrics:begin -->", "<!-- metrics:end -->"
        for name in ("README.md", "docs/design.md"):
            with self.subTest(file=name):
                text = (ROOT / name).read_text(encoding="utf-8")
                self.assertEqual((text.count(begin), text.count(end)), (1, 1))
                section = text.split(begin, 1)[1].split(end, 1)[0]
                self.assertEqual(section, "\n" + score_eval.metric_table_markdown(),
                                 "regenerate with: python3 tools/metric_tables.py")

    def test_metric_names_parse(self):
        cases = {"precision": ("precision", None), "under": ("under_refusal", None), "over": ("over_refusal", None),
                 "recall@k": ("recall@K", None), "recall@10": ("recall@K", 10), "R@10": ("R@K", 10),
                 "nDCG@3": ("nDCG@K", 3), "RR": ("RR", None), "RR@2": ("RR@K", 2), "Success@1": ("Success@K", 1)}
        for name, (metric, k) in cases.items():
            with self.subTest(name=name):
                ref = score_eval.parse_metric(name)
                self.assertEqual((ref.metric.name, ref.k), (metric, k))
        for bad, hint in (("Recall@5", "did you mean 'recall@5'?"), ("ndcg@10", "did you mean 'nDCG@10'?"),
                          ("P@0", "unknown metric 'P@0'"), ("mrr", "did you mean")):
            with self.subTest(bad=bad):
                with self.assertRaises(score_eval.ScoreError) as cm:
                    score_eval.parse_metric(bad)
                self.assertIn(hint, str(cm.exception))

    def test_module_doctest(self):
        import doctest
        self.assertEqual(doctest.testmod(score_eval).failed, 0)

    def test_stdlib_only_imports(self):
        tree = ast.parse((ROOT / "score_eval.py").read_text(encoding="utf-8"))
        stdlib = set(getattr(sys, "stdlib_module_names", ())) or {
            "__future__", "argparse", "array", "base64", "collections", "difflib", "hashlib", "itertools", "json",
            "math", "os", "re", "sys", "tempfile", "time", "typing", "csv", "html", "io", "random", "stat", "traceback",
            "bisect", "functools", "operator", "signal", "threading", "unicodedata", "zlib", "contextlib", "fractions",
            "gc", "heapq", "secrets"}
        stdlib.add("tomllib")   # 3.11+; score_eval imports it inside try/except ImportError
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                found.add(node.module.split(".")[0])
        self.assertEqual(sorted(found - stdlib), [])
        self.assertFalse(found & {"pickle", "marshal", "shelve"})


if __name__ == "__main__":
    unittest.main()
