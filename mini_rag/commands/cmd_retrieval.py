"""Commands ``index`` and ``search`` (the retrieval stage's command line).

``python -m mini_rag index [--corpus DIR|FILE] [--config FILE] [--force]``
    builds ``[index] path`` when it is missing or stale (changed, added or removed files,
    other settings), saying on stderr what was stale, and prints a one-line summary.
``python -m mini_rag search --scope DOC [--corpus ...]`` (no question)
    lists every chunk of document DOC in order: the chunk ids a gold set cites.
``python -m mini_rag search "question" [--k N] [--json] [--contract] [--config FILE] [--corpus ...]``
    prints the ranked chunks (rank, similarity, score, chunk id, page (a document with pages
    only), title, excerpt);
    ``--contract`` runs the QA contract flow (expansion, thresholds, fallback, MMR).

Exit status: 0 on success, 2 for bad input (missing corpus, bad config, unusable index).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List

from ..config import DEFAULT_CONFIG_PATH
from ..errors import MiniRagError
from ..fileio import MAX_K, MAX_QUESTION_CHARS, check_question, json_terminal_safe, terminal_safe
from ..progress import Progress
from ..trace import shown

EXCERPT_CHARS = 160


def _config(args) -> Dict[str, Any]:
    """The config with --corpus and --index applied (mini_rag.commands.runconfig's rules)."""
    from .runconfig import resolve
    return resolve(args.config, args.corpus, args.index_path, quiet=args.quiet)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--corpus", metavar="DIR|FILE",
                   help="corpus folder of .md/.rst/.txt files or BEIR .jsonl file (default: [corpus] path)")
    p.add_argument("--config", metavar="FILE",
                   help="TOML config overriding the defaults (default: %s when present)" % DEFAULT_CONFIG_PATH)
    p.add_argument("--index", dest="index_path", metavar="PATH",
                   help="index file to use (default: [index] path, or runs/index-<hash>.json.gz for a corpus "
                        "of one's own; .gz means gzip)")
    p.add_argument("--quiet", action="store_true", help="no progress and no notes on stderr (errors still)")


def register(subparsers) -> None:
    p = subparsers.add_parser("index", help="build the index, or rebuild what is stale",
                              description="Build the inverted index of the corpus (only when stale).")
    _common(p)
    p.add_argument("--force", action="store_true", help="rebuild from scratch even when up to date")
    p.set_defaults(func=cmd_index)

    s = subparsers.add_parser("search", help="rank chunks for a question",
                              description="Rank the corpus's chunks for a question (BM25 by default).")
    s.add_argument("question", nargs="?",
                   help="the question or keywords to search for (at most %d characters); leave it out with "
                        "--scope DOC to list every chunk of that document, in order" % MAX_QUESTION_CHARS)
    s.add_argument("--k", type=int, default=None, metavar="N",
                   help="number of chunks to show, 1 to %d (default: [retrieval] top_k)" % MAX_K)
    s.add_argument("--json", action="store_true",
                   help="print JSON (a list of hits, or the Retrieval with --contract)")
    s.add_argument("--contract", action="store_true",
                   help="run the QA contract flow: expansion, typo correction, thresholds, "
                        "fallback, scope and MMR")
    s.add_argument("--scope", metavar="DOC",
                   help="one document only (its doc_id: its path under the corpus without the extension); "
                        "without a question, its chunks are listed: the ids a gold set cites")
    _common(s)
    s.set_defaults(func=cmd_search)


def _progress(total_hint: int = 0, quiet: bool = False) -> Progress:
    return Progress(total_hint, "indexing chunks", enabled=False if quiet else None)


def cmd_index(args) -> int:
    from ..indexing.index import build_or_load, read_manifest
    config = _config(args)
    corpus = config["corpus"]["path"]
    with _progress(quiet=args.quiet) as progress:
        index = build_or_load(config, corpus, force=args.force, progress=progress)
    path = config["index"]["path"]
    stats = read_manifest(path)["stats"]
    reused = getattr(index, "reused_chunks", None)
    note = "up to date" if reused is None else "built, %d of %d chunks reused" % (reused, index.num_chunks)
    print("%s: %d documents, %d chunks, %d terms, %d postings (%s, %d bytes)"
          % (path, stats["documents"], stats["chunks"], stats["terms"], stats["postings"],
             note, os.path.getsize(path)))
    if config["retrieval"].get("mode", "bm25") != "bm25":
        from ..embed.hybrid import build_dense, check_settings
        from ..embed.dense import dense_path
        check_settings(config)
        _, dense = build_dense(config, index)
        print("%s: %d vectors of %d dimensions (%d encoded, %d reused)"
              % (dense_path(config), len(dense.keys), dense.manifest["dim"], dense.encoded,
                 len(dense.keys) - dense.encoded))
    return 0


def _excerpt(text: str) -> str:
    """The first ``EXCERPT_CHARS`` of a chunk's text (as ``shown``: as an answer quotes it)."""
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS - 3] + "..."


