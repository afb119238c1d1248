"""Reading untrusted files within limits, and writing files so that a crash never leaves half a file.

The limits and the writer are the scorer's (the ``referee`` package, whose public names
:func:`scorer` returns), so both tools fail the same way on the same input:

* an input that is not a regular file (a FIFO, a device, a folder) is refused, ``-`` is stdin;
* a line longer than :data:`MAX_LINE_BYTES` is an error naming ``path:line``;
* a JSON row nested deeper than 64 levels, with an integer of more than 100 digits or a lone
  surrogate escape is an error naming ``path:line`` (never a RecursionError or a crash
  when the text is written out);
* every output goes through :func:`atomic_write_bytes`: ``-`` is stdout, a device or FIFO is
  written in place, a symlink's target is replaced; otherwise the data goes to a temp file
  ``.<name>.<pid>.<random>.ragtmp`` in the target's folder, is fsynced, given mode
  0666 & ~umask and renamed over the target, so an interrupted run leaves the previous good
  file.  Temp files left by killed runs are swept by the next write in that folder.
"""
from __future__ import annotations

import json
from typing import Iterator, List, Optional, Tuple

import referee

from .errors import MiniRagError

MAX_REPORTED = 20   # bad lines listed one by one before the rest are only counted
MAX_LINE_BYTES = 16 * 1024 * 1024   # one JSONL line (gold, BEIR corpus row); the scorer's default
MAX_QUESTION_CHARS = 2000           # a longer question is refused (ask, search, run)
MAX_K = 10000                       # largest --k of search (the scorer's MAX_K)
MAX_BAD_LINES = 10000               # a JSONL reader stops after this many bad lines (the scorer's)


def scorer():
    """The scorer's package (``referee``, whose modules ``score_eval.py`` is built from): its
    public names only."""
    return referee


