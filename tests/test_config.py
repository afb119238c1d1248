"""configs/default.toml equals config.DEFAULTS, and bad config keys are named with a suggestion."""
import os
import tempfile
import unittest
from pathlib import Path

from mini_rag.config import read_toml, DEFAULTS, load_config
from mini_rag.errors import MiniRagError

ROOT = Path(__file__).resolve().parents[1]


class DefaultFile(unittest.TestCase):
    def test_default_toml_equals_defaults(self):
        self.assertEqual(load_config(str(ROOT / "configs" / "default.toml")), DEFAULTS)
        # Every setting is written out in the file, not merely inherited from DEFAULTS.
        raw = read_toml(str(ROOT / "configs" / "default.toml"))
        self.assertEqual({s: sorted(t) for s, t in raw.items()},
                         {s: sorted(t) for s, t in DEFAULTS.items()})


class BadKeys(unittest.TestCase):
    @staticmethod
    def load(text):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "c.toml")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            try:
                load_config(path)
            except MiniRagError as exc:
                return str(exc).replace(path, "c.toml")
        return None

    def test_messages(self):
        table = [
            ("[retreival]\ntop_k = 3\n", "c.toml: unknown section [retreival]; did you mean 'retrieval'?"),
            ("[retrieval]\nmin_similarty = 0.1\n",
             "c.toml: unknown key 'min_similarty' in [retrieval]; did you mean 'min_similarity'?"),
            ("[index]\nk_1 = 1.0\n", "c.toml: unknown key 'k_1' in [index]; did you mean 'k1'?"),
            ("[retrieval]\ntop_k = \"eight\"\n", "c.toml: [retrieval] top_k must be an integer, got 'eight'"),
            ("[expansion.x]\nmatch = \"a\"\n", "c.toml: [expansion.x] needs both match and add"),
        ]
        for text, message in table:
            with self.subTest(text=text):
                self.assertEqual(self.load(text), message)

    def test_override_keeps_other_defaults(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "c.toml")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("[retrieval]\nmin_similarity = 0.15\n[index]\nk1 = 1\n")
            cfg = load_config(path)
        self.assertEqual((cfg["retrieval"]["min_similarity"], cfg["index"]["k1"], cfg["retrieval"]["top_k"]),
                         (0.15, 1.0, 8))
        self.assertIsInstance(cfg["index"]["k1"], float)



#: Issue 44 item 6: (section, key, TOML value, what the message says after "[section] key").
#: Each used to exit 0 (silently using another value or ignoring the key) or to fail later
#: without naming the file.
BAD_SETTINGS = [
    ("corpus", "path", '""', "must not be empty"),
    ("corpus", "path", '"  "', "must not be empty"),
    ("corpus", "path", "3", "must be a string, got 3"),
    ("corpus", "max_chunk_chars", "-1", "must be a finite number from 0 to 10000000, got -1"),
    ("analysis", "stopwords", '"french"', "must be one of english, none, got 'french'"),
    ("analysis", "stemmer", '"porter"', "must be one of english, none, got 'porter'"),
    ("index", "path", '""', "must not be empty"),
    ("index", "k1", "-1", "must be a finite number from 0.0 to 1000.0, got -1.0"),
    ("retrieval", "scoring", '"bm42"', "must be one of bm25, tfidf, got 'bm42'; did you mean 'bm25'?"),
    ("retrieval", "mode", '"sparse"', "must be one of bm25, dense, hybrid, got 'sparse'"),
    ("retrieval", "fusion", '"max"', "must be one of rrf, convex, got 'max'"),
    ("retrieval", "fusion", '"RRF"', "must be one of rrf, convex, got 'RRF'; did you mean 'rrf'?"),
    ("retrieval", "rrf_k", "-5", "must be a finite number from 0 to 1000000, got -5"),
    ("retrieval", "fusion_alpha", "1.5", "must be a finite number from 0.0 to 1.0, got 1.5"),
    ("retrieval", "fusion_depth", "0", "must be a finite number from 1 to 1000000, got 0"),
    ("retrieval", "top_k", "0", "must be a finite number from 1 to 10000, got 0"),
    ("retrieval", "use_mmr", '"yes"', "must be true or false, got 'yes'"),
    ("retrieval", "min_similarity", "1e999", "must be a finite number from 0.0 to 1.0, got inf"),
    ("embed", "sha256", '"xyz"', "must be 64 hexadecimal digits (or \"\" to skip the check), got 'xyz'"),
    ("embed", "batch_size", "0", "must be a finite number from 1 to 4096, got 0"),
    ("embed", "max_seq_length", "100000", "must be a finite number from 0 to 512, got 100000"),
    ("embed", "max_seq_length", "1", "must be 0 (the model's) or from 2 to 512, got 1"),
    ("embed", "model", "3", "must be a string, got 3"),
    ("answer", "refusal", '""', "must not be empty"),
    ("answer", "generator", '"llm"', "must be one of command, extractive, got 'llm'"),
    ("answer", "generator_command", '["prog", ""]', "[1] must not be empty, got ''"),
    ("answer", "generator_command", '"prog"', "must be a list of strings, got 'prog'"),
    ("answer", "generator_timeout", "0", "must be a finite number from 0.001 to 86400.0, got 0.0"),
    ("answer", "min_score", "5", "must be a finite number from 0.0 to 1.0, got 5.0"),
    ("answer", "extra_sentence_margin", "-1", "must be a finite number from 0.0 to 1.0, got -1.0"),
    ("answer", "synonym_groups", '[" "]', "[0] must not be empty, got ' '"),
    ("answer", "max_sentences", "0", "must be a finite number from 1 to 1000, got 0"),
    ("guards", "as_of", '"yesterday"', "must be a date YYYY-MM-DD (or \"\": the newest document date), got 'yesterday'"),
    ("guards", "as_of", '"2026-02-30"', "must be a date YYYY-MM-DD (or \"\": the newest document date), got '2026-02-30'"),
    ("guards", "max_citations", "0", "must be a finite number from 1 to 1000, got 0"),
    ("risk", "high", '["policy", ""]', "[1] must not be empty, got ''"),
    ("risk", "medium", '"SLA"', "must be a list of strings, got 'SLA'"),
    ("clarify", "vague_referents", '[""]', "[0] must not be empty, got ''"),
    ("clarify", "dimension_nouns", "[1]", "must be a list of strings, got [1]"),
]


