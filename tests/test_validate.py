"""The QA contract's validators (mini_rag/answer/validate.py): every rejection rule with its message."""
import unittest

from mini_rag.records import Fact
from mini_rag.answer.synthesize import Answer, AnswerSentence
from mini_rag.answer.validate import normalize_confidence, validate_relevant_facts, validate_synthesis

A = [Fact("Refunds take 5 days.", "refunds", 1, "refunds#p2", 0.75),
     Fact("Logs are kept 90 days.", "audit", 2, "audit#p4", 0.5),
     Fact("Blank.", "handbook", 1, "handbook#p0", 0.25)]
B = A[:2]


def row(pdf="refunds", page=1, chunk_id="refunds#p2", **extra):
    out = {"pdf": pdf, "page": page, "chunk_id": chunk_id}
    out.update(extra)
    return out


class RelevantFactsTest(unittest.TestCase):
    def test_rejections(self):
        cases = [
            # (payload, kept chunk ids, errors)
            # a long value is cut to 57 characters and "..."
            ([row(), row()], [],
             ["payload must be a JSON object with 'relevant_facts', got [{'pdf': 'refunds', 'page': 1, 'chunk_id': 'refunds#p2'},..."]),
            ({}, [], ["relevant_facts must be a list, got None"]),
            ({"relevant_facts": "refunds#p2"}, [], ["relevant_facts must be a list, got 'refunds#p2'"]),
            ({"relevant_facts": ["refunds#p2"]}, [], ["relevant_facts[0]: must be an object, got 'refunds#p2'"]),
            ({"relevant_facts": [row(pdf="")]}, [], ["relevant_facts[0]: pdf must be a non-empty string, got ''"]),
            ({"relevant_facts": [row(pdf=7)]}, [], ["relevant_facts[0]: pdf must be a non-empty string, got 7"]),
            ({"relevant_facts": [{"page": 1, "chunk_id": "refunds#p2"}]}, [],
             ["relevant_facts[0]: pdf must be a non-empty string, got None"]),
            ({"relevant_facts": [row(page="1")]}, [], ["relevant_facts[0]: page must be an integer >= 1, got '1'"]),
            ({"relevant_facts": [row(page=True)]}, [], ["relevant_facts[0]: page must be an integer >= 1, got True"]),
            ({"relevant_facts": [row(page=1.0)]}, [], ["relevant_facts[0]: page must be an integer >= 1, got 1.0"]),
            ({"relevant_facts": [row(page=0)]}, [], ["relevant_facts[0]: page must be an integer >= 1, got 0"]),
            ({"relevant_facts": [row(chunk_id=None)]}, [],
             ["relevant_facts[0]: chunk_id must be a non-empty string, got None"]),
            # several problems of one row are all reported
            ({"relevant_facts": [{"pdf": "", "page": "x"}]}, [],
             ["relevant_facts[0]: pdf must be a non-empty string, got ''",
              "relevant_facts[0]: page must be an integer >= 1, got 'x'",
              "relevant_facts[0]: chunk_id must be a non-empty string, got None"]),
            # must map to a phase A key: same chunk id on another page is another key
            ({"relevant_facts": [row(page=2)]}, [],
             ["relevant_facts[0]: (pdf='refunds', page=2, chunk_id='refunds#p2') is not a phase A fact"]),
            ({"relevant_facts": [row(pdf="other")]}, [],
             ["relevant_facts[0]: (pdf='other', page=1, chunk_id='refunds#p2') is not a phase A fact"]),
            # duplicates dropped, first kept
            ({"relevant_facts": [row(), row(quote="changed"), row("audit", 2, "audit#p4")]},
             ["refunds#p2", "audit#p4"],
             ["relevant_facts[1]: duplicate (pdf='refunds', page=1, chunk_id='refunds#p2') dropped"]),
            # payload order is kept; a valid row survives next to invalid ones
            ({"relevant_facts": [row("audit", 2, "audit#p4"), 5, row()]}, ["audit#p4", "refunds#p2"],
             ["relevant_facts[1]: must be an object, got 5"]),
            ({"relevant_facts": []}, [], []),
        ]
        for payload, kept, errors in cases:
            with self.subTest(payload=payload):
                facts, errs = validate_relevant_facts(payload, A)
                self.assertEqual([f.chunk_id for f in facts], kept)
                self.assertEqual(errs, errors)

    def test_score_and_quote_inherited_from_phase_a(self):
        facts, errs = validate_relevant_facts(
            {"relevant_facts": [row("audit", 2, "audit#p4", quote="Logs are kept forever.", score=0.99)]}, A)
        self.assertEqual(errs, [])
        self.assertEqual(facts, [A[1]])
        self.assertEqual((facts[0].score, facts[0].quote), (0.5, "Logs are kept 90 days."))


