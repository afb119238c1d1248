"""Judging: per-item verdicts (flags) from one gold row and one trace row; no I/O."""
from __future__ import annotations

import contextlib
import gc
import math
import re
import sys
import time
from array import array
from operator import gt

from .base import DECISIONS, MAX_CITATIONS, _LETTER_BYTES, _NUMBER_BYTES, _NUMBER_RX, _TOKEN_RX
from .lexicon import STOPWORDS
from .registry import (F_ANS, F_ANSOK, F_BADMARK, F_CITTEXT, F_CONT, F_CUTOFF, F_DEC, F_DECOK,
    F_EXPREF, F_FB, F_FBUSED, F_GMEAS, F_GOLDRET, F_HALL, F_HIT, F_HMEAS, F_NOTRET, F_OKCLAR,
    F_OKCONF, F_OKDOCS, F_OKSTALE, F_PASS, F_POLREJ, F_POLV, F_REC, F_REFUSED,
    F_REQCLAR, F_REQCONF, F_REQDOCS, F_REQSTALE, F_SHIP, F_SRCV, F_TRACE, F_UNSUP, F_VALID, NEEDS)
from .retrieval import (_disc, hits_at, ideal_dcg, ideal_gains, measure_ndcg, measure_r,
    measure_rr, relevant_positions)
from .inputs import _Errors, _IS_STR, _jsonl, _num_list, _show, _str_list
from .answers import match_answer
from .grounding import ground
from .config import Rules, SOURCE_POLICIES, _any_search, _literals_absent, _num
from .contracts import Gold
from .response import Response, ResponseReader

# --------------------------------------------------------------------------- judging


def tokens(text: str) -> set:
    """Lower-cased word and number tokens; "1,000" and "1000" are the same number."""
    low = text.lower()
    if low.isascii():       # _TOKEN_RX's tokens by byte translations (_LETTER_BYTES)
        raw = low.encode()
        found = set(ascii_words(raw))
        for part in raw.translate(_NUMBER_BYTES).split():
            if part.isdigit():
                found.add(part.decode())
            elif part.strip(b".,"):
                found.update(_NUMBER_RX.findall(part.decode()))
    else:
        found = set(_TOKEN_RX.findall(low))
    if "," in text:
        found = {t.replace(",", "") for t in found}
    return found


def ascii_words(raw: bytes) -> List[str]:
    """The words _TOKEN_RX finds in a lower-cased ASCII text (``raw``: its bytes): runs of a-z."""
    return raw.translate(_LETTER_BYTES).decode().split()


WORD_SET_CHARS = 2000     # unsupported_tokens: ASCII texts up to this size have their words listed


def unsupported_tokens(claim: str, texts: List[str], cache: Optional[dict] = None,
                       claim_tokens: Optional[set] = None, copy_checked: bool = False) -> List[str]:
    """Numbers and content words of ``claim`` that occur in none of ``texts`` (sorted);
    ``claim_tokens``: tokens(claim) when the caller has them; ``copy_checked``: the caller
    found that ``copied_from`` is False.  Without a ``cache`` an ASCII
    text is not tokenized: each wanted number is looked up in it (``_token_in``), and each wanted
    word too unless the texts are short (WORD_SET_CHARS): then in the set of their words."""
    if not copy_checked and copied_from(claim, texts):
        return []
    if claim_tokens is None:
        claim_tokens = tokens(claim)
    wanted = [tok for tok in claim_tokens if tok[0].isdigit() or (len(tok) >= 3 and tok not in STOPWORDS)]
    if not wanted:
        return []
    if cache is None and all(map(str.isascii, texts)):
        lows = [t.lower() for t in texts]
        words = None
        if sum(map(len, lows)) <= WORD_SET_CHARS:
            words = set(ascii_words(lows[0].encode())) if len(lows) == 1 else \
                {w for low in lows for w in ascii_words(low.encode())}
        bad = []
        for tok in wanted:
            if words is not None and not tok[0].isdigit():     # a word: one of the texts' words
                if tok not in words:
                    bad.append(tok)
                continue
            for n, low in enumerate(lows):
                found = _token_in(low, tok)
                if found is None:           # a number in a text with a comma: its tokens decide
                    found = tok in tokens(texts[n])
                if found:
                    break
            else:
                bad.append(tok)
        return sorted(bad)
    support: set = set()
    for t in texts:
        if cache is not None:
            toks = cache.get(t)
            if toks is None:
                toks = cache[t] = frozenset(tokens(t))
        else:
            toks = tokens(t)
        if len(texts) == 1:
            support = toks
        else:
            support |= toks
    return sorted(tok for tok in wanted if tok not in support)


_NOT_ALNUM = "".join(chr(c) for c in range(128) if not chr(c).isalnum())
_WORD_GOES_ON = frozenset("abcdefghijklmnopqrstuvwxyz")      # a word token goes on across these
_NUMBER_GOES_ON = frozenset("0123456789.,")                  # a number may (_TOKEN_RX)


def copied_from(claim: str, texts: List[str], low: Optional[str] = None) -> bool:
    """Whether ``_copied`` shows that an ASCII ``claim`` is copied from one of ``texts`` (then
    none of its tokens is unsupported: nothing to tokenize).  False proves nothing.
    ``low``: claim.lower() when the caller has it (Response.low)."""
    if not claim.isascii():
        return False
    core = (claim.lower() if low is None else low).strip(_NOT_ALNUM)
    for t in texts:
        if _copied(core, t):
            return True
    return False


