"""Binary sections behind a JSON manifest line: the container of index format 2.

A file is one line of compact JSON (the manifest, padded with spaces so that the body
starts at a multiple of 8 bytes), then the body: named *sections*, each starting at a
multiple of 8 bytes of the body.  The manifest lists every section as
``{"name", "type", "offset", "length", "sha256"}`` (offset from the body's start).

A *paged* section (the large ones: ``write_sections(..., paged=...)``) is hashed in pages
of ``PAGE`` bytes, as dm-verity hashes a block device in 4 KiB blocks: its entry adds
``"pages": {"size": PAGE, "at": A, "hash": "crc32"}``, the digests of its pages are bytes
``A..`` of the ``pages`` section (the last section, itself hashed as a whole), and its
``sha256`` is the sha256 of those digests.  A page's digest is its CRC-32 (4 bytes
little-endian; format 5), or, in a file whose entry has no ``hash`` (format 4), its sha256
(32 bytes): a page is checked against damage (truncation, torn or misplaced writes, flipped
bits: every error burst of up to 32 bits is caught, any other damage but once in 2**32),
as btrfs and ext4 check their blocks with CRC-32C; the table of those digests is itself
checked by sha256 (the manifest's).  A hash, whatever its strength, is no defence against
someone who can rewrite the file: they can rewrite the manifest's digests too.
Section types: ``json`` (UTF-8 JSON), ``jsonl`` (UTF-8 lines), ``bytes`` (opaque to this
module: compressed blocks, ``postings.py``), or a packed little-endian array: ``u8``,
``i32``, ``u16``, ``u32``, ``u64``, ``f64``.  The whole file may be gzip'd.

Writing (:func:`write_sections`): every section's digest and offset first, then the
manifest line and the sections, in one pass into a temporary file that replaces the
target atomically.

Reading (:class:`SectionFile`) keeps a plain file open (a gzip'd one is decompressed
into memory), checks every section's place and type, reads small sections whole and large
ones a slice at a time when asked for (``os.pread``), as ``memoryview`` arrays.  Hashes:
a section is checked against its sha256 when the file is opened, or, for those named in
``check(..., defer=...)``, when first read; a paged section's page digests are checked
when opened and each page when it is first read (a plain file; a gzip'd one, already in
memory, is checked whole when opened).  Nothing is returned before the bytes it comes from
were checked: a damaged page is an error naming the file and the section, raised by the
read.  Nothing read is ever evaluated: JSON is parsed with ``json``, arrays are cast views.
"""
from __future__ import annotations

import array
import gzip
import hashlib
import json
import operator
import os
import struct
import sys
import zlib
from typing import Any, Dict, List, Optional

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
#: Bytes a page of a paged section (one digest each); the name of their section.
PAGE = 1 << 12
PAGES = "pages"
#: Page hashes: name -> bytes a digest.  ``crc32`` (format 5, what :func:`write_sections`
#: writes): zlib's CRC-32 of the page, 4 bytes little-endian; ``sha256`` (format 4; a
#: ``pages`` entry without ``hash``): 32 bytes.
PAGE_HASHES = {"crc32": 4, "sha256": 32}
PAGE_HASH = "crc32"
_digest_of = operator.methodcaller("digest")


def page_digests(data, size: int = PAGE, kind: str = PAGE_HASH) -> bytes:
    """The digests (``kind``: ``PAGE_HASHES``) of ``data``'s pages of ``size`` bytes (the
    last one may be shorter), concatenated: C-level calls, no Python code per page."""
    view = memoryview(data)
    if view.format != "B" or view.itemsize != 1:
        view = view.cast("B")
    n = len(view)
    pages = map(view.__getitem__, map(slice, range(0, n, size), range(size, n + size, size)))
    if kind == "crc32":
        return to_le_bytes(array.array("I", map(zlib.crc32, pages)))
    if kind == "sha256":
        return b"".join(map(_digest_of, map(hashlib.sha256, pages)))
    raise ValueError("unknown page hash %r" % (kind,))


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
            if pid and scorer().pid_alive(pid):
                continue
            if not pid and os.lstat(full).st_mtime > time.time() - 60:
                continue
            os.unlink(full)
            removed += 1
        except OSError:
            pass
    return removed


