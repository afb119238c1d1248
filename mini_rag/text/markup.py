"""The blocks of a documentation page: Markdown (CommonMark fences and tables, MyST
directives), reStructuredText and plain text, read into the paragraphs that become chunks.

``blocks(lines, syntax)`` returns ``Block(start, kind, lines, level)`` in document order,
``start`` the 0-based index of the block's first line in ``lines``:

=========  =================================================================================
kind       what it is
=========  =================================================================================
text       a paragraph: its non-blank lines, each stripped (runs of blank lines separate
           paragraphs, as before this module existed)
heading    a heading standing alone (reST's underlined or overlined title; Markdown's ATX
           heading is recognised later, by the chunker, as before); ``level`` 1 is the top
code       a fenced block (```` ``` ```` or ``~~~``, any length, closed by a fence of the same
           character at least as long), a reST literal block (after a paragraph ending in
           ``::``) or a reST ``code-block`` / ``code`` / ``sourcecode`` directive: its lines
           as written (dedented, trailing white space removed), blank lines inside kept
table      a Markdown pipe table (GFM: a paragraph whose second line is the ``|---|``
           delimiter row, :func:`is_table`), its lines as written; :func:`read_table`
           reads them as rows with their header, the chunk's text (corpus.py)
=========  =================================================================================

Rules by syntax:

* ``md``: a fence line ends the paragraph before it.  A MyST directive fence whose name is
  one of :data:`PROSE_DIRECTIVES` (``{note}``, ``{warning}``, ``{versionadded}``, ``{tab}``,
  ...) is prose: its fence lines and leading ``:option:`` lines are dropped and its content
  is read as Markdown (a tab's or admonition's label, :data:`LABELLED`, is added to the
  ``context`` of the blocks inside); any other fenced block is code.  A MyST target line ``(label)=``
  standing alone is dropped.  Roles ``{ref}`text <target>``` read as ``text``.
* ``rst``: a heading is a line of text with an underline (and optionally an overline) of
  one repeated punctuation character, at least as long as the text; levels are numbered in
  the order the adornment styles first appear (docutils' rule).  ``.. name:: args`` with
  its indented body: a prose directive's body (``note``, ``warning``, ``tab``, ...) is read
  as reST; a code directive's is code; any other directive, comment or target
  (``.. _label:``, ``.. toctree::``, ``.. image::``) is dropped.  A paragraph ending in
  ``::`` keeps one ``:`` (none when ``::`` stands alone) and the indented lines after it
  are a literal block.  Inline markup is unwrapped: ````code```` reads ```code```,
  ``:role:`text <target>``` and ```text <url>`_`` read ``text``; ``:role:`~a.b.c``` reads ``c``
  and ``:role:`!x``` reads ``x``, as Sphinx shows them (:func:`role_text`).
  An object description (:data:`OBJECT_DIRECTIVES` or any ``domain:name`` directive,
  ``.. option:: --proxy``) is prose labelled by its signature.  Tables: a grid table
  (``+---+`` borders, ``+===+`` under the header), a simple table (``=== ===`` borders, the
  header above the second), ``list-table`` (``:header-rows:``), ``csv-table`` (``:header:``
  and inline rows) and ``table`` (a title over one of the others) are ``table`` blocks
  written as pipe tables, so they read as Markdown's do; a headerless table's rows read
  as their cells.
* ``md``: a MyST ``{eval-rst}`` fence is read as reST.
* ``txt``: paragraphs only (the chunker's heading rules apply).

:func:`plain_text` is the other direction, for what is shipped: a sentence unit of a chunk
(its text keeps the markup as written, for search and citation checks) read as plain text
for a person (issue 42).  Per line: one leading heading mark (``#`` to ``######`` and a
closing ``#`` run), block quote marks (``>``), list markers (``-``, ``*``, ``+``, ``\u2022``,
``1.``, ``1)``) and a task box (``[ ]``, ``[x]``) are removed, and so is a list marker
after a sentence end inside the line (list items an answer joined into one line:
``... system. 2. Corrective ...``, ``must not: - send ...``); inline: a code span keeps its
text (```pip list``` reads ``pip list``, nothing inside it is markup), a link or image reads
as its text (``[the portal](https://x)`` and ``[the portal][ref]`` read ``the portal``), an
autolink as its address (``<https://x>``), emphasis and strong emphasis (``*x*``, ``_x_``,
``**x**``, ``__x__``) as their text, and a backslash escape as the character.  Emphasis
follows CommonMark's flanking rules with one simplification: a delimiter inside a word
(``snake_case``, ``2*3*4``) is never emphasis, for ``*`` as for ``_``; a delimiter without its
partner stays as written (``**kwargs``).  ``[1]`` and other brackets not followed by ``(``
or ``[`` stay (a citation marker is not markup), as do ``<value>`` placeholders.

Nothing here is a regular expression with nested quantifiers; every loop advances.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Dict, List, NamedTuple, Tuple

__all__ = ["Block", "blocks", "PROSE_DIRECTIVES", "CODE_DIRECTIVES", "is_table", "read_table", "plain_text", "role_text"]


class Block(NamedTuple):
    start: int
    kind: str            # "text" | "heading" | "code" | "table"
    lines: List[str]
    level: int = 0
    context: Tuple[str, ...] = ()   # labels of the directives it sits in (a tab's name), outermost first


#: Directives whose body is prose (MyST and reST admonitions, version notes, tabs).
PROSE_DIRECTIVES = frozenset(
    "note warning tip caution important seealso admonition attention danger error hint "
    "versionadded versionchanged deprecated tab tab-item tab-set dropdown topic sidebar "
    "margin rubric only container div card grid-item-card".split())
#: Prose directives whose argument is a label of their content (a tab's name, an
#: admonition's or dropdown's title): the blocks inside carry it in ``context``, so their
#: section path ends with it (it makes no chunk of its own).
LABELLED = frozenset("tab tab-item dropdown admonition topic sidebar".split())
#: Directives whose body is code.
CODE_DIRECTIVES = frozenset("code-block code sourcecode code-cell highlight-block".split())
#: Sphinx object descriptions (``.. option:: --proxy <url>``, ``.. envvar:: PIP_CONFIG_FILE``,
#: ``.. py:function:: f(x)``, any ``domain:name``): the body is prose about the signature,
#: which labels it as a tab's name does.
OBJECT_DIRECTIVES = frozenset("option cmdoption envvar confval describe object setting function class method "
                              "attribute data exception decorator module".split())
#: reST directives whose body is a table (read like a Markdown pipe table).
TABLE_DIRECTIVES = frozenset(("list-table", "csv-table", "table"))

_FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*([^`]*)$")
_MYST_DIRECTIVE = re.compile(r"^\{([A-Za-z][\w-]{0,40})\}[ \t]*(.*)$")
_MYST_TARGET = re.compile(r"^\([^()\s][^()]{0,200}\)=$")
_MYST_ROLE = re.compile(r"\{[A-Za-z][\w:-]{0,40}\}`([^`<]{0,400}?)[ \t]*(?:<[^`>]{0,400}>)?`")
_OPTION = re.compile(r"^:[A-Za-z][\w-]{0,40}:(?:[ \t].*)?$")
_RULE_CELL = re.compile(r"^:?-{1,400}:?$")
_ADORN = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}$")
_RST_DIRECTIVE = re.compile(r"^\.\.[ \t]+([A-Za-z][\w:-]{0,40})::(?:[ \t]+(.*))?$")
_RST_ROLE = re.compile(r":[A-Za-z][\w:+-]{0,40}:`([^`<]{0,400}?)[ \t]*(?:<[^`>]{0,400}>)?`")
_RST_LINK = re.compile(r"`([^`<]{1,400}?)[ \t]*(?:<[^`>]{0,400}>)?`__?")
_RST_LITERAL = re.compile(r"``([^`]{1,400}?)``")


def blocks(lines: List[str], syntax: str) -> List[Block]:
    """The page's blocks (module docstring); ``syntax`` is ``md``, ``rst`` or ``txt``."""
    if syntax == "rst":
        return _rst(lines, 0, {})
    if syntax == "md":
        return _md(lines, 0)
    return _paragraphs(lines, 0)


