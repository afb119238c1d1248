"""The response record: what a system wrote in one trace row, read once; every verdict reads it."""
from __future__ import annotations

from typing import NamedTuple

from .registry import F_CUTOFF, F_PARTIAL, F_PROSE, F_REFUSED
from .citations import _CITE_TRIGGER_CHARS, read_citations
from .refusals import KIND_ANSWER, KIND_PARTIAL, KIND_REFUSAL, REFUSAL_WINDOW, plain_answer, read_refusal
from .answers import answer_tokens
from .grounding import answer_sentences
from .config import Rules, _literals_absent

# ---- the response record
# ``ResponseReader.read`` is the one place a trace row's claim is read.  It runs the readings in
# order: reading 1 (citations in the text, with the [scorer] citation_patterns) gives the claim
# without markers that every later reading and verdict reads; reading 2 (the refusal reading:
# the token, the built-in reader or the exact one, the [scorer] decline and cutoff patterns);
# reading 3 (answer normalisation) and reading 4 (sentences and what grounding checks of each)
# are read on first use, since most rows match no gold answer and most runs ground nothing.
# The numbers and words of the claim (judge.tokens: the hallucination check and answer
# relevance) are kept on the record by the first verdict that needs them.


class Refusal(NamedTuple):
    """Reading 2 of a response: whether it declines."""
    kind: str = KIND_ANSWER          # answer / refusal / partial_refusal
    reason: str = ""                 # why ("" for an answer read without a caveat)
    flags: int = 0                   # as judge's flags: F_REFUSED (not shipped) | F_PROSE | F_CUTOFF | F_PARTIAL
    cutoff: Optional[str] = None     # the training-cutoff excuse's words (F_CUTOFF)


_READ_AS_ANSWER = Refusal()
_THE_TOKEN = Refusal(KIND_REFUSAL, "the refusal token", F_REFUSED)
_EXACT_TOKEN = Refusal(KIND_REFUSAL, "", F_REFUSED)        # the exact reader gives no reason


class Response:
    """One trace row's response as every verdict reads it (built by ``ResponseReader.read``)."""
    __slots__ = ("claim", "low", "citations", "text_citations", "bad_marks", "refusal", "tokens",
                 "_words", "_sentences")

    def __init__(self, claim: str, citations: List[str], text_citations: Optional[List[str]], bad_marks):
        self.claim = claim                    # without citation markers and sources list, stripped
        self.low = claim.lower()
        self.citations = citations            # the row's list, else the citations read from the text
        self.text_citations = text_citations  # the citations read when they replaced an empty list, else None
        self.bad_marks = bad_marks            # markers that resolve to nothing, as written
        self.refusal: Refusal = _READ_AS_ANSWER    # reading 2 (ResponseReader.read sets it)
        self.tokens: Optional[set] = None     # judge.tokens(claim), kept by the first verdict that reads them
        # _words and _sentences: set on first use (answer_words, sentences)

    @property
    def answer_words(self) -> List[str]:
        """Reading 3: the claim's normalised words (``answer_tokens``), read on first use."""
        try:
            return self._words
        except AttributeError:
            self._words = answer_tokens(self.claim)
            return self._words

    @property
    def sentences(self) -> List[Tuple[int, int, str, Optional[str]]]:
        """Reading 4: ``answer_sentences`` of the claim (its markers are already out: none is
        read again), read on first use."""
        try:
            return self._sentences
        except AttributeError:
            self._sentences = answer_sentences(self.claim, ())
            return self._sentences


class ResponseReader:
    """The settings of every reading of a response: the [scorer] citation patterns, the known
    chunk ids (--chunks), the refusal token and the refusal reader with its patterns."""

    def __init__(self, refusal: str, rules: Optional[Rules] = None, chunks: Optional[Dict[str, str]] = None):
        self.rules = rules = rules or Rules()
        self.cite_patterns = rules.citations          # None: the built-in patterns; (): none
        self.chunks = chunks
        self.token = refusal.strip().lower()
        self.token_first = self.token.split(None, 1)[0] if self.token else ""   # plain_answer's
        self.prose_rules = bool(rules.refusal or rules.cutoff)
        self.declines = rules.refusal + rules.cutoff  # decline wordings for the built-in reader

    def read(self, claim: Optional[str], cits: Optional[List[str]], ret, cited, present: bool = True) -> Response:
        """The record of one row: its ``answer_json`` claim and citations (None when absent),
        ``retrieved_ids`` and ``cited_chunks``; ``present``: False for an item without a row."""
        resp = None
        # reading 1: the claim loses its markers and sources list; an empty or absent citations
        # list is replaced by the citations read from the text (with each bad marker as written:
        # a citation outside retrieved_ids)
        pats = self.cite_patterns
        if claim and pats != () and (pats is not None or any(map(claim.__contains__, _CITE_TRIGGER_CHARS))):
            rd = read_citations(claim, ret, (cited, self.chunks), pats)
            if rd.citations or rd.bad:
                resp = (Response(rd.claim, cits, None, rd.bad) if cits else
                        Response(rd.claim, rd.citations + rd.bad, rd.citations, rd.bad))
        if resp is None:
            resp = Response((claim or "").strip(), cits or [], None, ())
        # reading 2, of the claim reading 1 left; readings 3 and 4 on first use (Response)
        resp.refusal = self.refusal(resp.claim, resp.low, present)
        return resp

    def refusal(self, claim: str, low: str, present: bool) -> Refusal:
        """Reading 2 of a claim read by reading 1 (``low``: lower-cased).  An item without a
        row is read only by the exact reader (seed 002: an empty claim)."""
        rules = self.rules
        if rules.reader == "exact":
            if low == self.token:
                return _EXACT_TOKEN
            bits = rules.refuses(claim) if self.prose_rules else 0     # issue 20: matched anywhere
            if not bits:
                return _READ_AS_ANSWER
            return Refusal(KIND_REFUSAL, "", bits | F_REFUSED, self._cutoff_words(claim) if bits & F_CUTOFF else None)
        if not present:
            return _READ_AS_ANSWER
        if low == self.token:       # fast path: exactly the token (read_refusal's first case)
            return _THE_TOKEN
        extra = self.declines
        # [scorer] patterns a claim cannot match (none of their required literals; a claim the
        # reader reads whole) are left out of the reading: they would mark nothing
        if extra and len(claim) <= REFUSAL_WINDOW and _literals_absent(extra, claim):
            extra = ()
        if not extra and plain_answer(claim, low, self.token, self.token_first):
            return _READ_AS_ANSWER     # fast path: no decline cue can apply (read_refusal's "none" case)
        kind, reason, pat = read_refusal(claim, self.token, extra)
        if reason and pat:
            reason = "%s [pattern %d]" % (reason, pat)
        if kind == KIND_ANSWER:
            return Refusal(kind, reason)
        if kind == KIND_PARTIAL:
            return Refusal(kind, reason, F_PARTIAL)
        if reason == "the refusal token":
            return _THE_TOKEN
        cutoff = self._cutoff_words(claim) if rules.cutoff else None
        return Refusal(kind, reason, F_REFUSED | F_PROSE | (F_CUTOFF if cutoff is not None else 0), cutoff)

    def _cutoff_words(self, claim: str) -> Optional[str]:
        """The words of the first [scorer] cutoff pattern that matches (its first 80
        characters), None when none does."""
        for _, rx in self.rules.cutoff:
            m = rx.search(claim)
            if m:
                return m.group(0)[:80]
        return None
