"""IR mode under trec_eval's names (issue 19 item 5): -m / --measures, --format trec, -q,
IR-only gates.

Golden values: every line of trec_eval's own expected outputs (tests/data/trec_eval_test:
out.test, out.test.a, out.test.aq, out.test.aqc, out.test.meas_params), measure by measure
(-m NAME), is compared as trec_eval prints it, per topic and "all".
An independent implementation: pytrec_eval on random runs (skips when not importable).
"""
import os
import random
import re
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import score_eval  # noqa: E402
from tests.test_score_eval import run_cli  # noqa: E402

DATA = ROOT / "tests" / "data" / "trec_eval_test"    # vendored with its licence note (SOURCE.md)
FAMILIES = [m.name for m in score_eval.TREC_MEASURES]


def ours(name):
    """trec_eval's output name -> the -m spec that asks for it (None when not implemented)."""
    if name in FAMILIES:
        return name
    head, _, tail = name.rpartition("_")
    if head in FAMILIES and (tail.isdigit() or re.fullmatch(r"[01]\.\d\d", tail)):
        return "%s.%s" % (head, tail)
    return None


def parse_trec(text):
    """{(measure, qid): value string} from trec_eval-style output."""
    out = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3:
            out[(parts[0].strip(), parts[1])] = parts[2]
    return out


def tmpdir(test):
    d = Path(tempfile.mkdtemp(prefix="score_eval_trecnames_"))
    test.addCleanup(shutil.rmtree, d, True)
    return d


class TrecEvalOutputs(unittest.TestCase):
    CASES = (  # (run file, expected output, per query)
        ("results.test", "out.test", False),
        ("results.test", "out.test.a", False),
        ("results.test", "out.test.aq", True),
        ("results.trunc", "out.test.aqc", True),      # topic 302 missing: scores 0 (-c)
        ("results.test", "out.test.meas_params", True),
    )

    def test_every_implemented_value_equals_trec_eval(self):
        for run, expected, per_query in self.CASES:
            want = {k: v for k, v in parse_trec((DATA / expected).read_text()).items() if ours(k[0])}
            specs = sorted({ours(m) for m, _ in want})
            self.assertGreaterEqual(len(specs), 5, expected)
            argv = ["--qrels", DATA / "qrels.test", "--run", DATA / run, "--format", "trec",
                    "--gates", "none"] + [a for s in specs for a in ("-m", s)] + (["-q"] if per_query else [])
            import io
            import contextlib
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = score_eval.main([str(a) for a in argv])
            self.assertEqual(code, 0, err.getvalue())
            got = parse_trec(out.getvalue())
            for key, value in sorted(want.items()):
                with self.subTest(file=expected, measure=key[0], topic=key[1]):
                    self.assertIn(key, got)
                    self.assertEqual(got[key], value)       # trec_eval's text: runid, relstring, values

    def test_acceptance_command_prints_trec_eval_lines(self):
        """--format trec -m map -m ndcg_cut.10 -m P.5 -m bpref -m Rprec: trec_eval's lines, verbatim."""
        import io
        import contextlib
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = score_eval.main(["--qrels", str(DATA / "qrels.test"), "--run", str(DATA / "results.test"),
                                    "--format", "trec", "-m", "map", "-m", "ndcg_cut.10", "-m", "P.5",
                                    "-m", "bpref", "-m", "Rprec"])
        self.assertEqual(code, 0)
        golden = {line.split("\t")[0].strip(): line for line in (DATA / "out.test.a").read_text().splitlines()}
        self.assertEqual(out.getvalue().splitlines(),          # trec_eval's line order, not -m's
                         [golden[m] for m in ("map", "Rprec", "bpref", "P_5", "ndcg_cut_10")])

    def test_ir_gates_only(self):
        """No [ir] table: no gates, exit 0; an [ir] gate on map decides; a QA gate is an input error."""
        d = tmpdir(self)
        qrels, run = DATA / "qrels.test", DATA / "results.test"
        (d / "gates.toml").write_text("[baseline]\nprecision = { min = 0.99 }\n")
        code, rep, err = run_cli(["--qrels", qrels, "--run", run], cwd=d)
        self.assertEqual(code, 0, err)
        self.assertEqual(rep["gate_results"], [])
        self.assertAlmostEqual(rep["metrics"]["map"]["value"], 0.1785, places=4)
        self.assertIn("no [ir] table: no gates apply", err)
        self.assertIn("using the gates file gates.toml found in the current folder", err)
        (d / "gates.toml").write_text('[ir]\nmap = { min = 0.2 }\n"ndcg_cut.10" = { min = 0.3 }\n')
        code, rep, err = run_cli(["--qrels", qrels, "--run", run], cwd=d)
        self.assertEqual(code, 1)
        self.assertEqual([(g["metric"], g["pass"]) for g in rep["gate_results"]],
                         [("map", False), ("ndcg_cut_10", True)])
        code, rep, err = run_cli(["--qrels", qrels, "--run", run, "--gates", "map=0.17,P_5>=0.26"], cwd=d)
        self.assertEqual(code, 0, err)
        code, rep, err = run_cli(["--qrels", qrels, "--run", run, "--gates", "precision=0.8"], cwd=d)
        self.assertEqual(code, 2)
        self.assertIn("gate 'precision' needs answers", err)


