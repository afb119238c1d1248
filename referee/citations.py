"""Reading 1: citation markers and sources lists read out of a claim (the claim without them)."""
from __future__ import annotations

import heapq
import re
from bisect import bisect_left
from typing import NamedTuple

from .lexicon import CITATION_PATTERNS, _CITE_NEEDS, _CITE_NUM
from .text import problem_text, read_problem, text_form

# ---- reading 1: citations in the text
#
# An LLM names its sources in its prose: inline markers ("[1]", "[1, 3]", "[doc#p3]",
# "(Source: X)", "【1†source】", "<sup>1</sup>", ...) and a trailing "Sources:" list.
# read_citations() finds them with the citation patterns (CITATION_PATTERNS, or the gates
# file's [scorer] citation_patterns, which replace them; [] reads none), resolves each
# reference to chunk ids and returns the claim without the markers and the list.  Every
# verdict reads that claim.  A pattern says what its match holds by its named group:
#   ref      a reference list ("1", "1, 3", "1-3", "doc#p3", "Source 2"); the match is a
#            marker only when every reference in it has the shape of one (ordinary bracketed
#            text such as "[sic]" or "[2019]" is left alone);
#   ids      the same, chunk or document ids only (no bare numbers: "(1)" is list numbering);
#   cite     an explicit citation ("(Source: X)"): always a marker, X must resolve;
#   doc, page  "(X, p. 3)": chunk X#p3 (or X#3), else the retrieved chunks of document X;
#            unresolved, a marker only when the group abbr matched ("p.", not "page");
#   sources  the header of a sources list: the rest of the text is the list, one reference
#            a line (or comma-separated on one line); it counts only when one of its items
#            has the shape of a reference.
# A pattern without these groups is explicit: its first group (else the whole match) is
# the reference.  A reference resolves to: a retrieved id or a known chunk id (cited_chunks,
# --chunks) as written, read whole whatever words and signs it holds ("[billing-and-invoicing#p8]",
# "[docs/a.md#p2, https://x.org/?a=1&b=2#p4]": a list is split at , ; & "and" only where the
# pieces do not join into a chunk or document id); a number N (1 to 3 digits, "Doc N", "Source N", a range "N-M" of at
# most 20) to the N-th of retrieved_ids; a document id (the chunk id before "#") to its
# retrieved chunks.  Anything else that is a marker (an id-like "x#y" that names no chunk,
# "[7]" with five retrieved) resolves to nothing: a bad marker (F_BADMARK).

_CITE_TRIGGER = re.compile("[\\[(\u3010<:\\n]")    # no such character: the built-in patterns find nothing
_CITE_TRIGGER_CHARS = "[(\u3010<:\n\uff3b\uff08\uff1a"   # the same and their fullwidth forms (text_form), looked for without the regex engine (Scorer.read)
_CITE_GROUPS = ("ref", "ids", "cite", "doc", "page", "abbr", "sources")
_CITE_SPLIT = re.compile(r"([,;&]|\band\b)")
MAX_ID_JOIN = 8              # an id read whole may hold up to 8 of the separators above ("billing-and-invoicing#p8")
_CITE_ITEM_NUM = re.compile(r"([1-9]\d{0,2})[.)](?:\s|$)")       # "1. Title", "2) Title"
_CITE_BRACKET_NUM = re.compile(r"\[\^?([1-9]\d{0,2})\]")
MAX_CITE_RANGE = 20          # "[1-20]" is read; a wider range is a bad marker
MAX_MARKERS = 1000           # limit: markers read per response; the rest stay in the claim (a warning names the row)


class Reading(NamedTuple):
    """A response read by read_citations."""
    claim: str               # the text without markers and sources list (unchanged when none)
    citations: List[str]     # chunk ids read, in order of first mention, each once
    bad: List[str]           # markers (or list items) that resolve to nothing, as written


_CITATION_RX = tuple((src, re.compile(src, re.IGNORECASE)) for src in CITATION_PATTERNS)


def citation_patterns() -> tuple:
    """The built-in CITATION_PATTERNS as (source, regex) pairs, compiled as the gates file's are."""
    return _CITATION_RX


