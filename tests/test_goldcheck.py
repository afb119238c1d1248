"""Tests for mini_rag.eval.goldcheck and the check-gold command: every problem class and its text.

The fixture corpus (tests/fixtures/gold/corpus) has these chunks, by the chunking rule:
refund-policy#p1 "Customers may request a refund within 30 days of purchase.",
retention-schedule#p1 "Audit logs are retained for 400 days under SEC-04." (a .txt file
whose second page, after a form feed, holds #p3 and #p4), ich-q13-summary#p1 ...
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mini_rag.commands import cli  # noqa: E402
from mini_rag.eval import goldcheck as G  # noqa: E402
from mini_rag.text.corpus import load_chunks  # noqa: E402

FIX = ROOT / "tests" / "fixtures" / "gold"
CORPUS = str(FIX / "corpus")
CHUNKS = {c.chunk_id: c.text for c in load_chunks(CORPUS)}

GOOD = {"qid": "T-1", "question": "How long is the refund window?", "answerable": True,
        "gold_claim_substr": ["within 30 days"], "gold_citations": ["refund-policy#p1"],
        "category": "answerable_direct", "expected_decision": "ANSWER", "notes": ""}
UNANS = {"qid": "T-2", "question": "What is the capital of France?", "answerable": False,
         "gold_claim_substr": [], "gold_citations": [], "category": "out_of_scope",
         "expected_decision": "ABSTAIN"}


def row(base, **changes):
    r = dict(base)
    for k, v in changes.items():
        if v is KeyError:
            del r[k]
        else:
            r[k] = v
    return r


GOOD_KEYS = sorted(GOOD)
# (why, row, expected messages without the "path:line: " prefix)
ROW_TABLE = [
    ("clean answerable", GOOD, []),
    ("clean unanswerable", UNANS, []),
    ("substring matched case-insensitively", row(GOOD, gold_claim_substr=["WITHIN 30 Days"]), []),
    ("substring in the second of two cited chunks",
     row(GOOD, gold_citations=["refund-policy#p2", "refund-policy#p1"]), []),
    ("chunk on page 2 of a .txt file", row(GOOD, gold_claim_substr=["suspends deletion"],
                                           gold_citations=["retention-schedule#p4"]), []),
    ("category outside the documented table is accepted", row(GOOD, category="my_custom"), []),
    ("no category, no decision", row(GOOD, category=KeyError, expected_decision=KeyError), []),
    ("missing qid", row(GOOD, qid=KeyError),
     ["missing key 'qid', got keys %r" % [k for k in GOOD_KEYS if k != "qid"]]),
    ("qid not a string", row(GOOD, qid=12), ["qid must be a non-empty string, got 12"]),
    ("empty question", row(GOOD, question=" "), ["question must be a non-empty string, got ' '"]),
    ("answerable not boolean", row(GOOD, answerable="yes", category=KeyError),
     ["answerable must be true or false, got 'yes'"]),
    ("substrings not a list", row(GOOD, gold_claim_substr="within 30 days"),
     ["gold_claim_substr must be a list of strings, got 'within 30 days'"]),
    ("citations not strings", row(GOOD, gold_citations=[1]),
     ["gold_citations must be a list of strings, got [1]"]),
    ("answerable without citations", row(GOOD, gold_citations=[]),
     ["an answerable item needs at least one gold_citations entry, got []"]),
    ("answerable without substrings", row(GOOD, gold_claim_substr=[]),
     ["an answerable item needs at least one gold_claim_substr, got []"]),
    ("short substring", row(GOOD, gold_claim_substr=["within 30 days", "30 d"]),
     ["gold_claim_substr must have at least 5 characters, got '30 d'"]),
    ("padded short substring", row(GOOD, gold_claim_substr=["  30  "]),
     ["gold_claim_substr must have at least 5 characters, got '  30  '"]),
    ("unanswerable with gold", row(UNANS, gold_claim_substr=["within 30 days"],
                                   gold_citations=["refund-policy#p1"]),
     ["an unanswerable item must have no gold_citations, got ['refund-policy#p1']",
      "an unanswerable item must have no gold_claim_substr, got ['within 30 days']"]),
    ("unknown chunk, close to a real one", row(GOOD, gold_citations=["refund-policy#p9"]),
     ["cited chunk is not in the corpus (refund-policy has refund-policy#p0 to refund-policy#p3), "
      "got 'refund-policy#p9'"]),
    ("unknown document, close to a real one", row(GOOD, gold_citations=["refund-polcy#p1"]),
     ["cited chunk is not in the corpus (no document 'refund-polcy'; did you mean 'refund-policy'?), "
      "got 'refund-polcy#p1'"]),
    ("unknown chunk, nothing close", row(GOOD, gold_citations=["zzz"]),
     ["cited chunk is not in the corpus, got 'zzz'"]),
    ("chunk cited twice", row(GOOD, gold_citations=["refund-policy#p1", "refund-policy#p1"]),
     ["chunk cited twice in gold_citations, got 'refund-policy#p1'"]),
    ("substring in no cited chunk", row(GOOD, gold_claim_substr=["400 days"]),
     ["gold_claim_substr occurs in no cited chunk (case-insensitive), got '400 days'"]),
    ("substring only in an uncited chunk of the same doc",
     row(GOOD, gold_claim_substr=["within 30 days", "10 business days"]),
     ["gold_claim_substr occurs in no cited chunk (case-insensitive), got '10 business days'"]),
    ("category not a string", row(GOOD, category=5), ["category must be a non-empty string, got 5"]),
    ("decision not in the set", row(GOOD, expected_decision="answer"),
     ["expected_decision must be one of ANSWER, ABSTAIN, CLARIFY, BLOCK, got 'answer'"]),
    ("answerable expects ABSTAIN", row(GOOD, category=KeyError, expected_decision="ABSTAIN"),
     ["an answerable item must expect ANSWER, got 'ABSTAIN'"]),
    ("unanswerable expects ANSWER", row(UNANS, category=KeyError, expected_decision="ANSWER"),
     ["an unanswerable item must not expect ANSWER, got 'ANSWER'"]),
    ("category vs answerable and decision", row(GOOD, category="conflict"),
     ["category 'conflict' requires answerable false (docs/decision_policy.md), got true",
      "category 'conflict' requires expected_decision ABSTAIN (docs/decision_policy.md), got 'ANSWER'"]),
    ("ambiguous needs CLARIFY", row(UNANS, category="ambiguous"),
     ["category 'ambiguous' requires expected_decision CLARIFY (docs/decision_policy.md), got 'ABSTAIN'"]),
    ("perturbed row without perturbation", row(GOOD, source_qid="T-0"),
     ["a perturbed row needs both source_qid and perturbation, got no perturbation"]),
    ("perturbed row with empty perturbation", row(GOOD, source_qid="T-0", perturbation=""),
     ["perturbation must be a non-empty string, got ''"]),
]


class RowTableTest(unittest.TestCase):
    def test_each_problem_class(self):
        for why, r, expected in ROW_TABLE:
            with self.subTest(why=why):
                got = G.check_rows("g.jsonl", [(3, r)], CHUNKS)
                self.assertEqual([str(p) for p in got], ["g.jsonl:3: " + m for m in expected])

    def test_substrings_are_matched_as_plain_text(self):
        """Issue 42: answers are shipped without Markdown markup, so a substring is looked for
        in the cited chunk read as plain text; one written with its markup is named with the
        plain form to write instead."""
        chunks = {"guide#p2": "1. Run `npm ci` with the **staff** account.\n2. See [the portal](https://x)."}
        table = [
            ("plain words across markup", ["npm ci with the staff account"], []),
            ("link text", ["See the portal"], []),
            ("with its markup", ["the **staff** account"],
             ["gold_claim_substr occurs in a cited chunk only with its Markdown markup; answers are shipped "
              "as plain text, so write it without ('the staff account'), got 'the **staff** account'"]),
            ("in neither", ["the admin account"],
             ["gold_claim_substr occurs in no cited chunk (case-insensitive), got 'the admin account'"]),
        ]
        for why, subs, expected in table:
            with self.subTest(why):
                got = G.check_rows("g.jsonl", [(1, row(GOOD, gold_claim_substr=subs, gold_citations=["guide#p2"],
                                                       category=KeyError))], chunks, markup={"guide#p2"})
                self.assertEqual([str(p) for p in got], ["g.jsonl:1: " + m for m in expected])
        # a text file's chunk (not in markup) is matched as written: its "4." and "*" are content
        nda = {"nda#p2": "4. *Confidential* means data."}
        for subs, expected in ((["4. *Confidential* means"], []),
                               (["Confidential means"], ["gold_claim_substr occurs in no cited chunk "
                                                         "(case-insensitive), got 'Confidential means'"])):
            with self.subTest(subs=subs):
                got = G.check_rows("g.jsonl", [(1, row(GOOD, gold_claim_substr=subs, gold_citations=["nda#p2"],
                                                       category=KeyError))], nda, markup=set())
                self.assertEqual([str(p) for p in got], ["g.jsonl:1: " + m for m in expected])

    def test_unknown_citations_against_an_index(self):
        """eval's check (issue 42 item 3): every gold citation names a chunk of the index."""
        from types import SimpleNamespace as S
        ids = sorted(CHUNKS)
        index = S(chunks=[S(chunk_id=c) for c in ids], position=lambda c: ids.index(c) if c in ids else -1)
        rows = [(1, GOOD), (2, UNANS), (3, row(GOOD, gold_citations=["refund-policy#p1", "refund-policy#p999"])),
                (4, row(GOOD, gold_citations="refund-policy#p1")), (5, row(GOOD, gold_citations=["refund-polcy#p1"]))]
        got = [str(p) for p in G.unknown_citations("g.jsonl", rows, index, "docs")]
        self.assertEqual(got, [
            "g.jsonl:3: gold_citations names no chunk of the corpus docs (refund-policy has refund-policy#p0 to "
            "refund-policy#p3; 'search --scope DOC' lists a document's chunk ids), got 'refund-policy#p999'",
            "g.jsonl:5: gold_citations names no chunk of the corpus docs (no document 'refund-polcy'; did you mean "
            "'refund-policy'?; 'search --scope DOC' lists a document's chunk ids), got 'refund-polcy#p1'"])

    def test_documented_categories_match_the_policy_page(self):
        text = (ROOT / "docs" / "decision_policy.md").read_text(encoding="utf-8")
        rows = {}
        for line in text.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 4 and cells[1] in ("true", "false"):
                rows[cells[0]] = (cells[1] == "true", cells[2])
        self.assertEqual(rows, G.CATEGORY_RULES)


