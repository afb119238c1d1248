"""The output policy: what may be written where (never a device, FIFO, symlink, input or another
command's output), atomic writes, JSON and Markdown rendering."""
from __future__ import annotations

import json
import os
import re
import stat
import sys
import tempfile
import time

from .base import MAX_SMALL_FILE_BYTES, ScoreError, TMP_SUFFIX
from .fmt import _fmt_num
from .inputs import _file_kind, _show

# --------------------------------------------------------------------------- the output policy
# One rule for every command of both tools (issue 33): before anything is written, each output
# path is resolved (symlinks followed) and refused, naming both, when it is an input of the
# command, another output of it, a folder, or an existing non-empty file that is not of the
# output's kind (a report only replaces a report, an index an index).  ``force`` (--force) is
# the only way to replace a foreign file; it never allows an output over an input.  A device,
# FIFO or socket is written in place (stdout-like use, never replaced), except where the output
# must be a regular file (an index, a partial, the files a manifest lists).

_SNIFF_BYTES = 1 << 16


def _first_line(head: bytes) -> bytes:
    return head.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)[0]


def _score_eval_html(h: bytes) -> bool:
    return h.startswith(b"<!DOCTYPE html>") and b'content="score_eval"' in h


OUTPUT_KINDS = {
    # kind: (what it is, does the head of an existing file look like one?)
    # (a report's "schema" is a top-level key; mini_rag eval's report.json nests reports deeper)
    "report": ("a score_eval JSON report", lambda h: h.lstrip().startswith(b"{") and b'\n  "schema": "score_eval/1"' in h),
    "items": ("a score_eval items JSONL file", lambda h: b'"qid"' in _first_line(h) and b'"flags"' in _first_line(h)),
    "markdown": ("a score_eval Markdown report", lambda h: h.startswith(b"# score_eval report")),
    "html": ("a score_eval HTML report", _score_eval_html),
    "report-html": ("a score_eval HTML report of one run", lambda h: _score_eval_html(h)
                    and b"<title>score_eval report: " in h),
    "merged-html": ("a page of merged score_eval HTML reports", lambda h: _score_eval_html(h)
                    and b"<title>score_eval report</title>" in h),
    "eval-markdown": ("a mini_rag eval Markdown report", lambda h: h.startswith(b"# mini_rag eval")),
    "junit": ("a JUnit XML report", lambda h: h.startswith(b"<?xml") and b"<testsuites" in h),
    "csv": ("a score_eval CSV file", lambda h: h.startswith(b"qid,category,") or h.startswith(b"metric,value,")),
    "manifest": ("an output-set manifest", lambda h: b'"schema": "output-set/1"' in h),
    "partial": ("a score_eval partial", lambda h: h.startswith(b'{"format":"' + PARTIAL_FORMAT.encode() + b'"')),
    "trace": ("a trace JSONL file", lambda h: b'"retrieved_ids"' in _first_line(h)),
    "perturb": ("a perturbation gold set", lambda h: b'"perturbation"' in _first_line(h) and b'"qid"' in _first_line(h)),
    "index": ("a mini_rag index", lambda h: h.startswith(b"{") and b'"mini_rag-index"' in _first_line(h)),
    "eval-report": ("a mini_rag eval report", lambda h: h.lstrip().startswith(b"{") and b'"datasets"' in h),
}
REGULAR_KINDS = ("index", "partial")
#: The command that writes each kind, named when an output would replace another command's file.
_WRITERS = {
    "report": "score_eval.py --out", "items": "score_eval.py --items", "markdown": "score_eval.py --markdown",
    "report-html": "score_eval.py --html", "junit": "score_eval.py --junit", "csv": "score_eval.py --csv",
    "partial": "score_eval.py --partial", "merged-html": "score_eval.py merge-html (python -m mini_rag eval "
    "writes its report.html with it)", "eval-report": "python -m mini_rag eval (make eval)",
    "eval-markdown": "python -m mini_rag eval (make eval)", "manifest": "score_eval.py --manifest or "
    "python -m mini_rag eval", "trace": "python -m mini_rag run", "perturb": "python -m mini_rag perturb",
    "index": "python -m mini_rag index",
}


#: The output kinds in the order a file's head is tested against them: the most specific first.
_SNIFF_ORDER = ("report", "items", "trace", "perturb", "partial", "index", "manifest", "eval-report",
                "eval-markdown", "markdown", "merged-html", "report-html", "junit", "csv")


