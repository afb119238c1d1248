"""Tests for mini_rag.text.stem: the Snowball English (Porter2) stemmer, version 3.1.x.

The main test compares every line of the official vocabulary
(../shared/data/snowball/english/voc.txt -> output.txt, 42,649 words) with our
output; it skips with a message when the data folder is absent.  The hand tables
run without data: each expected stem is derived from the published rules (the
rule is named in the comment) or is a spot check listed in snowball/SOURCE.md.
"""

from __future__ import annotations

import doctest
import importlib
import os
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mini_rag.text.stem import ALGORITHM, Stemmer, stem  # noqa: E402


def data_dir() -> Path:
    env = os.environ.get("MINI_RAG_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def read_lines(path: Path):
    """One entry per line, keeping empty lines (a stem may be empty in other lists)."""
    text = path.read_text(encoding="ascii")
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n")


# (word, expected stem, why)
HAND_TABLE = [
    # Spot checks from snowball/SOURCE.md (english/ column).
    ("consign", "consign", "spot check"),
    ("consigned", "consign", "spot check"),
    ("generously", "generous", "spot check: gener R1 exception"),
    ("knightly", "knight", "spot check: li after valid li-ending"),
    ("caresses", "caress", "spot check: sses -> ss"),
    ("ponies", "poni", "spot check: ies -> i"),
    ("dying", "die", "spot check: non-vowel + ying -> ie"),
    ("skies", "sky", "spot check: exception"),
    ("news", "news", "spot check: invariant"),
    ("gently", "gentl", "spot check: exception"),
    ("succeed", "succeed", "spot check: -eed exception"),
    ("university", "universiti", "spot check: univers R1 exception (3.0)"),
    ("evening", "evening", "spot check: -ing exception (3.0)"),
    # Step 1a examples in the algorithm description.
    ("ties", "tie", "ies after one letter -> ie"),
    ("cries", "cri", "ies after more than one letter -> i"),
    ("gas", "gas", "s kept: the only vowel is right before s"),
    ("this", "this", "s kept: the only vowel is right before s"),
    ("gaps", "gap", "s deleted"),
    ("kiwis", "kiwi", "s deleted"),
    # Step 1b and 1c examples in the description.
    ("hopping", "hop", "ing deleted, hopp undoubled"),
    ("hoped", "hope", "ed deleted, hop is short -> add e"),
    ("added", "add", "no undoubling after exactly a (3.0)"),
    ("cry", "cri", "y -> i after non-first non-vowel"),
    ("by", "by", "two letters: unchanged"),
    ("say", "say", "y after a vowel is Y, kept"),
    # Snowball 3.x changes listed in SOURCE.md.
    ("geologists", "geolog", "-ogist -> -og (3.0)"),
    ("internal", "internal", "inter R1 exception (3.1)"),
    ("pasted", "paste", "past R1 exception + short syllable (3.0)"),
    ("lateral", "lateral", "later R1 exception (3.0)"),
    ("skis", "ski", "exception restored (3.1)"),
    ("vying", "vie", "non-vowel + ying -> ie (3.0)"),
    ("hying", "hie", "non-vowel + ying -> ie (3.0)"),
    ("organization", "organiz", "organ R1 exception (3.0)"),
    ("emergency", "emergenc", "emerg R1 exception (3.0)"),
    # Apostrophes, and words of one or two characters.
    ("there's", "there", "step 0 removes 's"),
    ("'s'", "s", "initial ' removed, then step 0 removes the final '"),
    ("'''", "'", "initial ' removed, then step 0 removes one '"),
    ("''", "''", "two characters: unchanged"),
    ("a", "a", "one character: unchanged"),
    ("as", "as", "two characters: unchanged"),
]


class HandTableTest(unittest.TestCase):
    def test_hand_table(self):
        for word, expected, why in HAND_TABLE:
            with self.subTest(word=word, why=why):
                self.assertEqual(stem(word), expected)

    def test_stemmer_cache_matches_stem(self):
        for size in (0, 1, 3, 1000):
            s = Stemmer(cache_size=size)
            for _ in range(2):  # the second pass is served from the cache
                for word, expected, why in HAND_TABLE:
                    with self.subTest(cache_size=size, word=word):
                        self.assertEqual(s(word), expected)
                        self.assertEqual(s.stem(word), expected)
            with self.subTest(cache_size=size, check="bounded"):
                self.assertLessEqual(len(s._cache), size)

    def test_negative_cache_size_rejected(self):
        with self.assertRaises(ValueError) as ctx:
            Stemmer(cache_size=-1)
        self.assertEqual(str(ctx.exception), "cache_size must be >= 0, got -1")

    def test_algorithm_names_version(self):
        self.assertIn("3.1", ALGORITHM)
        self.assertIn("d9be6bbdc03924eabd96fa601f262c9de37805f0", ALGORITHM)


class VocabularyTest(unittest.TestCase):
    """Every word of the official Snowball English (current) vocabulary."""

    @classmethod
    def setUpClass(cls):
        folder = data_dir() / "snowball" / "english"
        if not (folder / "voc.txt").is_file() or not (folder / "output.txt").is_file():
            raise unittest.SkipTest(
                f"Snowball vocabulary not found in {folder} "
                "(set MINI_RAG_DATA to the folder that holds snowball/english/voc.txt)")
        cls.words = read_lines(folder / "voc.txt")
        cls.stems = read_lines(folder / "output.txt")

    def test_line_counts(self):
        # SOURCE.md: 42,649 lines in each file.
        self.assertEqual(len(self.words), 42649)
        self.assertEqual(len(self.stems), 42649)

    def test_every_word(self):
        mismatches = [(i + 1, w, want, stem(w))
                      for i, (w, want) in enumerate(zip(self.words, self.stems))
                      if stem(w) != want]
        shown = "\n".join(f"voc.txt:{n}: {w!r}: expected {want!r}, got {got!r}"
                          for n, w, want, got in mismatches[:25])
        self.assertEqual(len(mismatches), 0, f"{len(mismatches)} mismatches\n{shown}")

    def test_every_word_through_cache(self):
        s = Stemmer(cache_size=1000)  # small: exercises the clear-when-full path
        bad = [w for w, want in zip(self.words, self.stems) if s(w) != want]
        self.assertEqual(bad[:25], [])


class DocstringExamplesTest(unittest.TestCase):
    def test_doctests(self):
        result = doctest.testmod(importlib.import_module("mini_rag.text.stem"), verbose=False)
        self.assertGreater(result.attempted, 0)
        self.assertEqual(result.failed, 0)


if __name__ == "__main__":
    unittest.main()