def atomic_write_bytes(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see the module docstring); MiniRagError naming
    the path on any OS error (missing or read-only folder, disk full, a folder as target)."""
    se = scorer()
    try:
        se.write_output(path, data)
    except se.ScoreError as exc:
        raise MiniRagError(str(exc)) from None


def atomic_write_with(path: str, write) -> None:
    """:func:`atomic_write_bytes` for content produced piece by piece: ``write(fh)``
    writes it to the binary temporary file (streamed, never held whole in memory)."""
    se = scorer()
    try:
        se.write_output_with(path, write)
    except se.ScoreError as exc:
        raise MiniRagError(str(exc)) from None


def write_set_manifest(path: str, files: List[str], start: bool = False) -> None:
    """Outputs written as one set: call with ``start=True`` before writing them (removes the
    old manifest), then with the files after (writes each file's sha256, last)."""
    se = scorer()
    try:
        if start:
            se.remove_output(path)
        else:
            se.write_manifest(path, files)
    except se.ScoreError as exc:
        raise MiniRagError(str(exc)) from None


def check_outputs(outputs, inputs, force: bool = False) -> None:
    """The output policy of both tools (``score_eval.check_outputs``): each output
    ``(label, path, kind)`` is refused, naming both paths, when it resolves to an input
    ``(label, path)``, to another output, or to an existing file not of its kind (unless
    ``force``); devices and FIFOs are written in place, never replaced."""
    se = scorer()
    try:
        se.check_outputs(outputs, inputs, force)
    except se.ScoreError as exc:
        raise MiniRagError(str(exc)) from None


def open_input(path: str, what: str = ""):
    """A binary file object for a regular file (or ``-``: stdin); MiniRagError otherwise."""
    se = scorer()
    try:
        return se.open_input(path, what)
    except se.ScoreError as exc:
        raise MiniRagError(str(exc)) from None


def read_limited(path: str, what: str = "", limit: int = MAX_LINE_BYTES) -> bytes:
    """The whole content of a regular file of at most ``limit`` bytes."""
    with open_input(path, what) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise MiniRagError("%s: %s larger than %d bytes" % (path, what or "file", limit))
    return data


def iter_lines(path: str, what: str = "", limit: int = MAX_LINE_BYTES) -> Iterator[Tuple[int, Optional[bytes]]]:
    """``(line number, bytes without the line end)``; ``None`` for a line over ``limit`` bytes."""
    se = scorer()
    try:
        for lineno, raw in se.iter_lines(path, what, limit):
            yield lineno, None if raw is None else raw.rstrip(b"\n").rstrip(b"\r")
    except se.ScoreError as exc:
        raise MiniRagError(str(exc)) from None


def json_row(text: str):
    """``json.loads`` within the limits; ValueError with a short reason otherwise."""
    return scorer().json_row(text)


def json_error(exc: ValueError) -> str:
    """The reason of a :func:`json_row` failure, for a ``path:line:`` message."""
    if isinstance(exc, json.JSONDecodeError):
        return "invalid JSON (%s)" % exc.msg
    if isinstance(exc, scorer().JsonLimit):
        return str(exc)
    return "invalid JSON (%s)" % exc


def terminal_safe(text: str) -> str:
    """Control characters (ESC, C0/C1 but tab and newline) shown as ``\\xNN``."""
    return scorer().terminal_safe(text)


def escape_controls(text: str) -> str:
    """Every non-printable character escaped (``\\x1b``, tab and newline too), so a path or
    name stays inert on one terminal line (mini_rag's own notes on stderr)."""
    return "".join(ch if ch.isprintable() else "\\x%02x" % ord(ch) if ord(ch) < 256 else "\\u%04x" % ord(ch)
                   for ch in text)


_C1_DEL = None


def json_terminal_safe(text: str) -> str:
    """JSON text with DEL and C1 controls written as ``\\u00XX`` (json.dumps escapes C0
    only): the same data, inert on a terminal."""
    global _C1_DEL
    if _C1_DEL is None:
        import re
        _C1_DEL = re.compile("[\x7f-\x9f]")
    return _C1_DEL.sub(lambda m: "\\u%04x" % ord(m.group()), text)


def check_question(question: str, where: str = "question") -> str:
    """A question to answer: non-empty, at most MAX_QUESTION_CHARS characters."""
    if not question.strip():
        raise MiniRagError("%s must not be empty, got %r" % (where, question))
    if len(question) > MAX_QUESTION_CHARS:
        raise MiniRagError("%s is longer than %d characters, got %d characters"
                           % (where, MAX_QUESTION_CHARS, len(question)))
    return question


def atomic_write_text(path: str, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def dumps_jsonl(rows) -> str:
    """One compact JSON object a line, keys in the order given, non-ASCII kept as is."""
    return "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows)


def scan_jsonl(path: str, what: str = "a row",
               file_kind: str = "") -> Tuple[List[Tuple[int, dict]], List[Tuple[int, str]]]:
    """``(rows, problems)``: ``(line, object)`` for each good non-blank line and
    ``(line, what is wrong)`` for each bad one, so a caller can report every bad line.

    A UTF-8 byte-order mark and CRLF line ends are accepted.  ``what`` names a row in the
    message for a line that is JSON but not an object, ``file_kind`` the file in the
    message when it cannot be read (the only case that raises MiniRagError).
    """
    rows, problems = [], []
    for lineno, raw in iter_lines(path, file_kind):
        if len(problems) >= MAX_BAD_LINES:        # a stream of garbage: stop reading it
            problems.append((lineno, "stopped reading after %d bad lines" % MAX_BAD_LINES))
            break
        if raw is None:
            problems.append((lineno, "line longer than %d bytes" % MAX_LINE_BYTES))
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append((lineno, "not UTF-8 text, got byte 0x%02x" % raw[exc.start]))
            continue
        if lineno == 1 and line.startswith("\ufeff"):
            line = line[1:]
        if not line.strip():
            continue
        try:
            obj = json_row(line)
        except ValueError as exc:
            problems.append((lineno, "%s, got %s" % (json_error(exc), _show(line[:60]))))
            continue
        if not isinstance(obj, dict):
            problems.append((lineno, "%s must be a JSON object, got %s" % (what, _show(line[:60]))))
            continue
        rows.append((lineno, obj))
    return rows, problems


def read_jsonl(path: str, what: str = "a row") -> List[Tuple[int, dict]]:
    """``(line number, object)`` for each non-blank line; every bad line is reported at once.

    Raises MiniRagError listing ``path:line: what is wrong, got <value>`` for up to
    MAX_REPORTED bad lines.
    """
    rows, problems = scan_jsonl(path, what)
    if problems:
        raise MiniRagError(join_errors(["%s:%d: %s" % (path, n, msg) for n, msg in problems]))
    return rows


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def join_errors(errors: List[str]) -> str:
    shown = errors[:MAX_REPORTED]
    if len(errors) > MAX_REPORTED:
        shown.append("... and %d more" % (len(errors) - MAX_REPORTED))
    return "\n".join(shown)
