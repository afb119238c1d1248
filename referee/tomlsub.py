"""The TOML subset gates files are written in (tomllib when the interpreter has it, else this reader)."""
from __future__ import annotations

import re

from .base import MAX_NUMBER_CHARS, ScoreError


try:  # Python 3.11+; older versions use only the subset reader below.
    import tomllib as _tomllib
except ImportError:  # pragma: no cover - depends on the interpreter
    _tomllib = None

# --------------------------------------------------------------------------- TOML subset


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_INT_RX = re.compile(r"[+-]?(?:0|[1-9](?:_?[0-9])*)")
_FLOAT_RX = re.compile(r"[+-]?(?:0|[1-9](?:_?[0-9])*)(?:\.[0-9](?:_?[0-9])*)?(?:[eE][+-]?[0-9](?:_?[0-9])*)?")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


class _TomlLine:
    """A cursor over one line of TOML for the subset reader."""

    def __init__(self, text: str, path: str, lineno: int):
        self.s, self.i, self.path, self.lineno = text, 0, path, lineno

    def fail(self, what: str) -> ScoreError:
        rest = self.s[self.i:self.i + 30]
        return ScoreError("%s:%d: %s, got %r" % (self.path, self.lineno, what, rest or "end of line"))

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def end(self) -> None:
        self.ws()
        if self.i < len(self.s) and self.s[self.i] != "#":
            raise self.fail("unexpected text after the value")

    def key(self) -> str:
        self.ws()
        if self.peek() == '"':
            return self.basic_string()
        if self.peek() == "'":
            return self.literal_string()
        m = _BARE_KEY.match(self.s, self.i)
        if not m:
            raise self.fail("expected a key")
        self.i = m.end()
        if self.peek() == "@":
            raise self.fail('a key with "@" must be quoted, e.g. "%s@..."' % m.group(0))
        return m.group(0)

    def dotted_key(self) -> List[str]:
        parts = [self.key()]
        self.ws()
        while self.peek() == ".":
            self.i += 1
            parts.append(self.key())
            self.ws()
        return parts

    def basic_string(self) -> str:
        if self.s.startswith('"""', self.i):
            raise self.fail("multi-line strings are outside the supported TOML subset")
        self.i += 1
        out = []
        while True:
            if self.i >= len(self.s):
                raise self.fail("unterminated string")
            c = self.s[self.i]
            if c == '"':
                self.i += 1
                return "".join(out)
            if c == "\\":
                e = self.s[self.i + 1:self.i + 2]
                if e in _ESCAPES:
                    out.append(_ESCAPES[e])
                    self.i += 2
                    continue
                if e in ("u", "U"):
                    width = 4 if e == "u" else 8
                    hexa = self.s[self.i + 2:self.i + 2 + width]
                    if len(hexa) != width or not all(h in "0123456789abcdefABCDEF" for h in hexa):
                        raise self.fail("bad unicode escape")
                    code = int(hexa, 16)
                    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                        raise self.fail("bad unicode escape")
                    out.append(chr(code))
                    self.i += 2 + width
                    continue
                raise self.fail("bad escape in string")
            if (ord(c) < 0x20 and c != "\t") or c == "\x7f":
                raise self.fail("control character in string")
            out.append(c)
            self.i += 1

    def literal_string(self) -> str:
        if self.s.startswith("'''", self.i):
            raise self.fail("multi-line strings are outside the supported TOML subset")
        j = self.s.find("'", self.i + 1)
        if j < 0:
            raise self.fail("unterminated string")
        text = self.s[self.i + 1:j]
        if any((ord(c) < 0x20 and c != "\t") or c == "\x7f" for c in text):
            raise self.fail("control character in string")
        self.i = j + 1
        return text

    def value(self, nested: bool = False):
        self.ws()
        c = self.peek()
        if c == '"':
            return self.basic_string()
        if c == "'":
            return self.literal_string()
        if c == "[":
            return self.array()
        if c == "{":
            if nested:
                raise self.fail("inline tables inside arrays or inline tables are outside the supported TOML subset")
            return self.inline_table()
        for word, val in (("true", True), ("false", False)):
            if self.s.startswith(word, self.i) and not _BARE_KEY.match(self.s[self.i + len(word):self.i + len(word) + 1]):
                self.i += len(word)
                return val
        m = _FLOAT_RX.match(self.s, self.i)
        if m and m.end() > self.i:
            tail = self.s[m.end():m.end() + 1]
            if tail and (tail.isalnum() or tail in ":-_."):
                raise self.fail("dates, times, hex/octal/binary and special numbers are outside the supported TOML subset")
            text = m.group(0)
            self.i = m.end()
            if len(text) > MAX_NUMBER_CHARS:
                raise self.fail("numbers are limited to %d characters" % MAX_NUMBER_CHARS)
            if _INT_RX.fullmatch(text):
                return int(text.replace("_", ""))
            return float(text.replace("_", ""))
        raise self.fail("expected a string, number, boolean, array or inline table")

    def array(self) -> list:
        self.i += 1
        out = []
        while True:
            self.ws()
            if self.peek() == "]":
                self.i += 1
                return out
            if not self.peek() or self.peek() == "#":
                raise self.fail("arrays must close on the same line in the supported TOML subset")
            out.append(self.value(nested=True))
            self.ws()
            if self.peek() == ",":
                self.i += 1
            elif self.peek() != "]":
                raise self.fail("expected ',' or ']' in array")

    def inline_table(self) -> dict:
        self.i += 1
        out: dict = {}
        self.ws()
        if self.peek() == "}":
            self.i += 1
            return out
        while True:
            parts = self.dotted_key()
            if len(parts) != 1:
                raise self.fail("dotted keys are outside the supported TOML subset")
            if parts[0] in out:
                raise self.fail("duplicate key %r" % parts[0])
            self.ws()
            if self.peek() != "=":
                raise self.fail("expected '=' after key")
            self.i += 1
            out[parts[0]] = self.value(nested=True)
            self.ws()
            if self.peek() == ",":
                self.i += 1
                continue
            if self.peek() == "}":
                self.i += 1
                return out
            raise self.fail("expected ',' or '}' in inline table")


