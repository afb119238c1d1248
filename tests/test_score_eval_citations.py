"""score_eval.py, reading 1: citations read from the text (issue 28 item 1).

Tables of citation styles with the ids expected (worked out by hand from the retrieved list
RET below: numbers are 1-based ranks), ordinary text that must not be read as a citation,
the gates-file key, the seed's example answers rewritten as an LLM writes them (lead-in,
inline marker, empty citations list) scored against the plain ones, and examples/llm/.
"""
import json
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import score_eval  # noqa: E402
from tests.test_score_eval import SEED_EXAMPLE, TempDir, gold_row, run_cli, trace_row, write_jsonl  # noqa: E402

RET = ["doc#p3", "doc#p5", "pol#2", "faq#1", "hr#p9"]      # ranks 1..5
KNOWN = {"doc#p1": "a chunk known from --chunks but not retrieved"}

# (style, text, expected claim, expected citations, expected bad markers)
STYLES = [
    ("chunk id", "Refunds take 30 days [doc#p3].", "Refunds take 30 days.", ["doc#p3"], []),
    ("rank", "Refunds take 30 days [2].", "Refunds take 30 days.", ["doc#p5"], []),
    ("ranks, comma", "Refunds take 30 days [1, 3].", "Refunds take 30 days.", ["doc#p3", "pol#2"], []),
    ("ranks, chained", "Refunds take 30 days[1][4].", "Refunds take 30 days.", ["doc#p3", "faq#1"], []),
    ("rank range", "Refunds take 30 days [1-3].", "Refunds take 30 days.", ["doc#p3", "doc#p5", "pol#2"], []),
    ("rank range, en dash", "Refunds take 30 days [2\u20133].", "Refunds take 30 days.", ["doc#p5", "pol#2"], []),
    ("(Source: X)", "Refunds take 30 days (Source: pol#2).", "Refunds take 30 days.", ["pol#2"], []),
    ("(Sources: X, Y)", "Refunds take 30 days (Sources: pol#2, faq#1).", "Refunds take 30 days.", ["pol#2", "faq#1"], []),
    ("(Source N)", "Refunds take 30 days (Source 4).", "Refunds take 30 days.", ["faq#1"], []),
    ("(Document N and M)", "Refunds take 30 days (Documents 1 and 2).", "Refunds take 30 days.", ["doc#p3", "doc#p5"], []),
    ("(X, p. 3)", "Refunds take 30 days (doc, p. 5).", "Refunds take 30 days.", ["doc#p5"], []),
    ("(X, p. N), document level", "Refunds take 30 days (pol, p. 7).", "Refunds take 30 days.", ["pol#2"], []),
    ("\u3010N\u2020source\u3011", "Refunds take 30 days\u30103\u2020source\u3011.", "Refunds take 30 days.", ["pol#2"], []),
    ("^[N]", "Refunds take 30 days.^[5]", "Refunds take 30 days.", ["hr#p9"], []),
    ("[^N] footnote", "Refunds take 30 days[^2].", "Refunds take 30 days.", ["doc#p5"], []),
    ("[^N^] (Bing)", "Refunds take 30 days[^2^].", "Refunds take 30 days.", ["doc#p5"], []),
    ("<sup>N</sup>", "Refunds take 30 days<sup>1</sup>.", "Refunds take 30 days.", ["doc#p3"], []),
    ("<sup>[N]</sup>", "Refunds take 30 days.<sup>[3]</sup>", "Refunds take 30 days.", ["pol#2"], []),
    ("[Doc N]", "Refunds take 30 days [Doc 2, Doc 4].", "Refunds take 30 days.", ["doc#p5", "faq#1"], []),
    ("(chunk id)", "Refunds take 30 days (faq#1).", "Refunds take 30 days.", ["faq#1"], []),
    ("document id", "Refunds take 30 days [pol].", "Refunds take 30 days.", ["pol#2"], []),
    ("Sources: list of ids", "Refunds take 30 days.\n\nSources:\n- doc#p3\n- pol#2",
     "Refunds take 30 days.", ["doc#p3", "pol#2"], []),
    ("References: numbered titles", "Refunds take 30 days.\n\nReferences:\n[1] Refund policy\n[4] FAQ",
     "Refunds take 30 days.", ["doc#p3", "faq#1"], []),
    ("**Sources:** one line", "Refunds take 30 days [1].\n**Sources:** [1], [5]",
     "Refunds take 30 days.", ["doc#p3", "hr#p9"], []),
    ("## Sources heading, list numbering", "Refunds take 30 days.\n\n## Sources\n1. doc#p5\n2. faq#1",
     "Refunds take 30 days.", ["doc#p5", "faq#1"], []),
    ("Sources: list, closing line kept", "Refunds take 30 days.\n\nSources:\n- [1]\n\nAsk if you need more.",
     "Refunds take 30 days.\n\nAsk if you need more.", ["doc#p3"], []),
    ("inline and list together", "Refunds take 30 days [2]. Sources: [2], [3]",
     "Refunds take 30 days.", ["doc#p5", "pol#2"], []),
    ("lead-in and mid-sentence marker", "Based on the provided documents [1], refunds take 30 days.",
     "Based on the provided documents, refunds take 30 days.", ["doc#p3"], []),
    ("known chunk, not retrieved", "Refunds take 30 days [doc#p1].", "Refunds take 30 days.", ["doc#p1"], []),
    # markers that resolve to nothing
    ("rank past the retrieved", "Refunds take 30 days [7].", "Refunds take 30 days.", [], ["[7]"]),
    ("range past the retrieved", "Refunds take 30 days [4-6].", "Refunds take 30 days.", ["faq#1", "hr#p9"], ["[4-6]"]),
    ("unknown chunk id", "Refunds take 30 days [doc#p42].", "Refunds take 30 days.", [], ["[doc#p42]"]),
    ("(Source: title)", "Refunds take 30 days (Source: Employee Handbook).", "Refunds take 30 days.", [],
     ["Employee Handbook"]),
    ("(Title, p. N)", "Refunds take 30 days (Smith, p. 4).", "Refunds take 30 days.", [], ["(Smith, p. 4)"]),
    ("range wider than 20", "Refunds take 30 days [1-40].", "Refunds take 30 days.", [], ["[1-40]"]),
]