def _paragraphs(lines: List[str], offset: int) -> List[Block]:
    out: List[Block] = []
    para: List[str] = []
    start = 0
    for i, raw in enumerate(lines):
        s = raw.strip()
        if s:
            if not para:
                start = i
            para.append(s)
        elif para:
            out.append(Block(offset + start, "text", para))
            para = []
    if para:
        out.append(Block(offset + start, "text", para))
    return out


# ------------------------------------------------------------------ Markdown

def is_table(lines: List[str]) -> bool:
    """A pipe table (GFM): the second line is the delimiter row (cells of ``-`` with optional
    ``:``, as many as the header's), every line holds a ``|`` (the outer ones may be left
    out: ``a | b`` / ``--|--``), and at least one row follows."""
    if len(lines) < 3 or not all("|" in l for l in lines):
        return False
    cells = _cells(lines[1])
    return (bool(cells) and all(_RULE_CELL.match(c) for c in cells)
            and len(cells) == len(_cells(lines[0])))


def read_table(lines: List[str]) -> List[str]:
    """A pipe table (:func:`is_table`) read as rows with their header: one line per data
    row, each non-empty cell written ``Header: value`` (the cell alone under an empty
    header or past the header's last column), joined by ``"; "``; a row with no text is
    skipped.  Inline roles read as in text.  The header row and the rule are not lines of
    their own: every row carries its header, so a row read alone still says what its
    values are.

    >>> read_table(["| Vehicle | Mileage rate |", "|---|--:|", "| Bicycle | £0.12 |", "| Car | |"])
    ['Vehicle: Bicycle; Mileage rate: £0.12', 'Vehicle: Car']
    """
    header = [_myst_inline(c) for c in _cells(lines[0])]
    out = []
    for line in lines[2:]:
        parts = []
        for n, cell in enumerate(_cells(line)):
            cell = _myst_inline(cell)
            if not cell:
                continue
            head = header[n] if n < len(header) else ""
            parts.append("%s: %s" % (head, cell) if head else cell)
        if parts:
            out.append("; ".join(parts))
    return out


