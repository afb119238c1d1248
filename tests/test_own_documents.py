"""README "Evaluate your own documents": its five commands, run exactly as written from a
repository folder on a 50-file Markdown tree (three hand-written policies written in 2023 and
47 generated tool pages full of Markdown markup), give a gold set that check-gold accepts and
eval passes, answers as plain text, and refuse a citation of a chunk that does not exist
(issue 19 item 3, issue 42 items 3, 5 and 7)."""
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DOCS = {
    "expenses.md": ("expenses", "Travel and Expenses Policy", "2023-02-01",
                    ["Employees must submit expense reports within 45 days of the trip end date.",
                     "Receipts are required for every expense above 25 euros."]),
    "leave.md": ("leave", "Annual Leave Policy", "2023-06-15",
                 ["Full-time employees receive 28 days of paid annual leave per year.",
                  "Up to five unused leave days may be carried over into the next year."]),
    "laptops.md": ("laptops", "Laptop Handbook", "2023-09-30",
                   ["Company laptops are replaced every four years.",
                    "Lost laptops must be reported to the IT service desk within 24 hours."]),
}
NEWEST = "2023-09-30"
#: The generated pages: (folder, name, what it manages, how long it keeps it).
TOOLS = [("team" if i % 2 else "ops", name, thing, "%d %s" % (i + 2, unit))
         for i, (name, thing, unit) in enumerate(zip(
             ("ambergate birchline coldharbor duskwater elmstead fernhill glenrock hollowmere ironbridge juniper "
              "kestrel larkspur millbrook northwind oakridge pinecrest quarrydale ravenscar stonebeck thornbury "
              "underhill valewood westmarch yarrow zephyrine ashcombe bramwell cragside dovecote eastwick foxglove "
              "greyfield hawthorn inglenook jesmond kingsmoor lowther marlpit netherby otterburn pendle quantock "
              "redmire saltash tarnside ulverston vinehall").split(),
             ["snapshots", "invoices", "tickets", "certificates", "mailboxes", "badges", "licences"] * 7,
             ["hours", "weeks", "months", "minutes"] * 12))]


def tool_page(name, thing, keep):
    """A generated page: list markers, emphasis, a link and code spans, as documentation has."""
    return ("# %s\n\n%s manages %s for the records office.\n\n## Setup\n\n"
            "1. Install the `%s-cli` package from the internal mirror.\n"
            "2. Run `%s-cli login` with your **staff** account.\n"
            "* The %s console lives at [the %s portal](https://intranet.example/%s).\n\n"
            "## Limits\n\n%s keeps %s for %s before moving them to _cold storage_.\n"
            % (name.title(), name.title(), thing, name, name, name, name, name, name.title(), thing, keep))


def readme_section():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    return text.split("## Evaluate your own documents", 1)[1].split("\n## ", 1)[0]


def readme_commands():
    block = re.search(r"```bash\n(.*?)```", readme_section(), re.S).group(1)
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


def readme_gold():
    block = re.search(r"```json\n(.*?)```", readme_section(), re.S).group(1)
    return [json.loads(line) for line in block.splitlines() if line.strip()]


def runs_dir(folder):
    """runs/<name>-<first 8 hex of sha256(absolute path)>, computed here independently."""
    digest = hashlib.sha256(os.path.abspath(folder).encode("utf-8")).hexdigest()[:8]
    return os.path.join("runs", "%s-%s" % (os.path.basename(folder), digest))


def listing(stdout):
    """search --scope's listing: [(chunk id, [text lines])] in order."""
    out = []
    for line in stdout.splitlines():
        if line.startswith("    "):
            out[-1][1].append(line[4:])
        elif line.strip():
            out.append((line.split()[0], []))
    return out


MARKUP = re.compile(r"\*\*|__|`|\]\(|(?:^|\s)_\w|\w_(?:\s|[.,]|$)|(?:^|\.\s)(?:\d+\.|[-*])\s")