def _copied(core: str, text: str) -> bool:
    """Whether every token of an ASCII claim is one of tokens(text), shown the cheap way: its
    ``core`` (lower-cased, without its leading and trailing non-alphanumerics, which hold no
    token) occurs in the ASCII ``text`` (case folded) between characters that cannot go on its
    first and last token.  False proves nothing."""
    if not core or not text.isascii():
        return False
    low = text.lower()
    p = low.find(core)
    if p < 0:
        return False
    e = p + len(core)
    return ((p == 0 or low[p - 1] not in (_WORD_GOES_ON if core[0].isalpha() else _NUMBER_GOES_ON))
            and (e == len(low) or low[e] not in (_WORD_GOES_ON if core[-1].isalpha() else _NUMBER_GOES_ON)))


def _token_in(low: str, tok: str) -> Optional[bool]:
    """Whether ``tok`` (one of tokens(some text)) is one of tokens(text) for an ASCII text,
    ``low`` = text.lower(), without tokenizing it: an occurrence that _TOKEN_RX would match
    whole.  A word is a maximal run of letters; a number starts after no digit (nor a digit and
    "." or ",") and ends before none (nor "." or "," and a digit).  None (undecided) for a
    number when the text has a comma (tokens() drops commas: "1,000" is 1000)."""
    size, end = len(tok), len(low)
    p = low.find(tok)
    if p < 0:
        return None if tok[0].isdigit() and "," in low else False
    if tok[0].isdigit():
        if "," in low:
            return None
        while p >= 0:
            e = p + size
            if ((p == 0 or not (low[p - 1].isdigit() or (low[p - 1] == "." and p >= 2 and low[p - 2].isdigit())))
                    and (e == end or not (low[e].isdigit() or (low[e] == "." and e + 1 < end and low[e + 1].isdigit())))):
                return True
            p = low.find(tok, p + 1)
        return False
    while p >= 0:
        e = p + size
        if (p == 0 or not low[p - 1].isalpha()) and (e == end or not low[e].isalpha()):
            return True
        p = low.find(tok, p + 1)
    return False


#: The most rankings ``Scorer._retrieval`` keeps measures of (cleared when full).
MEASURE_MEMO_LIMIT = 100000


def strictly_decreasing(values) -> bool:
    """Whether every value is larger than the next (an empty or one-value list is)."""
    return all(map(gt, values, values[1:]))