def _cells(line: str) -> List[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    cells, cur, i = [], "", 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line) and line[i + 1] == "|":
            cur += "|"
            i += 2
            continue
        if ch == "|":
            cells.append(cur.strip())
            cur = ""
        else:
            cur += ch
        i += 1
    cells.append(cur.strip())
    return cells


def _fence_end(lines: List[str], i: int, fence: str) -> int:
    """Index of the line closing the fence opened at ``i`` (len(lines) when unclosed)."""
    ch, n = fence[0], len(fence)
    for j in range(i + 1, len(lines)):
        s = lines[j].strip()
        if len(s) >= n and s == ch * len(s):
            return j
    return len(lines)


#: The start of a line of code: a decorator, a prompt, an import, a definition, an
#: assignment or a call at the start of a line.
_CODE_LINE = re.compile(r"^(?:@[A-Za-z_]|>>>|\$ |import |from [\w.]+ import |def |class |async def |"
                        r"if __name__|[A-Za-z_][\w.]{0,60}\s{0,3}=[^=]|[A-Za-z_][\w.]{0,60}\()")


def _reads_as_code(lines: List[str]) -> bool:
    """A directive body is code when at least half of its non-blank lines start like code
    and none ends a sentence: a Sphinx domain's example (``.. click:example::``) is code,
    an object's description (``.. py:function:: f(x)``, "Returns x.") is prose."""
    body = [l.strip() for l in lines if l.strip()]
    if not body:
        return False
    starts = sum(1 for l in body if _CODE_LINE.match(l))
    prose = any(l.endswith(".") and " " in l and not _CODE_LINE.match(l) for l in body)
    return 2 * starts >= len(body) and not prose


def _dedent(lines: List[str]) -> List[str]:
    widths = [len(l) - len(l.lstrip()) for l in lines if l.strip()]
    cut = min(widths) if widths else 0
    out = [l[cut:].rstrip() for l in lines]
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return out


