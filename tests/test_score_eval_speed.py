"""The scorer's fast paths (issue 32 item 1) give the verdicts of the slow ones.

1. ``_token_in``: whether a token is one of tokens(text) without tokenizing the text; cases
   worked out by hand from _TOKEN_RX (a word is a maximal run of letters; a number a maximal
   run of digits joined by "." or ","; tokens() drops commas).
2. ``unsupported_tokens`` without a cache (the lookup) against the set path (a cache), and
   ``terms_in`` against ``len(terms & content_terms(text))``, on hand cases and seeded
   random texts.
3. The refusal token's fast path and the [scorer] patterns left out of the reading when none
   can match: the same flags and reason as ``read_refusal`` with the patterns.
4. Issue 32's third round: ``tokens`` on ASCII text (byte translations, no regex) against
   _TOKEN_RX; ``_copied`` (a claim copied from a text: nothing unsupported) and the word set of
   ``unsupported_tokens`` against the set definition; ``_decline_rxs`` without a trigger word;
   ``json_row``'s direct scan against ``json.loads``; ``_retrieval``'s order shortcut (scores
   that strictly decrease) and its memo against the measures of the sorted ranking.
5. Issue 32's fourth round: aggregate's counted sums (``_counted_sums``: P@K from the number of
   items per hit count) against math.fsum over the listed values, and aggregate's P@K /
   Success@K against the per-item measures; the seed's recall@K from the position of the last
   gold citation against "every gold citation in ret[:k]"; read_gold's one-substring and
   zero/one-citation shortcuts against the general rule; ``_retrieval`` told whether the ids
   are distinct (judge knows it from its set of retrieved ids) against finding it out;
   ``gc_paused`` restores the collector's state (also after an error), and a scored run leaves
   next to no cyclic garbage for it.
6. Issue 32's fifth round: ``json_row``'s surrogate check only for rows with a backslash;
   ``plain_answer`` (an answer the refusal reader would read as one, found without it) against
   ``read_refusal``; ``copied_from`` before tokenizing the claim; ``terms_in_text`` against
   ``terms_in`` over tokens(); ``content_terms``' ASCII path and ``has_content_terms`` against
   the definition; ``_retrieval``'s one-gold-id rank against relevant_positions; judge_extra's
   relevance for a refused row (only whether q has a term) against the full reading.
"""
import json
import math
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



def _gold_of(n):
    """A Gold of ``n`` bare items ``q0``, ``q1``, ... (no answers, no citations)."""
    gold = score_eval.Gold()
    for k in range(n):
        gold.qids.append("q%d" % k)
        gold.index["q%d" % k] = k
        gold.base.append(0)
    return gold

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
        return score_eval.Scorer(_judged_gold(1), [5], "not in context", None, rules)

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
                    resp = sc.respond(claim, None, [], None)
                    bits = resp.refusal.flags
                    kind, reason, pat = score_eval.read_refusal(claim, "not in context", sc.reader.declines)
                    self.assertEqual(resp.refusal.kind, kind)
                    self.assertEqual(bool(bits & score_eval.F_REFUSED), kind == score_eval.KIND_REFUSAL)
                    self.assertEqual(bool(bits & score_eval.F_PARTIAL), kind == score_eval.KIND_PARTIAL)
                    want = reason if pat == 0 else "%s [pattern %d]" % (reason, pat)
                    self.assertEqual(resp.refusal.reason, want)
                    sc.judge(0, resp, [], None, None, None, None, True)      # the reason the items file shows
                    self.assertEqual(sc.refusal_reason.get(0, ""), want)


def _regex_tokens(text):
    found = set(score_eval._TOKEN_RX.findall(text.lower()))
    return {t.replace(",", "") for t in found} if "," in text else found


def _set_unsupported(claim, texts):
    """The definition: wanted tokens of the claim in none of tokens(text)."""
    support = set().union(*(_regex_tokens(t) for t in texts))
    return sorted(t for t in _regex_tokens(claim) if (t[0].isdigit() or (len(t) >= 3 and t not in score_eval.STOPWORDS))
                  and t not in support)


