"""score_eval.py, issue 28 item 2: refusals read by the response's bottom line.

Every expected kind below was decided by reading the text (the rule in bench/labels/README.md:
a refusal gives no substantive answer; a caveat inside an answer keeps it an answer; an
answer that declines another part of the question is a partial refusal), not by running
the reader.  The figures test recomputes docs/refusals.md's tables from the committed labels
and ../shared/data (skipped when ../shared is absent).
"""
import json
import os
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import score_eval  # noqa: E402
from tests.test_score_eval import TempDir, gold_row, run_cli, trace_row, write_jsonl  # noqa: E402
from tests.lanes import once_per_ci  # noqa: E402

A, R, P = "answer", "refusal", "partial_refusal"

CASES = [
    # English: refusals, safety refusals, hedged answers, caveats, negations, partials
    ("en", "The retrieved documents don't mention the parking rules.", R),
    ("en", "I'm sorry, but I cannot find that in the provided context.", R),
    ("en", "Unable to answer based on given passages.", R),
    ("en", "Based on the passages, it is not possible to determine when the office reopens.", R),
    ("en", "I can't help with that request.", R),
    ("en", "I won't write that, because it could be used to hurt someone.", R),
    ("en", "Unfortunately, there is no information about the CEO's bonus in the sources.", R),
    ("en", "I cannot confirm the exact figure, but the report puts revenue at about 4 million dollars.", A),
    ("en", "I'm afraid late payments are charged a 5% fee.", A),
    ("en", "Employees cannot carry over more than five days of leave.", A),
    ("en", "There is no charge for the first replacement card.", A),
    ("en", "The policy does not cover flood damage; fire and theft are covered.", A),
    ("en", "As an AI language model, I don't have access to real-time data. However, the 2018 final was won by France.", A),
    ("en", "The warranty lasts two years. The documents do not say whether it covers batteries.", P),
    # German
    ("de", "Die Quellen enthalten dazu keine Angaben.", R),
    ("de", "Es tut mir leid, aber ich kann diese Frage nicht beantworten.", R),
    ("de", "Das lässt sich aus den Dokumenten nicht bestimmen.", R),
    ("de", "Die Garantie gilt zwei Jahre; Akkus sind ausgeschlossen.", A),
    ("de", "Ich kann das genaue Jahr nicht bestätigen, aber es war um 1850.", A),
    ("de", "Die Garantie gilt zwei Jahre. Die Dokumente sagen nicht, ob sie auch Akkus abdeckt.", P),
    # French
    ("fr", "Les documents ne mentionnent pas les règles de stationnement.", R),
    ("fr", "Désolé, je ne peux pas répondre à cette question.", R),
    ("fr", "Il est impossible de déterminer la date à partir des sources.", R),
    ("fr", "La garantie dure deux ans ; les batteries ne sont pas couvertes.", A),
    ("fr", "Je ne peux pas confirmer l'année exacte, mais c'était vers 1850.", A),
    ("fr", "La garantie dure deux ans. Les documents ne précisent pas si elle couvre les batteries.", P),
    # Spanish
    ("es", "Los documentos no mencionan las normas de aparcamiento.", R),
    ("es", "Lo siento, no puedo responder a esa pregunta.", R),
    ("es", "No es posible determinar la fecha con las fuentes disponibles.", R),
    ("es", "La garantía dura dos años; las baterías no están cubiertas.", A),
    ("es", "No puedo confirmar el año exacto, pero fue hacia 1850.", A),
    ("es", "La garantía dura dos años. Los documentos no mencionan si cubre las baterías.", P),
    # Portuguese
    ("pt", "Os documentos não mencionam as regras de estacionamento.", R),
    ("pt", "Desculpe, não posso responder a essa pergunta.", R),
    ("pt", "Não é possível determinar a data com as fontes disponíveis.", R),
    ("pt", "A garantia dura dois anos; as baterias não estão cobertas.", A),
    ("pt", "Não posso confirmar o ano exato, mas foi por volta de 1850.", A),
    ("pt", "A garantia dura dois anos. Os documentos não dizem se cobre as baterias.", P),
    # Italian
    ("it", "I documenti non menzionano le regole di parcheggio.", R),
    ("it", "Mi dispiace, non posso rispondere a questa domanda.", R),
    ("it", "Non è possibile determinare la data dalle fonti disponibili.", R),
    ("it", "La garanzia dura due anni; le batterie non sono coperte.", A),
    ("it", "Non posso confermare l'anno esatto, ma era intorno al 1850.", A),
    ("it", "La garanzia dura due anni. I documenti non dicono se copre le batterie.", P),
    # Dutch
    ("nl", "De documenten vermelden de parkeerregels niet.", R),
    ("nl", "Sorry, ik kan deze vraag niet beantwoorden.", R),
    ("nl", "Het is niet mogelijk om de datum te bepalen uit de bronnen.", R),
    ("nl", "De garantie duurt twee jaar; batterijen vallen er niet onder.", A),
    ("nl", "Ik kan het exacte jaar niet bevestigen, maar het was rond 1850.", A),
    ("nl", "De garantie duurt twee jaar. De documenten vermelden niet of die ook batterijen dekt.", P),
]

