"""Versions read from the text (issue 17 item 5): corpus.read_versions / resolve_versions,
conflicts rules 2f and 5, the freshness exception for a named edition, and the pipeline on
tests/fixtures/versions/corpus (no front matter anywhere).

The fixture corpus, by hand:

* travel-policy-2019.md: "Status: SUPERSEDED. This edition was replaced by the 2024
  edition." (line 3); meal allowance USD 40 per day.
* travel-policy-2024.md: "This edition replaces the 2019 edition in full." (line 3);
  meal allowance USD 55 per day.
* remote-work-guide-v1.md: "This guide was superseded by Remote Work Guide v2." (line 3);
  up to 2 days per week.  remote-work-guide-v2.md: up to 3 days per week.
* file-portal.md (maximum upload size 25 MB) and email-attachments.md (maximum attachment
  size 10 MB): two unrelated documents sharing a unit; laptops.md: laptops replaced every
  four years (so "laptop" is a corpus word).
"""
import copy
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from mini_rag.guard import guards  # noqa: E402
from mini_rag.text.analysis import Analyzer  # noqa: E402
from mini_rag.config import DEFAULTS  # noqa: E402
from mini_rag.guard.conflicts import (DocVersion, asks_in_force, find_conflicts,  # noqa: E402
                                named_editions)
from mini_rag.text.corpus import (editions_in, family_key, load_chunks, load_corpus,  # noqa: E402
                             parse_text_document)
from mini_rag.indexing.index import build_index  # noqa: E402
from mini_rag.pipeline import Pipeline  # noqa: E402
from mini_rag.records import Fact  # noqa: E402
from mini_rag.search.retrieve import Retriever  # noqa: E402

CORPUS = os.path.join(ROOT, "tests", "fixtures", "versions", "corpus")
AN = Analyzer()
_INDEX = []


def read(text, name="doc", title_line=True):
    """The metadata of a one-file document (a '# Title' line first unless told)."""
    return parse_text_document(text, name + ".md", name).metadata


