"""Fail closed: a generated corpus of bad inputs for both tools (issue 18).

Every case must exit 2 with a message naming the bad file (and its line where there is
one), print no traceback, and finish quickly.  The cases are generated from classes of
bad input crossed with every input slot that reads them (gold, trace, chunks, baseline,
qrels, run, gates file; mini_rag's config, gold, BEIR corpus, index, question), so a new
slot or class is one table row.  Both tools run in-process (their ``main``), so hundreds of
cases take seconds; only what needs a real process (a FIFO, stdin) uses one.
"""
import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import score_eval  # noqa: E402
from mini_rag.commands import cli  # noqa: E402
from mini_rag.indexing import index as index_mod  # noqa: E402
from mini_rag.config import DEFAULTS, RANGES  # noqa: E402
from mini_rag.errors import MiniRagError  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures", "gold")
CASE_SECONDS = 10.0

GOLD = {"qid": "Q1", "question": "How many days?", "answerable": True,
        "gold_claim_substr": ["within 30 days"], "gold_citations": ["refund-policy#p1"],
        "category": "c"}
TRACE = {"qid": "Q1", "retrieved_ids": ["refund-policy#p1"], "retrieved_scores": [1.0],
         "answer_json": {"claim": "within 30 days", "citations": ["refund-policy#p1"]}}
CHUNK = {"id": "refund-policy#p1", "text": "within 30 days"}
BEIR = {"_id": "d1", "title": "T", "text": "Refunds within 30 days."}


def bad_json_lines(row):
    """(name, line text) pairs: one bad line per class, built around a good ``row``."""
    key = sorted(row)[0]
    out = [
        ("deep-array", "[" * 100000),
        ("deep-object", '{"a":' * 50000),
        ("deep-in-field", json.dumps(dict(row, extra=None)).replace("null", "[" * 5000 + "]" * 5000)),
        ("surrogate-value", json.dumps(dict(row, **{key: "x\ud800"}), ensure_ascii=True)),
        ("surrogate-key", json.dumps(dict(row, **{"\udc80": 1}), ensure_ascii=True)),
        ("big-int", json.dumps(dict(row, extra=None)).replace("null", "9" * 400)),
        ("huge-int", json.dumps(dict(row, extra=None)).replace("null", "9" * 5000)),
        ("not-utf8", json.dumps(row)[:-1] + ', "x": "\udcff"}'),
        ("truncated", json.dumps(row)[:-3]),
        ("array-row", json.dumps([row])),
        ("string-row", '"just a string"'),
        ("number-row", "12"),
        ("null-byte", "\x00" + json.dumps(row)),
        ("garbage", "{{{{not json"),
    ]
    return out


def write(path, text, mode="w"):
    if isinstance(text, str):
        data = text.encode("utf-8", "surrogateescape")
    else:
        data = text
    with open(path, "wb") as fh:
        fh.write(data)
    return path


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="badinputs_")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def run_main(self, main, argv):
        out, err = io.StringIO(), io.StringIO()
        t0 = time.monotonic()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in argv])
        return code, out.getvalue(), err.getvalue(), time.monotonic() - t0

    def assert_input_error(self, main, argv, names, line=None):
        code, _, err, took = self.run_main(main, argv)
        self.assertEqual(code, 2, err)
        self.assertNotIn("Traceback", err)
        self.assertNotIn("internal error", err)
        self.assertIn(names, err)
        if line is not None:
            self.assertIn("%s:%d:" % (names, line), err)
        self.assertLess(took, CASE_SECONDS)
        return err