def citation_pattern_problem(src: str, rx) -> Optional[str]:
    """Why a [scorer] citation_patterns entry cannot be used (beyond regex_problem), or None."""
    names = set(rx.groupindex)
    unknown = sorted(names - set(_CITE_GROUPS))
    if unknown:
        return "unknown named group %s; known: %s" % (", ".join(unknown), ", ".join(_CITE_GROUPS))
    if ("doc" in names) != ("page" in names):
        return "groups doc and page go together"
    return None


def read_citations(text: str, retrieved, known=(), patterns: Optional[tuple] = None) -> Reading:
    """Citations read from ``text`` (module comment above).  ``retrieved``: the row's
    retrieved_ids (rank order); ``known``: containers of further chunk ids (``in`` tested);
    ``patterns``: (source, regex) pairs, None for the built-in ones.  Never raises on text: a
    text it cannot read has no citations (read_problem names it)."""
    try:
        return _read_citations(text, retrieved, known, patterns)
    except Exception as exc:          # noqa: BLE001 - a reader's bug must not end the run (issue 44)
        read_problem(problem_text("citation markers", exc))
        return Reading(text, [], [])


def _read_citations(text: str, retrieved, known, patterns: Optional[tuple]) -> Reading:
    """read_citations: the text is read in its text_form (fullwidth brackets, any script's
    digits); offsets into it are offsets into the text, which the claim is cut from.  Time
    linear in the text: the candidates of every pattern are merged as they are found (never
    all held), a sources list is looked for once per line (_first_list), and at most
    MAX_MARKERS markers are read."""
    needs: tuple = ()
    form = text if text.isascii() else text_form(text)
    if patterns is None:
        patterns = citation_patterns()
        if not _CITE_TRIGGER.search(form):
            return Reading(text, [], [])
        needs = _CITE_NEEDS
    if not patterns or not text:
        return Reading(text, [], [])
    res = _Resolver(retrieved, known)
    streams = []          # per pattern: (start, -end, order, match), in order
    head = None           # (start, end, items) of the sources list
    for order, (_, rx) in enumerate(patterns):
        if needs and not any(ch in form for ch in needs[order]):
            continue
        if "sources" in rx.groupindex:
            got = _first_list(form, rx, res, head[0] if head is not None else None)
            if got is not None:
                head = got
            continue
        streams.append(_candidates(rx, form, order))
    cut = head[0] if head is not None else len(text)
    cits: Dict[str, None] = {}
    bad: Dict[str, None] = {}
    parts = []
    pos = last = read = 0
    for start, neg_end, _, m in heapq.merge(*streams):
        end = -neg_end
        if start < last or end > cut:
            continue
        refs = _marker_refs(m, res)
        if refs is None:
            continue
        read += 1
        if read > MAX_MARKERS:
            read_problem("citation markers past the first %d were not read (they stay in the claim)" % MAX_MARKERS)
            break
        s = start
        while s > pos and text[s - 1] in " \t":
            s -= 1
        if s > pos:
            parts.append(text[pos:s])
        pos = last = end
        for ok, v in refs:
            (cits if ok else bad)[v] = None
    if not read and head is None:
        return Reading(text, [], [])
    parts.append(text[pos:cut])
    if head is not None:
        for ok, v in head[2]:
            (cits if ok else bad)[v] = None
    claim = "".join(parts).strip()
    if head is not None and text[head[1]:].strip():          # prose after the list stays
        claim = (claim + "\n\n" + text[head[1]:].strip()).strip()
    return Reading(claim, list(cits), list(bad))


def _candidates(rx, text: str, order: int):
    """(start, -end, order, match) of each match of ``rx`` in ``text``, in order (the sort key
    of the candidates of every pattern: earliest, then longest, then the pattern listed first)."""
    for m in rx.finditer(text):
        yield m.start(), -m.end(), order, m


