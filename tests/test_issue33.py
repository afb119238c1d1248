"""Issue 33: nothing lost, nothing hangs, the server outlives hostile clients.

One class per kind of finding; each test is a table of cases whose expected outcome
(exit status, which file must be unchanged, what the message names) follows from the
rule the issue states, not from what the code happens to print.
"""
import contextlib
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

FIX = os.path.join(ROOT, "tests", "fixtures", "gold")
GOLD = {"qid": "Q1", "question": "How many days?", "answerable": True,
        "gold_claim_substr": ["within 30 days"], "gold_citations": ["refund-policy#p1"], "category": "c"}
TRACE = {"qid": "Q1", "retrieved_ids": ["refund-policy#p1"], "retrieved_scores": [1.0],
         "answer_json": {"claim": "within 30 days", "citations": ["refund-policy#p1"]}}
CHUNK = {"id": "refund-policy#p1", "text": "within 30 days"}


def sha(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="issue33_")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, data):
        p = self.path(name)
        with open(p, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        return p

    def run_main(self, main, argv):
        out, err = io.StringIO(), io.StringIO()
        t0 = time.monotonic()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in argv])
        return code, out.getvalue(), err.getvalue(), time.monotonic() - t0

    def run_proc(self, argv, stdin=None, timeout=10.0, cwd=None):
        """``(exit status, stderr, seconds)`` of a process; a hang is killed and fails."""
        import subprocess
        t0 = time.monotonic()
        try:
            p = subprocess.run(argv, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout, cwd=cwd or self.dir)
        except subprocess.TimeoutExpired:
            self.fail("hung: %s did not finish in %.0f s" % (" ".join(map(str, argv[1:4])), timeout))
        return p.returncode, p.stderr.decode("utf-8", "replace"), time.monotonic() - t0

    def inputs(self):
        g = self.write("gold.jsonl", json.dumps(GOLD) + "\n")
        t = self.write("trace.jsonl", json.dumps(TRACE) + "\n")
        c = self.write("chunks.jsonl", json.dumps(CHUNK) + "\n")
        gates = self.write("gates.toml", "[baseline]\nprecision = { min = 0.0 }\n")
        return g, t, c, gates