class ScorerBadInputs(Base):
    """score_eval.py: every JSONL slot x every bad-line class, special files, options."""

    def good(self):
        g = write(self.path("gold.jsonl"), json.dumps(GOLD) + "\n")
        t = write(self.path("trace.jsonl"), json.dumps(TRACE) + "\n")
        c = write(self.path("chunks.jsonl"), json.dumps(CHUNK) + "\n")
        return g, t, c

    def test_bad_lines_in_every_jsonl_slot(self):
        n = 0
        for slot, row in (("gold", GOLD), ("trace", TRACE), ("chunks", CHUNK)):
            for name, line in bad_json_lines(row):
                g, t, c = self.good()
                target = {"gold": g, "trace": t, "chunks": c}[slot]
                # the bad line is line 2, after a good one
                write(target, json.dumps(row) + "\n" + line + "\n")
                with self.subTest(slot=slot, case=name):
                    self.assert_input_error(score_eval.main, ["--gold", g, "--trace", t, "--chunks", c,
                                                              "--gates", "precision=0"], target, 2)
                n += 1
        self.assertEqual(n, 42)

    def test_long_line(self):
        for slot in ("gold", "trace", "chunks", "qrels", "run"):
            g, t, c = self.good()
            q = write(self.path("q.txt"), "Q1 0 d1 1\n")
            r = write(self.path("r.txt"), "Q1 Q0 d1 1 1.5 x\n")
            target = {"gold": g, "trace": t, "chunks": c, "qrels": q, "run": r}[slot]
            with open(target, "a", encoding="utf-8") as fh:
                fh.write("x" * 5000 + "\n")
            argv = (["--qrels", q, "--run", r] if slot in ("qrels", "run")
                    else ["--gold", g, "--trace", t, "--chunks", c])
            gate = "P@5=0" if slot in ("qrels", "run") else "precision=0"   # IR mode takes IR gates only
            with self.subTest(slot=slot):
                err = self.assert_input_error(score_eval.main, argv + ["--max-line-bytes", "1000",
                                                                       "--gates", gate], target, 2)
                self.assertIn("line longer than 1000 bytes", err)

    def test_special_files_as_inputs(self):
        fifo = self.path("fifo")
        os.mkfifo(fifo)
        specials = [("fifo", fifo, "a FIFO"), ("folder", self.dir, "a folder"),
                    ("missing", self.path("missing.jsonl"), "No such file")]
        if os.path.exists("/dev/zero"):
            specials.append(("dev-zero", "/dev/zero", "a character device"))
        g, t, c = self.good()
        base = write(self.path("base.json"), "{}")
        for name, special, why in specials:
            for opt in ("--gold", "--trace", "--chunks", "--baseline", "--gates-file"):
                argv = {"--gold": g, "--trace": t}
                argv[opt] = special
                flat = [x for kv in argv.items() for x in kv]
                if opt != "--gates-file":
                    flat += ["--gates", "precision=0"]
                with self.subTest(special=name, option=opt):
                    err = self.assert_input_error(score_eval.main, flat, special)
                    self.assertIn(why, err)
        del base

    def test_empty_and_structural(self):
        g, t, _ = self.good()
        empty = write(self.path("empty.jsonl"), "")
        cases = [
            (["--gold", empty, "--trace", t], empty, "no gold items"),
            (["--gold", g, "--trace", write(self.path("t2.jsonl"), json.dumps(dict(TRACE, retrieved_scores=[float("nan")])) + "\n")],
             self.path("t2.jsonl"), "retrieved_scores"),
            (["--gold", g, "--trace", write(self.path("t3.jsonl"), json.dumps(dict(TRACE, retrieved_scores=[1e999])) + "\n")],
             self.path("t3.jsonl"), "retrieved_scores"),
            (["--gold", write(self.path("g2.jsonl"), json.dumps(dict(GOLD, qid=7)) + "\n"), "--trace", t],
             self.path("g2.jsonl"), "qid"),
            (["--gold", write(self.path("g3.jsonl"), json.dumps(dict(GOLD, category=["x"])) + "\n"), "--trace", t],
             self.path("g3.jsonl"), "category"),
        ]
        for argv, names, what in cases:
            with self.subTest(what=what, file=names):
                err = self.assert_input_error(score_eval.main, argv + ["--gates", "precision=0"], names)
                self.assertIn(what, err)

    def test_bad_baselines(self):
        g, t, _ = self.good()
        cases = [("deep", "[" * 100000), ("not-json", "nope"), ("list", "[]"),
                 ("no-items", '{"metrics": {}}'), ("bad-flags", '{"metrics": {}, "items": {"Q1": 5}}'),
                 ("big-int", '{"metrics": {}, "items": {}, "x": %s}' % ("9" * 5000)),
                 ("surrogate", '{"metrics": {}, "items": {"\\ud800": "t"}}'),
                 ("not-utf8", b'{"metrics": {}, "items": {"\xff": "t"}}')]
        for name, text in cases:
            b = write(self.path("base-%s.json" % name), text)
            with self.subTest(case=name):
                self.assert_input_error(score_eval.main, ["--gold", g, "--trace", t, "--baseline", b,
                                                          "--gates", "precision=0"], b)

    def test_bad_gates_files(self):
        g, t, _ = self.good()
        cases = [("nan", "[baseline]\nprecision = { min = nan }\n", 2),
                 ("inf", "[baseline]\nprecision = { min = inf }\n", 2),
                 ("digits", "[baseline]\nprecision = { min = %s }\n" % ("9" * 5000), 2),
                 ("deep", "[baseline]\nx = %s\n" % ("[" * 3000 + "]" * 3000), None),
                 ("unknown-metric", "[baseline]\nprecison = { min = 0.5 }\n", 2),
                 ("no-bound", "[baseline]\nprecision = { message = 'x' }\n", 2),
                 ("alpha", "[regression]\nalpha = 2\n[baseline]\n", 2),
                 ("not-utf8", b"[baseline]\nprecision = { min = 0.5 } # \xff\n", None),
                 ("bad-toml", "[baseline\n", 1),
                 ("top-value", "x = 1\n[baseline]\n", 1)]
        for name, text, line in cases:
            f = write(self.path("gates-%s.toml" % name), text)
            with self.subTest(case=name):
                self.assert_input_error(score_eval.main, ["--gold", g, "--trace", t, "--gates-file", f], f, line)

    def test_bad_trec_files(self):
        q = write(self.path("qrels.txt"), "Q1 0 d1 1\n")
        r = write(self.path("run.txt"), "Q1 Q0 d1 1 1.5 x\n")
        cases = [("qrels", "Q1 0 d2 %s\n" % ("9" * 5000)), ("qrels", "Q1 0 d2\n"), ("qrels", "Q1 0 d2 x\n"),
                 ("qrels", b"Q1 0 \xff 1\n"), ("run", "Q1 Q0 d2 1 nan x\n"), ("run", "Q1 Q0 d2 1 inf x\n"),
                 ("run", "Q1 Q0 d2 1\n"), ("run", "Q1 Q0 d1 2 1.0 x\n"), ("run", b"Q1 Q0 d\xfe 1 1 x\n")]
        for slot, line in cases:
            target = q if slot == "qrels" else r
            write(target, (b"Q1 0 d1 1\n" if slot == "qrels" else b"Q1 Q0 d1 1 1.5 x\n")
                  + (line if isinstance(line, bytes) else line.encode()))
            with self.subTest(slot=slot, line=line[:30]):
                self.assert_input_error(score_eval.main, ["--qrels", q, "--run", r, "--gates", "P@5=0"], target, 2)
            write(q, "Q1 0 d1 1\n")
            write(r, "Q1 Q0 d1 1 1.5 x\n")

    def test_bad_options(self):
        g, t, _ = self.good()
        for k in ("0", "-1", "1000000000", "99999999999999999999", "abc", "1,,2", "5,x", ""):
            with self.subTest(k=k):
                self.assert_input_error(score_eval.main, ["--gold", g, "--trace", t, "--k", k], "--k")
        for extra in (["--max-line-bytes", "0"], ["--gates", "precision=nan"], ["--gates", "precision=1e999"],
                      ["--refusal", " "]):
            with self.subTest(extra=extra):
                code, _, err, _ = self.run_main(score_eval.main, ["--gold", g, "--trace", t] + extra)
                self.assertEqual(code, 2, err)
                self.assertNotIn("Traceback", err)


