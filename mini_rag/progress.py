"""Progress on stderr for long work: a live line on a terminal, plain lines off one.

Used by ``index`` (chunks analyzed), ``run`` and ``eval`` (questions answered) and the
benchmarks.  Output goes to stderr only, so stdout and every written file are the same
with or without it.

* On a terminal the line is drawn after ``delay`` seconds and redrawn at most every
  ``interval`` seconds (``\\r``, erased to the end of the line).
* Off a terminal (CI logs, ``nohup``), one plain line at most every ``plain_interval``
  seconds (30), the first after 30 s, so a short run prints nothing:
  ``eval baseline: 120/271 (44%), 4.0/s, ETA 38s``.
* ``enabled=False`` (the commands' ``--quiet``) prints nothing at all.

>>> import io
>>> out = io.StringIO()
>>> p = Progress(100, "indexing", stream=out, plain_interval=0.0, delay=0.0)
>>> p.update(50)
>>> out.getvalue().startswith("indexing: 50/100 (50%), ")
True
>>> q = Progress(100, "indexing", enabled=False)
>>> for i in range(100): q.update(i + 1)
>>> q.close()
"""
from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

__all__ = ["Progress", "PLAIN_INTERVAL"]

#: Seconds between two plain (non-terminal) progress lines.
PLAIN_INTERVAL = 30.0


class Progress:
    """``Progress(total, label)``; call ``update(done)`` often, ``close()`` at the end.

    ``enabled``: None (default) shows progress, live on a terminal and plain off one;
    False shows nothing; True forces the live line (tests).
    """

    def __init__(self, total: int, label: str, stream: Optional[TextIO] = None,
                 enabled: Optional[bool] = None, delay: float = 1.0, interval: float = 0.2,
                 plain_interval: float = PLAIN_INTERVAL) -> None:
        self.total = max(0, int(total))
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        tty = bool(isatty and isatty())
        self.enabled = enabled is not False
        self.live = tty if enabled is None else bool(enabled)
        self.delay = delay if self.live else max(delay, plain_interval)
        self.interval = interval if self.live else plain_interval
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

    def _text(self, now: float) -> str:
        elapsed = now - self._start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        if self.total:
            pct = 100.0 * min(self.done, self.total) / self.total
            text = "%s: %d/%d (%.0f%%), %.0fs" % (self.label, self.done, self.total, pct, elapsed)
            if not self.live and rate > 0:
                text += ", %.1f/s, ETA %.0fs" % (rate, max(0, self.total - self.done) / rate)
        else:
            text = "%s: %d, %.0fs" % (self.label, self.done, elapsed)
            if not self.live:
                text += ", %.1f/s" % rate
        return text

    def _draw(self, now: float) -> None:
        if self.live:
            self.stream.write("\r" + self._text(now) + "\x1b[K")
            self._shown = True
        else:
            self.stream.write(self._text(now) + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the live line (only if anything was drawn)."""
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
