"""A progress indicator on stderr, shown only when stderr is a terminal and the work is long.

Used by ``index`` (chunks analyzed) and by the answering stage's ``run`` (questions
answered).  Output goes to stderr only, so stdout and every written file are the same
with or without it; nothing is printed when stderr is redirected (CI logs stay clean)
or when the work finishes within ``delay`` seconds.

>>> p = Progress(100, "indexing", enabled=False)
>>> for i in range(100): p.update(i + 1)
>>> p.close()
"""
from __future__ import annotations

import sys
import time
from typing import Optional, TextIO


class Progress:
    """``Progress(total, label)``; call ``update(done)`` often, ``close()`` at the end.

    ``enabled`` defaults to ``stream.isatty()``; the line is first drawn after ``delay``
    seconds and redrawn at most every ``interval`` seconds.
    """

    def __init__(self, total: int, label: str, stream: Optional[TextIO] = None,
                 enabled: Optional[bool] = None, delay: float = 1.0, interval: float = 0.2) -> None:
        self.total = max(0, int(total))
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.delay = delay
        self.interval = interval
        self._start = time.monotonic()
        self._last = 0.0
        self._shown = False
        self.done = 0

    def update(self, done: int) -> None:
        self.done = done
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._start < self.delay or now - self._last < self.interval:
            return
        self._last = now
        self._draw(now)

    def _draw(self, now: float) -> None:
        if self.total:
            pct = 100.0 * min(self.done, self.total) / self.total
            text = "%s: %d/%d (%.0f%%), %.0fs" % (self.label, self.done, self.total, pct, now - self._start)
        else:
            text = "%s: %d, %.0fs" % (self.label, self.done, now - self._start)
        self.stream.write("\r" + text + "\x1b[K")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        """Draw the final state and end the line (only if anything was drawn)."""
        if self._shown:
            self.done = self.total or self.done
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