class ScorerOutputs(Base):
    """Write errors are one line naming the path, exit 2; special targets are not clobbered."""

    def setUp(self):
        super().setUp()
        self.g = write(self.path("gold.jsonl"), json.dumps(GOLD) + "\n")
        self.t = write(self.path("trace.jsonl"), json.dumps(TRACE) + "\n")

    def score(self, *extra):
        return self.run_main(score_eval.main, ["--gold", self.g, "--trace", self.t, "--gates", "precision=0"]
                             + list(extra))

    def test_write_errors(self):
        blocker = write(self.path("file"), "x")
        cases = [("folder", self.dir), ("under-a-file", os.path.join(blocker, "r.json"))]
        if os.path.exists("/dev/full"):
            cases.append(("disk-full", "/dev/full"))
        for name, target in cases:
            for opt in ("--out", "--items", "--markdown"):
                with self.subTest(case=name, option=opt):
                    code, _, err, _ = self.score(opt, target)
                    self.assertEqual(code, 2, err)
                    self.assertIn(target, err)
                    self.assertNotIn("Traceback", err)

    def test_special_targets_written_in_place(self):
        link = self.path("link.json")
        real = self.path("real.json")
        os.symlink("real.json", link)
        code, out, _, _ = self.score("--out", link, "--full")
        self.assertEqual(code, 0)
        self.assertTrue(os.path.islink(link))
        with open(real, encoding="utf-8") as fh:
            self.assertEqual(fh.read(), out)
        self.assertEqual(stat.S_IMODE(os.stat(real).st_mode), 0o666 & ~_umask())
        code, _, _, _ = self.score("--out", os.devnull)
        self.assertEqual(code, 0)
        self.assertTrue(stat.S_ISCHR(os.stat(os.devnull).st_mode))

    def test_dash_is_stdin_once(self):
        import subprocess
        with open(self.t, "rb") as fh:
            proc = subprocess.run([sys.executable, os.path.join(ROOT, "score_eval.py"), "--gold", self.g,
                                   "--trace", "-", "--gates", "precision=0"], stdin=fh, cwd=self.dir,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["counts"]["matched_items"], 1)
        code, _, err, _ = self.run_main(score_eval.main, ["--gold", "-", "--trace", "-"])
        self.assertEqual((code, err), (2, "usage: only one input can be - (stdin), got --gold, --trace\n"))

    def test_dash_is_stdout(self):
        code, out, _, _ = self.score("--out", "-")
        self.assertEqual(code, 0)
        self.assertEqual(json.loads(out)["schema"], "score_eval/1")
        code, out, _, _ = self.score("--markdown", "-")
        self.assertTrue(out.startswith("# score_eval report"), out[:40])


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class Inert(Base):
    def test_markdown_escapes_input_text(self):
        g = write(self.path("gold.jsonl"), json.dumps(dict(GOLD, qid="a|b<script>`x`\n# h", category="c|<i>&"))
                  + "\n" + json.dumps(GOLD) + "\n")
        t = write(self.path("trace.jsonl"), json.dumps(TRACE) + "\n")     # Q1 scored, the hostile item missing
        md = self.path("r.md")
        code, _, _, _ = self.run_main(score_eval.main, ["--gold", g, "--trace", t, "--markdown", md,
                                                        "--gates", "precision=0"])
        self.assertEqual(code, 0)
        with open(md, encoding="utf-8") as fh:
            text = fh.read()
        self.assertIn("| a\\|b&lt;script&gt;\\`x\\` \\# h | c\\|&lt;i&gt;&amp; |", text)
        self.assertNotIn("<script>", text)
        self.assertNotIn("\n# h", text)

    def test_terminal_escapes_control_characters(self):
        self.assertEqual(score_eval.terminal_safe("a\x1b[31mb\x9bc\td\ne\x7f"), "a\\x1b[31mb\\x9bc\td\ne\\x7f")
        g = write(self.path("gold.jsonl"), json.dumps(GOLD) + "\n")
        t = write(self.path("trace.jsonl"), json.dumps(TRACE) + "\n" + json.dumps(dict(TRACE, qid="\x1b]0;pwned\x07"))
                  + "\n")
        code, _, err, _ = self.run_main(score_eval.main, ["--gold", g, "--trace", t, "--gates", "precision=0"])
        self.assertEqual(code, 0)
        self.assertNotIn("\x1b", err)
        self.assertIn("\\x1b]0;pwned\\x07", err)


    def test_mini_rag_terminal_output_escaped(self):
        corpus = self.path("corpus")
        os.mkdir(corpus)
        write(os.path.join(corpus, "a.md"), "# Refunds\n\nRefunds \x1b[31mwithin 30 days\x9b of purchase.\n")
        for extra in ([], ["--json"]):
            code, out, err, _ = self.run_main(cli.main, ["search", "refunds", "--corpus", corpus,
                                                         "--index", self.path("i.json")] + extra)
            with self.subTest(extra=extra):
                self.assertEqual(code, 0, err)
                self.assertIn("within 30 days", out)
                self.assertNotIn("\x1b", out)
                self.assertNotIn("\x9b", out)
                if extra:
                    self.assertIn("\x1b[31mwithin", json.loads(out)[0]["text"])


