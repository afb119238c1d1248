"""TREC mode prints trec_eval 10.0's whole ``-m all_trec`` (issue 42 item 6).

* Every expected output of trec_eval's own test suite (tests/data/trec_eval_test, the
  Makefile's ``quicktest`` command lines, run here with trec_eval's own spelling of the
  options: ``-mrelstring.20``, ``-l2``, ``-M100``, ``-c``) equals our stdout byte for byte.
* Each measure added for all_trec, on one small topic, against values derived by hand in the
  comments (trec_eval's definitions, its m_<name>.c).
* The -m parameters (names printed as trec_eval prints them, bad ones refused) and the
  options -c, -l, -M, runid.
"""
import contextlib
import io
import json
import math
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import score_eval  # noqa: E402

DATA = ROOT / "tests" / "data" / "trec_eval_test"    # vendored with its licence note (SOURCE.md)
Q, QL, RT, RTR = (str(DATA / n) for n in ("qrels.test", "qrels.rel_level", "results.test", "results.trunc"))


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = score_eval.main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


class TrecEvalQuicktest(unittest.TestCase):
    # (expected output, trec_eval's options as in its Makefile's quicktest, qrels, run)
    CASES = (
        ("out.test", [], Q, RT),
        ("out.test.a", ["-m", "all_trec"], Q, RT),
        ("out.test.aq", ["-m", "all_trec", "-q"], Q, RT),
        ("out.test.aqc", ["-m", "all_trec", "-q", "-c"], Q, RTR),
        ("out.test.aqcM", ["-m", "all_trec", "-q", "-c", "-M100"], Q, RTR),
        ("out.test.aql", ["-m", "all_trec", "-mrelstring.20", "-q", "-l2"], QL, RT),
        ("out.test.meas_params", ["-q", "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m",
                                  "recall.20,2000", "-m", "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-m",
                                  "11pt_avg..25,.5,.75", "-mndcg.1=3,2=9,4=4.5", "-mndcg_cut.10,20,23.4",
                                  "-msuccess.2,5,20"], Q, RT),
    )

    def test_every_expected_output_line_for_line(self):
        for expected, options, qrels, results in self.CASES:
            with self.subTest(expected=expected):
                code, out, err = run(["--qrels", qrels, "--run", results, "--format", "trec", "--gates", "none"]
                                     + options)
                self.assertEqual(code, 0, err)
                want = (DATA / expected).read_text()
                self.assertEqual(out.splitlines(), want.splitlines())
                self.assertEqual(out, want)

    def test_all_trec_has_trec_eval_99_lines(self):
        code, out, _ = run(["--qrels", Q, "--run", RT, "--format", "trec", "--gates", "none", "-m", "all_trec"])
        self.assertEqual((code, len(out.splitlines())), (0, 99))
        names = [line.split("\t")[0].strip() for line in out.splitlines()]
        self.assertEqual(names[:2], ["runid", "num_q"])
        for added in ("infAP", "gm_bpref", "Rprec_mult_0.20", "utility", "11pt_avg", "binG", "G", "ndcg_rel",
                      "Rndcg", "map_cut_5", "relative_P_5", "set_P", "set_relative_P", "set_recall", "set_map",
                      "set_F", "num_nonrel_judged_ret", "rbp", "rbp_resid", "unj_5", "unj_10", "unj_20"):
            self.assertIn(added, names)


def topic(names, rel_level=1):
    # levels: a 1, b 0, c 2, d -1 (in the pool, unjudged), e 0, f 1, g 3; x is not in the qrels.
    # Ranking a x b c d e: values a 1, x NONPOOL, b 0, c 2, d UNJUDGED, e 0.  At -l1: R = 4
    # (a, c, f, g), 2 of them retrieved (a at rank 1, c at rank 4), 6 retrieved.
    judged = {"a": 1, "b": 0, "c": 2, "d": -1, "e": 0, "f": 1, "g": 3}
    return score_eval.trec_query(["a", "x", "b", "c", "d", "e"], judged, names, rel_level=rel_level)


L = math.log2
DCG = 1 + 2 / L(5)                           # a (gain 1) at rank 1, c (gain 2) at rank 4
IDCG = 3 + 2 / L(3) + 1 / L(4) + 1 / L(5)    # ideal gains 3, 2, 1, 1