# Ordinary text the built-in patterns must leave alone (claim unchanged, nothing read).
PLAIN = [
    "X rejects null keys.",
    "not in context",
    "Go to settings:\n1. Open the menu\n2. Click Refunds",
    "The steps are (1) open the menu and (2) click Refunds.",
    "The ruling [2019] was cited by the court [sic].",
    "A [citation needed] claim with [brackets] and [note: see below].",
    "Read arr[0] before the loop.",
    "Refunds (see the policy) take 30 days (about a month).",
    "The fee is 5 (five) euros, page 3 of the form (for example, page 3).",
    "References to the policy are frequent.",
    "Sources: the department and two managers said so.",
    "Citations: 3 were issued last year.",
    "References:\n2 of the 5 managers agreed.",
    "Temperatures reach 30\u00b0C (86\u00b0F) in July: pack light.",
    "Use the <b>bold</b> tag.",
    "Passage 5 also mentions the fee (Passage 0).",
]


def read(text, ret=RET, known=(KNOWN,), patterns=None):
    return score_eval.read_citations(text, ret, known, patterns)


class Styles(unittest.TestCase):
    def test_at_least_twelve_styles(self):
        self.assertGreaterEqual(len({s[0] for s in STYLES}), 12)

    def test_each_style(self):
        for style, text, claim, cits, bad in STYLES:
            with self.subTest(style=style):
                rd = read(text)
                self.assertEqual(rd.claim, claim)
                self.assertEqual(rd.citations, cits)
                self.assertEqual(rd.bad, bad)

    def test_plain_text_is_untouched(self):
        for text in PLAIN:
            with self.subTest(text=text):
                rd = read(text)
                self.assertIs(rd.claim, text)
                self.assertEqual((rd.citations, rd.bad), ([], []))

    def test_fast_path(self):
        # no marker character at all: the text object comes back, no pattern ran
        self.assertIsNone(score_eval._CITE_TRIGGER.search("X rejects null keys."))
        text = "X rejects null keys."
        self.assertIs(read(text, patterns=None).claim, text)

    def test_no_retrieved_ids(self):
        rd = read("Refunds take 30 days [1].", ret=[])
        self.assertEqual((rd.claim, rd.citations, rd.bad), ("Refunds take 30 days.", [], ["[1]"]))

    def test_each_citation_once_in_order(self):
        rd = read("A [3]. B [1][3]. C [pol#2].")
        self.assertEqual(rd.citations, ["pol#2", "doc#p3"])
        self.assertEqual(rd.claim, "A. B. C.")

    def test_linear_on_hostile_text(self):
        import time
        for text in ("[" * 200000, "(" * 200000, "[1" + "," * 200000, "Sources:\n" + "- x\n" * 50000,
                     "(a, p. " * 30000, "Sources: [1]" + " " * 200000 + "x", "Sources: [1]\n" + "1 and " * 40000,
                     "x [1]" + " \t" * 100000 + "[2]"):
            t0 = time.perf_counter()
            read(text)
            self.assertLess(time.perf_counter() - t0, 5.0)