TOKEN_CASES = [
    ("not in context", R), ("Not in context.", R), ("**Not in context.**", R), ('"not in context"', R),
    ("Answer: not in context", R), ("Final answer - Not in context!", R), ("`not in context`", R),
    ("> _not in context_", R), ("« not in context »", R),
    # the token inside a sentence is not the token (and the sentence is not a refusal)
    ("The phrase not in context is what the system prints.", A), ("not in context, but the fee is 25 EUR", A),
]


class ReaderTable(unittest.TestCase):
    def test_table_by_reading(self):
        self.assertGreaterEqual(len(CASES), 40)
        self.assertEqual({lang for lang, _, _ in CASES}, {"en", "de", "fr", "es", "pt", "it", "nl"})
        for lang, text, want in CASES:
            with self.subTest(lang=lang, text=text):
                kind, reason, _ = score_eval.read_refusal(text)
                self.assertEqual(kind, want, reason)

    def test_token_in_any_dress(self):
        for text, want in TOKEN_CASES:
            with self.subTest(text=text):
                self.assertEqual(score_eval.read_refusal(text)[0], want)
        self.assertEqual(score_eval.read_refusal("**Keine Antwort.**", "keine antwort")[0], R)
        self.assertEqual(score_eval.read_refusal("  ", )[0], A)        # empty claim: seed ships it

    def test_reasons(self):
        self.assertEqual(score_eval.read_refusal("Not in context.")[1], "the refusal token")
        self.assertEqual(score_eval.read_refusal("Paris is the capital.")[1], "")
        kind, reason, _ = score_eval.read_refusal("I'm sorry, but I can't help with that.")
        self.assertEqual(kind, R)
        self.assertTrue(reason.startswith("declines, answers nothing: "), reason)

    def test_extra_patterns_are_declines_not_verdicts(self):
        import re
        extra = (("zorg", re.compile(r"\bzorg\b", re.I)),)
        # a user wording alone refuses, and says which pattern ...
        self.assertEqual(score_eval.read_refusal("Zorg.", extra=extra), (R, "declines, answers nothing: Zorg.", 1))
        # ... but a caveat inside an answer stays an answer
        self.assertEqual(score_eval.read_refusal("Zorg, but the fee is 25 EUR.", extra=extra)[0], A)

    def test_window_bounds_long_texts(self):
        middle = "The fee is 25 EUR. " * 150 + "I cannot answer that. " + "The fee is 25 EUR. " * 150
        self.assertGreater(len(middle), score_eval.REFUSAL_WINDOW)
        self.assertEqual(score_eval.read_refusal(middle)[0], A)          # a decline mid-way is not read
        ending = "Background text here. " * 400 + "Therefore, I cannot answer the question."
        self.assertEqual(score_eval.read_refusal(ending)[0], R)


class Triggers(unittest.TestCase):
    """The trigger words never hide a decline or disclaimer cue (the fast path is exact)."""

    def texts(self):
        out = [t for _, t, _ in CASES] + [t for t, _ in TOKEN_CASES]
        with open(ROOT / "tests" / "data" / "refusal_written.jsonl", encoding="utf-8") as fh:
            out += [json.loads(line)["text"] for line in fh if line.strip()]
        fixture = json.loads((ROOT / "tests" / "fixtures" / "prose_refusals.json").read_text(encoding="utf-8"))
        out += [t for k in ("refusals", "answers", "heldout_refusals", "heldout_answers") for t in fixture[k]]
        import refusal_data as rd
        if rd.available("refchecker") and rd.available("evouna"):
            out += [x[2] for name in rd.SETS for x in rd.labelled(name)]
        return out

    def test_groups_equal_one_big_alternation(self):
        import re
        full = re.compile("|".join("(?:%s)" % s for g in score_eval._DECLINE_SOURCES.values() for s in g), re.I | re.M)
        hidden = []
        for text in self.texts():
            groups, disclaim = score_eval._decline_rxs(text.lower())
            for sent in score_eval.sentences(text):
                if bool(full.search(sent)) != any(rx.search(sent) for rx in groups):
                    hidden.append(sent[:80])
                if score_eval._DISCLAIMER_RX.search(sent) and not disclaim:
                    hidden.append(sent[:80])
        self.assertEqual(hidden, [])


