"""Definitions a corpus states (mini_rag/query/glossary.py) and the bridges they make
(relevance.expansion_bridges).  Stems are Snowball English's, worked out by hand:
chargeback -> chargeback, card -> card, dispute/disputes -> disput, payment -> payment."""
import unittest
from types import SimpleNamespace

from mini_rag.text.analysis import Analyzer
from mini_rag.query.glossary import (definition_bridges, definition_table, example_bridges,
                               example_table, find_definitions, find_examples, find_scope, scope_table)
from mini_rag.answer.relevance import covered, expansion_bridges
from tests.test_abbrev import FakeIndex as _AbbrevIndex

A = Analyzer()

CHARGEBACK = "**Chargeback**: a payment reversed by a card issuer after the cardholder disputes the charge."
RPO = ("**RPO (recovery point objective)**: the maximum amount of data, measured in time, that may be\n"
       "lost when a system is restored after a failure.\n\n**RTO**: the maximum time to restore.")


def FakeIndex(*texts):
    """The chunks, analyzer and doc_freq the tables read (test_abbrev's fake index)."""
    return _AbbrevIndex(texts)


class FindTest(unittest.TestCase):
    def test_table(self):
        cases = [
            (CHARGEBACK, [("Chargeback", "a payment reversed by a card issuer after the cardholder disputes "
                                         "the charge.")]),
            # an entry runs on over its wrapped lines, up to a blank line or the next entry
            (RPO, [("RPO (recovery point objective)", "the maximum amount of data, measured in time, that may "
                                                      "be lost when a system is restored after a failure."),
                   ("RTO", "the maximum time to restore.")]),
            ("- **Custodian** - a person who holds records under a legal hold.",
             [("Custodian", "a person who holds records under a legal hold.")]),
            # prose: a subject, then a definition verb
            ("Risk means the combination of the probability of harm and its severity. More text.",
             [("Risk", "the combination of the probability of harm and its severity.")]),
            ("Done. Harm is defined as damage to health.", [("Harm", "damage to health.")]),
            # ... but a subject with a determiner states a fact about one thing
            ("The Pro plan means more seats.", []),
            ("This means that refunds are late.", []),
            # bold that is no entry: no colon or dash after it
            ("Refunds are **not** issued in cash.", []),
            ("**Seven words is far too long for a term**: no.", []),
        ]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(find_definitions(text), want)


class TableTest(unittest.TestCase):
    def test_terms_and_alternatives(self):
        table = definition_table(FakeIndex(CHARGEBACK, RPO, "No definitions here."))
        self.assertEqual(table[0], ([frozenset({"chargeback"})],
                                    frozenset({"payment", "revers", "card", "issuer", "cardhold", "disput", "charg"})))
        # the short form and the long form are both the term; their words are not the definition's
        self.assertEqual(table[1][0], [frozenset({"rpo"}), frozenset({"recoveri", "point", "object"})])
        self.assertNotIn("rpo", table[1][1])
        self.assertEqual(len(table), 3)

    def test_cached_per_index_and_deduplicated(self):
        index = FakeIndex(CHARGEBACK, CHARGEBACK)
        self.assertEqual(len(definition_table(index)), 1)
        self.assertIs(definition_table(index), definition_table(index))


class BridgesTest(unittest.TestCase):
    TABLE = [([frozenset({"chargeback"})], frozenset({"payment", "card", "disput", "revers"}))]

    def test_table(self):
        cases = [
            # two terms of the definition: each is covered by the defined term
            (["card", "disput", "evid"], {"card": [{"chargeback"}], "disput": [{"chargeback"}]}),
            (["card", "evid"], {}),                      # one shared term is not enough
            (["card", "disput", "chargeback"], {}),      # the question names the term itself
            (["card", "card", "evid"], {}),              # distinct terms
        ]
        for q_terms, want in cases:
            with self.subTest(q_terms=q_terms):
                got = definition_bridges(q_terms, self.TABLE)
                self.assertEqual({t: [set(a) for a in alts] for t, alts in got.items()}, want)
        self.assertEqual(definition_bridges(["card", "evid"], self.TABLE, min_shared=1),
                         {"card": [frozenset({"chargeback"})]})

    def test_in_relevance(self):
        index = FakeIndex(CHARGEBACK)
        q = "By when must evidence for a card dispute reach the processor?"
        sentence = set(A.analyze("Evidence for a dispute is due within 7 days of the chargeback notice."))
        self.assertTrue(covered("card", sentence, expansion_bridges(q, {}, A, index)))
        off = {"answer": {"definitions": False}}
        self.assertFalse(covered("card", sentence, expansion_bridges(q, off, A, index)))

    def test_other_forms_of_a_question_term(self):
        # forms: "disputed" -> disput is in the definition though the question says "contest"
        table = self.TABLE
        self.assertEqual(definition_bridges(["card", "contest"], table), {})
        got = definition_bridges(["card", "contest"], table, forms={"contest": ["disput"]})
        self.assertEqual({t: [set(a) for a in alts] for t, alts in got.items()},
                         {"card": [{"chargeback"}], "contest": [{"chargeback"}]})
        # a form of another term does not count for this one
        self.assertEqual(definition_bridges(["card", "contest"], table, forms={"card": ["disput"]}), {})

    def test_forms_in_relevance(self):
        # RPO's definition says "lost" and "failure"; the question "lose" and "fails".
        # Analyzed: data, lose, fail (question) and data, lost, failur (definition): one
        # term shared as written, three through lose/lost (synonyms) and fail/failur (derive)
        index = FakeIndex(RPO, "Tier 1 systems have an RPO of 15 minutes.")
        q = "How much data could we lose if the platform fails?"
        table_row = set(A.analyze("Tier 1 systems have an RPO of 15 minutes."))
        bridges = expansion_bridges(q, {}, A, index)
        self.assertTrue(covered("lose", table_row, bridges))
        self.assertTrue(covered("fail", table_row, bridges))
        for off in ({"answer": {"synonyms": False, "derivations": False}}, {"answer": {"definitions": False}}):
            with self.subTest(off=off):
                self.assertFalse(covered("lose", table_row, expansion_bridges(q, off, A, index)))
        # a misspelt "lsoe", corrected by the retriever, has the same bridges
        typo = expansion_bridges("How much data could we lsoe if the platform fails?", {}, A, index,
                                 corrections={"lsoe": "lose"})
        self.assertTrue(covered("lose", table_row, typo))



