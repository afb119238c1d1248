"""Binary sections behind a JSON manifest line: the container of index format 2.

A file is one line of compact JSON (the manifest, padded with spaces so that the body
starts at a multiple of 8 bytes), then the body: named *sections*, each starting at a
multiple of 8 bytes of the body.  The manifest lists every section as
``{"name", "type", "offset", "length", "sha256"}`` (offset from the body's start).
Section types: ``json`` (UTF-8 JSON), ``jsonl`` (UTF-8 lines), ``bytes`` (opaque to this
module: compressed blocks, ``postings.py``), or a packed little-endian array: ``u8``,
``i32``, ``u16``, ``u32``, ``u64``, ``f64``.  The whole file may be gzip'd.

Writing streams (:class:`SectionWriter`): each section goes to a temporary body file
as it is produced, its sha256 computed on the way, then the manifest line and the body
are copied into the target, which is replaced atomically.  Nothing holds a whole
section in memory unless its producer does.

Reading (:class:`SectionFile`) keeps a plain file open (a gzip'd one is decompressed
into memory), checks every section's length and sha256, reads small sections whole and
large ones a slice at a time when asked for (``os.pread``), as ``memoryview`` arrays.
Nothing read is ever evaluated: JSON is parsed with ``json``, arrays are cast views.
"""
from __future__ import annotations

import array
import gzip
import hashlib
import json
import os
import shutil
import struct
import sys
import tempfile
import zlib
from typing import Any, Dict, Iterable, List, Optional

from ..errors import MiniRagError
from ..fileio import atomic_write_with

#: section type -> array typecode (checked below to have the named width).
TYPECODES = {"u8": "B", "i32": "i", "u16": "H", "u32": "I", "u64": "Q", "f64": "d"}
_WIDTHS = {"u8": 1, "i32": 4, "u16": 2, "u32": 4, "u64": 8, "f64": 8}
for _t, _c in TYPECODES.items():
    if array.array(_c).itemsize != _WIDTHS[_t]:       # pragma: no cover - exotic platforms
        raise ImportError("array typecode %r is not %d bytes here" % (_c, _WIDTHS[_t]))
_LITTLE = sys.byteorder == "little"
ALIGN = 8
_BLOCK = 1 << 22


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def to_le_bytes(arr: "array.array") -> bytes:
    """The little-endian bytes of an ``array.array``."""
    if _LITTLE:
        return arr.tobytes()
    copy = array.array(arr.typecode, arr)               # pragma: no cover - big-endian hosts
    copy.byteswap()
    return copy.tobytes()


def sweep_section_temps(folder: str) -> int:
    """Remove ``.sections.<pid>.<random>.tmp`` bodies left in ``folder`` by killed index
    writes (their process is gone), and older unnamed ones (``.sections.<random>.tmp``)
    untouched for a minute; returns how many were removed (errors are ignored)."""
    import time
    from ..fileio import scorer
    removed = 0
    try:
        names = [n for n in os.listdir(folder) if n.startswith(".sections.") and n.endswith(".tmp")]
    except OSError:
        return 0
    for name in names:
        parts = name.split(".")
        pid = int(parts[2]) if len(parts) >= 5 and parts[2].isdigit() else 0
        full = os.path.join(folder, name)
        try:
            if pid == os.getpid():
                continue
            if pid and scorer()._alive(pid):
                continue
            if not pid and os.lstat(full).st_mtime > time.time() - 60:
                continue
            os.unlink(full)
            removed += 1
        except OSError:
            pass
    return removed


class SectionWriter:
    """Streams sections into a temporary body file (see the module docstring)."""

    def __init__(self, folder: str) -> None:
        sweep_section_temps(folder)
        fd, self._tmp = tempfile.mkstemp(prefix=".sections.%d." % os.getpid(), suffix=".tmp", dir=folder)
        self._fh = os.fdopen(fd, "w+b")
        self._offset = 0
        self.sections: List[Dict[str, Any]] = []
        self._open: Optional[Dict[str, Any]] = None
        self._hash: Any = None

    def begin(self, name: str, kind: str) -> None:
        if self._open is not None:
            raise RuntimeError("section %r is still open" % self._open["name"])
        pad = -self._offset % ALIGN
        if pad:
            self._fh.write(b"\0" * pad)
            self._offset += pad
        self._open = {"name": name, "type": kind, "offset": self._offset, "length": 0}
        self._hash = hashlib.sha256()

    def write(self, data) -> None:
        """Append bytes (or an ``array.array``, written little-endian) to the open section."""
        if isinstance(data, array.array):
            data = to_le_bytes(data)
        self._fh.write(data)
        self._hash.update(data)
        self._open["length"] += len(data)          # type: ignore[index]
        self._offset += len(data)

    def end(self) -> None:
        sec = self._open
        sec["sha256"] = self._hash.hexdigest()    # type: ignore[index]
        self.sections.append(sec)                  # type: ignore[arg-type]
        self._open = None

    def add(self, name: str, kind: str, parts: Iterable) -> None:
        """A whole section from an iterable of byte strings or arrays."""
        self.begin(name, kind)
        for part in parts:
            self.write(part)
        self.end()

    def add_json(self, name: str, obj: Any) -> None:
        self.add(name, "json", [_dumps(obj)])

    def finish(self, path: str, manifest: Dict[str, Any], compress: bool) -> int:
        """Write ``manifest`` (with the section table) and the body to ``path`` atomically;
        returns the number of bytes written."""
        manifest = dict(manifest)
        manifest["sections"] = self.sections
        line = _dumps(manifest)
        line += b" " * (-(len(line) + 1) % ALIGN) + b"\n"
        written = []

        def write(out) -> None:
            self._fh.flush()
            self._fh.seek(0)
            if compress:
                _gzip_copy(line, self._fh, out)
            else:
                out.write(line)
                shutil.copyfileobj(self._fh, out, _BLOCK)
            written.append(out.tell())
        try:
            atomic_write_with(path, write)
        finally:
            self.close()
        return written[0]

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
            try:
                os.unlink(self._tmp)
            except OSError:
                pass


