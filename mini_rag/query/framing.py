"""Conversational framing: "Hi there! How long are logs kept? Thanks!" asks "How long are logs kept?".

People wrap a question in greetings, apologies, thanks and asides.  Their words are not
the subject: "Quick question before my meeting: When does the board meet?" must not
rank documents about meetings, nor require "question" in the answering sentence.
``strip_framing(question)`` returns the question without them; the pipeline retrieves
and answers with it, and the trace keeps the question as asked.

Rules, on the text split into segments (sentences ending in ``.``/``!``/``?``, and a
preamble ending in ``:`` before a question):

1. A segment that is not a question, starts with a *framing cue* (a greeting, thanks,
   an apology, "quick question", "one more thing", "by the way", ...: ``FRAMING_CUES``)
   and names nothing (no number, no capitalized word after its first) is dropped: "Hi
   there!", "Thanks in advance!", "Sorry if this was asked already:"; "Sorry, our plan
   is Pro." is kept.
2. In a question, an aside clause set off by commas ("..., asking for a colleague?",
   "How much, if you happen to know, does it cost?": ``ASIDE_CUES``) is dropped, and so
   is a framing cue opening it before a comma ("Thanks, how long ...?").
3. When nothing but framing is left, the question is returned unchanged: "Hi there!"
   is then answered (or refused) as asked.

The cues are general English phatic expressions, written for this module; a segment
with content before its cue ("Our plan is Pro, sorry.") is kept.  Known limit: a
preamble that merely starts like a greeting ("Hello world program: is it allowed?")
is dropped too.

>>> strip_framing("Hi there! How long are audit logs kept? Thanks in advance!")
'How long are audit logs kept?'
>>> strip_framing("Quick question before my meeting: who approves refunds?")
'who approves refunds?'
>>> strip_framing("How must paper records be destroyed, asking for a colleague?")
'How must paper records be destroyed?'
>>> strip_framing("Is anything other than TLS 1.2 allowed? Cheers.")
'Is anything other than TLS 1.2 allowed?'
>>> strip_framing("Regarding the Pro plan: how many seats are included?")
'Regarding the Pro plan: how many seats are included?'
"""
from __future__ import annotations

import re
from typing import List

__all__ = ["strip_framing", "split_scenario", "FRAMING_CUES", "ASIDE_CUES"]

#: A segment starting with one of these frames the question (whole words, any case).
FRAMING_CUES = (
    "hi", "hello", "hey", "hiya", "greetings", "good morning", "good afternoon", "good evening",
    "dear", "thanks", "thank you", "thx", "many thanks", "cheers", "much appreciated",
    "appreciate it", "regards", "best regards", "kind regards", "sorry", "apologies",
    "excuse me", "quick question", "a quick question", "one more thing", "one more question",
    "another question", "another thing", "just wondering", "i was wondering", "just curious",
    "random question", "silly question", "by the way", "btw", "fyi", "ok so", "okay so",
    "please advise", "any help", "hope you are well", "hope you're well",
)

#: An aside clause starting with one of these, after a comma, is dropped.
ASIDE_CUES = (
    "asking for a colleague", "asking for a friend", "asking for my team", "asking for my manager",
    "if you happen to know", "if you know", "if you don't mind", "if possible", "if you can",
    "if anyone knows", "please", "thanks", "thank you", "just wondering", "just curious",
    "by the way", "btw",
)


def _cue_re(cues) -> "re.Pattern[str]":
    alts = "|".join(re.escape(c).replace(r"\ ", r"\s+") for c in sorted(cues, key=len, reverse=True))
    return re.compile(r"^\W*(?:%s)\b" % alts, re.IGNORECASE)


_FRAMING = _cue_re(FRAMING_CUES)
_LEADING = re.compile(_FRAMING.pattern + r"[^,?.!:]{0,40},\s*(?=\w)", re.IGNORECASE)
_ASIDE = re.compile(r",\s*(?:%s)\b[^,?.!]*(?:,(?=\s)|(?=[?.!]?\s*$))" % "|".join(
    re.escape(c).replace(r"\ ", r"\s+") for c in sorted(ASIDE_CUES, key=len, reverse=True)), re.IGNORECASE)
# a segment ends at . ! ? followed by space, or at a colon followed by space
# ("TLS 1.2", "e.g.x", "10:30": punctuation not followed by a space stays inside)
_SEGMENT = re.compile(r"[\s\S]*?[.!?:](?=\s|$)|[\s\S]+$")   # up to the first ending mark; linear


def _segments(text: str) -> List[str]:
    out = []
    for m in _SEGMENT.finditer(text):
        seg = m.group(0).strip()
        if seg:
            out.append(seg)
    return out


def _names_something(segment: str) -> bool:
    """A number, or a capitalized word after the first ("Sorry, our plan is Pro."): the
    segment carries content, whatever cue opens it."""
    words = segment.split()
    return any(c.isdigit() for c in segment) or any(w[:1].isupper() and w != "I" for w in words[1:])


def strip_framing(question: str) -> str:
    """The question without greetings, thanks, apologies and asides (rules in the module doc)."""
    text = " ".join(question.split())
    segments = _segments(text)
    if "".join(s.replace(" ", "") for s in segments) != text.replace(" ", ""):
        return question                                   # unusual punctuation: leave it alone
    kept = [s for s in segments if s.endswith("?") or not _FRAMING.match(s) or _names_something(s)]
    kept = [_LEADING.sub("", _ASIDE.sub("", s)) if s.endswith("?") else s for s in kept]
    kept = [s for s in kept if any(c.isalnum() for c in s)]
    if not kept or not any(any(c.isalnum() for c in s) for s in kept if s.endswith("?") or s == kept[-1]):
        return question
    out = " ".join(kept)
    return out if out != text else question


def split_scenario(text: str):
    """``(situation, ask)`` of a scenario question: sentences describing the asker's situation,
    then the question (issue 30).  The ask is the last segment ending in ``?`` (without one,
    the last segment: "... Tell me the notice period.", a claim to check) with the preamble
    segments ending in ``:`` just before it ("Regarding the Pro plan: how many seats
    ...?"); the situation is every other segment, and it must hold at least one statement
    (a segment ending in ``.`` or ``!``).  Otherwise ``("", text)``: a question of one
    sentence, or several questions, is not a scenario.

    >>> split_scenario("I moved to Leeds last year. My contract ends soon. How long is the notice period?")
    ('I moved to Leeds last year. My contract ends soon.', 'How long is the notice period?')
    >>> split_scenario("How long are logs kept?")
    ('', 'How long are logs kept?')
    >>> split_scenario("Regarding the Pro plan: how many seats are included?")
    ('', 'Regarding the Pro plan: how many seats are included?')
    """
    flat = " ".join(text.split())
    segs = _segments(flat)
    if "".join(s.replace(" ", "") for s in segs) != flat.replace(" ", ""):
        return "", text
    asks = [i for i, seg in enumerate(segs) if seg.endswith("?")]
    if not asks and len(segs) < 2:
        return "", text
    last = asks[-1] if asks else len(segs) - 1     # no question mark: the last sentence asks
    start = last
    while start > 0 and segs[start - 1].endswith(":"):
        start -= 1
    situation = segs[:start] + segs[last + 1:]
    if any(seg.endswith("?") for seg in situation) or not any(seg.endswith((".", "!")) for seg in situation):
        return "", text
    return " ".join(situation), " ".join(segs[start:last + 1])


def situation_segments(situation: str) -> List[str]:
    """The segments (sentences) of a situation, as :func:`split_scenario` cut them."""
    return _segments(" ".join(situation.split()))