class MeasuresByHand(unittest.TestCase):
    TABLE = (
        # infAP: a at j 0 adds 1; c at j 3 (b judged non-relevant above, x outside the pool
        # counts only as a rank): 1/4 + 3/4 * (2/3) * ((1 + e) / (2 + 2e)) = 1/2; / R 4
        ("infAP", 1.5 / 4),
        ("gm_bpref", (1 + (1 - 1 / 2)) / 4),          # per topic: bpref, N = 2 (b, e)
        # Rprec_mult M: int(M * 4 + 0.9) documents: 0.2 -> 1 (a), 0.5 -> 2 (a, x), 2.0 -> 8 (6 retrieved)
        ("Rprec_mult_0.20", 1.0), ("Rprec_mult_0.50", 1 / 2), ("Rprec_mult_2.00", 2 / 8),
        ("utility", 2 - 4),                          # 1 * relevant retrieved - 1 * non-relevant retrieved
        ("utility_2,-1,3,0", 2 * 2 - 4 + 3 * (4 - 2)),
        # 11pt_avg: lround(L * 4) = 0 0 1 1 2 2 2 3 3 4 4 relevant; best precision from rank 1: 1,
        # from rank 4: 2/4; 3 and 4 relevant are never reached: 0
        ("11pt_avg", (4 * 1 + 3 * 0.5) / 11),
        ("11pt_avg_.25,.5,.75", (1 + 0.5 + 0) / 3),  # lround(1.0) 1, lround(2.0) 2, lround(3.0) 3
        ("binG", (1 / L(2) + 1 / L(4)) / 4),         # 0 then 2 non-relevant above a, c
        # G: cost so far 3 at a (gain 1), 7 at c (gain 3 so far): 1/log2(4) + 2/log2(6); / ideal total 7
        ("G", (1 / L(4) + 2 / L(6)) / 7),
        ("ndcg", DCG / IDCG),
        ("ndcg_1=3,2=9,4=4.5", (3 + 9 / L(5)) / (9 + 3 / L(3) + 3 / L(4) + 3 / L(5))),   # gains 0 3 9 3
        # ndcg_rel: nDCG at a (ideal so far 3), at c (whole ideal), and twice at the end (f, g missed)
        ("ndcg_rel", (1 / 3 + 3 * DCG / IDCG) / 4),
        # Rndcg: nDCG where the ideal gain changes (after ranks 1, 2, 4) and at the end (rank 6)
        ("Rndcg", (1 / 3 + 1 / (3 + 2 / L(3)) + 2 * DCG / IDCG) / 4),
        ("map_cut_2", 1 / 4), ("map_cut_4", (1 + 2 / 4) / 4),
        ("relative_P_1", 1.0), ("relative_P_2", 1 / 2), ("relative_P_6", 2 / 4),
        ("set_P", 2 / 6), ("set_relative_P", 2 / 4), ("set_recall", 2 / 4), ("set_map", 2 * 2 / (6 * 4)),
        ("set_F", 2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2)), ("set_F_2", 3 * (1 / 3) * (1 / 2) / (2 / 3 + 1 / 2)),
        ("num_nonrel_judged_ret", 2.0),              # b, e
        # rbp: levels 0..3 scaled to 0..1 (3 > 1): a 1/3 at rank 1, c 2/3 at rank 4
        ("rbp", 0.1 * (1 / 3 + 2 / 3 * 0.9 ** 3)), ("rbp_p=0.5", 0.5 * (1 / 3 + 2 / 3 * 0.5 ** 3)),
        # rbp_resid: 0.9^6 + 0.1 * (x at rank 2 + d at rank 5)
        ("rbp_resid", 0.9 ** 6 + 0.1 * (0.9 + 0.9 ** 4)),
        ("unj_1", 0.0), ("unj_5", 2 / 5), ("unj_10", 2 / 10),
        ("relstring", "1-02.0"), ("relstring_3", "1-0"),
    )

    def test_each_measure(self):
        names = [n for n, _ in self.TABLE]
        got = topic(names)
        for name, want in self.TABLE:
            with self.subTest(measure=name):
                if isinstance(want, str):
                    self.assertEqual(got[name], want)
                else:
                    self.assertAlmostEqual(got[name], want, places=12)

    def test_relevance_level_2(self):
        # -l2: relevant c, g (R 2); a becomes judged non-relevant; nDCG's gains stay the levels
        names = ["num_rel", "num_rel_ret", "map", "P_4", "bpref", "binG", "ndcg", "ndcg_cut_4", "set_recall",
                 "num_nonrel_judged_ret", "infAP"]
        got = topic(names, rel_level=2)
        want = {"num_rel": 2.0, "num_rel_ret": 1.0, "map": (1 / 4) / 2, "P_4": 1 / 4,
                "bpref": (1 - 2 / 2) / 2,            # a and b ranked above c; min(2, R) / min(N 4, R 2)
                "binG": (1 / L(3 + 3 - 1)) / 2,      # 3 non-relevant above c
                "ndcg": DCG / IDCG, "ndcg_cut_4": DCG / IDCG, "set_recall": 1 / 2,
                "num_nonrel_judged_ret": 3.0,        # a, b, e
                # c at j 3: 1/4 + 3/4 * (2/3) * ((0 + e) / (2 + 2e)), / R 2
                "infAP": (0.25 + 0.75 * (2 / 3) * (0.00001 / (2 + 0.00002))) / 2}
        for name, value in want.items():
            with self.subTest(measure=name):
                self.assertAlmostEqual(got[name], value, places=12)

    def test_topic_the_run_forgot(self):
        """-c (--average all): a qrels topic the run lacks scores 0 everywhere, utility with any
        parameters too (trec_eval's rule), and relstring is empty; num_rel still counts."""
        errors = score_eval._Errors(5)
        folder = Path(tempfile.mkdtemp(prefix="trec_all_"))
        self.addCleanup(shutil.rmtree, folder, True)
        (folder / "q").write_text("t1 0 a 1\nt1 0 b 0\nt2 0 c 1\nt2 0 d 1\n")
        (folder / "r").write_text("t1 Q0 a 1 2.0 runA\nt1 Q0 b 2 1.0 runB\n")
        gold = score_eval.read_qrels(str(folder / "q"), errors)
        results = score_eval.read_run(str(folder / "r"), errors)
        names = score_eval.parse_trec_measures(["all_trec", "utility.1,-1,-5,0"])
        per, total = score_eval.trec_evaluate(gold, results, names)
        numbers = {k: v for k, v in per["t2"].items() if k != "num_rel" and not isinstance(v, str)}
        self.assertEqual(set(numbers.values()), {0.0})
        self.assertEqual((per["t2"]["num_rel"], per["t2"]["relstring"]), (2.0, ""))
        self.assertEqual(per["t1"]["utility_1,-1,-5,0"], 1 - 1 - 5 * 0)
        self.assertEqual((total["runid"], total["num_q"]), ("runB", 2))      # the last line's tag
        per, total = score_eval.trec_evaluate(gold, results, names, average="judged")
        self.assertEqual((list(per), total["num_q"]), (["t1"], 1))