TOKENS = [
    # (text, expected tokens): by hand from _TOKEN_RX (words: runs of letters; numbers: digit runs
    # joined by single "." or "," between digits; commas dropped when the text has one)
    ("Within 48 hours.", {"within", "48", "hours"}),
    ("Pay 1,000.50 now, ok", {"pay", "1000.50", "now", "ok"}),
    ("v1.2.3 and 1..5 and .5 and 7.", {"v", "1.2.3", "and", "1", "5", "7"}),
    ("abc5def_ghi", {"abc", "5", "def", "ghi"}),
    ("don't stop\x1cnow", {"don", "t", "stop", "now"}),
    ("", set()),
    ("...,,,", set()),
    ("Caf\u00e9 2024", {"caf\u00e9", "2024"}),            # not ASCII: the regex
    ("\u212a2", {"k", "2"}),                                # Kelvin sign: lower-cases to ASCII "k"
]

COPIED = [
    # (claim, text, expected): True only when the claim, its ends stripped, sits in the text
    # between characters that cannot continue its first and last token
    ("Refunds are paid within 48 hours.", "Refunds are paid within 48 hours. Then more.", True),
    ("are paid", "Refunds are paid within", True),
    ("re paid", "Refunds are paid within", False),          # "re" is inside "are"
    ("paid with", "Refunds are paid within", False),        # "with" goes on to "within"
    ("within 48", "within 48.5 hours", False),              # the number goes on: 48.5
    ("within 48", "within 48. Then", False),                # "." after a digit: not proven
    ("within 48", "within 48 hours", True),
    ("5 hours", "within 1.5 hours", False),                 # the number starts earlier: 1.5
    ("hours", "hours5", True),                              # a digit does not continue a word
    ("**Hours!**", "Open hours.", True),
    ("...", "Open hours.", False),                          # no token: nothing to prove
    ("caf\u00e9", "caf\u00e9", False),                       # not ASCII: not proven here
]


