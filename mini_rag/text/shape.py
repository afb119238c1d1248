"""The structure of a documentation page read from its chunks: list items, a lead-in (a
paragraph introducing what follows, ending with ``:``) and the list or table it introduces.

Shared by the search stage (``search/retrieve.py`` brings a retrieved lead-in's list into
the evidence) and the answer stage (``answer/docshape.py`` ships a lead-in with its items);
properties of the text only.

==============================  ===========================================================
``is_item(text)``               a list item (``-``, ``*``, ``+``, ``\u2022``, ``1.``, ``a)``)
``is_lead_in(text)``            a unit ending with one ``:`` (not a literal block's ``::``)
``last_unit(text)``             the last non-blank line of a chunk's text
``list_after(chunks, pos, n)``  the positions of the list (or table) chunks the chunk at
                                ``pos`` introduces, in order, at most ``n``
``prose(text)``                 an answer's text of a Markdown or reST page as plain text,
                                its list items joined into the line they continue
==============================  ===========================================================

>>> from types import SimpleNamespace as C
>>> page = [C(doc_id="a", kind="text", text="The tool supports these formats:"),
...         C(doc_id="a", kind="text", text="- JSON lines\\n- Markdown tables"),
...         C(doc_id="a", kind="text", text="Run it.")]
>>> list_after(page, 0, 3)
[1]
"""
from __future__ import annotations

import re
from typing import Any, List, Sequence

from .markup import plain_text

__all__ = ["is_item", "is_lead_in", "last_unit", "list_after", "prose"]

_ITEM = re.compile(r"^\s{0,8}(?:[-*+\u2022]|\d{1,3}[.)]|[a-z][.)])[ \t]+\S")


def is_item(text: str) -> bool:
    """A list item: a bullet (``-``, ``*``, ``+``, ``\u2022``) or an enumerator (``1.``,
    ``2)``, ``a.``) and then text."""
    return bool(_ITEM.match(text))


def is_lead_in(text: str) -> bool:
    """A unit introducing what follows: it ends with one ``:`` and holds a letter."""
    t = text.rstrip()
    return t.endswith(":") and not t.endswith("::") and any(c.isalpha() for c in t)


def last_unit(text: str) -> str:
    """The last non-blank line of ``text`` ('' when there is none)."""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    return lines[-1] if lines else ""


def _kind(chunk: Any) -> str:
    return getattr(chunk, "kind", "text")


def list_after(chunks: Sequence[Any], pos: int, limit: int = 3) -> List[int]:
    """The positions of the chunks holding the list (or table) the chunk at ``pos`` introduces:
    the chunk is a prose chunk (``kind`` text) whose last line is a lead-in, and the chunks
    right after it in the same document are prose opening with a list item (or a table).  The list
    goes on over item chunks, and ends after a table, at a chunk that is not an item, at the
    end of the document, after an item chunk that ends with a lead-in of its own, or after
    ``limit`` chunks.  ``[]`` when the chunk introduces none (the chunk's ``doc_id``,
    ``kind`` and ``text`` are read; these are the chunks ``docshape.lead_in_of`` gives the
    lead-in to)."""
    if not 0 <= pos < len(chunks) or _kind(chunks[pos]) != "text" or not is_lead_in(last_unit(chunks[pos].text)):
        return []
    doc = chunks[pos].doc_id
    out: List[int] = []
    k = pos + 1
    while k < len(chunks) and len(out) < limit and chunks[k].doc_id == doc:
        item = _kind(chunks[k]) == "text" and is_item(chunks[k].text)
        if not (item or _kind(chunks[k]) == "table"):
            break
        out.append(k)
        if not item or is_lead_in(last_unit(chunks[k].text)):
            break
        k += 1
    return out


_CLOSED = (".", ";", ",", "!", "?", ":")


def prose(text: str) -> str:
    r"""``text`` (an answer's sentences of one chunk of a Markdown or reST page; a list item
    starts a line) as plain text (``markup.plain_text``, line by line) that reads as prose: a
    list item goes on the line of the lead-in or item before it, after a space when that line
    ends with punctuation (``:``, ``.``, ``;``, ...), else after ``; ``; any other line stays
    a line of its own, as ``plain_text`` gives it.  No bullet or enumerator is left.

    >>> prose("The formats are:\n- JSON lines for machines\n- Markdown tables for people")
    'The formats are: JSON lines for machines; Markdown tables for people'
    >>> prose("1. Use Python 3.10 or newer.\n2. Install **truststore**.")
    'Use Python 3.10 or newer. Install truststore.'
    >>> prose("A wrapped\nsentence.")
    'A wrapped\nsentence.'
    """
    out: List[str] = []
    listed = False              # the line before is a lead-in, an item or an item's own line
    for line in text.split("\n"):
        plain = plain_text(line)
        item = is_item(line)
        if out and item and listed and out[-1].strip():
            head = out[-1].rstrip()
            out[-1] = head + (" " if head.endswith(_CLOSED) else "; ") + plain.strip()
        else:
            out.append(plain)
        listed = item or is_lead_in(line) or (listed and line[:1] in (" ", "\t") and bool(line.strip()))
    return "\n".join(out)