def _first_list(text: str, rx, res, before: Optional[int]):
    """(start, end, references) of the first header of ``rx`` in ``text`` (before offset
    ``before``) whose list has an item with a reference's shape, None when none has.  A
    header's list is every line after it, so a header is tried only when the rest of its
    own line or a later line has that shape (_source_line, read once per line): a text of
    thousands of headers costs one pass.  The rests of lines after headers on one line are
    read up to a budget of characters (a warning names the row past it)."""
    shaped: Optional[List[int]] = None      # starts of the lines that have a reference's shape
    budget = 4 * len(text) + 4096
    for m in rx.finditer(text):
        if before is not None and m.start() >= before:
            break
        eol = text.find("\n", m.end())
        eol = len(text) if eol < 0 else eol
        budget -= eol - m.end()
        if budget < 0:
            read_problem("sources lists past %d characters of headers were not read" % (4 * len(text) + 4096))
            return None
        rest = text[m.end():eol].strip()
        if not (rest and _source_line(rest, res)):
            if shaped is None:
                shaped = _shaped_lines(text, res)
            if bisect_left(shaped, eol + 1) == len(shaped):
                continue                       # no line after the header has a reference's shape
        items = _source_items(text[m.end():], res)
        if items is not None:
            return (m.start(), m.end() + items[1], items[0])
    return None


def _shaped_lines(text: str, res) -> List[int]:
    """Start offsets of the lines of ``text`` that have a reference's shape (_source_line)."""
    out = []
    pos = 0
    for raw in text.split("\n"):
        ln = raw.strip()
        if ln and _source_line(ln, res):
            out.append(pos)
        pos += len(raw) + 1
    return out


class _Resolver:
    """References of one response resolved against its retrieved and known chunk ids."""

    def __init__(self, retrieved, known):
        self.ret = list(retrieved or ())
        self.retset = set(self.ret)
        self.known = [k for k in known if k]
        self.docs: Optional[Dict[str, List[str]]] = None

    def chunk(self, ref: str) -> bool:
        return ref in self.retset or any(ref in k for k in self.known)

    def doc(self, ref: str) -> List[str]:
        if self.docs is None:
            self.docs = {}
            for c in self.ret:
                self.docs.setdefault(c.split("#", 1)[0], []).append(c)
        return self.docs.get(ref, [])

    def rank(self, a: int, b: int, written: str) -> list:
        if b < a or b - a >= MAX_CITE_RANGE:
            return [(False, written)]
        return [(True, self.ret[n - 1]) if n <= len(self.ret) else (False, written) for n in range(a, b + 1)]

    def ref(self, piece: str, numbers: bool = True):
        """[(resolved?, id or text)] for one reference, None when it has no reference's shape."""
        p = piece.strip().strip("[]^\"'`*").strip()
        if "\u2020" in p:                      # 【1†source】
            p = p.split("\u2020", 1)[0].strip()
        if not p:
            return None
        if self.chunk(p):
            return [(True, p)]
        if numbers:
            m = _CITE_NUM.fullmatch(p)
            if m:
                a = int(m.group(1))
                return self.rank(a, int(m.group(2)) if m.group(2) else a, piece.strip())
        if "#" not in p:
            ids = self.doc(p)
            if ids:
                return [(True, c) for c in ids]
        elif not any(ch.isspace() for ch in p) and not p.startswith("#") and not p.endswith("#"):
            return [(False, piece.strip())]       # names a chunk that was not retrieved
        return None

    def whole(self, span: str):
        """[(True, id)] when ``span`` names a retrieved or known chunk or a retrieved
        document as written, whatever words and signs it holds; else None."""
        p = span.strip().strip("[]^\"'`*").strip()
        if not p:
            return None
        if self.chunk(p):
            return [(True, p)]
        ids = self.doc(p) if "#" not in p else []
        return [(True, c) for c in ids] or None

    def pieces(self, body: str, numbers: bool = True):
        """(written, references or None), one by one, of a reference list.  It is split at
        commas, semicolons, "&" and "and" unless it names a chunk or document whole; when a
        piece resolves to nothing, pieces joined across up to MAX_ID_JOIN separators that name
        a chunk or document as written are one id ("[billing-and-invoicing#p8, 2]"), the
        longest first, and an unresolved piece joined by "and" or "&" to its neighbours
        without blanks into an id-like "x#y" ("[q-and-a#p9]") is one unresolved id."""
        parts = _CITE_SPLIT.split(body)            # piece, separator, piece, ...
        if len(parts) > 1:
            r = self.whole(body)
            if r is not None:
                yield body.strip(), r
                return
        simple = []
        for piece in parts[::2]:
            r = self.ref(piece, numbers) if piece.strip() else []      # "6, 7, and 9"
            if r is None or not all(ok for ok, _ in r):
                break
            if r:
                simple.append((piece.strip(), r))
        else:
            yield from simple
            return
        yield from self._joined(parts, numbers)

    def _joined(self, parts, numbers):
        i, n = 0, len(parts)
        while i < n:
            hit = None
            for j in range(min(n - 1, i + 2 * MAX_ID_JOIN), i, -2):
                span = "".join(parts[i:j + 1])
                r = self.whole(span)
                if r is not None:
                    hit = (j, span, r)
                    break
            if hit is None and not parts[i].strip():
                i += 2
                continue
            if hit is None:
                r = self.ref(parts[i], numbers)
                hit = (i, parts[i], r) if r is not None else (_id_like(parts, i) or (i, parts[i], None))
            yield hit[1].strip(), hit[2]
            i = hit[0] + 2

    def refs(self, body: str, numbers: bool = True):
        out = []
        for _, r in self.pieces(body, numbers):
            if r is None:
                return None
            out.extend(r)
        return out or None