class ScorerUses(TempDir):
    """One reading used by every verdict: over_refusal, refusal_rate, partial_refusal_rate, items."""

    GOLD = [gold_row("A", True, ["25 eur"], ["d#1"]), gold_row("B", True, ["25 eur"], ["d#1"]),
            gold_row("C", False), gold_row("D", False), gold_row("E", True, ["25 eur"], ["d#1"])]
    TRACE = [trace_row("A", "The fee is 25 EUR. The documents do not say when it can be cancelled.", ["d#1"], ["d#1"]),
             trace_row("B", "I cannot confirm the date, but the fee is 25 EUR.", ["d#1"], ["d#1"]),
             trace_row("C", "**Not in context.**"),
             trace_row("D", "My training data ends in 2021, so I cannot answer this."),
             trace_row("E", "The documents do not contain the fee.")]

    def run_it(self, rules):
        (self.dir / "g.toml").write_text(rules, encoding="utf-8")
        write_jsonl(self.dir / "gold.jsonl", self.GOLD)
        write_jsonl(self.dir / "trace.jsonl", self.TRACE)
        code, rep, err = run_cli(["--gold", "gold.jsonl", "--trace", "trace.jsonl", "--gates-file", "g.toml",
                                  "--dataset", "t", "--items", "items.jsonl"], cwd=self.dir)
        lines = (self.dir / "items.jsonl").read_text(encoding="utf-8").splitlines()
        return code, rep, err, {r["qid"]: r for r in map(json.loads, lines)}

    def test_builtin(self):
        code, rep, err, items = self.run_it("[scorer]\ncutoff_patterns = ['\\btraining data\\b']\n[t]\nprecision = { min = 0 }\n")
        self.assertEqual(code, 0, err)
        m = rep["metrics"]
        # refused: C (token), D (cutoff excuse), E (prose); A is a partial refusal, B an answer
        self.assertEqual((m["refusal_rate"]["count"], m["refusal_rate"]["n"]), (3, 5))
        self.assertEqual((m["partial_refusal_rate"]["count"], m["partial_refusal_rate"]["n"]), (1, 5))
        self.assertAlmostEqual(m["over_refusal"]["value"], round(1 / 3, 4))       # E of A, B, E
        self.assertEqual(m["under_refusal"]["value"], 0.0)
        want = {"A": (P, None), "B": (A, None), "C": (R, "token"), "D": (R, "pattern"), "E": (R, "reader")}
        for qid, (kind, by) in want.items():
            with self.subTest(qid=qid):
                self.assertEqual((items[qid]["refusal_kind"], items[qid]["refused_by"]), (kind, by))
        self.assertIn("P", rep["items"]["A"])          # the partial-refusal flag letter
        self.assertNotIn("P", rep["items"]["B"])
        self.assertEqual(items["D"]["evidence"], [{"mode": "training_cutoff_excuse", "words": "training data"}])
        self.assertEqual(items["C"]["refusal_reason"], "the refusal token")
        self.assertTrue(items["E"]["refusal_reason"].startswith("declines"), items["E"])
        self.assertTrue(items["B"]["refusal_reason"].startswith("declines, then answers"), items["B"])

    def test_exact_reader_is_the_seed_rule(self):
        code, rep, err, items = self.run_it('[scorer]\nrefusal_reader = "exact"\n[t]\nprecision = { min = 0 }\n')
        self.assertEqual(code, 0, err)
        m = rep["metrics"]
        # only the bare token refuses: "**Not in context.**" ships, as in seed 002
        self.assertEqual((m["refusal_rate"]["count"], m["partial_refusal_rate"]["count"]), (0, 0))
        self.assertEqual(items["E"]["refusal_kind"], A)

    def test_bad_reader_name(self):
        (self.dir / "g.toml").write_text('[scorer]\nrefusal_reader = "fuzzy"\n[t]\nprecision = { min = 0 }\n', encoding="utf-8")
        write_jsonl(self.dir / "gold.jsonl", self.GOLD)
        write_jsonl(self.dir / "trace.jsonl", self.TRACE)
        code, _, err = run_cli(["--gold", "gold.jsonl", "--trace", "trace.jsonl", "--gates-file", "g.toml",
                                "--dataset", "t"], cwd=self.dir)
        self.assertEqual(code, 2)
        self.assertIn('g.toml:2: [scorer] refusal_reader must be one of "builtin", "exact", got "fuzzy"', err)


