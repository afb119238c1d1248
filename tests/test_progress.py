"""Progress on stderr (issue 19 item 7): a live line on a terminal; off a terminal one plain
line at most every 30 s with count, rate and ETA; nothing with --quiet (enabled=False)."""
import io
import os
import sys
import unittest
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import score_eval  # noqa: E402
from mini_rag import progress as progress_mod  # noqa: E402
from mini_rag.progress import Progress  # noqa: E402


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


class TTY(io.StringIO):
    def isatty(self):
        return True


class Plain(unittest.TestCase):
    def run_with_clock(self, stream, enabled=None, steps=(), total=100):
        clock = Clock()
        with mock.patch.object(progress_mod.time, "monotonic", clock):
            p = Progress(total, "eval baseline", stream=stream, enabled=enabled)
            for t, done in steps:
                clock.t = 1000.0 + t
                p.update(done)
            p.close()
        return stream.getvalue()

    def test_off_a_terminal_one_line_per_30_seconds(self):
        # updates every 5 s for 95 s: lines at 30, 60 and 90 s only
        steps = [(t, t) for t in range(5, 100, 5)]
        text = self.run_with_clock(io.StringIO(), steps=steps)
        self.assertEqual(text.splitlines(), [
            "eval baseline: 30/100 (30%%), 30s, 1.0/s, ETA %ds" % (70 / 1.0),
            "eval baseline: 60/100 (60%), 60s, 1.0/s, ETA 40s",
            "eval baseline: 90/100 (90%), 90s, 1.0/s, ETA 10s"])
        self.assertNotIn("\r", text)

    def test_short_run_off_a_terminal_prints_nothing(self):
        self.assertEqual(self.run_with_clock(io.StringIO(), steps=[(1, 50), (2, 100)]), "")

    def test_live_line_on_a_terminal(self):
        text = self.run_with_clock(TTY(), steps=[(0.5, 10), (1.5, 20), (1.6, 30), (2.0, 40)])
        self.assertTrue(text.startswith("\reval baseline: 20/100 (20%), 2s\x1b[K"), repr(text))
        self.assertTrue(text.endswith("\reval baseline: 100/100 (100%), 2s\x1b[K\n"), repr(text))

    def test_quiet(self):
        steps = [(t, t) for t in range(5, 100, 5)]
        self.assertEqual(self.run_with_clock(io.StringIO(), enabled=False, steps=steps), "")
        self.assertEqual(self.run_with_clock(TTY(), enabled=False, steps=steps), "")


class ScorerProgress(unittest.TestCase):
    def test_past_100k_rows_a_line_every_30_seconds(self):
        clock = Clock()
        out = io.StringIO()

        def rows():
            for n in range(300_000):
                clock.t += 0.0002          # 5,000 rows a second: 60 s in all
                yield n

        with mock.patch.object(score_eval.time, "monotonic", clock):
            got = sum(1 for _ in score_eval._progress_rows(rows(), "score_eval: t.jsonl", stream=out))
        self.assertEqual(got, 300_000)
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), 1, lines)    # the first check past 30 s; the next 30 s are not over
        n = int(lines[0].split(": ")[2].split()[0])
        self.assertTrue(150_000 <= n < 150_000 + 16_384, lines)
        self.assertTrue(lines[0].endswith(" rows, 5000/s"), lines)

    def test_nothing_below_100k_rows(self):
        out = io.StringIO()
        self.assertEqual(sum(1 for _ in score_eval._progress_rows(iter(range(90_000)), "x", stream=out)), 90_000)
        self.assertEqual(out.getvalue(), "")


if __name__ == "__main__":
    unittest.main()
