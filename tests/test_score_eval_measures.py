"""Graded nDCG against trec_eval's own expected output, and interval values against hand computation.

1. tests/data/trec_eval_test/ (vendored from trec_eval 10.0, see its SOURCE.md): ``qrels.rel_level``
   (levels -1 to 4) with ``results.test``; every ``ndcg_cut_K`` line of ``out.test.aql`` (per
   topic and ``all``) is compared to 4 decimals, in both modes that compute nDCG: the report's
   ``nDCG@K`` (items file per topic, metrics for all) and ``--format trec -q -m ndcg_cut``.
2. wilson() and _normal_ci() on cases worked out by hand below, and the same intervals as they
   reach a report (rounded to 4 decimals).
"""
import contextlib
import io
import json
import math
import re
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import score_eval  # noqa: E402
from tests.test_score_eval import gold_row, run_cli, trace_row, write_jsonl  # noqa: E402

DATA = ROOT / "tests" / "data" / "trec_eval_test"
Z = 1.959963984540054     # two-sided 95% normal quantile


def expected_ndcg():
    """{(K, topic): value} of out.test.aql's ndcg_cut_K lines."""
    out = {}
    for line in (DATA / "out.test.aql").read_text().splitlines():
        parts = line.split()
        m = re.fullmatch(r"ndcg_cut_(\d+)", parts[0]) if len(parts) == 3 else None
        if m:
            out[(int(m.group(1)), parts[1])] = float(parts[2])
    return out


