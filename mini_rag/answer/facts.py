"""Phase A of the QA contract (seed 001): retrieval hits become facts, nothing else.

A *fact* is the contract's in-memory record ``Fact(quote, pdf, page, chunk_id, score)``
(:class:`mini_rag.records.Fact`).  Phase A does not synthesize, filter or reorder: each
accepted hit of the retrieval becomes one fact, in the retrieval's final order.

=========================  ========================================================
``phase_a(retrieval)``     ``list[Fact]``: one per accepted hit, in rank order
``format_facts(facts)``    the contract's debug text (``--debug``), ``FACTS:`` first
=========================  ========================================================

Field mapping, hit -> fact: ``quote`` is the chunk text verbatim, ``pdf`` the document
id (the contract's "pdf name"), ``page`` and ``chunk_id`` as retrieved, ``score`` the
hit's ``similarity`` (in [0, 1], the value the retrieval thresholds compare against; the
raw BM25 score is not comparable across questions).

>>> from mini_rag.records import Hit, Retrieval
>>> hit = Hit(chunk_id="refunds#p2", doc_id="refunds", rank=1, score=7.5, similarity=0.8125,
...           page=1, text='Refunds take "5 business days".')
>>> print(format_facts(phase_a(Retrieval(question="q", hits=[hit]))))
FACTS:
- "Refunds take \\"5 business days\\"." (pdf="refunds", page=1, chunk_id="refunds#p2", score=0.8125)
"""
from __future__ import annotations

import json
from typing import List

from ..records import Fact, Retrieval

__all__ = ["phase_a", "format_facts"]


def phase_a(retrieval: Retrieval) -> List[Fact]:
    """One :class:`Fact` per accepted hit of ``retrieval``, in the retrieval's order.

    Only ``retrieval.hits`` (the accepted hits) are used; ``candidates`` below the
    similarity threshold are never evidence.  No hits -> ``[]``.
    """
    return [Fact(quote=hit.text, pdf=hit.doc_id, page=int(hit.page), chunk_id=hit.chunk_id,
                 score=float(hit.similarity))
            for hit in retrieval.hits]


def _quoted(text: str) -> str:
    # JSON string syntax keeps one fact on one line (list chunks hold line breaks) and
    # makes a quote that itself contains '"' unambiguous.
    return json.dumps(text, ensure_ascii=False)


def format_facts(facts: List[Fact]) -> str:
    """The contract's debug text: ``FACTS:`` then one line per fact::

        - "<quote>" (pdf="<name>", page=<int>, chunk_id="<id>", score=<float>)

    Strings are written in JSON string syntax (``"`` and line breaks escaped), the score
    with 4 decimals.  No facts -> the single line ``FACTS:``.  No trailing newline.
    """
    lines = ["FACTS:"]
    for f in facts:
        lines.append("- %s (pdf=%s, page=%d, chunk_id=%s, score=%.4f)"
                     % (_quoted(f.quote), _quoted(f.pdf), f.page, _quoted(f.chunk_id), f.score))
    return "\n".join(lines)
