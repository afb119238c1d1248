"""score_eval.py against seed 002's own reference scorer, and the seed's CI snippet end to end.

The reference is the seed file's ```python block, extracted byte for byte into
tests/data/seed002/ (with its licence note, SOURCE.md); a test checks the extraction still
matches the seed when the seed file is present.  Random gold/trace sets full of the seed's edge cases (refusals in other case and
spacing, null claims, missing traces, duplicate rows, q_id, empty and short substrings, empty
gold citations, citations outside retrieved_ids) must give identical seed keys.
"""
import contextlib
import importlib.util
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.test_score_eval import run_cli, write_jsonl  # noqa: E402

SEED = Path(os.environ.get("MINI_RAG_SEEDS", ROOT.parent / "shared" / "seeds")) / "002_080cdb9eab6f891d.txt"
REFERENCE = ROOT / "tests" / "data" / "seed002" / "reference_score_eval.py"
sys.path.insert(0, str(ROOT / "bench"))
SEED_KEYS = ("answered", "refused", "answerable", "unanswerable", "precision", "chr", "under_refusal",
             "over_refusal", "recall@k", "k", "gates", "pass")
IDS = ["p%d#%d" % (d, p) for d in range(4) for p in range(3)]
PHRASES = ["rejects null keys", "only domain example.com", "keys", "retention is thirty days", "ssn"]


def load_reference(folder: Path):
    spec = importlib.util.spec_from_file_location("reference_score_eval", str(REFERENCE))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_reference(module, argv):
    out = io.StringIO()
    old = sys.argv
    sys.argv = ["score_eval.py"] + [str(a) for a in argv]
    try:
        with contextlib.redirect_stdout(out):
            module.main()
    finally:
        sys.argv = old
    return json.loads(out.getvalue())


def random_case(rng: random.Random):
    gold, trace = [], []
    for n in range(rng.randint(1, 25)):
        qid = "Q%d" % n
        answerable = rng.random() < 0.6
        row = {"qid": qid, "question": "q", "answerable": answerable}
        r = rng.random()
        if r < 0.15:
            row["gold_claim_substr"] = []
        elif r < 0.2:
            pass                                   # missing: contains nothing
        else:
            row["gold_claim_substr"] = rng.sample(PHRASES, rng.randint(1, 2))
        if rng.random() < 0.9:
            row["gold_citations"] = rng.sample(IDS, rng.choice((0, 1, 1, 2))) if answerable else \
                rng.sample(IDS, rng.choice((0, 0, 1)))
        gold.append(row)
        for _ in range(rng.choice((0, 1, 1, 1, 2))):   # missing, one, or a duplicate row
            retrieved = rng.sample(IDS, rng.randint(0, 6))
            refusal = rng.random() < 0.35
            claim = rng.choice(["not in context", " Not In Context ", "NOT IN CONTEXT\n"]) if refusal else \
                rng.choice([None, "", "X " + rng.choice(PHRASES) + ".", "something else entirely"])
            cits = rng.sample(IDS, rng.randint(0, 2)) if rng.random() < 0.3 else \
                rng.sample(retrieved, min(len(retrieved), rng.randint(0, 2)))
            aj = {"claim": claim} if claim is not None or rng.random() < 0.5 else None
            if aj is not None and rng.random() < 0.9:
                aj["citations"] = cits
            t = {"q_id" if rng.random() < 0.1 else "qid": qid, "retrieved_ids": retrieved, "answer_json": aj}
            if rng.random() < 0.05:
                del t["retrieved_ids"]
            trace.append(t)
    rng.shuffle(trace)
    return gold, trace


class VendoredReference(unittest.TestCase):
    def test_the_vendored_block_is_the_seeds(self):
        """The committed reference hashes to the value its SOURCE.md records, and (where the
        seed file is on this machine) it is exactly the seed's ```python block."""
        import hashlib
        import re
        data = REFERENCE.read_bytes()
        note = (REFERENCE.parent / "SOURCE.md").read_text(encoding="utf-8")
        recorded = re.search(r"reference_score_eval.py sha256 ([0-9a-f]{64})", note)
        self.assertIsNotNone(recorded, "SOURCE.md records no sha256 of reference_score_eval.py")
        self.assertEqual(hashlib.sha256(data).hexdigest(), recorded.group(1))
        if SEED.exists():
            from bench_scorer import extract_reference
            self.assertEqual(data.decode("utf-8"), extract_reference(SEED.read_text(encoding="utf-8")))


class AgainstReference(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="score_eval_ref_"))
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.ref = load_reference(self.dir)

    def test_random_inputs_give_the_seed_numbers(self):
        rng = random.Random(2024)
        gates = "precision=0.80,chr=0.75,under=0.05,over=0.10"
        for case in range(150):
            gold, trace = random_case(rng)
            g = write_jsonl(self.dir / "g.jsonl", gold)
            t = write_jsonl(self.dir / "t.jsonl", trace)
            k = rng.choice((1, 2, 3, 5))
            with self.subTest(case=case):
                code, got, err = run_cli(["--gold", g, "--trace", t, "--k", k, "--gates", gates], cwd=self.dir)
                if not {r.get("qid", r.get("q_id")) for r in trace} & {r["qid"] for r in gold}:
                    # no trace row names a gold item: nothing to score, an input error (issue 42),
                    # where the seed's reference scores every item as missing
                    self.assertEqual((code, got), (2, None), err)
                    continue
                want = run_reference(self.ref, ["--gold", g, "--trace", t, "--k", k, "--gates", gates])
                self.assertIn(code, (0, 1), err)
                self.assertEqual({key: got[key] for key in SEED_KEYS}, want)
                self.assertEqual(code, 0 if want["pass"] else 1)

    def test_seed_worked_example(self):
        argv = ["--gold", ROOT / "examples/seed/gold.jsonl", "--trace", ROOT / "examples/seed/trace.jsonl",
                "--k", "5", "--gates", "precision=0.80,chr=0.75,under=0.05,over=0.10"]
        want = run_reference(self.ref, argv)
        code, got, _ = run_cli(argv)
        self.assertEqual({key: got[key] for key in SEED_KEYS}, want)


@unittest.skipUnless(shutil.which("jq") and shutil.which("bash"), "jq or bash not found")
class SeedCiSnippet(unittest.TestCase):
    def test_snippet_as_written(self):
        folder = Path(tempfile.mkdtemp(prefix="score_eval_ci_"))
        self.addCleanup(shutil.rmtree, folder, True)
        (folder / "eval").mkdir()
        script = (
            '"$PY" "$SE" \\\n  --gold "$EX/gold.jsonl" \\\n  --trace "$EX/trace.jsonl" \\\n  --k 5 \\\n'
            "  --gates precision=0.80,chr=0.75,under=0.05,over=0.10 \\\n| tee eval/last_report.json\n\n"
            "jq -e '.pass == true' eval/last_report.json\n")
        env = dict(os.environ, PY=sys.executable, SE=str(ROOT / "score_eval.py"), EX=str(ROOT / "examples/seed"))
        ok = subprocess.run(["bash", "-c", script], cwd=str(folder), env=env, capture_output=True)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertTrue(ok.stdout.decode().rstrip().endswith("true"))
        failing = script.replace("precision=0.80", "hallucination=0.10")   # not measured without chunks: fails
        bad = subprocess.run(["bash", "-c", failing], cwd=str(folder), env=env, capture_output=True)
        self.assertEqual(bad.returncode, 1)      # jq -e exits 1 when .pass is false
        self.assertTrue(bad.stdout.decode().rstrip().endswith("false"))


if __name__ == "__main__":
    unittest.main()