class GradedNdcg(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="score_eval_measures_"))
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.want = expected_ndcg()

    def test_expected_file_has_the_graded_values(self):
        # 9 cutoffs x (3 topics + all); a graded topic differs from the binary file's value
        self.assertEqual(len(self.want), 36)
        self.assertEqual(self.want[(10, "302")], 0.7530)

    def test_report_ndcg_at_k_per_topic_and_all(self):
        ks = sorted({k for k, _ in self.want})
        items = self.dir / "items.jsonl"
        code, rep, err = run_cli(["--qrels", DATA / "qrels.rel_level", "--run", DATA / "results.test",
                                  "--k", ",".join(map(str, ks)), "--gates", "RR=0",
                                  "--items", items], cwd=self.dir)
        self.assertEqual(code, 0, err)
        got = {(k, "all"): rep["metrics"]["nDCG@%d" % k]["value"] for k in ks}
        for line in items.read_text().splitlines():
            row = json.loads(line)
            for k in ks:
                got[(k, row["qid"])] = row["retrieval"]["nDCG@%d" % k]
        for key, value in sorted(self.want.items()):
            with self.subTest(k=key[0], topic=key[1]):
                self.assertAlmostEqual(got[key], value, places=4)

    def test_trec_format_ndcg_cut(self):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = score_eval.main(["--qrels", str(DATA / "qrels.rel_level"), "--run", str(DATA / "results.test"),
                                    "--gates", "none", "--format", "trec", "-q", "-m", "ndcg_cut"])
        self.assertEqual(code, 0, err.getvalue())
        got = {}
        for line in out.getvalue().splitlines():
            name, topic, value = line.split()
            got[(int(name.rsplit("_", 1)[1]), topic)] = float(value)
        self.assertEqual(set(got), set(self.want))
        for key, value in sorted(self.want.items()):
            with self.subTest(k=key[0], topic=key[1]):
                self.assertAlmostEqual(got[key], value, places=4)

    def test_graded_ideal_order_by_hand(self):
        # levels a=3, b=1, c=2; ranking b, c, a.  DCG@2 = 1/log2(2) + 2/log2(3); the ideal
        # order is 3, 2, 1: IDCG@2 = 3/log2(2) + 2/log2(3).
        judged = {"a": 3, "b": 1, "c": 2}
        dcg = 1 + 2 / math.log2(3)
        idcg = 3 + 2 / math.log2(3)
        v = score_eval.trec_query(["b", "c", "a"], judged, ["ndcg_cut_2", "ndcg_cut_3"])
        self.assertAlmostEqual(v["ndcg_cut_2"], dcg / idcg, places=12)
        full = 1 + 2 / math.log2(3) + 3 / 2
        self.assertAlmostEqual(v["ndcg_cut_3"], full / (3 + 2 / math.log2(3) + 1 / 2), places=12)

    def test_ideal_gains_and_discounts_by_hand(self):
        # the ideal ranking keeps the positive levels only, largest first (0 judged
        # non-relevant and -1 unjudged are not relevant documents)
        table = [([0, 2, 1, -1, 3], [3, 2, 1]), ([0, 0], []), ([1, 1, 2], [2, 1, 1]), ([], [])]
        for levels, want in table:
            with self.subTest(levels=levels):
                self.assertEqual(score_eval.ideal_gains(levels), want)
        # the discounts 1 / log2(rank + 1) are computed as far as asked, no further
        saved = list(score_eval._DISC)
        self.addCleanup(lambda: score_eval._DISC.__setitem__(slice(None), saved))
        del score_eval._DISC[:]
        self.assertEqual(score_eval._disc(3), [1.0, 1 / math.log2(3), 0.5])
        self.assertEqual(len(score_eval._disc(2)), 3)

    def test_topic_without_relevant_documents(self):
        # judged non-relevant (0) and unjudged (-1) only: num_rel 0, and every measure that
        # divides by it or needs a relevant document is 0 (the registry's "0 when num_rel is 0")
        names = ["num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "P_5", "recall_5",
                 "ndcg_cut_5", "success_1", "iprec_at_recall_0.00", "ndcg", "gm_map"]
        v = score_eval.trec_query(["a", "b"], {"a": 0, "b": -1}, names)
        self.assertEqual(v, dict(zip(names, [2.0] + [0.0] * 13)))
        # nothing retrieved at all: every measure 0 (num_rel counts the judgments)
        v = score_eval.trec_query([], {"a": 1, "b": 0}, names)
        self.assertEqual(v, dict(zip(names, [0.0, 1.0] + [0.0] * 12)))

    def test_trec_query_by_hand(self):
        # levels a=2, b=0, c=1, d=3 (d not retrieved); ranking a, b, c, x: relevant at ranks 1
        # and 3 of R = 3 relevant
        v = score_eval.trec_query(["a", "b", "c", "x"], {"a": 2, "b": 0, "c": 1, "d": 3},
                                  ["map", "Rprec", "recip_rank", "P_1", "P_2", "recall_2", "recall_3", "success_1",
                                   "ndcg_cut_1", "ndcg_cut_3"])
        L2 = 1 / math.log2(3)
        want = {"map": (1 / 1 + 2 / 3) / 3, "Rprec": 2 / 3, "recip_rank": 1.0, "P_1": 1.0, "P_2": 0.5,
                "recall_2": 1 / 3, "recall_3": 2 / 3, "success_1": 1.0,
                "ndcg_cut_1": 2 / 3,                                    # 2 / ideal 3
                "ndcg_cut_3": (2 + 1 / 2) / (3 + 2 * L2 + 1 / 2)}       # ideal 3, 2, 1
        for name, value in want.items():
            with self.subTest(measure=name):
                self.assertAlmostEqual(v[name], value, places=12)