def _written_by(head: bytes) -> Optional[str]:
    """The kind of an existing file's head (most specific first), None when it is none of them."""
    for kind in _SNIFF_ORDER:
        if OUTPUT_KINDS[kind][1](head):
            return kind
    return None


def _file_head(path: str, size: int = _SNIFF_BYTES) -> bytes:
    """The first ``size`` bytes of a regular file (decompressed when it is gzip)."""
    with open(path, "rb") as fh:
        head = fh.read(size)
    if head[:2] == b"\x1f\x8b":             # gzip: what it starts with, even when truncated
        import zlib
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, size)
        except zlib.error:
            pass
    return head


def _identity(path: str):
    """``(dev, inode)`` of an existing path (symlinks followed), else its resolved path."""
    try:
        st = os.stat(path)
        return (st.st_dev, st.st_ino)
    except (OSError, ValueError):
        return os.path.realpath(path)


def check_outputs(outputs, inputs, force: bool = False) -> None:
    """Apply the output policy (see above).  ``outputs``: ``(label, path, kind)``; ``inputs``:
    ``(label, path)``; ``None`` and ``-`` are skipped.  A ScoreError names both paths."""
    ins = []
    for label, path in inputs:
        if path and path != "-":
            ins.append((label, path, _identity(path)))
    seen = []
    for label, path, kind in outputs:
        if not path or path == "-":
            continue
        if "\x00" in path:
            raise ScoreError("%s %r: a path cannot hold a NUL character" % (label, path))
        ident = _identity(path)
        for in_label, in_path, in_ident in ins:
            if ident == in_ident:
                raise ScoreError("%s %s: is the input %s %s (the same file); writing it would destroy the "
                                 "input: choose another output path" % (label, path, in_label, in_path))
        for out_label, out_path, out_ident in seen:
            if ident == out_ident:
                raise ScoreError("%s %s: is also the output %s %s (the same file); each output needs "
                                 "its own path" % (label, path, out_label, out_path))
        seen.append((label, path, ident))
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ScoreError("%s %s: cannot write: %s" % (label, path, exc.strerror or exc)) from None
        if stat.S_ISDIR(st.st_mode):
            raise ScoreError("%s %s: cannot write: it is a folder" % (label, path))
        what = OUTPUT_KINDS.get(kind, (kind, None))[0]
        if not stat.S_ISREG(st.st_mode):
            if kind in REGULAR_KINDS:
                raise ScoreError("%s %s: is %s, not a regular file; %s is written to a regular file"
                                 % (label, path, _file_kind(st.st_mode), what))
            continue
        if st.st_size == 0 or force or kind not in OUTPUT_KINDS:
            continue
        try:
            head = _file_head(path)
        except OSError as exc:
            raise ScoreError("%s %s: cannot read what it holds: %s" % (label, path, exc.strerror or exc)) from None
        if not OUTPUT_KINDS[kind][1](head):
            found = _written_by(head)
            hint = "'python -m mini_rag index --force'" if kind == "index" else "--force"
            if found is not None:
                raise ScoreError("%s %s: is %s, written by %s; refusing to replace another command's output "
                                 "(it is not %s): choose another path, or %s to replace it"
                                 % (label, path, OUTPUT_KINDS[found][0], _WRITERS[found], what, hint))
            raise ScoreError("%s %s: exists and is not %s (it starts %s); refusing to replace it: "
                             "choose another path, or %s to replace it"
                             % (label, path, what, _show(head[:40].decode("utf-8", "replace"), 60), hint))


SET_MANIFEST = "manifest.json"     # the name of an output set's manifest (make eval's runs/manifest.json)


def check_output_sets(outputs, force: bool = False) -> None:
    """An existing output listed in the ``manifest.json`` of its folder belongs to the output set
    another command wrote (make eval's runs/: each file's sha256): replacing it would break
    that set, so it is refused, naming both, unless ``force`` or that manifest is itself an
    output of this command (it is rewritten)."""
    if force:
        return
    own = {_identity(p) for _, p, _ in outputs if p and p != "-"}
    listings: Dict[str, Optional[set]] = {}
    for label, path, kind in outputs:
        if not path or path == "-" or kind == "manifest" or not os.path.isfile(path):
            continue
        folder = os.path.dirname(os.path.abspath(path))
        manifest = os.path.join(folder, SET_MANIFEST)
        if manifest not in listings:
            listings[manifest] = None if _identity(manifest) in own else _set_listing(manifest)
        listed = listings[manifest]
        if listed and os.path.relpath(os.path.abspath(path), folder).replace(os.sep, "/") in listed:
            shown = os.path.join(os.path.dirname(path), SET_MANIFEST)
            raise ScoreError("%s %s: is listed in %s, the output set %s wrote (a sha256 per file); replacing "
                             "it would break that set: choose another path (a folder of your own, e.g. "
                             "runs/own/), or --force to replace it" % (label, path, shown, _set_writer(folder, listed)))