class OutputPolicy(Base):
    """Findings 1, 2 and 6: an output never destroys an input, another output, a foreign file
    or a device node."""

    def test_scorer_output_on_an_input_or_another_output(self):
        # (output flags -> which file they name, the file that must survive unchanged)
        table = [
            ("out-is-gold", ["--out", "G"], "G"),
            ("items-is-trace", ["--items", "T"], "T"),
            ("markdown-is-gates", ["--markdown", "S"], "S"),
            ("html-is-chunks", ["--html", "C"], "C"),
            ("csv-is-gold", ["--csv", "G"], "G"),
            ("junit-is-trace", ["--junit", "T"], "T"),
            ("metrics-csv-is-gates", ["--metrics-csv", "S"], "S"),
            ("manifest-is-gold", ["--out", "r.json", "--manifest", "G"], "G"),
            ("out-is-symlink-to-gold", ["--out", "L"], "G"),
            ("two-outputs-one-path", ["--out", "r2.json", "--markdown", "r2.json"], None),
            ("items-and-csv-one-path", ["--items", "x.out", "--csv", "x.out"], None),
        ]
        for name, flags, keep in table:
            with self.subTest(case=name):
                g, t, c, gates = self.inputs()
                link = self.path("link.jsonl")
                if os.path.lexists(link):
                    os.unlink(link)
                os.symlink(g, link)
                names = {"G": g, "T": t, "C": c, "S": gates, "L": link}
                argv = ["--gold", g, "--trace", t, "--chunks", c, "--gates-file", gates]
                argv += [names.get(f, self.path(f) if f.endswith((".json", ".out")) else f) for f in flags]
                before = {p: sha(p) for p in (g, t, c, gates)}
                code, _, err, _ = self.run_main(score_eval.main, argv)
                self.assertEqual(code, 2, err)
                self.assertEqual({p: sha(p) for p in before}, before)
                if keep is not None:
                    self.assertIn(os.path.basename(names[keep]), err)
                else:
                    self.assertIn("also the output", err)
                    self.assertFalse(os.path.exists(self.path(flags[1])))

    def test_foreign_file_needs_force(self):
        # (flag, existing content, replaced without --force?)
        table = [
            ("--out", "precious notes\n", False),
            ("--markdown", "# my notes\n", False),
            ("--items", '{"qid": "x", "text": "mine"}\n', False),
            ("--html", "<html>mine</html>\n", False),
            ("--out", "", True),                     # an empty file holds nothing to lose
        ]
        for flag, content, replaced in table:
            with self.subTest(flag=flag, content=content):
                g, t, c, gates = self.inputs()
                target = self.write("existing.out", content)
                argv = ["--gold", g, "--trace", t, "--gates-file", gates, flag, target]
                code, _, err, _ = self.run_main(score_eval.main, argv)
                if replaced:
                    self.assertEqual(code, 0, err)
                    continue
                self.assertEqual(code, 2, err)
                self.assertIn("--force", err)
                with open(target) as fh:
                    self.assertEqual(fh.read(), content)
                code, _, err, _ = self.run_main(score_eval.main, argv + ["--force"])
                self.assertEqual(code, 0, err)
                with open(target) as fh:
                    self.assertNotEqual(fh.read(), content)

    def test_same_kind_is_replaced(self):
        g, t, c, gates = self.inputs()
        argv = ["--gold", g, "--trace", t, "--gates-file", gates, "--out", self.path("r.json"),
                "--items", self.path("i.jsonl"), "--markdown", self.path("r.md"), "--html", self.path("r.html"),
                "--junit", self.path("r.xml"), "--csv", self.path("i.csv"), "--metrics-csv", self.path("m.csv"),
                "--manifest", self.path("m.json")]
        for run in range(2):                       # the second run replaces its own outputs
            code, _, err, _ = self.run_main(score_eval.main, argv)
            self.assertEqual(code, 0, err)

    def special(self):
        dev = self.path("chardev")
        try:
            os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))   # a copy of /dev/null
        except (OSError, AttributeError):
            self.skipTest("cannot create a device node here")
        return dev

    def test_manifest_on_a_device_keeps_the_device(self):
        dev = self.special()
        g, t, c, gates = self.inputs()
        for flags in (["--manifest", dev, "--out", self.path("r.json")], ["--out", dev, "--manifest", self.path("m.json")]):
            with self.subTest(flags=flags):
                code, _, err, _ = self.run_main(score_eval.main, ["--gold", g, "--trace", t, "--gates-file", gates]
                                                + flags)
                self.assertIn(code, (0, 2), err)
                self.assertTrue(stat.S_ISCHR(os.lstat(dev).st_mode), "the device node was replaced")

    def test_partial_on_a_fifo_is_refused_not_hung(self):
        fifo = self.path("fifo")
        os.mkfifo(fifo)
        g, t, c, gates = self.inputs()
        code, err, took = self.run_proc([sys.executable, os.path.join(ROOT, "score_eval.py"), "--gold", g,
                                         "--trace", t, "--partial", fifo])
        self.assertEqual(code, 2, err)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.assertLess(took, 10)

    def test_mini_rag_outputs(self):
        corpus = os.path.join(FIX, "corpus")
        doc = os.path.join(self.dir, "corpus")
        shutil.copytree(corpus, doc)
        first_doc = os.path.join(doc, sorted(os.listdir(doc))[0])
        gold = self.path("g.jsonl")
        shutil.copy(os.path.join(FIX, "gold.jsonl"), gold)
        idx = self.path("index.json.gz")
        common = ["--corpus", doc, "--quiet"]
        # (argv, the file that must survive unchanged, what the message names)
        table = [
            ("index-on-gold", ["index", "--index", gold] + common, gold, "not a mini_rag index"),
            ("index-on-corpus-doc", ["index", "--index", first_doc] + common, first_doc, "is the input"),
            ("run-out-is-gold", ["run", "--gold", gold, "--out", gold, "--index", idx] + common, gold, "is the input"),
            ("run-out-is-index", ["run", "--gold", gold, "--out", idx, "--index", idx] + common, gold, "also the output"),
            ("perturb-out-is-gold", ["perturb", gold, "--out", gold], gold, "is the input"),
            ("ask-index-on-gold", ["ask", "What is the refund window?", "--index", gold] + common, gold,
             "not a mini_rag index"),
        ]
        for name, argv, keep, says in table:
            with self.subTest(case=name):
                before = sha(keep)
                code, _, err, _ = self.run_main(cli.main, argv)
                self.assertEqual(code, 2, err)
                self.assertEqual(sha(keep), before)
                self.assertIn(says, err)
                self.assertIn(keep if says != "also the output" else idx, err)
        # --force replaces a foreign file at the index path; never a corpus document
        foreign = self.write("notes.txt", "mine\n")
        code, _, err, _ = self.run_main(cli.main, ["index", "--index", foreign] + common)
        self.assertEqual(code, 2, err)
        code, _, err, _ = self.run_main(cli.main, ["index", "--index", foreign, "--force"] + common)
        self.assertEqual(code, 0, err)
        code, _, err, _ = self.run_main(cli.main, ["index", "--index", first_doc, "--force"] + common)
        self.assertEqual(code, 2, err)