class Intervals(unittest.TestCase):
    """Hand computation: Wilson center (p + z^2/2n) / (1 + z^2/n), half-width
    z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n); the normal interval uses the sample variance
    (divisor n - 1) and the standard error sqrt(var / n)."""

    def test_wilson(self):
        cases = [
            # count, n, (lower, upper) written out from the formula
            (3, 10, (0.3 + Z * Z / 20 - Z * math.sqrt(0.021 + Z * Z / 400)) / (1 + Z * Z / 10),
                    (0.3 + Z * Z / 20 + Z * math.sqrt(0.021 + Z * Z / 400)) / (1 + Z * Z / 10)),
            (4, 4, 4 / (4 + Z * Z), 1.0),          # p = 1: lower = n / (n + z^2)
            (0, 5, 0.0, Z * Z / (5 + Z * Z)),       # p = 0: upper = z^2 / (n + z^2)
            (1, 2, 0.5 - Z * math.sqrt(0.125 + Z * Z / 16) / (1 + Z * Z / 2),
                   0.5 + Z * math.sqrt(0.125 + Z * Z / 16) / (1 + Z * Z / 2)),
        ]
        for count, n, lo, hi in cases:
            with self.subTest(count=count, n=n):
                got = score_eval.wilson(count, n)
                self.assertAlmostEqual(got[0], lo, places=12)
                self.assertAlmostEqual(got[1], hi, places=12)
        self.assertAlmostEqual(score_eval.wilson(3, 10)[0], 0.1078, places=4)   # the textbook 3/10 interval
        self.assertAlmostEqual(score_eval.wilson(3, 10)[1], 0.6032, places=4)
        self.assertIsNone(score_eval.wilson(0, 0))

    def test_normal_ci(self):
        cases = [
            # values, (lower, upper): mean -/+ z * sqrt(sample variance / n)
            ([0.2, 0.4, 0.6], 0.4 - Z * math.sqrt(0.04 / 3), 0.4 + Z * math.sqrt(0.04 / 3)),
            ([0.5, 0.5, 1.0, 0.5], 0.625 - Z * 0.125, 0.625 + Z * 0.125),   # var = 0.1875 / 3
            ([0.3], 0.3, 0.3),                                              # n = 1: no spread
            ([0.0, 1.0], 0.0, 1.0),                                         # clipped to [0, 1]
        ]
        for values, lo, hi in cases:
            with self.subTest(values=values):
                got = score_eval._normal_ci(math.fsum(values), math.fsum(v * v for v in values), len(values))
                self.assertAlmostEqual(got[0], lo, places=12)
                self.assertAlmostEqual(got[1], hi, places=12)
        self.assertIsNone(score_eval._normal_ci(0.0, 0.0, 0))

    def test_intervals_in_a_report(self):
        # four items, gold citations a and b each; R@2 = 0.5, 0.5, 1, 0.5 (mean 0.625,
        # sample variance 0.0625, standard error 0.125); Success@2 = 4 / 4.
        folder = Path(tempfile.mkdtemp(prefix="score_eval_ci_"))
        self.addCleanup(shutil.rmtree, folder, True)
        gold = [gold_row("q%d" % n, cits=["a", "b"]) for n in range(4)]
        rets = [["a", "x"], ["x", "b"], ["a", "b"], ["b", "y"]]
        trace = [trace_row("q%d" % n, "not in context", retrieved=r) for n, r in enumerate(rets)]
        code, rep, err = run_cli(["--gold", write_jsonl(folder / "g.jsonl", gold),
                                  "--trace", write_jsonl(folder / "t.jsonl", trace),
                                  "--k", "2", "--gates", "R@2=0"], cwd=folder)
        self.assertIn(code, (0, 1), err)
        r2 = rep["metrics"]["R@2"]
        self.assertEqual(r2["value"], 0.625)
        self.assertEqual(r2["ci"], [round(0.625 - Z * 0.125, 4), round(0.625 + Z * 0.125, 4)])
        s2 = rep["metrics"]["Success@2"]
        self.assertEqual((s2["count"], s2["n"]), (4, 4))
        self.assertEqual(s2["ci"], [round(4 / (4 + Z * Z), 4), 1.0])
        # over_refusal: 4 answerable items, all refused (4 / 4)
        self.assertEqual(rep["metrics"]["over_refusal"]["ci"], [round(4 / (4 + Z * Z), 4), 1.0])


if __name__ == "__main__":
    unittest.main()