def _toml_subset(text: str, path: str) -> Tuple[dict, Dict[Tuple[str, ...], int]]:
    """Parse the documented TOML subset; also return the line of every table and key.

    Subset: comments, ``[table]`` and ``[dotted.table]`` headers, ``key = value`` with bare or
    quoted keys, basic and literal one-line strings, integers, floats, booleans, one-line
    arrays, one-line inline tables.  Anything else raises ScoreError with path:line.
    """
    root: dict = {}
    lines: Dict[Tuple[str, ...], int] = {}
    explicit = set()
    inline = set()
    current: dict = root
    prefix: Tuple[str, ...] = ()
    if text.startswith("\ufeff"):
        text = text[1:]
    for lineno, raw in enumerate(text.split("\n"), 1):
        if raw.endswith("\r"):
            raw = raw[:-1]
        cur = _TomlLine(raw, path, lineno)
        cur.ws()
        c = cur.peek()
        if not c or c == "#":
            continue
        if c == "[":
            if raw[cur.i:].startswith("[["):
                raise cur.fail("arrays of tables are outside the supported TOML subset")
            cur.i += 1
            parts = tuple(cur.dotted_key())
            cur.ws()
            if cur.peek() != "]":
                raise cur.fail("expected ']' to close the table header")
            cur.i += 1
            cur.end()
            if parts in explicit:
                raise cur.fail("table [%s] defined twice" % ".".join(parts))
            node = root
            for depth, part in enumerate(parts):
                sub = parts[:depth + 1]
                if part in node:
                    nxt = node[part]
                    if not isinstance(nxt, dict) or sub in inline:
                        raise cur.fail("key %r is already a value, not a table" % part)
                else:
                    nxt = node[part] = {}
                    lines.setdefault(sub, lineno)
                node = nxt
            explicit.add(parts)
            lines[parts] = lineno
            current, prefix = node, parts
            continue
        parts = cur.dotted_key()
        if len(parts) != 1:
            raise cur.fail("dotted keys are outside the supported TOML subset")
        key = parts[0]
        cur.ws()
        if cur.peek() != "=":
            raise cur.fail("expected '=' after key")
        cur.i += 1
        val = cur.value()
        cur.end()
        if key in current:
            raise cur.fail("duplicate key %r" % key)
        current[key] = val
        lines[prefix + (key,)] = lineno
        if isinstance(val, dict):
            inline.add(prefix + (key,))
            for sub in val:
                lines[prefix + (key, sub)] = lineno
    return root, lines


def parse_toml(text: str, path: str = "<string>") -> dict:
    """Parse a gates file; raise ScoreError ``path:line: ...`` on anything outside the subset.

    The subset reader runs first on every version, so a file is accepted or rejected (with the
    same message) on 3.9 and 3.13 alike; on 3.11+ tomllib then reads it and its dict is returned
    (tests check that both readers give identical dicts)."""
    return _parse_toml_lines(text, path)[0]


def _parse_toml_lines(text: str, path: str) -> Tuple[dict, Dict[Tuple[str, ...], int]]:
    try:
        data, lines = _toml_subset(text, path)
    except RecursionError:
        raise ScoreError("%s: arrays nested too deeply (more than Python's recursion limit)" % path) from None
    if _tomllib is None:
        return data, lines
    try:
        return _tomllib.loads(text[1:] if text.startswith("\ufeff") else text), lines
    except _tomllib.TOMLDecodeError as exc:   # the subset reader missed a TOML rule
        msg = str(exc)
        m = re.search(r"line (\d+)", msg)
        raise ScoreError("%s:%s: invalid TOML: %s" % (path, m.group(1) if m else "1", msg)) from None
