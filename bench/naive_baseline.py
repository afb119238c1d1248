"""The naive baseline of issue 17, the bar every answering change is measured against.

BM25 over the chunks (the project's index, the plain query: no expansion, typo
correction, synonyms or thresholds), the top chunk only; of its sentences, the one holding
the largest share of the question's distinct content stems (ties: the earlier sentence);
refuse when that share is under ``cover`` (0.6).  The answer cites the top chunk.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Dict, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mini_rag.answer.synthesize import split_sentences  # noqa: E402

COVER = 0.6


class Naive:
    def __init__(self, retriever: Any, refusal: str = "not in context", cover: float = COVER,
                 k: int = 8) -> None:
        self.retriever = retriever
        self.analyze = retriever.index.analyzer.analyze
        self.refusal = refusal
        self.cover = cover
        self.k = k

    def choose(self, question: str, doc_scope: Optional[str] = None):
        """(retrieved ids, the top chunk's id or None, its sentence with the largest share of
        the question's stems, that share); the cover rule is not applied."""
        terms = self.analyze(question)
        ranked = self.retriever.rank_terms(terms, self.k, doc_scope=doc_scope)
        ids = [self.retriever.index.chunks[p].chunk_id for p, _, _ in ranked]
        q = set(terms)
        if not ranked or not q:
            return ids, None, "", -1.0
        top = self.retriever.index.chunks[ranked[0][0]]
        best, best_share = "", -1.0
        for sent in split_sentences(top.text):
            share = len(q & set(self.analyze(sent))) / len(q)
            if share > best_share:
                best, best_share = sent, share
        return ids, top.chunk_id, best, best_share

    def row(self, qid: str, question: str, choice, cover: Optional[float] = None) -> Dict[str, Any]:
        """The trace row of a :meth:`choose` result: ship when its share is at least ``cover``."""
        ids, chunk_id, best, share = choice
        ship = chunk_id is not None and share >= (self.cover if cover is None else cover)
        return {"qid": qid, "q": question, "retrieved_ids": ids,
                "answer_json": {"claim": best if ship else self.refusal, "citations": [chunk_id] if ship else []}}

    def answer(self, question: str, qid: str, doc_scope: Optional[str] = None) -> Dict[str, Any]:
        return self.row(qid, question, self.choose(question, doc_scope))
