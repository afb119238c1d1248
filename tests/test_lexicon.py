"""referee/lexicon.py, the scorer's word data (issue 40 item 4): the one number, month and unit
table, checked on hand-chosen inputs (the values below are written by hand, from the calendar,
arithmetic and the unit each word names), directly and through the two readers that use them
(answer normalisation, reading 3; grounding's number_values, reading 4); and an AST scan that
keeps word lists in the lexicon: no other module of the package defines a collection of ten or
more plain words, a word table or a regex alternation of ten or more plain words."""
import ast
import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import score_eval as se  # noqa: E402

PACKAGE = os.path.join(ROOT, "referee")
MIN_WORDS = 10
_PLAIN = re.compile(r"[a-z][a-z'\u2019.]*")
# Collections of plain words that are names of switches or commands, not words read in a text.
NOT_WORD_LISTS = {("answers", "ANSWER_NORMS"), ("outputs", "_WRITERS"), ("outputs", "_SNIFF_ORDER")}


class NumberTable(unittest.TestCase):
    def test_values_and_kinds(self):
        cases = {"zero": (0, "cardinal"), "nineteen": (19, "cardinal"), "twenty": (20, "cardinal"),
                 "ninety": (90, "cardinal"), "hundred": (100, "scale"), "million": (1000000, "scale"),
                 "trillion": (1000000000000, "scale"), "bn": (1000000000, "scale_abbreviation"),
                 "first": (1, "ordinal"), "twelfth": (12, "ordinal"), "dozen": (12, "amount"),
                 "half": (0.5, "amount")}
        for word, want in cases.items():
            with self.subTest(word=word):
                self.assertEqual(se.NUMBER_WORDS[word], want)
        self.assertNotIn("eleventy", se.NUMBER_WORDS)
        # 20 cardinals below twenty, 8 tens, 5 scales, 6 abbreviations, 12 ordinals, 4 amounts
        self.assertEqual(len(se.NUMBER_WORDS), 20 + 8 + 5 + 6 + 12 + 4)

    def test_answer_normalisation_reads_numbers(self):
        cases = [("twenty-one", ["21"]), ("one hundred and five", ["105"]), ("3 million", ["3000000"]),
                 ("two million", ["2000000"]), ("the first", ["1"]), ("5th", ["5"]), ("1,000", ["1000"]),
                 # answer normalisation reads no amount word and no scale abbreviation: "5 m" is metres
                 ("a dozen", ["dozen"]), ("5 m", ["5", "m"]), ("5 metres", ["5", "m"])]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(se.answer_tokens(text), want)

    def test_grounding_view(self):
        self.assertEqual((se._NUM_WORDS["eight"], se._NUM_WORDS["thousand"], se._NUM_WORDS["tenth"],
                          se._NUM_WORDS["half"]), (8, 1000, 10, 0.5))
        for word in ("eleventh", "twelfth", "million", "k"):
            with self.subTest(word=word):
                self.assertNotIn(word, se._NUM_WORDS)
        self.assertEqual(se._SCALE, {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6,
                                     "billion": 1e9, "b": 1e9, "bn": 1e9, "trillion": 1e12, "tn": 1e12})
        # after a currency symbol "m" is millions; after a bare number it is metres
        self.assertEqual([v[1:] for v in se.number_values("$5m")], [(5e6, 1, "dollar")])
        self.assertEqual([v[1:] for v in se.number_values("5 m")], [(5.0, 1, "m")])
        self.assertEqual([v[1] for v in se.number_values("3bn and 2 thousand")], [3e9, 2e3])

    def test_number_pattern_scales_are_the_table(self):
        alts = re.search(r"\(\?P<scale>([^()]*)\)", se._NUM_RX.pattern).group(1).split("|")
        self.assertEqual(sorted(alts), sorted(se._SCALE))


class MonthTable(unittest.TestCase):
    def test_spellings(self):
        cases = {"january": 1, "jan": 1, "may": 5, "sep": 9, "sept": 9, "september": 9, "dec": 12,
                 "december": 12}
        for word, want in cases.items():
            with self.subTest(word=word):
                self.assertEqual(se.MONTH_NUMBERS[word], want)
        # 12 names, 11 three-letter abbreviations ("may" is its own), "sept"
        self.assertEqual(len(se.MONTH_NUMBERS), 12 + 11 + 1)

    def test_readers(self):
        # answers: abbreviations spelled out, ISO dates in words
        self.assertEqual(se.answer_tokens("Sept 5, 1998"), ["september", "5", "1998"])
        self.assertEqual(se.answer_tokens("1998-09-05"), ["5", "september", "1998"])
        # the splitter: no sentence ends after a month's abbreviation ("Jan."), one does after "May."
        text = "It opened on Jan. 3 in Leeds. It closed in May. Then it moved."
        got = [text[s:e].strip() for s, e in se.split_sentences(text)]
        self.assertEqual(got, ["It opened on Jan. 3 in Leeds.", "It closed in May.", "Then it moved."])