def _print_hits(hits, out, paged=None, markup=None) -> None:
    """One hit a line and its excerpt; ``p.<page>`` only for a document with pages (``paged``,
    ``trace.paged_documents``; None: every hit's); the excerpt as an answer quotes it (plain
    text for a document in ``markup``, ``trace.shown``)."""
    for h in hits:
        page = "" if paged is not None and h.doc_id not in paged else "p.%d  " % h.page
        out.write(terminal_safe("%2d. %-28s sim=%.3f score=%.4f %s%s\n    %s\n"
                                % (h.rank, h.chunk_id, h.similarity, h.score, page,
                                   " > ".join(_path(h)), _excerpt(shown(h.text, h.doc_id, markup)))))


def _path(hit) -> list:
    """The hit's title, then its section path (the headings above it) without repeats."""
    out = [hit.title] if hit.title else []
    for h in getattr(hit, "section", None) or ([hit.heading] if hit.heading else []):
        if h and h not in out:
            out.append(h)
    return out


def scope_chunks(index, doc: str) -> list:
    """The chunks of document ``doc`` in order; exit 2 naming close doc ids when it has none
    (``ambergate`` for ``guides/ambergate``: a doc id is the path without the extension)."""
    import difflib
    chunks = [c for c in index.chunks if c.doc_id == doc]
    if chunks:
        return chunks
    docs = sorted({c.doc_id for c in index.chunks})
    close = [d for d in docs if d.rsplit("/", 1)[-1] == doc.rsplit("/", 1)[-1]]
    close = close or difflib.get_close_matches(doc, docs, n=3, cutoff=0.8)
    raise MiniRagError("--scope %r names no document of the corpus (a doc id is the file's path under the corpus "
                       "without its extension)%s" % (doc, "; did you mean %s?" % " or ".join(repr(d) for d in close[:3])
                                                     if close else ""))


def _list_document(chunks, out, as_json: bool, k, markup) -> int:
    """``search --scope DOC`` without a question: the document's chunks, in order (id, page
    when it has pages, kind when not a paragraph, section path, then the whole text as plain
    text for a Markdown or reST document, ``trace.shown``, as an answer would quote it: what a
    gold substring must match; a heading is its line alone)."""
    chunks = chunks[:k] if k else chunks
    if as_json:
        out.write(json_terminal_safe(json.dumps([{"chunk_id": c.chunk_id, "page": c.page, "kind": c.kind,
                                                   "section": list(c.section), "text": c.text} for c in chunks],
                                                 ensure_ascii=False, indent=2)) + "\n")
        return 0
    paged = any(c.page > 1 for c in chunks)
    for c in chunks:
        kind = "" if c.kind == "text" else "(%s, never an answer) " % c.kind if c.kind in ("heading", "code") \
            else "(%s) " % c.kind
        out.write(terminal_safe("%-28s %s%s%s\n" % (c.chunk_id, "p.%d  " % c.page if paged else "", kind,
                                                     " > ".join(_path(c)))))
        if c.kind != "heading":
            for line in shown(c.text, c.doc_id, markup).split("\n"):
                out.write(terminal_safe("    %s\n" % line))
    return 0


def cmd_search(args) -> int:
    from ..trace import markup_documents, paged_documents
    from ..search.retrieve import open_retriever
    config = _config(args)
    if args.question is None and not args.scope or args.question is None and args.contract:
        raise MiniRagError("usage: search needs a question, or --scope DOC alone to list that document's chunks")
    if args.question is not None:
        check_question(args.question)
    if args.k is not None:
        if not 1 <= args.k <= MAX_K:
            raise MiniRagError("--k must be from 1 to %d, got %d" % (MAX_K, args.k))
    with _progress(quiet=args.quiet) as progress:
        retriever = open_retriever(config, config["corpus"]["path"], progress=progress)
    out = sys.stdout
    markup = markup_documents(config["index"]["path"])
    if args.scope:
        listed = scope_chunks(retriever.index, args.scope)
        if args.question is None:
            return _list_document(listed, out, args.json, args.k, markup)
    from ..config import resolve_as_of
    resolve_as_of(config, retriever.index, quiet=args.quiet)      # the age signals of --contract
    if args.contract:
        if args.k is not None:
            config["retrieval"]["top_k"] = args.k
        result = retriever.retrieve(args.question, doc_scope=args.scope)
        if args.json:
            out.write(json_terminal_safe(json.dumps(result.to_json(), ensure_ascii=False, indent=2)) + "\n")
            return 0
        s = result.signals
        out.write(terminal_safe("hits: %d of %d candidates; fallback: %s; expansions: %s; corrections: %s\n"
                                % (s["hit_count"], s["candidate_count"], "yes" if result.fallback_used else "no",
                                   result.expansions or "none", result.corrections or "none")))
        _print_hits(result.hits, out, paged_documents(retriever.index, [h.chunk_id for h in result.hits]), markup)
        return 0
    hits = retriever.search(args.question, args.k or config["retrieval"]["top_k"],
                            scope=config["retrieval"]["authority_scope"], doc_scope=args.scope)
    if args.json:
        out.write(json_terminal_safe(json.dumps([h.to_json() for h in hits], ensure_ascii=False, indent=2)) + "\n")
    else:
        if not hits:
            out.write("no chunk shares a term with the question\n")
        _print_hits(hits, out, paged_documents(retriever.index, [h.chunk_id for h in hits]), markup)
    return 0


__all__: List[str] = ["register", "cmd_index", "cmd_search"]
