"""bench/frontier_answer.py's box test and bench_answer's set names (issue 17)."""
from __future__ import annotations

import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, ROOT)

import bench_answer  # noqa: E402
import frontier_answer  # noqa: E402
from mini_rag.errors import MiniRagError  # noqa: E402


def pt(t, p, u, o):
    return {"threshold": t, "precision": p, "under_refusal": u, "over_refusal": o, "pass_rate": 0.0}


BOX = pt(0.6, 0.40, 0.60, 0.35)


class BestInBox(unittest.TestCase):
    CASES = [
        # (curve, expected threshold or None)
        ("none inside: each point breaks one bound",
         [pt(0.1, 0.50, 0.61, 0.10), pt(0.5, 0.55, 0.30, 0.36)], None),
        ("bounds are inclusive", [pt(0.2, 0.45, 0.60, 0.35)], 0.2),
        ("the best precision inside wins, not the best overall",
         [pt(0.1, 0.60, 0.70, 0.10), pt(0.3, 0.44, 0.50, 0.30), pt(0.4, 0.47, 0.40, 0.35)], 0.4),
        ("a tie in precision goes to the smaller threshold",
         [pt(0.3, 0.47, 0.50, 0.30), pt(0.2, 0.47, 0.55, 0.20)], 0.2),
    ]

    def test_cases(self):
        for name, curve, want in self.CASES:
            with self.subTest(name):
                got = frontier_answer.best_in_box(curve, BOX)
                self.assertEqual(None if got is None else got["threshold"], want)

    # Issue 30's box: over-refusal up to naive's + 0.05 (0.40 here), under-refusal still <= 0.60.
    SLACK_CASES = [
        ("over 0.36 is inside with the slack", [pt(0.5, 0.55, 0.30, 0.36)], 0.5),
        ("over 0.40 is the inclusive edge", [pt(0.5, 0.55, 0.30, 0.40)], 0.5),
        ("over 0.41 is outside", [pt(0.5, 0.55, 0.30, 0.41)], None),
        ("the slack does not loosen under-refusal", [pt(0.1, 0.50, 0.61, 0.10)], None),
        ("the slack admits a better point than the strict box",
         [pt(0.3, 0.44, 0.50, 0.30), pt(0.4, 0.49, 0.40, 0.39)], 0.4),
    ]

    def test_issue30_slack(self):
        slack = frontier_answer.BARS["issue30"]["over_slack"]
        self.assertEqual(slack, 0.05)
        for name, curve, want in self.SLACK_CASES:
            with self.subTest(name):
                got = frontier_answer.best_in_box(curve, BOX, slack)
                self.assertEqual(None if got is None else got["threshold"], want)


class SetNames(unittest.TestCase):
    def test_perturbed_sets_have_their_own_labels(self):
        got = bench_answer._sets(["squad+perturb", "cnli"])
        self.assertEqual([(label, spec) for label, spec, _ in got], [
            ("squad-fit-perturb", ("squad", "fit", "perturb")),
            ("squad-held-perturb", ("squad", "held", "perturb")),
            ("cnli-fit", ("cnli", "fit")),
            ("cnli-held", ("cnli", "held")),
        ])

    def test_unknown_set_is_an_error(self):
        for name in ("squad+typo", "trec", "gold+perturb"):
            with self.subTest(name):
                with self.assertRaises(MiniRagError):
                    bench_answer._sets([name])


if __name__ == "__main__":
    unittest.main()