class Scorer:
    """Per-item verdicts, stored compactly (arrays) so memory grows with the gold set only."""

    def __init__(self, gold: Gold, ks: List[int], refusal: str, chunks: Optional[Dict[str, str]],
                 rules: Optional[Rules] = None, chunk_policies: Optional[Dict[str, str]] = None):
        n = len(gold)
        self.gold, self.ks = gold, ks
        self.chunks = chunks
        self.chunk_tokens: dict = {}
        self.k0 = ks[0]
        self.flags = array("Q", bytes(8 * n))
        # readings 1-4 of a row, with the [scorer] patterns: respond(claim, cits, ret, cited) -> Response
        self.reader = ResponseReader(refusal, rules, chunks)
        self.respond = self.reader.read
        self._init_extra(rules, chunk_policies)
        self._init_answers()
        self.seed_rec = {k: bytearray(n) for k in ks}
        self.hits = {k: array("I", bytes(4 * n)) for k in ks}
        self.rec = {k: array("d", bytes(8 * n)) for k in ks}
        self.ndcg = {k: array("d", bytes(8 * n)) for k in ks}
        self.rrk = {k: array("d", bytes(8 * n)) for k in ks}
        self.k_arrays = [(self.hits[k], self.rec[k], self.ndcg[k], self.rrk[k]) for k in ks]   # _retrieval's, in ks order
        self.rr = array("d", bytes(8 * n))
        self.unsupported: Dict[int, List[str]] = {}
        self.no_text: Dict[int, str] = {}
        self.text_cits: Dict[int, List[str]] = {}             # citations read from the text, by item
        self.bad_marks: Dict[int, List[str]] = {}             # markers that resolve to nothing, by item
        self.idcg: Dict[Tuple[int, int], float] = {}
        self.measure_memo: Dict[tuple, tuple] = {}            # _retrieval: (positions, nrel) -> measures
        _disc(max(ks) + 1)

    # ---- one item
    def judge(self, i: int, resp: Optional[Response], ret, scores, cited, decision, fallback, present: bool) -> None:
        """The seed's verdicts on item ``i`` (flags, rank measures, answer correctness) from its
        row's response record ``resp`` (score_trace), or from no row (``present`` False: an
        empty claim, seed 002; ``resp`` None, built here) or a TREC ranking (``resp`` None)."""
        gold = self.gold
        f = gold.base[i]
        if i in self.no_text:       # a later (duplicate) row replaces an earlier verdict
            del self.no_text[i]
        if i in self.unsupported:
            del self.unsupported[i]
        if present:
            f |= F_TRACE
        rel = gold.rel[i]
        ret = ret or []
        if gold.trec:
            self.flags[i] = self._judge_ranking(i, f, rel, ret, scores)
            return
        if resp is None:
            resp = self.respond(None, None, ret, cited, present)
        reason, refused = resp.refusal.reason, resp.refusal.flags      # reading 2: shipped or not, and why
        if i in self.refusal_reason:
            del self.refusal_reason[i]
        if reason:
            self.refusal_reason[i] = reason
        f |= refused & ~F_REFUSED
        cits = resp.citations
        citset = set(cits)
        retset = set(ret)
        in_ret = retset.issuperset(citset)
        # seed 002: hit needs citations within retrieved_ids and overlap with gold; with no
        # gold citations only an empty citation list hits.
        if rel:
            hit = in_ret and not citset.isdisjoint(rel)
        else:
            hit = in_ret and not cits
        subs = gold.subs[i]
        if subs is True:
            cont = True
        elif subs:
            cont = any(map(resp.low.__contains__, subs))
        else:
            cont = False
        if rel and not retset.isdisjoint(rel):
            f |= F_GOLDRET
        if not refused & F_REFUSED:
            f = self._judge_shipped(i, f, resp, citset, in_ret, hit, cont, cited)
        elif not f & F_ANS:
            f |= F_PASS
        exp = gold.expected[i]
        if exp and decision is not None:
            f |= F_DEC
            dec = decision.strip().upper()
            if dec == DECISIONS[exp - 1] or dec in gold.acceptable.get(i, ()):
                f |= F_DECOK
        if fallback is not None:
            f |= F_FB
            if fallback:
                f |= F_FBUSED
        # seed recall at k: every gold citation among the first k retrieved_ids (trace order),
        # vacuously for none: whether the last one to appear appears within k
        if not rel:
            need = 0
        elif retset.issuperset(rel):
            need = max(map(ret.index, rel)) + 1 if len(rel) > 1 else ret.index(rel[0]) + 1
        else:
            need = math.inf
        for k in self.ks:
            self.seed_rec[k][i] = need <= k
        if need <= self.k0:
            f |= F_REC
        if rel and "ranks" in self.needs:     # when asked (NEEDS); retset tells whether the ids are distinct
            self._retrieval(i, rel, ret, scores, len(retset) == len(ret))
        if gold.answers or self.answer_substr:    # else nothing to match: K never set
            f = self._judge_answer(i, resp, f)
        if resp.text_citations is not None or resp.bad_marks or self.text_cits or self.bad_marks:
            f = self._mark_read(i, resp, f)
        self.flags[i] = f

    def _judge_ranking(self, i: int, f: int, rel, ret: List[str], scores) -> int:
        """TREC mode: the rank measures of item ``i``'s ranking, and whether it retrieved a
        relevant document (F_GOLDRET)."""
        if rel and "ranks" in self.needs:     # when asked (NEEDS)
            self._retrieval(i, rel, ret, scores, len(set(ret)) == len(ret))
            if ret and not set(rel).isdisjoint(ret):
                f |= F_GOLDRET
        return f

    def _judge_shipped(self, i: int, f: int, resp: Response, citset: set, in_ret: bool, hit: bool, cont: bool,
                       cited) -> int:
        """The seed's flags of a shipped response: content, citation hit and validity, and
        hallucination: its numbers and content words against the cited texts (F_HMEAS, F_HALL
        with ``unsupported[i]``; not measured when a cited chunk has no text: ``no_text[i]``)."""
        cits = resp.citations
        f |= F_SHIP
        if cont:
            f |= F_CONT
        if hit:
            f |= F_HIT
        if not in_ret:
            f |= F_NOTRET
        if in_ret and len(cits) <= MAX_CITATIONS and len(citset) == len(cits):
            f |= F_VALID
        if f & F_ANS and cont and hit:
            f |= F_PASS
        if not cits or not in_ret:
            return f | F_HALL | F_HMEAS
        texts = []
        cache = None
        for c in dict.fromkeys(cits):
            t = cited.get(c) if cited else None
            if t is None and self.chunks is not None:
                t = self.chunks.get(c)
                cache = self.chunk_tokens
            if t is None:
                self.no_text[i] = c
                return f
            texts.append(t)
        f |= F_HMEAS
        # a claim copied from a cited text is not tokenized (judge_extra then looks its
        # question's terms up in it: terms_in_text)
        if not copied_from(resp.claim, texts, resp.low):
            bad = unsupported_tokens(resp.claim, texts, cache, self._claim_tokens(resp), True)
            if bad:
                f |= F_HALL
                self.unsupported[i] = bad
        return f

    def _claim_tokens(self, resp: Response) -> set:
        """tokens(claim), kept on the record: the hallucination check and answer_relevance
        read the same numbers and words."""
        if resp.tokens is None:
            resp.tokens = tokens(resp.claim)
        return resp.tokens

    # ---- issue 28: answer correctness (reading 3)
    def _init_answers(self) -> None:
        n = len(self.gold)
        nan = array("d", [math.nan])
        self.answer_f1 = nan * n            # NaN = not measured (refused, or no gold answers)
        self.answer_recall = nan * n
        # gold_claim_substr is matched (normalised) only when asked: a gate names an answer
        # metric (run() sets this); gold_answers are always matched.
        self.answer_substr = False

    def _judge_answer(self, i: int, resp: Response, f: int) -> int:
        """answer_correct of item ``i``'s shipped claim (flags K; answer_f1/answer_recall)."""
        self.answer_f1[i] = self.answer_recall[i] = math.nan
        f &= ~F_ANSOK
        if not f & F_SHIP:
            return f
        golds = self.gold.answers.get(i)
        if golds is not None:
            m = match_answer(resp.claim, golds, self.gold.questions.get(i), words=resp.answer_words)
        elif self.answer_substr and f & F_ANS and type(self.gold.subs[i]) is tuple and self.gold.subs[i]:
            m = match_answer(resp.claim, self.gold.subs[i], None, partial=False, words=resp.answer_words)
        else:
            return f
        self.answer_f1[i] = m.f1
        self.answer_recall[i] = m.recall
        return f | F_ANSOK if m.correct else f

    def _mark_read(self, i: int, resp: Response, f: int) -> int:
        """F_CITTEXT / F_BADMARK of item ``i`` from reading 1 (a bad marker makes the citations
        invalid even when the row's own list is used); an earlier row's reading goes."""
        self.text_cits.pop(i, None)
        self.bad_marks.pop(i, None)
        if resp.text_citations is not None:
            f |= F_CITTEXT
            self.text_cits[i] = resp.text_citations
        if resp.bad_marks:
            f = (f | F_BADMARK) & ~F_VALID
            self.bad_marks[i] = resp.bad_marks
        return f

    def _retrieval(self, i: int, rel, ret, scores, distinct: bool) -> None:
        """The rank measures of item ``i`` at every k; ``distinct``: whether ``ret``'s ids are
        distinct (the caller knows: QA mode has their set already)."""
        # trec_eval order: score descending, then id descending; otherwise the trace's order.
        # Scores that strictly decrease already give that order (no tie for the ids to break).
        if scores is not None and not strictly_decreasing(scores):
            ranked = [d for _, d in sorted(zip(scores, ret), reverse=True)]
        else:
            ranked = ret
        if not distinct:                           # ranked: ret, perhaps reordered
            ranked = list(dict.fromkeys(ranked))   # a repeated id counts once, at its best rank
        if type(rel) is dict:
            positions, gains = relevant_positions(ranked, rel)
            rr, per_k = self._measures(positions, gains, len(rel), ideal_gains(rel.values()))
        else:       # gain 1 each: the measures depend on (positions, number of gold ids) only
            if len(rel) == 1:       # one gold id (most items): its rank, if retrieved
                key = ((ranked.index(rel[0]),) if rel[0] in ranked else (), 1)
            else:
                key = (tuple(relevant_positions(ranked, rel)[0]), len(rel))
            found = self.measure_memo.get(key)
            if found is None:
                if len(self.measure_memo) >= MEASURE_MEMO_LIMIT:   # bounded: long rankings must not grow it
                    self.measure_memo.clear()
                positions = list(key[0])
                found = self.measure_memo[key] = self._measures(positions, [1] * len(positions), key[1], None)
            rr, per_k = found
        self.rr[i] = rr
        for (hits_k, rec_k, ndcg_k, rrk_k), (_, hits, rec, ndcg, rrk) in zip(self.k_arrays, per_k):
            hits_k[i] = hits
            rec_k[i] = rec
            ndcg_k[i] = ndcg
            rrk_k[i] = rrk

    def _measures(self, positions: List[int], gains: List[int], nrel: int, ideal: Optional[List[int]]) -> tuple:
        """(RR, ((k, hits, R@k, nDCG@k, RR@k) for each k)) of one ranking's relevant
        ``positions``; ``ideal``: the ideal gains of graded relevance (None: gain 1 each)."""
        per_k = []
        for k in self.ks:
            hits = hits_at(positions, k)
            if ideal is not None:
                idcg = ideal_dcg(ideal, k)
            else:      # gain 1 each: the ideal DCG depends on (nrel, k) only
                idcg = self.idcg.get((nrel, k))
                if idcg is None:
                    idcg = self.idcg[(nrel, k)] = ideal_dcg([1] * nrel, k)
            per_k.append((k, hits, measure_r(hits, nrel), measure_ndcg(positions, gains, k, idcg),
                          measure_rr(positions, k)))
        return measure_rr(positions), tuple(per_k)

    # ---- issue 20: policies, decisions for the right reason, reference-free measures
    def _init_extra(self, rules: Optional[Rules], chunk_policies: Optional[Dict[str, str]]) -> None:
        n = len(self.gold)
        self.rules = rules or Rules()
        self.refusal_reason: Dict[int, str] = {}     # why an item was read as it was (refusals, caveats)
        self.chunk_policies = chunk_policies or {}
        self.evidence: Dict[int, List[dict]] = {}       # violations, by item (only failing items)
        nan = array("d", [math.nan])
        self.answer_rel = nan * n
        self.context_rel = nan * n
        self.latency = nan * n
        self.cost = nan * n
        self.term_cache: Dict[str, frozenset] = {}
        self.needs = set(NEEDS)      # what run() found asked for (see NEEDS); everything by default
        self.flags_seen = bytearray(n)
        # issue 29: grounding sentence by sentence (reading 4)
        self.grounding_on = self.rules.ground or self.rules.grounding == "sentences"
        self.faith = nan * n                               # supported / checked sentences, per item
        self.unsup_sents: Dict[int, List[dict]] = {}       # unsupported sentences, by item
        self.ground_no_text: Dict[int, str] = {}           # shipped item -> a chunk id without text
        # items with a question and retrieved chunks whose texts are not all known (no context value)
        self.context_lack = bytearray(n)
        # policy_compliance is measured when a [policy.*] exists or gold names a policy rejection
        self.policy_measured = bool(self.rules.policies) or any(b & F_POLREJ for b in self.gold.base)
        # every [policy.*] pattern in one tuple: a claim without any of their required literals
        # (_literals_absent) matches no policy
        self.policy_patterns = tuple(p for _, _, pats in self.rules.policies for p in pats)

    def judge_extra(self, i: int, resp: Response, ret, cited, cited_pol, decision, extra) -> None:
        """Issue 20's per-item verdicts, after ``judge`` set the seed flags of item ``i`` from
        the same response record ``resp``."""
        q, reasons, total, cost = extra
        f = self.flags[i]
        if i in self.evidence:
            del self.evidence[i]
        if self.flags_seen[i]:       # a duplicate row replaces the earlier verdict
            for arr in (self.answer_rel, self.context_rel, self.latency, self.cost, self.faith):
                arr[i] = math.nan
            self.unsup_sents.pop(i, None)
            self.ground_no_text.pop(i, None)
        self.flags_seen[i] = 1
        ret = ret or []
        if total is not None:
            self.latency[i] = total
        if cost is not None:
            self.cost[i] = cost
        if f & F_CUTOFF or (f & F_SHIP and (self.rules.policies or f & F_POLREJ or cited_pol or self.chunk_policies)):
            f = self._violations(i, f, resp, ret, cited, cited_pol)      # evidence[i]
        if f & (F_REQCONF | F_REQSTALE | F_REQCLAR | F_REQDOCS):
            f = self._right_reasons(i, f, resp.citations, decision, reasons)
        # reference-free relevance (lexical)
        self.context_lack[i] = 0
        if not q or "relevance" not in self.needs:
            pass
        elif not f & F_SHIP and not (ret and (self.chunks is not None or (cited and len(cited) >= len(ret)))):
            # no answer relevance and no context relevance to measure: whether q has a term
            # decides context_lack alone (has_content_terms: cheaper than the terms)
            if ret and has_content_terms(q):
                self.context_lack[i] = 1
        else:
            qt = content_terms(q)
            if qt and f & F_SHIP:
                toks = resp.tokens      # the claim's tokens when judge read them, else a lookup
                found_terms = terms_in(qt, toks) if toks is not None else terms_in_text(qt, resp.claim, resp.low)
                self.answer_rel[i] = found_terms / len(qt)
            # context relevance needs every retrieved chunk's text: --chunks, or all of them cited
            if qt and ret and (self.chunks is not None or (cited and len(cited) >= len(ret))):
                texts = self._texts(cited, ret, ())
                if len(texts) == len(set(ret)):
                    hit = sum(1 for c in ret if not qt.isdisjoint(self._terms(texts[c])))
                    self.context_rel[i] = hit / len(ret)
            if qt and ret and self.context_rel[i] != self.context_rel[i]:
                self.context_lack[i] = 1
        if self.grounding_on and f & F_SHIP:
            f = self._ground(i, f, resp, ret, cited)
        self.flags[i] = f

    def _violations(self, i: int, f: int, resp: Response, ret: List[str], cited, cited_pol) -> int:
        """The failure modes of item ``i`` (``evidence[i]``): the training-cutoff excuse (reading
        2's words), a shipped answer's [policy.*] matches and a gold policy rejection (F_POLV),
        source policies (F_SRCV)."""
        found: List[dict] = []
        claim = resp.claim
        if f & F_CUTOFF:
            found.append({"mode": "training_cutoff_excuse", "words": resp.refusal.cutoff})
        if f & F_SHIP:
            policies = self.rules.policies
            if policies and _literals_absent(self.policy_patterns, claim):
                policies = ()
            for name, msg, pats in policies:
                if not _any_search(pats, claim):      # one search per policy; its pattern only on a match
                    continue
                for src, rx in pats:
                    m = rx.search(claim)
                    if m:
                        found.append({"mode": "policy_violation", "policy": name, "pattern": src,
                                      "words": m.group(0)[:80], "message": msg})
                        break
            if f & F_POLREJ:
                found.append({"mode": "policy_violation", "policy": self.gold.reject_reason.get(i, ""),
                              "gold": "expected_behavior reject: the answer shipped"})
            if found and any(e["mode"] == "policy_violation" for e in found):
                f |= F_POLV
            if cited_pol or self.chunk_policies:
                cits = resp.citations
                src_found = source_violations(claim, cits, ret, self._texts(cited, cits, ret),
                                              self._policies(cited_pol, cits, ret))
                if src_found:
                    f |= F_SRCV
                    found.extend(src_found)
        if found:
            self.evidence[i] = found
        return f

    def _right_reasons(self, i: int, f: int, cits: List[str], decision, reasons) -> int:
        """Decisions for the right reason (seed 000): the right outcome and the reason code
        (F_OKCONF / F_OKSTALE / F_OKCLAR); the required documents cited (F_OKDOCS)."""
        if f & (F_REQCONF | F_REQSTALE | F_REQCLAR):
            dec = decision.strip().upper() if decision is not None else None
            if dec is not None and self.gold.expected[i]:
                right = bool(f & F_DECOK)
            elif dec is not None and i in self.gold.acceptable:
                right = dec in self.gold.acceptable[i]
            else:
                right = not f & F_SHIP if f & F_EXPREF else bool(f & F_SHIP)
            codes = [r.split(":", 1)[0].strip().lower() for r in reasons or ()]
            if right and f & F_REQCONF and any(c.startswith("conflict") for c in codes):
                f |= F_OKCONF
            if right and f & F_REQSTALE and any(c.startswith("stale") for c in codes):
                f |= F_OKSTALE
            if right and f & F_REQCLAR and (dec == "CLARIFY" or any(c.startswith(("ambiguous", "clarif")) for c in codes)):
                f |= F_OKCLAR
        if f & F_REQDOCS and self.gold.req_docs[i] <= {c.split("#", 1)[0] for c in cits}:
            f |= F_OKDOCS
        return f

    def _ground(self, i: int, f: int, resp: Response, ret, cited) -> int:
        """Issue 29: each sentence of a shipped answer (reading 4: Response.sentences) against its
        cited chunks (retrieved ones when none is cited); sets F_GMEAS / F_UNSUP, faith[i] and
        unsup_sents[i]."""
        texts = []
        # a marker that resolves to nothing (citation_validity already fails it) is no evidence
        cits = [c for c in resp.citations if c not in resp.bad_marks]
        for c in dict.fromkeys(cits or ret):
            t = cited.get(c) if cited else None
            if t is None and self.chunks is not None:
                t = self.chunks.get(c)
            if t is None:
                self.ground_no_text[i] = c
                return f
            texts.append(t)
        g = ground(resp.claim, texts, sentences=resp.sentences)
        f |= F_GMEAS
        if g.checked:
            self.faith[i] = g.supported / g.checked
        if g.unsupported:
            f |= F_UNSUP
            self.unsup_sents[i] = g.unsupported
        return f

    def _terms(self, text: str) -> frozenset:
        t = self.term_cache.get(text)
        if t is None:
            if len(self.term_cache) > 100000:     # bounded: a trace of distinct texts must not grow it
                self.term_cache.clear()
            t = self.term_cache[text] = content_terms(text)
        return t

    def _texts(self, cited, cits, ret) -> Dict[str, str]:
        """Known chunk texts of ``cits`` and ``ret``: the trace's cited_chunks, then --chunks."""
        out = {}
        for c in list(cits) + list(ret):
            t = cited.get(c) if cited else None
            if t is None and self.chunks is not None:
                t = self.chunks.get(c)
            if t is not None:
                out[c] = t
        return out

    def _policies(self, cited_pol, cits, ret) -> Dict[str, str]:
        out = {}
        for c in list(cits) + list(ret):
            p = (cited_pol or {}).get(c) or self.chunk_policies.get(c)
            if p and p != "summarize":
                out[c] = p
        return out


