"""Derivational variants (mini_rag/query/derive.py): verb/noun pairs that the Snowball stemmer
keeps apart are related, both ways, by one rule; unrelated stems are not."""
import unittest

from mini_rag.text.analysis import Analyzer
from mini_rag.query.derive import RULES, variants

A = Analyzer()


def stem(word):
    (t,) = A.analyze(word)
    return t


class DeriveTest(unittest.TestCase):
    def test_english_pairs_meet(self):
        # Word pairs from a dictionary, stemmed by Snowball: each stem is a variant of the other.
        pairs = [("retain", "retention"), ("detain", "detention"), ("receive", "reception"),
                 ("reduce", "reduction"), ("submit", "submission"), ("permit", "permission"),
                 ("admit", "admission"), ("extend", "extension"), ("resolve", "resolution"),
                 ("describe", "description"), ("subscribe", "subscription"), ("assume", "assumption"),
                 ("notify", "notification"), ("verify", "verification"), ("identify", "identification"),
                 ("decide", "decision"), ("provide", "provision"), ("apply", "application"),
                 ("comply", "compliance"), ("conclude", "conclusion"), ("exclude", "exclusion"),
                 ("destroy", "destruction"), ("erase", "erasure"), ("close", "closure"),
                 ("disclose", "disclosure"), ("expose", "exposure"), ("fail", "failure"),
                 # a noun in -er (Snowball drops the -er) and its verb in British -erise
                 ("computer", "computerised"), ("character", "characterised")]
        for verb, noun in pairs:
            with self.subTest(verb=verb, noun=noun):
                v, n = stem(verb), stem(noun)
                self.assertNotEqual(v, n)                 # Snowball keeps them apart...
                self.assertIn(n, variants(v))             # ...the rules bring them together
                self.assertIn(v, variants(n))

    def test_unrelated_stems(self):
        # the -erise rule adds "eris" to any stem: a candidate no index holds ("dataeris"),
        # which callers drop (they keep the variants their index contains)
        table = [("data", ["dataeris"]), ("log", ["logeris"]),
                 ("contain", ["containeris"]),                        # false friend "content" excluded
                 ("id", ["ideris"])]                                  # too short a base for the others
        for s, expected in table:
            with self.subTest(stem=s):
                self.assertEqual(variants(s), expected)

    def test_rules_are_pairs_of_endings(self):
        # an empty ending is a suffix added to the whole stem: comput -> computeris
        for a, b in RULES:
            self.assertTrue(b and a != b)
        self.assertIn("comput", variants("computeris"))
        self.assertIn("computeris", variants("comput"))


if __name__ == "__main__":
    unittest.main()