def write_sections(path: str, manifest: Dict[str, Any], sections, compress: bool):
    """Write ``sections`` (``(name, type, bytes-like or array, sha256 or None)``, in file
    order, all in memory) behind ``manifest`` to ``path`` atomically, in one pass: the
    sha256 (unless given: a section sealed when it was made) and offset of every section
    first, then the manifest line and the sections.  Returns the number of bytes written
    and the section table."""
    if path != "-":
        sweep_section_temps(os.path.dirname(os.path.abspath(path)))   # bodies of killed older writes
    table: List[Dict[str, Any]] = []
    parts: List[Any] = []
    offset = 0
    for name, kind, value, digest in sections:
        if isinstance(value, array.array):
            value = to_le_bytes(value) if not _LITTLE else memoryview(value).cast("B")
        elif isinstance(value, memoryview):
            value = value.cast("B") if value.format != "B" else value
        pad = -offset % ALIGN
        if pad:
            parts.append(b"\0" * pad)
            offset += pad
        length = len(value)
        table.append({"name": name, "type": kind, "offset": offset, "length": length,
                      "sha256": digest or hashlib.sha256(value).hexdigest()})
        parts.append(value)
        offset += length
    manifest = dict(manifest)
    manifest["sections"] = table
    line = _dumps(manifest)
    line += b" " * (-(len(line) + 1) % ALIGN) + b"\n"
    written = []

    def write(out) -> None:
        if compress:
            _gzip_parts([line] + parts, out)
        else:
            out.write(line)
            for part in parts:
                out.write(part)
        written.append(out.tell())
    atomic_write_with(path, write)
    return written[0], table


def _gzip_parts(parts, out) -> None:
    """gzip the concatenated ``parts`` into ``out`` (the header of :func:`_gzip_copy`)."""
    out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
    comp = zlib.compressobj(6, zlib.DEFLATED, -15)
    crc, size = 0, 0
    for part in parts:
        crc = zlib.crc32(part, crc)
        size += len(part)
        out.write(comp.compress(part))
    out.write(comp.flush())
    out.write(struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF))


def _gzip_copy(head: bytes, src, out) -> None:
    """gzip ``head`` + ``src``'s bytes into ``out``: fixed header (mtime 0, no name, OS 255),
    so the same input gives the same bytes on every Python."""
    out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
    comp = zlib.compressobj(6, zlib.DEFLATED, -15)
    crc, size = 0, 0
    block = head
    while block:
        crc = zlib.crc32(block, crc)
        size += len(block)
        out.write(comp.compress(block))
        block = src.read(_BLOCK)
    out.write(comp.flush())
    out.write(struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF))


