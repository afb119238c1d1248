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

__all__ = ["is_item", "is_lead_in", "last_unit", "list_after"]

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