class Needs(unittest.TestCase):
    """Issue 40: a run computes only the measures its gates, outputs and flags ask for.  The
    registry's ``needs``: answer_relevance / context_relevance ("relevance") and the rank
    measures P@K, R@K, Success@K, RR, RR@K, nDCG@K ("ranks"); a measure not computed is left out
    of the report, and the scorecard is reported only when asked for.  Where computed, values
    are the hand-derived ones."""
    # content terms (final s folded): q1 {refund, window}, claim 1 has both -> 1; q2 {approve,
    # exception}, claim 2 {manager, approve} -> 1/2; mean 3/4.
    GOLD = [gold_row("q1", True, ["refund window"], ["c1"]), gold_row("q2", True, ["approve"], ["c2"])]
    # ranks at K = 1: q1 retrieves c1 first (RR 1), q2 retrieves c2 second (RR 1/2, nothing in the top 1)
    TRACE = [dict(trace_row("q1", "The refund window is 30 days.", ["c1"], ["c1", "x"]), q="What is the refund window?"),
             dict(trace_row("q2", "Managers approve them.", ["c2"], ["y", "c2"]), q="Who approves exceptions?")]
    RANKS = {"P@1": 0.5, "R@1": 0.5, "Success@1": 0.5, "RR": 0.75, "RR@1": 0.5, "nDCG@1": 0.5}

    def run_case(self, *args, folder=None):
        if folder is None:
            folder = Path(tempfile.mkdtemp(prefix="score_eval_needs_"))
            self.addCleanup(shutil.rmtree, folder, True)
        (folder / "g.toml").write_text('[baseline]\nprecision = { min = 0 }\n', encoding="utf-8")
        argv = ["--gold", write_jsonl(folder / "g.jsonl", self.GOLD), "--trace", write_jsonl(folder / "t.jsonl", self.TRACE),
                "--k", "1"] + [a.replace("FOLDER", str(folder)) for a in args]
        return run_cli(argv, cwd=folder)

    def test_computed_only_when_asked(self):
        cases = [
            # args, relevance computed?, scorecard reported?
            (["--gates", "precision=0"], False, False),      # seed 002's command asks for neither
            (["--gates", "none"], False, False),
            (["--gates", "answer_relevance=0.5"], True, False),
            (["--gates", "precision=0", "--compute", "answer_relevance"], True, False),
            (["--gates", "precision=0", "--compute", "scorecard"], True, True),   # seed 004's weights weigh it
            (["--gates-file", "FOLDER/g.toml"], True, True),   # a gates file asks for the scorecard
            (["--gates", "precision=0", "--compute", "all"], True, True),
            (["--gates", "precision=0", "--items", "FOLDER/items.jsonl"], True, True),
            (["--gates", "precision=0", "--markdown", "FOLDER/r.md"], True, True),
            (["--gates", "precision=0", "--weights", '{"answer_relevance": 0.2}'], True, True),
            (["--gates", "precision=0", "--weights", '{"answer_relevance": 0, "context_relevance": 0}'], False, True),
        ]
        for args, computed, card in cases:
            with self.subTest(args=args):
                code, rep, err = self.run_case(*args)
                self.assertIn(code, (0, 1), err)
                self.assertEqual("scorecard" in rep, card)
                if computed:
                    ar = rep["metrics"]["answer_relevance"]
                    self.assertEqual((ar["value"], ar["n"]), (0.75, 2))
                    self.assertIn("context_relevance", rep["metrics"])
                else:
                    self.assertNotIn("answer_relevance", rep["metrics"])
                    self.assertNotIn("context_relevance", rep["metrics"])
                    self.assertNotIn("answer_relevance", rep["categories"]["(none)"]["metrics"])
                if card and not computed:
                    stage = rep["scorecard"]["stages"]["answer_relevance"]
                    self.assertIsNone(stage["score"])
                    self.assertTrue(stage["reason"].startswith("not computed: nothing asked for it"), stage["reason"])
                    self.assertIn("answer_relevance", rep["scorecard"]["not_measured"])
                # the seed's metrics never depend on it
                self.assertEqual(rep["metrics"]["precision"]["value"], 1.0)

    def test_ranks_only_when_asked(self):
        cases = [
            # args, rank measures computed?
            (["--gates", "precision=0"], False),
            (["--gates", "precision=0", "--compute", "scorecard"], False),   # its retrieval stage is recall@5
            (["--gates-file", "FOLDER/g.toml"], False),
            (["--gates", "R@1=0"], True),                  # one of the family asks for them all
            (["--gates", "precision=0", "--compute", "nDCG@1"], True),
            (["--gates", "precision=0", "--compute", "all"], True),
            (["--gates", "precision=0", "--csv", "FOLDER/items.csv"], True),
        ]
        for args, computed in cases:
            with self.subTest(args=args):
                code, rep, err = self.run_case(*args)
                self.assertIn(code, (0, 1), err)
                got = {name: rep["metrics"][name]["value"] for name in self.RANKS if name in rep["metrics"]}
                self.assertEqual(got, self.RANKS if computed else {})
                # the seed's recall@k (at --k and the scorecard's 5) is always there
                self.assertEqual((rep["metrics"]["recall@1"]["value"], rep["metrics"]["recall@5"]["value"]), (0.5, 1.0))

    def test_default_report_is_the_asked_one_without_the_optional_fields(self):
        """Seed 002's command: every value it reports is the one --compute all reports, in the
        same order; what it leaves out is the on-request measures and the scorecard."""
        folder = Path(tempfile.mkdtemp(prefix="score_eval_needs_"))
        self.addCleanup(shutil.rmtree, folder, True)
        _, small, _ = self.run_case("--gates", "precision=0", folder=folder)
        _, full, _ = self.run_case("--gates", "precision=0", "--compute", "all", folder=folder)
        # (the families at --k 1 and at the scorecard's cutoff 5, always among the cutoffs)
        optional = set(self.RANKS) | {n.replace("@1", "@5") for n in self.RANKS} | {"answer_relevance", "context_relevance",
                                                                                    "faithfulness", "unsupported_answer_rate"}
        self.assertEqual(set(full) - set(small), {"scorecard"})
        self.assertEqual(set(full["metrics"]) - set(small["metrics"]), optional)
        for block in (full["metrics"], full["categories"]["(none)"]["metrics"]):
            for name in optional:
                del block[name]
        del full["scorecard"]
        self.assertEqual(json.dumps(full), json.dumps(small))      # the same values in the same order

    def test_unknown_compute_name(self):
        code, rep, err = self.run_case("--gates", "precision=0", "--compute", "answer_relevence")
        self.assertEqual((code, rep), (2, None))
        self.assertIn("unknown metric 'answer_relevence'", err)

    def test_registry_declares_needs(self):
        self.assertEqual({m.name for m in score_eval.REGISTRY if m.needs == "relevance"},
                         {"answer_relevance", "context_relevance"})
        self.assertEqual({m.name for m in score_eval.REGISTRY if m.needs == "ranks"},
                         {"P@K", "R@K", "Success@K", "RR", "RR@K", "nDCG@K"})
        self.assertEqual({m.name for m in score_eval.REGISTRY if m.needs == "grounding"},
                         {"faithfulness", "unsupported_answer_rate"})
        self.assertEqual(set(score_eval.NEEDS), {"relevance", "ranks", "grounding"})

    def test_grounding_by_default_when_asked(self):
        """Issue 41's default grounding is per-row work: seed 002's command (a --gates string, no
        gates file, no per-item output) leaves it out; a gate naming it, --compute, --items or a
        gates file that does not say "strict" computes it."""
        folder = Path(tempfile.mkdtemp(prefix="score_eval_ground_"))
        self.addCleanup(shutil.rmtree, folder, True)
        (folder / "g.toml").write_text("[baseline]\nprecision = { min = 0.0 }\n", encoding="utf-8")
        (folder / "strict.toml").write_text('[scorer]\ngrounding = "strict"\n[baseline]\nprecision = { min = 0.0 }\n',
                                            encoding="utf-8")
        cases = [((("--gates", "precision=0"),), False),
                 ((("--gates", "precision=0,monitor:faithfulness"),), True),
                 ((("--gates", "precision=0", "--compute", "unsupported_answer_rate"),), True),
                 ((("--gates", "precision=0", "--items", str(folder / "i.jsonl")),), True),
                 ((("--gates-file", str(folder / "g.toml")),), True),
                 ((("--gates-file", str(folder / "strict.toml")),), None)]   # asked for, turned off
        # q1's claim is its chunk's sentence (supported); q2's adds a number no chunk holds
        # (unsupported): unsupported_answer_rate 1 / 2 where it is computed.
        trace = [dict(self.TRACE[0], cited_chunks={"c1": "The refund window is 30 days."}),
                 dict(trace_row("q2", "Managers approve 45 exceptions.", ["c2"], ["y", "c2"]),
                      q="Who approves exceptions?", cited_chunks={"c2": "Managers approve exceptions."})]
        for (args,), computed in cases:
            with self.subTest(args=args):
                argv = ["--gold", write_jsonl(folder / "g.jsonl", self.GOLD),
                        "--trace", write_jsonl(folder / "t.jsonl", trace), "--k", "1"] + list(args)
                code, rep, err = run_cli(argv, cwd=folder)
                self.assertIn(code, (0, 1), err)
                entry = rep["metrics"].get("unsupported_answer_rate")
                if computed is False:
                    self.assertIsNone(entry)
                elif computed is None:
                    self.assertIn("not computed", entry["reason"])
                else:
                    self.assertEqual((entry["value"], entry["count"], entry["n"]), (0.5, 1, 2))


