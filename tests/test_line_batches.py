"""score_eval.iter_line_batches / iter_lines: block reading gives the lines readline would.

Expected values come from first principles: a file's lines are its bytes cut after each b"\\n"
(the last one may lack it); a line whose bytes, line end excluded, number more than the limit
is None.  Every case runs with blocks far smaller than a line (3, 7 bytes) and with the default
block, so lines and over-long lines cross block ends in every way.
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import score_eval  # noqa: E402


def expected(data: bytes, limit: int):
    """(lineno, raw with its line end, or None) the plain way: cut after each newline."""
    out = []
    pieces = data.split(b"\n")
    for k, piece in enumerate(pieces):
        last = k == len(pieces) - 1
        if last and not piece:
            break
        raw = piece if last else piece + b"\n"
        out.append((k + 1, None if len(piece) > limit else raw))
    return out


CASES = [
    ("empty", b"", 10),
    ("one line", b"abc\n", 10),
    ("no final newline", b"abc\ndef", 10),
    ("crlf", b"a b\r\nc d\r\n", 10),
    ("blank lines", b"\n\nx\n\n", 10),
    ("exactly the limit", b"0123456789\n0123456789", 10),
    ("one over the limit", b"0123456789X\nok\n", 10),
    ("last line over the limit", b"ok\n0123456789X", 10),
    ("long line in the middle", b"a\n" + b"x" * 50 + b"\nb\n", 10),
    ("two long lines", b"x" * 30 + b"\n" + b"y" * 30 + b"\n", 10),
    ("long line ending the file", b"a\n" + b"z" * 40, 10),
    ("crlf at the limit", b"012345678\r\n", 10),       # 10 bytes with the \r: not over
    ("utf-8", "é€\nü\n".encode("utf-8"), 10),
]


class LineBatches(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.saved = score_eval.READ_BLOCK
        self.addCleanup(setattr, score_eval, "READ_BLOCK", self.saved)

    def write(self, data: bytes) -> str:
        path = os.path.join(self.dir.name, "f")
        with open(path, "wb") as fh:
            fh.write(data)
        return path

    def test_table(self):
        for name, data, limit in CASES:
            path = self.write(data)
            for block in (3, 7, self.saved):
                with self.subTest(case=name, block=block):
                    score_eval.READ_BLOCK = block
                    self.assertEqual(list(score_eval.iter_lines(path, limit=limit)), expected(data, limit))
                    got = []
                    for first, lines, ended in score_eval.iter_line_batches(path, limit=limit):
                        self.assertEqual(first, len(got) + 1)
                        got += lines
                    want = [None if raw is None else raw.rstrip(b"\n") for _, raw in expected(data, limit)]
                    self.assertEqual(got, want)

    def test_input_limits(self):
        path = self.write(b"a\nb\nc\nd\n")
        saved = dict(score_eval._LIMITS)
        self.addCleanup(score_eval._LIMITS.update, saved)
        for block in (3, self.saved):
            score_eval.READ_BLOCK = block
            score_eval._LIMITS.update(saved, input_lines=3)
            with self.assertRaisesRegex(score_eval.ScoreError, r"more than 3 lines \(--max-input-lines\)"):
                list(score_eval.iter_lines(path))
            score_eval._LIMITS.update(saved, input_lines=4)
            self.assertEqual(len(list(score_eval.iter_lines(path))), 4)
            score_eval._LIMITS.update(saved, input_bytes=7)
            with self.assertRaisesRegex(score_eval.ScoreError, r"more than 7 bytes \(--max-input-bytes\)"):
                list(score_eval.iter_lines(path))

    def test_unended_long_line(self):
        path = self.write(b"x" * 5000)          # no line end, under the 64 MiB stop: one over-long line
        score_eval.READ_BLOCK = 1000
        self.assertEqual(list(score_eval.iter_lines(path, limit=10)), [(1, None)])


if __name__ == "__main__":
    unittest.main()