PART11 = ("Electronic signatures must use at least two distinct identification components, such as an\n"
          "identification code and a password (section 11.200).")


class ExamplesTest(unittest.TestCase):
    """Hearst's "X such as A and B" lists.  Stems: components -> compon, identification ->
    identif, code -> code, password -> password, media -> media, drives -> drive."""

    def test_find(self):
        cases = [
            # the class word before "such as"; articles dropped; a wrapped line is one text
            (PART11, [("components", ["identification code", "password"])]),
            ("Removable media such as USB drives, SD cards or external disks are blocked.",
             [("media", ["USB drives", "SD cards", "external disks are blocked"])]),
            ("Use a manager, e.g. the vault or a hardware key.", [("manager", ["vault", "hardware key"])]),
            ("All records, including audit trails and backups, are kept.", [("records", ["audit trails", "backups"])]),
            # without "and"/"or" the list is its first item; a comma ends it
            ("Services delivered, such as workshops, are not refunded.", [("delivered", ["workshops"])]),
            # an item longer than four words ends the list before it
            ("Tools such as a very long named internal thing and x.", []),
            ("There is no such assurance.", []),
        ]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(find_examples(text), want)

    def test_table(self):
        index = FakeIndex(PART11, "Services delivered, such as workshops, are not refunded.", PART11)
        # one example is no list; the repeated chunk is listed once
        self.assertEqual(example_table(index),
                         [(frozenset({"compon"}), [frozenset({"identif", "code"}), frozenset({"password"})])])

    def test_bridges(self):
        table = [(frozenset({"compon"}), [frozenset({"identif", "code"}), frozenset({"password"})])]
        forms = {"id": ["identif"]}
        cases = [
            # both examples named ("ID" a form of "identification"): each term is covered by the class
            (["id", "code", "password", "session"], forms,
             {"id": [{"compon"}], "code": [{"compon"}], "password": [{"compon"}]}),
            (["identif", "code", "password"], None,
             {"identif": [{"compon"}], "code": [{"compon"}], "password": [{"compon"}]}),
            (["password", "length"], forms, {}),          # one example is about itself
            (["code", "password"], None, {}),             # "code" alone is not "identification code"
            (["compon", "code", "identif", "password"], None, {}),   # the class named itself
        ]
        for q_terms, f, want in cases:
            with self.subTest(q_terms=q_terms):
                got = example_bridges(q_terms, table, forms=f)
                self.assertEqual({t: [set(a) for a in alts] for t, alts in got.items()}, want)

    def test_in_relevance(self):
        # "ID" is a short form of "identification" (synonyms.py), so the question names both examples
        index = FakeIndex(PART11)
        q = "Must every signing use both the ID code and the password?"
        sentence = set(A.analyze("Only the first signing must use all signature components."))
        bridges = expansion_bridges(q, {}, A, index)
        for term in ("id", "code", "password"):
            self.assertTrue(covered(term, sentence, bridges), term)
        off = expansion_bridges(q, {"answer": {"examples": False}}, A, index)
        self.assertFalse(covered("password", sentence, off))


class ScopeTest(unittest.TestCase):
    def test_find_scope(self):
        cases = [
            ("This policy applies to every customer and user of the platform.",
             ["every customer and user of the platform"]),
            ("# Title\n\nThis procedure covers requests from individuals to access\ntheir data. More.",
             ["requests from individuals to access their data"]),
            ("Done. The SOP applies to the Leiden and Raleigh sites.", ["the Leiden and Raleigh sites"]),
            ("This note summarizes the EMA guideline on process validation.",
             ["the EMA guideline on process validation"]),
            # a statement about something else, or a scope word that is no scope statement
            ("This change applies to all lines.", []),
            ("The policy owner covers the costs.", []),
            ("Refunds apply to annual plans.", []),
        ]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(find_scope(text), want)

    def test_table_per_document(self):
        index = SimpleNamespace(analyzer=A, chunks=[
            SimpleNamespace(doc_id="aup", text="This policy applies to every customer."),
            SimpleNamespace(doc_id="aup", text="Security testing needs approval."),
            SimpleNamespace(doc_id="dsr", text="This procedure covers erasure requests. The SOP covers exports."),
        ])
        self.assertEqual(scope_table(index), {"aup": frozenset({"everi", "custom"}),
                                              "dsr": frozenset({"erasur", "request", "export"})})
        self.assertEqual(scope_table(SimpleNamespace(analyzer=A)), {})     # no chunks: nothing


if __name__ == "__main__":
    unittest.main()
