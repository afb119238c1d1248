"""bench/refusal_question.py, issue 41 item 3's experiment: refusal features that read the question.

Every expected value below was worked out by hand from the feature definitions in the module's
docstring (word counts: runs of lower-case letters and digits of two or more characters, so a
capitalised word counts by its tail and "I" or "A" not at all; stems: the first 6 letters of the
lower-cased words of >= 3 characters that are not STOPWORDS), not by running the code.  The
figures of the experiment itself (docs/refusals.md) need ../shared/data: tests.test_validation's
slow tier does not recompute them; ``python3 bench/refusal_question.py`` does (about 30 s).
"""
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import refusal_question as rq  # noqa: E402
import score_eval  # noqa: E402


class QuestionKind(unittest.TestCase):
    CASES = [
        ("how many goals did mikel score for chelsea", "number"),
        ("What percentage of voters turned out?", "number"),
        ("when is the womens ice skating for the olympics", "date"),
        ("what year did the war end", "date"),
        ("who played mr thatcher in when calls the heart", "name"),
        ("where do they put the tomb vampires", "name"),
        ("Is autism more prevalent in urban areas or rural areas?", "yesno"),
        ("Write an article about the mayor in the style of the New York Post", "request"),
        ("Please explain the rules of cricket", "request"),
        ("Why do people dislike Mondays?", "explain"),
        ("how does a bill become law", "explain"),
        ("what does hp mean in war and order", "what"),
        ("hyori bed and breakfast season 2 air date", "other"),
    ]

    def test_table(self):
        for question, kind in self.CASES:
            with self.subTest(question=question):
                self.assertEqual(rq.question_kind(question), kind)


class KindFound(unittest.TestCase):
    CASES = [
        ("number", ["He scored five goals."], True),
        ("number", ["He scored several goals."], False),
        ("number", ["It costs 25 EUR."], True),
        ("date", ["It opened in March."], True),
        ("date", ["It opened in 1998."], True),
        ("date", ["It opened recently."], False),
        ("name", ["The role was played by Martin Cummins."], True),
        ("name", ["the actor is unknown to me."], False),
        ("yesno", ["Yes, it is.", "It depends on the state."], True),
        ("yesno", ["It depends on the state."], False),
        ("explain", ["Because it rains."], None),
        ("request", ["Here is the article."], None),
    ]

    def test_table(self):
        for kind, sents, want in self.CASES:
            with self.subTest(kind=kind, sents=sents):
                self.assertIs(rq.kind_found(kind, sents), want)


class Features(unittest.TestCase):
    def layout(self, text, kinds):
        case, sents, got, _ = score_eval.refusal_layout(text)
        self.assertEqual((case, got), ("mixed", kinds))
        return sents, got

    def check(self, f, want):
        for k, v in want.items():
            self.assertAlmostEqual(f[k], v, msg=k)
        self.assertFalse([k for k in f if ":" in k])            # no word features

    def test_date_question_answered_around(self):
        text = ("I cannot find the filming date. However, The Post was released in 2017. "
                "It was directed by Steven Spielberg.")
        sents, kinds = self.layout(text, ["D", "C", "C"])
        f = rq.question_features(sents, kinds, "when did the movie the post begin filming")
        # words: 5 (cannot find the filming date), 7 (owever he ost was released in 2017), 5 (was directed
        # by teven pielberg); question stems movie post begin filmin: "post" after the decline, "filmin" in it
        self.check(f, {"n_core": 3 / 20, "last_decline_pos": 0.0, "after_share": 2 / 3,
                       "after_word_share": 12 / 17, "content_you": 0.0, "content_self": 0.0, "has_q": 1.0,
                       "q_cover_after": 0.25, "q_cover_decline": 0.25, "q_sent_share": 0.5,
                       "q_type_found": 1.0, "q_type_missing": 0.0})
        self.assertNotIn("q_request", f)
        self.assertNotIn("content_norm", f)

    def test_request_with_lecture(self):
        text = ("As an AI language model, I cannot write poems about you. Still, here is a short one. "
                "The sea is wide and blue, and it sings to me.")
        sents, kinds = self.layout(text, ["D", "C", "C"])
        f = rq.question_features(sents, kinds, "Write a short poem about the sea", lecture=True)
        # words 8 / 5 / 11; stems write short poem sea: short and sea after ("poems" is not "poem"),
        # write in the decline; a request: no kind to find, its length is the 16 words after the decline
        self.check(f, {"after_share": 2 / 3, "after_word_share": 16 / 24, "content_you": 0.0, "content_self": 0.5,
                       "content_norm": 0.0, "q_cover_after": 0.5, "q_cover_decline": 0.25, "q_sent_share": 1.0,
                       "q_request": 1.0, "q_request_long": 16 / 300})
        self.assertNotIn("q_type_found", f)

    def test_without_question_only_layout(self):
        text = "I cannot say for sure. However, your fee should be low. The fee is 25 EUR."
        sents, kinds = self.layout(text, ["D", "C", "C"])
        f = rq.question_features(sents, kinds, None, lecture=True)
        self.check(f, {"content_you": 0.5, "content_norm": 0.5, "after_share": 2 / 3})
        self.assertFalse([k for k in f if k.startswith(("q_", "has_q"))])
        # the structural features are score_eval's, unchanged
        for k, v in score_eval.refusal_features(sents, kinds).items():
            if ":" not in k:
                self.assertEqual(f[k], v, msg=k)

    def test_last_decline_position(self):
        text = "Sorry, I cannot confirm this. The fee is 25 EUR. I cannot say more than that."
        sents, kinds = self.layout(text, ["D", "C", "D"])
        f = rq.question_features(sents, kinds, None)
        self.check(f, {"last_decline_pos": 1.0, "after_share": 1 / 3})


class FitOffset(unittest.TestCase):
    def test_saturated_model_by_hand(self):
        # one 0/1 feature: at x = 0 one refusal and one answer (log-odds 0), at x = 1 three refusals
        # and one answer (log-odds log 3); a fixed offset of 0.5 on every row is taken back by the
        # bias: bias = 0 - 0.5, weight = log 3 - 0 (a penalty of 1e-9 moves them by less than 1e-6)
        import math
        xs = [[], [], [(0, 1.0)], [(0, 1.0)], [(0, 1.0)], [(0, 1.0)]]
        ys = [1.0, 0.0, 1.0, 1.0, 1.0, 0.0]
        bias, (w,) = rq.fit_offset(xs, [0.5] * 6, ys, 1e-9)
        self.assertAlmostEqual(bias, -0.5, places=6)
        self.assertAlmostEqual(w, math.log(3), places=6)


class Rate(unittest.TestCase):
    def test_counts(self):
        pairs = [(True, True), (True, False), (False, True), (False, False), (False, False)]
        self.assertEqual(rq.rate(pairs), (0.5, 1 / 3, 1, 1, 2, 3))


if __name__ == "__main__":
    unittest.main()