class Patterns(TempDir):
    def gates(self, body):
        p = self.dir / "gates.toml"
        p.write_text(body, encoding="utf-8")
        return p

    def test_default_patterns_pass_the_linear_time_check(self):
        for src in score_eval.CITATION_PATTERNS:
            self.assertIsNone(score_eval.regex_problem(src), src)

    def test_custom_pattern_replaces_the_defaults(self):
        g = self.gates('[scorer]\ncitation_patterns = [\'\\{\\{(?P<ref>[^{}]{1,50})\\}\\}\']\n[baseline]\nprecision = { min = 0 }\n')
        rules = score_eval.load_rules(str(g))
        self.assertEqual(read("A {{2}} B [1].", patterns=rules.citations),
                         score_eval.Reading("A B [1].", ["doc#p5"], []))

    def test_empty_list_reads_nothing(self):
        g = self.gates('[scorer]\ncitation_patterns = []\n[baseline]\nprecision = { min = 0 }\n')
        rules = score_eval.load_rules(str(g))
        self.assertEqual(rules.citations, ())
        gold = [gold_row("Q1", True, ["30 days"], ["doc#p3"])]
        trace = [trace_row("Q1", "Refunds take 30 days [1].", [], RET)]
        code, out, _ = self.score(gold, trace, "--gates-file", g, gates=None)
        self.assertNotIn("X", out["items"]["Q1"])
        self.assertEqual(out["chr"], 0.0)          # nothing read: no citation

    def test_bad_patterns_name_file_and_line(self):
        cases = [
            ("'(a+)+'", "nested quantifiers"),
            ("'(?P<who>x)'", "unknown named group who"),
            ("'(?P<doc>x)'", "groups doc and page go together"),
            ("'[unclosed'", "does not compile"),
            ("'\\[(\\d)\\]\\1'", "backreferences"),
        ]
        for value, why in cases:
            with self.subTest(value=value):
                g = self.gates('[scorer]\n# comment\ncitation_patterns = [%s]\n[baseline]\nprecision = { min = 0 }\n' % value)
                code, out, err = self.score([gold_row("Q1")], [trace_row("Q1", "x")], "--gates-file", g, gates=None)
                self.assertEqual(code, 2)
                self.assertIn("gates.toml:3: [scorer] citation_patterns: regex", err)
                self.assertIn(why, err)

    def test_not_a_list(self):
        g = self.gates('[scorer]\ncitation_patterns = "\\\\[(\\\\d)\\\\]"\n[baseline]\nprecision = { min = 0 }\n')
        code, _, err = self.score([gold_row("Q1")], [trace_row("Q1", "x")], "--gates-file", g, gates=None)
        self.assertEqual(code, 2)
        self.assertIn("gates.toml:2: [scorer] citation_patterns must be an array", err)