SOURCE = [GOOD, UNANS]
# (why, perturbed row, expected messages) against SOURCE given as --source.
SOURCE_TABLE = [
    ("clean", row(GOOD, qid="T-1-typo", question="How long is the refnud window?", source_qid="T-1",
                  perturbation="typo"), []),
    ("unknown source", row(GOOD, qid="T-9-typo", source_qid="T-9", perturbation="typo"),
     ["source_qid is not a qid of the source file, got 'T-9'"]),
    ("gold field changed", row(GOOD, qid="T-1-para", question="Refund window?", source_qid="T-1",
                               perturbation="paraphrase", gold_citations=["refund-policy#p1", "refund-policy#p2"]),
     ["gold_citations differs from source row 'T-1' (['refund-policy#p1']), "
      "got ['refund-policy#p1', 'refund-policy#p2']"]),
    ("question unchanged", row(UNANS, qid="T-2-casing", source_qid="T-2", perturbation="casing"),
     ["question is the same as source row 'T-2''s, got 'What is the capital of France?'"]),
]


class FileTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, data):
        path = os.path.join(self.tmp.name, name)
        if isinstance(data, list):
            data = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in data)
        with open(path, "wb") as fh:
            fh.write(data if isinstance(data, bytes) else data.encode("utf-8"))
        return path

    def check(self, path, source=None):
        return [str(p) for p in G.check_files([path], CHUNKS, source).problems]

    def test_source_table(self):
        src = G.load_source(self.write("src.jsonl", SOURCE))
        for why, r, expected in SOURCE_TABLE:
            with self.subTest(why=why):
                path = self.write("p.jsonl", [r])
                self.assertEqual(self.check(path, src), ["%s:1: %s" % (path, m) for m in expected])

    def test_parse_problems_all_reported_and_sorted_by_line(self):
        data = (json.dumps(row(GOOD, question="")).encode() + b"\n"
                + b"{not json\n"
                + b"\n"                                     # blank lines are skipped
                + b'{"qid": "caf\xe9"}\n'
                + b"[1, 2]\n"
                + json.dumps(GOOD).encode() + b"\n"
                + json.dumps(row(GOOD, gold_citations=["nope"])).encode() + b"\n")
        path = self.write("bad.jsonl", data)
        self.assertEqual(self.check(path), [
            "%s:1: question must be a non-empty string, got ''" % path,
            "%s:2: invalid JSON (Expecting property name enclosed in double quotes), got '{not json'" % path,
            "%s:4: not UTF-8 text, got byte 0xe9" % path,
            "%s:5: a gold row must be a JSON object, got '[1, 2]'" % path,
            "%s:6: duplicate qid, first used at line 1, got 'T-1'" % path,
            "%s:7: duplicate qid, first used at line 1, got 'T-1'" % path,
            "%s:7: cited chunk is not in the corpus, got 'nope'" % path,
        ])

    def test_bom_and_crlf_accepted(self):
        data = b"\xef\xbb\xbf" + json.dumps(GOOD).encode() + b"\r\n" + json.dumps(UNANS).encode() + b"\r\n"
        path = self.write("bom.jsonl", data)
        report = G.check_files([path], CHUNKS)
        self.assertEqual((report.problems, report.rows, report.answerable), ([], 2, 1))

    def test_qids_unique_within_a_file_not_across_files(self):
        a = self.write("a.jsonl", [GOOD])
        b = self.write("b.jsonl", [GOOD])
        self.assertEqual(G.check_files([a, b], CHUNKS).problems, [])

    def test_unparsable_source_is_an_error(self):
        path = self.write("src.jsonl", "{oops\n")
        with self.assertRaises(G.MiniRagError) as cm:
            G.load_source(path)
        self.assertEqual(str(cm.exception),
                         "%s:1: invalid JSON (Expecting property name enclosed in double quotes), "
                         "got '{oops'\n%s: the --source file must parse cleanly" % (path, path))