class RetrievalByHand(unittest.TestCase):
    """QA mode's per-item retrieval values (items file) on rankings chosen for the edges: a
    repeated id counts once at its best rank, a relevant document at rank K + 1 is outside the
    top K, scores reorder the trace (ties: id descending)."""
    L2, L3 = 1 / math.log2(3), 1 / math.log2(4)    # discounts of ranks 2 and 3
    CASES = [
        # qid, gold citations, retrieved ids, scores or None, {measure: value at K = 1 and K = 3}
        ("first", ["a"], ["a", "x", "y"], None,
         {"RR": 1.0, "P@1": 1.0, "R@1": 1.0, "nDCG@1": 1.0, "RR@1": 1.0, "Success@1": 1,
          "P@3": round(1 / 3, 4), "R@3": 1.0, "nDCG@3": 1.0, "RR@3": 1.0, "Success@3": 1}),
        # rank 2 = K + 1 for K = 1: nothing in the top 1
        ("second", ["a"], ["x", "a", "y"], None,
         {"RR": 0.5, "P@1": 0.0, "R@1": 0.0, "nDCG@1": 0.0, "RR@1": 0.0, "Success@1": 0,
          "P@3": round(1 / 3, 4), "R@3": 1.0, "nDCG@3": round(L2, 4), "RR@3": 0.5, "Success@3": 1}),
        # "a" repeated: once, at rank 2; the top 3 after de-duplication is x, a, y
        ("repeated", ["a"], ["x", "a", "a", "y"], None,
         {"RR": 0.5, "P@1": 0.0, "R@1": 0.0, "nDCG@1": 0.0, "RR@1": 0.0, "Success@1": 0,
          "P@3": round(1 / 3, 4), "R@3": 1.0, "nDCG@3": round(L2, 4), "RR@3": 0.5, "Success@3": 1}),
        # two gold ids at ranks 1 and 3: ideal DCG@3 = 1 + L2
        ("two", ["a", "b"], ["a", "x", "b"], None,
         {"RR": 1.0, "P@1": 1.0, "R@1": 0.5, "nDCG@1": 1.0, "RR@1": 1.0, "Success@1": 1,
          "P@3": round(2 / 3, 4), "R@3": 1.0, "nDCG@3": round((1 + L3) / (1 + L2), 4), "RR@3": 1.0, "Success@3": 1}),
        # scores put b first (0.9), then the tie at 0.5 by id descending: y, a
        ("scored", ["a"], ["a", "b", "y"], [0.5, 0.9, 0.5],
         {"RR": round(1 / 3, 4), "P@1": 0.0, "R@1": 0.0, "nDCG@1": 0.0, "RR@1": 0.0, "Success@1": 0,
          "P@3": round(1 / 3, 4), "R@3": 1.0, "nDCG@3": round(L3, 4), "RR@3": round(1 / 3, 4), "Success@3": 1}),
        # nothing relevant retrieved
        ("none", ["a"], ["x", "y", "z"], None,
         {"RR": 0.0, "P@1": 0.0, "R@1": 0.0, "nDCG@1": 0.0, "RR@1": 0.0, "Success@1": 0,
          "P@3": 0.0, "R@3": 0.0, "nDCG@3": 0.0, "RR@3": 0.0, "Success@3": 0}),
    ]

    def test_per_item_values(self):
        folder = Path(tempfile.mkdtemp(prefix="score_eval_rbh_"))
        self.addCleanup(shutil.rmtree, folder, True)
        gold = [gold_row(q, cits=c) for q, c, _, _, _ in self.CASES]
        trace = []
        for q, _, ret, scores, _ in self.CASES:
            row = trace_row(q, "not in context", retrieved=ret)
            if scores is not None:
                row["retrieved_scores"] = scores
            trace.append(row)
        items = folder / "items.jsonl"
        code, rep, err = run_cli(["--gold", write_jsonl(folder / "g.jsonl", gold), "--trace",
                                  write_jsonl(folder / "t.jsonl", trace), "--k", "1,3", "--gates", "P@1=0",
                                  "--items", items], cwd=folder)
        self.assertEqual(code, 0, err)
        got = {r["qid"]: r["retrieval"] for r in map(json.loads, items.read_text().splitlines())}
        for q, _, _, _, want in self.CASES:
            with self.subTest(qid=q):    # the scorecard's cutoff (SCORECARD_K = 5) is computed too
                self.assertEqual({m: v for m, v in got[q].items() if not m.endswith("@5")}, want)
        # the report's means are the items' means (6 items with gold citations; the items' values are rounded)
        for name in ("P@3", "R@1", "nDCG@3", "RR", "RR@1"):
            with self.subTest(mean=name):
                self.assertAlmostEqual(rep["metrics"][name]["value"],
                                       sum(w[name] for *_, w in self.CASES) / 6, delta=2e-4)   # items rounded
        self.assertEqual((rep["metrics"]["Success@1"]["count"], rep["metrics"]["Success@1"]["n"]), (2, 6))


