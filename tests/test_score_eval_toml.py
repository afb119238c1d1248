"""The gates-file TOML subset reader: runs on every Python; equals tomllib where tomllib exists."""
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import score_eval  # noqa: E402

try:
    import tomllib
except ImportError:   # Python < 3.11
    tomllib = None


class SubsetReader(unittest.TestCase):
    VALID = [
        ("", {}),
        ("# only a comment\n\n", {}),
        ('a = "x"  # trailing comment', {"a": "x"}),
        ("[t]\nk = 1\nf = 0.5\nn = -2\ne = 1e-3\nu = 1_000\nb = true\nc = false\n",
         {"t": {"k": 1, "f": 0.5, "n": -2, "e": 1e-3, "u": 1000, "b": True, "c": False}}),
        ('[t]\n"P@5" = { min = 0.5 }\n\'R@10\' = { max = 1, message = "m # not a comment" }\n',
         {"t": {"P@5": {"min": 0.5}, "R@10": {"max": 1, "message": "m # not a comment"}}}),
        ('[a.b]\nx = 1\n[a]\ny = 2\n', {"a": {"b": {"x": 1}, "y": 2}}),
        ('[ a . "b c" ]\nx = 1\n', {"a": {"b c": {"x": 1}}}),
        ('s = "tab\\there \\"q\\" \\u00e9 \\\\"\n', {"s": 'tab\there "q" \u00e9 \\'}),
        ("s = 'C:\\path'\n", {"s": "C:\\path"}),
        ('arr = ["a", "b",]\nempty = []\nnums = [1, 2.5]\n', {"arr": ["a", "b"], "empty": [], "nums": [1, 2.5]}),
        ("t = {}\n", {"t": {}}),
        ("\ufeffa = 1\r\nb = 2\r\n", {"a": 1, "b": 2}),
    ]

    REJECTED = [
        ("[[x]]\n", "t.toml:1: arrays of tables are outside the supported TOML subset"),
        ("a.b = 1\n", "t.toml:1: dotted keys are outside the supported TOML subset"),
        ("a = [\n  1,\n]\n", "t.toml:1: arrays must close on the same line in the supported TOML subset"),
        ('a = """x"""\n', "t.toml:1: multi-line strings are outside the supported TOML subset"),
        ("d = 2024-01-01\n", "t.toml:1: dates, times, hex/octal/binary and special numbers are outside the supported TOML subset"),
        ("h = 0x10\n", "t.toml:1: dates, times, hex/octal/binary and special numbers are outside the supported TOML subset"),
        ("i = inf\n", "t.toml:1: expected a string, number, boolean, array or inline table"),
        ("a = 1\na = 2\n", "t.toml:2: duplicate key 'a'"),
        ("[t]\n[t]\n", "t.toml:2: table [t] defined twice"),
        ("a = 1\n[a]\n", "t.toml:2: key 'a' is already a value, not a table"),
        ("a = {x = 1}\n[a]\n", "t.toml:2: key 'a' is already a value, not a table"),
        ('a = "x\n', "t.toml:1: unterminated string"),
        ("a = 1 2\n", "t.toml:1: unexpected text after the value"),
        ("a\n", "t.toml:1: expected '=' after key"),
        ("P@5 = 1\n", 't.toml:1: a key with "@" must be quoted, e.g. "P@..."'),
        ("a = { b = { c = 1 } }\n", "t.toml:1: inline tables inside arrays or inline tables are outside the supported TOML subset"),
        ("a = 01\n", "t.toml:1: dates, times, hex/octal/binary and special numbers are outside the supported TOML subset"),
        ('a = "\\q"\n', "t.toml:1: bad escape in string"),
    ]

    def test_valid(self):
        for text, want in self.VALID:
            with self.subTest(text=text):
                self.assertEqual(score_eval._toml_subset(text, "t.toml")[0], want)
                self.assertEqual(score_eval.parse_toml(text, "t.toml"), want)
                if tomllib is not None:
                    self.assertEqual(tomllib.loads(text.lstrip("\ufeff")), want)

    def test_rejected_with_line(self):
        for text, message in self.REJECTED:
            with self.subTest(text=text):
                with self.assertRaises(score_eval.ScoreError) as cm:
                    score_eval.parse_toml(text, "t.toml")
                self.assertTrue(str(cm.exception).startswith(message), str(cm.exception))

    def test_line_numbers_of_keys(self):
        _, lines = score_eval._toml_subset("# c\n[a]\nx = 1\n\n[b.c]\ny = { min = 1 }\n", "t")
        self.assertEqual(lines[("a",)], 2)
        self.assertEqual(lines[("a", "x")], 3)
        self.assertEqual(lines[("b", "c")], 5)
        self.assertEqual(lines[("b", "c", "y", "min")], 6)

    def test_committed_gates_file(self):
        text = (ROOT / "gates.toml").read_text(encoding="utf-8")
        ours = score_eval._toml_subset(text, "gates.toml")[0]
        self.assertEqual(ours["baseline"]["pass_rate"], {"min": 0.95})
        self.assertEqual(ours["perturb"]["pass_rate"], {"min": 0.90})
        self.assertEqual(ours["regression"]["max_drop"], {"pass_rate": 0.02, "precision": 0.02, "chr": 0.02})
        if tomllib is None:
            self.skipTest("tomllib needs Python 3.11+; the subset reader was checked above")
        self.assertEqual(ours, tomllib.loads(text))


if __name__ == "__main__":
    unittest.main()