def content_term(tok: str) -> Optional[str]:
    """The content term of one token (not a stopword): a number as it is, a word of >= 3
    letters with a final "s" folded (not "ss"); None for a shorter word."""
    if tok[0].isdigit():
        return tok
    if len(tok) > 3 and tok[-1] == "s" and tok[-2] != "s":
        return tok[:-1]
    return tok if len(tok) >= 3 else None


def content_terms(text: str) -> frozenset:
    """Numbers and content words (>= 3 letters, not stopwords) of ``text``, a final "s" folded."""
    low = text.lower()
    if low.isascii() and "," not in low:     # tokens()' byte translations, each word folded as read
        raw = low.encode()
        terms = {w[:-1] if len(w) > 3 and w[-1] == "s" and w[-2] != "s" else w
                 for w in ascii_words(raw) if len(w) >= 3 and w not in STOPWORDS}
        for part in raw.translate(_NUMBER_BYTES).split():
            if part.isdigit():
                terms.add(part.decode())
            elif part.strip(b"."):
                terms.update(_NUMBER_RX.findall(part.decode()))
        return frozenset(terms)
    out = frozenset(map(content_term, tokens(text) - STOPWORDS))
    return out - {None} if None in out else out


def has_content_terms(text: str) -> bool:
    """bool(content_terms(text)) without building them: an ASCII text has one when it holds a
    word of >= 3 letters that is not a stopword, or a digit (every number is a term)."""
    low = text.lower()
    if not low.isascii():
        return bool(content_terms(text))
    raw = low.encode()
    if any(len(w) >= 3 and w not in STOPWORDS for w in ascii_words(raw)):
        return True
    return bool(raw.translate(_NUMBER_BYTES).strip(b" .,"))


