"""Every regular expression of score_eval.py and mini_rag runs in linear time (issue 18).

tests/regex_audit.py finds every pattern (compiled module globals, and literal patterns
passed to re.* anywhere in the source) and builds hostile 100,000-character inputs from
each pattern's own characters.  Each pattern, run the way the code runs it (``match`` when
the code only ever anchors it, else ``finditer``, which tries every start), must finish
within 0.5 s: a quadratic pattern takes minutes on these inputs, a linear one milliseconds.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import regex_audit  # noqa: E402
from tests.lanes import once_per_ci  # noqa: E402

LIMIT_SECONDS = 0.5
SIZE = 100_000


class RegexTime(unittest.TestCase):
    def test_patterns_are_found(self):
        found = regex_audit.find_patterns()
        wheres = {w for w, _ in found.values()}
        self.assertGreater(len(found), 100)
        # both ways of finding a pattern work: a module global and a literal inside a function
        self.assertIn("score_eval._TOKEN_RX", wheres)
        self.assertTrue(any(w.startswith("mini_rag/eval/perturb.py:") for w in wheres), sorted(wheres)[:5])

    def test_hostile_inputs_reach_quadratic_shapes(self):
        # the classic quadratic shape is built: many spaces, then a character that fails
        inputs = regex_audit.hostile_inputs(r"\s+x", 0, 50)
        self.assertIn(" " * 49 + "\x00", inputs)
        # and the check catches a quadratic pattern (at a size where it is still cheap)
        slow, _ = regex_audit.screened_time(r"\s+and", 0, False, size=5_000, probe=500)
        fast, _ = regex_audit.screened_time(r"\s{1,20}and", 0, False, size=5_000, probe=500)
        self.assertGreater(slow, 10 * fast)

    @once_per_ci
    def test_every_pattern_is_linear(self):
        slow = []
        for (pattern, flags), (where, anchored) in sorted(regex_audit.find_patterns().items(),
                                                          key=lambda kv: kv[1]):
            took, sample = regex_audit.screened_time(pattern, flags, anchored, SIZE, keep=1)
            if took > LIMIT_SECONDS:
                slow.append("%s: %.2f s on %r... (%r)" % (where, took, sample, pattern[:60]))
        self.assertEqual(slow, [])


if __name__ == "__main__":
    unittest.main()