class FallbackEdges(unittest.TestCase):
    """fallback_used_*: measured over the rows that carry the field, even when that is one row;
    not measured (value null, n 0, a reason) when none does (two mutants of aggregate survived)."""

    def report(self, trace):
        folder = Path(tempfile.mkdtemp(prefix="score_eval_fb_"))
        self.addCleanup(shutil.rmtree, folder, True)
        gold = [gold_row("a", True, ["alpha"], ["c"]), gold_row("b", True, ["alpha"], ["c"])]
        code, rep, err = run_cli(["--gold", write_jsonl(folder / "g.jsonl", gold), "--trace",
                                  write_jsonl(folder / "t.jsonl", trace), "--gates", "precision=0"], cwd=folder)
        self.assertEqual(code, 0, err)
        return rep["metrics"]

    def test_one_row_carries_it(self):
        m = self.report([trace_row("a", "alpha", ["c"], ["c"], fallback_used=True), trace_row("b", "alpha", ["c"], ["c"])])
        for name in ("fallback_used_rate", "fallback_used_rate_answerable"):
            with self.subTest(metric=name):
                self.assertEqual((m[name]["value"], m[name]["count"], m[name]["n"], m[name]["reason"]), (1.0, 1, 1, None))
        self.assertEqual((m["fallback_used_count"]["value"], m["fallback_used_count"]["n"]), (1, 1))

    def test_no_row_carries_it(self):
        m = self.report([trace_row("a", "alpha", ["c"], ["c"]), trace_row("b", "alpha", ["c"], ["c"])])
        for name in ("fallback_used_count", "fallback_used_rate", "fallback_used_rate_answerable"):
            with self.subTest(metric=name):
                self.assertEqual((m[name]["value"], m[name]["n"]), (None, 0))
                self.assertTrue(m[name]["reason"].startswith("not measured: no"), m[name]["reason"])
        self.assertEqual(m["fallback_used_rate"]["reason"], "not measured: no trace row carries fallback_used")
        self.assertEqual(m["fallback_used_rate_answerable"]["reason"],
                         "not measured: no answerable item's trace carries fallback_used")

    def test_unmeasured_extras_count_nothing(self):
        # no timings, cost, required behaviours, required documents or question: each of these is
        # not measured, over n = 0 items (and a count of 0 for the rates)
        m = self.report([dict(trace_row("a", "alpha", ["c"], ["c"]), q=None), trace_row("b", "alpha", ["c"], ["c"])])
        for name in ("latency_p50", "latency_p95", "cost_per_item", "citation_coverage", "conflict_correct_rate",
                     "staleness_correct_rate", "clarify_correct_rate"):
            with self.subTest(metric=name):
                self.assertEqual((m[name]["value"], m[name]["n"], m[name]["ci"]), (None, 0, None))
                self.assertTrue(m[name]["reason"].startswith("not measured: no"), m[name]["reason"])
        for name in ("citation_coverage", "conflict_correct_rate"):
            self.assertEqual(m[name]["count"], 0)


