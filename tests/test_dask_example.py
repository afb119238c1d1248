"""examples/dask_score.py: the trace is cut into consecutive shards covering every line once
(always run), and, where Dask is installed (``make example-dask`` makes runs/venv-dask), the
shards scored as Dask tasks on a LocalCluster and merged give byte-identical JSON to one
score_eval.py run (skipped elsewhere: Dask is never a dependency of the project)."""
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "dask_score.py"


def load_example():
    spec = importlib.util.spec_from_file_location("dask_score_example", str(EXAMPLE))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def has_dask() -> bool:
    try:
        import dask.distributed  # noqa: F401
    except Exception:            # ImportError, or a broken install
        return False
    return True


class SplitTrace(unittest.TestCase):
    # (lines, shards) -> line counts per shard: ceil(lines / shards) each, the last shorter,
    # no empty shard after the first.
    CASES = [(10, 1, [10]), (10, 2, [5, 5]), (10, 3, [4, 4, 2]), (10, 7, [2, 2, 2, 2, 2]),
             (3, 7, [1, 1, 1]), (0, 3, [0])]

    def test_consecutive_pieces(self):
        split_trace = load_example().split_trace
        for lines, shards, sizes in self.CASES:
            with self.subTest(lines=lines, shards=shards), tempfile.TemporaryDirectory() as tmp:
                rows = [('{"qid": "Q%d"}\n' % i).encode() for i in range(lines)]
                trace = Path(tmp) / "trace.jsonl"
                trace.write_bytes(b"".join(rows))
                paths = split_trace(trace, shards, Path(tmp))
                pieces = [p.read_bytes().splitlines(True) for p in paths]
                self.assertEqual([len(p) for p in pieces], sizes)
                self.assertEqual([r for p in pieces for r in p], rows)


@unittest.skipUnless(has_dask(), "dask.distributed does not import here (it is no dependency); "
                                 "'make example-dask' installs it into runs/venv-dask and runs the example")
class OnDask(unittest.TestCase):
    def test_merged_report_is_the_single_runs(self):
        tmp = Path(tempfile.mkdtemp())
        try:
            p = subprocess.run([sys.executable, str(EXAMPLE), "--rows", "1500", "--shards", "3",
                                "--workers", "2", "--workdir", str(tmp)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                               timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            self.assertIn("3 shard task(s) on 2 worker(s)", p.stderr)
            self.assertEqual(sorted(x.name for x in tmp.glob("part*.json")),
                             ["part000.json", "part001.json", "part002.json"])
            merged, single = (tmp / "merged.json").read_bytes(), (tmp / "single.json").read_bytes()
            self.assertEqual(merged, single)
            # The report covers every gold item and every trace row, not one shard's share.
            counts = json.loads(merged)["counts"]
            trace_rows = len((tmp / "trace.jsonl").read_bytes().splitlines())
            self.assertEqual((counts["gold_items"], counts["trace_rows"]), (1500, trace_rows))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
