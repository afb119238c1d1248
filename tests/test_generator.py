"""The generator interface (mini_rag/answer/generator.py): the registry, the extractive generator,
the command protocol and its failures, and validation of any generator's output."""
import copy
import json
import os
import shutil
import sys
import tempfile
import time
import unittest

from mini_rag.config import DEFAULTS
from mini_rag.errors import MiniRagError
from mini_rag.answer.generator import (CommandGenerator, ExtractiveGenerator, Generator, generate_answer,
                                get_generator)
from mini_rag.records import Fact, Retrieval
from mini_rag.answer.synthesize import AnswerSentence, phase_c

FACTS = [Fact("Audit logs are kept for 90 days. Backups are separate.", "audit", 1, "audit#p1", 0.8),
         Fact("Refunds take 5 business days.", "refunds", 2, "refunds#p3", 0.4)]
Q = "How long are audit logs kept?"


def context():
    return {"retrieval": Retrieval(question=Q, hits=[]), "config": copy.deepcopy(DEFAULTS)}


def command(script):
    """A generator command: this Python running ``script`` (reads the request on stdin)."""
    return [sys.executable, "-c", script]


ECHO = ("import json, sys\n"
        "req = json.load(sys.stdin)\n"
        "f = req['facts'][0]\n"
        "print(json.dumps({'answer_sentences': [{'sentence': req['question'], 'pdf': f['pdf'],"
        " 'page': f['page'], 'chunk_id': f['chunk_id']}], 'confidence': 'high',"
        " 'seen': [req['max_sentences'], len(req['facts'])]}))\n")


class RegistryTest(unittest.TestCase):
    def test_get_generator(self):
        self.assertIsInstance(get_generator("extractive"), ExtractiveGenerator)
        self.assertIsInstance(get_generator(copy.deepcopy(DEFAULTS), index=None), ExtractiveGenerator)
        cfg = copy.deepcopy(DEFAULTS)
        cfg["answer"].update(generator="command", generator_command=["prog", "--flag"], generator_timeout=2.5)
        gen = get_generator(cfg)
        self.assertIsInstance(gen, CommandGenerator)
        self.assertEqual((gen.argv, gen.timeout), (["prog", "--flag"], 2.5))

    def test_errors(self):
        cases = [
            ("extractiv", "[answer] generator: unknown generator 'extractiv' (known: command, extractive); "
                          "did you mean 'extractive'?"),
            ("llm", "[answer] generator: unknown generator 'llm' (known: command, extractive)"),
            ("command", '[answer] generator_command must name the program to run when generator = "command", got []'),
            (42, "get_generator needs a config or a generator name, got 42"),
        ]
        for arg, message in cases:
            with self.subTest(arg=arg):
                with self.assertRaises(MiniRagError) as cm:
                    get_generator(arg)
                self.assertEqual(str(cm.exception), message)
        for argv, timeout, message in (([], 1.0, "generator command must be a non-empty list of strings, got []"),
                                       (["x"], 0, "generator timeout must be > 0 seconds, got 0")):
            with self.subTest(argv=argv, timeout=timeout):
                with self.assertRaises(MiniRagError) as cm:
                    CommandGenerator(argv, timeout)
                self.assertEqual(str(cm.exception), message)

    def test_base_is_abstract(self):
        with self.assertRaises(NotImplementedError):
            Generator().generate(Q, FACTS, {})


class ExtractiveTest(unittest.TestCase):
    def test_same_as_phase_c_and_validated(self):
        gen = ExtractiveGenerator(None, copy.deepcopy(DEFAULTS))
        payload = gen.generate(Q, FACTS, context())
        self.assertEqual(payload, phase_c(Q, FACTS, context()["retrieval"], None, DEFAULTS).to_json())
        answer, errors = generate_answer(gen, Q, FACTS, context())
        self.assertEqual(errors, [])
        self.assertEqual(answer.sentences, [AnswerSentence("Audit logs are kept for 90 days.", "audit", 1, "audit#p1")])
        self.assertEqual(answer.confidence, payload["confidence"])
        self.assertEqual(answer.detail["generator"], "extractive")
        self.assertEqual(answer.detail["parts"], payload["detail"]["parts"])

    def test_refusal_reasons_carried(self):
        gen = ExtractiveGenerator(None, copy.deepcopy(DEFAULTS))
        answer, errors = generate_answer(gen, "What is it?", FACTS, context())
        self.assertEqual((answer.refused, answer.reasons, errors), (True, ["no_question_terms"], []))
        answer, errors = generate_answer(gen, Q, [], context())
        self.assertEqual((answer.refused, answer.reasons, errors), (True, ["no_evidence"], []))


