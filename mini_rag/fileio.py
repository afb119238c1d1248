"""Reading JSONL with line numbers, and writing files so that a crash never leaves half a file.

Every output of mini_rag goes through :func:`atomic_write_text` / :func:`atomic_write_bytes`:
the data is written to a temporary file in the target's folder, flushed and fsynced, then
renamed over the target.  An interrupted run leaves the previous good file in place.
"""
from __future__ import annotations

import json
import os
import tempfile
from typing import Iterator, List, Tuple

from .errors import MiniRagError

MAX_REPORTED = 20   # bad lines listed one by one before the rest are only counted


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


def atomic_write_bytes(path: str, data: bytes) -> None:
    atomic_write_with(path, lambda fh: fh.write(data))


def atomic_write_with(path: str, write) -> None:
    """:func:`atomic_write_bytes` for content produced piece by piece: ``write(fh)``
    writes it to the binary temporary file."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())   # mkstemp makes 0600; give the file normal permissions
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


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
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise MiniRagError("%s: cannot read%s: %s" % (path, " " + file_kind if file_kind else "",
                                                       exc.strerror)) from None
    rows, problems = [], []
    for lineno, raw in _lines(data):
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
            obj = json.loads(line)
        except ValueError as exc:
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            problems.append((lineno, "invalid JSON (%s), got %s" % (msg, _show(line[:60]))))
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


def _lines(data: bytes) -> Iterator[Tuple[int, bytes]]:
    for i, raw in enumerate(data.split(b"\n"), 1):
        yield i, raw.rstrip(b"\r")