def terms_in(terms: frozenset, toks: set) -> int:
    """len(terms & content_terms(text)) from ``toks`` = tokens(text), without building the
    text's terms: a term is the content term of the token itself or of the token + "s"."""
    n = 0
    for t in terms:
        for tok in (t, t + "s"):
            if tok in toks and tok not in STOPWORDS and content_term(tok) == t:
                n += 1
                break
    return n


def terms_in_text(terms: frozenset, text: str, low: Optional[str] = None) -> int:
    """terms_in(terms, tokens(text)) without tokenizing an ASCII text: each term, and the term
    + "s" when that folds to it, looked up with ``_token_in`` (tokens() decides a number in a
    text with a comma).  ``low``: text.lower() when the caller has it (Response.low)."""
    if low is None:
        low = text.lower()
    if not low.isascii():
        return terms_in(terms, tokens(text))
    n = 0
    comma = "," in low
    for t in terms:
        if t not in low and not (comma and t[0].isdigit()):
            continue        # neither t nor t + "s" is in the text (a comma may hide a number: "1,000")
        for tok in (t, t + "s"):
            if tok in STOPWORDS or content_term(tok) != t:
                continue
            found = _token_in(low, tok)
            if found is None:
                return terms_in(terms, tokens(text))
            if found:
                n += 1
                break
    return n


