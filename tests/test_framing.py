"""Conversational framing (mini_rag/query/framing.py): the question without greetings and asides."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mini_rag.query.framing import split_scenario, strip_framing   # noqa: E402


class StripFraming(unittest.TestCase):
    def test_table(self):
        cases = [
            # rule 1: a non-question segment opening with a cue and naming nothing
            ("Hi there! Which algorithm hashes passwords?", "Which algorithm hashes passwords?"),
            ("What are your support hours? Cheers.", "What are your support hours?"),
            ("How long are logs kept? Thanks in advance!", "How long are logs kept?"),
            ("Sorry if this was asked already: When does the board meet?", "When does the board meet?"),
            ("Quick question before my meeting: who approves refunds?", "who approves refunds?"),
            ("Dear team, quick question: is SSO included?", "is SSO included?"),
            # ... kept when it names something (a capital after its first word, a number)
            ("Sorry, our plan is Pro. What is the limit?", "Sorry, our plan is Pro. What is the limit?"),
            ("Hi, we have 40 seats. Is SSO included?", "Hi, we have 40 seats. Is SSO included?"),
            # ... and a preamble with no cue is context, not framing
            ("Regarding the Pro plan: how many seats?", "Regarding the Pro plan: how many seats?"),
            # rule 2: asides set off by commas, a cue opening the question
            ("How must paper records be destroyed, asking for a colleague?", "How must paper records be destroyed?"),
            ("How much, if you happen to know, does it cost?", "How much does it cost?"),
            ("How long, please, are logs kept?", "How long are logs kept?"),
            ("Thanks, how long are logs kept?", "how long are logs kept?"),
            # rule 3: nothing but framing -> unchanged
            ("Hi there!", "Hi there!"),
            ("Thanks!", "Thanks!"),
            # no framing, odd punctuation: unchanged
            ("Is version 2.1 supported?", "Is version 2.1 supported?"),
            # a dot or colon inside a number or time is no segment end
            ("Is anything other than TLS 1.2 allowed? Cheers.", "Is anything other than TLS 1.2 allowed?"),
            ("Is the 10:30 meeting on? Thanks!", "Is the 10:30 meeting on?"),
            ("What does e.g. mean?", "What does e.g. mean?"),
            ("", ""),
        ]
        for question, want in cases:
            with self.subTest(question=question):
                self.assertEqual(strip_framing(question), want)

    def test_whitespace_only_change_returns_the_question(self):
        self.assertEqual(strip_framing("How long  are logs kept?"), "How long  are logs kept?")


class InPipeline(unittest.TestCase):
    def test_trace_keeps_the_question_as_asked(self):
        from mini_rag.config import DEFAULTS
        from mini_rag.pipeline import Pipeline
        from mini_rag.records import Retrieval
        import copy

        seen = []

        class Retriever:
            index = None

            def retrieve(self, question):
                seen.append(question)
                return Retrieval(question=question, hits=[])

        cfg = copy.deepcopy(DEFAULTS)
        row = Pipeline(cfg, retriever=Retriever()).answer("Hi there! How long are logs kept?", qid="Q1").row
        self.assertEqual(seen, ["How long are logs kept?"])
        self.assertEqual(row["q"], "Hi there! How long are logs kept?")
        cfg["answer"]["strip_framing"] = False
        cfg["answer"]["scenario_split"] = False     # else "Hi there!" is a situation before the ask
        Pipeline(cfg, retriever=Retriever()).answer("Hi there! How long are logs kept?")
        self.assertEqual(seen[-1], "Hi there! How long are logs kept?")


class SplitScenario(unittest.TestCase):
    """Issue 30: (situation, ask) of a scenario question; ("", text) for anything else."""

    def test_table(self):
        cases = [
            ("I moved to Leeds last year. My contract ends soon. How long is the notice period?",
             ("I moved to Leeds last year. My contract ends soon.", "How long is the notice period?")),
            ("We pay by purchase order. Are we still on net 30 payment terms?",
             ("We pay by purchase order.", "Are we still on net 30 payment terms?")),
            # a preamble ending in ":" belongs to the ask
            ("I run the EU team. Regarding the Pro plan: how many seats are included?",
             ("I run the EU team.", "Regarding the Pro plan: how many seats are included?")),
            # a statement after the question is situation too
            ("How long are logs kept? We are being audited!", ("We are being audited!", "How long are logs kept?")),
            # not scenarios: one sentence, a preamble only, two questions, no question at all
            ("How long are logs kept?", ("", "How long are logs kept?")),
            ("Regarding the Pro plan: how many seats?", ("", "Regarding the Pro plan: how many seats?")),
            ("Is SSO included? And is SCIM?", ("", "Is SSO included? And is SCIM?")),
            ("One sentence only.", ("", "One sentence only.")),
            # no question mark: the last sentence asks
            ("I moved to Leeds. Tell me the notice period.", ("I moved to Leeds.", "Tell me the notice period.")),
            ("", ("", "")),
        ]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(split_scenario(text), want)


if __name__ == "__main__":
    unittest.main()
