"""Reading input files: size and line limits, JSON rows with depth and number caps, line batches,
RAGAS-style rows, and the error collector that names ``path:line``."""
from __future__ import annotations

import json
import json.scanner
import math
import os
import re
import stat
import sys
from itertools import count

from .base import MAX_BAD_LINES, MAX_JSON_DEPTH, MAX_NUMBER_CHARS, ScoreError, _LIMITS

# --------------------------------------------------------------------------- readers


def _show(value, limit: int = 80) -> str:
    """An input value as it would look in JSON, shortened for messages."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _Errors:
    """Collects ``path:line: ...`` messages; keeps MAX_ERRORS, counts the rest."""

    def __init__(self, limit: int):
        self.limit, self.lines, self.count = limit, [], 0

    def add(self, msg: str) -> None:
        self.count += 1
        if len(self.lines) < self.limit:
            self.lines.append(msg)
        if self.count >= MAX_BAD_LINES:      # a stream of garbage: stop reading it
            raise ScoreError(self.text() + "\n%s stopped reading after %d bad lines" % (msg.split(":")[0], self.count))

    def text(self) -> str:
        out = list(self.lines)
        if self.count > len(self.lines):
            out.append("... and %d more errors" % (self.count - len(self.lines)))
        return "\n".join(out)


class JsonLimit(ValueError):
    """A JSON row that parses but breaks a limit (depth, digits, lone surrogate)."""


_JSON_SPECIAL = re.compile(r'[\[\]{}"\\]')
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _json_depth(text: str) -> int:
    """Deepest nesting of arrays/objects in a JSON text, brackets inside strings ignored.

    Linear: one pass over the brackets, quotes and backslashes only."""
    depth = deepest = 0
    in_string = escaped = False
    last = -2
    for m in _JSON_SPECIAL.finditer(text):
        c, pos = m.group(), m.start()
        if in_string:
            if escaped and pos == last + 1:
                escaped = False
            elif c == "\\":
                escaped, last = True, pos
            elif c == '"':
                in_string = False
            continue
        if c == '"':
            in_string, escaped = True, False
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


_NO_VALUE = object()


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise JsonLimit("an integer longer than %d digits, got %s..." % (MAX_NUMBER_CHARS, text[:20]))
    return int(text)


_JSON_DECODER = json.JSONDecoder(parse_int=_parse_int)   # built once: json.loads(..., parse_int=) builds one per call
_JSON_DECODE = _JSON_DECODER.decode
_JSON_SCAN = json.scanner.make_scanner(_JSON_DECODER)     # what decode() runs, without its two Python frames


def json_row(text: str):
    """``json.loads`` with limits: nesting <= MAX_JSON_DEPTH (checked before parsing, so no
    RecursionError), integers <= MAX_NUMBER_CHARS digits, no lone surrogate (\\ud800) in a
    string (it could not be written out).  Raises ValueError (``JsonLimit`` for a limit)."""
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _json_depth(text) > MAX_JSON_DEPTH:
        raise JsonLimit("JSON nested deeper than %d levels" % MAX_JSON_DEPTH)
    obj = _NO_VALUE
    if text[:1] == "{":        # an object row, as JSONL rows are: decode()'s scan, called directly
        try:
            obj, end = _JSON_SCAN(text, 0)
        except (StopIteration, ValueError):
            obj = _NO_VALUE             # decode() below raises the same error with its message
        else:
            if end != len(text) and text[end:].strip(" \t\n\r"):
                obj = _NO_VALUE         # extra data: decode()'s message
    if obj is _NO_VALUE:
        obj = _JSON_DECODE(text) if text[:1] != "\ufeff" else json.loads(text)   # json.loads's BOM message
    # "\\" first: one memchr over the row, where "\\u" is a slower two-character search (most rows hold no escape)
    if "\\" in text and "\\u" in text and _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise JsonLimit("a lone surrogate escape (\\ud800-\\udfff) in a string") from None
    return obj


def _jsonl(path: str, errors: _Errors, notes: List[str]):
    """Yield (lineno, object) for each non-blank line; bad lines go to ``errors``.

    Reads bytes so that a non-UTF-8 line is reported with its line number; a UTF-8
    byte-order mark on the first line and CRLF line ends are accepted.  A block of lines
    (iter_line_batches) is decoded in one call when it is all UTF-8 and holds no over-long
    line; otherwise line by line, as _decoded_lines does."""
    for first, lines, ended in iter_line_batches(path):
        texts = None
        if None not in lines:
            try:
                texts = b"\n".join(lines).decode("utf-8").split("\n")    # no line holds a "\n"
            except UnicodeDecodeError:
                pass
        numbered = zip(count(first), texts) if texts is not None else _batch_lines(path, errors, first, lines, ended)
        for lineno, line in numbered:
            if lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]
                notes.append("%s:1: UTF-8 byte-order mark ignored" % path)
            if not line or line.isspace():
                continue
            try:
                obj = json_row(line)
            except ValueError as exc:
                if texts is not None and ended:     # the message of the line as read, line end included
                    line += "\n"
                    try:
                        json_row(line)
                    except ValueError as again:
                        exc = again
                if isinstance(exc, JsonLimit):
                    errors.add("%s:%d: %s" % (path, lineno, exc))
                else:
                    errors.add("%s:%d: invalid JSON (%s), got %s" % (path, lineno, str(exc).split(":")[0],
                                                                   _show(line.strip(), 60)))
                continue
            if type(obj) is not dict:
                errors.add("%s:%d: expected a JSON object, got %s" % (path, lineno, _show(obj, 60)))
                continue
            if path in _RAGAS_PATHS:      # issue 28: a RAGAS-style row, read as gold + trace row
                obj = ragas_row(obj, path, lineno, errors)
                if obj is None:
                    continue
            yield lineno, obj


def _batch_lines(path: str, errors: "_Errors", first: int, lines: list, ended: bool):
    """(lineno, text) of a batch's lines that are UTF-8, line end included (iter_lines'
    lines); an over-long or non-UTF-8 line goes to ``errors`` when it is reached."""
    for lineno, raw in enumerate(lines, first):
        if raw is None:
            errors.add("%s:%d: line longer than %d bytes (--max-line-bytes)" % (path, lineno, _LIMITS["line_bytes"]))
            continue
        if ended:
            raw += b"\n"
        try:
            yield lineno, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.add("%s:%d: not UTF-8 (byte 0x%02x at column %d), got %r"
                       % (path, lineno, raw[exc.start], exc.start + 1, raw[:60]))


# Issue 28: RAGAS-style rows ({user_input | question, response | answer, retrieved_contexts |
# contexts, reference | ground_truth}, no qid), read with --format ragas or detected.  Each row
# becomes one row that is both its gold row and its trace row: qid "row-<line>", contexts
# "ctx-1".."ctx-N" in rank order (retrieved_ids; their texts in cited_chunks, so that a citation
# by rank "[1]" names ctx-1 and grounding has the text), the reference as gold_answers.  A row
# says whether it is answerable only with an "answerable" field; without one, the gold is
# unlabelled (the seed's label-based metrics are skipped) and the answer metrics are measured.
_RAGAS_PATHS: set = set()
_RAGAS_FIELDS = (("user_input", "question"), ("response", "answer"), ("retrieved_contexts", "contexts"),
                 ("reference", "ground_truth"))


def _first_field(row: dict, names) -> Tuple[Optional[str], object]:
    for name in names:
        if name in row:
            return name, row[name]
    return None, None


def looks_ragas(row: dict) -> bool:
    """A row with no qid and a question field plus a response or contexts field of RAGAS."""
    if "qid" in row or "q_id" in row:
        return False
    return _first_field(row, _RAGAS_FIELDS[0])[0] is not None and (
        _first_field(row, _RAGAS_FIELDS[1])[0] is not None or _first_field(row, _RAGAS_FIELDS[2])[0] is not None)


def ragas_row(row: dict, path: str, lineno: int, errors: _Errors) -> Optional[dict]:
    """The gold + trace row of one RAGAS-style row; None (error recorded) when a field is bad."""
    out = {"qid": "row-%d" % lineno}
    name, q = _first_field(row, _RAGAS_FIELDS[0])
    if q is not None and type(q) is not str:
        errors.add("%s:%d: \"%s\" must be a string, got %s" % (path, lineno, name, _show(q)))
        return None
    name, resp = _first_field(row, _RAGAS_FIELDS[1])
    if resp is not None and type(resp) is not str:
        errors.add("%s:%d: \"%s\" must be a string, got %s" % (path, lineno, name, _show(resp)))
        return None
    name, ctx = _first_field(row, _RAGAS_FIELDS[2])
    if ctx is not None and not _str_list(ctx):
        errors.add("%s:%d: \"%s\" must be a list of strings, got %s" % (path, lineno, name, _show(ctx)))
        return None
    name, ref = _first_field(row, _RAGAS_FIELDS[3] + ("ground_truths",))
    if type(ref) is str:
        ref = [ref] if ref.strip() else None
    elif ref is not None and not (_str_list(ref) and all(r.strip() for r in ref)):
        errors.add("%s:%d: \"%s\" must be a string or a list of non-empty strings, got %s"
                   % (path, lineno, name, _show(ref)))
        return None
    ids = ["ctx-%d" % (k + 1) for k in range(len(ctx or ()))]
    if q is not None:
        out["question"] = out["q"] = q
    if ref:
        out["gold_answers"] = list(ref)
    for key in ("answerable", "category", "citations"):
        if key in row:
            out[key] = row[key]
    aj = {"claim": resp}
    if "citations" in row:
        aj["citations"] = row["citations"]
    out["answer_json"] = aj
    out["retrieved_ids"] = ids
    out["cited_chunks"] = dict(zip(ids, ctx or ()))
    return out


def ragas_layout(path: str) -> bool:
    """True when the first row of ``path`` looks like a RAGAS row (see ``looks_ragas``); stdin
    ("-") is read once, so it is never sniffed: give --format ragas."""
    if path == "-" or not os.path.isfile(path):
        return False
    try:
        for _, row in _jsonl(path, _Errors(1), []):
            return looks_ragas(row)
    except (OSError, ScoreError):
        return False
    return False


def open_input(path: str, what: str = ""):
    """A binary file object for ``path``; ``-`` is stdin.  Anything but a regular file (a FIFO,
    a device such as /dev/zero, a folder) is refused: it could hang or never end."""
    what = " " + what if what else ""
    if path == "-":
        return os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise ScoreError("%s: cannot read%s: not a regular file (%s); give a file, or - for stdin"
                             % (path, what, _file_kind(st.st_mode)))
        return open(path, "rb")
    except OSError as exc:
        raise ScoreError("%s: cannot read%s: %s" % (path, what, exc.strerror or exc)) from None


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


READ_BLOCK = 1 << 20     # bytes read at a time by iter_line_batches


def iter_line_batches(path: str, what: str = "", limit: Optional[int] = None):
    """Yield (lineno of the first line, lines, ended) for ``path`` (``-``: stdin), a block of
    READ_BLOCK bytes at a time: ``lines`` are the block's lines as bytes without their line
    end ("\\r" kept), None for a line longer than ``limit`` bytes (default --max-line-bytes),
    which is skipped without ever holding more than the limit in memory; ``ended`` is False
    only for the last batch when the file's last line has no line end.  The input limits
    (--max-input-bytes / --max-input-lines) stop reading with a ScoreError."""
    limit = limit or _LIMITS["line_bytes"]
    max_bytes, max_lines = _LIMITS["input_bytes"], _LIMITS["input_lines" if path != "-" else "stdin_lines"]
    total = 0
    lineno = 0                   # lines yielded so far
    carry = b""                  # the start of a line not yet ended (at most ``limit`` bytes)
    skipped = 0                  # bytes of an over-long line not yet ended (0: none)

    def too_many(count):
        return ScoreError("%s: %s more than %s (--max-input-%s); stopped reading"
                          % (path, "input is" if path != "-" else "stdin gave",
                             "%d bytes" % max_bytes if count is None else "%d lines" % max_lines,
                             "bytes" if count is None else "lines"))

    with open_input(path, what) as fh:
        read = fh.read
        while True:
            data = read(READ_BLOCK)
            if not data:
                break
            total += len(data)
            if total > max_bytes:
                raise too_many(None)
            lines: list = []
            if skipped:
                nl = data.find(b"\n")
                if nl < 0:
                    skipped += len(data)
                    if skipped > max(4 * limit, 1 << 26):   # no line end coming
                        raise ScoreError("%s:%d: line longer than %d bytes (--max-line-bytes), and %d bytes "
                                         "without a line end; stopped reading" % (path, lineno + 1, limit, skipped))
                    continue
                lines.append(None)
                skipped = 0
                data = data[nl + 1:]
            parts = (carry + data).split(b"\n") if carry else data.split(b"\n")
            carry = parts.pop()
            if len(carry) > limit:
                skipped, carry = len(carry), b""
            if parts and max(map(len, parts)) > limit:
                parts = [None if len(x) > limit else x for x in parts]
            lines += parts
            if lineno + len(lines) > max_lines:
                raise too_many(lineno + len(lines))
            if lines:
                yield lineno + 1, lines, True
                lineno += len(lines)
        if skipped or carry:
            if lineno + 1 > max_lines:
                raise too_many(lineno + 1)
            yield lineno + 1, [None if skipped else carry], False


def iter_lines(path: str, what: str = "", limit: Optional[int] = None):
    """Yield (lineno, bytes) for each line of ``path`` (``-``: stdin), line end included;
    a line longer than ``limit`` bytes (default --max-line-bytes) yields (lineno, None),
    and is skipped without ever holding more than the limit in memory."""
    for lineno, lines, ended in iter_line_batches(path, what, limit):
        for raw in lines:
            yield lineno, (None if raw is None else raw + b"\n" if ended else raw)
            lineno += 1


def _raw_lines(path: str, errors: "_Errors", what: str = ""):
    """iter_lines with each over-long line reported to ``errors``."""
    for lineno, raw in iter_lines(path, what):
        if raw is None:
            errors.add("%s:%d: line longer than %d bytes (--max-line-bytes)" % (path, lineno, _LIMITS["line_bytes"]))
        else:
            yield lineno, raw


def _decoded_lines(path: str, errors: "_Errors"):
    """Yield (lineno, text) for each line of ``path`` that is UTF-8; the others go to ``errors``."""
    for lineno, raw in _raw_lines(path, errors):
        try:
            yield lineno, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.add("%s:%d: not UTF-8 (byte 0x%02x at column %d), got %r"
                       % (path, lineno, raw[exc.start], exc.start + 1, raw[:60]))


_IS_STR = str.__instancecheck__
_NUM_TYPES = frozenset((int, float))


def _str_list(v) -> bool:
    return type(v) is list and all(map(_IS_STR, v))


def _num_list(v) -> bool:
    """A list of finite numbers (JSON's NaN/Infinity and booleans rejected)."""
    return type(v) is list and set(map(type, v)) <= _NUM_TYPES and all(map(math.isfinite, v))


def _text_line_batches(path: str, errors: _Errors):
    """(lineno of the first line, lines as text) a block at a time (iter_line_batches); a
    line that is over-long or not UTF-8 goes to ``errors`` and is read as a blank line."""
    for first, lines, _ in iter_line_batches(path):
        try:
            if None in lines:
                raise ValueError
            texts = b"\n".join(lines).decode("utf-8").split("\n")
        except ValueError:          # (UnicodeDecodeError too) line by line, naming each bad one
            texts = []
            for k, raw in enumerate(lines):
                lineno = first + k
                if raw is None:
                    errors.add("%s:%d: line longer than %d bytes (--max-line-bytes)" % (path, lineno, _LIMITS["line_bytes"]))
                    texts.append("")
                    continue
                try:
                    texts.append(raw.decode("utf-8"))
                except UnicodeDecodeError as exc:
                    errors.add("%s:%d: not UTF-8 (byte 0x%02x at column %d), got %r"
                               % (path, lineno, raw[exc.start], exc.start + 1, raw[:60]))
                    texts.append("")
        if first == 1:
            texts[0] = texts[0].lstrip("\ufeff")
        yield first, texts