_SENT_RX = re.compile(r"(?<=[.!?])\s+")
NO_USE_RUN = 8      # consecutive words of a no_use chunk that make a reproduction


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def source_violations(claim: str, cits: List[str], ret: List[str], texts: Dict[str, str],
                      policies: Dict[str, str]) -> List[dict]:
    """Source-policy violations of one shipped claim (seed 004's SourcePolicyStage, lexical).

    ``no_use``: citing the chunk, or reproducing NO_USE_RUN consecutive words of it (any
    retrieved or cited chunk whose text is known).  ``quote_only``: each claim sentence is
    attributed to the cited chunks holding it verbatim (case and white space normalized),
    else to the cited chunks sharing most content terms with it; a sentence attributed to a
    quote_only chunk that does not hold it verbatim is a violation."""
    out: List[dict] = []
    for c in dict.fromkeys(cits):
        if policies.get(c) == "no_use":
            out.append({"mode": "source_policy_violation", "rule": "no_use", "chunk": c, "how": "cited"})
    words = _TOKEN_RX.findall(claim.lower())
    grams = {tuple(words[j:j + NO_USE_RUN]) for j in range(len(words) - NO_USE_RUN + 1)}
    for c in dict.fromkeys(list(cits) + list(ret)):
        if policies.get(c) != "no_use" or c not in texts or not grams:
            continue
        cw = _TOKEN_RX.findall(texts[c].lower())
        for j in range(len(cw) - NO_USE_RUN + 1):
            g = tuple(cw[j:j + NO_USE_RUN])
            if g in grams:
                out.append({"mode": "source_policy_violation", "rule": "no_use", "chunk": c,
                            "how": "reproduced", "words": " ".join(g)})
                break
    quoted = [c for c in dict.fromkeys(cits) if policies.get(c) == "quote_only"]
    if quoted:
        known = [c for c in dict.fromkeys(cits) if c in texts]
        normed = {c: _norm(texts[c]) for c in known}
        for sent in _SENT_RX.split(claim):
            ns = _norm(sent).rstrip(".!?;:")
            if not ns or any(ns in normed[c] for c in known):
                continue
            st = content_terms(sent)
            shared = {c: len(st & content_terms(texts[c])) for c in known}
            best = max(shared.values(), default=0)
            for c in quoted:
                if c not in shared or shared[c] == best:
                    out.append({"mode": "source_policy_violation", "rule": "quote_only", "chunk": c,
                                "how": "not verbatim", "sentence": sent[:120]})
                    break
    return out