class ThirdRound(unittest.TestCase):
    def test_tokens_table(self):
        for text, want in TOKENS:
            with self.subTest(text=text):
                self.assertEqual(score_eval.tokens(text), want)
                self.assertEqual(_regex_tokens(text), want)

    def test_tokens_random(self):
        rng = random.Random(320)
        alphabet = "aZ9.,_ -'\t\n\x1c\x0b!;" + "0123456789" + "\u212a\u00e9"
        for _ in range(20000):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
            self.assertEqual(score_eval.tokens(text), _regex_tokens(text), repr(text))

    def test_copied_table(self):
        for claim, text, want in COPIED:
            with self.subTest(claim=claim, text=text):
                self.assertIs(score_eval.copied_from(claim, [text]), want)
                if want:        # then nothing is unsupported, by the definition too
                    self.assertEqual(_set_unsupported(claim, [text]), [])

    def test_unsupported_fast_and_slow(self):
        rng = random.Random(321)
        words = ["1,000", "1000", "1.5", "5", "48", "48.", "hours", "Hour", "policy", "policies", "a1", "1a",
                 "x.5", "1..5", "2.3.4", "the", "not", "refund", "caf\u00e9", "_id"]
        for _ in range(20000):
            text = " ".join(rng.choice(words) + rng.choice(["", ",", ".", " ", "-"]) for _ in range(rng.randint(0, 12)))
            a = rng.randint(0, len(text))
            b = rng.randint(a, len(text))
            claim = rng.choice(["", "**", "The "]) + text[a:b] + rng.choice(["", ".", "!", " 7", "s"])
            texts = [text] if rng.random() < 0.7 else [text, "Other text 1,000."]
            want = _set_unsupported(claim, texts)
            self.assertEqual(score_eval.unsupported_tokens(claim, texts), want, (claim, texts))
            self.assertEqual(score_eval.unsupported_tokens(claim, texts, {}), want, (claim, texts))

    def test_decline_words(self):
        groups = score_eval._decline_groups()
        for low in ["the refund is paid within 48 hours.", "i cannot say.", "it isn't stated", "nicht bekannt",
                    "unfortunately, no", "as an ai, i", "policy (training) records", "n\u2019t", ""]:
            with self.subTest(low=low):
                words = set(low.translate(score_eval._SPLIT_TABLE).split())
                if "n't" in low or "n\u2019t" in low:
                    words.add("not")
                want = (tuple(rx for trig, rx in groups if not trig.isdisjoint(words)),
                        not score_eval._DISCLAIMER_TRIGGERS.isdisjoint(words))
                self.assertEqual(score_eval._decline_rxs(low), want)

    def test_cite_trigger_characters(self):
        # ResponseReader.citations looks for these characters with str.__contains__ instead of _CITE_TRIGGER
        for c in range(0x3100):
            ch = chr(c)
            if 0xD800 <= c < 0xE000:
                continue
            self.assertEqual(bool(score_eval._CITE_TRIGGER.search(ch)), ch in score_eval._CITE_TRIGGER_CHARS, repr(ch))
        gold = score_eval.Gold()
        gold.qids.append("q1")
        gold.index["q1"] = 0
        gold.base.append(0)
        sc = score_eval.Scorer(gold, [5], "not in context", None)
        for claim, want in (("Refunds take 48 hours.", None), ("Refunds take 48 hours [1].", ["a"]),
                            ("Refunds take 48 hours (doc a).", None), ("Sources:\n1. a", ["a"])):
            with self.subTest(claim=claim):
                got = sc.respond(claim, None, ["a", "b"], {})
                self.assertEqual(got.text_citations, want)

    def test_json_row(self):
        for text in ['{"a": 1, "b": [1.5, "x"]}', '{"a": 1}\n', '{"a": 1}  \r\n', '{"a": {"b": null}} ',
                     '[1, 2]', '"x"', ' {"a": 1}']:
            with self.subTest(text=text):
                self.assertEqual(score_eval.json_row(text), json.loads(text))
        for text in ['{"a": 1} {"b": 2}', '{"a": 1', '{"a": tru}', '{"a": 1}\x0b', '{']:
            with self.subTest(text=text):
                with self.assertRaises(ValueError) as got:
                    score_eval.json_row(text)
                with self.assertRaises(ValueError) as want:
                    json.loads(text)
                self.assertEqual(str(got.exception), str(want.exception))

    def test_retrieval_order_and_memo(self):
        gold = _gold_of(3)
        sc = score_eval.Scorer(gold, [1, 3, 5], "not in context", None)
        cases = [  # (gold ids, retrieved, scores): by hand, RR and R@3 of the sorted ranking
            (("b",), ["a", "b", "c"], [0.9, 0.5, 0.1], 0.5, 1.0),        # strictly decreasing: as given
            (("b",), ["a", "b", "c"], [0.1, 0.5, 0.9], 0.5, 1.0),        # reversed: c, b, a
            (("a",), ["a", "b", "c"], [0.5, 0.5, 0.1], 0.5, 1.0),        # a tie: the larger id first (b, a)
            (("a", "c"), ["a", "b", "c"], [0.5, 0.5, 0.5], 1.0, 1.0),    # all tied: c, b, a
            (("c",), ["a", "b", "c", "d"], None, 1 / 3, 1.0),            # no scores: the trace's order
        ]
        for rel, ret, scores, rr, r3 in cases * 2:       # twice: the second time from the memo
            with self.subTest(rel=rel, scores=scores):
                sc._retrieval(0, rel, ret, scores, True)
                self.assertAlmostEqual(sc.rr[0], rr)
                self.assertAlmostEqual(sc.rec[3][0], r3)
                ranked = [d for _, d in sorted(zip(scores, ret), reverse=True)] if scores else ret
                positions, gains = score_eval.relevant_positions(ranked, rel)
                for k in (1, 3, 5):
                    idcg = score_eval.ideal_dcg([1] * len(rel), k)
                    self.assertEqual(sc.ndcg[k][0], score_eval.measure_ndcg(positions, gains, k, idcg))
                    self.assertEqual(sc.rrk[k][0], score_eval.measure_rr(positions, k))
                    self.assertEqual(sc.hits[k][0], score_eval.hits_at(positions, k))


COUNTED = [  # value -> count: the multisets _counted_sums adds without listing them
    {},
    {0.0: 5},
    {0.2: 3, 0.4: 1, 0.0: 7},                            # P@5: 1/5 is not a binary fraction
    {0.1: 10, 0.7: 3},                                   # fsum([0.1] * 10) == 1.0, sum() would not be
    {1 / 3: 1000001, 2 / 3: 7, 1.0: 2},
    {1e-300: 3, 1e-17: 2, 1.0: 1},                       # far apart: exact sums keep the small ones
    {0.6309297535714575: 12345, 0.5: 17, 0.43067655807339306: 99},    # nDCG values
]