def _md(lines: List[str], offset: int) -> List[Block]:
    out: List[Block] = []
    para: List[str] = []
    start = 0

    def flush():
        if para:
            kind = "table" if is_table(para) else "text"
            out.append(Block(offset + start, kind, list(para) if kind == "table" else [_myst_inline(l) for l in para]))
            del para[:]

    i = 0
    while i < len(lines):
        s = lines[i].strip()
        m = _FENCE.match(s)
        if m:
            flush()
            end = _fence_end(lines, i, m.group(1))
            inner = lines[i + 1:end]
            d = _MYST_DIRECTIVE.match(m.group(2).strip())
            if d and d.group(1).lower() == "eval-rst":
                out.extend(_rst(_dedent_keep(inner), offset + i + 1 + _lead_blank(inner), {}))
            elif d and d.group(1).lower() in PROSE_DIRECTIVES:
                k = 0
                while k < len(inner) and _OPTION.match(inner[k].strip()):
                    k += 1
                label = _myst_inline(d.group(2).strip())
                out.extend(_labelled(_md(inner[k:], offset + i + 1 + k),
                                     label if d.group(1).lower() in LABELLED else ""))
            else:
                code = _dedent(inner)
                if code:
                    out.append(Block(offset + i, "code", code))
            i = end + 1
            continue
        if not s:
            flush()
        elif not para and _MYST_TARGET.match(s):
            pass
        else:
            if not para:
                start = i
            para.append(s)
        i += 1
    flush()
    return out


def role_text(content: str) -> str:
    """What Sphinx shows of a role's content: ``~a.b.c()`` shows its last part ``c()``, ``!x``
    shows ``x`` (Sphinx's cross-reference syntax; a title with ``<target>`` is already cut off)."""
    if content.startswith("!"):
        content = content[1:]
    if content.startswith("~"):
        content = content[1:].rsplit(".", 1)[-1]
    return content


def _myst_inline(line: str) -> str:
    return _MYST_ROLE.sub(lambda m: "`%s`" % m.group(1) if m.group(0).startswith(("{code}", "{literal}"))
                          else role_text(m.group(1)), line) if "}`" in line else line


# ------------------------------------------------------------------ reStructuredText

def rst_inline(line: str) -> str:
    """reST inline markup unwrapped (module docstring)."""
    if "`" not in line:
        return line
    line = _RST_ROLE.sub(lambda m: role_text(m.group(1)), line)
    line = _RST_LITERAL.sub(lambda m: "`%s`" % m.group(1), line)
    line = _RST_LINK.sub(lambda m: m.group(1), line)
    return line


def _indented_body(lines: List[str], i: int, indent: int) -> int:
    """The end (exclusive) of the block indented deeper than ``indent`` after line ``i``."""
    j = i + 1
    last = i
    while j < len(lines):
        raw = lines[j]
        if raw.strip():
            if len(raw) - len(raw.lstrip()) <= indent:
                break
            last = j
        j += 1
    return last + 1