class InternalErrors(Base):
    def test_crash_is_exit_3_with_saved_traceback(self):
        g = write(self.path("gold.jsonl"), json.dumps(GOLD) + "\n")
        real = score_eval.run

        def boom(args):
            raise ZeroDivisionError("boom")
        score_eval.run = boom
        try:
            code, _, err, _ = self.run_main(score_eval.main, ["--gold", g, "--trace", g])
            code_dbg, _, err_dbg, _ = self.run_main(score_eval.main, ["--gold", g, "--trace", g, "--debug"])
        finally:
            score_eval.run = real
        self.assertEqual(code, 3)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn("internal error", err)
        self.assertIn("ZeroDivisionError", err)
        saved = err.split("traceback in ")[1].strip()
        self.addCleanup(os.unlink, saved)
        with open(saved, encoding="utf-8") as fh:
            self.assertIn("Traceback", fh.read())
        self.assertEqual(code_dbg, 3)
        self.assertIn("Traceback", err_dbg)

    def test_mini_rag_crash_is_exit_3(self):
        import mini_rag.commands.cmd_gold as cg
        real = cg.main_check_gold

        def boom(args):
            raise KeyError("boom")
        cg.main_check_gold = boom
        try:
            parser_args = ["--debug", "check-gold", "x"]
            code, _, err, _ = self.run_main(cli.main, parser_args)
        finally:
            cg.main_check_gold = real
        self.assertEqual(code, 3)
        self.assertIn("KeyError", err)