class FourthRound(unittest.TestCase):
    def test_counted_sums_table(self):
        for counts in COUNTED:
            with self.subTest(counts=counts):
                vals = [v for v, c in counts.items() for _ in range(c)]
                want = (math.fsum(vals), math.fsum(v * v for v in vals))
                got = score_eval._counted_sums(counts)
                self.assertEqual(got, want)
                self.assertEqual([type(x) for x in got], [float, float])

    def test_counted_sums_random(self):
        rng = random.Random(324)
        for _ in range(300):
            k = rng.choice([1, 3, 5, 10, 7])
            vals = [rng.randint(0, k) / k for _ in range(rng.randint(1, 400))]
            counts = {}
            for v in vals:
                counts[v] = counts.get(v, 0) + 1
            self.assertEqual(score_eval._counted_sums(counts),
                             (math.fsum(vals), math.fsum(map(lambda v: v * v, vals))), (k, counts))

    def test_aggregate_p_and_success(self):
        rng = random.Random(325)
        gold = score_eval.Gold()
        n = 500
        for i in range(n):
            gold.qids.append("q%d" % i)
            gold.index["q%d" % i] = i
            gold.base.append(score_eval.F_GOLD if rng.random() < 0.8 else 0)
        sc = score_eval.Scorer(gold, [3, 5], "not in context", None)
        for i in range(n):
            for k in (3, 5):
                sc.hits[k][i] = rng.randint(0, k) if gold.base[i] else 0
        sc.flags = score_eval.array("Q", gold.base)
        for idx in (range(n), [i for i in range(n) if i % 3], [1], []):
            out = score_eval.aggregate(sc, idx, True)
            gidx = [i for i in idx if gold.base[i] & score_eval.F_GOLD]
            for k in (3, 5):
                with self.subTest(k=k, items=len(idx)):
                    if not gidx:
                        self.assertIsNone(out["P@%d" % k]["value"])
                        continue
                    vals = [score_eval.measure_p(sc.hits[k][i], k) for i in gidx]
                    total = math.fsum(vals)
                    self.assertEqual(out["P@%d" % k], score_eval._entry(total / len(gidx), None, len(gidx),
                                                                        score_eval._sample_ci(vals, total)))
                    c = int(sum(score_eval.measure_success(sc.hits[k][i]) for i in gidx))
                    self.assertEqual(out["Success@%d" % k], score_eval._entry(c / len(gidx), c, len(gidx),
                                                                              score_eval.wilson(c, len(gidx))))

    def test_seed_recall(self):
        gold = score_eval.Gold()
        cases = [  # (gold citations, retrieved_ids)
            ((), ["a", "b"]), ((), []), (("a",), []), (("a",), ["a"]), (("c",), ["a", "b", "c"]),
            (("c",), ["a", "b", "c", "c"]), (("c", "a"), ["a", "b", "c"]), (("a", "b"), ["b", "x", "y", "a"]),
            (("a", "z"), ["a", "b"]), (("a",), ["b", "a", "a"]), (("d",), list("abcdefgh")),
        ]
        for n, (rel, _) in enumerate(cases):
            gold.qids.append("q%d" % n)
            gold.index["q%d" % n] = n
            gold.base.append(score_eval.F_ANS)
            gold.rel.append(rel)
            gold.subs.append(None)
            gold.expected.append(0)
        ks = [2, 1, 3, 4, 10]
        sc = score_eval.Scorer(gold, ks, "not in context", None)
        for n, (rel, ret) in enumerate(cases):
            sc.judge(n, sc.respond("an answer", None, ret, None), ret, None, None, None, None, True)
            for k in ks:
                with self.subTest(rel=rel, ret=ret, k=k):
                    want = all(c in ret[:k] for c in rel)
                    self.assertEqual(sc.seed_rec[k][n], want)
                    if k == 2:
                        self.assertEqual(bool(sc.flags[n] & score_eval.F_REC), want)

    def test_gold_subs_and_rel(self):
        import tempfile
        cases = [  # (gold_claim_substr, gold_citations)
            (["Encryption Manager"], ["a"]), (["abcd"], []), (["ABCDE"], ["a", "b"]), (["x", "Longer one"], ["a", "a"]),
            ([], None), (None, ["b", "a", "b"]), (["\u0130stanbul"], []), (["  ab  "], ["c"]), ([""], []),
        ]
        with tempfile.TemporaryDirectory() as tmp:
            path = str(Path(tmp) / "gold.jsonl")
            with open(path, "w", encoding="utf-8") as fh:
                for n, (subs, cits) in enumerate(cases):
                    row = {"qid": "q%d" % n, "answerable": True}
                    if subs is not None:
                        row["gold_claim_substr"] = subs
                    if cits is not None:
                        row["gold_citations"] = cits
                    fh.write(json.dumps(row) + "\n")
            gold = score_eval.read_gold(path, "category", score_eval._Errors(20), [])
        for n, (subs, cits) in enumerate(cases):
            with self.subTest(subs=subs, cits=cits):
                want = True if subs == [] else None if subs is None else \
                    tuple(s for s in (x.lower() for x in subs) if len(s) >= 5)
                self.assertEqual(gold.subs[n], want)
                self.assertEqual(gold.rel[n], tuple(dict.fromkeys(cits or ())))
                self.assertIs(type(gold.rel[n]), tuple)

    def test_strictly_decreasing_table(self):
        cases = [([], True), ([1.0], True), ([3, 2, 1], True), ([3, 2, 2], False), ([3, 1, 2], False),
                 ([1, 2, 3], False), ([0.5, 0.5], False), ([2, 1, 0, -1], True), ([5, 4, 6, 3], False)]
        for values, want in cases:
            with self.subTest(values=values):
                self.assertIs(score_eval.strictly_decreasing(values), want)

    def test_measure_memo_is_bounded(self):
        gold = _gold_of(1)
        sc = score_eval.Scorer(gold, [1, 3], "not in context", None)
        saved = score_eval.MEASURE_MEMO_LIMIT
        score_eval.MEASURE_MEMO_LIMIT = 3
        try:
            sizes = []
            for n in range(1, 8):        # rankings with the gold id at positions 1..7: all different
                ret = ["x%d" % j for j in range(n - 1)] + ["g"]
                sc._retrieval(0, ("g",), ret, None, True)
                sizes.append(len(sc.measure_memo))
                self.assertAlmostEqual(sc.rr[0], 1.0 / n)
            self.assertEqual(sizes, [1, 2, 3, 1, 2, 3, 1])
        finally:
            score_eval.MEASURE_MEMO_LIMIT = saved

    def test_retrieval_told_distinct(self):
        # A repeated id counts once, at its best rank: the measures of the ranking with its
        # repeats are those of the same ranking deduplicated by hand, given with no scores.
        gold = _gold_of(2)
        ks = [1, 3, 5]
        told = score_eval.Scorer(gold, ks, "not in context", None)
        found = score_eval.Scorer(gold, ks, "not in context", None)
        cases = [  # (gold ids, retrieved, scores)
            (("b",), ["a", "b", "c"], [0.9, 0.5, 0.1]), (("b",), ["a", "a", "b"], None),
            (("b",), ["a", "a", "b"], [0.9, 0.8, 0.7]), (("c", "a"), ["c", "b", "c", "a"], [0.1, 0.5, 0.9, 0.2]),
            (("a",), ["b", "b", "b", "a"], [0.5, 0.5, 0.5, 0.5]), (("x",), ["a", "b"], None), (("a",), [], None),
        ]
        for rel, ret, scores in cases:
            with self.subTest(rel=rel, ret=ret, scores=scores):
                told._retrieval(0, rel, ret, scores, len(set(ret)) == len(ret))
                strictly = scores is None or all(a > b for a, b in zip(scores, scores[1:]))
                ranked = ret if strictly else [d for _, d in sorted(zip(scores, ret), reverse=True)]
                found._retrieval(0, rel, list(dict.fromkeys(ranked)), None, True)
                self.assertEqual(told.rr[0], found.rr[0])
                for k in ks:
                    self.assertEqual([told.hits[k][0], told.rec[k][0], told.ndcg[k][0], told.rrk[k][0]],
                                     [found.hits[k][0], found.rec[k][0], found.ndcg[k][0], found.rrk[k][0]])

    def test_gc_paused(self):
        import gc
        for was in (True, False):
            with self.subTest(was=was):
                (gc.enable if was else gc.disable)()
                try:
                    with score_eval.gc_paused():
                        self.assertFalse(gc.isenabled())
                    self.assertIs(gc.isenabled(), was)
                    with self.assertRaises(KeyError):
                        with score_eval.gc_paused():
                            raise KeyError("x")
                    self.assertIs(gc.isenabled(), was)
                finally:
                    gc.enable()

    def test_no_cycles_left(self):
        import contextlib
        import gc
        import io
        gc.collect()
        seed = ROOT / "examples" / "seed"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            score_eval.main(["--gold", str(seed / "gold.jsonl"), "--trace", str(seed / "trace.jsonl"), "--quiet",
                             "--gates-file", str(ROOT / "gates.toml"), "--dataset", "seed"])
        self.assertTrue(gc.isenabled())
        self.assertLess(gc.collect(), 500)      # the argparse parser and the like, not per-row garbage