def _rst(lines: List[str], offset: int, styles: dict) -> List[Block]:
    out: List[Block] = []
    para: List[str] = []
    start = 0
    literal_next = False
    para_indent = 0
    literal_indent = 0

    def flush():
        nonlocal literal_next, literal_indent
        if para:
            literal_indent = para_indent
            last = para[-1]
            literal_next = last.endswith("::")
            if literal_next:
                para[-1] = last[:-2].rstrip() if last.strip() == "::" or last[-3:-2].isspace() else last[:-1]
                if not para[-1]:
                    para.pop()
            text = [rst_inline(l) for l in para]
            if text:
                out.append(Block(offset + start, "text", text))
            del para[:]

    def level(style: Tuple[str, bool]) -> int:
        if style not in styles:
            styles[style] = len(styles) + 1
        return styles[style]

    i = 0
    n = len(lines)
    while i < n:
        raw = lines[i]
        s = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        if not s:
            flush()
            i += 1
            continue
        if not para and literal_next and indent > literal_indent:
            end = _indented_body(lines, i - 1, literal_indent)
            code = _dedent(lines[i:end])
            if code:
                out.append(Block(offset + i, "code", code))
            literal_next = False
            i = end
            continue
        literal_next = False
        if not para and (_GRID_BORDER.match(s) or _SIMPLE_BORDER.match(s)):
            end, table = (_grid_table if s[0] == "+" else _simple_table)(lines, i)
            if table:
                out.append(Block(offset + i, "table", table))
                i = end
                continue
        if not para and _ADORN.match(s) and i + 2 < n and lines[i + 1].strip() \
                and lines[i + 2].strip() == s:
            out.append(Block(offset + i + 1, "heading", [rst_inline(lines[i + 1].strip())], level((s[0], True))))
            i += 3
            continue
        if not para and i + 1 < n and not _ADORN.match(s) and indent == 0:
            under = lines[i + 1].strip()
            if _ADORN.match(under) and len(under) >= len(s):
                out.append(Block(offset + i, "heading", [rst_inline(s)], level((under[0], False))))
                i += 2
                continue
        if not para and s.startswith(".."):
            end = _indented_body(lines, i, indent)
            d = _RST_DIRECTIVE.match(s)
            body = lines[i + 1:end]
            k = 0
            while k < len(body) and _OPTION.match(body[k].strip()):
                k += 1
            name = d.group(1).lower() if d else ""
            if ":" in name and name not in OBJECT_DIRECTIVES and _reads_as_code(body[k:]):
                code = _dedent(body[k:])            # a domain's example directive ("click:example")
                if code:
                    out.append(Block(offset + i, "code", code))
            elif name in PROSE_DIRECTIVES or name in OBJECT_DIRECTIVES or (":" in name and name not in CODE_DIRECTIVES):
                label = rst_inline((d.group(2) or "").strip())
                inner = _dedent_keep(body[k:])
                labelled = name in LABELLED or name in OBJECT_DIRECTIVES or ":" in name
                out.extend(_labelled(_rst(inner, offset + i + 1 + k + _lead_blank(body[k:]), styles),
                                     label if labelled else ""))
            elif name in TABLE_DIRECTIVES:
                table = _directive_table(name, body[:k], body[k:], styles)
                if table:
                    out.append(Block(offset + i, "table", table))
            elif d and d.group(1).lower() in CODE_DIRECTIVES:
                code = _dedent(body[k:])
                if code:
                    out.append(Block(offset + i, "code", code))
            i = end
            continue
        if not para:
            start = i
            para_indent = indent
        para.append(s)
        i += 1
    flush()
    return out


_GRID_BORDER = re.compile(r"^\+(?:[-=]{1,400}\+){1,100}$")
_SIMPLE_BORDER = re.compile(r"^={2,400}(?: {1,40}={2,400}){1,100}$")


def _pipe_table(header: List[str], rows: List[List[str]]) -> List[str]:
    """A table written as Markdown pipe lines (``read_table`` reads them); cells unwrapped
    of reST inline markup, ``|`` escaped; [] when no row has text."""
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        return []
    width = max([len(header)] + [len(r) for r in rows])

    def line(cells: List[str]) -> str:
        cells = [rst_inline(" ".join(c.split())).replace("|", "\\|") for c in cells]
        cells += [""] * (width - len(cells))
        return "| " + " | ".join(cells) + " |"
    return [line(header), "|" + "---|" * width] + [line(r) for r in rows]


def _grid_table(lines: List[str], i: int) -> Tuple[int, List[str]]:
    """A grid table starting at border line ``i``: (the index after it, its pipe lines)."""
    border = lines[i].strip()
    indent = len(lines[i]) - len(lines[i].lstrip())
    cuts = [k for k, ch in enumerate(border) if ch == "+"]
    rows: List[List[str]] = []
    header: List[str] = []
    cur: List[List[str]] = []
    j = i + 1
    while j < len(lines) and lines[j][indent:indent + 1] in ("+", "|") and lines[j].strip():
        j += 1
    table = [l[indent:].rstrip() for l in lines[i:j]]
    # a table with spanning cells (borders that differ, a border inside a row): cells are
    # cut where a row's own | are, and a partial border ends a row
    spans = any("+-" in l or "-+" in l or "+=" in l for l in table if l[0] == "|") or \
        len({tuple(k for k, ch in enumerate(l) if ch == "+") for l in table if l[0] == "+"}) > 1
    for raw in table[1:]:
        if spans and raw[0] == "|":
            if "+-" in raw or "-+" in raw:
                raw = "+" + raw[1:]
            else:
                cuts = [k for k, ch in enumerate(raw) if ch == "|"]
        if raw[0] == "+":
            if cur:
                rows.append([" ".join(part).strip() for part in cur])
                cur = []
            if "=" in raw and not header and rows:      # the header is every row above +===+
                header = [" ".join(c for c in col if c) for col in zip(*rows)]
                rows = []
        else:
            cells = [raw[a + 1:b].strip(" |") for a, b in zip(cuts, cuts[1:])]
            if not cur:
                cur = [[] for _ in cells]
            cur.extend([] for _ in range(len(cells) - len(cur)))
            for n, cell in enumerate(cells):
                if cell:
                    cur[n].append(cell)
    if cur:
        rows.append([" ".join(part).strip() for part in cur])
    return j, _pipe_table(header, rows)