def write_sections(path: str, manifest: Dict[str, Any], sections, compress: bool, paged=(),
                   page_hash: str = PAGE_HASH):
    """Write ``sections`` (``(name, type, bytes-like or array, digest or None)``, in file
    order, all in memory) behind ``manifest`` to ``path`` atomically, in one pass: the
    digest (unless given: a section sealed when it was made) and offset of every section
    first, then the manifest line and the sections.  A section named in ``paged`` is hashed
    page by page with ``page_hash`` (its digest, when given, is :func:`page_digests` of its
    bytes by that hash), and their digests are written as the last section, ``pages``; any other's
    digest is its sha256's hex string.  Returns the number of bytes written and the
    section table."""
    if path != "-":
        sweep_section_temps(os.path.dirname(os.path.abspath(path)))   # bodies of killed older writes
    table: List[Dict[str, Any]] = []
    parts: List[Any] = []
    pages: List[bytes] = []
    at = 0
    offset = 0
    items = list(sections)
    if paged:
        items.append((PAGES, "bytes", None, None))
    for name, kind, value, digest in items:
        if name == PAGES and paged:
            value = b"".join(pages)
        if isinstance(value, array.array):
            value = to_le_bytes(value) if not _LITTLE else memoryview(value).cast("B")
        elif isinstance(value, memoryview):
            value = value.cast("B") if value.format != "B" else value
        pad = -offset % ALIGN
        if pad:
            parts.append(b"\0" * pad)
            offset += pad
        length = len(value)
        entry = {"name": name, "type": kind, "offset": offset, "length": length}
        if name in paged:
            digests = digest or page_digests(value, PAGE, page_hash)
            pages.append(digests)
            entry["sha256"] = hashlib.sha256(digests).hexdigest()
            entry["pages"] = {"size": PAGE, "at": at}
            if page_hash != "sha256":                   # format 4's entries name none
                entry["pages"]["hash"] = page_hash
            at += len(digests)
        else:
            entry["sha256"] = digest or hashlib.sha256(value).hexdigest()
        table.append(entry)
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
            with _Flusher(out) as flusher:
                out.write(line)
                for part in parts:
                    flusher.write(part)
        written.append(out.tell())
    atomic_write_with(path, write)
    return written[0], table


class _Flusher:
    """Writes into a regular file with its written bytes sent to the disk meanwhile: every
    ``FLUSH`` bytes, a thread is asked to ``os.fdatasync`` the file (the system call waits
    for the disk with the GIL released, while this thread goes on writing), so the fsync
    that the atomic-write policy makes before its rename (``fileio.atomic_write_with``) has
    only the tail left to wait for.  What reaches the disk and when it is durable is
    unchanged: that fsync still comes before the rename, and an error of an early
    ``fdatasync`` is left for it to report.  Not a regular file (stdout, a device): plain
    writes."""

    FLUSH = 1 << 23

    def __init__(self, out) -> None:
        import stat
        import threading
        self.out = out
        self._fd = -1
        try:
            fd = out.fileno()
            if stat.S_ISREG(os.fstat(fd).st_mode) and hasattr(os, "fdatasync"):
                self._fd = fd
        except (AttributeError, OSError, ValueError):
            pass
        self._wake = threading.Event()
        self._stop = False
        self._pending = 0
        self._asked = 0         # flushes asked for (slabs written) and made: a flush asked
        self._made = 0          # for before the exit is made before the thread ends
        self._thread = threading.Thread(target=self._run, name="mini_rag-flush", daemon=True) \
            if self._fd >= 0 else None

    def __enter__(self) -> "_Flusher":
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop = True
            self._wake.set()
            self._thread.join()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            asked = self._asked
            if asked != self._made:
                self._made = asked
                try:
                    os.fdatasync(self._fd)
                except OSError:     # the policy's own fsync reports a failing disk
                    return
            if self._stop:
                return

    def write(self, part) -> None:
        """``out.write(part)``, a slab of ``FLUSH`` bytes at a time, the thread woken after each."""
        out = self.out
        if self._thread is None:
            out.write(part)
            return
        view = memoryview(part)
        if view.format != "B" or view.itemsize != 1:
            view = view.cast("B")
        a, n = 0, len(view)
        while a < n:
            b = min(n, a + self.FLUSH - self._pending)
            out.write(view[a:b])
            self._pending += b - a
            a = b
            if self._pending >= self.FLUSH:
                out.flush()
                self._pending = 0
                self._asked += 1
                self._wake.set()