def _cited_with_policies(cited):
    """cited_chunks whose values may be ``{"text", "policy"}``: (id -> text, id -> policy), or
    (None, the bad value) when a value is neither text nor such an object."""
    if type(cited) is not dict:
        return None, cited
    texts, pols = {}, {}
    for cid, v in cited.items():
        if type(v) is str:
            texts[cid] = v
        elif (type(v) is dict and type(v.get("text")) is str and set(v) <= {"text", "policy"}
              and v.get("policy", "summarize") in SOURCE_POLICIES):
            texts[cid] = v["text"]
            if v.get("policy", "summarize") != "summarize":
                pols[cid] = v["policy"]
        else:
            return None, {cid: v}
    return texts, pols


def _trace_extras(row: dict, path: str, lineno: int, errors: _Errors):
    """(q, reasons, timings_ms.total, cost) of a trace row, checked; None when one is bad."""
    q = row.get("q")
    if q is not None and type(q) is not str:
        errors.add('%s:%d: "q" must be a string, got %s' % (path, lineno, _show(q)))
        return None
    reasons = row.get("reasons")
    if reasons is not None and not _str_list(reasons):
        errors.add('%s:%d: "reasons" must be a list of strings, got %s' % (path, lineno, _show(reasons)))
        return None
    tm = row.get("timings_ms")
    total = None
    if tm is not None:
        total = tm.get("total") if type(tm) is dict else tm
        if type(tm) is not dict or (total is not None and not (_num(total) and total >= 0)):
            errors.add('%s:%d: "timings_ms" must be an object whose "total" is a number >= 0, got %s'
                       % (path, lineno, _show(tm)))
            return None
    cost = row.get("cost")
    if cost is not None and not (_num(cost) and cost >= 0):
        errors.add('%s:%d: "cost" must be a number >= 0, got %s' % (path, lineno, _show(cost)))
        return None
    return q, reasons, (float(total) if total is not None else None), (float(cost) if cost is not None else None)


