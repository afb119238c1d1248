"""Phase A (mini_rag/answer/facts.py): hits -> facts, and the contract's FACTS: debug text."""
import json
import unittest
from pathlib import Path

from mini_rag.answer.facts import format_facts, phase_a
from mini_rag.records import Fact, Hit, Retrieval

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "phases" / "evidence.json"


def hit(cid, text, sim, page=1, rank=1, score=5.0):
    return Hit(chunk_id=cid, doc_id=cid.split("#")[0], rank=rank, score=score, similarity=sim,
               page=page, text=text)


class PhaseATest(unittest.TestCase):
    def test_field_mapping(self):
        r = Retrieval(question="q", hits=[hit("a-doc#p3", "Alpha text.", 0.5, page=2, score=12.5)],
                      candidates=[hit("zzz#p0", "below threshold", 0.1)])
        self.assertEqual(phase_a(r), [Fact(quote="Alpha text.", pdf="a-doc", page=2,
                                           chunk_id="a-doc#p3", score=0.5)])

    def test_order_and_count_follow_hits(self):
        data = json.loads(FIXTURE.read_text(encoding="utf-8"))
        r = Retrieval.from_json(data["retrieval"])
        facts = phase_a(r)
        self.assertEqual([f.chunk_id for f in facts], [h.chunk_id for h in r.hits])
        self.assertEqual([f.score for f in facts], [h.similarity for h in r.hits])
        self.assertEqual([f.quote for f in facts], [h.text for h in r.hits])

    def test_no_hits(self):
        self.assertEqual(phase_a(Retrieval(question="q", hits=[], candidates=[hit("x#p0", "t", 0.1)])), [])


class FormatFactsTest(unittest.TestCase):
    def test_table(self):
        cases = [
            ([], "FACTS:"),
            ([Fact("Refunds take 5 days.", "refunds", 1, "refunds#p2", 0.8125)],
             'FACTS:\n- "Refunds take 5 days." (pdf="refunds", page=1, chunk_id="refunds#p2", score=0.8125)'),
            # quotes and line breaks are escaped so one fact stays one line
            ([Fact('Say "hi"\n- item', "d", 3, "d#p1", 1 / 3)],
             'FACTS:\n- "Say \\"hi\\"\\n- item" (pdf="d", page=3, chunk_id="d#p1", score=0.3333)'),
            ([Fact("a", "x", 1, "x#p0", 0.5), Fact("b", "y", 2, "y#p1", 0.25)],
             'FACTS:\n- "a" (pdf="x", page=1, chunk_id="x#p0", score=0.5000)\n'
             '- "b" (pdf="y", page=2, chunk_id="y#p1", score=0.2500)'),
        ]
        for facts, expected in cases:
            with self.subTest(n=len(facts)):
                self.assertEqual(format_facts(facts), expected)


if __name__ == "__main__":
    unittest.main()