def _slow_terms(text):
    """content_terms by its definition: content_term of every token that is not a stopword."""
    return frozenset(t for t in map(score_eval.content_term, _regex_tokens(text) - score_eval.STOPWORDS) if t)


def _judged_gold(n):
    """_gold_of(n) with what judge reads of each item: no gold citations, substrings or expected decision."""
    gold = _gold_of(n)
    for _ in range(n):
        gold.rel.append(())
        gold.subs.append(None)
        gold.expected.append(0)
        gold.cat.append(0)
    gold.categories.append(score_eval.NO_CATEGORY)
    return gold


def _refused_row(sc, i, q, ret):
    """judge + judge_extra of a row that refuses with the token (no answer relevance)."""
    resp = sc.respond("not in context", [], ret, {})
    sc.judge(i, resp, ret, None, {}, None, None, True)
    sc.judge_extra(i, resp, ret, {}, None, None, (q, None, None, None))


PLAIN = [
    # (text, expected plain_answer with the token "not in context"): True only for an ASCII
    # answer with no decline trigger word that cannot be the token
    ("The refund is paid within 48 hours.", True),
    ("Key notice account invoice vendor contract 813 account policy.", False),   # "not" in "notice", short
    ("Key notice account invoice vendor contract 813 account policy, renewal period of ninety days.", True),
    ("I cannot say.", False),                      # decline words
    ("It is not stated.", False),
    ("It isn't stated in the records at all, as far as the text shows.", False),   # "n't"
    ("n/a", False),                                # a trigger with "/"
    ("Refunds take i\x1cdays.", False),             # \x1c splits words for str.split(): "i" is a trigger
    ("Caf\u00e9 hours are 9 to 5.", False),         # not ASCII: the reader decides
    ("not in context", False),                     # the token
    ("**Not in context.**", False),
    ("x" * (score_eval.REFUSAL_WINDOW + 1), False),  # past the reader's window
    ("", True),                                    # empty: read_refusal's "empty" case, an answer
]