class CommandTest(unittest.TestCase):
    def test_protocol_round_trip(self):
        gen = CommandGenerator(command(ECHO), timeout=20)
        payload = gen.generate(Q, FACTS, context())
        self.assertEqual(payload["seen"], [6, 2])
        answer, errors = generate_answer(gen, Q, FACTS, context())
        self.assertEqual(errors, [])
        self.assertEqual(answer.sentences, [AnswerSentence(Q, "audit", 1, "audit#p1")])
        self.assertEqual((answer.confidence, answer.refused, answer.detail["generator"]), ("High", False, "command"))

    def test_output_is_validated(self):
        script = ("import json, sys; json.load(sys.stdin); print(json.dumps({'answer_sentences': ["
                  "{'sentence': 'Made up.', 'pdf': 'nowhere', 'page': 1, 'chunk_id': 'nowhere#p0'}],"
                  " 'confidence': 'sure'}))")
        answer, errors = generate_answer(CommandGenerator(command(script), 20), Q, FACTS, context())
        self.assertEqual((answer.refused, answer.reasons), (True, ["no_valid_sentence"]))
        self.assertEqual(errors, ["confidence must be High, Medium or Low, got 'sure'; using Low",
                                  "answer_sentences[0]: (pdf='nowhere', page=1, chunk_id='nowhere#p0') "
                                  "is not a phase B fact"])

    def test_failures(self):
        exe = repr(sys.executable)
        cases = [
            ("import sys; sys.stderr.write('boom\\n'); sys.exit(3)", 20,
             "generator command %s: exited with status 3: boom" % exe),
            ("print('not json')", 20, "generator command %s: stdout is not JSON, got 'not json'" % exe),
            ("print('[1, 2]')", 20, "generator command %s: stdout must be one JSON object, got '[1, 2]'" % exe),
            ("import time; time.sleep(5)", 0.3, "generator command %s: no answer within 0.3 seconds" % exe),
            # issue 44: hostile output is a GeneratorError, never an exception out of generate()
            ("print('[' * 500000)", 20, "generator command %s: stdout is JSON nested too deeply" % exe),
            ("print('{\"page\": ' + '7' * 5000 + '}')", 20,
             "generator command %s: stdout has a number of more than 100 digits" % exe),
            ("print('{\"page\": -' + '7' * 101 + '}')", 20,
             "generator command %s: stdout has a number of more than 100 digits" % exe),
        ]
        for script, timeout, message in cases:
            with self.subTest(script=script):
                with self.assertRaises(MiniRagError) as cm:
                    CommandGenerator(command(script), timeout).generate(Q, FACTS, context())
                self.assertEqual(str(cm.exception), message)
        payload = CommandGenerator(command("print('{\"page\": -' + '7' * 100 + '}')"), 20).generate(Q, FACTS, context())
        self.assertEqual(payload, {"page": -int("7" * 100)})             # 100 digits are read
        with self.assertRaises(MiniRagError) as cm:
            CommandGenerator(["/nonexistent/mini-rag-generator"]).generate(Q, FACTS, context())
        self.assertEqual(str(cm.exception), "generator command '/nonexistent/mini-rag-generator': not found")



def _alive(pid):
    """True while ``pid`` is a running (not zombie) process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


@unittest.skipUnless(hasattr(os, "killpg") and shutil.which("sh"), "POSIX process groups and sh")
class TimeoutKillsGroupTest(unittest.TestCase):
    """Issue 44 item 3: the timeout kills the program's whole process group and returns on time."""

    def run_for(self, script, timeout):
        start = time.monotonic()
        with self.assertRaises(MiniRagError) as cm:
            CommandGenerator(["sh", "-c", script], timeout).generate(Q, FACTS, context())
        return time.monotonic() - start, cm.exception

    def test_shell_child_does_not_hold_the_timeout(self):
        elapsed, exc = self.run_for("sleep 30", 1)
        self.assertEqual((exc.kind, str(exc)), ("timeout", "generator command 'sh': no answer within 1 seconds"))
        self.assertGreaterEqual(elapsed, 1.0)
        self.assertLess(elapsed, 4.0)

    def test_grandchild_is_killed(self):
        with tempfile.TemporaryDirectory() as tmp:
            pidfile = os.path.join(tmp, "pid")
            elapsed, exc = self.run_for("sleep 30 & echo $! > %s; wait" % pidfile, 1)
            with open(pidfile) as fh:
                pid = int(fh.read())
        self.assertEqual(exc.kind, "timeout")
        self.assertLess(elapsed, 4.0)
        for _ in range(50):                     # reaped by init shortly after the kill
            if not _alive(pid):
                break
            time.sleep(0.05)
        self.assertFalse(_alive(pid), "sleep %d outlived the generator's timeout" % pid)

    def test_child_holding_stdout_after_exit(self):
        # the program exits at once but leaves a child holding stdout: its output never ends
        elapsed, exc = self.run_for("echo '{}'; sleep 30 &", 1)
        self.assertEqual(exc.kind, "timeout")
        self.assertLess(elapsed, 4.0)

    def test_clean_exit_is_not_delayed(self):
        start = time.monotonic()
        payload = CommandGenerator(["sh", "-c", "cat > /dev/null; echo '{\"k\": 1}'"], 20).generate(
            Q, FACTS, context())
        self.assertEqual(payload, {"k": 1})
        self.assertLess(time.monotonic() - start, 4.0)


if __name__ == "__main__":
    unittest.main()