def _set_listing(manifest: str) -> Optional[set]:
    """The files an output-set manifest lists (None when it is absent, too big or not one)."""
    try:
        if not os.path.isfile(manifest) or os.path.getsize(manifest) > MAX_SMALL_FILE_BYTES:
            return None
        with open(manifest, "rb") as fh:
            doc = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != "output-set/1" or not isinstance(doc.get("sha256"), dict):
        return None
    return set(doc["sha256"])


def _set_writer(folder: str, listed: set) -> str:
    """Who wrote a set: make eval's lists its combined report.json, a mini_rag eval report."""
    try:
        if "report.json" in listed and OUTPUT_KINDS["eval-report"][1](_file_head(os.path.join(folder, "report.json"))):
            return _WRITERS["eval-report"]
    except OSError:
        pass
    return "a score_eval.py --manifest run"


def manifest_listable(outputs) -> None:
    """The files a manifest lists are read back for their sha256: each must be a regular file
    (or not exist yet); a device such as /dev/zero would never end."""
    for label, path in outputs:
        if not path or path == "-":
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            raise ScoreError("%s %s: is %s; --manifest lists regular files only (give a file, or no --manifest)"
                             % (label, path, _file_kind(st.st_mode)))


def atomic_write(path: str, text: str) -> None:
    """``write_output`` of ``text`` as UTF-8."""
    write_output(path, text.encode("utf-8"))


