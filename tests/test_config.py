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
    def load(self, text):
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


if __name__ == "__main__":
    unittest.main()