class BadSettings(unittest.TestCase):
    """Each bad setting: ``ask`` exits 2 with one stderr line naming the file and the key."""

    def test_table(self):
        import contextlib
        import io
        from mini_rag.commands import cli
        corpus = str(ROOT / "tests" / "fixtures" / "guards" / "corpus")
        self.assertEqual(len({(s, k) for s, k, _, _ in BAD_SETTINGS}), 33)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bad.toml")
            for section, key, value, message in BAD_SETTINGS:
                with self.subTest(section=section, key=key, value=value):
                    with open(path, "w", encoding="utf-8") as fh:
                        fh.write("[%s]\n%s = %s\n" % (section, key, value))
                    err = io.StringIO()
                    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                        code = cli.main(["ask", "Who approves invoices?", "--config", path, "--corpus", corpus,
                                         "--index", os.path.join(tmp, "i.json.gz")])
                    self.assertEqual((code, err.getvalue()),
                                     (2, "mini_rag: %s: [%s] %s%s%s\n" % (path, section, key,
                                                                          "" if message[0] == "[" else " ", message)))

    def test_expansion_rules(self):
        for text, message in (('[expansion.x]\nmatch = " "\nadd = ["a"]\n', "c.toml: [expansion.x] match must not be empty"),
                              ('[expansion.x]\nmatch = "a"\nadd = ["b", ""]\n',
                               "c.toml: [expansion.x] add[1] must not be empty, got ''")):
            with self.subTest(text=text):
                self.assertEqual(BadKeys.load(text), message)

    def test_good_values_still_load(self):
        good = [("analysis", "stopwords", '"none"'), ("retrieval", "scoring", '"tfidf"'),
                ("retrieval", "mode", '"hybrid"'), ("retrieval", "fusion", '"convex"'), ("retrieval", "rrf_k", "0"),
                ("retrieval", "fusion_alpha", "1"), ("embed", "sha256", '""'), ("embed", "sha256", '"%s"' % ("AB" * 32)),
                ("embed", "max_seq_length", "0"), ("embed", "max_seq_length", "512"), ("guards", "as_of", '""'),
                ("guards", "as_of", '"2024-02-29"'), ("answer", "generator", '"command"'), ("answer", "min_score", "0"),
                ("retrieval", "authority_scope", '""'), ("risk", "high", "[]")]
        for section, key, value in good:
            with self.subTest(section=section, key=key, value=value):
                self.assertIsNone(BadKeys.load("[%s]\n%s = %s\n" % (section, key, value)))

    def test_choices_are_the_owners(self):
        from mini_rag.config import CHOICES
        from mini_rag.text.analysis import _CHOICES
        from mini_rag.indexing.index import SCORINGS
        from mini_rag.embed.hybrid import FUSIONS, MODES
        from mini_rag.answer.generator import GENERATORS
        from mini_rag.indexing.background import TERM_WEIGHTS
        self.assertEqual(CHOICES, {("analysis", "stopwords"): tuple(_CHOICES["stopwords"]),
                                   ("analysis", "stemmer"): tuple(_CHOICES["stemmer"]),
                                   ("retrieval", "scoring"): tuple(SCORINGS), ("retrieval", "mode"): tuple(MODES),
                                   ("retrieval", "fusion"): tuple(FUSIONS),
                                   ("answer", "generator"): tuple(sorted(GENERATORS)),
                                   ("answer", "term_weights"): tuple(TERM_WEIGHTS)})


if __name__ == "__main__":
    unittest.main()