def _simple_table(lines: List[str], i: int) -> Tuple[int, List[str]]:
    """A simple table starting at border line ``i``: (the index after it, its pipe lines)."""
    border = lines[i].rstrip()
    indent = len(border) - len(border.lstrip())
    starts = [k for k in range(indent, len(border)) if border[k] == "=" and (k == indent or border[k - 1] == " ")]
    borders = [i]
    j = i + 1
    while j < len(lines):
        s = lines[j].strip()
        if _SIMPLE_BORDER.match(s):
            borders.append(j)
            if j + 1 >= len(lines) or not lines[j + 1].strip():
                j += 1
                break
        j += 1
    if len(borders) < 2:
        return i + 1, []

    def cells(raw: str) -> List[str]:
        return [raw[a:b].strip() for a, b in zip(starts, starts[1:] + [len(raw) + 1])]

    def rows_of(a: int, b: int) -> List[List[str]]:
        out: List[List[str]] = []
        for raw in lines[a:b]:
            if not raw.strip() or set(raw.strip()) <= set("- "):
                continue
            row = cells(raw.rstrip())
            if out and not row[0]:
                out[-1] = [(x + " " + y).strip() for x, y in zip(out[-1], row)]
            else:
                out.append(row)
        return out
    if len(borders) >= 3:
        head = rows_of(borders[0] + 1, borders[1])
        header = [" ".join(col).strip() for col in zip(*head)] if head else []
        body = rows_of(borders[1] + 1, borders[-1])
    else:
        header, body = [], rows_of(borders[0] + 1, borders[1])
    return j, _pipe_table(header, body)


def _directive_table(name: str, options: List[str], body: List[str], styles: dict) -> List[str]:
    """The pipe lines of a ``list-table``, ``csv-table`` or ``table`` directive."""
    opts = {}
    for line in options:
        key, _, value = line.strip()[1:].partition(":")
        opts[key.lower()] = value.strip()
    body = _dedent_keep(body)
    if name == "table":
        for b in _rst(body, 0, styles):
            if b.kind == "table":
                return b.lines
        return []
    try:
        header_rows = max(0, min(int(opts.get("header-rows", "0") or 0), 100))
    except ValueError:
        header_rows = 0
    rows: List[List[str]] = []
    if name == "csv-table":
        import csv
        header = next(csv.reader([opts["header"]], skipinitialspace=True)) if opts.get("header") else []
        rows = [r for r in csv.reader([l.strip() for l in body if l.strip()], skipinitialspace=True)]
    else:
        for raw in body:
            s = raw.strip()
            if not s:
                continue
            lead = len(raw) - len(raw.lstrip())
            if lead == 0 and s[0] in "*-":
                rows.append([])
                s = s[1:].strip()
                if not s:
                    continue
                lead = 2
            if not rows:
                continue
            if s[0] == "-" and (len(s) == 1 or s[1] == " ") and lead <= 2:
                rows[-1].append(s[1:].strip())
            elif rows[-1]:
                rows[-1][-1] = (rows[-1][-1] + " " + s).strip()
        header = []
    if header_rows and rows:
        header = [" ".join(col).strip() for col in zip(*rows[:header_rows])]
        rows = rows[header_rows:]
    return _pipe_table(header, rows)


def _labelled(inner: List[Block], label: str) -> List[Block]:
    return [b._replace(context=(label,) + b.context) for b in inner] if label else inner