class Verdicts(TempDir):
    """Rows of one item each; figures worked out by hand."""

    GOLD = [gold_row("Q1", True, ["30 days"], ["doc#p3"])]
    CHUNKS = [{"id": c, "text": "Refunds take 30 days." if c == "doc#p3" else "Other text."} for c in RET]

    def one(self, claim, cits=(), ret=RET):
        ch = write_jsonl(self.dir / "chunks.jsonl", self.CHUNKS)
        code, out, err = self.score(self.GOLD, [trace_row("Q1", claim, cits, ret)], "--chunks", ch,
                                    "--items", self.dir / "items.jsonl", gates="precision=0")
        item = json.loads((self.dir / "items.jsonl").read_text().splitlines()[0])
        return code, out, item

    def test_citations_read_from_text(self):
        code, out, item = self.one("Refunds take 30 days [1].")
        self.assertEqual((out["precision"], out["chr"]), (1.0, 1.0))
        self.assertEqual(out["metrics"]["citation_validity"]["value"], 1.0)
        self.assertEqual(out["metrics"]["hallucination"]["value"], 0.0)
        self.assertIn("X", out["items"]["Q1"])
        self.assertEqual((item["citations_from"], item["citations_read"], item["bad_markers"]),
                         ("text", ["doc#p3"], []))

    def test_trace_list_wins_markers_still_removed(self):
        # the row's own list is used; the marker leaves the claim (hallucination 0: "1" is gone)
        code, out, item = self.one("Refunds take 30 days [2].", ["doc#p3"])
        self.assertEqual((out["precision"], out["chr"]), (1.0, 1.0))
        self.assertEqual(out["metrics"]["hallucination"]["value"], 0.0)
        self.assertNotIn("X", out["items"]["Q1"])
        self.assertEqual(item["citations_from"], "trace")

    def test_bad_marker_invalidates(self):
        # [7] with five retrieved: citation outside retrieved_ids, invalid, no hit, no crash
        code, out, item = self.one("Refunds take 30 days [1][7].")
        self.assertEqual(out["metrics"]["citation_validity"]["value"], 0.0)
        self.assertEqual(out["chr"], 0.0)
        self.assertEqual(out["metrics"]["hallucination"]["value"], 1.0)
        self.assertTrue({"X", "I", "n"} <= set(out["items"]["Q1"]))
        self.assertEqual(item["bad_markers"], ["[7]"])
        self.assertEqual(item["citations_read"], ["doc#p3"])

    def test_bad_marker_with_a_trace_list(self):
        code, out, item = self.one("Refunds take 30 days [7].", ["doc#p3"])
        self.assertEqual(out["metrics"]["citation_validity"]["value"], 0.0)
        self.assertEqual(out["chr"], 1.0)                  # the row's list still hits
        self.assertIn("I", out["items"]["Q1"])
        self.assertNotIn("X", out["items"]["Q1"])

    def test_refusal_token_untouched(self):
        code, out, item = self.one("not in context")
        self.assertEqual(out["answered"], 0)
        self.assertEqual(item["citations_from"], "trace")

    def test_duplicate_row_replaces_the_reading(self):
        ch = write_jsonl(self.dir / "chunks.jsonl", self.CHUNKS)
        trace = [trace_row("Q1", "Refunds take 30 days [7]."), trace_row("Q1", "Refunds take 30 days.", ["doc#p3"], RET)]
        code, out, _ = self.score(self.GOLD, trace, "--chunks", ch, "--items", self.dir / "i.jsonl")
        item = json.loads((self.dir / "i.jsonl").read_text())
        # G: the answer's sentences were checked against doc#p3's text (issue 41: on by default)
        self.assertEqual(out["items"]["Q1"], "tsachpvmgzrG")
        self.assertEqual((item["citations_from"], item["bad_markers"]), ("trace", []))
        self.assertEqual((item["unsupported_answer"], item["faithfulness"]), (False, 1.0))

    def test_partial_and_merge_keep_the_reading(self):
        trace = [trace_row("Q1", "Refunds take 30 days [1][7].", [], RET)]
        g = write_jsonl(self.dir / "gold.jsonl", self.GOLD)
        t = write_jsonl(self.dir / "trace.jsonl", trace)
        code, _, err = run_cli(["--gold", g, "--trace", t, "--gates", "precision=0", "--partial", self.dir / "p.json"])
        self.assertEqual(code, 0, err)
        one = run_cli(["--gold", g, "--trace", t, "--gates", "precision=0", "--items", self.dir / "a.jsonl"])
        merged = run_cli(["merge", self.dir / "p.json", "--trace", t, "--gates", "precision=0",
                          "--items", self.dir / "b.jsonl"])
        self.assertEqual(merged[0], one[0], merged[2])
        self.assertEqual(one[1]["items"], merged[1]["items"])
        self.assertEqual((self.dir / "a.jsonl").read_text(), (self.dir / "b.jsonl").read_text())