class OwnDocuments(unittest.TestCase):
    """The README's path, as a newcomer runs it from the repository folder (a copy of gates.toml
    and configs/ next to mydocs/, as a clone has)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="own_docs_")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        docs = os.path.join(self.tmp, "mydocs")
        for name, (doc_id, title, date, paragraphs) in DOCS.items():
            os.makedirs(docs, exist_ok=True)
            with open(os.path.join(docs, name), "w", encoding="utf-8") as fh:
                fh.write("---\ndoc_id: %s\ntitle: %s\neffective: %s\n---\n\n# %s\n\n%s\n"
                         % (doc_id, title, date, title, "\n\n".join(paragraphs)))
        for folder, name, thing, keep in TOOLS:
            os.makedirs(os.path.join(docs, folder), exist_ok=True)
            with open(os.path.join(docs, folder, name + ".md"), "w", encoding="utf-8") as fh:
                fh.write(tool_page(name, thing, keep))
        shutil.copy(os.path.join(ROOT, "gates.toml"), self.tmp)     # a clone has it next to mydocs/
        shutil.copytree(os.path.join(ROOT, "configs"), os.path.join(self.tmp, "configs"))

    def run_cli(self, argv):
        self.assertEqual(argv[:3], ["python3", "-m", "mini_rag"])
        env = dict(os.environ, PYTHONPATH=ROOT)
        return subprocess.run([sys.executable] + argv[1:], cwd=self.tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=300)

    def write_gold(self, rows):
        with open(os.path.join(self.tmp, "mygold.jsonl"), "w", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in rows))

    def test_the_five_commands(self):
        commands = readme_commands()
        self.assertEqual([c[3] for c in commands], ["init", "index", "search", "check-gold", "eval"])
        init, index, search, check, ev = commands
        p = self.run_cli(init)
        self.assertEqual(p.returncode, 0, p.stderr)
        from mini_rag.commands.cmd_init import USER_GATES
        with open(os.path.join(self.tmp, "my-gates", "gates.toml"), encoding="utf-8") as fh, \
                open(USER_GATES, encoding="utf-8") as ref:
            self.assertEqual(fh.read(), ref.read())
        p = self.run_cli(index)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(": 50 documents, ", p.stdout)
        p = self.run_cli(search)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(listing(p.stdout), [
            ("leave#p0", []), ("leave#p1", ["Full-time employees receive 28 days of paid annual leave per year."]),
            ("leave#p2", ["Up to five unused leave days may be carried over into the next year."])])
        self.assertIn("(heading, never an answer)", p.stdout.splitlines()[0])
        self.write_gold(readme_gold())                               # the README's rows, as written
        p = self.run_cli(check)
        self.assertEqual((p.returncode, p.stdout), (0, "check-gold: OK, 1 file, 2 rows, 1 answerable; "
                                                       "categories: (none)=2\n"), p.stderr)
        p = self.run_cli(ev)
        self.assertEqual(p.returncode, 0, p.stderr)
        summary = json.loads(p.stdout)
        self.assertEqual((summary["pass"], summary["as_of"]), (True, NEWEST))
        out = runs_dir(os.path.join(self.tmp, "mydocs"))
        self.assertEqual(summary["datasets"]["perturb"]["files"]["gold"], os.path.join(out, "gold_perturb.generated.jsonl"))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "runs", "trace.baseline.jsonl")))
        with open(os.path.join(self.tmp, out, "report.baseline.json"), encoding="utf-8") as fh:
            self.assertEqual(json.load(fh)["inputs"]["gates"], os.path.join("my-gates", "gates.toml"))
        with open(os.path.join(self.tmp, out, "trace.baseline.jsonl"), encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
        self.assertEqual([(r["qid"], r["decision"], r["answer_json"]["claim"]) for r in rows], [
            ("L1", "ANSWER", "Full-time employees receive 28 days of paid annual leave per year."),
            ("X1", "ABSTAIN", "not in context")])
        self.assertEqual(p.stderr.count("score_eval: warning: decision_accuracy: not measured"), 1)   # once, not per dataset

    def test_a_gold_set_from_the_listing(self):
        """A newcomer writes gold rows from what `search --scope` printed (ids and plain text),
        check-gold accepts them, eval answers in plain text; a citation of a chunk that does not
        exist then fails check-gold and eval with exit 2 and file:line."""
        py = ["python3", "-m", "mini_rag"]
        rows = []
        for folder, name, thing, keep in TOOLS[::12]:
            doc = "%s/%s" % (folder, name)
            p = self.run_cli(py + ["search", "--corpus", "mydocs", "--scope", doc, "--quiet"])
            self.assertEqual(p.returncode, 0, p.stderr)
            chunks = dict(listing(p.stdout))
            cid = next(c for c, lines in chunks.items() if any(" keeps " in l for l in lines))
            self.assertEqual(chunks[cid], ["%s keeps %s for %s before moving them to cold storage." % (
                name.title(), thing, keep)])                           # plain text: no _cold storage_
            rows.append({"qid": name, "question": "How long does %s keep %s?" % (name.title(), thing),
                         "answerable": True, "gold_claim_substr": [keep], "gold_citations": [cid]})
        self.assertEqual(len(rows), 4)
        self.write_gold(rows)
        check = py + ["check-gold", "--corpus", "mydocs", "mygold.jsonl"]
        ev = py + ["eval", "--corpus", "mydocs", "--gold", "mygold.jsonl", "--perturb", "none", "--quiet"]
        p = self.run_cli(check)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.run_cli(ev)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        self.assertEqual(p.stderr.count("warning"), 0, p.stderr)                    # --quiet: no warnings
        with open(os.path.join(self.tmp, runs_dir(os.path.join(self.tmp, "mydocs")), "trace.baseline.jsonl"),
                  encoding="utf-8") as fh:
            claims = [json.loads(line)["answer_json"]["claim"] for line in fh]
        self.assertEqual(sum(c != "not in context" for c in claims), 4, claims)
        for c in claims:
            self.assertIsNone(MARKUP.search(c), c)
        p = self.run_cli(py + ["ask", "--corpus", "mydocs", "--quiet", "How do I install ambergate?"])
        self.assertEqual((p.returncode, p.stdout), (0, "ANSWER:\n1. Install the ambergate-cli package from the "
                                                       "internal mirror. (ops/ambergate, ops/ambergate#p3)\n"
                                                       "CONFIDENCE: High\n"), p.stderr)
        # ops/ambergate has 6 paragraphs: the title, the intro, "## Setup", the list, "## Limits", "keeps"
        bad = dict(rows[0], qid="bad", gold_citations=["ops/ambergate#p999"])
        self.write_gold(rows + [bad])                                     # line 5
        p = self.run_cli(check)
        self.assertEqual(p.returncode, 2)
        self.assertIn("mygold.jsonl:5: cited chunk is not in the corpus (ops/ambergate has ops/ambergate#p0 to "
                      "ops/ambergate#p5), got 'ops/ambergate#p999'", p.stderr)
        p = self.run_cli(ev)
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertEqual(p.stderr, "mini_rag: mygold.jsonl:5: gold_citations names no chunk of the corpus mydocs "
                                   "(ops/ambergate has ops/ambergate#p0 to ops/ambergate#p5; 'search --scope DOC' "
                                   "lists a document's chunk ids), got 'ops/ambergate#p999'\n")

    def test_committed_config_would_refuse_as_stale(self):
        """The contrast: the committed corpus's as_of (2026-11-01) makes these documents stale."""
        p = self.run_cli(["python3", "-m", "mini_rag", "ask", "--corpus", "mydocs",
                          readme_gold()[0]["question"], "--config", "configs/default.toml",
                          "--index", "runs/committed.json.gz"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.splitlines()[0], "not in context")
        self.assertIn("As of 2026-11-01", p.stdout)


class ResolveRules(unittest.TestCase):
    """mini_rag.commands.runconfig: which defaults a command gets (in-process, stderr captured)."""

    def resolve(self, *args, **kw):
        import contextlib
        import io
        sys.path.insert(0, ROOT)
        from mini_rag.commands import runconfig
        err = io.StringIO()
        old = os.getcwd()
        os.chdir(ROOT)
        try:
            with contextlib.redirect_stderr(err):
                return runconfig.resolve(*args, **kw), err.getvalue()
        finally:
            os.chdir(old)

    def test_rules(self):
        from mini_rag.config import load_config
        from mini_rag.commands.runconfig import own_index_path
        committed = load_config(os.path.join(ROOT, "configs", "default.toml"))
        cfg, err = self.resolve(None)                                   # make eval: unchanged
        self.assertEqual(cfg, committed)
        self.assertIn("using the config configs/default.toml", err)
        cfg, err = self.resolve(None, "elsewhere")                      # own corpus: neutral
        self.assertEqual((cfg["guards"]["as_of"], cfg["guards"]["freshness_days"], cfg["risk"]["high"]),
                         ("", 0, []))
        self.assertEqual(cfg["index"]["path"], own_index_path("elsewhere"))
        self.assertEqual(cfg["retrieval"], committed["retrieval"])
        self.assertIn("corpus elsewhere: corpus-neutral defaults", err)
        cfg, err = self.resolve("configs/default.toml", "elsewhere", "i.json.gz")   # a config file decides
        self.assertEqual((cfg["guards"]["as_of"], cfg["index"]["path"], cfg["corpus"]["path"]),
                         ("2026-11-01", "i.json.gz", "elsewhere"))
        self.assertEqual(err, "")
        cfg, err = self.resolve(None, "gold/corpus", quiet=True)      # the committed corpus named
        self.assertEqual((cfg, err), (committed, ""))

    def test_as_of_without_dates(self):
        from types import SimpleNamespace as S
        from mini_rag.config import NO_DATE_AS_OF, resolve_as_of
        config = {"guards": {"as_of": ""}}
        self.assertEqual(resolve_as_of(config, S(chunks=[S(effective="")]), quiet=True), NO_DATE_AS_OF)
        config = {"guards": {"as_of": ""}}
        chunks = [S(effective="2023-01-02"), S(effective=""), S(effective="2023-03-04")]
        self.assertEqual(resolve_as_of(config, S(chunks=chunks), quiet=True), "2023-03-04")
        self.assertEqual(resolve_as_of({"guards": {"as_of": "2020-01-01"}}, S(chunks=chunks)), "2020-01-01")


    def test_freshness_window_zero_is_off(self):
        from mini_rag.guard.guards import check_freshness
        cited = [("d#p1", "d", "2023-01-01", {})]
        for window, stale in ((0, False), (730, True), (2000, False)):
            with self.subTest(window=window):
                guards = {"as_of": "2026-11-01", "freshness_days_high_risk": window, "freshness_days": window}
                self.assertIs(check_freshness(cited, "high", guards).stale, stale)
        review = [("d#p1", "d", "2023-01-01", {"review_by": "2024-01-01"})]   # the document's own date still counts
        guards = {"as_of": "2026-11-01", "freshness_days_high_risk": 0, "freshness_days": 0}
        self.assertIs(check_freshness(review, "high", guards).stale, True)


class NoHiddenConfig(unittest.TestCase):
    """Every default file a command reads is named on stderr; --gates none scores without gates."""

    def test_defaults_are_named_and_gates_none(self):
        fix = os.path.join(ROOT, "tests", "fixtures")
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, PYTHONPATH=ROOT)
            shutil.copytree(os.path.join(ROOT, "configs"), os.path.join(tmp, "configs"))
            shutil.copy(os.path.join(ROOT, "gates.toml"), tmp)
            corpus = os.path.join(fix, "gold", "corpus")               # the corpus the fixture gold set cites
            argv = [sys.executable, "-m", "mini_rag", "eval", "--corpus", corpus,
                    "--gold", os.path.join(fix, "gold", "gold.jsonl"), "--perturb", "none"]

            def run(*extra):
                return subprocess.run(argv + list(extra), cwd=tmp, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
            p = run()
            self.assertIn(p.returncode, (0, 1), p.stderr)
            self.assertIn("mini_rag: a gold set of your own: using the packaged gates", p.stderr)
            self.assertIn("--perturb none: the perturbation set is skipped", p.stderr)
            self.assertEqual(list(json.loads(p.stdout)["datasets"]), ["baseline"])
            p = run("--gates", "gates.toml")
            self.assertIn(p.returncode, (0, 1), p.stderr)
            with open(os.path.join(tmp, runs_dir(corpus), "report.baseline.json"), encoding="utf-8") as fh:
                self.assertEqual(json.load(fh)["inputs"]["gates"], "gates.toml")
            p = run("--gates", "none")
            self.assertEqual(p.returncode, 0, p.stderr)
            short = json.loads(p.stdout)
            self.assertEqual((short["pass"], short["failed_gates"]), (True, []))
            self.assertNotIn("gates.toml", p.stderr)
            with open(os.path.join(tmp, runs_dir(corpus), "report.baseline.json"), encoding="utf-8") as fh:
                self.assertEqual(json.load(fh)["gate_results"], [])
            p = subprocess.run([sys.executable, "-m", "mini_rag", "search", "refund", "--k", "1",
                                "--index", os.path.join(tmp, "i.json.gz")], cwd=tmp, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
            self.assertIn("mini_rag: using the config configs/default.toml", p.stderr)


class OwnRuns(unittest.TestCase):
    """Issue 31 item 3, issue 42 item 5: an own-corpus eval writes to runs/<corpus name>-<hash>/
    (never over the repository's runs/ nor another corpus's of the same name), is judged by the
    packaged user gates unless --gates names a file, and those gates are score_eval's fallback;
    `init` writes them, never over the repository's gates.toml."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="own_runs_")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.env = dict(os.environ, PYTHONPATH=ROOT)

    def run_cli(self, *argv, cwd=None, env=None):
        return subprocess.run([sys.executable, "-m", "mini_rag"] + list(argv), cwd=cwd or self.tmp, env=env or self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)

    def test_own_corpus_keeps_its_outputs_apart(self):
        fix = os.path.join(ROOT, "tests", "fixtures", "gold")
        corpus, gold = os.path.join(fix, "corpus"), os.path.join(fix, "gold.jsonl")
        os.makedirs(os.path.join(self.tmp, "runs"))
        sentinel = os.path.join(self.tmp, "runs", "trace.baseline.jsonl")
        with open(sentinel, "w", encoding="utf-8") as fh:
            fh.write("the repository's trace\n")
        shutil.copy(os.path.join(ROOT, "gates.toml"), self.tmp)
        p = self.run_cli("eval", "--corpus", corpus, "--gold", gold, "--perturb", "none")
        self.assertIn(p.returncode, (0, 1), p.stderr)
        with open(sentinel, encoding="utf-8") as fh:
            self.assertEqual(fh.read(), "the repository's trace\n")
        report_path = os.path.join(self.tmp, runs_dir(corpus), "report.baseline.json")
        with open(report_path, encoding="utf-8") as fh:
            first = fh.read()
        report = json.loads(first)
        from mini_rag.commands.cmd_init import USER_GATES
        self.assertEqual(report["inputs"]["gates"], USER_GATES)
        self.assertEqual([g["gate"] for g in report["gate_results"]],
                         ["precision", "chr", "under_refusal", "over_refusal"])
        # another folder named corpus/: its own runs folder; the first one's report untouched
        other = os.path.join(self.tmp, "elsewhere", "corpus")
        shutil.copytree(corpus, other)
        p = self.run_cli("eval", "--corpus", other, "--gold", gold, "--perturb", "none", "--quiet")
        self.assertIn(p.returncode, (0, 1), p.stderr)
        self.assertNotEqual(runs_dir(other), runs_dir(corpus))
        self.assertTrue(os.path.isfile(os.path.join(self.tmp, runs_dir(other), "report.baseline.json")))
        with open(report_path, encoding="utf-8") as fh:
            self.assertEqual(fh.read(), first)
        p = self.run_cli("eval", "--corpus", corpus, "--gold", gold, "--perturb", "none", "--out-dir", "chosen", "--quiet")
        self.assertIn(p.returncode, (0, 1), p.stderr)
        self.assertTrue(os.path.isfile(os.path.join(self.tmp, "chosen", "report.baseline.json")))

    def test_seed_example_writes_apart(self):
        """make eval-seed writes runs/seed/, never make eval's runs/report.*."""
        shutil.copytree(os.path.join(ROOT, "examples"), os.path.join(self.tmp, "examples"))
        shutil.copy(os.path.join(ROOT, "gates.toml"), self.tmp)
        p = self.run_cli("eval", "--dataset", "seed")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(os.path.join(self.tmp, "runs"))), ["seed"])
        self.assertEqual(json.loads(p.stdout)["reports"]["json"], os.path.join("runs", "seed", "report.json"))
        self.assertTrue(os.path.isfile(os.path.join(self.tmp, "runs", "seed", "report.seed.json")))

    def test_packaged_gates_are_score_evals_fallback(self):
        sys.path.insert(0, ROOT)
        import score_eval
        from mini_rag.commands.cmd_init import USER_GATES
        _, file_gates, _ = score_eval.load_gates_file(USER_GATES, "baseline")
        fallback, _ = score_eval.parse_gates_string(score_eval.DEFAULT_GATES)
        as_pairs = lambda gates: sorted((g.ref.metric.name, g.op, g.threshold) for g in gates)   # noqa: E731
        self.assertEqual(as_pairs(file_gates), as_pairs(fallback))
        _, perturb, _ = score_eval.load_gates_file(USER_GATES, "perturb")
        self.assertEqual(as_pairs(perturb), as_pairs(fallback))

    def test_init_writes_once(self):
        from mini_rag.commands.cmd_init import USER_GATES
        p = self.run_cli("init")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(self.tmp, "gates.toml"), encoding="utf-8") as fh, open(USER_GATES, encoding="utf-8") as ref:
            self.assertEqual(fh.read(), ref.read())
        p = self.run_cli("init")
        self.assertEqual((p.returncode, p.stderr), (2, "mini_rag: %s: already exists (--force to overwrite your copy, "
                                                    "or give another folder: python3 -m mini_rag init DIR)\n"
                                                    % os.path.join(".", "gates.toml")))
        self.assertEqual(self.run_cli("init", "--force").returncode, 0)

    def test_init_in_the_repository_folder(self):
        """In the checkout holding the package, init without a folder writes my-gates/; the
        repository's gates.toml is never replaced, --force or not, and no message suggests it."""
        from mini_rag.commands.cmd_init import USER_GATES
        repo = os.path.join(self.tmp, "repo")
        shutil.copytree(os.path.join(ROOT, "mini_rag"), os.path.join(repo, "mini_rag"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(os.path.join(ROOT, "referee"), os.path.join(repo, "referee"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(os.path.join(ROOT, "score_eval.py"), repo)
        with open(os.path.join(repo, "gates.toml"), "w", encoding="utf-8") as fh:
            fh.write("# the repository's gates\n")
        env = dict(os.environ, PYTHONPATH=repo)
        p = self.run_cli("init", cwd=repo, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("mini_rag: in the repository's folder: writing into my-gates/", p.stderr)
        with open(os.path.join(repo, "my-gates", "gates.toml"), encoding="utf-8") as fh, \
                open(USER_GATES, encoding="utf-8") as ref:
            self.assertEqual(fh.read(), ref.read())
        refused = "is the repository's own gates file (make eval's), never replaced; give another folder: " \
                  "python3 -m mini_rag init my-gates\n"
        for argv in (["init", "."], ["init", ".", "--force"], ["init", "--force", repo]):
            with self.subTest(argv=argv):
                p = self.run_cli(*argv, cwd=repo, env=env)
                self.assertEqual(p.returncode, 2)
                self.assertTrue(p.stderr.endswith(refused), p.stderr)
                self.assertNotIn("--force", p.stderr)
        p = self.run_cli("init", cwd=repo, env=env)                       # my-gates/gates.toml is yours
        self.assertEqual(p.returncode, 2)
        self.assertIn("my-gates/gates.toml: already exists", p.stderr)
        with open(os.path.join(repo, "gates.toml"), encoding="utf-8") as fh:
            self.assertEqual(fh.read(), "# the repository's gates\n")
        p = self.run_cli("init", "new-folder", cwd=repo, env=env)          # a folder given is made
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.isfile(os.path.join(repo, "new-folder", "gates.toml")))


class Warnings(unittest.TestCase):
    """evaluate.pass_on: the scorer's stderr as eval passes it on (issue 42 item 7)."""

    def test_table(self):
        import io
        from mini_rag.eval.evaluate import pass_on
        w = "score_eval: warning: decision_accuracy: not measured: no item has both\n"
        gate = "score_eval: gate failed: chr: chr = 0.6, needs >= 0.75\n"
        cases = [
            # (stderr of each scoring, quiet, what eval writes)
            ("once per run", [w + gate, w + gate], False,
             w + "score_eval: baseline: gate failed: chr: chr = 0.6, needs >= 0.75\n"
                 "score_eval: perturb: gate failed: chr: chr = 0.6, needs >= 0.75\n"),
            ("quiet: no warning, the verdict stays", [w + gate, w], True,
             "score_eval: baseline: gate failed: chr: chr = 0.6, needs >= 0.75\n"),
            ("different warnings both", [w, w.replace("decision", "fallback")], False,
             w + w.replace("decision", "fallback")),
            ("no final newline", ["score_eval: warning: x"], False, "score_eval: warning: x\n"),
        ]
        for name, errs, quiet, want in cases:
            with self.subTest(name):
                out, warned = io.StringIO(), set()
                for dataset, err in zip(("baseline", "perturb"), errs):
                    pass_on(err, warned, quiet, stream=out, dataset=dataset)
                self.assertEqual(out.getvalue(), want)


class MakeClean(unittest.TestCase):
    """make clean removes what make eval, eval-seed, compare, the README's examples and
    own-corpus evals wrote, and keeps runs/.gitkeep, downloads and caches (issue 42 item 5)."""

    @unittest.skipUnless(shutil.which("make"), "make not found on PATH")
    def test_clean(self):
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(os.path.join(ROOT, "Makefile"), tmp)
            made = {
                "runs/.gitkeep": "", "runs/report.json": "{}", "runs/report.html": "x", "runs/report.xml": "x",
                "runs/index.json.gz": "x", "runs/index-0123456789ab.json.gz": "x", "runs/gate.baseline.json": "x",
                "runs/manifest.json": "{}", "runs/ci-eval.err": "x",
                "runs/docs-1a2b3c4d/manifest.json": "{}", "runs/docs-1a2b3c4d/report.html": "x",
                "runs/mydocs/report.json": "{}", "runs/failed-9f8e7d6c/gold_perturb.generated.jsonl": "x",
                "runs/seed/report.json": "{}", "runs/compare/baseline/report.baseline.json": "{}",
                "runs/own/report.json": "{}", "runs/bench/x.json": "{}",
                "runs/wheels/model.whl": "w", "runs/embed/cache.bin": "e", "runs/fit/cos.json": "f",
                "runs/venv-dask/bin/python": "p", "runs/doctree/pip.tar.gz": "d", "runs/.peers/bin/python": "p",
                "runs/notes/mine.txt": "kept: no eval wrote it",
            }
            for rel, text in made.items():
                os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
                with open(os.path.join(tmp, rel), "w", encoding="utf-8") as fh:
                    fh.write(text)
            p = subprocess.run(["make", "-s", "clean"], cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            left = sorted(os.path.relpath(os.path.join(d, f), tmp) for d, _, files in os.walk(os.path.join(tmp, "runs"))
                          for f in files)
            self.assertEqual(left, sorted(["runs/.gitkeep", "runs/wheels/model.whl", "runs/embed/cache.bin",
                                           "runs/fit/cos.json", "runs/venv-dask/bin/python", "runs/doctree/pip.tar.gz",
                                           "runs/.peers/bin/python", "runs/notes/mine.txt"]))



if __name__ == "__main__":
    unittest.main()
