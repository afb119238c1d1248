"""The scorer's fast paths (issue 32 item 1) give the verdicts of the slow ones.

1. ``_token_in``: whether a token is one of tokens(text) without tokenizing the text; cases
   worked out by hand from _TOKEN_RX (a word is a maximal run of letters; a number a maximal
   run of digits joined by "." or ","; tokens() drops commas).
2. ``unsupported_tokens`` without a cache (the lookup) against the set path (a cache), and
   ``terms_in`` against ``len(terms & content_terms(text))``, on hand cases and seeded
   random texts.
3. The refusal token's fast path and the [scorer] patterns left out of the reading when none
   can match: the same flags and reason as ``read_refusal`` with the patterns.
"""
import random
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import score_eval  # noqa: E402

TOKEN_IN = [
    # (text, token, expected): expected from reading _TOKEN_RX by hand
    ("Within 48 hours.", "48", True),
    ("Within 148 hours.", "48", False),        # inside a longer number
    ("Version 1.48 ships", "48", False),       # after "1.": one token 1.48
    ("Version 1.48 ships", "1.48", True),
    ("Version 1.48.2 ships", "1.48", False),   # continues with ".2"
    ("Ends at 48. Then", "48", True),          # a full stop without a digit after it
    ("x.5 and .5", "5", True),                 # "." after a letter / at the start
    ("1..5", "5", True),                       # "1", then "5"
    ("abc5", "5", True),                       # letters and digits are separate tokens
    ("abc5", "abc", True),
    ("policies apply", "policy", False),       # a word is a maximal run of letters
    ("policy_holder", "policy", True),         # "_" is no letter
    ("the policy's text", "policy", True),
    ("repolicy", "policy", False),
    ("", "policy", False),
    ("1,000 days", "1000", None),              # a comma: tokens() decides
    ("1,000 days", "days", True),              # words are not affected by commas
]


class TokenIn(unittest.TestCase):
    def test_table(self):
        for text, tok, want in TOKEN_IN:
            with self.subTest(text=text, tok=tok):
                self.assertIs(score_eval._token_in(text.lower(), tok), want)
                if want is not None:      # the same as the tokens() set
                    self.assertEqual(want, tok in score_eval.tokens(text))


class SameVerdicts(unittest.TestCase):
    def test_unsupported_tokens_hand(self):
        cases = [
            ("Within 48 hours the refund is paid.", ["Refunds are paid within 48 hours."], ["refund"]),
            ("Pay 1,000 dollars.", ["Pay a fee of 1000 dollars."], []),
            ("Pay 1000 dollars.", ["Pay a fee of 1,000 dollars."], []),
            ("Pay 100 dollars.", ["Pay a fee of 1,000 dollars."], ["100"]),
            ("Keep records 7 years.", ["Records are kept for 7 years.", "Other text."], ["keep"]),
            ("Caf\u00e9 hours 9.", ["The caf\u00e9 opens at 9 hours."], []),     # non-ASCII: the set path
        ]
        for claim, texts, want in cases:
            with self.subTest(claim=claim):
                self.assertEqual(score_eval.unsupported_tokens(claim, texts), want)
                self.assertEqual(score_eval.unsupported_tokens(claim, texts, {}), want)

    def test_random_texts(self):
        rng = random.Random(32)
        alphabet = "ab1.,2 x-_;:'\u00e9\n9sS"
        words = ["1,000", "1000", "1.5", "5", "48", "hours", "hour", "policy", "policies", "class",
                 "classes", "a1", "1a", "x.5", "1..5", "2.3.4", "the", "not", "bus"]
        for _ in range(20000):
            if rng.random() < 0.5:
                text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
                claim = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
            else:
                text = " ".join(rng.choice(words) + rng.choice(["", ",", ".", " ", "-"]) for _ in range(rng.randint(0, 6)))
                claim = " ".join(rng.choice(words) + rng.choice(["", ",", ".", " "]) for _ in range(rng.randint(0, 6)))
            texts = [text] if rng.random() < 0.7 else [text, "".join(rng.choice(alphabet) for _ in range(8))]
            self.assertEqual(score_eval.unsupported_tokens(claim, texts), score_eval.unsupported_tokens(claim, texts, {}),
                             (claim, texts))
            terms = score_eval.content_terms(text)
            self.assertEqual(score_eval.terms_in(terms, score_eval.tokens(claim)),
                             len(terms & score_eval.content_terms(claim)), (claim, text))

    def test_terms_in_hand(self):
        # "what", "is", "the", "for" are stopwords; "classes" folds to "classe" (a final s)
        terms = score_eval.content_terms("What is the refund policy for 2024 classes?")
        self.assertEqual(terms, frozenset({"refund", "policy", "2024", "classe"}))
        self.assertEqual(score_eval.terms_in(terms, score_eval.tokens("Refunds follow the policy; classes of 2024.")), 4)


class RefusalFastPath(unittest.TestCase):
    def scorer(self, rules=None):
        gold = score_eval.Gold()
        gold.qids.append("q1")
        gold.index["q1"] = 0
        gold.base.append(0)
        return score_eval.Scorer(gold, [5], "not in context", None, rules)

    def test_same_as_reader(self):
        cutoff = score_eval._compile_patterns([r"\bmy training data\b", r"(?m)^as of my\b"], "t", "cutoff", [])
        rules = score_eval.Rules(cutoff=cutoff)
        claims = ["not in context", "Not In Context", "not in context.", "**Not in context.**",
                  "The refund is paid within 48 hours.", "I cannot answer that from my training data.",
                  "I cannot say.\nAs of my last update it was 5.", "I don't know."]
        for claim in claims:
            for r in (None, rules):
                with self.subTest(claim=claim, rules=r is not None):
                    sc = self.scorer(r)
                    bits = sc.read_claim(0, claim, True)
                    kind, reason, pat = score_eval.read_refusal(claim, "not in context", sc.extra_declines)
                    self.assertEqual(bool(bits & score_eval.F_REFUSED), kind == score_eval.KIND_REFUSAL)
                    self.assertEqual(bool(bits & score_eval.F_PARTIAL), kind == score_eval.KIND_PARTIAL)
                    want = reason if pat == 0 else "%s [pattern %d]" % (reason, pat)
                    self.assertEqual(sc.refusal_reason.get(0, ""), want)


if __name__ == "__main__":
    unittest.main()
