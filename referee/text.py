"""Reading what a system wrote, part 0: the sentence splitter shared by the refusal reading and
grounding; the text form the refusal and citation readers read; what a reader could not read."""
from __future__ import annotations

import re
import unicodedata

from .lexicon import _ABBREV, _NUMBER_ABBREV
from .inputs import _show

# ---- sentences (readings 2 and 4)
# One splitter for every reading that goes sentence by sentence: the refusal reading (reading 2,
# ``sentences``: also every line, bullets stripped, contrast clauses apart) and grounding
# (reading 4, ``answer_sentences``).
_SPLIT_RX = re.compile(r"[.!?]{1,8}[\"\u201d\u2019')\]]{0,4}\s+|:[ \t\n]{1,8}(?=[A-Z])|\n[ \t]{0,8}\n|"
                       r"\n(?=[ \t]{0,8}(?:[-*\u2022]|\d{1,2}[.)])\s)")


def split_sentences(text: str) -> List[Tuple[int, int]]:
    """(start, end) offsets of the sentences of ``text``: a break after . ! ? followed by
    white space (not after a known abbreviation, an initial or a number's decimal point),
    at a blank line, and before a list item on its own line."""
    out = []
    start = 0
    n = len(text)
    for m in _SPLIT_RX.finditer(text):
        end = m.start()
        word = text[max(start, end - 12):end + 1].split()
        last = word[-1].lower().rstrip(".") if word else ""
        if text[end:end + 1] == "." and (last in _ABBREV or (len(last) == 1 and last.isalpha())):
            if last not in _NUMBER_ABBREV or text[m.end():m.end() + 1].isdigit():
                continue                               # "No. 5" is a number; "No. Digital ..." an answer
        if text[end:end + 1] in ".)" and last.isdigit() and len(last) <= 2 and _only_word(text, start, end, last):
            continue                                   # "2. Corrective action ...": a list number

        if m.end() < n and text[m.end()].islower() and text[end:end + 1] == ".":
            continue
        if text[start:m.end()].strip():
            out.append((start, m.end()))
        start = m.end()
    if text[start:].strip():
        out.append((start, n))
    return out


_NONSPACE_RX = re.compile(r"\S")


def _only_word(text: str, start: int, end: int, last: str) -> bool:
    """Whether ``text[start:end].strip() == last``, found without copying the slice (a long
    sentence with many "12." in it would copy it once per candidate break)."""
    m = _NONSPACE_RX.search(text, start, end)
    first = m.start() if m else end
    return end - first == len(last) and text[first:end] == last and (first == start or text[first - 1].isspace())


# ---- what a reader could not read (issue 44)
# No text raises out of a reader of what a system wrote: a value a reader cannot read (a
# number past its digit cap, markers past MAX_MARKERS, work past a reader's budget, any
# error) is left unknown for the row and named here; score_trace turns each name into a
# warning naming the trace row (file:line and qid).  Bounded: a caller that never takes them
# (mini_rag, the server, a benchmark) keeps at most MAX_READ_PROBLEMS.
READ_PROBLEMS: List[str] = []
MAX_READ_PROBLEMS = 20


def read_problem(text: str) -> None:
    """Record that a reader could not read something of the current row (once per text)."""
    if len(READ_PROBLEMS) < MAX_READ_PROBLEMS and text not in READ_PROBLEMS:
        READ_PROBLEMS.append(text)


def take_read_problems() -> List[str]:
    """The problems recorded since the last call, and forget them."""
    out = READ_PROBLEMS[:]
    del READ_PROBLEMS[:]
    return out


MAX_UNREAD_NOTES = 20        # rows named one by one in the warnings when a reader could not read their text


def note_unread(path: str, lineno: int, qid: str, notes: List[str], unread: List[int]) -> None:
    """A warning naming the row whose text a reader could not read in full (issue 44): what was
    left unknown or unread; after MAX_UNREAD_NOTES rows, only counted (``unread``: [rows, index
    of the note that counts the rest, -1 before there is one])."""
    problems = take_read_problems()
    unread[0] += 1
    if unread[0] <= MAX_UNREAD_NOTES:
        notes.append("%s:%d: qid %s: %s" % (path, lineno, _show(qid, 60), "; ".join(problems)))
        return
    more = "%s: %d more trace rows hold text a reader could not read in full (the first %d are named above)" % (
        path, unread[0] - MAX_UNREAD_NOTES, MAX_UNREAD_NOTES)
    if unread[1] < 0:
        unread[1] = len(notes)
        notes.append(more)
    else:
        notes[unread[1]] = more


def problem_text(what: str, exc: BaseException) -> str:
    """``what`` could not be read, with the exception's kind and first words (no traceback)."""
    msg = " ".join(str(exc).split())[:80]
    return "%s could not be read (%s%s)" % (what, type(exc).__name__, ": " + msg if msg else "")


# ---- text forms (issue 44 item 5)
# The refusal and the citation readers read a text in one form: Unicode spaces (no-break,
# thin, ideographic ...) as " ", apostrophes (U+2018, U+02BC, U+FF07, backtick) as "'",
# fullwidth brackets, parentheses and separators as ASCII, and decimal digits of any script
# ("١", "１") as ASCII digits.  One character becomes one character, so an offset
# into the form is an offset into the text.  An ASCII text other than one with a backtick is
# its own form.
_FORM_TABLE = str.maketrans({**{c: " " for c in "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
                                               "\u2007\u2008\u2009\u200a\u202f\u205f\u3000"},
                             **{c: "'" for c in "\u2018\u02bc\uff07`"},
                             "\uff3b": "[", "\uff3d": "]", "\uff08": "(", "\uff09": ")", "\uff0c": ",",
                             "\uff1b": ";", "\uff1a": ":", "\uff03": "#", "\uff0d": "-"})
_UDIGIT_RX = re.compile(r"[^\x00-\x7f](?<=\d)")


def text_form(text: str) -> str:
    """``text`` in the form the refusal and citation readers read (see above); same length."""
    if text.isascii():
        return text.replace("`", "'") if "`" in text else text
    text = text.translate(_FORM_TABLE)
    return _UDIGIT_RX.sub(_ascii_digit, text)


def _ascii_digit(m) -> str:
    return chr(48 + unicodedata.decimal(m.group(), 0))