class SynthesisTest(unittest.TestCase):
    def test_rejections(self):
        s = "Refunds take 5 days."
        cases = [
            # (payload, accepted chunk ids, errors)
            ("nope", [], ["payload must be a JSON object with 'answer_sentences', got 'nope'"]),
            ({"confidence": "High"}, [], ["answer_sentences must be a list, got None"]),
            ({"answer_sentences": {}, "confidence": "High"}, [], ["answer_sentences must be a list, got {}"]),
            ({"answer_sentences": [row()], "confidence": "High"}, [],
             ["answer_sentences[0]: sentence must be a non-empty string, got None"]),
            ({"answer_sentences": [row(sentence="  ")], "confidence": "High"}, [],
             ["answer_sentences[0]: sentence must be a non-empty string, got '  '"]),
            ({"answer_sentences": [row(page="1", sentence=s)], "confidence": "High"}, [],
             ["answer_sentences[0]: page must be an integer >= 1, got '1'"]),
            # must map to a phase B key: handbook#p0 is phase A only
            ({"answer_sentences": [row("handbook", 1, "handbook#p0", sentence="Blank.")], "confidence": "High"}, [],
             ["answer_sentences[0]: (pdf='handbook', page=1, chunk_id='handbook#p0') is not a phase B fact"]),
            # two sentences from one chunk share it; a repeated (key, sentence) row is dropped
            ({"answer_sentences": [row(sentence=s), row(sentence="again")], "confidence": "High"},
             ["refunds#p2", "refunds#p2"], []),
            ({"answer_sentences": [row(sentence=s), row(sentence=" %s " % s)], "confidence": "High"}, ["refunds#p2"],
             ["answer_sentences[1]: duplicate (pdf='refunds', page=1, chunk_id='refunds#p2') dropped"]),
        ]
        for payload, kept, errors in cases:
            with self.subTest(payload=payload):
                answer, errs = validate_synthesis(payload, B)
                self.assertEqual([x.chunk_id for x in answer.sentences], kept)
                self.assertEqual(errs, errors)
                self.assertEqual(answer.refused, not kept)
                if not kept:
                    self.assertEqual(answer.reasons, ["no_valid_sentence"])
                    self.assertEqual(answer.claim("Not found in provided PDFs"), "Not found in provided PDFs")
                    self.assertEqual(answer.citations(), [])

    def test_at_most_max_sentences(self):
        facts = [Fact("s%d." % i, "d", 1, "d#p%d" % i, 0.5) for i in range(8)]
        rows = [row("d", 1, "d#p%d" % i, sentence="s%d." % i) for i in range(8)]
        for limit, kept in ((6, 6), (2, 2), (8, 8)):
            with self.subTest(limit=limit):
                answer, errs = validate_synthesis({"answer_sentences": rows, "confidence": "Low"}, facts, limit)
                self.assertEqual(len(answer.sentences), kept)
                self.assertEqual(errs, ["answer_sentences[%d]: more than %d sentences, dropped" % (i, limit)
                                        for i in range(kept, 8)])
        # invalid rows do not use up the quota
        rows = [row("d", 1, "d#p0", sentence=""), *rows]
        answer, _ = validate_synthesis({"answer_sentences": rows, "confidence": "Low"}, facts)
        self.assertEqual([x.chunk_id for x in answer.sentences], ["d#p%d" % i for i in range(6)])

    def test_accepted_answer(self):
        payload = {"answer_sentences": [row("audit", 2, "audit#p4", sentence="  Logs are kept 90 days. "),
                                        row(sentence="Refunds take 5 days.")],
                   "confidence": "medium", "extra": 1}
        answer, errs = validate_synthesis(payload, B)
        self.assertEqual(errs, [])
        self.assertEqual(answer, Answer(sentences=[AnswerSentence("Logs are kept 90 days.", "audit", 2, "audit#p4"),
                                                   AnswerSentence("Refunds take 5 days.", "refunds", 1, "refunds#p2")],
                                        confidence="Medium"))
        self.assertEqual(answer.claim("not in context"), "Logs are kept 90 days. Refunds take 5 days.")
        self.assertEqual(answer.citations(), ["audit#p4", "refunds#p2"])

    def test_confidence_normalized(self):
        s = [row(sentence="Refunds take 5 days.")]
        cases = [("High", "High", []), ("high", "High", []), (" LOW ", "Low", []), ("Medium", "Medium", []),
                 ("certain", "Low", ["confidence must be High, Medium or Low, got 'certain'; using Low"]),
                 (0.9, "Low", ["confidence must be High, Medium or Low, got 0.9; using Low"]),
                 (None, "Low", ["confidence must be High, Medium or Low, got None; using Low"])]
        for raw, level, errors in cases:
            with self.subTest(raw=raw):
                payload = {"answer_sentences": s}
                if raw is not None:
                    payload["confidence"] = raw
                answer, errs = validate_synthesis(payload, B)
                self.assertEqual((answer.confidence, errs), (level, errors))
                self.assertEqual(normalize_confidence(raw), None if errors else level)


if __name__ == "__main__":
    unittest.main()
