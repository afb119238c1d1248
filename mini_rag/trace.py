"""Trace stage: the one JSON row per question that ``score_eval.py`` reads (seed 002).

A trace row carries seed 002's fields first (``qid``, ``q``, ``retrieved_ids``,
``answer_json``), then what a person debugging the answer needs.  Keys, in this order:

====================  ===================================================================
key                   value
====================  ===================================================================
``qid``               the gold item's id ("" for ``ask``)
``q``                 the question as asked
``retrieved_ids``     accepted hits' chunk ids, in rank order (what the answerer saw;
                      citations must be among them)
``retrieved_scores``  their similarity in [0, 1], parallel to ``retrieved_ids`` (a joined
                      list chunk: just below every score before it)
``answer_json``       ``{"claim": str, "citations": [ids]}``; the refusal token and ``[]``
                      for every non-ANSWER decision
``cited_chunks``      ``{id: full chunk text}`` for the citations (the scorer's
                      hallucination check); ``{}`` on a refusal.  A chunk whose document
                      sets ``policy:`` in its front matter (summarize, quote_only, no_use)
                      gets ``{"text": ..., "policy": ...}`` instead, for the scorer's
                      source-policy check (absent policy: plain text, as before)
``decision``          ANSWER | ABSTAIN | CLARIFY | BLOCK
``reasons``           every guard that fired, precedence order (``decision.py``)
``message``           the text for a person ("" on ANSWER)
``confidence``        High | Medium | Low (phase C's on ANSWER; Low otherwise)
``fallback_used``     the retrieval fell back to ``fallback_min_similarity``
``expansions``        expanded query strings that were run
``corrections``       ``{query token: index term}`` typo corrections
``risk``              ``{"level": ..., "matched": [...]}``
``conflicts``         every conflict pair ``{"kind", "axis", "a", "b", "reason", "evidence":
                      {"a": snippet, "b": snippet}}``, the pairs about the question first
                      (``message`` names the first)
``signals``           the retrieval signals (max, mean, gap, hit_count, dates, as_of, ...)
``decided_by``        which half of the guards decided: ``"retrieval"`` (no hits, or no
                      phase B evidence: the generator was not called) or ``"answer"``
                      (after the generator: its citations, conflicts on what it cites, ...)
``validation``        seed 000's ``{"citation_valid", "errors", "warnings"}``: the citation
                      check on the generator's raw output (errors BLOCK), its warnings and
                      the contract validator's dropped rows; a generator failure's message
``timings_ms``        only with ``--timings``: per-stage wall times.  Off by default
                      because times differ run to run and the trace must be byte-identical
====================  ===================================================================

Rows are written with :func:`mini_rag.fileio.dumps_jsonl` (compact, keys in this order,
non-ASCII kept), so two runs over the same inputs give the same bytes.
"""
from __future__ import annotations

import math
from typing import Any, Container, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set

from .text.markup import plain_text
from .text.shape import prose

__all__ = ["TRACE_KEYS", "build_row", "format_text", "paged_documents", "markup_documents", "shown"]

TRACE_KEYS = ("qid", "q", "retrieved_ids", "retrieved_scores", "answer_json", "cited_chunks",
              "decision", "reasons", "message", "confidence", "fallback_used", "expansions",
              "corrections", "risk", "conflicts", "signals", "decided_by", "validation")


def _scores(hits: Sequence[Any], joined: Dict[str, str]) -> List[float]:
    """``retrieved_scores``: each hit's similarity, but a chunk joined to its lead-in (retrieval
    step 7, after every ranked hit) scores just below every score before it, so a scorer that
    orders by score (trec_eval's order, ``score_eval.py``'s) keeps the retriever's ranking."""
    out: List[float] = []
    for h in hits:
        s = float(h.similarity)
        if h.chunk_id in joined and out:
            low = min(out)
            s = math.nextafter(low, 0.0) if low > 0.0 else 0.0
        out.append(s)
    return out