class ReadFromText(unittest.TestCase):
    def test_status_and_successor_table(self):
        # (case, file text, status, versions_read["status"], successor text or None)
        filler = "".join("Line %d of the text.\n" % i for i in range(20))
        cases = [
            ("status line", "# P\n\nStatus: SUPERSEDED. See the new one.\n", "superseded",
             ["superseded", "body:3"], None),
            ("bold status line", "# P\n\n**Status:** Withdrawn\n", "withdrawn", ["withdrawn", "body:3"], None),
            ("dash, in force", "# P\n\nDocument status - in force\n", "current", ["current", "body:3"], None),
            ("no longer in force", "# P\n\nStatus: no longer in force\n", "withdrawn", ["withdrawn", "body:3"], None),
            ("replaced by", "# P\n\nIntro.\nThis edition was replaced by the 2024 edition.\n", "superseded",
             ["superseded", "body:3"], "the 2024 edition"),
            ("superseded by, wrapped line", "# P\n\nThis policy has been superseded\nby POL-7 v2. More.\n",
             "superseded", ["superseded", "body:3"], "POL-7 v2"),
            ("line starts Superseded by", "# P\n\nSuperseded by: Travel Policy 2024\n", "superseded",
             ["superseded", "body:3"], "Travel Policy 2024"),
            ("self-declared withdrawn", "# P\n\nThis standard was withdrawn in May.\n", "withdrawn",
             ["withdrawn", "body:3"], None),
            ("self-declared no longer valid", "# P\n\nThis procedure is no longer valid.\n", "withdrawn",
             ["withdrawn", "body:3"], None),
            ("a status line that states no status", "# FAQ\n\nStatus: the order ships in a day.\n", None,
             None, None),
            ("future: modal before the word", "# P\n\nThis policy will be withdrawn next year.\n", None, None, None),
            ("conditional", "# P\n\nThis policy, where local rules exist, is replaced by them.\n"
             "This policy, if the board objects, is withdrawn.\n", None, None, None),
            ("not about itself", "# P\n\nThe 2019 rules were replaced by these rules.\n", None, None, None),
            ("not a document noun", "# P\n\nThis laptop was replaced by a new one.\n", None, None, None),
            ("below the head", "# P\n\n" + filler + "\nStatus: superseded\n", None, None, None),
            ("title status", "# SOP-1 Deviations (version 3, superseded)\n\nText.\n", "superseded",
             ["superseded", "title"], None),
            ("front matter wins", "---\nstatus: current\n---\n# P\n\nStatus: superseded\n", "current",
             ["current", "front_matter"], None),
            ("front matter wins over a successor", "---\nstatus: current\n---\n# P\n\n"
             "This policy was replaced by POL-9.\n", "current", ["current", "front_matter"], "POL-9"),
        ]
        for name, text, status, read_status, successor in cases:
            with self.subTest(name):
                meta = read(text)
                if name == "front matter wins":         # what the text said is kept beside it
                    self.assertEqual(meta["versions_read"]["status_in_text"], ["superseded", "body:6"])
                self.assertEqual(meta.get("status"), status)
                got = meta.get("versions_read", {})
                self.assertEqual(got.get("status"), read_status)
                self.assertEqual((got.get("successor_text") or [None])[0], successor)

    def test_supersedes_is_not_this_documents_edition(self):
        meta = read("# Information Security Policy (SEC-01)\n\nVersion 4.0, approved in 2026. This policy "
                    "replaces\nInformation Security Policy v2.3 (2019) in full.\n")
        self.assertEqual(meta["versions_read"]["predecessor_text"],
                         ["Information Security Policy v2.3 (2019) in full", "body:3"])
        self.assertEqual(meta["versions_read"]["editions"], ["v4"])
        self.assertNotIn("status", meta)

    def test_jsonl_row(self):
        import json
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "c.jsonl")
            rows = [{"_id": "a", "title": "Leave Rules (2020)", "text": "Status: withdrawn\n\nTen days."},
                    {"_id": "b", "title": "Leave Rules (2024)", "text": "Twelve days.",
                     "metadata": {"status": "current"}}]
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("".join(json.dumps(r) + "\n" for r in rows))
            docs = {d.doc_id: d.metadata for d in load_corpus(path)}
        self.assertEqual(docs["a"]["status"], "withdrawn")
        self.assertEqual(docs["a"]["versions_read"], {"status": ["withdrawn", "body:1"], "editions": ["2020"]})
        self.assertEqual(docs["b"]["versions_read"], {"status": ["current", "front_matter"], "editions": ["2024"]})

    def test_fixture_corpus_resolution(self):
        docs = {d.doc_id: d.metadata for d in load_corpus(CORPUS)}
        # doc -> (status, superseded_by, where the successor was read)
        table = {
            "travel-policy-2019": ("superseded", "travel-policy-2024", "body:3"),
            "travel-policy-2024": (None, None, None),
            "remote-work-guide-v1": ("superseded", "remote-work-guide-v2", "body:3"),
            "remote-work-guide-v2": (None, None, None),
            "file-portal": (None, None, None),
            "laptops": (None, None, None),
        }
        for doc, (status, succ, where) in table.items():
            with self.subTest(doc):
                meta = docs[doc]
                self.assertEqual((meta.get("status"), meta.get("superseded_by")), (status, succ))
                if where:
                    self.assertEqual(meta["versions_read"]["superseded_by"], [succ, where])
        self.assertEqual(docs["travel-policy-2024"]["versions_read"]["supersedes"],
                         ["travel-policy-2019", "body:3"])
        self.assertNotIn("versions_read", docs["file-portal"])

    def test_predecessor_declared_only_by_its_successor(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in (("leave-2020.md", "# Leave Rules (2020)\n\nTen days.\n"),
                               ("leave-2024.md", "# Leave Rules (2024)\n\nThis edition supersedes the "
                                                 "2020 edition.\n\nTwelve days.\n")):
                with open(os.path.join(tmp, name), "w", encoding="utf-8") as fh:
                    fh.write(text)
            docs = {d.doc_id: d.metadata for d in load_corpus(tmp)}
        self.assertEqual(docs["leave-2020"]["status"], "superseded")
        self.assertEqual(docs["leave-2020"]["superseded_by"], "leave-2024")
        self.assertEqual(docs["leave-2020"]["versions_read"]["status"], ["superseded", "corpus:leave-2024"])

    def test_front_matter_current_keeps_a_resolvable_successor_out(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in (("leave-2020.md", "---\nstatus: current\n---\n# Leave Rules (2020)\n\n"
                                                 "This edition was replaced by the 2024 edition.\n"),
                               ("leave-2024.md", "# Leave Rules (2024)\n\nTwelve days.\n")):
                with open(os.path.join(tmp, name), "w", encoding="utf-8") as fh:
                    fh.write(text)
            meta = {d.doc_id: d.metadata for d in load_corpus(tmp)}["leave-2020"]
        self.assertEqual((meta["status"], meta.get("superseded_by")), ("current", None))
        self.assertEqual(meta["versions_read"]["successor_text"], ["the 2024 edition", "body:6"])

    def test_unresolved_successor_stays_text(self):
        meta = {d.doc_id: d.metadata for d in load_corpus(CORPUS)}
        self.assertNotIn("superseded_by", meta["remote-work-guide-v2"])
        m = read("# Guide\n\nThis guide was replaced by the 2030 edition.\n")
        self.assertEqual((m["status"], m.get("superseded_by")), ("superseded", None))


class Editions(unittest.TestCase):
    def test_editions_in(self):
        cases = [
            ("Travel Policy (2019 edition)", ["2019"]),
            ("SOP-QA-014 Deviation Handling (version 3, superseded)", ["v3"]),
            ("Information Security Policy (legacy v2.3)", ["v2.3"]),
            ("Version 4.0 of 2026", ["v4", "2026"]),
            ("Edition 2026.1", ["v2026.1"]),
            ("Rev. 7", ["v7"]),
            ("The 25 MB limit", []),
        ]
        for text, want in cases:
            with self.subTest(text):
                self.assertEqual(editions_in(text), want)

    def test_family_key(self):
        self.assertEqual(family_key("api-rate-limits-2021"), family_key("api-rate-limits-2026"))
        self.assertEqual(family_key("Information Security Policy (legacy v2.3)"),
                         family_key("Information Security Policy"))
        self.assertEqual(family_key("reg-sop-deviation-handling-v3"), "reg sop deviation handling")
        self.assertNotEqual(family_key("file-portal"), family_key("email-attachments"))

    def test_question_cues(self):
        cases = [
            ("What did the 2019 policy say?", {"2019"}, False),
            ("Under v2.3, how long is the lockout?", {"v2.3"}, False),
            ("What is the current meal allowance?", set(), True),
            ("Which limits are in force today?", set(), True),
            ("What is the meal allowance?", set(), False),
        ]
        for q, editions, in_force in cases:
            with self.subTest(q):
                self.assertEqual((set(named_editions(q)), asks_in_force(q)), (editions, in_force))


def fact(doc, n, text):
    return Fact(quote=text, pdf=doc, page=1, chunk_id="%s#p%d" % (doc, n), score=0.5)


TRAVEL = [fact("travel-2019", 3, "The daily meal allowance for domestic trips is USD 40 per day."),
          fact("travel-2024", 3, "The daily meal allowance for domestic trips is USD 55 per day.")]
VERSIONS = {"travel-2019": DocVersion("travel-2019", False, frozenset({"2019"}), "travel-2024", "", "travel"),
            "travel-2024": DocVersion("travel-2024", True, frozenset({"2024"}), "", "travel-2019", "travel")}


def detect(q, facts, guards_cfg=None, **kw):
    return [(p.chunk_a, p.chunk_b) for p in find_conflicts(
        AN.analyze(q), facts, AN, guards_cfg or DEFAULTS["guards"], DEFAULTS["clarify"], None, q, **kw)]


class ConflictRules(unittest.TestCase):
    def test_rule_5_versions(self):
        pair = [("travel-2019#p3", "travel-2024#p3")]
        off = dict(DEFAULTS["guards"], conflicts_with_superseded=False)
        cases = [
            # (case, question, guards, expected pairs)
            ("plain question, seed default: surfaced", "What is the daily meal allowance?", None, pair),
            ("plain question, in-force mode", "What is the daily meal allowance?", off, []),
            ("asks for the rule in force", "What is the current daily meal allowance?", None, []),
            ("names the old edition", "What was the daily meal allowance in the 2019 edition?", None, []),
            ("names the new edition", "What is the daily meal allowance in the 2024 edition?", None, []),
            ("names an edition neither has", "What was the daily meal allowance in 2021?", None, pair),
        ]
        for name, q, cfg, want in cases:
            with self.subTest(name):
                self.assertEqual(detect(q, TRAVEL, cfg, doc_versions=VERSIONS), want)
        # without version information the two documents are two sources that disagree
        self.assertEqual(detect("What is the current daily meal allowance?", TRAVEL), pair)

    def test_rule_5_both_in_force_still_conflict(self):
        both = {k: DocVersion(v.doc_id, True, v.editions, "", "", v.family) for k, v in VERSIONS.items()}
        off = dict(DEFAULTS["guards"], conflicts_with_superseded=False)
        self.assertEqual(detect("What is the current daily meal allowance?", TRAVEL, off, doc_versions=both),
                         [("travel-2019#p3", "travel-2024#p3")])

    def test_rule_2f_subject(self):
        facts = [fact("portal", 1, "The maximum upload size for the file portal is 25 MB."),
                 fact("mail", 1, "The maximum attachment size for email is 10 MB.")]
        idf = {"maximum": 1.0, "size": 1.0, "laptop": 3.0, "screen": 4.0}.get
        pair = [("mail#p1", "portal#p1")]
        # "maximum" and "size" are 2 of the 9 idf units of {maximum, size, laptop, screen}
        self.assertEqual(detect("What is the maximum size of a laptop screen?", facts,
                                idf=lambda t: idf(t, 2.0)), [])
        self.assertEqual(detect("What is the maximum size of a laptop screen?", facts), pair)   # no idf: off
        # the pair holds all of {maximum, size}: 2/2 >= 0.5
        self.assertEqual(detect("What is the maximum size?", facts, idf=lambda t: idf(t, 2.0)), pair)
        # the two sides count together: two versions (rule 2c does not apply), the old one
        # holds {password} only (2/5), both {password, length} of {minimum, password,
        # length} with weights 1, 2, 2: 4/5 >= 0.5
        pw = [fact("new", 1, "The password length must be at least 14 characters."),
              fact("old", 1, "Passwords must be at least 8 characters long.")]
        w = {"minimum": 1.0, "password": 2.0, "length": 2.0}.get
        self.assertEqual(detect("What is the minimum password length?", pw, idf=lambda t: w(t, 1.0),
                                versions=[("old", "new")]), [("new#p1", "old#p1")])


class FreshnessNamedEdition(unittest.TestCase):
    def test_table(self):
        cfg = dict(DEFAULTS["guards"], as_of="2026-11-01")
        old = {"status": "superseded", "superseded_by": "travel-2024", "review_by": "2020-01-01",
               "versions_read": {"editions": ["2019"]}}
        current_stale = {"review_by": "2024-01-01", "versions_read": {"editions": ["2023"]}}
        cases = [
            ("old edition, plain question", old, "What is the meal allowance?", ["superseded"]),
            ("old edition named", old, "What was the meal allowance in the 2019 edition?", []),
            ("another edition named", old, "What was the meal allowance in 2018?", ["superseded"]),
            ("a document in force named: review_by still applies", current_stale,
             "What is the fee in the 2023 schedule?", ["review_by"]),
        ]
        for name, meta, q, rules in cases:
            with self.subTest(name):
                res = guards.check_freshness([("d#p1", "d", "2019-01-01", meta)], "high", cfg, question=q)
                self.assertEqual([s["rule"] for s in res.sources], rules)


class PipelineOnFixture(unittest.TestCase):
    """The extractive pipeline end to end on the fixture corpus (decisions by the rules above)."""

    def answer(self, question, **guards_cfg):
        cfg = copy.deepcopy(DEFAULTS)
        cfg["corpus"]["path"] = CORPUS
        cfg["guards"].update(guards_cfg)
        if not _INDEX:
            _INDEX.append(build_index(load_chunks(CORPUS)))
        return Pipeline(cfg, retriever=Retriever(_INDEX[0], cfg)).answer(question, qid="V").row

    def test_table(self):
        conflict = "conflict:numeric:travel-policy-2019#p3:travel-policy-2024#p3"
        cases = [
            # (question, extra guards, decision, first reason, citations)
            ("What is the daily meal allowance for domestic trips?", {}, "ABSTAIN", conflict, []),
            ("What is the daily meal allowance for domestic trips?", {"conflicts_with_superseded": False},
             "ANSWER", None, ["travel-policy-2024#p3"]),
            ("What is the current daily meal allowance for domestic trips?", {}, "ANSWER", None,
             ["travel-policy-2024#p3"]),
            ("What was the daily meal allowance in the 2019 edition?", {}, "ANSWER", None,
             ["travel-policy-2019#p3"]),
            ("Under v1, how many days per week may employees work from home?", {}, "ANSWER", None,
             ["remote-work-guide-v1#p2"]),
            ("How many days per week may employees currently work from home?", {}, "ANSWER", None,
             ["remote-work-guide-v2#p1"]),
        ]
        for q, extra, decision, reason, cites in cases:
            with self.subTest(q=q, extra=extra):
                row = self.answer(q, **extra)
                self.assertEqual(row["decision"], decision, row["reasons"])
                self.assertEqual(row["reasons"][:1], [reason] if reason else [])
                self.assertEqual(row["answer_json"]["citations"], cites)

    def test_unrelated_documents_sharing_a_unit_do_not_conflict(self):
        row = self.answer("What is the maximum size of a laptop screen?")
        self.assertEqual(row["conflicts"], [])
        row = self.answer("What is the maximum size?")      # both sides hold the whole question
        self.assertEqual([c["reason"] for c in row["conflicts"]], ["10 mb vs 25 mb"])


class DebugRouteOnFixture(PipelineOnFixture):
    """serve's /debug/conflicts applies the same version and subject rules as the pipeline."""

    def debug(self, question):
        from mini_rag.commands.serve import Service
        cfg = copy.deepcopy(DEFAULTS)
        cfg["corpus"]["path"] = CORPUS
        if not _INDEX:
            _INDEX.append(build_index(load_chunks(CORPUS)))
        service = Service(cfg, Pipeline(cfg, retriever=Retriever(_INDEX[0], cfg)))
        return service.debug("conflicts", {"q": question})

    def test_conflicts_match_the_pipeline(self):
        for q, want in [("What is the maximum size of a laptop screen?", 0),   # rule 2f: not the subject
                        ("What was the daily meal allowance in the 2019 edition?", 0),   # rule 5a
                        ("What is the daily meal allowance for domestic trips?", 1)]:
            with self.subTest(q=q):
                self.assertEqual(len(self.debug(q)["conflicts"]["pairs"]), want)
                self.assertEqual(len(self.answer(q)["conflicts"]), want)


if __name__ == "__main__":
    unittest.main()
