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

    def answer(self, question: str, qid: str, doc_scope: Optional[str] = None) -> Dict[str, Any]:
        terms = self.analyze(question)
        ranked = self.retriever.rank_terms(terms, self.k, doc_scope=doc_scope)
        ids = [self.retriever.index.chunks[p].chunk_id for p, _, _ in ranked]
        claim, cites = self.refusal, []
        q = set(terms)
        if ranked and q:
            top = self.retriever.index.chunks[ranked[0][0]]
            best, best_share = "", -1.0
            for sent in split_sentences(top.text):
                share = len(q & set(self.analyze(sent))) / len(q)
                if share > best_share:
                    best, best_share = sent, share
            if best_share >= self.cover:
                claim, cites = best, [top.chunk_id]
        return {"qid": qid, "q": question, "retrieved_ids": ids,
                "answer_json": {"claim": claim, "citations": cites}}