def _gzip_parts(parts, out) -> None:
    """gzip the concatenated ``parts`` into ``out``: fixed header (mtime 0, no name, OS 255),
    so the same input gives the same bytes on every Python."""
    out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
    comp = zlib.compressobj(6, zlib.DEFLATED, -15)
    crc, size = 0, 0
    for part in parts:
        crc = zlib.crc32(part, crc)
        size += len(part)
        out.write(comp.compress(part))
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
        self._pending: set = set()                  # sections whose sha256 is checked when first read
        self._paged: Dict[str, "_Pages"] = {}       # paged sections, each page checked when first read
        self._all_pages: Optional[bytes] = None
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

    def check(self, manifest: Dict[str, Any], defer=()) -> Dict[str, Dict[str, Any]]:
        """Every section present, inside the file and of a known type; by name.  Hashes
        (see the module docstring): a section is checked against its sha256 now, or when
        first read if named in ``defer``; a paged section's page digests now (against its
        sha256), each page when first read (all of them now when the file is in memory)."""
        out: Dict[str, Dict[str, Any]] = {}
        body = self._size - self.base
        paged = []
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
            if "pages" in sec:
                paged.append(sec)
            elif name in defer and self._buf is None:
                self._pending.add(name)
            elif self._digest(off, length) != sec.get("sha256"):
                raise self._mismatch(name)
            out[name] = sec
        self.sections = out
        for sec in paged:
            self._paged[sec["name"]] = self._pages_of(sec)
        self._all_pages = None
        return out

    def _mismatch(self, name: str, page: Optional[int] = None) -> MiniRagError:
        where = "" if page is None else " (page %d, bytes %d..%d of the section)" % (
            page, page * self._paged[name].size, (page + 1) * self._paged[name].size - 1)
        kind = "sha256" if page is None else self._paged[name].kind
        return MiniRagError("%s: section %r does not match its %s%s (truncated or edited); "
                            "rebuild it with 'python -m mini_rag index --force'" % (self.path, name, kind, where))

    def _pages_of(self, sec: Dict[str, Any]) -> "_Pages":
        """A paged section's page digests, checked against its sha256 (and, in memory, its
        pages against them)."""
        name, length = sec["name"], int(sec["length"])
        info = sec["pages"]
        whole = self.sections.get(PAGES)
        try:
            size, at = int(info["size"]), int(info["at"])
            kind = info.get("hash", "sha256")
            width = PAGE_HASHES[kind]
        except (KeyError, TypeError, ValueError, AttributeError):
            raise MiniRagError("%s:1: malformed section entry, got %r" % (self.path, sec)) from None
        count = -(-length // size) if size > 0 else -1
        if whole is None or "pages" in whole or size <= 0 or size % ALIGN or at < 0 or at % width \
                or at + count * width > int(whole["length"]):
            raise MiniRagError("%s:1: section %r has no page digests (a %r section) where its entry says"
                               % (self.path, name, PAGES))
        if self._all_pages is None:
            self._all_pages = bytes(self.raw(PAGES))
        digests = self._all_pages[at:at + count * width]
        if hashlib.sha256(digests).hexdigest() != sec.get("sha256"):
            raise self._mismatch(name)
        pages = _Pages(self, name, self.base + int(sec["offset"]), length, size, digests, kind)
        if self._buf is not None:
            start = pages.start
            if page_digests(self._buf[start:start + length], size, kind) != digests:
                raise self._mismatch(name)
        return pages

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
        """A whole section's bytes (checked against their hash first, if not yet)."""
        sec = self.sections[name]
        start = self.base + sec["offset"]
        if self._buf is not None:
            return self._buf[start:start + sec["length"]]
        pages = self._paged.get(name)
        if pages is not None:
            return memoryview(pages.read(0, sec["length"]))
        data = self._read(start, sec["length"])
        if len(data) != sec["length"]:
            raise MiniRagError("%s: section %r is shorter than the manifest says" % (self.path, name))
        if name in self._pending:
            if hashlib.sha256(data).hexdigest() != sec.get("sha256"):
                raise self._mismatch(name)
            self._pending.discard(name)
        return memoryview(data)

    def page_digests(self, name: str, kind: str = PAGE_HASH) -> Optional[bytes]:
        """A paged section's page digests (checked against its sha256) when they are of
        the hash ``kind``, None for another section or another hash."""
        pages = self._paged.get(name)
        return pages.digests if pages is not None and pages.kind == kind else None

    def array(self, name: str):
        """A whole section as a read-only sequence of numbers (a cast memoryview, or an
        array on big-endian hosts)."""
        return _cast(self.raw(name), TYPECODES[self.sections[name]["type"]], self.path, name)

    def lazy(self, name: str) -> "LazyArray":
        """A section read on demand: ``lazy[i:j]`` reads items i..j-1 (bytes of a json/jsonl
        section), the pages they lie in checked on their first read."""
        sec = self.sections[name]
        code = TYPECODES.get(sec["type"])
        width = array.array(code).itemsize if code else 1
        if sec["length"] % width:
            raise MiniRagError("%s: section %r has a partial item" % (self.path, name))
        if self._buf is not None:
            whole = self.raw(name)
            return whole.cast(code) if code and _LITTLE else (_cast(whole, code, self.path, name) if code else whole)
        if name in self._pending:
            self.raw(name)                  # checked whole before any part of it is used
        pages = self._paged.get(name)
        read = pages.read if pages is not None else _Plain(self, self.base + sec["offset"]).read
        return LazyArray(self, read, sec["length"] // width, code, width)

    def json(self, name: str) -> Any:
        data = bytes(self.raw(name))                  # its hash checked first (a MiniRagError)
        try:
            return json.loads(data)
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


class _Plain:
    """Reads of a section checked when the file was opened."""

    __slots__ = ("_file", "_start")

    def __init__(self, file: SectionFile, start: int) -> None:
        self._file, self._start = file, start

    def read(self, off: int, size: int) -> bytes:
        return self._file._read(self._start + off, size)


class _Pages:
    """Reads of a paged section: bytes ``off..off+size-1`` of the section, every page they
    lie in checked against its digest on its first read (``done`` marks the checked ones);
    a page that does not match is an error naming the file, the section and the page."""

    __slots__ = ("file", "name", "start", "length", "size", "digests", "done", "kind", "width")

    def __init__(self, file: SectionFile, name: str, start: int, length: int, size: int, digests: bytes,
                 kind: str = PAGE_HASH) -> None:
        self.file, self.name, self.start, self.length, self.size = file, name, start, length, size
        self.digests, self.kind, self.width = digests, kind, PAGE_HASHES[kind]
        self.done = bytearray(len(digests) // self.width)

    def read(self, off: int, size: int):
        if size <= 0:
            return b""
        p = self.size
        a, b = off // p, (off + size - 1) // p + 1
        if self.done.find(0, a, b) < 0:
            return self.file._read(self.start + off, size)
        lo, hi = a * p, min(b * p, self.length)
        data = self.file._read(self.start + lo, hi - lo)
        if len(data) != hi - lo:
            raise MiniRagError("%s: the index file changed or shrank while in use" % self.file.path)
        w = self.width
        got = page_digests(data, p, self.kind)
        want = self.digests[a * w:b * w]
        if got != want:
            bad = next(k for k in range(b - a) if got[k * w:(k + 1) * w] != want[k * w:(k + 1) * w])
            raise self.file._mismatch(self.name, a + bad)
        self.done[a:b] = b"\x01" * (b - a)
        return memoryview(data)[off - lo:off - lo + size] if (off - lo or hi - lo != size) else data


class LazyArray:
    """Items of a section read from the open file when sliced: ``la[i:j]`` is a cast
    memoryview of items i..j-1 (their bytes when the section is not an array)."""

    __slots__ = ("_file", "_read", "_n", "_code", "_width")

    def __init__(self, file: SectionFile, read, n: int, code: Optional[str], width: int) -> None:
        self._file, self._read, self._n, self._code, self._width = file, read, n, code, width

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, key):
        if not isinstance(key, slice):
            raise TypeError("LazyArray supports slices only")
        i, j, _ = key.indices(self._n)
        j = max(i, j)
        data = self._read(i * self._width, (j - i) * self._width)
        view = memoryview(data)
        if len(data) != (j - i) * self._width:
            raise MiniRagError("%s: the index file changed or shrank while in use" % self._file.path)
        if self._code is None:
            return view
        return _cast(view, self._code, self._file.path, "?")


__all__ = ["SectionFile", "LazyArray", "TYPECODES", "PAGE", "PAGES", "page_digests", "PAGE_HASH", "to_le_bytes",
           "write_sections"]
