"""``calibrate`` (issue 43): the chooser, the config it writes and reads back, bad samples, and a
whole run on a small corpus written here, checked against score_eval.py run on its own."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from mini_rag import calibration  # noqa: E402
from mini_rag.answer import answerability  # noqa: E402
from mini_rag.config import DEFAULTS, load_config, read_toml  # noqa: E402
from mini_rag.errors import MiniRagError  # noqa: E402
from mini_rag.eval import calibrate as cal  # noqa: E402
from mini_rag.fileio import scorer  # noqa: E402


def row(point, pass_rate, passes, n=50):
    """A table row as score_point returns it (only what choose reads)."""
    pr = None if pass_rate is None else {"value": pass_rate, "count": round(pass_rate * n), "n": n, "ci": None}
    return {"point": point, "metrics": {"pass_rate": pr} if pr else {}, "passes": passes}


def P(k, q):
    return {"min_key_coverage": k, "min_question_share": q}


DEFAULT = P(0.7, 0.3)


class Chooser(unittest.TestCase):
    """choose(): the objective of the module docstring, on tables whose answer is worked out by hand."""

    def test_passing_points_beat_a_better_failing_one(self):
        table = [row(P(0.4, 0.2), 0.80, False),     # best pass rate, but fails a gate
                 row(P(0.5, 0.3), 0.62, True),
                 row(P(0.7, 0.3), 0.60, True),      # the default, passing, lower
                 row(P(0.9, 0.5), 0.64, True)]      # best among the passing ones
        self.assertEqual(cal.choose(table, DEFAULT), 3)

    def test_none_passes_highest_pass_rate(self):
        table = [row(P(0.4, 0.2), 0.52, False), row(P(0.7, 0.3), 0.54, False), row(P(0.8, 0.3), 0.58, False),
                 row(P(0.9, 0.3), 0.56, False)]
        self.assertEqual(cal.choose(table, DEFAULT), 2)

    def test_tie_goes_to_the_default_then_the_nearest_then_the_first(self):
        # 0.6 each: the default (index 2) wins over the earlier points
        table = [row(P(0.4, 0.2), 0.6, False), row(P(0.6, 0.3), 0.6, False), row(P(0.7, 0.3), 0.6, False),
                 row(P(0.8, 0.3), 0.6, False)]
        self.assertEqual(cal.choose(table, DEFAULT), 2)
        # default lower: of the tied 0.6s, (0.8, 0.3) is 0.1 from (0.7, 0.3), (0.6, 0.5) is 0.1 + 0.2,
        # (0.4, 0.2) is 0.3 + 0.1
        table = [row(P(0.4, 0.2), 0.6, False), row(P(0.6, 0.5), 0.6, False), row(P(0.7, 0.3), 0.5, False),
                 row(P(0.8, 0.3), 0.6, False)]
        self.assertEqual(cal.choose(table, DEFAULT), 3)
        # equally near (0.6 and 0.8 are both 0.1 away): the earlier one
        table = [row(P(0.8, 0.3), 0.6, False), row(P(0.6, 0.3), 0.6, False), row(P(0.7, 0.3), 0.5, False)]
        self.assertEqual(cal.choose(table, DEFAULT), 0)

    def test_unmeasured_pass_rate_ranks_last(self):
        table = [row(P(0.4, 0.2), None, True), row(P(0.5, 0.2), 0.0, True)]
        self.assertEqual(cal.choose(table, DEFAULT), 1)

    def test_thresholds(self):
        key = "answerability_threshold"
        table = [row({key: 0.3}, 0.5, False), row({key: 0.415}, 0.56, False), row({key: 0.44}, 0.56, False),
                 row({key: 0.5}, 0.54, False)]
        self.assertEqual(cal.choose(table, {key: 0.415}), 1)
        self.assertEqual(cal.choose(table, {key: 0.45}), 2)     # 0.44 is 0.01 away, 0.415 is 0.035
        with self.assertRaises(ValueError):
            cal.choose([], DEFAULT)


class Candidates(unittest.TestCase):
    def test_rule_grid_holds_the_committed_point(self):
        pts = cal.candidate_points("rules", cal.default_point("rules"))
        self.assertEqual(len(pts), 6 * 4)
        self.assertIn(P(0.7, 0.3), pts)
        self.assertEqual(cal.default_point("rules"), P(0.7, 0.3))

    def test_model_threshold_inserted_in_order(self):
        pts = cal.candidate_points("model", {"answerability_threshold": 0.415})
        ts = [p["answerability_threshold"] for p in pts]
        self.assertEqual(len(ts), 42)
        self.assertEqual(ts[:3], [0.0, 0.02, 0.04])
        self.assertEqual(ts[20:24], [0.4, 0.415, 0.42, 0.44])
        self.assertEqual(ts, sorted(ts))
        self.assertEqual(len(cal.candidate_points("model+embed", {"answerability_embed_threshold": 0.44})), 41)

    def test_cut_rows(self):
        rows = [{"qid": "a", "answer_json": {"claim": "x", "citations": ["d#p1"]}, "decision": "ANSWER"},
                {"qid": "b", "answer_json": {"claim": "y", "citations": ["d#p2"]}, "decision": "ANSWER"},
                {"qid": "c", "answer_json": {"claim": "no", "citations": []}, "decision": "ABSTAIN"}]
        out = cal.cut_rows(rows, [0.41, 0.39, None], 0.4, "no")
        self.assertEqual([r["decision"] for r in out], ["ANSWER", "ABSTAIN", "ABSTAIN"])
        self.assertEqual(out[1]["answer_json"], {"claim": "no", "citations": []})
        self.assertEqual(out[0], rows[0])
        self.assertEqual(rows[1]["decision"], "ANSWER")            # the input rows are not changed

    def test_threshold_override(self):
        lexical = answerability.Model(ranker={}, gate={}, threshold=0.415, high=0.7)
        embed = answerability.Model(ranker={}, gate={}, threshold=0.435, high=0.7, embed={"model_sha256": "x"})
        cfg = load_config()
        self.assertEqual(answerability.threshold_of(lexical, cfg), 0.415)
        self.assertEqual(answerability.threshold_of(embed, cfg), 0.435)
        cfg["answer"]["answerability_threshold"] = 0.3
        self.assertEqual(answerability.threshold_of(lexical, cfg), 0.3)
        self.assertEqual(answerability.threshold_of(embed, cfg), 0.435)
        cfg["answer"]["answerability_embed_threshold"] = 0.0
        self.assertEqual(answerability.threshold_of(embed, cfg), 0.0)


RECORD = {"mode": "rules", "gold": 'odd "name"\n.jsonl', "gold_sha256": "ab" * 32, "sample": 50, "answerable": 31,
          "unanswerable": 19, "gates": "gates.toml", "objective": "pass rate", "candidates": 24,
          "passes_gates": False, "point": {"min_key_coverage": 0.6, "min_question_share": 0.3},
          "expected": {"pass_rate": {"value": 0.62, "count": 31, "n": 50, "low": 0.4815, "high": 0.7411},
                       "precision": {"count": 0, "n": 0}},
          "defaults": {"pass_rate": {"value": 0.54, "count": 27, "n": 50, "low": 0.4034, "high": 0.6707}}}


class ConfigRoundTrip(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mini_rag_cal_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, text, name="c.toml"):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return path

    def test_written_config_reads_back(self):
        raw = {"retrieval": {"top_k": 5, "typo_correction": False},
               "answer": {"refusal": "n/a \"quoted\" \u00e9 \x7f", "min_key_coverage": 0.9, "synonym_groups": ["a, b"]},
               "expansion": {"q13": {"match": "continuous processing", "add": ["ICH Q13"]}},
               "calibration": {"mode": "rules"}}
        text = calibration.config_toml(raw, dict(RECORD["point"]), RECORD, header="first\nsecond \\ line")
        self.assertTrue(text.startswith("# first\n# second \\ line\n\n[retrieval]\ntop_k = 5\n"))
        path = self.write(text)
        cfg = load_config(path)
        self.assertEqual(cfg["retrieval"]["top_k"], 5)
        self.assertIs(cfg["retrieval"]["typo_correction"], False)
        self.assertEqual(cfg["answer"]["refusal"], "n/a \"quoted\" \u00e9 \x7f")
        self.assertEqual(cfg["answer"]["synonym_groups"], ["a, b"])
        self.assertEqual((cfg["answer"]["min_key_coverage"], cfg["answer"]["min_question_share"]), (0.6, 0.3))
        self.assertEqual(cfg["expansion"]["q13"], {"match": "continuous processing", "add": ["ICH Q13"]})
        self.assertEqual(cfg["calibration"], RECORD)
        # the subset reader Python 3.9 and 3.10 use reads the same document
        self.assertEqual(scorer().parse_toml(text, path), read_toml(path))
        op = calibration.operating_point(cfg, DEFAULTS)
        self.assertEqual((op["source"], op["mode"], op["matches"]), ("calibrated", "rules", True))
        self.assertEqual(op["values"], {"min_key_coverage": 0.6, "min_question_share": 0.3})
        self.assertEqual(calibration.describe(op),
                         "operating point: phase C's rules, min_key_coverage 0.6, min_question_share 0.3 (calibrated "
                         "on 50 questions of odd \"name\"\n.jsonl: expected pass rate 0.620 [0.481, 0.741], precision "
                         "n/a, under-refusal n/a, over-refusal n/a)")

    def test_values_changed_by_hand_are_said(self):
        text = calibration.config_toml({}, {"min_key_coverage": 0.8, "min_question_share": 0.3}, RECORD)
        op = calibration.operating_point(load_config(self.write(text)), DEFAULTS)
        self.assertFalse(op["matches"])
        self.assertTrue(calibration.describe(op).endswith(
            "; warning: the config's values are not the calibrated point (rules min_key_coverage 0.6, "
            "min_question_share 0.3): the expected figures do not apply"))

    def test_defaults_and_hand_set(self):
        op = calibration.operating_point(load_config(), DEFAULTS)
        self.assertEqual((op["source"], op["mode"]), ("defaults", "rules"))
        self.assertEqual(calibration.describe(op), "operating point: phase C's rules, min_key_coverage 0.7, "
                                                   "min_question_share 0.3 (the committed defaults; no calibration)")
        cfg = load_config(self.write("[answer]\nanswerability = true\nanswerability_threshold = 0.3\n"))
        op = calibration.operating_point(cfg, DEFAULTS, "model")
        self.assertEqual((op["source"], op["values"]), ("config", {"answerability_threshold": 0.3}))
        cfg = load_config(self.write("[answer]\nanswerability = true\n"))
        self.assertEqual(calibration.describe(calibration.operating_point(cfg, DEFAULTS, "model+embed")),
                         "operating point: the answerability model with embeddings, answerability_embed_threshold "
                         "fitted (the committed defaults; no calibration)")

    def test_bad_records_name_file_and_key(self):
        cases = [("[calibration]\nmode = \"rules\"\nsample = 5\nbogus = 1\n", "unknown key 'bogus' in [calibration]"),
                 ("[calibration]\nmode = \"magic\"\nsample = 5\npoint = {min_key_coverage = 0.5}\n",
                  "[calibration] mode must be one of rules, model, model+embed, got 'magic'"),
                 ("[calibration]\nmode = \"rules\"\nsample = 5\npoint = {min_key_coverage = 0.5}\n",
                  "[calibration] point of mode rules must set min_key_coverage, min_question_share"),
                 ("[calibration]\nmode = \"rules\"\nsample = -1\n", "[calibration] sample must be a whole number"),
                 ("[calibration]\nsample = 5\n", "[calibration] needs mode"),
                 ("[calibration]\nmode = \"model\"\nsample = 5\npoint = {answerability_threshold = 0.4}\n"
                  "[calibration.expected]\npass_rate = {value = 1.5, count = 1, n = 2}\n",
                  "[calibration] expected.pass_rate value must be a number from 0 to 1, got 1.5"),
                 ("[calibration]\nmode = \"model\"\nsample = 5\npoint = {answerability_threshold = 0.4}\n"
                  "gold_sha256 = \"xyz\"\n", "gold_sha256 must be 64 lower-case hex digits")]
        for text, want in cases:
            path = self.write(text)
            with self.subTest(want=want):
                with self.assertRaises(MiniRagError) as ctx:
                    load_config(path)
                self.assertTrue(str(ctx.exception).startswith(path + ": "), str(ctx.exception))
                self.assertIn(want, str(ctx.exception))
        # an empty [calibration] (configs/default.toml's) is no calibration
        self.assertEqual(load_config(self.write("[calibration]\n"))["calibration"], {})


# ------------------------------------------------------------------ the command

DOCS = {
    "library.md": "# City library\n\nThe library opens at 9 am on weekdays and at 10 am on Saturdays.\n\n"
                  "It is closed on Sundays and on public holidays.\n\n"
                  "Members may borrow up to 12 books at a time.\n\n"
                  "A book is lent for three weeks and can be renewed twice online.\n\n"
                  "Late returns cost 20 cents per book per day.\n",
    "membership.md": "# Membership\n\nMembership is free for residents of the city.\n\n"
                     "Visitors pay 15 euros a year for a library card.\n\n"
                     "A lost card is replaced for 3 euros at the front desk.\n\n"
                     "Children under 12 need a parent's signature to join.\n",
    "rooms.md": "# Study rooms\n\nThe four study rooms on the second floor can be booked for two hours.\n\n"
                "Bookings open seven days ahead on the library website.\n\n"
                "Food is not allowed in the study rooms; drinks in closed bottles are.\n",
}
QUESTIONS = [
    ("When does the library open on weekdays?", True, ["9 am"], "library#p1"),
    ("Is the library open on Sundays?", True, ["closed on Sundays"], "library#p2"),
    ("How many books can a member borrow at a time?", True, ["12 books"], "library#p3"),
    ("How long is a book lent for?", True, ["three weeks"], "library#p4"),
    ("How often can a loan be renewed?", True, ["renewed twice"], "library#p4"),
    ("How much do late returns cost?", True, ["20 cents"], "library#p5"),
    ("Is membership free for residents?", True, ["free for residents"], "membership#p1"),
    ("How much does a library card cost for visitors?", True, ["15 euros"], "membership#p2"),
    ("What does it cost to replace a lost card?", True, ["3 euros"], "membership#p3"),
    ("Who must sign for children under 12 to join?", True, ["parent's signature"], "membership#p4"),
    ("For how long can a study room be booked?", True, ["two hours"], "rooms#p1"),
    ("How far ahead do study room bookings open?", True, ["seven days ahead"], "rooms#p2"),
    ("Are drinks allowed in the study rooms?", True, ["closed bottles"], "rooms#p3"),
    ("Does the library lend e-readers?", False, [], ""),
    ("How much does the parking garage cost per hour?", False, [], ""),
    ("When does the cafeteria open?", False, [], ""),
    ("How many computers are there on the first floor?", False, [], ""),
    ("Can members print documents in colour?", False, [], ""),
    ("What is the fine for a damaged DVD?", False, [], ""),
    ("Is there wifi in the study rooms?", False, [], ""),
    ("Who is the director of the library?", False, [], ""),
]


def sample_rows():
    out = []
    for i, (q, ok, subs, cite) in enumerate(QUESTIONS, 1):
        out.append({"qid": "L%02d" % i, "question": q, "answerable": ok, "gold_claim_substr": subs,
                    "gold_citations": [cite] if cite else []})
    return out


def mini_rag(*args):
    return subprocess.run([sys.executable, "-m", "mini_rag"] + list(args), cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)


@unittest.skipUnless(os.path.isfile(os.path.join(ROOT, "score_eval.py")), "score_eval.py is not in the repository")
class Command(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mini_rag_cal_")
        self.corpus = os.path.join(self.tmp, "docs")
        os.makedirs(self.corpus)
        for name, text in DOCS.items():
            with open(os.path.join(self.corpus, name), "w", encoding="utf-8") as fh:
                fh.write(text)
        self.gold = os.path.join(self.tmp, "sample.jsonl")
        self.write_gold(sample_rows())
        self.index = os.path.join(self.tmp, "index.json.gz")
        self.out = os.path.join(self.tmp, "calibrated.toml")
        self.work = os.path.join(self.tmp, "work")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write_gold(self, rows, extra=""):
        with open(self.gold, "w", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in rows) + extra)

    def calibrate(self, *extra):
        return mini_rag("calibrate", "--gold", self.gold, "--corpus", self.corpus, "--index", self.index,
                        "--out", self.out, "--work", self.work, *extra)

    def test_bad_gold_line_is_exit_2_file_line(self):
        rows = sample_rows()
        rows[2]["answerable"] = "yes"
        del rows[5]["answerable"]
        rows[7]["doc_scope"] = ["library"]
        self.write_gold(rows)
        p = self.calibrate()
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertEqual(p.stderr.splitlines(), [
            "mini_rag: %s:3: answerable must be true or false (calibration needs every question labelled), got "
            "\"yes\"" % self.gold,
            "%s:6: answerable must be true or false (calibration needs every question labelled), got null" % self.gold,
            "%s:8: doc_scope must be a non-empty string, got [\"library\"]" % self.gold])
        self.assertFalse(os.path.exists(self.out))
        self.write_gold(sample_rows(), extra="{\"qid\": \"L99\", \"question\": \n")
        p = self.calibrate()
        self.assertEqual(p.returncode, 2)
        self.assertTrue(p.stderr.startswith("mini_rag: %s:22: " % self.gold), p.stderr)
        self.write_gold(sample_rows()[:19])
        p = self.calibrate()
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, "mini_rag: %s: calibration needs 20 to 1000 labelled questions, got 19\n" % self.gold)
        self.write_gold([r for r in sample_rows() if r["answerable"]] * 2)
        p = self.calibrate()
        self.assertEqual(p.returncode, 2)

    def test_calibrate_then_eval(self):
        p = self.calibrate()
        self.assertEqual(p.returncode, 0, p.stderr)
        printed = json.loads(p.stdout)
        cfg = load_config(self.out)
        rec = cfg["calibration"]
        with open(self.gold, "rb") as fh:
            sha = hashlib.sha256(fh.read()).hexdigest()
        self.assertEqual((rec["mode"], rec["sample"], rec["answerable"], rec["unanswerable"], rec["gold_sha256"],
                          rec["candidates"]), ("rules", 21, 13, 8, sha, 24))
        point = {k: cfg["answer"][k] for k in ("min_key_coverage", "min_question_share")}
        self.assertEqual(rec["point"], point)
        self.assertEqual(printed["point"], point)
        self.assertEqual(os.path.realpath(cfg["corpus"]["path"]), os.path.realpath(self.corpus))
        # the expected figures are score_eval.py's own on the chosen point's trace, run apart
        chosen = cal.candidate_points("rules").index(point)
        trace = os.path.join(self.work, "trace.p%02d.jsonl" % chosen)
        report = os.path.join(self.tmp, "check.json")
        subprocess.run([sys.executable, os.path.join(ROOT, "score_eval.py"), "--gold", self.gold, "--trace", trace,
                        "--k", "5", "--gates", "none", "--out", report], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        with open(report, encoding="utf-8") as fh:
            metrics = json.load(fh)["metrics"]
        for name in ("pass_rate", "under_refusal", "over_refusal"):
            m = metrics[name]
            self.assertEqual(rec["expected"][name], {"value": round(m["value"], 4), "count": m["count"], "n": m["n"],
                                                     "low": m["ci"][0], "high": m["ci"][1]}, name)
        # the choice, re-derived from the scorer's own reports of every candidate: the best pass rate
        # among the points whose report passes, ties to the one nearest the committed 0.7 / 0.3
        points = cal.candidate_points("rules")
        reports = []
        for i in range(len(points)):
            with open(os.path.join(self.work, "report.p%02d.json" % i), encoding="utf-8") as fh:
                rep = json.load(fh)
            reports.append((rep["pass"], rep["metrics"]["pass_rate"]["value"]))
        pool = [i for i, (ok, _) in enumerate(reports) if ok] or list(range(len(points)))
        best = max(reports[i][1] for i in pool)
        tied = [i for i in pool if reports[i][1] == best]
        near = min(abs(points[i]["min_key_coverage"] - 0.7) + abs(points[i]["min_question_share"] - 0.3) for i in tied)
        self.assertIn(chosen, [i for i in tied if abs(abs(points[i]["min_key_coverage"] - 0.7)
                                                       + abs(points[i]["min_question_share"] - 0.3) - near) < 1e-9])
        self.assertEqual(rec["passes_gates"], reports[chosen][0])
        self.assertGreaterEqual(rec["expected"]["pass_rate"]["value"], rec["defaults"]["pass_rate"]["value"])
        # eval says which operating point it ran at
        runs = os.path.join(self.tmp, "runs")
        p = mini_rag("eval", "--config", self.out, "--gold", self.gold, "--perturb", "none", "--runs", runs,
                     "--index", self.index)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        op = json.loads(p.stdout)["operating_point"]
        self.assertEqual((op["source"], op["matches"], op["values"]), ("calibrated", True, point))
        self.assertIn("  operating point: phase C's rules, min_key_coverage %g, min_question_share %g (calibrated on "
                      "21 questions of %s: expected pass rate" % (point["min_key_coverage"],
                                                                  point["min_question_share"], self.gold), p.stderr)
        # eval's pass rate on the same questions is the expected one
        self.assertEqual(json.loads(p.stdout)["datasets"]["baseline"]["metrics"]["pass_rate"]["count"],
                         rec["expected"]["pass_rate"]["count"])
        # a second run replaces its own file; a file calibrate did not write needs --force
        self.assertEqual(self.calibrate().returncode, 0)
        with open(self.out, "w", encoding="utf-8") as fh:
            fh.write("[answer]\n")
        p = self.calibrate()
        self.assertEqual(p.returncode, 2)
        self.assertIn("exists and was not written by calibrate", p.stderr)
        p = mini_rag("calibrate", "--gold", self.gold, "--corpus", self.corpus, "--index", self.index,
                     "--out", self.gold)
        self.assertEqual(p.returncode, 2)
        self.assertIn("writing it would destroy the input", p.stderr)


if __name__ == "__main__":
    unittest.main()