def run_cli(argv):
    """(exit status, stdout, stderr) of ``python -m mini_rag`` with only the gold commands."""
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.object(cli, "COMMAND_MODULES", ("cmd_gold",)), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(argv)
        except SystemExit as exc:
            rc = exc.code
    return rc, out.getvalue(), err.getvalue()


class CliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_clean_files_exit_0_with_counts_per_category(self):
        gold, para = str(FIX / "gold.jsonl"), str(FIX / "paraphrases.jsonl")
        rc, out, err = run_cli(["check-gold", gold, para, "--corpus", CORPUS, "--source", gold])
        self.assertEqual((rc, err), (0, ""))
        # gold.jsonl: 12 rows (7 answerable); paraphrases.jsonl: 2 answerable rows.
        self.assertEqual(out, "check-gold: OK, 2 files, 14 rows, 9 answerable; categories: "
                              "ambiguous=1 answerable_direct=4 answerable_exception=1 "
                              "answerable_numeric=1 answerable_paraphrase=2 answerable_partial=1 "
                              "out_of_scope=1 unanswerable_absent=1 unanswerable_near_miss=2\n")

    def test_problems_exit_2_listed_then_summary(self):
        bad = os.path.join(self.tmp.name, "bad.jsonl")
        with open(bad, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(row(GOOD, gold_claim_substr=["abc"])) + "\n")
            fh.write(json.dumps(row(UNANS, answerable=True)) + "\n")
        rc, out, err = run_cli(["check-gold", str(FIX / "gold.jsonl"), bad, "--corpus", CORPUS])
        self.assertEqual((rc, out), (2, ""))
        self.assertEqual(err.splitlines(), [
            "%s:1: gold_claim_substr must have at least 5 characters, got 'abc'" % bad,
            "%s:2: an answerable item needs at least one gold_citations entry, got []" % bad,
            "%s:2: an answerable item needs at least one gold_claim_substr, got []" % bad,
            "%s:2: an answerable item must expect ANSWER, got 'ABSTAIN'" % bad,
            "%s:2: category 'out_of_scope' requires answerable false (docs/decision_policy.md), got true" % bad,
            "check-gold: 5 problems in 1 of 2 files (14 rows read)",
        ])

    def test_input_errors_exit_2(self):
        missing = os.path.join(self.tmp.name, "nope.jsonl")
        no_corpus = os.path.join(self.tmp.name, "no-corpus")
        table = [
            (["check-gold", missing, "--corpus", CORPUS],
             "mini_rag: %s: cannot read gold file: No such file or directory\n" % missing),
            (["check-gold", str(FIX / "gold.jsonl"), "--corpus", no_corpus],
             "mini_rag: %s: corpus not found (give a folder of .md/.rst/.txt files or a .jsonl file)\n" % no_corpus),
        ]
        for argv, err_text in table:
            with self.subTest(argv=argv):
                rc, out, err = run_cli(argv)
                self.assertEqual((rc, out, err), (2, "", err_text))
        rc, _, err = run_cli(["check-gold"])
        self.assertEqual(rc, 2)
        self.assertIn("the following arguments are required: FILE", err)

    def test_corpus_from_config(self):
        if sys.version_info < (3, 11) and not (ROOT / "score_eval.py").exists():
            self.skipTest("TOML before Python 3.11 needs score_eval.py's reader, absent here")
        cfg = os.path.join(self.tmp.name, "c.toml")
        with open(cfg, "w", encoding="utf-8") as fh:
            fh.write('[corpus]\npath = "%s"\n' % CORPUS.replace("\\", "/"))
        rc, out, err = run_cli(["check-gold", str(FIX / "gold.jsonl"), "--config", cfg])
        self.assertEqual((rc, err), (0, ""))
        self.assertTrue(out.startswith("check-gold: OK, 1 file, 12 rows, 7 answerable;"), out)

    def test_every_flag_has_help(self):
        for cmd in ("check-gold", "perturb"):
            rc, out, _ = run_cli([cmd, "--help"])
            with self.subTest(cmd=cmd):
                self.assertEqual(rc, 0)
                for flag in ("--corpus", "--config", "--source") if cmd == "check-gold" else \
                        ("--out", "--paraphrases", "--kinds", "--per-item", "--config"):
                    self.assertIn(flag, out)
                self.assertNotIn("None", out)


class CommittedGoldTest(unittest.TestCase):
    """The committed gold files pass the checker (the CI step `make check-gold`)."""

    def test_committed_gold_files_are_clean(self):
        g = ROOT / "gold"
        base = [g / "gold.jsonl"] if (g / "gold.jsonl").exists() else \
            [p for p in (g / "gold.policies.jsonl", g / "gold.regulatory.jsonl") if p.exists()]
        files = base + [p for p in (g / "gold_perturb.jsonl", g / "paraphrases.policies.jsonl",
                                    g / "paraphrases.regulatory.jsonl") if p.exists()]
        if not base or not (g / "corpus").is_dir():
            self.skipTest("committed gold files absent (gold/gold.jsonl and gold/corpus)")
        chunks = {c.chunk_id: c.text for c in load_chunks(str(g / "corpus"))}
        source = {}
        for p in base:
            source.update(G.load_source(str(p)))
        report = G.check_files([str(p) for p in files], chunks, source)
        self.assertEqual([str(p) for p in report.problems], [])


if __name__ == "__main__":
    unittest.main()