class MiniRagBadInputs(Base):
    """python -m mini_rag: config values, gold files, BEIR corpora, indexes, questions."""

    def config(self, text):
        return write(self.path("config.toml"), text)

    def test_ranges_cover_real_keys_and_defaults(self):
        for (section, key), (lo, hi) in RANGES.items():
            with self.subTest(key="%s.%s" % (section, key)):
                self.assertLessEqual(lo, DEFAULTS[section][key])
                self.assertLessEqual(DEFAULTS[section][key], hi)

    def test_config_numbers(self):
        n = 0
        for section, table in sorted(DEFAULTS.items()):
            for key, default in sorted(table.items()):
                if isinstance(default, bool) or not isinstance(default, (int, float)):
                    continue
                lo, hi = RANGES.get((section, key), (-1e9, 1e9))
                bad = ["nan", "inf", "-inf", "9" * 5000] if isinstance(default, float) else ["9" * 5000]
                bad += [repr(type(default)(lo) - 1), repr(type(default)(hi) + (1 if isinstance(default, int) else 0.5))]
                for value in bad:
                    cfg = self.config("[%s]\n%s = %s\n" % (section, key, value))
                    with self.subTest(key="%s.%s" % (section, key), value=value[:10]):
                        self.assert_input_error(cli.main, ["ask", "what?", "--config", cfg], cfg)
                    n += 1
        self.assertGreater(n, 100)

    def test_config_files(self):
        fifo = self.path("fifo.toml")
        os.mkfifo(fifo)
        cases = [("fifo", fifo), ("folder", self.dir),
                 ("deep", self.config("[answer]\nsynonym_groups = %s\n" % ("[" * 3000 + "]" * 3000))),
                 ("not-utf8", write(self.path("c2.toml"), b"[answer]\nrefusal = '\xff'\n")),
                 ("unknown", write(self.path("c3.toml"), "[answr]\n")),
                 ("type", write(self.path("c4.toml"), "[answer]\nmax_sentences = 'six'\n"))]
        for name, cfg in cases:
            with self.subTest(case=name):
                self.assert_input_error(cli.main, ["ask", "what?", "--config", cfg], cfg)

    def test_gold_files(self):
        for command in ("run", "check-gold", "perturb"):
            for name, line in bad_json_lines(GOLD):
                gold = write(self.path("gold.jsonl"), json.dumps(GOLD) + "\n" + line + "\n")
                argv = {"run": ["run", "--gold", gold, "--out", self.path("t.jsonl")],
                        "check-gold": ["check-gold", gold, "--corpus", os.path.join(FIX, "corpus")],
                        "perturb": ["perturb", gold, "--out", self.path("p.jsonl")]}[command]
                with self.subTest(command=command, case=name):
                    self.assert_input_error(cli.main, argv, gold, 2)
        empty = write(self.path("empty.jsonl"), "")
        self.assert_input_error(cli.main, ["check-gold", empty, "--corpus", os.path.join(FIX, "corpus")], empty)
        long_q = write(self.path("longq.jsonl"), json.dumps(dict(GOLD, question="why " * 1000)) + "\n")
        self.assert_input_error(cli.main, ["run", "--gold", long_q, "--out", self.path("t.jsonl")], long_q, 1)

    def test_beir_corpus(self):
        for name, line in bad_json_lines(BEIR):
            corpus = write(self.path("corpus.jsonl"), json.dumps(BEIR) + "\n" + line + "\n")
            with self.subTest(case=name):
                self.assert_input_error(cli.main, ["index", "--corpus", corpus, "--index", self.path("i.json")],
                                        corpus, 2)

    def test_questions(self):
        fifo = self.path("q.fifo")
        os.mkfifo(fifo)
        qfile = write(self.path("q.txt"), "why " * 600)
        cases = [(["ask", "why " * 600], "longer than 2000 characters"),
                 (["ask", "   "], "must not be empty"),
                 (["ask"], "not neither"),
                 (["ask", "x", "--question-file", qfile], "not both"),
                 (["ask", "--question-file", qfile], qfile),
                 (["ask", "--question-file", fifo], fifo),
                 (["ask", "--question-file", self.path("none.txt")], self.path("none.txt")),
                 (["search", "why " * 600], "longer than 2000 characters"),
                 (["search", "x", "--k", "0"], "--k must be from 1 to 10000"),
                 (["search", "x", "--k", "1000000000"], "--k must be from 1 to 10000")]
        for argv, what in cases:
            with self.subTest(argv=argv[:3]):
                self.assert_input_error(cli.main, argv, what)