class ConfiguredPatternsReachEveryReading(TempDir):
    """The [scorer] citation_patterns reach grounding too (issue 40 item 2): the claim is read
    once, with the user's patterns, and grounding checks that claim; it does not read the
    built-in markers out of it again.  With ``{{N}}`` as the only marker, "[7]" is text: a
    number the chunk does not hold ("Section 3 ...") makes the sentence unsupported, and
    "[3]" (a number it holds) keeps it supported.  Worked out by hand: one sentence checked
    each time, so faithfulness is 0/1 or 1/1."""

    CHUNKS = [{"id": c, "text": "Section 3 of the act sets the fee at 25 euros." if c == "doc#p3" else "Other text."}
              for c in RET]

    def one(self, scorer_lines, claim):
        g = self.gates("[scorer]\n%sgrounding = \"sentences\"\n[baseline]\nprecision = { min = 0 }\n" % scorer_lines)
        ch = write_jsonl(self.dir / "chunks.jsonl", self.CHUNKS)
        gold = [gold_row("Q1", True, ["25 euros"], ["doc#p3"])]
        code, out, err = self.score(gold, [trace_row("Q1", claim, [], RET)], "--gates-file", g, "--chunks", ch,
                                    "--items", self.dir / "items.jsonl", gates=None)
        self.assertEqual(code, 0, err)
        return json.loads((self.dir / "items.jsonl").read_text().splitlines()[0])

    def gates(self, body):
        p = self.dir / "gates.toml"
        p.write_text(body, encoding="utf-8")
        return p

    BRACES = "citation_patterns = ['\\{\\{(?P<ref>[^{}]{1,40})\\}\\}']\n"

    def test_the_record_holds_the_claim_read_with_the_patterns(self):
        rules = score_eval.load_rules(str(self.gates("[scorer]\n" + self.BRACES + "[baseline]\nprecision = { min = 0 }\n")))
        sc = score_eval.Scorer(score_eval.Gold(), [5], "not in context", None, rules)
        resp = sc.respond("Section [7] of the act sets the fee at 25 euros {{1}}.", [], RET, None)
        self.assertEqual(resp.claim, "Section [7] of the act sets the fee at 25 euros.")
        self.assertEqual((resp.citations, resp.text_citations, resp.bad_marks), (["doc#p3"], ["doc#p3"], []))
        self.assertEqual([s[2:] for s in resp.sentences],
                         [("Section [7] of the act sets the fee at 25 euros.",
                           "Section [7] of the act sets the fee at 25 euros.")])
        self.assertEqual(resp.refusal.kind, score_eval.KIND_ANSWER)

    def test_a_bracketed_number_is_text_to_grounding(self):
        item = self.one(self.BRACES, "Section [7] of the act sets the fee at 25 euros {{1}}.")
        self.assertEqual((item["citations_from"], item["citations_read"], item["bad_markers"]),
                         ("text", ["doc#p3"], []))
        self.assertEqual((item["unsupported_answer"], item["faithfulness"]), (True, 0.0))
        [bad] = item["unsupported_sentences"]
        self.assertEqual((bad["sentence"], bad["missing"]),
                         ("Section [7] of the act sets the fee at 25 euros.", ["7"]))
        self.assertTrue(bad["why"].startswith("7 found in no chunk"), bad["why"])
        # the strict check read the same claim: "7" is in no cited text either
        self.assertEqual(item["unsupported"], ["7"])

    def test_the_number_the_chunk_holds_is_supported(self):
        item = self.one(self.BRACES, "Section [3] of the act sets the fee at 25 euros {{1}}.")
        self.assertEqual((item["unsupported_answer"], item["faithfulness"], item["unsupported_sentences"]),
                         (False, 1.0, []))

    def test_no_patterns_no_marker_for_grounding_either(self):
        # citation_patterns = []: "[1]" is text everywhere; no citation is read, so grounding
        # checks the sentence against every retrieved chunk, and none holds the number 1
        item = self.one("citation_patterns = []\n", "The fee is 25 euros [1].")
        self.assertEqual((item["unsupported_answer"], item["faithfulness"]), (True, 0.0))
        self.assertEqual(item["unsupported_sentences"][0]["missing"], ["1"])


def rewrite(trace_path, style):
    """The seed example's answers as an LLM writes them: a lead-in, an inline citation in
    ``style`` and no citations list (refusals unchanged)."""
    rows = [json.loads(l) for l in Path(trace_path).read_text().splitlines() if l.strip()]
    for r in rows:
        aj = r["answer_json"]
        if aj["claim"].strip().lower() == "not in context":
            continue
        cid = aj["citations"][0]
        rank = r["retrieved_ids"].index(cid) + 1
        marker = {"rank": " [%d]" % rank, "id": " [%s]" % cid, "source": " (Source: %s)" % cid,
                  "sup": "<sup>%d</sup>" % rank, "list": None}[style]
        body = aj["claim"][0].lower() + aj["claim"][1:].rstrip(".")
        if marker is None:
            aj["claim"] = "Based on the provided documents, %s.\n\nSources:\n- %s" % (body, cid)
        else:
            aj["claim"] = "Based on the provided documents, %s%s." % (body, marker)
        aj["citations"] = []
    return rows