class MeasureNames(unittest.TestCase):
    def test_specs_to_names(self):
        cases = (
            (["official"], list(score_eval.TREC_DEFAULT[:10]) + ["iprec_at_recall_%.2f" % (i / 10) for i in range(11)]
             + ["P_%d" % k for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]),
            (["set"], ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_relative_P",
                       "set_recall", "set_map", "set_F"]),
            (["unj"], ["unj_5", "unj_10", "unj_20"]),
            (["Rprec_mult.5.0,0.2,0.35"], ["Rprec_mult_0.20", "Rprec_mult_0.35", "Rprec_mult_5.00"]),
            (["ndcg_cut.10,20,23.4"], ["ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23"]),     # trec_eval drops .4
            (["P", "P.5"], ["P_5"]),                           # parameters replace the defaults
            (["P.10", "P.5"], ["P_5", "P_10"]),                # several -m add up
            (["utility.2,-1,0,0", "11pt_avg..25,.5"], ["utility_2,-1,0,0", "11pt_avg_.25,.5"]),
            (["rbp.p=0.95", "G.1=2"], ["G_1=2", "rbp_p=0.95"]),
            (["relstring.20", "all_trec"], None),
            (["map_cut_5", "relative_P.5"], ["map_cut_5", "relative_P_5"]),
        )
        for specs, want in cases:
            with self.subTest(specs=specs):
                got = score_eval.parse_trec_measures(specs)
                if want is None:
                    self.assertIn("relstring_20", got)
                    self.assertNotIn("relstring", got)
                else:
                    self.assertEqual(got, want)

    def test_bad_parameters(self):
        cases = (
            ("utility.1,2", "unknown trec_eval measure 'utility.1,2' (utility takes numbers: 1,-1,0,0)"),
            ("11pt_avg.1.5", "unknown trec_eval measure '11pt_avg.1.5'"),
            ("ndcg.x=1", "(ndcg takes level=gain pairs, e.g. ndcg.1=1,2=3)"),
            ("ndcg.1=2,1=3", "unknown trec_eval measure 'ndcg.1=2,1=3'"),
            ("rbp.p=nan", "unknown trec_eval measure 'rbp.p=nan'"),
            ("map_cut.0", "(map_cut takes integer cutoffs, e.g. map_cut.5,10)"),
            ("set_P.2", "(set_P takes no parameters)"),
            ("Rprec_mult.-1", "(Rprec_mult takes decimal cutoffs, e.g. Rprec_mult.0.2,0.5)"),
            ("infap", "did you mean 'infAP'?"),
        )
        for spec, message in cases:
            with self.subTest(spec=spec):
                with self.assertRaises(score_eval.ScoreError) as cm:
                    score_eval.parse_trec_measures([spec])
                self.assertIn(message, str(cm.exception))
        with self.assertRaises(score_eval.ScoreError) as cm:
            score_eval.parse_trec_measures(["utility.1,-1,0,0", "utility.2,-1,0,0"])
        self.assertIn("utility is given two sets of parameters", str(cm.exception))

    def test_measures_flag_keeps_parameters_together(self):
        self.assertEqual(score_eval._measure_specs(None, "map,utility.2,-1,0,0,ndcg.1=3,2=9,P.5,10,11pt_avg..2,.5"),
                         ["map", "utility.2,-1,0,0", "ndcg.1=3,2=9", "P.5,10", "11pt_avg..2,.5"])

    def test_gates_on_added_measures(self):
        for name, key, better in (("utility", "utility", "higher"), ("unj.10", "unj_10", "lower"),
                                  ("Rprec_mult.0.5", "Rprec_mult_0.50", "higher"), ("rbp_resid", "rbp_resid", "lower")):
            with self.subTest(name=name):
                ref = score_eval.trec_ref(name)
                self.assertEqual((ref.metric.name, ref.metric.better), (key, better))
        for name in ("runid", "num_q", "relstring", "unj"):
            with self.subTest(name=name):
                self.assertIsNone(score_eval.trec_ref(name))


