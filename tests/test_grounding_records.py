"""Issue 41 item 4: what grounding reads besides prose (score_eval.py, reading 4).

Every expected value below is worked out by hand from the rules in the docstrings:

1. A chunk that is a JSON record is read field by field (``structured_text``): key words split
   at capitals and underscores, adjacent key words joined, true as "yes", false as "no" before
   the key's last word, null left out, 24-hour clock times also in 12-hour form.  Text that
   is not a JSON object or array, or that JSON cannot read, is left as it is.
2. A false field is a negation an answer must not drop ("negation of 'seat' differs").
3. An answer written from a record gets the model's "structured" operating point.
4. Names: an acronym of a run of the chunks' capitalised words ("UN" for "United Nations");
   a form derived from a chunk word by at most 3 letters, the word at least 5 letters and 70%
   of the name ("Venezuelan" / "Venezuela"; not "Johnson" / "John", not "Robertson" / "Robert").
5. ``novel_pairs``: the share of a sentence's adjacent content-word pairs that are adjacent
   in no chunk sentence.
"""
import json
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import score_eval as se  # noqa: E402

RECORD = json.dumps({"name": "Cafe Uno", "hours": {"Monday": "8:0-14:0"},
                     "attributes": {"OutdoorSeating": False, "WiFi": "free", "RestaurantsTakeOut": True,
                                    "Music": None},
                     "stars": 4.5})
# no score decides: only numbers / names found in no chunk, flips and the share rule (off)
HARD_ONLY = {"bias": 0.0, "weights": [0.0] * 8, "threshold": 1.0, "share_cut": 1.0}


class RecordText(unittest.TestCase):
    def test_fields(self):
        want = "\n\n".join([
            "name: Cafe Uno.",
            "hours Monday: 8:00 8:00 am-14:00 2:00 pm.",
            "attributes Outdoor outdoorseating no Seating.",
            "attributes Wi Fi wifi: free.",
            "attributes Restaurants Take Out restaurantstake takeout yes.",
            "stars: 4.5."])
        self.assertEqual(se.structured_text(RECORD), want)

    def test_values_and_keys(self):
        self.assertEqual(se.structured_text('{"hours": "17:30-21:0", "business_stars": 4.5}'),
                         "hours: 17:30 5:30 pm-21:00 9:00 pm.\n\nbusiness stars businessstars: 4.5.")
        self.assertEqual(se.structured_text('{"WiFi": "no"}'), "Wi wifi no Fi.")
        self.assertEqual(se.structured_text('[1, "a b", true]'), "1.\n\na b.\n\nyes.")

    def test_not_a_record(self):
        deep = "[" * 100000 + "]" * 100000          # past the JSON reader's recursion: left as text
        nested = '{"a": ' * 30 + "1" + "}" * 30     # a value deeper than MAX_STRUCT_DEPTH: nothing read
        for text in ("Plain prose.", "{not json", "[1, 2", "{}", deep, nested):
            with self.subTest(text=text[:20]):
                self.assertEqual(se.structured_text(text), text)
                self.assertFalse(se.chunkset([text]).structured)
        self.assertTrue(se.chunkset(["Plain prose.", RECORD]).structured)


class RecordVerdicts(unittest.TestCase):
    def test_false_field_is_a_negation(self):
        g = se.ground("It has outdoor seating.", [RECORD], HARD_ONLY)
        self.assertEqual((g.checked, g.supported), (1, 0))
        self.assertEqual(g.unsupported[0]["why"], "negation of 'seat' differs from the chunk")
        g = se.ground("It has no outdoor seating.", [RECORD], HARD_ONLY)
        self.assertEqual((g.checked, g.supported), (1, 1))

    def test_record_operating_point(self):
        # every sentence scores 0.5: at or above the prose threshold 0.4, below the record one 0.6
        model = {"bias": 0.0, "weights": [0.0] * 8, "threshold": 0.4, "share_cut": 1.0,
                 "structured": {"bias": 0.0, "weights": [0.0] * 8, "threshold": 0.6, "share_cut": 1.0}}
        prose = "The cafe Cafe Uno offers takeout."
        self.assertEqual(len(se.ground("Cafe Uno offers takeout.", [prose], model).unsupported), 1)
        self.assertEqual(len(se.ground("Cafe Uno offers takeout.", [RECORD], model).unsupported), 0)


class Names(unittest.TestCase):
    def test_acronyms(self):
        self.assertEqual(se._acronyms("the United Nations Security Council met"),
                         {"un", "uns", "unsc", "ns", "nsc", "sc"})
        self.assertEqual(se._acronyms("the Department of Justice sued"), {"doj", "dj"})
        self.assertEqual(se._acronyms("Paris. London"), set())      # not one run: a full stop between

    def test_acronym_supported(self):
        text = "The UN met in Geneva."
        _, missing, _, _ = se.grounding_features(text, se.chunkset(["Delegates of the United Nations met in Geneva."]))
        self.assertEqual(missing, [])
        _, missing, _, _ = se.grounding_features(text, se.chunkset(["Delegates met in Geneva."]))
        self.assertEqual(missing, ["UN"])

    def test_derived_forms(self):
        cs = se.chunkset(["Officials in Venezuela met John."])
        self.assertEqual(se.grounding_features("The Venezuelan officials met Johnson.", cs)[1], ["Johnson"])
        cs = se.chunkset(["Robert spoke."])
        self.assertEqual(se.grounding_features("Then Robertson spoke.", cs)[1], ["Robertson"])


class NovelPairs(unittest.TestCase):
    def test_share(self):
        i = se.GROUND_FEATURES.index("novel_pairs")
        cs = se.chunkset(["Alpha beta gamma delta."])
        # pairs (alpha, beta) found adjacent; (beta, delta) and (delta, gamma) not: 2 of 3
        self.assertAlmostEqual(se.grounding_features("Alpha beta delta gamma.", cs)[0][i], 2 / 3)
        self.assertEqual(se.grounding_features("Alpha beta gamma delta.", cs)[0][i], 0.0)
        self.assertEqual(se.grounding_features("Alpha.", cs)[0][i], 0.0)       # no pair


if __name__ == "__main__":
    unittest.main()