class UnitTable(unittest.TestCase):
    def test_classes(self):
        same = [("lbs", "\u00a3", "pound", "pounds", "gbp", "lb"), ("$", "usd", "dollars"),
                ("\u20ac", "eur", "euros"), ("\u00a5", "yen"), ("km", "kms", "kilometres", "kilometer"),
                ("%", "percent", "pct"), ("hr", "hours")]
        names = []
        for group in same:
            with self.subTest(group=group):
                self.assertEqual({se.UNITS[w] for w in group}, {se.UNITS[group[0]]})
            names.append(se.UNITS[group[0]])
        self.assertEqual(len(set(names)), len(same))          # seven different classes
        self.assertNotEqual(se.UNITS["lb"], se.UNITS["kg"])
        self.assertNotIn("m", se.UNITS)                       # a bare "m" is left alone (million or metre)

    def test_both_readers_use_it(self):
        # answers: "£5" and "5 pounds" are the same words
        self.assertEqual(sorted(se.answer_tokens("£5")), sorted(se.answer_tokens("5 pounds")))
        self.assertTrue(se.match_answer("It costs £5.", ["5 pounds"]).correct)
        self.assertFalse(se.match_answer("It costs €5.", ["5 pounds"]).correct)
        # grounding: the currency before an amount, by the same table
        for text, word in (("\u00a3 575,000", "lbs"), ("$160 million", "usd"), ("\u20ac 3", "euros"),
                           ("\u00a5300", "yen")):
            with self.subTest(text=text):
                self.assertEqual(se.number_values(text)[0][3], se.UNITS[word])

    def test_every_currency_of_the_number_pattern_has_a_class(self):
        symbols = []
        for code in range(0x20, 0x3000):
            m = se._NUM_RX.match(chr(code) + "5")
            if m and m.group("cur"):
                symbols.append(m.group("cur"))
        self.assertEqual(sorted(symbols), sorted("$\u00a3\u20ac\u00a5"))
        for ch in symbols:
            self.assertIn(ch, se.UNITS)


def _plain_words(node) -> list:
    """The plain words a collection node holds: string elements of a tuple / list / set literal or
    of the one argument of frozenset(), set(), tuple(), list(); the words of "...".split(); the
    string keys of a dict literal whose values are all constants (a word table)."""
    def strs(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            return [n.value]
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "split"
                and isinstance(n.func.value, ast.Constant) and isinstance(n.func.value.value, str)):
            return n.func.value.value.split()
        if isinstance(n, (ast.Tuple, ast.List, ast.Set)):
            return [e.value for e in n.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return []
    got: list = []
    if isinstance(node, ast.Dict):
        if all(isinstance(v, ast.Constant) for v in node.values):
            got = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) or (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split"):
        got = strs(node)
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
          and node.func.id in ("frozenset", "set", "tuple", "list") and node.args):
        got = strs(node.args[0])
    return [w for w in got if _PLAIN.fullmatch(w)]


def _alternation_words(pattern: str) -> int:
    """The most plain-word alternatives of one group (?:a|b|...) of a regex source."""
    best = 0
    for group in re.findall(r"\(\?:([^()]*)\)", pattern):
        best = max(best, sum(1 for alt in group.split("|") if _PLAIN.fullmatch(alt)))
    return best


def word_lists(source: str, module: str) -> list:
    """(line, what) of every word list in a module's source (see _plain_words, _alternation_words),
    one per line."""
    tree = ast.parse(source)
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for sub in ast.walk(node):
                names[id(sub)] = [t.id for t in targets if isinstance(t, ast.Name)]
    out = {}
    for node in ast.walk(tree):
        if any((module, n) in NOT_WORD_LISTS for n in names.get(id(node), ())):
            continue
        words = _plain_words(node)
        if len(words) >= MIN_WORDS:
            out.setdefault(node.lineno, "%d plain words: %s ..." % (len(words), " ".join(words[:5])))
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and _alternation_words(node.value) >= MIN_WORDS):
            out.setdefault(node.lineno, "a regex alternation of %d plain words" % _alternation_words(node.value))
    return sorted(out.items())


class WordListsStayInTheLexicon(unittest.TestCase):
    def test_the_scan_sees_a_word_list(self):
        words = " ".join("w%s" % c for c in "abcdefghij")
        cases = {'X = frozenset("%s".split())' % words: 1,
                 "X = (%s)" % ", ".join('"w%s"' % c for c in "abcdefghij"): 1,
                 "def f():\n    return {%s}" % ", ".join('"w%s": 1' % c for c in "abcdefghij"): 1,
                 'X = re.compile(r"\\b(?:%s)\\b")' % words.replace(" ", "|"): 1,
                 'X = frozenset("%s".split())' % " ".join(words.split()[:9]): 0,     # nine words
                 'X = {"a": f(1), %s}' % ", ".join('"w%s": 1' % c for c in "abcdefghij"): 0,   # a record
                 'ANSWER_NORMS = (%s)' % ", ".join('"w%s"' % c for c in "abcdefghij"): 0}      # exempt
        for source, want in cases.items():
            with self.subTest(source=source[:50]):
                self.assertEqual(len(word_lists(source, "answers")), want)

    def test_no_module_but_the_lexicon_defines_a_word_list(self):
        found = {}
        for name in sorted(os.listdir(PACKAGE)):
            if not name.endswith(".py") or name == "lexicon.py":
                continue
            with open(os.path.join(PACKAGE, name), encoding="utf-8") as fh:
                hits = word_lists(fh.read(), name[:-3])
            if hits:
                found[name] = hits
        self.assertEqual(found, {}, "word data belongs in referee/lexicon.py, with the data that justified it")

    def test_the_lexicon_holds_the_word_lists(self):
        with open(os.path.join(PACKAGE, "lexicon.py"), encoding="utf-8") as fh:
            hits = word_lists(fh.read(), "lexicon")
        self.assertGreaterEqual(len(hits), 10)


if __name__ == "__main__":
    unittest.main()