class Options(unittest.TestCase):
    def test_c_is_the_default_and_contradicts_judged(self):
        base = ["--qrels", Q, "--run", RTR, "--format", "trec", "--gates", "none", "-m", "map"]
        self.assertEqual(run(base)[:2], run(base + ["-c"])[:2])
        code, out, err = run(base + ["-c", "--average", "judged"])
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err.strip(), "usage: -c (average over every qrels topic) contradicts --average judged")

    def test_trec_flags_need_trec_mode(self):
        for flags in (["-c"], ["-l", "2"], ["-M", "10"]):
            with self.subTest(flags=flags):
                code, _, err = run(["--trace", str(ROOT / "examples" / "seed" / "trace.jsonl"), "--gates", "none"]
                                   + flags)
                self.assertEqual(code, 2)
                self.assertIn("-c, -l, -M and --average need --qrels and --run", err)
        for flags, message in ((["-l", "0"], "-l: must be an integer from 1, got 0"),
                               (["-M", "-3"], "-M: must be an integer from 1, got -3")):
            with self.subTest(flags=flags):
                code, _, err = run(["--qrels", Q, "--run", RT, "--gates", "none"] + flags)
                self.assertEqual((code, err.strip()), (2, message))

    def test_json_report_keeps_values_only(self):
        code, out, err = run(["--qrels", Q, "--run", RT, "--gates", "none", "-m", "all_trec"])
        self.assertEqual(code, 0, err)
        metrics = json.loads(out)["metrics"]
        for name in ("runid", "num_q", "relstring"):
            self.assertNotIn(name, metrics)
        # trec_eval's all values (out.test.a), rounded as the report rounds
        self.assertEqual(metrics["utility"]["value"], -412.6667)
        self.assertEqual(metrics["infAP"]["value"], 0.1785)
        self.assertEqual(metrics["unj_20"]["value"], 0.0333)
        self.assertEqual(metrics["set_F"]["value"], 0.1194)
        lo, hi = metrics["utility"]["ci"]
        self.assertTrue(lo < -412.6667 < hi < 0)             # not clipped to [0, 1]


if __name__ == "__main__":
    unittest.main()