def _lead_blank(lines: List[str]) -> int:
    k = 0
    while k < len(lines) and not lines[k].strip():
        k += 1
    return k


def _dedent_keep(lines: List[str]) -> List[str]:
    """``lines`` dedented, leading blank lines dropped (their count is ``_lead_blank``)."""
    lines = lines[_lead_blank(lines):]
    widths = [len(l) - len(l.lstrip()) for l in lines if l.strip()]
    cut = min(widths) if widths else 0
    return [l[cut:] for l in lines]


# ------------------------------------------------------------------ plain text of a shipped sentence

#: One block mark at the start of a line: a heading mark, a block quote mark, a list marker,
#: a task box (each followed by white space, or a heading mark by the line's end).
_LINE_MARK = re.compile(r"[ \t]{0,3}(?:#{1,6}(?=[ \t]|$)|>|[-*+\u2022](?=[ \t])|\d{1,9}[.)](?=[ \t])|"
                        r"\[[ xX]\](?=[ \t]))[ \t]*")
#: A list marker after a sentence end inside a line: list items joined into one line (an
#: answer joins a chunk's sentence units with a space: "...system. 2. Corrective ...").
_INNER_MARK = re.compile(r"(?<=[.!?;:])[ \t]+(?:[-*+\u2022]|\d{1,9}[.)])(?=[ \t])")
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\x00-\x20]{1,2000})>")
_ESCAPABLE = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_INLINE = frozenset("`*_[!<\\")
_NEST_MAX = 2                # links inside link text (an image in a link) read this deep


def plain_text(text: str) -> str:
    """``text`` (a sentence unit, one or more lines) without its Markdown markup (module
    docstring); a line that would be left empty (a heading mark alone) keeps its text.

    >>> plain_text("1. Run `pip-cli login` with your **staff** account.")
    'Run pip-cli login with your staff account.'
    >>> plain_text("* The console lives at [the portal](https://intra.example/x) for _team_ A.")
    'The console lives at the portal for team A.'
    >>> plain_text("Use next_cursor, 2*3*4 and **kwargs [1].")
    'Use next_cursor, 2*3*4 and **kwargs [1].'
    """
    out = []
    for line in text.split("\n"):
        body = _line_marks(line)
        if "." in body or ":" in body or ";" in body or "!" in body or "?" in body:
            body = _INNER_MARK.sub("", body)
        plain = _inline(body, 0).strip()
        out.append(plain if plain else line.strip())
    return "\n".join(out)


def _line_marks(line: str) -> str:
    """The line without its leading block marks (at most four: ``> 1. [x] text``)."""
    heading = False
    for _ in range(4):
        m = _LINE_MARK.match(line)
        if not m or not m.group(0).strip():
            break
        heading = heading or m.group(0).lstrip().startswith("#")
        line = line[m.end():]
    if heading:                                 # a closing sequence: "Title ##"
        body = line.rstrip()
        bare = body.rstrip("#")
        if bare != body and (not bare or bare[-1] in " \t"):
            line = bare.rstrip()
    return line


class _Delim:
    """A run of ``*`` or ``_``: how many of its characters are still unmatched."""
    __slots__ = ("ch", "left", "can_open", "can_close")

    def __init__(self, ch: str, count: int, can_open: bool, can_close: bool) -> None:
        self.ch, self.left, self.can_open, self.can_close = ch, count, can_open, can_close


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS"


def _delim(text: str, i: int, j: int) -> _Delim:
    """The delimiter run ``text[i:j]`` with CommonMark's flanking rules (the ``_`` ones for both
    characters: never inside a word)."""
    before = text[i - 1] if i > 0 else " "
    after = text[j] if j < len(text) else " "
    left = not after.isspace() and (not _is_punct(after) or before.isspace() or _is_punct(before))
    right = not before.isspace() and (not _is_punct(before) or after.isspace() or _is_punct(after))
    return _Delim(text[i], j - i, left and (not right or _is_punct(before)),
                  right and (not left or _is_punct(after)))


