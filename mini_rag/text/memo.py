"""Bounded memos of pure functions of one text (issue 32: answering without repeated work).

The answering stages read the same chunk texts for question after question (and the same
text several times within one question: once per rule, once per pair of facts).  What
such a rule computes from the text alone -- its tokens, whether it is boilerplate, its
sentence spans -- does not depend on the question, so it is computed once per text and
kept here.

``text_memo(max_entries, max_chars)`` decorates a function whose first argument is a ``str``,
whose other arguments (if any) are hashable, and whose result depends on nothing else (and
is never modified by a caller: return tuples, frozensets, numbers).  Limits, both documented at each use:

* a text longer than ``max_text`` characters (default :data:`MAX_TEXT`) is computed every
  time and never kept;
* the memo is cleared when it holds ``max_entries`` texts or their lengths add up to
  ``max_chars`` characters (clear-when-full: cheaper than eviction, and deterministic).

A memo never changes a result, only how often it is computed; two runs over the same
inputs give the same outputs whatever was cached before.  Reads and writes are single
dict operations, so threads (``serve``) may share a memo.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List

__all__ = ["MAX_TEXT", "clear_all", "text_memo"]

#: Texts longer than this many characters are not memoized (a chunk is a paragraph).
MAX_TEXT = 20_000

_MEMOS: List[Callable[[], None]] = []


def clear_all() -> None:
    """Empty every memo made by :func:`text_memo` (tests compare cold and warm runs)."""
    for clear in _MEMOS:
        clear()


def text_memo(max_entries: int = 8192, max_chars: int = 8_000_000, max_text: int = MAX_TEXT):
    """Decorator: memoize ``fn(text)`` within the limits above; ``fn.memo_clear()`` empties it."""
    def wrap(fn: Callable[[str], Any]) -> Callable[[str], Any]:
        table: Dict[str, Any] = {}
        size = [0]

        @functools.wraps(fn)
        def memoized(text: str, *rest: Any) -> Any:
            key = (text,) + rest if rest else text
            try:
                return table[key]
            except (KeyError, TypeError):
                pass
            value = fn(text, *rest)
            if isinstance(text, str) and len(text) <= max_text:
                if len(table) >= max_entries or size[0] + len(text) > max_chars:
                    table.clear()
                    size[0] = 0
                table[key] = value
                size[0] += len(text)
            return value

        def memo_clear() -> None:
            table.clear()
            size[0] = 0

        _MEMOS.append(memo_clear)
        memoized.memo_clear = memo_clear  # type: ignore[attr-defined]
        memoized.memo_table = table  # type: ignore[attr-defined]
        return memoized
    return wrap