class TrecNamesNoData(unittest.TestCase):
    """Hand-derived values and usage errors (no external data needed)."""

    def test_one_topic_by_hand(self):
        # ranking a(non-rel) b(rel, level 1) c(unjudged); d (level 2) never retrieved: R = 2, N = 1
        v = score_eval.trec_query(["a", "b", "c"], {"a": 0, "b": 1, "d": 2},
                                  ["map", "Rprec", "bpref", "recip_rank", "P_2", "recall_3", "success_1",
                                   "ndcg_cut_3", "num_ret", "num_rel", "num_rel_ret"])
        import math
        want = {"map": (1 / 2) / 2, "Rprec": 1 / 2, "bpref": (1 - 1 / 1) / 2, "recip_rank": 1 / 2,
                "P_2": 1 / 2, "recall_3": 1 / 2, "success_1": 0.0,
                "ndcg_cut_3": (1 / math.log2(3)) / (2 / math.log2(2) + 1 / math.log2(3)),
                "num_ret": 3, "num_rel": 2, "num_rel_ret": 1}
        for name, value in want.items():
            with self.subTest(measure=name):
                self.assertAlmostEqual(v[name], value, places=12)

    def test_iprec_and_ndcg_by_hand(self):
        # a(rel) b(non) c(rel) d(non) e(rel); R = 4 (f never retrieved), levels: a 1, c 2, e 1, f 1
        v = score_eval.trec_query(["a", "b", "c", "d", "e"], {"a": 1, "b": 0, "c": 2, "d": 0, "e": 1, "f": 1},
                                  ["iprec_at_recall_0.00", "iprec_at_recall_0.50", "iprec_at_recall_0.60",
                                   "iprec_at_recall_1.00", "ndcg", "gm_map"])
        import math
        # precision at the relevant ones: 1/1, 2/3, 3/5; level L needs floor(4L + 0.5) relevant: 0, 2, 2, 4
        self.assertEqual((v["iprec_at_recall_0.00"], v["iprec_at_recall_0.50"], v["iprec_at_recall_0.60"],
                          v["iprec_at_recall_1.00"]), (1.0, 2 / 3, 2 / 3, 0.0))
        dcg = 1 / math.log2(2) + 2 / math.log2(4) + 1 / math.log2(6)
        idcg = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4) + 1 / math.log2(5)
        self.assertAlmostEqual(v["ndcg"], dcg / idcg, places=12)
        self.assertAlmostEqual(v["gm_map"], (1 + 2 / 3 + 3 / 5) / 4, places=12)

    def test_average_judged_is_plain_trec_eval(self):
        """results.trunc lacks topic 302: -c (all) averages 3 topics (trec_eval's out.test.aqc),
        judged averages 301 and 303 only, from trec_eval's own per-topic values."""
        per = parse_trec((DATA / "out.test.aqc").read_text())
        argv = ["--qrels", DATA / "qrels.test", "--run", DATA / "results.trunc", "--format", "trec", "--gates", "none",
                "-m", "map", "-m", "P.10", "-m", "gm_map"]
        import io
        import contextlib
        for average, topics in (("all", ("301", "302", "303")), ("judged", ("301", "303"))):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(score_eval.main([str(a) for a in argv] + ["--average", average]), 0)
            got = parse_trec(out.getvalue())
            with self.subTest(average=average):
                for m in ("map", "P_10"):
                    want = sum(float(per[(m, t)]) for t in topics) / len(topics)
                    self.assertAlmostEqual(float(got[(m, "all")]), want, delta=0.00015)
                import math
                gm = math.exp(sum(math.log(max(float(per[("map", t)]), 1e-5)) for t in topics) / len(topics))
                self.assertAlmostEqual(float(got[("gm_map", "all")]), gm, delta=0.0002 * max(1, gm * 10))
        self.assertEqual(per[("gm_map", "all")], "0.0045")            # -c: the missing topic floors it

    def test_measure_specs(self):
        cases = (
            (["map", "P.5,10"], None, ["map", "P_5", "P_10"]),
            (None, "map,ndcg_cut.10,P.5,10", ["map", "P_5", "P_10", "ndcg_cut_10"]),   # trec_eval's order
            (["success"], None, ["success_1", "success_5", "success_10"]),
            (["ndcg", "P.10,5", "gm_map"], None, ["gm_map", "P_5", "P_10", "ndcg"]),
            (["iprec_at_recall..10,.5"], None, ["iprec_at_recall_0.10", "iprec_at_recall_0.50"]),
            (["all_trec"], None, [n for m in score_eval.TREC_MEASURES
                                  for n in ([score_eval.trec_name(m, c) for c in m.cutoffs] or [m.name])]),
        )
        for m, measures, want in cases:
            with self.subTest(m=m, measures=measures):
                self.assertEqual(score_eval.parse_trec_measures(score_eval._measure_specs(m, measures)), want)
        for bad, message in (("mapp", "unknown trec_eval measure 'mapp'; did you mean 'map'?"),
                             ("map.5", "unknown trec_eval measure 'map.5'"), ("P.0", "unknown trec_eval measure 'P.0'")):
            with self.subTest(bad=bad):
                with self.assertRaises(score_eval.ScoreError) as cm:
                    score_eval.parse_trec_measures([bad])
                self.assertIn(message, str(cm.exception))

    def test_help_lists_every_trec_measure(self):
        help_text = score_eval.build_parser().format_help()
        for m in score_eval.TREC_MEASURES:
            with self.subTest(measure=m.name):
                self.assertRegex(help_text, r"\n  %s(\.K)? " % m.name)
        for flag in ("-m MEASURE", "--measures", "--format", "-q", "--version", "--quiet"):
            self.assertIn(flag, help_text)

    def test_format_trec_needs_ir_mode_and_version(self):
        d = tmpdir(self)
        g = d / "g.jsonl"
        g.write_text('{"qid": "a", "answerable": false, "gold_claim_substr": [], "gold_citations": []}\n')
        code, _, err = run_cli(["--gold", g, "--trace", g, "--format", "trec"], cwd=d)
        self.assertEqual(code, 2)
        self.assertIn("need --qrels and --run", err)
        code, _, err = run_cli(["--gold", g, "--trace", g, "--gates", "map=0.1"], cwd=d)
        self.assertEqual(code, 2)
        self.assertIn("gate 'map' is a trec_eval measure", err)
        import io
        import contextlib
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(score_eval.main(["--version"]), 0)
        self.assertEqual(out.getvalue(), "score_eval.py %s\n" % score_eval.__version__)

    def test_gates_none_and_default_file_notice(self):
        d = tmpdir(self)
        g = d / "g.jsonl"
        g.write_text('{"qid": "a", "answerable": true, "gold_claim_substr": ["hello"], "gold_citations": ["c"]}\n')
        t = d / "t.jsonl"
        t.write_text('{"qid": "a", "retrieved_ids": [], "answer_json": {"claim": "no", "citations": []}}\n')
        code, rep, err = run_cli(["--gold", g, "--trace", t], cwd=d)      # seed defaults: precision fails
        self.assertEqual(code, 1)
        self.assertIn("no gates file: seed 002's default gates apply", err)
        code, rep, err = run_cli(["--gold", g, "--trace", t, "--gates", "none"], cwd=d)
        self.assertEqual((code, rep["gate_results"], rep["inputs"]["gates"]), (0, [], "none"))
        self.assertEqual(rep["version"], score_eval.__version__)


