"""Numeric conflicts stated only in tables, through ``mini_rag ask`` on a tiny corpus of
one's own (a temporary folder; its index in the same folder).

The corpus reader gives a table chunk's text as one line per row, ``Plan: Pro; Requests per
minute: 300`` (text/markup.read_table; Markdown pipe tables and reST simple and grid tables
alike); the conflict guard reads those rows as it reads a pipe table (guard/conflicts.py
``evidence_units``: ``| Pro plan | 300 requests per minute |``).  Two documents, each with
only a "Limits by plan" table (Free 60, Pro as given, Enterprise 1,000), asked "What is the
API rate limit for the Pro plan?":

* Pro 300 in one and 500 in the other: ABSTAIN, one numeric pair naming both table chunks
  (``#p2``: title heading p0, section heading p1, the table p2), "300 request/minut vs 500
  request/minut" (units compare by stem);
* Pro 300 in both: no conflict, whatever the Free rows say (the question names the Pro plan:
  rule 2e of conflicts.py).

Before the guard read the rows (commit 0dc9c50 to this test), every case answered
"Plan: Pro; Requests per minute: 300" with no conflict.
"""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from mini_rag.commands import cli  # noqa: E402

QUESTION = "What is the API rate limit for the Pro plan?"
DOCS = (("gateway-limits", "Gateway API Rate Limits", "2025-01-10"),
        ("partner-handbook", "Partner Handbook: API Rate Limits", "2025-03-01"))


def _front(doc_id, title, date):
    return "---\ndoc_id: %s\ntitle: %s\neffective: %s\n---\n\n" % (doc_id, title, date)


def markdown(doc, free, pro):
    return _front(*doc) + ("# %s\n\n## Limits by plan\n\n| Plan | Requests per minute |\n|---|---|\n"
                           "| Free | %d |\n| Pro | %d |\n| Enterprise | 1,000 |\n" % (doc[1], free, pro))


def rst_simple(doc, free, pro):
    title = doc[1]
    return _front(*doc) + ("%s\n%s\n\nLimits by plan\n--------------\n\n"
                           "==========  ===================\n"
                           "Plan        Requests per minute\n"
                           "==========  ===================\n"
                           "Free        %d\n"
                           "Pro         %d\n"
                           "Enterprise  1,000\n"
                           "==========  ===================\n" % (title, "=" * len(title), free, pro))


def rst_grid(doc, free, pro):
    title = doc[1]
    rule = "+------------+---------------------+\n"
    return _front(*doc) + ("%s\n%s\n\nLimits by plan\n--------------\n\n" % (title, "=" * len(title))
                           + rule + "| Plan       | Requests per minute |\n"
                           + "+============+=====================+\n"
                           + "| Free       | %-3d                 |\n" % free + rule
                           + "| Pro        | %-3d                 |\n" % pro + rule
                           + "| Enterprise | 1,000               |\n" + rule)


FORMATS = {"md": (markdown, ".md"), "rst-simple": (rst_simple, ".rst"), "rst-grid": (rst_grid, ".rst")}
PAIR = {"kind": "numeric", "axis": "request/minut", "a": "gateway-limits#p2", "b": "partner-handbook#p2",
        "reason": "300 request/minut vs 500 request/minut",
        "evidence": {"a": "| Pro plan | 300 requests per minute |", "b": "| Pro plan | 500 requests per minute |"}}
REASON = "conflict:numeric:gateway-limits#p2:partner-handbook#p2"


class TableOnlyConflicts(unittest.TestCase):
    def ask(self, formats, free, pro):
        """The trace row of ``ask --json`` on two documents written in ``formats``, whose
        tables give the Free and Pro plans ``free`` and ``pro`` requests per minute."""
        tmp = tempfile.mkdtemp(prefix="table_conflicts_")
        self.addCleanup(shutil.rmtree, tmp, True)
        corpus = os.path.join(tmp, "docs")
        os.makedirs(corpus)
        for doc, fmt, f, p in zip(DOCS, formats, free, pro):
            write, suffix = FORMATS[fmt]
            with open(os.path.join(corpus, doc[0] + suffix), "w", encoding="utf-8") as fh:
                fh.write(write(doc, f, p))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main(["ask", "--corpus", corpus, "--index", os.path.join(tmp, "index.json.gz"),
                           "--json", "--quiet", QUESTION])
        self.assertEqual(rc, 0, err.getvalue())
        return json.loads(out.getvalue())

    def test_table(self):
        cases = [
            # (formats of the two documents, Free values, Pro values, conflicts expected)
            (("md", "md"), (60, 60), (300, 500), [PAIR]),
            (("rst-simple", "rst-simple"), (60, 60), (300, 500), [PAIR]),
            (("rst-grid", "rst-grid"), (60, 60), (300, 500), [PAIR]),
            (("md", "rst-grid"), (60, 60), (300, 500), [PAIR]),
            (("rst-simple", "md"), (60, 60), (300, 500), [PAIR]),
            # the tables agree on the Pro plan: no conflict
            (("md", "md"), (60, 60), (300, 300), []),
            (("rst-simple", "rst-grid"), (60, 60), (300, 300), []),
            # ... and disagree only on the Free plan, which the question does not ask about
            (("md", "rst-simple"), (60, 100), (300, 300), []),
        ]
        for formats, free, pro, want in cases:
            with self.subTest(formats=formats, free=free, pro=pro):
                row = self.ask(formats, free, pro)
                self.assertEqual(row["conflicts"], want)
                conflict_reasons = [r for r in row["reasons"] if r.startswith("conflict:")]
                if want:
                    self.assertEqual((row["decision"], conflict_reasons), ("ABSTAIN", [REASON]))
                    self.assertEqual(row["answer_json"]["citations"], [])
                else:
                    self.assertEqual(conflict_reasons, [])
                    self.assertNotEqual(row["decision"], "ABSTAIN", row["reasons"])


if __name__ == "__main__":
    unittest.main()