def _yes(line=b"y\n"):
    """A process writing ``line`` forever (like yes(1)); its stdout is the endless stdin."""
    import subprocess
    return subprocess.Popen([sys.executable, "-c", "import sys\nb=%r*4096\nw=sys.stdout.buffer.write\n"
                             "try:\n    while True: w(b)\nexcept Exception: pass" % line],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


class BoundedReaders(Base):
    """Findings 7, 8 and 9: endless streams, special files, malformed partials, huge or binary
    corpus files: each exit 2 naming the input within seconds, never a hang or exit 3."""

    SCORER = [sys.executable, os.path.join(ROOT, "score_eval.py")]
    MINI = [sys.executable, "-m", "mini_rag"]

    def test_endless_stdin(self):
        g, t, c, gates = self.inputs()
        # (argv, stdin: "yes" = endless lines, "zero" = endless bytes without a line end)
        table = [
            (self.SCORER + ["--gold", "-", "--trace", t, "--gates", "none"], "yes"),
            (self.SCORER + ["--gold", g, "--trace", "-", "--gates", "none"], "zero"),
            (self.SCORER + ["--qrels", "-", "--run", t, "--gates", "none"], "yes"),
            (self.SCORER + ["--gold", g, "--trace", "-", "--gates", "none"], "yes"),
            (self.MINI + ["run", "--gold", "-", "--out", self.path("o.jsonl")], "yes"),
            (self.MINI + ["check-gold", "-"], "zero"),
        ]
        for argv, source in table:
            with self.subTest(argv=argv[2:5], stdin=source):
                if source == "yes":
                    gen = _yes()
                    stdin = gen.stdout
                else:
                    gen, stdin = None, open("/dev/zero", "rb")
                try:
                    code, err, took = self.run_proc(argv, stdin=stdin, timeout=20, cwd=ROOT)
                finally:
                    stdin.close()
                    if gen is not None:
                        gen.kill()
                        gen.wait()
                self.assertEqual(code, 2, err[-300:])
                self.assertIn("-:", err)
                self.assertRegex(err, r"stopped reading|\.\.\. and \d+ more")
                self.assertNotIn("Traceback", err)

    def partial(self):
        g, t, c, gates = self.inputs()
        p = self.path("p1.json")
        code, _, err, _ = self.run_main(score_eval.main, ["--gold", g, "--trace", t, "--gates", "none", "--partial", p])
        self.assertEqual(code, 0, err)
        with open(p) as fh:
            return g, json.load(fh)

    def test_merge_partials_are_validated(self):
        g, good = self.partial()
        fifo = self.path("fifo.json")
        os.mkfifo(fifo)

        def edit(**kw):
            d = json.loads(json.dumps(good))
            for k, v in kw.items():
                if "." in k:
                    a, b = k.split(".")
                    d[a][b] = v
                else:
                    d[k] = v
            return json.dumps(d)
        field0 = dict(good["fields"][0])
        table = [
            ("gold-is-dev-zero", edit(**{"args.gold": "/dev/zero"}), "not a regular file"),
            ("gold-is-fifo", edit(**{"args.gold": fifo}), "not a regular file"),
            ("args-not-object", edit(args=[1, 2]), "args must be an object"),
            ("ks-strings", edit(ks=["5"]), "ks must be"),
            ("items-wrong-type", edit(items={"type": "d", "data": ""}), "items must be a packed array"),
            ("calls-not-base64", edit(calls={"type": "I", "data": "@@@"}), "malformed packed array"),
            ("field-key-list", edit(fields=[dict(field0, key=[1])]), "each field must be"),
            ("field-kind-unknown", edit(fields=[dict(field0, kind="tree")]), "each field must be"),
            ("field-values-type", edit(fields=[dict(field0, values={"type": "B" if field0["values"]["type"] != "B" else "b",
                                                                "data": "AA=="})]), "values of type"),
            ("item-out-of-range", edit(items={"type": "I", "data": "AAAAAQ=="}), "out of range"),
            ("stats-missing", edit(stats={}), "stats must hold"),
            ("notes-not-strings", edit(notes=[1]), "notes must be"),
            ("sha-not-hex", edit(gold_sha256="x"), "gold_sha256"),
            ("not-json", "{" * 10, "not a partial"),
            ("deep-json", "[" * 100000, "not a partial"),
        ]
        for name, text, says in table:
            with self.subTest(case=name):
                p = self.write("bad.json", text)
                code, err, took = self.run_proc(self.SCORER + ["merge", p, "--gates", "none"])
                self.assertEqual(code, 2, err)
                self.assertIn(p, err)
                self.assertIn(says, err)
        for special in (fifo, "/dev/zero"):
            with self.subTest(partial=special):
                code, err, took = self.run_proc(self.SCORER + ["merge", special, "--gates", "none"])
                self.assertEqual(code, 2, err)
                self.assertIn(special, err)

    def test_corpus_file_limits(self):
        corpus = os.path.join(self.dir, "corpus")
        shutil.copytree(os.path.join(FIX, "corpus"), corpus)
        n_docs = len(os.listdir(corpus))
        with open(os.path.join(corpus, "huge.md"), "wb") as fh:      # sparse: 17 MiB of NULs
            fh.truncate(17 << 20)
        with open(os.path.join(corpus, "binary.txt"), "wb") as fh:
            fh.write(b"PK\x03\x04\x00\x00binary\x00" * 10)
        with open(os.path.join(corpus.encode(), b"name\xff.md"), "wb") as fh:
            fh.write(b"# T\n\nA document whose name is not UTF-8.\n")
        idx = self.path("i.json.gz")
        code, out, err, took = self.run_main(cli.main, ["index", "--corpus", corpus, "--index", idx])
        self.assertEqual(code, 0, err)
        for name, why in (("huge.md", "larger than"), ("binary.txt", "binary"), ("name", "not UTF-8")):
            self.assertRegex(err, "%s.*skipped, .*%s" % (name, why))
        self.assertIn("%d documents" % n_docs, out + err)
        self.assertLess(took, 10)

    def test_bugs_that_were_exit_3(self):
        g, t, c, gates = self.inputs()
        many = self.write("many.jsonl", "".join(json.dumps(dict(GOLD, qid="q%d" % i, category="c%d" % i)) + "\n"
                                                for i in range(1200)))
        table = [
            ("weights-overflow", score_eval.main, ["--gold", g, "--trace", t, "--gates", "none", "--weights",
                                                    '{"faithfulness": 1e308, "retrieval": 1e308}'], "--weights"),
            ("by-too-many-values", score_eval.main, ["--gold", many, "--trace", t, "--gates", "none"], many),
            ("nul-in-index-path", cli.main, ["index", "--corpus", os.path.join(FIX, "corpus"), "--index",
                                             self.path("a\x00b")], "must be a file path"),
        ]
        for name, main, argv, says in table:
            with self.subTest(case=name):
                code, _, err, took = self.run_main(main, argv)
                self.assertEqual(code, 2, err)
                self.assertIn(says, err)
                self.assertLess(took, 10)

    def test_generator_flooding_stdout(self):
        from mini_rag.answer.generator import CommandGenerator, GeneratorError
        t0 = time.monotonic()
        with self.assertRaises(GeneratorError) as cm:
            CommandGenerator([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"],
                             timeout=20).generate("q", [], {})
        self.assertIn("printed more than", str(cm.exception))
        self.assertLess(time.monotonic() - t0, 10)


# Known super-linear shapes, written for this table from the ReDoS literature's classes
# (OWASP's "evil regex" list: a repeated group with repetition inside it, a repeated group
# whose alternatives overlap; and polynomial adjacent repetitions), each with the class it
# belongs to.  Every one was accepted by the check before issue 33 unless marked "nested".
EVIL = [
    (r"(a|a)*c", "overlapping"), (r"(a|ab)*c", "overlapping"), (r"(ab|a)*", "overlapping"),
    (r"(a|aa)+", "overlapping"), (r"(\w|\d)+$", "overlapping"), (r"(?:x|x)+y", "overlapping"),
    (r"(?:foo|far)*z", "overlapping"), (r"(?P<g>b|c|b)+", "overlapping"), (r"(?i:A|a){2,}", "overlapping"),
    (r"(\s|\t)+x", "overlapping"), (r"(.|\s)*z", "overlapping"), (r"([a-z]|q)+1", "overlapping"),
    (r"(a|)+", "empty"), (r"(|a)*b", "empty"),
    (r"a*a*a*a*a*a*b", "adjacent"), (r".*.*=.*", "adjacent"), (r"\s*\s*x", "adjacent"),
    (r"\w+\d+!", "adjacent"), (r"x\d*[0-9]*y", "adjacent"), (r"[a-z]+[aeiou]+$", "adjacent"),
    (r"\S+\w+=", "adjacent"), (r"a+(?:b?)a+c", "adjacent"),
    (r"(a+)+b", "nested"), (r"(a*)*b", "nested"), (r"^(\w+\s?)*$", "nested"), (r"(.*a){12}", "nested"),
    (r"([a-zA-Z0-9]+[-.])*@", "nested"),
]
SAFE = [
    r"\bnot in context\b", r"(?:a|b)+", r"\d{4}-\d{2}-\d{2}", r"\s*\w+", r".*foo.*", r"a+b+c+",
    r"(?:cannot|can't) (?:answer|help)", r"[^,]*,[^,]*", r"(?:x|y)?z", r"(a|b){1}", r"(?:\s|,)+",
    r"(cat|dog)+s", r"\b\d{3}-\d{2}-\d{4}\b", r"(?:a+)?", r"\(x+\)+",
]


class RegexLinearity(Base):
    """Finding 5: user regexes are accepted only if linear."""

    def test_known_superlinear_forms_are_rejected(self):
        for pattern, kind in EVIL:
            with self.subTest(pattern=pattern):
                problem = score_eval.regex_problem(pattern)
                self.assertIsNotNone(problem)
                self.assertIn({"overlapping": "overlapping alternatives", "empty": "match empty",
                               "adjacent": "adjacent repetitions", "nested": "nested quantifiers"}[kind], problem)

    def test_safe_forms_and_the_committed_patterns_pass(self):
        for pattern in SAFE:
            with self.subTest(pattern=pattern):
                self.assertIsNone(score_eval.regex_problem(pattern))
        rules = score_eval.load_rules(os.path.join(ROOT, "gates.toml"))
        # gates.toml: no refusal patterns (the built-in reader reads refusals), 7 cutoff patterns,
        # 3 policies with 8 patterns between them: every one loads
        self.assertEqual((len(rules.refusal), len(rules.cutoff), sum(len(p) for _, _, p in rules.policies)), (0, 7, 8))

    def test_gates_file_names_file_line_and_pattern(self):
        g, t, c, _ = self.inputs()
        for key in ("[scorer]\nrefusal_patterns", "[scorer]\ncutoff_patterns", "[policy.p]\npatterns"):
            for pattern, _kind in EVIL[:3] + EVIL[14:16]:
                with self.subTest(key=key, pattern=pattern):
                    text = "# comment\n%s = ['%s']\n[baseline]\nprecision = { min = 0.0 }\n" % (key, pattern)
                    gates = self.write("evil.toml", text)
                    code, _, err, took = self.run_main(score_eval.main, ["--gold", g, "--trace", t, "--gates-file", gates])
                    self.assertEqual(code, 2, err)
                    self.assertIn("%s:3:" % gates, err)
                    self.assertIn(pattern.replace("\\", "\\\\"), err)
                    self.assertLess(took, 5)


class QuestionBudgets(Base):
    """Findings 3 and 8: one question or one retrieved sentence cannot take unbounded time
    or memory."""

    def test_typo_correction_budget(self):
        from mini_rag.search import retrieve
        # (token length, edits allowed): words up to 32 letters are corrected, longer tokens are not
        for length, edits in ((3, 0), (4, 1), (7, 1), (8, 2), (32, 2), (33, 0), (2000, 0)):
            with self.subTest(length=length):
                self.assertEqual(retrieve.max_edits("q" * length), edits)
        seen = []
        real = retrieve._deletes

        def counting(word, depth):
            out = real(word, depth)
            seen.append(len(out))
            return out
        retrieve._deletes = counting
        try:
            from mini_rag.indexing.index import build_index
            from mini_rag.text.corpus import load_chunks
            chunks = load_chunks(os.path.join(FIX, "corpus"))
            r = retrieve.Retriever(build_index(chunks))
            import random
            rng = random.Random(4)
            word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(2000))
            self.assertIsNone(r.correct(word))
            self.assertEqual(r.correct("refnud"), ("refund",))
        finally:
            retrieve._deletes = real
        # the corpus's words and "refnud" only: no 2,000-letter neighbourhood (2 million strings)
        self.assertLess(max(seen), 1000)

    def test_many_numbers_in_one_sentence(self):
        from mini_rag.guard import conflicts
        import random
        rng = random.Random(3)
        sentence = "The fees are " + " ".join(str(rng.randint(1, 99)) for _ in range(9500)) + " dollars."
        t0 = time.monotonic()
        got = conflicts.quantities(sentence)
        self.assertLess(time.monotonic() - t0, 5.0)          # was 60 s: the label searched the whole prefix
        self.assertEqual(got[-1][1], "dollars")
        # the backward reading of labels agrees with the regex it replaces
        table = ["Section ", "section  # ", "ISO ", "SOC #", "no. ", "subsection ", "fee ", "aISO ", "x_ISO ",
                 "Iso ", "\u00c9ISO ", "Schedule.", "PAGE ", "in 2021 ", "", "Table #  ", "the v", "v "]
        for text in table:
            with self.subTest(text=text):
                self.assertEqual(conflicts._label_before(text, len(text)),
                                 bool(conflicts._LABEL_BEFORE.search(text, 0, len(text))))


def read_sections(path):
    """(manifest, {name: bytes}) of a plain format 3 index file."""
    with open(path, "rb") as fh:
        data = fh.read()
    first, body = data.split(b"\n", 1)
    manifest = json.loads(first)
    secs = {sec["name"]: body[sec["offset"]:sec["offset"] + sec["length"]] for sec in manifest["sections"]}
    return manifest, secs


def write_sections(path, manifest, secs, order=None):
    """Write an index whose every section hash matches its (possibly edited) bytes."""
    entries, body = [], b""
    by_name = {sec["name"]: sec for sec in manifest["sections"]}
    for name in order or [sec["name"] for sec in manifest["sections"]]:
        body += b"\0" * (-len(body) % 8)
        data = secs[name]
        entries.append({"name": name, "type": by_name[name]["type"], "offset": len(body), "length": len(data),
                        "sha256": hashlib.sha256(data).hexdigest()})
        body += data
    m = dict(manifest, sections=entries)
    line = json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode()
    line += b" " * (-(len(line) + 1) % 8) + b"\n"
    with open(path, "wb") as fh:
        fh.write(line + body)


class IndexStructure(Base):
    """Finding 10: sections whose hashes match but whose structure is wrong are refused, exit 2
    with 'index --force', never a wrong answer or a crash; killed writes leave no temp file."""

    def test_crafted_indexes_with_matching_hashes(self):
        import array
        corpus = os.path.join(FIX, "corpus")
        good = self.path("good.json")
        code, _, err, _ = self.run_main(cli.main, ["index", "--corpus", corpus, "--index", good, "--quiet"])
        self.assertEqual(code, 0, err)
        manifest, secs = read_sections(good)

        def arr(name, code):
            a = array.array(code)
            a.frombytes(secs[name])
            return a

        def edit(name, code, fn):
            a = arr(name, code)
            fn(a)
            return {name: a.tobytes()}
        n = len(arr("lengths", "I"))
        vocab = json.loads(secs["vocabulary"])
        ids = json.loads(secs["chunk_ids"])
        first_chunk = arr("chunk_blocks", "Q")[1]
        first_block = arr("block_start", "Q")[1]

        def zero_gap(data):                     # the first term's second posting: a gap of 0
            b = bytearray(data)
            b[1] = 0
            return bytes(b)
        cases = [
            ("inf-max-weight", edit("bm25_max", "d", lambda a: a.__setitem__(0, float("inf"))), None),
            ("scaled-max-weights", edit("bm25_max", "d", lambda a: [a.__setitem__(i, a[i] * 2) for i in range(len(a))]), None),
            ("scaled-block-maxima", edit("block_max", "d", lambda a: [a.__setitem__(i, a[i] * 2) for i in range(len(a))]), None),
            ("posting-out-of-range", edit("block_last", "I", lambda a: a.__setitem__(0, n)), None),
            ("zero-gap", {"postings": zero_gap(secs["postings"])}, None),
            ("zero-tf", {"postings": secs["postings"][:first_block - 1] + b"\0" + secs["postings"][first_block:]}, None),
            ("bad-block-format", edit("block_format", "B", lambda a: a.__setitem__(0, 9)), None),
            ("term-blocks-fall", edit("term_blocks", "Q", lambda a: a.__setitem__(1, a[2] + 1)), None),
            ("df-wrong", edit("df", "I", lambda a: a.__setitem__(0, a[0] + 1)), None),
            ("lengths-scaled", edit("lengths", "I", lambda a: [a.__setitem__(i, a[i] + 1) for i in range(len(a))]), None),
            ("chunk-blocks-short", edit("chunk_blocks", "Q", lambda a: a.__setitem__(len(a) - 1, a[-1] - 1)), None),
            ("tie-rank-duplicate", edit("tie_rank", "I", lambda a: a.__setitem__(0, a[1])), None),
            ("vocab-unsorted", {"vocabulary": json.dumps([vocab[1], vocab[0]] + vocab[2:]).encode()}, None),
            ("chunk-ids-duplicate", {"chunk_ids": json.dumps([ids[0]] + ids[:-1]).encode()}, None),
            ("sections-reordered", {}, ["vocabulary", "chunk_ids", "chunks", "chunk_blocks", "lengths", "tie_rank",
                                        "df", "term_blocks", "block_last", "block_start", "block_format",
                                        "bm25_max", "block_max", "postings"]),
            ("chunk-record-garbage", {"chunks": b"#" * first_chunk + secs["chunks"][first_chunk:]}, None),
        ]
        for name, changed, order in cases:
            with self.subTest(case=name):
                bad = self.path("bad.json")
                write_sections(bad, manifest, dict(secs, **changed), order)
                code, out, err, _ = self.run_main(cli.main, ["search", "refund policy days", "--corpus", corpus,
                                                             "--index", bad, "--k", str(n), "--quiet"])
                self.assertEqual(code, 2, "loaded and answered: " + out[:200] + err)
                self.assertIn(bad, err)
                self.assertIn("index --force", err)

    def test_killed_index_write_leaves_no_temp_file(self):
        import subprocess
        corpus = os.path.join(FIX, "corpus")
        idx = self.path("i.json")
        # a body left by a killed writer (dead pid), and one from an older version (no pid)
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        left = [self.write(".sections.%d.abc123.tmp" % dead.pid, b"x" * 100), self.write(".sections.q1w2e3.tmp", b"y")]
        os.utime(left[1], (time.time() - 3600, time.time() - 3600))
        code, _, err, _ = self.run_main(cli.main, ["index", "--corpus", corpus, "--index", idx, "--quiet"])
        self.assertEqual(code, 0, err)
        self.assertEqual([n for n in os.listdir(self.dir) if n.startswith(".sections.")], [])


class HostileClients(unittest.TestCase):
    """Finding 4: slow, oversized and too many clients get 408/413/503 while /health and
    normal requests are served; everything on loopback, every loop bounded."""

    def setUp(self):
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        from test_serve import Server
        self.server = Server(max_requests=4, max_per_client=8, header_timeout=1.5, body_timeout=1.5)
        self.addCleanup(self.server.close)
        self.socks = []
        self.addCleanup(lambda: [s.close() for s in self.socks])

    def connect(self, source="127.0.0.1"):
        import socket
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(10)
        s.bind((source, 0))
        s.connect((self.server.host, self.server.port))
        self.socks.append(s)
        return s

    def status_of(self, s):
        data = b""
        while b"\r\n" not in data:
            block = s.recv(4096)
            if not block:
                break
            data += block
        return int(data.split(b" ")[1]) if data.startswith(b"HTTP/") else None

    def test_slow_bodies_do_not_starve_health(self):
        # more slow-body clients than request slots, from another loopback address
        slow = []
        for _ in range(6):
            s = self.connect("127.0.0.2")
            s.sendall(b"POST /answer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100\r\n\r\n{")
            slow.append(s)
        t0 = time.monotonic()
        for _ in range(5):
            self.assertEqual(self.server.call("GET", "/health")[0], 200)
        self.assertEqual(self.server.call("POST", "/answer", {"query": "Who approves invoices?"})[0], 200)
        self.assertLess(time.monotonic() - t0, 5)
        for s in slow:                                   # each slow body ends with 408
            self.assertEqual(self.status_of(s), 408)

    def test_table(self):
        # (what the client sends, status it must get)
        table = [
            ("oversized-body", b"POST /answer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (2 << 20), 413),
            ("slow-headers", b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ", 408),
            ("slow-body", b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{", 408),
            ("huge-headers", b"GET /health HTTP/1.1\r\n" + b"X-A: " + b"a" * (70 * 1024) + b"\r\n", 431),
        ]
        for name, data, want in table:
            with self.subTest(case=name):
                s = self.connect()
                try:
                    s.sendall(data)
                except OSError:
                    pass
                t0 = time.monotonic()
                self.assertEqual(self.status_of(s), want)
                self.assertLess(time.monotonic() - t0, 5)
                self.assertEqual(self.server.call("GET", "/health")[0], 200)

    def test_per_client_cap(self):
        # issue 44: the cap counts requests in work, not sockets; 8 idle connections from one
        # address (the cap) lock nobody out, that address included, and /health is never refused
        idle = [self.connect("127.0.0.3") for _ in range(8)]
        deadline = time.monotonic() + 5
        while len(self.server.httpd._conns) < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        extra = self.connect("127.0.0.3")
        extra.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(self.status_of(extra), 200)
        self.assertEqual(self.server.httpd._work, {})
        self.assertEqual(self.server.call("GET", "/health")[0], 200)     # another address is served
        for s in idle:
            s.close()


class Startup(Base):
    """Ctrl-C while the tools load exits 130 (was -2: KeyboardInterrupt out of the module)."""

    @staticmethod
    def import_line(path: bytes, line: bytes) -> bool:
        """Whether our innermost frame was a module being compiled or one of its import statements
        (the interrupt landed while Python was still loading, before any handler could be installed)."""
        if int(line) == 0:
            return True             # line 0: the module was still being compiled
        import ast
        try:
            with open(path.decode("utf-8", "replace"), encoding="utf-8") as fh:
                source = fh.read()
            text = source.splitlines()[int(line) - 1].strip()
            body = ast.parse(source).body
        except (OSError, IndexError, ValueError, SyntaxError):
            return False
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]         # the module's docstring runs no code of ours
        if body and int(line) < body[0].lineno:
            return True             # before the first statement (the shebang line, the docstring):
                                    # the signal was pending while Python compiled the file
        return text.startswith(("import ", "from "))

    def test_sigint_during_start_up(self):
        import signal
        import subprocess
        g, t, c, _ = self.inputs()
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-S", "-c", "pass"], check=True)
        init = time.monotonic() - t0                     # the interpreter's own start-up, no site
        seen = []
        for argv in ([sys.executable, "-S", os.path.join(ROOT, "score_eval.py"), "--gold", g, "--trace", t,
                      "--gates", "none", "--quiet"],
                     [sys.executable, "-S", "-m", "mini_rag", "ask", "Who approves invoices?", "--quiet",
                      "--corpus", os.path.join(FIX, "corpus"), "--index", self.path("i.json.gz")]):
            for k in range(6):
                p = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                time.sleep(3 * init + 0.03 * k)
                p.send_signal(signal.SIGINT)
                try:
                    _, err = p.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    self.fail("hung after SIGINT")
                seen.append(p.returncode)
                import re
                ours = re.findall(rb'File "([^"]*(?:score_eval\.py|mini_rag[/\\][^"]*))", line (\d+)', err)
                if (p.returncode == -2 and (not ours or b"importlib._bootstrap" in err
                                            or self.import_line(*ours[-1]))) \
                        or b"Exception ignored in" in err:
                    continue        # Python still starting (site, runpy), compiling the script or importing
                                    # its modules (before any handler can be installed), or the interrupt
                                    # landed in importlib's own callback, which Python swallows
                with self.subTest(tool=argv[2][-12:], delay=k):
                    self.assertIn(p.returncode, (130, 0, 1, 2), err[-300:])
                    self.assertNotIn(b"Traceback", err)
        self.assertTrue(set(seen) <= {130, 0, 1, 2, -2}, seen)


if __name__ == "__main__":
    unittest.main()