class FifthRound(unittest.TestCase):
    def test_json_row_surrogates(self):
        # a lone surrogate escape cannot be written out: JsonLimit; a pair, other escapes and
        # rows without a backslash are read as json.loads reads them
        for text, lone in (('{"a": "x"}', False), ('{"a": "\\n\\"q\\""}', False), ('{"a": "\\u00e9"}', False),
                           ('{"a": "\\ud83d\\ude00"}', False), ('{"a": "\\ud800"}', True),
                           ('{"a": "x\\\\ud800"}', False), ('{"a": ["\\udfff", 1]}', True)):
            with self.subTest(text=text):
                if lone:
                    with self.assertRaises(score_eval.JsonLimit):
                        score_eval.json_row(text)
                else:
                    self.assertEqual(score_eval.json_row(text), json.loads(text))

    def test_plain_answer_table(self):
        tok = "not in context"
        for text, want in PLAIN:
            with self.subTest(text=text):
                self.assertIs(score_eval.plain_answer(text, text.lower(), tok, "not"), want)
                if want:
                    self.assertEqual(score_eval.read_refusal(text, tok), (score_eval.KIND_ANSWER, "", 0))

    def test_plain_answer_random(self):
        rng = random.Random(3205)
        words = ["refund", "paid", "not", "no", "i", "cannot", "don't", "n/a", "unknown", "in", "context",
                 "unanswerable", "48", "hours", "only", "sorry", "policy", "**", "Answer:", "\x1c", "\u2019t"]
        for _ in range(6000):
            tok = rng.choice(["not in context", "unanswerable", "no answer here"])
            text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 14))).strip()
            if not text:
                continue
            first = tok.split()[0]
            if score_eval.plain_answer(text, text.lower(), tok, first):
                self.assertEqual(score_eval.read_refusal(text, tok), (score_eval.KIND_ANSWER, "", 0), (text, tok))

    def test_read_claim_custom_token(self):
        # a token without a trigger word: only the token (in any dress) refuses
        for claim, refused in (("Unanswerable", True), ("**Unanswerable.**", True), ("Answer: unanswerable", True),
                               ("The question is unanswerable from the text we have here today.", False),
                               ("The refund is paid within 48 hours.", False)):
            with self.subTest(claim=claim):
                sc = score_eval.Scorer(_gold_of(1), [5], "unanswerable", None)
                bits = sc.respond(claim, None, [], None).refusal.flags
                kind, _, _ = score_eval.read_refusal(claim, "unanswerable")
                self.assertEqual(kind == score_eval.KIND_REFUSAL, refused)
                self.assertEqual(bool(bits & score_eval.F_REFUSED), refused)

    def test_copied_from(self):
        for claim, texts, want in (("Refunds are paid within 48 hours.", ["x", "Refunds are paid within 48 hours. More."], True),
                                   ("Refunds are paid within 48 hours.", ["Refunds are paid within 48.5 hours."], False),
                                   ("caf\u00e9", ["caf\u00e9"], False), ("ok", [], False)):
            with self.subTest(claim=claim):
                self.assertIs(score_eval.copied_from(claim, texts), want)
                if want:
                    self.assertEqual(_set_unsupported(claim, texts), [])
        rng = random.Random(3206)
        words = ["1,000", "1000", "48", "hours", "policy", "refund", "the", "x.5", "caf\u00e9"]
        for _ in range(3000):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 8)))
            a = rng.randint(0, len(text))
            claim = text[a:rng.randint(a, len(text))] + rng.choice(["", ".", " 7"])
            texts = [text, "Other text 1,000."] if rng.random() < 0.3 else [text]
            copied = score_eval.copied_from(claim, texts)
            got = [] if copied else score_eval.unsupported_tokens(claim, texts, None, score_eval.tokens(claim), True)
            self.assertEqual(got, _set_unsupported(claim, texts), (claim, texts))

    def test_terms_in_text(self):
        terms = frozenset({"refund", "policy", "2024", "classe", "1000", "48"})
        for text, want in (("Refunds follow the policy; classes of 2024.", 4), ("A 1,000 dollar refund.", 2),
                           ("Within 48 hours", 1), ("Within 148 hours", 0), ("Caf\u00e9 refund policy", 2),
                           ("policies", 0), ("", 0)):
            with self.subTest(text=text):
                self.assertEqual(score_eval.terms_in_text(terms, text), want)
                self.assertEqual(len(terms & _slow_terms(text)), want)
        rng = random.Random(3207)
        words = ["1,000", "1000", "1.5", "48", "hours", "hour", "policy", "policies", "class", "classes", "bus",
                 "the", "its", "x.5", "caf\u00e9", "refund", "refunds"]
        for _ in range(6000):
            q = " ".join(rng.choice(words) for _ in range(rng.randint(0, 5)))
            text = " ".join(rng.choice(words) + rng.choice(["", ",", ".", " "]) for _ in range(rng.randint(0, 8)))
            terms = score_eval.content_terms(q)
            self.assertEqual(score_eval.terms_in_text(terms, text), len(terms & _slow_terms(text)), (q, text))

    def test_content_terms_and_has(self):
        for text, want in (("question 12", {"question", "12"}), ("What is the refund policy for 2024 classes?",
                                                                 {"refund", "policy", "2024", "classe"}),
                           ("Is it so?", set()), ("v1.2.3 and .5", {"1.2.3", "5"}), ("1,000 buses", {"1000", "buse"}),
                           ("glass bus its", {"glass", "bus"}), ("Caf\u00e9s open", {"caf\u00e9", "open"}), ("", set())):
            with self.subTest(text=text):
                self.assertEqual(score_eval.content_terms(text), frozenset(want))
                self.assertEqual(_slow_terms(text), frozenset(want))
                self.assertIs(score_eval.has_content_terms(text), bool(want))
        rng = random.Random(3208)
        alphabet = "aZ9.,_ -s'\t\n\x1c!;0123456789" + "\u212a\u00e9"
        words = ["class", "classes", "bus", "its", "the", "policy", "1.5", "48.", "x.5", "1..5", "ss", "sss", "asks", "on"]
        for _ in range(20000):
            if rng.random() < 0.5:
                text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
            else:
                text = " ".join(rng.choice(words) + rng.choice(["", ".", " ", "-"]) for _ in range(rng.randint(0, 5)))
            want = _slow_terms(text)
            self.assertEqual(score_eval.content_terms(text), want, repr(text))
            self.assertIs(score_eval.has_content_terms(text), bool(want), repr(text))

    def test_retrieval_one_gold_id(self):
        cases = [  # (gold ids, retrieved, scores): the rank of the one gold id, as relevant_positions finds it
            (("b",), ["a", "b", "c"], None), (("z",), ["a", "b", "c"], None), (("a",), ["a", "b", "c"], [0.1, 0.5, 0.9]),
            (("c",), ["c", "a", "c"], None), (("a",), [], None),
        ]
        for rel, ret, scores in cases:
            with self.subTest(rel=rel, ret=ret):
                sc = score_eval.Scorer(_gold_of(1), [1, 3], "not in context", None)
                sc._retrieval(0, rel, ret, scores, len(set(ret)) == len(ret))
                ranked = [d for _, d in sorted(zip(scores, ret), reverse=True)] if scores else list(dict.fromkeys(ret))
                positions, gains = score_eval.relevant_positions(ranked, rel)
                self.assertEqual(sc.rr[0], score_eval.measure_rr(positions))
                for k in (1, 3):
                    self.assertEqual(sc.hits[k][0], score_eval.hits_at(positions, k))
                    self.assertEqual(sc.rec[k][0], score_eval.measure_r(score_eval.hits_at(positions, k), 1))
                    self.assertEqual(sc.ndcg[k][0], score_eval.measure_ndcg(positions, gains, k, 1.0))
        # the one-id rank is the fast path (relevant_positions is not called), and its memo entry
        # is apart from a two-id ranking's with the same position: R@3 1 and 1/2
        sc = score_eval.Scorer(_gold_of(2), [3], "not in context", None)
        real = score_eval.relevant_positions
        try:
            def refuse(*a):
                raise AssertionError("relevant_positions called for one gold id")
            score_eval.relevant_positions = refuse
            sc._retrieval(0, ("a",), ["a", "b"], None, True)
        finally:
            score_eval.relevant_positions = real
        sc._retrieval(1, ("a", "z"), ["a", "b"], None, True)
        self.assertEqual((sc.rec[3][0], sc.rec[3][1]), (1.0, 0.5))
        sc._retrieval(0, ("a",), ["a", "b"], None, True)
        self.assertEqual(sc.rec[3][0], 1.0)

    def test_refused_row_relevance(self):
        # a refused row measures no answer relevance and, without the retrieved texts, no context
        # relevance: its context_lack is whether q has a content term and something was retrieved
        for q, ret, lack in (("question 12", ["a"], 1), ("What is it?", ["a"], 0), ("refund policy", [], 0),
                             ("Caf\u00e9?", ["a"], 1), ("", ["a"], 0), ("it 7", ["a"], 1)):
            with self.subTest(q=q, ret=ret):
                sc = score_eval.Scorer(_judged_gold(1), [5], "not in context", None)
                _refused_row(sc, 0, q, ret)
                self.assertEqual(sc.context_lack[0], lack)
                self.assertEqual(lack, int(bool(ret) and bool(_slow_terms(q))))
                self.assertTrue(math.isnan(sc.answer_rel[0]))
        # a shipped claim copied from its chunk: answer relevance from the lookups, as from its tokens
        sc = score_eval.Scorer(_judged_gold(1), [5], "not in context", None)
        claim = "Refunds are paid within 48 hours."
        resp = sc.respond(claim, ["a"], ["a"], {"a": claim + " More."})
        sc.judge(0, resp, ["a"], None, {"a": claim + " More."}, None, None, True)
        self.assertIsNone(resp.tokens)                  # copied from its chunk: never tokenized
        sc.judge_extra(0, resp, ["a"], {"a": claim + " More."}, None, None, ("refund within 48 days", None, None, None))
        self.assertEqual(sc.answer_rel[0], 2 / 3)       # refund, 48 of refund, 48, day ("within" is a stopword)


if __name__ == "__main__":
    unittest.main()
