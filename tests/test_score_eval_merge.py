"""score_eval.py --partial and merge: the trace split into 1, 2 and 7 consecutive shards, each
scored with --partial, merged, gives byte-identical JSON, items JSONL, Markdown, stderr and
exit status to one run over all rows (generated rows with duplicates, one across shards,
missing items, a --baseline comparison; TREC files split by topic); bad partials are refused."""
import contextlib
import io
import json
import math
import os
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import score_eval  # noqa: E402
from bench_scorer import generate  # noqa: E402


def call(argv):
    """(exit status, stdout, stderr) of score_eval.main in-process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = score_eval.main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def split(lines, n):
    size = math.ceil(len(lines) / n)
    return [lines[j * size:(j + 1) * size] for j in range(n)]


class Merge(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp())
        generate(cls.tmp, 300, 11)
        trace = (cls.tmp / "trace.jsonl").read_text(encoding="utf-8").splitlines(True)
        # One more duplicate, far from its first row: it lands in another shard.
        trace.append(trace[3])
        (cls.tmp / "trace.jsonl").write_text("".join(trace), encoding="utf-8")
        cls.trace = trace

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def outputs(self, tag, argv):
        """Run argv writing --out/--items/--markdown under tag; all outputs as one tuple."""
        files = [self.tmp / (tag + ext) for ext in (".json", ".items", ".md")]
        code, out, err = call(argv + ["--out", files[0], "--items", files[1], "--markdown", files[2], "--full"])
        return (code, out, err) + tuple(f.read_bytes() for f in files)

    def test_shards_merge_to_the_single_run(self):
        gold = self.tmp / "gold.jsonl"
        common = ["--k", "1,5"]
        single = self.outputs("single", ["--gold", gold, "--trace", self.tmp / "trace.jsonl"] + common)
        self.assertEqual(single[0], 1)                      # generated rows fail some gates
        self.assertIn("3 duplicate trace rows", single[2])          # 2 generated + ours
        self.assertIn("Q0000003)", single[2])                           # ours, last in file order
        base = self.tmp / "single.json"
        with_base = self.outputs("single-b", ["--gold", gold, "--trace", self.tmp / "trace.jsonl",
                                              "--baseline", base] + common)
        for n in (1, 2, 7):
            parts = []
            for j, lines in enumerate(split(self.trace, n)):
                shard = self.tmp / ("s%d_%d.jsonl" % (n, j))
                shard.write_text("".join(lines), encoding="utf-8")
                part = self.tmp / ("p%d_%d.json" % (n, j))
                code, out, err = call(["--gold", gold, "--trace", shard, "--partial", part] + common)
                self.assertEqual((code, out), (0, ""), err)
                parts.append(part)
            with self.subTest(shards=n):
                merged = self.outputs("m%d" % n, ["merge"] + parts + ["--trace", self.tmp / "trace.jsonl"])
                self.assertEqual(merged, single)
                merged = self.outputs("mb%d" % n, ["merge"] + parts + ["--trace", self.tmp / "trace.jsonl",
                                                                        "--baseline", base])
                self.assertEqual(merged, with_base)

    def test_trec_split_by_topic(self):
        qrels, run = self.tmp / "q.txt", self.tmp / "r.txt"
        qrels.write_text("".join("%d 0 d%d %d\n" % (t, d, (t + d) % 3) for t in range(1, 9) for d in range(5)))
        rows = ["%d Q0 d%d %d %.2f x\n" % (t, d, r, 1.0 - r / 10) for t in range(1, 10)
                for r, d in enumerate((3, 1, 4, 0, 2)) if t != 4]
        run.write_text("".join(rows))
        single = self.outputs("trec", ["--qrels", qrels, "--run", run, "--k", "3", "--gates", "nDCG@3=0.1"])
        parts = []
        for j, topics in enumerate(((1, 2, 3), (5, 6, 7, 8, 9))):
            shard = self.tmp / ("t%d.txt" % j)
            shard.write_text("".join(r for r in rows if int(r.split()[0]) in topics))
            part = self.tmp / ("tp%d.json" % j)
            self.assertEqual(call(["--qrels", qrels, "--run", shard, "--k", "3", "--gates", "nDCG@3=0.1",
                                   "--partial", part])[0], 0)
            parts.append(part)
        merged = self.outputs("trec-m", ["merge"] + parts + ["--trace", run, "--gates", "nDCG@3=0.1"])
        self.assertEqual(merged, single)

    def test_bad_partials(self):
        gold = self.tmp / "gold.jsonl"
        part = self.tmp / "ok.json"
        self.assertEqual(call(["--gold", gold, "--trace", self.tmp / "trace.jsonl", "--partial", part])[0], 0)
        other = self.tmp / "other.json"
        self.assertEqual(call(["--gold", gold, "--trace", self.tmp / "trace.jsonl", "--k", "3",
                               "--partial", other])[0], 0)
        junk = self.tmp / "junk.json"
        junk.write_text('{"format": "x"}')
        doc = json.loads(part.read_text())
        doc["fields"][0]["name"] = "no_such_metric"
        alien = self.tmp / "alien.json"
        alien.write_text(json.dumps(doc))
        table = [
            ([junk], "junk.json:1: not a score_eval partial, got format \"x\""),
            ([part, other], "other.json: shard differs from"),
            ([alien], "alien.json: the partial holds no_such_metric"),
            ([self.tmp / "absent.json"], "absent.json: cannot read"),
        ]
        for parts, message in table:
            with self.subTest(message=message):
                code, out, err = call(["merge"] + parts)
                self.assertEqual((code, out), (2, ""))
                self.assertIn(message, err)
        changed = self.tmp / "gold2.jsonl"
        shutil.copy(gold, changed)
        p2 = self.tmp / "p2.json"
        self.assertEqual(call(["--gold", changed, "--trace", self.tmp / "trace.jsonl", "--partial", p2])[0], 0)
        with open(changed, "a", encoding="utf-8") as fh:
            fh.write("\n")
        code, _out, err = call(["merge", p2])
        self.assertEqual(code, 2)
        self.assertIn("gold2.jsonl: the gold file changed since the partials were written", err)


if __name__ == "__main__":
    unittest.main()