class BadIndexes(Base):
    """Hand-made indexes whose body matches its hash but whose structure is wrong."""

    def setUp(self):
        super().setUp()
        corpus = os.path.join(FIX, "corpus")
        self.cfg = write(self.path("c.toml"), '[corpus]\npath = "%s"\n[index]\npath = "%s"\n'
                         % (corpus, self.path("index.json")))
        code, _, err, _ = self.run_main(cli.main, ["index", "--config", self.cfg])
        self.assertEqual(code, 0, err)
        # format 1 (one JSON body line after the manifest), which is still read: its body is
        # what a hand-made or buggy index gets wrong (format 2's sections are checked by hash)
        first, body = index_mod.index_bytes(index_mod.load_index(self.path("index.json"))).split(b"\n")[:2]
        self.manifest, self.body = json.loads(first), json.loads(body)

    def write_index(self, manifest, body_line):
        manifest = dict(manifest, body_sha256=hashlib.sha256(body_line).hexdigest())
        write(self.path("index.json"), json.dumps(manifest).encode() + b"\n" + body_line + b"\n")

    def test_structures(self):
        b = self.body
        chunk0 = b["chunks"][0]
        cases = {
            "body-list": [],
            "no-vocabulary": {k: v for k, v in b.items() if k != "vocabulary"},
            "rows-short": dict(b, chunk_terms=b["chunk_terms"][:-1]),
            "term-id-out-of-range": dict(b, chunk_terms=[[10 ** 6, 1]] + b["chunk_terms"][1:]),
            "negative-tf": dict(b, chunk_terms=[[0, -1]] + b["chunk_terms"][1:]),
            "odd-row": dict(b, chunk_terms=[[0]] + b["chunk_terms"][1:]),
            "string-in-row": dict(b, chunk_terms=[["0", 1]] + b["chunk_terms"][1:]),
            "chunk-missing-key": dict(b, chunks=[{k: v for k, v in chunk0.items() if k != "text"}] + b["chunks"][1:]),
            "chunk-extra-key": dict(b, chunks=[dict(chunk0, evil=1)] + b["chunks"][1:]),
            "chunk-wrong-type": dict(b, chunks=[dict(chunk0, page="1")] + b["chunks"][1:]),
            "chunk-not-object": dict(b, chunks=[1] + b["chunks"][1:]),
            "vocab-not-strings": dict(b, vocabulary=[1] + b["vocabulary"][1:]),
            "vocab-duplicates": dict(b, vocabulary=[b["vocabulary"][0]] + b["vocabulary"][:-1]),
        }
        lines = [(name, json.dumps(body).encode()) for name, body in cases.items()]
        lines += [("deep", b"[" * 100000), ("surrogate", json.dumps(dict(b, vocabulary=["\ud800"])).encode()),
                  ("big-int", json.dumps(b).replace('"chunk_terms": [[', '"chunk_terms": [[' + "9" * 5000 + ", 1], [",
                                                    1).encode())]
        for name, line in lines:
            self.write_index(self.manifest, line)
            with self.subTest(case=name):
                # loading names the file and says what is wrong ...
                with self.assertRaises(MiniRagError) as cm:
                    index_mod.load_index(self.path("index.json"))
                self.assertIn(self.path("index.json"), str(cm.exception))
                # ... and a command with the corpus at hand refuses it, never uses or silently
                # replaces it: 'index --force' rebuilds it (issue 33)
                code, _, err, _ = self.run_main(cli.main, ["search", "refund", "--config", self.cfg])
                self.assertEqual(code, 2, err)
                self.assertIn(self.path("index.json"), err)
                self.assertIn("index --force", err)
                self.assertNotIn("Traceback", err)
        for key, value in (("k1", float("nan")), ("k1", -1), ("b", 2), ("b", "x")):
            scoring = dict(self.manifest["scoring"], **{key: value})
            self.write_index(dict(self.manifest, scoring=scoring), json.dumps(b).encode())
            with self.subTest(scoring=key, value=value):
                code, _, err, _ = self.run_main(cli.main, ["search", "refund", "--config", self.cfg])
                self.assertIn(code, (0, 2), err)     # a stale setting rebuilds; a bad one is refused
                self.assertNotIn("Traceback", err)

    def test_gzip_bomb_stops_at_the_limit(self):
        bomb = self.path("bomb.json.gz")
        with gzip.open(bomb, "wb") as fh:
            fh.write(json.dumps(self.manifest).encode() + b"\n")
            chunk = b"0" * (1 << 20)
            for _ in range(8):
                fh.write(chunk)
        old = index_mod.MAX_INDEX_BYTES
        index_mod.MAX_INDEX_BYTES = 1 << 20
        try:
            with self.assertRaises(Exception) as cm:
                index_mod.load_index(bomb)
        finally:
            index_mod.MAX_INDEX_BYTES = old
        self.assertIn("%s:2: index line longer than %d bytes" % (bomb, 1 << 20), str(cm.exception))


    def test_gzip_bomb_format2_stops_at_its_manifest(self):
        # a real format 2 index, gzip'd with 64 MiB of zeros after it: decompression stops
        # past the size its manifest describes (the last section's end), long before 64 MiB
        with open(self.path("index.json"), "rb") as fh:
            data = fh.read()
        bomb = self.path("bomb2.json.gz")
        with gzip.open(bomb, "wb") as fh:
            fh.write(data)
            for _ in range(64):
                fh.write(b"\0" * (1 << 20))
        with self.assertRaises(MiniRagError) as cm:
            index_mod.load_index(bomb)
        self.assertIn("%s: decompresses to more than the" % bomb, str(cm.exception))
        with gzip.open(self.path("ok.json.gz"), "wb") as fh:     # the same index, intact, loads
            fh.write(data)
        self.assertGreater(index_mod.load_index(self.path("ok.json.gz")).num_chunks, 0)