@contextlib.contextmanager
def gc_paused():
    """The cyclic garbage collector paused for a block that makes no reference cycles (reading
    and judging rows: JSON objects, strings, tuples, arrays): without the pause it walks the
    gold set's growing lists again and again while their rows are read (3% of the CPU time at
    300k rows, issue 32).  Garbage is still freed by reference counting; any cycle that did
    form is collected when the collector runs again after the block."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _trace_fields(row: dict, path: str, lineno: int, errors: _Errors):
    """(qid, claim, citations, retrieved_ids, retrieved_scores, cited_chunks texts, their
    policies, _trace_extras, decision, fallback_used) of one trace row, checked; None when a
    field is bad (reported to ``errors``)."""
    get = row.get
    qid = get("qid") or get("q_id")    # seed 002 accepts either spelling
    if type(qid) is not str:
        if not qid:
            errors.add("%s:%d: missing \"qid\" (or \"q_id\"), got %s" % (path, lineno, _show(row, 60)))
        else:
            errors.add("%s:%d: \"qid\" must be a string, got %s" % (path, lineno, _show(qid)))
        return None
    aj = get("answer_json")
    claim = cits = None
    if aj is not None:
        if type(aj) is not dict:
            errors.add("%s:%d: \"answer_json\" must be an object, got %s" % (path, lineno, _show(aj)))
            return None
        claim = aj.get("claim")
        cits = aj.get("citations")
        if claim is not None and type(claim) is not str:
            errors.add("%s:%d: \"answer_json.claim\" must be a string, got %s" % (path, lineno, _show(claim)))
            return None
        if cits is not None and not (type(cits) is list and all(map(_IS_STR, cits))):     # _str_list inline: per row
            errors.add("%s:%d: \"answer_json.citations\" must be a list of strings, got %s" % (path, lineno, _show(cits)))
            return None
    ret = get("retrieved_ids")
    if ret is not None and not (type(ret) is list and all(map(_IS_STR, ret))):
        errors.add("%s:%d: \"retrieved_ids\" must be a list of strings, got %s" % (path, lineno, _show(ret)))
        return None
    scores = get("retrieved_scores")
    if scores is not None and (not _num_list(scores) or len(scores) != len(ret or ())):
        errors.add("%s:%d: \"retrieved_scores\" must be a list of numbers as long as \"retrieved_ids\" (%d), got %s"
                   % (path, lineno, len(ret or ()), _show(scores)))
        return None
    cited = get("cited_chunks")
    cited_pol = None
    if cited is not None and (type(cited) is not dict or not all(map(_IS_STR, cited.values()))):
        cited, cited_pol = _cited_with_policies(cited)     # issue 20: {"text", "policy"} values
        if cited is None:
            errors.add("%s:%d: \"cited_chunks\" must be an object of id -> text or {\"text\", \"policy\"} "
                       "(policy one of %s), got %s" % (path, lineno, ", ".join(SOURCE_POLICIES), _show(cited_pol)))
            return None
    extra = _trace_extras(row, path, lineno, errors)
    if extra is None:
        return None
    decision = get("decision")
    if decision is not None and type(decision) is not str:
        errors.add("%s:%d: \"decision\" must be a string, got %s" % (path, lineno, _show(decision)))
        return None
    fallback = get("fallback_used")
    if fallback is not None and type(fallback) is not bool:
        errors.add("%s:%d: \"fallback_used\" must be true or false, got %s" % (path, lineno, _show(fallback)))
        return None
    return qid, claim, cits, ret, scores, cited, cited_pol, extra, decision, fallback


def score_trace(path: str, scorer: Scorer, errors: _Errors, notes: List[str]) -> Dict[str, object]:
    """Stream the trace file once, judging each row against its gold item (last row wins):
    each row is checked (_trace_fields), read once into a Response (scorer.respond) and judged."""
    index = scorer.gold.index
    seen = bytearray(len(scorer.gold))
    respond, judge, judge_extra = scorer.respond, scorer.judge, scorer.judge_extra     # bound once, not per row
    rows = unknown = dup = 0
    unknown_ex: List[str] = []
    dup_ex: List[str] = []
    progress = _RowProgress("score_eval: %s" % path) if getattr(scorer, "progress", False) else None
    for lineno, row in _jsonl(path, errors, notes):
        if progress is not None and rows and rows & 0x3FFF == 0:
            progress.tick(rows)         # after the row ``rows`` (as _progress_rows does)
        rows += 1
        fields = _trace_fields(row, path, lineno, errors)
        if fields is None:
            continue
        qid, claim, cits, ret, scores, cited, cited_pol, extra, decision, fallback = fields
        i = index.get(qid)
        if i is None:
            unknown += 1
            if len(unknown_ex) < 5:
                unknown_ex.append(qid)
            continue
        if seen[i]:
            dup += 1
            if len(dup_ex) < 5:
                dup_ex.append(qid)
        seen[i] = 1
        resp = respond(claim, cits, ret, cited)       # readings 1-4 (response.py), once per row
        judge(i, resp, ret, scores, cited, decision, fallback, True)
        judge_extra(i, resp, ret, cited, cited_pol, decision, extra)
    if progress is not None:
        if rows and rows & 0x3FFF == 0:
            progress.tick(rows)
        progress.close(rows)
    # The gold set owns the query set: an item without a trace row is judged on an empty row
    # (seed 002: a shipped answer with an empty claim; retrieval scores 0).
    missing = 0
    i = seen.find(0)
    while i >= 0:
        missing += 1
        judge(i, None, None, None, None, None, None, False)
        i = seen.find(0, i + 1)
    return {"rows": rows, "unknown": unknown, "unknown_ex": unknown_ex,
            "duplicates": dup, "duplicate_ex": dup_ex, "missing": missing}


PROGRESS_ROWS = 100_000      # progress on stderr only past this many trace rows
PROGRESS_EVERY = (1.0, 30.0)  # seconds between two progress lines: on a terminal, off one


class _RowProgress:
    """Past PROGRESS_ROWS rows, ``label: N rows, R/s`` on stderr (redrawn in place on a
    terminal; one plain line at most every 30 s off one); ``tick(n)`` every 16,384 rows."""

    def __init__(self, label: str, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", None) and self.stream.isatty())
        self.every = PROGRESS_EVERY[0] if self.tty else PROGRESS_EVERY[1]
        self.label = label
        self.start = self.last = time.monotonic()
        self.drawn = False

    def tick(self, n: int) -> None:
        if n >= PROGRESS_ROWS:
            now = time.monotonic()
            if now - self.last >= self.every:
                self.last = now
                text = "%s: %d rows, %.0f/s" % (self.label, n, n / max(now - self.start, 1e-9))
                self.stream.write(("\r%s\x1b[K" % text) if self.tty else text + "\n")
                self.stream.flush()
                self.drawn = self.tty

    def close(self, n: int) -> None:
        if self.drawn:
            self.stream.write("\r%s: %d rows\x1b[K\n" % (self.label, n))
            self.stream.flush()


def _progress_rows(rows, label: str, stream=None):
    """Pass ``rows`` through with a _RowProgress (score_trace ticks its own, without this
    generator in its loop)."""
    progress = _RowProgress(label, stream)
    n = 0
    for n, item in enumerate(rows, 1):
        yield item
        if n & 0x3FFF == 0:
            progress.tick(n)
    progress.close(n)


def score_run(run: Dict[str, Tuple[List[float], List[str]]], scorer: Scorer) -> Dict[str, object]:
    index = scorer.gold.index
    unknown = sorted(t for t in run if t not in index)
    missing = 0
    for i, qid in enumerate(scorer.gold.qids):
        entry = run.get(qid)
        if entry is None:
            missing += 1   # the qrels own the query set: a forgotten topic scores 0 (trec_eval -c)
            scorer.judge(i, None, [], None, None, None, None, False)
        else:
            scorer.judge(i, None, entry[1], None, None, None, None, True)   # read_run's order is trec_eval's
    return {"rows": sum(len(v[1]) for v in run.values()), "unknown": len(unknown), "unknown_ex": unknown[:5],
            "duplicates": 0, "duplicate_ex": [], "missing": missing}