class OneSplitter(unittest.TestCase):
    """Readings 2 and 4 cut sentences with one splitter (split_sentences); the refusal reading's
    ``sentences`` also cuts every line, strips bullets and emphasis and sets contrast clauses apart."""

    CASES = [   # (text, sentences of reading 2), cut by hand
        ("Dr. Smith joined in 2019. She left.", ["Dr. Smith joined in 2019.", "She left."]),
        ("D. J. Smith wrote it, e.g. in the U.S. report.", ["D. J. Smith wrote it, e.g. in the U.S. report."]),
        ("It costs 2.5 EUR. No. 5 is free.", ["It costs 2.5 EUR.", "No. 5 is free."]),
        ("I cannot say.\nThe fee is low.", ["I cannot say.", "The fee is low."]),
        ("Options:\n- **Check** the site\n- call us", ["Options:", "Check** the site", "call us"]),   # ends only
        ("It is unclear, but the fee is 25 EUR!", ["It is unclear", "but the fee is 25 EUR!"]),
        ("Note: The passages do not say.", ["Note:", "The passages do not say."]),
        ("\u201cUnknown.\u201d Skype does not say.", ["\u201cUnknown.\u201d", "Skype does not say."]),
    ]

    def test_cases(self):
        for text, want in self.CASES:
            with self.subTest(text=text):
                self.assertEqual(score_eval.sentences(text), want)

    def test_same_cuts_as_grounding(self):
        # one line per sentence: reading 2's sentences are reading 4's, stripped
        for text, _ in self.CASES[:3] + self.CASES[6:]:
            with self.subTest(text=text):
                cuts = [text[a:b].strip() for a, b in score_eval.split_sentences(text)]
                self.assertEqual(score_eval.sentences(text), cuts)