class EdgeCounts(unittest.TestCase):
    """Edges where a count is 0 or 1: what a report says then, by hand."""

    def folder(self):
        folder = Path(tempfile.mkdtemp(prefix="score_eval_edges_"))
        self.addCleanup(shutil.rmtree, folder, True)
        return folder

    def test_one_item_with_gold_citations_is_measured(self):
        # two items, only q0 has a gold citation (a, retrieved at rank 2): R@2 = 1 over n = 1
        folder = self.folder()
        gold = [gold_row("q0", cits=["a"]), gold_row("q1", cits=[], answerable=False)]
        trace = [trace_row("q0", "not in context", retrieved=["x", "a"]),
                 trace_row("q1", "not in context", retrieved=["y"])]
        code, rep, err = run_cli(["--gold", write_jsonl(folder / "g.jsonl", gold),
                                  "--trace", write_jsonl(folder / "t.jsonl", trace),
                                  "--k", "2", "--gates", "none", "--compute", "all"], cwd=folder)
        self.assertEqual(code, 0, err)
        self.assertEqual((rep["metrics"]["R@2"]["value"], rep["metrics"]["R@2"]["n"]), (1.0, 1))
        self.assertEqual(rep["metrics"]["RR"]["value"], 0.5)
        # relevance is computed (--compute all) but without --chunks nothing has the chunks'
        # texts: context relevance is not measured, over n = 0
        entry = rep["metrics"]["context_relevance"]
        self.assertEqual((entry["value"], entry["n"], entry["reason"][:13]), (None, 0, "not measured:"))
        # no item with gold citations: not measured, over n = 0
        code, rep, err = run_cli(["--gold", write_jsonl(folder / "g0.jsonl", gold[1:]),
                                  "--trace", write_jsonl(folder / "t0.jsonl", trace[1:]),
                                  "--k", "2", "--gates", "none", "--compute", "all"], cwd=folder)
        self.assertEqual(code, 0, err)
        entry = rep["metrics"]["R@2"]
        self.assertEqual((entry["value"], entry["n"], entry["reason"]),
                         (None, 0, "not measured: no item has gold citations"))

    def test_trec_intervals_and_no_shared_topic(self):
        folder = self.folder()
        (folder / "q").write_text("t1 0 a 1\nt1 0 b 0\nt2 0 c 1\n")
        # t1: a at rank 1 (AP 1); t2: c at rank 2 (AP 1/2): map 0.75, sample variance 0.125
        (folder / "r").write_text("t1 Q0 a 1 2.0 x\nt1 Q0 b 2 1.0 x\nt2 Q0 z 1 2.0 x\nt2 Q0 c 2 1.0 x\n")
        code, rep, err = run_cli(["--qrels", str(folder / "q"), "--run", str(folder / "r"), "--gates", "none",
                                  "-m", "map", "-m", "gm_map", "-m", "num_ret"], cwd=folder)
        self.assertEqual(code, 0, err)
        m = rep["metrics"]
        self.assertEqual(m["map"]["value"], 0.75)
        half = Z * math.sqrt(0.125 / 2)
        self.assertEqual(m["map"]["ci"], [round(0.75 - half, 4), round(min(1.0, 0.75 + half), 4)])
        self.assertIsNone(m["gm_map"]["ci"])     # a geometric mean and a count carry no interval
        self.assertIsNone(m["num_ret"]["ci"])
        # --average judged with a run that shares no topic with the qrels: no topic, every "all" 0
        (folder / "r2").write_text("t9 Q0 a 1 2.0 x\n")
        errors = score_eval._Errors(5)
        gold = score_eval.read_qrels(str(folder / "q"), errors)
        run = score_eval.read_run(str(folder / "r2"), errors)
        per, total = score_eval.trec_evaluate(gold, run, ["map", "gm_map", "num_ret"], average="judged")
        self.assertEqual((per, total), ({}, {"map": 0.0, "gm_map": 0.0, "num_ret": 0.0}))