class SeedExampleRewritten(TempDir):
    """The README's worked example (examples/seed) written as an LLM would: the same
    precision, chr and citation_validity as the plain answers (issue 28's acceptance)."""

    KEYS = ("precision", "chr", "citation_validity")

    def figures(self, trace):
        code, out, err = run_cli(["--gold", SEED_EXAMPLE / "gold.jsonl", "--trace", trace, "--chunks",
                                  SEED_EXAMPLE / "chunks.jsonl", "--gates", "none"])
        self.assertEqual(code, 0, err)
        return {k: out["metrics"][k]["value"] for k in self.KEYS + ("hallucination",)}

    def test_same_figures(self):
        plain = self.figures(SEED_EXAMPLE / "trace.jsonl")
        self.assertEqual(plain, {"precision": 1.0, "chr": 1.0, "citation_validity": 1.0, "hallucination": 0.0})
        for style in ("rank", "id", "source", "sup", "list"):
            with self.subTest(style=style):
                t = write_jsonl(self.dir / ("trace.%s.jsonl" % style), rewrite(SEED_EXAMPLE / "trace.jsonl", style))
                got = self.figures(t)
                self.assertEqual({k: got[k] for k in self.KEYS}, {k: plain[k] for k in self.KEYS})
                # strict hallucination keeps its definition: the lead-in's "based", "provided" and
                # "documents" are in no chunk, so both shipped answers are flagged (the marker is not)
                self.assertEqual(got["hallucination"], 1.0)


class LlmExample(unittest.TestCase):
    """examples/llm/ as the README shows it: prose answers with citations in the text, two prose
    refusals, grounding = "sentences" and an answer-correctness gate."""

    def test_example(self):
        d = ROOT / "examples" / "llm"
        code, out, err = run_cli(["--gold", d / "gold.jsonl", "--trace", d / "trace.jsonl", "--chunks",
                                  d / "chunks.jsonl", "--gates-file", d / "gates.toml", "--dataset", "llm"])
        self.assertEqual(code, 1, err)               # L7 cites [4] of three retrieved chunks
        failed = [g["gate"] for g in out["gate_results"] if not g["pass"]]
        self.assertEqual(failed, ["citation_validity"])
        m = out["metrics"]
        # shipped: L1-L4, L7 (L5, L6 refused in prose); L1-L4 contain the gold and cite it
        self.assertEqual((out["answered"], out["refused"]), (5, 2))
        self.assertEqual((m["precision"]["count"], m["chr"]["count"], m["citation_validity"]["count"]), (4, 4, 4))
        self.assertEqual(m["hallucination"]["count"], 2)     # strict: L1's lead-in words; L7's bad marker
        # grounding = "sentences": the hallucination gate checks unsupported_answer_rate; every shipped
        # sentence is in its chunks (L1's lead-in is set aside, L4's "No." has nothing to check, L7's
        # bad marker is no evidence, so the retrieved chunks are read)
        gate = [g for g in out["gate_results"] if g["gate"] == "hallucination"][0]
        self.assertEqual((gate["metric"], gate["value"]), ("unsupported_answer_rate", 0.0))
        self.assertEqual((m["unsupported_answer_rate"]["count"], m["unsupported_answer_rate"]["n"]), (0, 5))
        self.assertEqual(m["faithfulness"]["value"], 1.0)
        # gold_claim_substr matched after normalisation: all five shipped answers hold theirs
        self.assertEqual((m["answer_correct_rate"]["count"], m["answer_correct_rate"]["n"]), (5, 5))
        self.assertEqual(out["items"], {"L1": "tsachpvxmgzrXKG", "L2": "tsachpvmgzrXKG", "L3": "tsachpvmgzrXKG",
                                        "L4": "tsachpvmgzrXKG", "L5": "tperw", "L6": "tperwX",
                                        "L7": "tsacxmgnzrXIKG"})


if __name__ == "__main__":
    unittest.main()
