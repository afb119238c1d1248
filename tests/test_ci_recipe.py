"""examples/ci/gate.sh fails closed (issue 19 item 1): exit 0 on a passing run, non-zero on a
failing gate, a missing trace, an empty trace and an invalid trace."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GATE = os.path.join(ROOT, "examples", "ci", "gate.sh")
SH = shutil.which("sh")

GOLD = [
    {"qid": "A", "question": "How long are logs kept?", "answerable": True,
     "gold_claim_substr": ["400 days"], "gold_citations": ["logs#p1"]},
    {"qid": "U", "question": "What is the CEO's shoe size?", "answerable": False,
     "gold_claim_substr": [], "gold_citations": []},
]
GOOD = [
    {"qid": "A", "retrieved_ids": ["logs#p1"], "answer_json": {"claim": "Logs are kept for 400 days.",
                                                              "citations": ["logs#p1"]}},
    {"qid": "U", "retrieved_ids": [], "answer_json": {"claim": "not in context", "citations": []}},
]
BAD = [   # answers the unanswerable question: under_refusal 1.0 fails its gate
    GOOD[0],
    {"qid": "U", "retrieved_ids": ["logs#p1"], "answer_json": {"claim": "Size 44.", "citations": ["logs#p1"]}},
]


def jsonl(rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


@unittest.skipUnless(SH, "no POSIX sh on PATH")
class GateScript(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ci_gate_")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.gold = self.write("gold.jsonl", jsonl(GOLD))
        self.gates = self.write("gates.toml", "[baseline]\nprecision = { min = 0.8 }\n"
                                              "under_refusal = { max = 0.05 }\npass_rate = { min = 0.95 }\n")

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return path

    def gate(self, trace):
        env = dict(os.environ, PYTHON=sys.executable, GATES=self.gates,
                   REPORT=os.path.join(self.tmp, "out", "gate.json"))
        return subprocess.run([SH, GATE, trace, self.gold, "baseline"], cwd=self.tmp, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)

    def test_four_cases(self):
        cases = (  # (case, trace file content or None for missing, expected exit status)
            ("passing run", jsonl(GOOD), 0),
            ("failing gate", jsonl(BAD), 1),
            ("missing trace", None, 2),
            ("empty trace", "", 2),
            ("invalid trace", "{not json\n", 2),
            ("trace of other questions", jsonl([dict(GOOD[0], qid="Z")]), 2),    # nothing to score (issue 42)
        )
        for case, content, want in cases:
            with self.subTest(case=case):
                trace = os.path.join(self.tmp, "trace.jsonl")
                if os.path.exists(trace):
                    os.remove(trace)
                if content is not None:
                    self.write("trace.jsonl", content)
                p = self.gate(trace)
                self.assertEqual(p.returncode, want, p.stdout + p.stderr)
                if want == 0:
                    self.assertIn("gate: baseline passes every gate", p.stdout)
                    with open(os.path.join(self.tmp, "out", "gate.json"), encoding="utf-8") as fh:
                        self.assertIs(json.load(fh)["pass"], True)
                else:
                    self.assertNotIn("passes every gate", p.stdout)

    def test_gates_found_next_to_the_repository_root(self):
        """Issue 31 item 5: run from another folder without GATES, gate.sh reads REPO/gates.toml,
        writes HTML and JUnit next to the report; a REPO without gates.toml is exit 2."""
        self.write("trace.jsonl", jsonl(GOOD))
        repo = os.path.join(self.tmp, "repo")
        os.makedirs(repo)
        shutil.copy(self.gates, os.path.join(repo, "gates.toml"))
        shutil.copy(os.path.join(ROOT, "score_eval.py"), repo)
        elsewhere = os.path.join(self.tmp, "elsewhere")
        os.makedirs(elsewhere)
        env = dict(os.environ, PYTHON=sys.executable, REPO=repo, REPORT=os.path.join(elsewhere, "g.json"))
        env.pop("GATES", None)
        p = subprocess.run([SH, GATE, os.path.join(self.tmp, "trace.jsonl"), self.gold, "baseline"], cwd=elsewhere,
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(elsewhere, "g.json"), encoding="utf-8") as fh:
            self.assertEqual(json.load(fh)["inputs"]["gates"], os.path.join(repo, "gates.toml"))
        for ext in ("html", "xml"):
            self.assertTrue(os.path.isfile(os.path.join(elsewhere, "g." + ext)), ext)
        env["REPO"] = elsewhere
        p = subprocess.run([SH, GATE, os.path.join(self.tmp, "trace.jsonl"), self.gold, "baseline"], cwd=elsewhere,
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no such gates file", p.stderr)

    def test_workflow_claims_hold(self):
        """shell: bash where pipefail is claimed; a bring-your-own-trace job; HTML and JUnit kept;
        a test reporter step; no `jq -e` anywhere in the docs or the recipe."""
        with open(os.path.join(ROOT, "examples", "ci", "github-actions.yml"), encoding="utf-8") as fh:
            text = fh.read()
        self.assertIn("pipefail", text)
        self.assertIn("defaults:\n  run:\n    shell: bash", text)
        self.assertIn("bring-your-own-trace:", text)
        for needle in ("runs/gate.*.html", "runs/gate.*.xml", "runs/*.html", "runs/*.xml", "action-junit-report"):
            self.assertIn(needle, text)
        for rel in ("README.md", "docs/design.md", "CHANGELOG.md", "examples/ci/github-actions.yml", "examples/ci/gate.sh",
                    "gold/README.md"):
            path = os.path.join(ROOT, rel)
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as fh:
                    self.assertNotIn("jq -e", fh.read(), rel)

    def test_readme_is_for_a_user(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
            text = fh.read()
        self.assertLess(len(text.splitlines()), 400)
        prose = text.split("<!-- metrics:begin -->")[0] + text.split("<!-- metrics:end -->")[1]   # the table is the registry's
        self.assertNotRegex(prose, r"(?i)\bseed 00\d|\bissue \d")
        self.assertIn("## Scoring an LLM system", text)

    def test_workflow_uses_the_script_and_no_pipe(self):
        with open(os.path.join(ROOT, "examples", "ci", "github-actions.yml"), encoding="utf-8") as fh:
            text = fh.read()
        self.assertIn("sh examples/ci/gate.sh runs/trace.baseline.jsonl gold/gold.jsonl baseline", text)
        self.assertIn("python3 -m mini_rag eval", text)
        run_lines = [line for line in text.splitlines() if "score_eval" in line or "mini_rag" in line]
        self.assertTrue(run_lines)
        for line in run_lines:
            self.assertNotIn("| tee", line)


if __name__ == "__main__":
    unittest.main()