def _id_like(parts, i):
    """(index of the last piece, span, [(False, span)]) for the longest span from piece i whose
    pieces are joined by "and" or "&" without blanks into an id's shape ("x#y"), or None."""
    best = None
    for j in range(i + 2, min(len(parts), i + 2 * MAX_ID_JOIN + 1), 2):
        if parts[j - 1].strip().lower() not in ("&", "and"):
            break
        span = "".join(parts[i:j + 1]).strip()
        if any(ch.isspace() for ch in span):
            break
        if "#" in span and not span.startswith("#") and not span.endswith("#"):
            best = (j, span, [(False, span)])
    return best


def _marker_refs(m, res: _Resolver):
    """[(resolved?, id or text)] of one pattern match, or None when it is no marker."""
    g = m.groupdict()
    written = m.group(0).strip()
    if g.get("doc") is not None:
        d, page = g["doc"].strip(), g["page"]
        for cid in ("%s#p%s" % (d, page), "%s#%s" % (d, page), "%s#page%s" % (d, page)):
            if res.chunk(cid):
                return [(True, cid)]
        ids = res.doc(d)
        if ids:
            return [(True, c) for c in ids]
        # "(Handbook, p. 3)" names a source that resolves to nothing; "(for example, page 3)" is prose
        return [(False, written)] if g.get("abbr") is not None else None
    if g.get("ref") is not None or g.get("ids") is not None:
        refs = res.refs(g["ref"], True) if g.get("ref") is not None else res.refs(g["ids"], False)
        return None if refs is None else [r if r[0] else (False, written) for r in refs]
    body = g.get("cite")
    if body is None:
        body = m.group(1) if m.re.groups else m.group(0)
    out = []
    for piece, r in res.pieces(body):
        out.extend(r or [(False, piece)])
    return out or [(False, written)]


def _source_items(body: str, res: _Resolver):
    """(references, length of the list) of a sources list (``body``: the text after its
    header), or None when no item has the shape of a reference (then it is prose, not a
    list).  The list ends at a line after a blank line that is no reference ("Let me know
    if ..."): that text stays in the claim."""
    out: list = []
    shaped = False
    pos = 0
    blank = False
    end = len(body)
    for raw in body.split("\n"):
        start, pos = pos, pos + len(raw) + 1
        ln = raw.strip()
        if not ln:
            blank = True
            continue
        after_blank, blank = blank, False
        got = _source_line(ln, res)
        if got:
            shaped = True
            out.extend(got)
        elif after_blank and shaped:
            end = start
            break
        else:
            out.append((False, ln.lstrip("-*\u2022+> \t")[:80]))
    return (out, end) if shaped else None


def _source_line(ln: str, res: _Resolver) -> list:
    """The references of one line of a sources list (``ln``: stripped, not empty); empty when
    it has no reference's shape."""
    item = ln.lstrip("-*\u2022+> \t")
    whole = res.refs(item)
    if whole is not None:                 # "[1], [3]", "doc#p3; doc#p5", "1-2"
        return whole
    got = []
    for tok in item.split():
        r = res.ref(tok.strip("()[]<>{}\"'`*.,;:"), numbers=False)
        if r is not None:
            got.extend(r)
    if not got:
        nums = _CITE_BRACKET_NUM.findall(item) or [m.group(1) for m in [_CITE_ITEM_NUM.match(item)] if m]
        for n in nums:
            got.extend(res.rank(int(n), int(n), "[%s]" % n))
    return got