class CorpusFolders(Base):
    def test_unsafe_entries_skipped_with_a_warning(self):
        corpus = self.path("corpus")
        os.mkdir(corpus)
        write(os.path.join(corpus, "a.md"), "# A\n\nRefunds within 30 days.\n")
        outside = write(self.path("secret.md"), "secret words\n")
        os.symlink(outside, os.path.join(corpus, "out.md"))
        os.symlink("nowhere.md", os.path.join(corpus, "dangling.md"))
        os.symlink("loop.md", os.path.join(corpus, "loop.md"))
        os.symlink("a.md", os.path.join(corpus, "inside.md"))
        os.mkfifo(os.path.join(corpus, "fifo.md"))
        os.symlink("..", os.path.join(corpus, "up"))
        code, out, err, took = self.run_main(cli.main, ["search", "secret", "--corpus", corpus,
                                                        "--index", self.path("i.json"), "--json"])
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out), [])
        for name in ("out.md", "dangling.md", "loop.md", "fifo.md", "up"):
            with self.subTest(entry=name):
                self.assertIn("%s: skipped" % os.path.join(corpus, name), err)
        self.assertNotIn("inside.md: skipped", err)
        self.assertLess(took, CASE_SECONDS)


if __name__ == "__main__":
    unittest.main()