def _code_end(text: str, j: int, run: int, no_close: Dict[int, int]) -> int:
    """Where the code span opened by ``run`` backticks before ``j`` closes (the start of a run
    of exactly ``run`` backticks), or -1.  ``no_close`` remembers failed searches, so a line
    of unmatched backticks is read in linear time."""
    if no_close.get(run, len(text) + 1) <= j:
        return -1
    k = j
    while True:
        k = text.find("`" * run, k)
        if k < 0:
            no_close[run] = j
            return -1
        e = k
        while e < len(text) and text[e] == "`":
            e += 1
        if e - k == run:
            return k
        k = e


def _pairs(text: str) -> Dict[int, int]:
    """``{index of an opening bracket or parenthesis: index of its match}`` for ``[]`` and
    ``()``, nesting counted, backslash escapes skipped: one pass, linear time."""
    out: Dict[int, int] = {}
    stacks: Dict[str, List[int]] = {"]": [], ")": []}
    k, n = 0, len(text)
    while k < n:
        ch = text[k]
        if ch == "\\":
            k += 2
            continue
        if ch in "[(":
            stacks["]" if ch == "[" else ")"].append(k)
        elif ch in "])" and stacks[ch]:
            out[stacks[ch].pop()] = k
        k += 1
    return out


def _link(text: str, i: int, pairs: Dict[int, int], depth: int):
    """``(plain text, end)`` of the link or image starting at ``text[i]`` (``[`` or ``![``);
    None when it is not one (``[1]`` alone is text)."""
    start = i + 1 if text[i] == "!" else i
    close = pairs.get(start, -1) if start < len(text) and text[start] == "[" else -1
    if close < 0 or close + 1 >= len(text) or text[close + 1] not in "([":
        return None
    end = pairs.get(close + 1, -1)
    if end < 0:
        return None
    label = text[start + 1:close]
    return (_inline(label, depth + 1) if depth < _NEST_MAX else label), end + 1


def _inline(text: str, depth: int) -> str:
    """Inline markup removed (module docstring): one pass for code spans, links, autolinks,
    escapes and delimiter runs, then the runs matched, nearest opener first."""
    if not _INLINE.intersection(text):
        return text
    pieces: List[object] = []
    buf: List[str] = []
    no_close: Dict[int, int] = {}
    pairs = _pairs(text) if "[" in text else {}
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n and text[i + 1] in _ESCAPABLE:
            buf.append(text[i + 1])
            i += 2
        elif ch == "`":
            j = i
            while j < n and text[j] == "`":
                j += 1
            end = _code_end(text, j, j - i, no_close)
            if end < 0:
                buf.append(text[i:j])
                i = j
            else:
                body = text[j:end]
                if len(body) > 2 and body[0] == " " and body[-1] == " " and body.strip():
                    body = body[1:-1]
                buf.append(body)
                i = end + (j - i)
        elif ch in "[!<":
            link = _link(text, i, pairs, depth) if ch != "<" else None
            auto = _AUTOLINK.match(text, i) if ch == "<" else None
            if link is not None:
                buf.append(link[0])
                i = link[1]
            elif auto is not None:
                buf.append(auto.group(1))
                i = auto.end()
            else:
                buf.append(ch)
                i += 1
        elif ch in "*_":
            j = i
            while j < n and text[j] == ch:
                j += 1
            pieces.append("".join(buf))
            buf = []
            pieces.append(_delim(text, i, j))
            i = j
        else:
            buf.append(ch)
            i += 1
    pieces.append("".join(buf))
    _match_delims(pieces)
    return "".join(p if isinstance(p, str) else p.ch * p.left for p in pieces)


def _match_delims(pieces: List[object]) -> None:
    """Pair each closing run with the nearest open run of its character (two characters
    when both have two, else one), leaving unmatched characters as text."""
    stacks: Dict[str, List[_Delim]] = {"*": [], "_": []}
    for tok in pieces:
        if isinstance(tok, str):
            continue
        stack = stacks[tok.ch]
        if tok.can_close:
            while tok.left and stack:
                opener = stack[-1]
                use = 2 if opener.left >= 2 and tok.left >= 2 else 1
                opener.left -= use
                tok.left -= use
                if not opener.left:
                    stack.pop()
        if tok.can_open and tok.left:
            stack.append(tok)
