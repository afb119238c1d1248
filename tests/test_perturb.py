"""Tests for mini_rag.eval.perturb: each kind's exact output, the invariants, determinism, the CLI.

Expected outputs are derived by hand from the rule of each kind (module docstring): the
inputs are built so that the kind has exactly one possible edit, or the seeded choice is
recomputed here from sha256 independently of the module.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mini_rag.eval import perturb as P  # noqa: E402
from mini_rag.config import DEFAULTS  # noqa: E402
from mini_rag.errors import MiniRagError  # noqa: E402
from tests.test_goldcheck import run_cli  # noqa: E402  (one helper for the gold commands)

FIX = ROOT / "tests" / "fixtures" / "gold"
RULES = (("continuous processing", ("continuous manufacturing", "ICH Q13")),)


def sha_int(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16)


class RngTest(unittest.TestCase):
    def test_draws_follow_the_documented_stream(self):
        digest = hashlib.sha256(b"Q-1typo").digest()
        rng = P._Rng("Q-1", "typo")
        self.assertEqual(rng.draw(), sha_int("Q-1typo"))
        self.assertEqual(rng.draw(), int(hashlib.sha256(digest + b"1").hexdigest(), 16))
        self.assertEqual(rng.draw(), int(hashlib.sha256(digest + b"2").hexdigest(), 16))
        self.assertEqual(P._Rng("Q-1", "typo").below(7), sha_int("Q-1typo") % 7)


# (kind, question, expected output, why).  Each input has exactly one possible edit.
SINGLE_EDIT_TABLE = [
    ("word_order", "How long are audit logs kept under legal hold?",
     "Under legal hold, how long are audit logs kept?", "only PP: 'under legal hold'"),
    ("word_order", "If a customer cancels early, is the fee waived?",
     "Is the fee waived, if a customer cancels early?", "one comma: swap clauses"),
    ("word_order", "Refund rules. What happens to refunds after 30 days?",
     "Refund rules. After 30 days, what happens to refunds?", "only the last sentence moves"),
    ("word_order", "What is the refund window?", None, "no PP, no comma"),
    ("word_order", "Are logins shared by users who create, modify or delete data?", None,
     "a list comma: neither side starts adverbially"),
    ("word_order", "What is the flow rate of line CM-2, and how many operators staff it?", None,
     "a two-part question is not two swappable clauses"),
    ("word_order", "How should a wrong entry in a batch record be fixed?", None,
     "the tail holds a verb: a clause, not a PP"),
    ("word_order", "What data must be in the dossier?", None, "PP is the copula's complement"),
    ("word_order", "Are we still on net payment terms?", None, "PP after copula + adverb"),
    ("word_order", "How many failed sign-in attempts lock an account?", None, "'in' inside 'sign-in'"),
    ("word_order", "What happens if we leave an invoice unpaid for weeks?", None,
     "the PP belongs to the if-clause"),
    ("word_order", "Is stability testing at 30 C always required?", None, "tail has an adverb and -ed verb"),
    ("word_order", "What are the models used for in continuous processing?",
     "In continuous processing, what are the models used for?", "stranded 'for' is not a PP start"),
    ("word_order", "Is the retention period for logs, invoices, and backups fixed?", None,
     "two commas: a list, not two clauses"),
    ("synonym", "Is approval required?", "Is approval needed?", "required -> needed"),
    ("synonym", "What is the maximum upload size?", "What is the max upload size?", "maximum -> max"),
    ("synonym", "Maximum upload size?", "Max upload size?", "case of the first letter kept"),
    ("synonym", "Does an employee sign it?", "Does a staff member sign it?", "article follows"),
    ("synonym", "How long do we wait?", "For how long do we wait?", "how long -> for how long"),
    ("synonym", "For how long do we wait?", None, "already 'for how long'"),
    ("synonym", "How long is a code valid for?", None, "would read 'for how long ... for?'"),
    ("synonym", "Is \"approval required\" printed?", None, "quoted text is not changed"),
    ("expansion", "What is continuous manufacturing?", "What is continuous processing?",
     "the rule's add phrase -> its match phrase"),
    ("expansion", "Continuous Manufacturing batch size?", "Continuous processing batch size?",
     "first letter's case kept"),
    ("expansion", "What does ICH Q13 define?", None, "codes are not phrasing"),
    ("expansion", "Is continuous processing the same as continuous manufacturing?", None,
     "already phrased with the match phrase"),
    ("expansion", "How long are logs kept?", None, "nothing to replace"),
    ("typo", "Is SEC-04 in ISO 27001 for ACME?", None, "no lower-case word of 5+ letters"),
    ("typo", "Which of these would there be?", None, "only function words"),
]


class SingleEditTest(unittest.TestCase):
    def test_table(self):
        for kind, question, expected, why in SINGLE_EDIT_TABLE:
            with self.subTest(kind=kind, question=question, why=why):
                self.assertEqual(P.perturb_question(question, "Q-1", kind, RULES), expected)


def edit_kind(a: str, b: str) -> str:
    """Independent classifier: which single typo turns word a into word b ('' if none)."""
    if len(b) == len(a) - 1 and any(a[:i] + a[i + 1:] == b for i in range(1, len(a) - 1)):
        return "delete"
    if len(b) == len(a) + 1 and any(a[:i] + a[i] + a[i:] == b for i in range(1, len(a) - 1)):
        return "duplicate"
    if len(b) == len(a) and any(a[:i] + a[i + 1] + a[i] + a[i + 2:] == b and a[i] != a[i + 1]
                                for i in range(1, len(a) - 2)):
        return "swap"
    return ""


class TypoTest(unittest.TestCase):
    # (question, the only eligible word)
    TABLE = [
        ("Is SEC-04 mandatory?", "mandatory"),
        ("Are backups kept with AES-256?", "backups"),
        ("What does the Policy say about refunds?", "refunds"),   # capitalized: proper-noun-ish
        ("Which three steps?", "steps"),                          # number words are numbers
        ("Would these rules hold?", "rules"),                     # function words skipped
    ]

    def test_one_word_one_edit_first_and_last_letter_kept(self):
        for question, only in self.TABLE:
            for qid in ("A-1", "B-2", "C-3", "D-4", "E-5"):
                with self.subTest(question=question, qid=qid):
                    out = P.perturb_question(question, qid, "typo", RULES)
                    a, b = question.split(), out.split()
                    self.assertEqual(len(a), len(b))
                    diff = [(x, y) for x, y in zip(a, b) if x != y]
                    self.assertEqual(len(diff), 1, out)
                    x, y = (w.strip("?") for w in diff[0])
                    self.assertEqual(x, only)
                    self.assertTrue(x.islower() and x.isalpha(), x)
                    self.assertIn(edit_kind(x, y), ("delete", "duplicate", "swap"), (x, y))
                    self.assertEqual((x[0], x[-1]), (y[0], y[-1]))

    def test_word_choice_is_seeded_by_qid_and_kind(self):
        # Two candidates; the first draw of sha256(qid + "typo") picks one (index = draw % 2).
        question = "Are backups encrypted?"
        for qid in ("A-1", "B-2", "C-3", "D-4"):
            with self.subTest(qid=qid):
                word = ["backups", "encrypted"][sha_int(qid + "typo") % 2]
                out = P.perturb_question(question, qid, "typo", RULES)
                self.assertNotIn(word, out)
                self.assertIn(({"backups", "encrypted"} - {word}).pop(), out)


class CasingTest(unittest.TestCase):
    def test_only_case_changes_and_codes_stay(self):
        variants = set()
        for qid in ("A-1", "B-2", "C-3", "D-4", "E-5", "F-6", "G-7", "H-8"):
            q = 'Does ICH Q13 cover "Batch Size" under SEC-04?'
            out = P.perturb_question(q, qid, "casing", RULES)
            with self.subTest(qid=qid, out=out):
                self.assertNotEqual(out, q)
                self.assertEqual(out.lower(), q.lower())
                for kept in ("Q13", '"Batch Size"', "SEC-04"):
                    self.assertIn(kept, out)
            variants.add({'does ich Q13 cover "Batch Size" under SEC-04?': "lower",
                          'DOES ICH Q13 COVER "Batch Size" UNDER SEC-04?': "upper"}.get(out, "random"))
        self.assertEqual(variants, {"lower", "upper", "random"})

    def test_one_to_one_case_changes_only(self):
        # "\u00df".upper() is "SS" and "\u0130".lower() is two code points: both stay as they are.
        for qid in ("A-1", "B-2", "C-3", "D-4", "E-5", "F-6"):
            out = P.perturb_question("Stra\u00dfe \u0130stanbul office?", qid, "casing", RULES)
            with self.subTest(qid=qid, out=out):
                self.assertEqual(len(out), len("Stra\u00dfe \u0130stanbul office?"))
                self.assertIn("\u00df", out)
                self.assertIn("\u0130", out)

    def test_first_variant_is_seeded(self):
        # variant index = first draw of sha256(qid + "casing") % 3 (lower, upper, random).
        q = "Is the Policy current?"
        for qid in ("A-1", "B-2", "C-3", "D-4"):
            with self.subTest(qid=qid):
                v = sha_int(qid + "casing") % 3
                out = P.perturb_question(q, qid, "casing", RULES)
                if v == 0:
                    self.assertEqual(out, "is the policy current?")
                elif v == 1:
                    self.assertEqual(out, "IS THE POLICY CURRENT?")
                else:
                    self.assertEqual(out.lower(), q.lower())


class DistractorTest(unittest.TestCase):
    def test_each_clause_attaches_as_documented(self):
        q = "How long are logs kept?"
        expected = {
            "Quick question before my meeting: ": "Quick question before my meeting: How long are logs kept?",
            "Sorry if this was asked already: ": "Sorry if this was asked already: How long are logs kept?",
            "Hi there! ": "Hi there! How long are logs kept?",
            "One more thing: ": "One more thing: How long are logs kept?",
            ", asking for a colleague": "How long are logs kept, asking for a colleague?",
            ", if you happen to know": "How long are logs kept, if you happen to know?",
            " Thanks in advance!": "How long are logs kept? Thanks in advance!",
            " Cheers.": "How long are logs kept? Cheers.",
        }
        self.assertEqual(sorted(expected), sorted(c for _, c in P.DISTRACTORS))
        for qid in ("A-%d" % i for i in range(12)):
            clause = P.DISTRACTORS[sha_int(qid + "distractor") % len(P.DISTRACTORS)][1]
            with self.subTest(qid=qid, clause=clause):
                self.assertEqual(P.perturb_question(q, qid, "distractor", RULES), expected[clause])


# Words that would narrow a question to a plan, region, product or customer type.
QUALIFIERS = {"free", "pro", "enterprise", "premium", "basic", "plan", "tier", "region", "eu",
              "us", "uk", "europe", "emea", "apac", "product", "business", "team", "personal",
              "fda", "ema", "ich", "sops"}


class InvariantTest(unittest.TestCase):
    QUESTIONS = [
        "Can customers obtain a refund after 30 days under policy SEC-04?",
        'Is "continuous manufacturing" defined in ICH Q13, and since 2023-01-15?',
        "What is the maximum of 1,000 requests per hour for employees in the 99.9% SLA?",
        "If an employee leaves, are their WH-12 documents retained for 7 years?",
        "How long is information about customers retained before deletion?",
    ]

    def test_digits_codes_and_quotes_survive_every_kind(self):
        for q in self.QUESTIONS:
            for kind in P.KINDS:
                for qid in ("A-1", "B-2", "C-3"):
                    out = P.perturb_question(q, qid, kind, RULES)
                    if out is None:
                        continue
                    with self.subTest(q=q, kind=kind, qid=qid, out=out):
                        self.assertNotEqual(out, q)
                        self.assertEqual(sorted(re.findall(r"\d+", out)), sorted(re.findall(r"\d+", q)))
                        for code in re.findall(r"[\w.,/-]*\d[\w.,/-]*", q):
                            self.assertIn(code.rstrip(",.?"), out)
                        for quoted in re.findall(r'"[^"]*"', q):
                            self.assertIn(quoted, out)

    def test_no_kind_adds_a_qualifier(self):
        for q in self.QUESTIONS:
            for kind in P.KINDS:
                out = P.perturb_question(q, "A-1", kind, RULES) or q
                added = set(re.findall(r"[a-z]+", out.lower())) - set(re.findall(r"[a-z]+", q.lower()))
                with self.subTest(q=q, kind=kind):
                    self.assertEqual(added & QUALIFIERS, set())
        for word in re.findall(r"[a-z]+", " ".join(c for _, c in P.DISTRACTORS).lower()
                               + " " + " ".join(r for _, r in P.SYNONYMS).lower()):
            with self.subTest(word=word):
                self.assertNotIn(word, QUALIFIERS)


def fixture_rows():
    with open(FIX / "gold.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


class RowsTest(unittest.TestCase):
    def test_row_shape_and_gold_fields_unchanged(self):
        rows = fixture_rows()
        out = P.perturb_rows(rows, P.DEFAULT_KINDS, 1, RULES)
        self.assertEqual(len(out), len(rows))
        for src, new in zip(rows, out):
            with self.subTest(qid=src["qid"]):
                kind = new["perturbation"]
                self.assertEqual(new["qid"], src["qid"] + "-" + kind)
                self.assertEqual(new["source_qid"], src["qid"])
                self.assertEqual(list(new), list(src) + ["source_qid", "perturbation"])
                for key in src:
                    if key not in ("qid", "question"):
                        self.assertEqual(new[key], src[key])
                self.assertEqual(new["question"], P.perturb_question(src["question"], src["qid"], kind, RULES))

    def test_kinds_balanced_and_expansion_taken_where_it_applies(self):
        rows = fixture_rows()
        out = P.perturb_rows(rows, P.DEFAULT_KINDS, 1, RULES)
        counts = {}
        for r in out:
            counts[r["perturbation"]] = counts.get(r["perturbation"], 0) + 1
        # 12 rows, 6 kinds, 2 rows mention continuous manufacturing: 12 / 6 = 2 each.
        self.assertEqual(counts, {k: 12 // 6 for k in P.DEFAULT_KINDS})
        expanded = sorted(r["source_qid"] for r in out if r["perturbation"] == "expansion")
        self.assertEqual(expanded, sorted(r["qid"] for r in rows if "continuous manufacturing" in r["question"]))

    def test_per_item_gives_distinct_kinds(self):
        rows = fixture_rows()
        out = P.perturb_rows(rows, P.DEFAULT_KINDS, 3, RULES)
        self.assertEqual(len(out), 3 * len(rows))   # casing, distractor, typo/synonym... apply to all
        for src in rows:
            kinds = [r["perturbation"] for r in out if r["source_qid"] == src["qid"]]
            with self.subTest(qid=src["qid"]):
                self.assertEqual(len(set(kinds)), 3)
                self.assertEqual(kinds, [k for k in P.DEFAULT_KINDS if k in kinds])   # registry order

    def test_assignment_does_not_depend_on_file_order(self):
        rows = fixture_rows()
        a = P.perturb_rows(rows, P.DEFAULT_KINDS, 1, RULES)
        b = P.perturb_rows(list(reversed(rows)), P.DEFAULT_KINDS, 1, RULES)
        self.assertEqual(a, list(reversed(b)))

    def test_parse_kinds(self):
        self.assertEqual(P.parse_kinds("synonym, typo"), ("typo", "synonym"))
        table = [("tyop", "--kinds: unknown perturbation kind 'tyop'; did you mean 'typo'? "
                          "(known: typo, casing, word_order, synonym, distractor, expansion, scenario)"),
                 (" , ", "--kinds: give at least one kind, got ' , '")]
        for text, msg in table:
            with self.subTest(text=text):
                with self.assertRaises(MiniRagError) as cm:
                    P.parse_kinds(text)
                self.assertEqual(str(cm.exception), msg)

    def test_expansion_rules_from_config(self):
        self.assertEqual(P.expansion_rules(DEFAULTS), RULES)


class CliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def write(self, name, rows):
        with open(self.path(name), "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
        return self.path(name)

    def test_writes_perturbed_then_paraphrase_rows(self):
        out = self.path("out.jsonl")
        rc, stdout, stderr = run_cli(["perturb", str(FIX / "gold.jsonl"), "--out", out,
                                      "--paraphrases", str(FIX / "paraphrases.jsonl")])
        self.assertEqual((rc, stdout), (0, ""))
        self.assertIn("perturb: wrote 14 rows to %s" % out, stderr)
        with open(out, encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
        self.assertEqual([r["qid"] for r in rows[-2:]], ["FX-001-para", "FX-004-para"])
        self.assertEqual(rows[:12], P.perturb_rows(fixture_rows(), P.DEFAULT_KINDS, 1, RULES))

    def test_kinds_and_per_item_flags(self):
        out = self.path("out.jsonl")
        rc, _, _ = run_cli(["perturb", str(FIX / "gold.jsonl"), "--out", out,
                            "--kinds", "casing,distractor", "--per-item", "2"])
        self.assertEqual(rc, 0)
        with open(out, encoding="utf-8") as fh:
            kinds = [json.loads(line)["perturbation"] for line in fh]
        self.assertEqual(kinds, ["casing", "distractor"] * 12)

    def test_errors(self):
        gold = str(FIX / "gold.jsonl")
        no_src = self.write("p1.jsonl", [{"qid": "X-para", "question": "q?"}])
        bad_src = self.write("p2.jsonl", [{"qid": "X-para", "question": "q?", "source_qid": "NOPE",
                                           "perturbation": "paraphrase"}])
        clash = self.write("p3.jsonl", [{"qid": "FX-001-synonym", "question": "q?", "source_qid": "FX-001",
                                         "perturbation": "paraphrase"}])
        dup = self.write("g.jsonl", [{"qid": "A", "question": "Is it?"}, {"qid": "A", "question": "Is it?"},
                                     {"qid": 3, "question": ""}])
        table = [
            (["--paraphrases", no_src],
             ["%s:1: a paraphrase row needs source_qid (a non-empty string), got None" % no_src,
              "%s:1: a paraphrase row needs perturbation (a non-empty string), got None" % no_src]),
            (["--paraphrases", bad_src], ["%s:1: source_qid is not a qid of %s, got 'NOPE'" % (bad_src, gold)]),
            (["--paraphrases", clash],
             ["%s:1: qid already used by the perturbed row of FX-001, got 'FX-001-synonym'" % clash]),
            (["--per-item", "7"], ["--per-item must be between 1 and the number of kinds (6), got 7"]),
            (["--kinds", "typos"], ["--kinds: unknown perturbation kind 'typos'; did you mean 'typo'? "
                                    "(known: typo, casing, word_order, synonym, distractor, expansion, scenario)"]),
        ]
        out = self.path("out.jsonl")
        for extra, lines in table:
            with self.subTest(extra=extra):
                rc, stdout, stderr = run_cli(["perturb", gold, "--out", out] + extra)
                self.assertEqual((rc, stdout), (2, ""))
                self.assertEqual(stderr, "mini_rag: " + "\n".join(lines) + "\n")
                self.assertFalse(os.path.exists(out))
        rc, _, stderr = run_cli(["perturb", dup, "--out", out])
        self.assertEqual(rc, 2)
        self.assertEqual(stderr, "mini_rag: %s:2: qid already used by %s:1, got 'A'\n"
                                 "%s:3: qid must be a non-empty string, got 3\n"
                                 "%s:3: question must be a non-empty string, got ''\n" % (dup, dup, dup, dup))

    def test_byte_identical_across_hash_seeds(self):
        code = ("import sys; sys.path.insert(0, %r); from mini_rag.eval import perturb as P; "
                "P.run_perturb([%r], sys.argv[1], [%r], rules=P.expansion_rules("
                "__import__('mini_rag.config').config.DEFAULTS))"
                % (str(ROOT), str(FIX / "gold.jsonl"), str(FIX / "paraphrases.jsonl")))
        outputs = []
        for seed in ("0", "1", "4242"):
            out = self.path("out-%s.jsonl" % seed)
            env = dict(os.environ, PYTHONHASHSEED=seed)
            subprocess.run([sys.executable, "-c", code, out], check=True, env=env, timeout=60)
            with open(out, "rb") as fh:
                outputs.append(fh.read())
        self.assertEqual(outputs[0], outputs[1])
        self.assertEqual(outputs[0], outputs[2])
        here = self.path("here.jsonl")
        P.run_perturb([str(FIX / "gold.jsonl")], here, [str(FIX / "paraphrases.jsonl")], rules=RULES)
        with open(here, "rb") as fh:
            self.assertEqual(fh.read(), outputs[0])


def committed_gold_inputs():
    """The documented recipe (gold/README.md): gold/gold.jsonl, else the two parts in order."""
    g = ROOT / "gold"
    base = [g / "gold.jsonl"] if (g / "gold.jsonl").exists() else [g / "gold.policies.jsonl",
                                                                    g / "gold.regulatory.jsonl"]
    paras = [g / "paraphrases.policies.jsonl", g / "paraphrases.regulatory.jsonl"]
    return base, paras


class CommittedGoldTest(unittest.TestCase):
    def test_regenerating_reproduces_gold_perturb(self):
        base, paras = committed_gold_inputs()
        target = ROOT / "gold" / "gold_perturb.jsonl"
        missing = [str(p) for p in base + paras + [target] if not p.exists()]
        if missing:
            self.skipTest("committed gold files absent: %s" % ", ".join(missing))
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "gold_perturb.jsonl")
            P.run_perturb([str(p) for p in base], out, [str(p) for p in paras],
                          rules=P.expansion_rules(DEFAULTS))
            with open(out, "rb") as fh:
                fresh = fh.read()
        with open(target, "rb") as fh:
            self.assertTrue(fh.read() == fresh, "gold/gold_perturb.jsonl is not what the perturb "
                            "command makes from the committed gold files; regenerate it (gold/README.md)")


class DocsTest(unittest.TestCase):
    def test_module_docstring_examples(self):
        import doctest
        result = doctest.testmod(P)
        self.assertEqual((result.failed, result.attempted > 0), (0, True))

    def test_readme_and_help_name_every_kind(self):
        readme = ROOT / "gold" / "README.md"
        if not readme.exists():
            self.skipTest("gold/README.md absent")
        text = readme.read_text(encoding="utf-8")
        rc, out, _ = run_cli(["perturb", "--help"])
        for kind in P.KINDS.values():
            with self.subTest(kind=kind.name):
                self.assertIn("`%s`" % kind.name, text)
                self.assertIn(kind.name, out)
        for _, clause in P.DISTRACTORS:
            with self.subTest(clause=clause):
                self.assertIn(clause.strip(" ,"), text)


class ScenarioKind(unittest.TestCase):
    """Issue 30: the opt-in ``scenario`` kind puts one or two sentences of the template bank
    before the question; ``perturb`` without --kinds does not use it."""

    def test_scenario(self):
        from mini_rag.eval import perturb as P
        self.assertNotIn("scenario", P.DEFAULT_KINDS)
        self.assertEqual(set(P.DEFAULT_KINDS) | {"scenario"}, set(P.KINDS))
        q = "How long are audit logs kept?"
        seen = set()
        for i in range(40):
            out = P.perturb_question(q, "Q-%d" % i, "scenario", ())
            self.assertEqual(out, P.perturb_question(q, "Q-%d" % i, "scenario", ()))   # seeded
            self.assertTrue(out.endswith(" " + q))
            situation = out[:-len(q) - 1]
            parts = [s for s in P.SCENARIOS if s in situation]
            self.assertIn(len(parts), (1, 2))
            self.assertEqual(len(" ".join(parts)), len(situation))
            seen.add(len(parts))
        self.assertEqual(seen, {1, 2})


if __name__ == "__main__":
    unittest.main()