def build_row(qid: str, question: str, hits: Sequence[Any], claim: str, citations: Sequence[str],
              cited_chunks: Dict[str, str], decision: str, reasons: Sequence[str], message: str,
              confidence: str, fallback_used: bool, expansions: Sequence[str],
              corrections: Dict[str, str], risk: Dict[str, Any], conflicts: Sequence[Dict[str, Any]],
              signals: Dict[str, Any], timings_ms: Optional[Dict[str, float]] = None,
              decided_by: str = "answer", validation: Optional[Dict[str, Any]] = None,
              doc_scope: Optional[str] = None, joined: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """The trace row, keys in :data:`TRACE_KEYS` order (plus ``doc_scope`` and ``timings_ms``
    when given).

    ``hits`` are records.Hit in rank order.  Dicts whose order is not meaningful
    (``cited_chunks`` follows the citation order; ``corrections`` is sorted by key).
    """
    row: Dict[str, Any] = {
        "qid": qid,
        "q": question,
        "retrieved_ids": [h.chunk_id for h in hits],
        "retrieved_scores": _scores(hits, joined or {}),
        "answer_json": {"claim": claim, "citations": list(citations)},
        "cited_chunks": {cid: _cited_value(cited_chunks[cid], hits, cid) for cid in citations if cid in cited_chunks},
        "decision": decision,
        "reasons": list(reasons),
        "message": message,
        "confidence": confidence,
        "fallback_used": bool(fallback_used),
        "expansions": list(expansions),
        "corrections": {k: corrections[k] for k in sorted(corrections)},
        "risk": risk,
        "conflicts": list(conflicts),
        "signals": signals,
        "decided_by": decided_by,
        "validation": validation if validation is not None else {
            "citation_valid": True, "errors": [], "warnings": []},
    }
    if doc_scope:
        row["doc_scope"] = doc_scope
    if timings_ms is not None:
        row["timings_ms"] = timings_ms
    return row


def _cited_value(text: str, hits: Sequence[Any], cid: str) -> Any:
    """The chunk text, or ``{"text", "policy"}`` when its document declares a source policy."""
    for h in hits:
        if h.chunk_id == cid:
            policy = (getattr(h, "metadata", None) or {}).get("policy")
            if policy:
                return {"text": text, "policy": policy}
    return text


def format_text(decision: str, sentences: Sequence[Any], confidence: str, refusal: str,
                message: str = "", paged: Optional[Container[str]] = None,
                markup: Optional[Container[str]] = None) -> str:
    """The QA contract's text form, as ``ask`` prints it (no trailing newline).

    ANSWER::

        ANSWER:
        1. <sentence> (<doc>, p<page>, <chunk_id>)
        CONFIDENCE: High|Medium|Low

    Each sentence of a document in ``markup`` (``None``: any) as plain text
    (``shape.prose``, as the claim is shipped: a list's items joined into a line).  ``paged``:
    the documents that have pages (:func:`paged_documents`); a citation of any other
    document is ``(<doc>, <chunk_id>)``, without a page that is always 1 (Markdown, reST,
    text without form feeds).  ``None``: every citation shows its page.

    Any other decision: the refusal token alone on the first line (exactly the
    contract's refusal line, so a script can compare it), then the human message on
    the second line when there is one.

    >>> from types import SimpleNamespace as S
    >>> print(format_text("ANSWER", [S(sentence="Refunds take 5 days.", pdf="refunds", page=1,
    ...                                 chunk_id="refunds#p2")], "High", "not in context"))
    ANSWER:
    1. Refunds take 5 days. (refunds, p1, refunds#p2)
    CONFIDENCE: High
    >>> print(format_text("ABSTAIN", [], "Low", "not in context", "No evidence."))
    not in context
    No evidence.
    """
    if decision != "ANSWER" or not sentences:
        return refusal + ("\n" + message if message else "")
    lines: List[str] = ["ANSWER:"]
    for n, s in enumerate(sentences, 1):
        page = "" if paged is not None and s.pdf not in paged else "p%d, " % s.page
        lines.append("%d. %s (%s, %s%s)" % (n, " ".join(_answer_text(s.sentence, s.pdf, markup).split()), s.pdf, page,
                                            s.chunk_id))
    lines.append("CONFIDENCE: %s" % confidence)
    return "\n".join(lines)


def _answer_text(text: str, doc_id: str, markup: Optional[Container[str]] = None) -> str:
    """An answer's sentence as the claim ships it: :func:`shown`, its list items joined into
    the line of their lead-in (``shape.prose``) when the document is Markdown or reST."""
    return prose(text) if markup is None or doc_id in markup else text


def shown(text: str, doc_id: str, markup: Optional[Container[str]] = None) -> str:
    """``text`` of document ``doc_id`` as shipped: as plain text (``markup.plain_text``) when the
    document is Markdown or reST (in ``markup``; ``None``: every document), as written when it
    is plain text or a BEIR row, whose ``1.`` or ``*`` is content, not markup."""
    return plain_text(text) if markup is None or doc_id in markup else text


def markup_documents(index_path: str) -> FrozenSet[str]:
    """The doc ids of the index at ``index_path`` whose file is Markdown or reST: its manifest
    gives each document's content hash and each corpus file's, so a document's file (hence
    its syntax, ``corpus._syntax``) is the file of the same hash.  A BEIR ``.jsonl`` corpus's rows,
    ``.txt`` files and an index without a readable manifest give none."""
    from .errors import MiniRagError
    from .indexing.index import read_manifest
    from .text.corpus import _syntax
    try:
        manifest = read_manifest(index_path)
        files = manifest["corpus"]["files"]
        docs = manifest["documents"]
    except (MiniRagError, OSError, KeyError, TypeError, ValueError):
        return frozenset()
    by_hash: Dict[str, List[str]] = {}
    for entry in files if isinstance(files, list) else ():
        if isinstance(entry, list) and len(entry) >= 2 and isinstance(entry[0], str):
            by_hash.setdefault(entry[1], []).append(entry[0])
    out = set()
    for doc, digest in (docs.items() if isinstance(docs, dict) else ()):
        names = by_hash.get(digest, [])
        # two files of the same bytes: the one named as the doc id is (its path without extension)
        named = [n for n in names if n.rsplit(".", 1)[0].replace("\\", "/") == doc] or names
        if named and _syntax(named[0]) in ("md", "rst"):
            out.add(doc)
    return frozenset(out)


def paged_documents(index: Any, chunk_ids: Iterable[str]) -> Set[str]:
    """The documents of ``chunk_ids`` that have more than one page (a form feed, as
    ``pdftotext`` writes: corpus.py numbers pages from 1): pages only grow within a
    document and its chunks are consecutive, so the last chunk of the document tells."""
    out: Set[str] = set()
    seen: Set[str] = set()
    chunks = index.chunks
    for cid in chunk_ids:
        pos = index.position(cid)
        if pos < 0 or chunks[pos].doc_id in seen:
            continue
        last = chunks[pos]
        seen.add(last.doc_id)
        while pos + 1 < len(chunks) and chunks[pos + 1].doc_id == last.doc_id:
            pos += 1
            last = chunks[pos]
        if last.page > 1:
            out.add(last.doc_id)
    return out