class SectionFile:
    """An opened sectioned file: its manifest's sections, read whole or on demand.

    A gzip'd file is decompressed into memory.  A plain file stays open: small sections
    are read whole (:meth:`array`, :meth:`json`), large ones are read a slice at a time
    when asked for (:meth:`lazy`), so loading reads only what it needs and a query only
    the postings it touches (the operating system's page cache keeps them warm).
    """

    def __init__(self, path: str, first: bytes, fh, limit: Optional[int] = None) -> None:
        """``limit``: the most bytes a gzip'd file may decompress to (the end of its last
        section, as its manifest says); more is refused unread, so a gzip bomb stops there."""
        self.path = path
        self._fh = fh
        self._buf: Optional[memoryview] = None
        self.base = len(first)
        self.sections: Dict[str, Dict[str, Any]] = {}
        fh.seek(0)
        if fh.read(2) == b"\x1f\x8b":
            fh.close()
            self._fh = None
            try:
                with gzip.open(path, "rb") as gz:
                    data = gz.read() if limit is None else gz.read(limit + 1)
            except (OSError, EOFError, zlib.error) as exc:
                raise MiniRagError("%s: not a readable index file (%s)" % (path, exc)) from None
            if limit is not None and len(data) > limit:
                raise MiniRagError("%s: decompresses to more than the %d bytes its manifest describes; "
                                   "not an index this tool wrote" % (path, limit))
            self._buf = memoryview(data)
            self._size = len(data)
        else:
            self._size = os.fstat(fh.fileno()).st_size

    def check(self, manifest: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
        """Every section present, inside the file, and matching its sha256; by name."""
        out: Dict[str, Dict[str, Any]] = {}
        body = self._size - self.base
        for sec in manifest.get("sections") or []:
            try:
                name, kind, off, length = sec["name"], sec["type"], int(sec["offset"]), int(sec["length"])
            except (KeyError, TypeError, ValueError):
                raise MiniRagError("%s:1: malformed section entry, got %r" % (self.path, sec)) from None
            if off < 0 or length < 0 or off + length > body or off % ALIGN:
                raise MiniRagError("%s: section %r lies outside the file (truncated?); rebuild it "
                                   "with 'python -m mini_rag index --force'" % (self.path, name))
            if kind not in TYPECODES and kind not in ("json", "jsonl", "bytes"):
                raise MiniRagError("%s:1: unknown section type, got %r" % (self.path, kind))
            if self._digest(off, length) != sec.get("sha256"):
                raise MiniRagError("%s: section %r does not match its sha256 (truncated or edited); "
                                   "rebuild it with 'python -m mini_rag index --force'" % (self.path, name))
            out[name] = sec
        self.sections = out
        return out

    def _digest(self, off: int, length: int) -> str:
        h = hashlib.sha256()
        if self._buf is not None:
            h.update(self._buf[self.base + off:self.base + off + length])
            return h.hexdigest()
        pos, left = self.base + off, length
        while left:
            block = self._read(pos, min(left, _BLOCK))
            if not block:
                break
            h.update(block)
            pos += len(block)
            left -= len(block)
        return h.hexdigest()

    def _read(self, pos: int, size: int) -> bytes:
        if _PREAD is not None:
            return _PREAD(self._fh.fileno(), size, pos)
        self._fh.seek(pos)                                  # pragma: no cover - no os.pread
        return self._fh.read(size)

    def raw(self, name: str) -> memoryview:
        """A whole section's bytes."""
        sec = self.sections[name]
        start = self.base + sec["offset"]
        if self._buf is not None:
            return self._buf[start:start + sec["length"]]
        data = self._read(start, sec["length"])
        if len(data) != sec["length"]:
            raise MiniRagError("%s: section %r is shorter than the manifest says" % (self.path, name))
        return memoryview(data)

    def array(self, name: str):
        """A whole section as a read-only sequence of numbers (a cast memoryview, or an
        array on big-endian hosts)."""
        return _cast(self.raw(name), TYPECODES[self.sections[name]["type"]], self.path, name)

    def lazy(self, name: str) -> "LazyArray":
        """A section read on demand: ``lazy[i:j]`` reads items i..j-1 (bytes of a json/jsonl
        section)."""
        sec = self.sections[name]
        code = TYPECODES.get(sec["type"])
        width = array.array(code).itemsize if code else 1
        if sec["length"] % width:
            raise MiniRagError("%s: section %r has a partial item" % (self.path, name))
        if self._buf is not None:
            whole = self.raw(name)
            return whole.cast(code) if code and _LITTLE else (_cast(whole, code, self.path, name) if code else whole)
        return LazyArray(self, self.base + sec["offset"], sec["length"] // width, code, width)

    def json(self, name: str) -> Any:
        try:
            return json.loads(bytes(self.raw(name)))
        except (UnicodeDecodeError, ValueError):
            raise MiniRagError("%s: section %r is not JSON" % (self.path, name)) from None

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __del__(self) -> None:
        fh = getattr(self, "_fh", None)
        if fh is not None:
            fh.close()


_PREAD = getattr(os, "pread", None)


def _cast(view: memoryview, code: str, path: str, name: str):
    if view.nbytes % array.array(code).itemsize:
        raise MiniRagError("%s: section %r has a partial item" % (path, name))
    if _LITTLE:
        return view.cast(code)
    arr = array.array(code, view.tobytes())               # pragma: no cover - big-endian hosts
    arr.byteswap()
    return arr


class LazyArray:
    """Items of a section read from the open file when sliced: ``la[i:j]`` is a cast
    memoryview of items i..j-1 (their bytes when the section is not an array)."""

    __slots__ = ("_file", "_start", "_n", "_code", "_width")

    def __init__(self, file: SectionFile, start: int, n: int, code: Optional[str], width: int) -> None:
        self._file, self._start, self._n, self._code, self._width = file, start, n, code, width

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, key):
        if not isinstance(key, slice):
            raise TypeError("LazyArray supports slices only")
        i, j, _ = key.indices(self._n)
        j = max(i, j)
        data = self._file._read(self._start + i * self._width, (j - i) * self._width)
        view = memoryview(data)
        if len(data) != (j - i) * self._width:
            raise MiniRagError("%s: the index file changed or shrank while in use" % self._file.path)
        if self._code is None:
            return view
        return _cast(view, self._code, self._file.path, "?")


__all__ = ["SectionWriter", "SectionFile", "LazyArray", "TYPECODES", "to_le_bytes", "write_sections"]