class FittedBottomLine(unittest.TestCase):
    """REFUSAL_MODEL decides only English responses that open with a decline or a disclaimer and
    go on with content; everything else keeps the rules."""

    # (text, weighed by the model, kind): kinds decided by reading, as CASES
    WEIGHED = [
        ("The passages do not say who won the 2019 race. They describe the course and the history of the "
         "event.", True, R),
        ("It is unclear whether the museum is open on Mondays. The passages describe its collection of "
         "paintings.", True, R),
        ("The passages do not mention the price. You can check the official website for details.", False, R),
        ("I cannot confirm the exact date, but it was in 1998.", True, A),
        ("The warranty lasts two years. The documents do not say whether it covers batteries.", False, P),
        ("Paris is the capital of France.", False, A),
        ("Je ne peux pas confirmer la date exacte, mais c'était en 1998.", False, A),
        ("Ich kann das genaue Datum nicht bestätigen, aber es war 1998.", False, A),
        ("No puedo confirmar la fecha exacta, pero fue en 1998.", False, A),
    ]

    def test_cases(self):
        for text, weighed, kind in self.WEIGHED:
            with self.subTest(text=text):
                case, sents, kinds, _ = score_eval.refusal_layout(text)
                got = score_eval.weighed_layout(case, sents, kinds, score_eval.REFUSAL_MODEL["english"])
                self.assertEqual(got, weighed)
                self.assertEqual(score_eval.read_refusal(text)[0], kind)

    def test_features_by_hand(self):
        text = "I cannot say for sure. However, the fee is 25 EUR."
        case, sents, kinds, _ = score_eval.refusal_layout(text)
        self.assertEqual((case, kinds), ("mixed", ["D", "C"]))
        f = score_eval.refusal_features(sents, kinds)
        want = {"first_decline": 1.0, "first_disclaimer": 0.0, "last_decline": 0.0, "last_firm": 0.0,
                "contrast": 1.0, "content_share": 0.5, "content_digit": 1.0, "content_name": 0.0,
                "decline_precision": 1.0, "pointer": 0.0, "content_words": 0.05}      # however the fee is eur
        for k, v in want.items():
            self.assertAlmostEqual(f[k], v, msg=k)
        # the score is the logistic of bias + weights . features (0 words of the vocabulary here)
        m = {"bias": -1.0, "english": 0.1, "threshold": 0.5, "weights": {"contrast": 2.0, "c:fee": 1.0}}
        import math
        self.assertAlmostEqual(score_eval.refusal_score(f, m), 1 / (1 + math.exp(-(-1.0 + 2.0 + 1.0))))

    def test_english_share(self):
        for words, share in ((["the", "fee", "is", "low"], 0.25), (["die", "gebühr", "ist", "niedrig"], 0.0),
                             ([], 0.0), (["de", "kosten", "van", "het", "is", "in", "een"], 0.0)):
            self.assertEqual(score_eval.english_share(words), share)

    def test_never_weighs_the_other_languages_of_the_written_set(self):
        import refusal_data as rd
        english = score_eval.REFUSAL_MODEL["english"]
        for r in rd.written():
            if r["lang"] != "en":
                case, sents, kinds, _ = score_eval.refusal_layout(r["text"])
                with self.subTest(text=r["text"]):
                    self.assertFalse(score_eval.weighed_layout(case, sents, kinds, english))

    @once_per_ci                                   # ~20 s: once per CI run (tests/lanes.py)
    def test_fit_reproduces_the_embedded_model(self):
        import contextlib
        import io
        import fit_refusal
        import refusal_data as rd
        if not (rd.available("refchecker") and rd.available("evouna")):
            self.skipTest("../shared/data is absent")
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(fit_refusal.main(["--check"]), 0)

    def test_code_block_reads_back_as_the_model(self):
        import ast
        import fit_refusal
        src = (ROOT / "score_eval.py").read_text(encoding="utf-8")
        block = fit_refusal.code_block(score_eval.REFUSAL_MODEL)
        self.assertIn(block, src)                      # what --embed writes is what is there
        self.assertEqual(ast.literal_eval(block.split("=", 1)[1].strip()), score_eval.REFUSAL_MODEL)

    def test_embedded_model_is_the_committed_fit(self):
        fit = json.loads((ROOT / "bench" / "refusal_fit.json").read_text(encoding="utf-8"))
        self.assertEqual(json.dumps(fit["model"], sort_keys=True), json.dumps(score_eval.REFUSAL_MODEL, sort_keys=True))


@once_per_ci
class DocFigures(unittest.TestCase):
    """docs/refusals.md's tables are what the committed labels give today."""

    def test_tables(self):
        import bench_refusal as br
        import refusal_data as rd
        doc = (ROOT / "docs" / "refusals.md").read_text(encoding="utf-8")
        names = {"reader": "built-in reader", "issue20_patterns": "issue 20 patterns", "exact_token": "exact token",
                 "prefix_list": "prefix list"}

        def row(name, f):
            def pct(a, b):
                return "%d/%d = %.3f" % (a, b, a / b)
            return "| %s | %s | %s | %d/%d" % (names[name], pct(f["recall"], f["refusals"]),
                                              pct(f["answers_as_refusals"], f["answers"]), f["partials_read"], f["partials"])
        figs = br.all_figures()
        keys = ["written"] + (["fit", "dev"] if "dev" in figs else [])
        if "dev" not in figs:
            self.skipTest("../shared/data is absent: only the written set is checked")
        for key in keys:
            for name, f in figs[key].items():
                with self.subTest(half=key, reader=name):
                    self.assertIn(row(name, f), doc)
        safety = figs["written_safety"]["reader"]
        self.assertIn("built-in reader %d/%d" % (safety["recall"], safety["refusals"]), doc)
        dev = figs["dev"]["reader"]
        self.assertEqual(dev["refusals"] + dev["answers"], 365)
        self.assertGreaterEqual(dev["refusals"] + dev["answers"], 300)       # issue 28: at least 300

    def test_label_files_hold_ids_and_labels_only(self):
        for name in ("refchecker", "evouna"):
            with open(ROOT / "bench" / "labels" / ("refusal_%s.jsonl" % name), encoding="utf-8") as fh:
                for line in fh:
                    rec = json.loads(line)
                    self.assertEqual(set(rec), {"id", "label"})
                    self.assertIn(rec["label"], (A, R, P))


if __name__ == "__main__":
    unittest.main()