def _pytrec():
    try:
        import pytrec_eval  # noqa: F401
        return True
    except ImportError:
        return False


@unittest.skipUnless(_pytrec(), "pytrec_eval is not importable (pip install pytrec-eval-terrier in a venv)")
class AgainstPytrecEval(unittest.TestCase):
    def test_random_runs(self):
        import pytrec_eval
        rng = random.Random(19)
        d = tmpdir(self)
        names = ["map", "Rprec", "bpref", "recip_rank", "P_5", "P_10", "recall_5", "recall_10",
                 "ndcg_cut_5", "ndcg_cut_10", "success_1", "success_5"]
        for trial in range(20):
            qrels, run = {}, {}
            for t in range(rng.randint(1, 6)):
                qid = "q%d" % t
                docs = ["d%d" % i for i in range(rng.randint(1, 30))]
                qrels[qid] = {doc: rng.choice([0, 0, 1, 2]) for doc in rng.sample(docs, rng.randint(1, len(docs)))}
                if rng.random() < 0.2:
                    qrels[qid][docs[0]] = 1            # at least one relevant
                run[qid] = {doc: float(rng.randint(0, 5)) for doc in rng.sample(docs, rng.randint(1, len(docs)))}
            if not any(g >= 1 for j in qrels.values() for g in j.values()):
                continue
            (d / "q").write_text("".join("%s 0 %s %d\n" % (q, doc, g) for q, j in qrels.items() for doc, g in j.items()))
            (d / "r").write_text("".join("%s Q0 %s 0 %s t\n" % (q, doc, s) for q, r in run.items() for doc, s in r.items()))
            evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"map", "Rprec", "bpref", "recip_rank", "P.5,10",
                                                               "recall.5,10", "ndcg_cut.5,10", "success.1,5"})
            want = evaluator.evaluate(run)
            per, _ = score_eval.trec_evaluate(*self._load(d), names)
            for qid, values in want.items():
                for name in names:
                    with self.subTest(trial=trial, qid=qid, measure=name):
                        self.assertAlmostEqual(per[qid][name], values[name], places=4)

    def _load(self, d):
        errors = score_eval._Errors(20)
        gold = score_eval.read_qrels(str(d / "q"), errors)
        run = score_eval.read_run(str(d / "r"), errors)
        self.assertEqual(errors.count, 0, errors.text())
        return gold, run


if __name__ == "__main__":
    unittest.main()
