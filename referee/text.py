"""Reading what a system wrote, part 0: the sentence splitter shared by the refusal reading and
grounding."""
from __future__ import annotations

import re

from .lexicon import _ABBREV, _NUMBER_ABBREV

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
        if text[end:end + 1] in ".)" and last.isdigit() and len(last) <= 2 and text[start:end].strip() == last:
            continue                                   # "2. Corrective action ...": a list number

        if m.end() < n and text[m.end()].islower() and text[end:end + 1] == ".":
            continue
        if text[start:m.end()].strip():
            out.append((start, m.end()))
        start = m.end()
    if text[start:].strip():
        out.append((start, n))
    return out