def write_output(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves the old file or the new one, never half.

    ``-`` is stdout.  A symlink is resolved and its target replaced; a device, FIFO or socket
    is written directly (never renamed over).  A regular file is written to a temp file in
    the target's folder (``.<name>.<pid>.<random>.ragtmp``), fsynced, given mode
    0666 & ~umask and renamed into place.  Every OS error is a ScoreError naming the path."""
    if path == "-":
        buf = getattr(sys.stdout, "buffer", None)
        if buf is None:                       # a text-only stream (tests, IDEs)
            sys.stdout.write(data.decode("utf-8"))
        else:
            sys.stdout.flush()
            buf.write(data)
            buf.flush()
        return
    write_output_with(path, lambda fh: fh.write(data))


def write_output_with(path: str, write) -> None:
    """:func:`write_output` of content produced piece by piece: ``write(fh)`` writes it to
    the binary file (the temp file, or the device in place); ``-`` is stdout's buffer."""
    if path == "-":
        sys.stdout.flush()
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    target = os.path.realpath(path)
    try:
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise ScoreError("%s: cannot write: it is a folder" % path)
        if st is not None and not stat.S_ISREG(st.st_mode):
            # a device or FIFO: written in place, never replaced; a FIFO nobody reads is an
            # error (ENXIO), not a hang
            flags = os.O_WRONLY | (os.O_NONBLOCK if stat.S_ISFIFO(st.st_mode) else 0)
            try:
                fd = os.open(target, flags)
            except OSError as exc:
                if exc.errno == getattr(__import__("errno"), "ENXIO", -1):
                    raise ScoreError("%s: cannot write: a FIFO with no reader" % path) from None
                raise
            if flags & os.O_NONBLOCK:
                os.set_blocking(fd, True)
            with os.fdopen(fd, "wb") as fh:
                write(fh)
            return
        folder = os.path.dirname(target)
        os.makedirs(folder, exist_ok=True)
        sweep_temp_files(folder)
        fd, tmp = tempfile.mkstemp(prefix=".%s.%d." % (os.path.basename(target), os.getpid()),
                                   suffix=TMP_SUFFIX, dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise ScoreError("%s: cannot write: %s" % (path, exc.strerror or exc)) from None


def write_manifest(path: str, files: List[str]) -> None:
    """Write, last, the manifest of a set of outputs: each file's sha256 as written.  A reader
    tells a complete set (every hash matches) from a torn one (a run killed midway removed
    the old manifest first and never wrote the new one)."""
    import hashlib
    hashes = {}
    here = os.path.dirname(os.path.abspath(path))
    for f in files:
        try:
            with open(f, "rb") as fh:
                hashes[os.path.relpath(os.path.abspath(f), here).replace(os.sep, "/")] = \
                    hashlib.sha256(fh.read()).hexdigest()
        except OSError as exc:
            raise ScoreError("%s: cannot read back for the manifest: %s" % (f, exc.strerror)) from None
    atomic_write(path, json.dumps({"schema": "output-set/1", "sha256": hashes}, indent=2) + "\n")


def remove_output(path: str) -> None:
    """Remove an earlier manifest before a new set is written (missing is fine).  Only a
    regular file is removed (a symlink's target); a device, FIFO or socket is left alone."""
    target = os.path.realpath(path)
    try:
        if not stat.S_ISREG(os.stat(target).st_mode):
            return
        os.unlink(target)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise ScoreError("%s: cannot remove: %s" % (path, exc.strerror)) from None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_STARTED = time.time()


def sweep_temp_files(folder: str) -> int:
    """Remove ``*.ragtmp`` files in ``folder`` left by killed runs: their process is gone and
    they are older than this one.  Returns how many were removed (errors are ignored)."""
    removed = 0
    try:
        names = [n for n in os.listdir(folder) if n.endswith(TMP_SUFFIX) and n.startswith(".")]
    except OSError:
        return 0
    for name in names:
        parts = name.split(".")
        pid = int(parts[-3]) if len(parts) >= 4 and parts[-3].isdigit() else 0
        full = os.path.join(folder, name)
        try:
            if pid == os.getpid() or os.lstat(full).st_mtime >= _STARTED or pid_alive(pid):
                continue
            os.unlink(full)
            removed += 1
        except OSError:
            pass
    return removed


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:          # exists, owned by someone else
        return True
    return True


def render_json(report: dict, items: Dict[str, str]) -> str:
    """indent=2 like the seed; the per-item map goes last on one line (fast for big sets)."""
    head = json.dumps(report, indent=2, ensure_ascii=False)
    return head[:-2] + ',\n  "items": ' + json.dumps(items, ensure_ascii=False, separators=(",", ":")) + "\n}\n"


def render_markdown(report: dict, worst: List[dict]) -> str:
    mark = {True: "PASS", False: "FAIL"}
    out = ["# score_eval report: %s" % md_text(report["dataset"]), "",
           "**%s**: %d of %d gates pass." % (mark[report["pass"]],
                                               sum(1 for g in report["gate_results"] if g["pass"]),
                                               len(report["gate_results"])), ""]
    c = report["counts"]
    out.append("Gold items: %d; trace rows: %d; missing traces: %d; unknown trace rows: %d; duplicate "
               "trace rows: %d." % (c["gold_items"], c["trace_rows"], c["missing_traces"],
                                    c["unknown_trace_rows"], c["duplicate_trace_rows"]))
    out += ["", "## Gates", "", "| | gate | value | needs | note |", "|---|---|---|---|---|"]
    for g in report["gate_results"]:
        need = "" if g["op"] is None else "%s %s" % (g["op"], _fmt_num(g["threshold"]))
        note = (g["reason"] or "") + ((" " + g["message"]) if g.get("message") else "")
        out.append("| %s | `%s`%s | %s | %s | %s |" % (_markdown_mark(g), g["gate"], _markdown_tier(g),
                                                    _cell(g["value"]), need, md_text(note)))
    card = report.get("scorecard")
    if card:
        out += ["", "Weighted overall score: %s (%s)." % (_cell(card["overall"]), card["note"])]
    out += ["", "## Metrics", "", "| metric | value | count / n | 95% CI |", "|---|---|---|---|"]
    for name, e in report["metrics"].items():
        frac = "" if e["n"] is None else ("%s / %d" % (e["count"], e["n"]) if e["count"] is not None else "n = %d" % e["n"])
        ci = "" if e["ci"] is None else "%.4f - %.4f" % tuple(e["ci"])
        out.append("| `%s` | %s | %s | %s |" % (name, _cell(e["value"]) if e["value"] is not None else
                                                 "null (%s)" % e["reason"], frac, ci))
    cats = report["categories"]
    if cats:
        cols = [n for n in ("pass_rate", "precision", "chr", "hallucination", "over_refusal", "under_refusal",
                            "recall@%d" % report["k"], "nDCG@%d" % report["k"]) if n in report["metrics"]]
        out += ["", "## Categories", "", "| category | items | " + " | ".join(cols) + " |",
                "|---|---|" + "---|" * len(cols)]
        for cat, block in cats.items():
            out.append("| %s | %d | %s |" % (md_text(cat), block["items"], " | ".join(
                _cell(block["metrics"].get(col, {}).get("value")) for col in cols)))
    out += ["", "## Failure modes", ""]
    if report["failure_modes"]:
        out += ["| mode | items |", "|---|---|"]
        out += ["| %s | %d |" % kv for kv in report["failure_modes"].items()]
    else:
        out.append("No failing items.")
    if worst:
        out += ["", "## Worst items (up to %d)" % len(worst), "", "| qid | category | failure mode | all labels |",
                "|---|---|---|---|"]
        for w in worst:
            out.append("| %s | %s | %s | %s |" % (md_text(w["qid"]), md_text(w["category"]), w["failure_mode"],
                                                ", ".join(w["labels"])))
    reg = report.get("regression")
    if reg:
        out += ["", "## Against the baseline", "", "Baseline: %s; %d items paired." % (md_text(reg["baseline"]), reg["matched_items"]),
                "", "| metric | baseline | current | delta | worse | better | p |", "|---|---|---|---|---|---|---|"]
        for name, r in reg["metrics"].items():
            out.append("| `%s` | %s | %s | %s | %s | %s | %s |" % (
                name, _cell(r["baseline"]), _cell(r["current"]), _cell(r["delta"]), r.get("worse", ""),
                r.get("better", ""), _cell(r.get("p_value"))))
    if report["warnings"]:
        out += ["", "## Warnings", ""] + ["- %s" % md_text(w) for w in report["warnings"]]
    return "\n".join(out) + "\n"


def _markdown_mark(g: dict) -> str:
    if g.get("tier") == "monitor":
        return "📊"
    return "✅" if g["pass"] else ("⚠️" if g.get("tier") == "warn" else "❌")


def _markdown_tier(g: dict) -> str:
    return "" if g.get("tier", "block") == "block" else " (%s)" % g["tier"]


_MD_SPECIAL = {"|": "\\|", "`": "\\`", "<": "&lt;", ">": "&gt;", "&": "&amp;", "\r": " ", "\n": " ",
               "\\": "\\\\", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]", "#": "\\#"}
_MD_RX = re.compile("[|`<>&\r\n\\\\*_\\[\\]#]")


def md_text(value) -> str:
    """Text from the input made inert in Markdown: table pipes, code ticks, raw HTML
    (``<`` ``>`` ``&``), emphasis, links and headings escaped; a newline becomes a space."""
    return _MD_RX.sub(lambda m: _MD_SPECIAL[m.group()], _CONTROL.sub("?", str(value)))


def _cell(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, float):
        return "%.4f" % v
    return str(v)

# --------------------------------------------------------------------------- shards: --partial and merge
#
# A shard run (``--partial OUT.json``) judges its slice of the trace rows and writes, instead
# of a report, the verdicts it made: for every gold item it saw, the item's slots of every
# per-item container of the Scorer (arrays, per-cutoff arrays, sparse maps), found
# generically so a metric added to the Scorer merges with no code here; the order in which
# its rows named items (to count duplicates across shards exactly); its row counts and
# notes.  ``merge P1 ... Pn`` reads the gold set again (its sha256 must match), takes each
# item's verdict from the last shard that saw it (last row wins, as in one run when the
# shards are consecutive pieces of the trace), judges the items no shard saw as missing,
# and then aggregates, gates, compares and prints through the very code of a single run:
# the output is byte-identical to one run over all the rows.  TREC runs shard by topic.

PARTIAL_FORMAT = "score_eval-partial"


def has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """Control characters (ESC and the rest of C0/C1, DEL; not tab or newline) shown as
    ``\\xNN`` so input text cannot move the cursor or recolor a terminal; lone surrogates too."""
    text = _CONTROL.sub(lambda m: "\\x%02x" % ord(m.group()), text)
    return text.encode("utf-8", "backslashreplace").decode("utf-8") if has_surrogate(text) else text
