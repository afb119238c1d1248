"""The pluggable phase C generator: who writes the answer sentences.

A generator turns the question and the phase B facts into the QA contract's phase C
JSON (seed 001)::

    {"answer_sentences": [{"sentence": "...", "pdf": "...", "page": 1, "chunk_id": "..."}],
     "confidence": "High|Medium|Low"}

Whatever it returns then goes through ``validate.validate_synthesis`` (rows must cite a
phase B fact, at most 6, duplicates dropped, confidence normalized), and after that
through the same guards, decision and trace as the built-in generator.  So an LLM or
any other program can be plugged in without being trusted.

**Sentences and citations** (seed 001 allows 6 sentences, seed 000 blocks more than 5
citations; this is the one rule that joins them):

* an answer has at most ``[answer] max_sentences`` (6) sentences; rows past the sixth are
  dropped, with a warning in the trace's ``validation``;
* its sentences cite at most ``[guards] max_citations`` (5) **distinct** chunks; a sixth
  distinct chunk BLOCKs the answer (``invalid_citations:6 citations, at most 5 allowed``);
* sentences citing the same chunk share it: the chunk is one citation (listed once in
  ``answer_json.citations``), never a duplicate; only a row repeating an earlier row's
  chunk *and* sentence is dropped.

So six sentences over five chunks are answered; six sentences over six chunks are not.
The command protocol sends both limits to the program.

==========================================  =================================================
``Generator``                               base class: ``generate(question, facts, context)``
``ExtractiveGenerator(index, config)``      the built-in rule-based ``synthesize.phase_c``
``CommandGenerator(argv, timeout=30.0)``    runs a local program: JSON in on stdin, out on stdout
``get_generator(config_or_name, index)``    the generator a config (``[answer] generator``) names
``generate_answer(gen, question, facts,     generate + validate -> ``(Answer, errors)``
context, max_sentences=6)``
``GENERATORS``                              the registry: name -> class
==========================================  =================================================

``context`` is a dict: ``"retrieval"`` (the :class:`~mini_rag.records.Retrieval`, needed
by the extractive generator for typo corrections and hit headings), ``"config"`` (the
full configuration) and, from the pipeline, ``"analysis"`` (the question's
``question.QuestionAnalysis``, which the extractive generator reads instead of analyzing
the question again); a generator ignores keys it does not use.

The command protocol: the program gets one JSON object on stdin, ``{"question": str,
"facts": [{"quote", "pdf", "page", "chunk_id", "score"}, ...], "max_sentences": int,
"max_citations": int}``,
and must print one phase C JSON object on stdout and exit 0.  It runs without a shell,
in the current directory, with the current environment, in a process group of its own;
after ``timeout`` seconds (the program's exit and the end of its output) the whole group is
killed, so a shell's children die with it and the call returns on time.  A failure to start, a non-zero exit, a timeout or output that is not one JSON
object raises :class:`GeneratorError` (a MiniRagError with a ``kind``: ``not_found``,
``not_executable``, ``cannot_run``, ``timeout``, ``exit_status``, ``unparsable_output``);
the pipeline makes it that item's BLOCK ``generator_error:<kind>``, and ``run`` goes on
to the next item.  The generator is only called when the retrieval half of the guards
has not already decided (no hits, no phase B evidence: see ``pipeline.py``).  The extractive generator adds the keys
``refused``, ``reasons`` and ``detail`` to its output, which the validator ignores and
``generate_answer`` carries into the :class:`Answer`.
"""
from __future__ import annotations

import difflib
import json
import os
import signal
import subprocess
from typing import Any, Dict, List, Tuple

from ..errors import MiniRagError
from ..records import Fact
from .synthesize import Answer, phase_c
from .validate import validate_synthesis

__all__ = ["Generator", "ExtractiveGenerator", "CommandGenerator", "GeneratorError", "get_generator",
           "generate_answer", "GENERATORS"]


class GeneratorError(MiniRagError):
    """The generator failed on one question; ``kind`` is one of :data:`GENERATOR_ERRORS`.

    The pipeline turns it into that item's BLOCK ``generator_error:<kind>`` (a run goes
    on); it subclasses MiniRagError so a caller that does not catch it still fails closed.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


#: ``GeneratorError.kind`` values: why no checkable output came back.
GENERATOR_ERRORS = ("not_found", "not_executable", "cannot_run", "timeout", "exit_status",
                    "unparsable_output")


class Generator:
    """Base class.  Subclasses set ``name`` and implement :meth:`generate`."""
    name = "base"

    def generate(self, question: str, facts: List[Fact], context: Dict[str, Any]) -> Dict[str, Any]:
        """Phase C JSON (a dict) for ``question`` from the phase B ``facts``."""
        raise NotImplementedError("%s.generate" % type(self).__name__)


class ExtractiveGenerator(Generator):
    """The built-in generator: ``synthesize.phase_c`` (verbatim sentences, rule-based)."""
    name = "extractive"

    def __init__(self, index: Any, config: Dict[str, Any]) -> None:
        self.index = index
        self.config = config

    def generate(self, question: str, facts: List[Fact], context: Dict[str, Any]) -> Dict[str, Any]:
        from ..records import Retrieval
        retrieval = context.get("retrieval") or Retrieval(question=question, hits=[])
        config = context.get("config") or self.config
        index = context.get("index")       # a question's own view of the index (background.scoped_index)
        if index is None:
            index = self.index
        return phase_c(question, facts, retrieval, index, config, qa=context.get("analysis"),
                       reference=context.get("reference")).to_json()


class CommandGenerator(Generator):
    """Runs ``argv`` (no shell) with the question and facts as JSON on stdin."""
    name = "command"

    def __init__(self, argv: List[str], timeout: float = 30.0) -> None:
        if not argv or not all(isinstance(a, str) and a for a in argv):
            raise MiniRagError("generator command must be a non-empty list of strings, got %r" % (argv,))
        if not timeout > 0:
            raise MiniRagError("generator timeout must be > 0 seconds, got %r" % (timeout,))
        self.argv = list(argv)
        self.timeout = float(timeout)

    def generate(self, question: str, facts: List[Fact], context: Dict[str, Any]) -> Dict[str, Any]:
        config = context.get("config") or {}
        request = {"question": question, "facts": [f.to_json() for f in facts],
                   "max_sentences": int(config.get("answer", {}).get("max_sentences", 6)),
                   "max_citations": int(config.get("guards", {}).get("max_citations", 5))}
        data = json.dumps(request, ensure_ascii=False, sort_keys=True).encode("utf-8")
        where = "generator command %r" % self.argv[0]
        try:
            proc = _run_bounded(self.argv, data, self.timeout, MAX_GENERATOR_OUTPUT)
        except _TooMuch:
            raise GeneratorError("output_too_large", "%s: printed more than %d bytes (MAX_GENERATOR_OUTPUT)"
                                 % (where, MAX_GENERATOR_OUTPUT)) from None
        except FileNotFoundError:
            raise GeneratorError("not_found", "%s: not found" % where) from None
        except PermissionError:
            raise GeneratorError("not_executable", "%s: not executable" % where) from None
        except subprocess.TimeoutExpired:
            raise GeneratorError("timeout", "%s: no answer within %g seconds" % (where, self.timeout)) from None
        except OSError as exc:
            raise GeneratorError("cannot_run", "%s: cannot run: %s" % (where, exc.strerror or exc)) from None
        if proc.returncode != 0:
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            raise GeneratorError("exit_status", "%s: exited with status %d%s"
                                 % (where, proc.returncode, (": " + tail[0][:200]) if tail[0] else ""))
        text = proc.stdout.decode("utf-8", "replace").strip()
        try:
            payload = json.loads(text, parse_int=_bounded_int)
        except _LongNumber:
            raise GeneratorError("unparsable_output", "%s: stdout has a number of more than %d digits"
                                 % (where, MAX_NUMBER_DIGITS)) from None
        except RecursionError:                 # arrays nested deeper than the interpreter recurses
            raise GeneratorError("unparsable_output", "%s: stdout is JSON nested too deeply" % where) from None
        except ValueError:
            raise GeneratorError("unparsable_output", "%s: stdout is not JSON, got %r" % (where, text[:60])) from None
        if not isinstance(payload, dict):
            raise GeneratorError("unparsable_output",
                                 "%s: stdout must be one JSON object, got %r" % (where, text[:60]))
        return payload


#: Most bytes a command generator may print on stdout (and on stderr, kept for the message);
#: more is an error, and the program is killed (issue 33: a generator flooding stdout).
MAX_GENERATOR_OUTPUT = 4 << 20


#: Most digits of an integer in a command generator's output (a page number needs a few;
#: Python 3.11+ refuses over 4,300, 3.9 parses any: one limit for every version).
MAX_NUMBER_DIGITS = 100


class _TooMuch(Exception):
    pass


class _LongNumber(ValueError):
    pass


def _bounded_int(text: str) -> int:
    """json's ``parse_int``: an integer of at most MAX_NUMBER_DIGITS digits."""
    if len(text) > MAX_NUMBER_DIGITS + 1 and len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise _LongNumber(text[:20])
    return int(text)


def _run_bounded(argv: List[str], data: bytes, timeout: float, limit: int) -> subprocess.CompletedProcess:
    """``subprocess.run`` with stdout and stderr each read up to ``limit`` bytes: a program
    printing more is killed (_TooMuch), one running past ``timeout`` too (TimeoutExpired).

    The program runs in its own process group (session) and a kill ends the whole group, so
    a shell's children die with it (issue 44: ``sh -c "sleep 300"`` with a 30 s timeout used
    to answer after 301 s, the kill reaching ``sh`` but not ``sleep``, which held the pipes).
    ``timeout`` bounds everything: the program's exit *and* the end of its output (a child
    left behind holding stdout open is killed at the deadline too)."""
    import threading
    import time
    deadline = time.monotonic() + timeout
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            **_new_group())
    bufs = {"out": bytearray(), "err": bytearray()}
    over = []

    def pump(src, buf) -> None:
        while True:
            try:
                block = src.read1(65536) if hasattr(src, "read1") else src.read(65536)
            except (OSError, ValueError):
                return
            if not block:
                return
            if len(buf) + len(block) > limit:
                over.append(True)
                _kill_group(proc)
                return
            buf += block

    def feed() -> None:                   # in a thread: a program that never reads cannot block us
        try:
            proc.stdin.write(data)
            proc.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass

    readers = [threading.Thread(target=pump, args=(proc.stdout, bufs["out"]), daemon=True),
               threading.Thread(target=pump, args=(proc.stderr, bufs["err"]), daemon=True),
               threading.Thread(target=feed, daemon=True)]
    for t in readers:
        t.start()
    timed_out = False
    try:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
        for t in readers:
            t.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in readers):
            timed_out = True                    # exited, but something still holds its pipes
    finally:
        _kill_group(proc)                       # leftovers of the group, even after a clean exit
        proc.wait()
        for t in readers:                       # the pipes close once the group is dead
            t.join(_GRACE)
        if not any(t.is_alive() for t in readers):
            for fh in (proc.stdout, proc.stderr):
                try:
                    fh.close()
                except OSError:
                    pass
        # else: a process that left the group (setsid) still holds a pipe; closing the file
        # would block on the reader's lock, so the daemon thread keeps it until that process ends
    if over:
        raise _TooMuch()
    if timed_out:
        raise subprocess.TimeoutExpired(argv, timeout)
    return subprocess.CompletedProcess(argv, proc.returncode, bytes(bufs["out"]), bytes(bufs["err"]))


#: Seconds to wait for the pipe readers once the process group is killed.
_GRACE = 2.0


def _new_group() -> Dict[str, Any]:
    """Popen arguments that put the program in a process group of its own."""
    if hasattr(os, "killpg"):
        return {"start_new_session": True}
    flag = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)  # Windows: no killpg, kill() the program
    return {"creationflags": flag} if flag else {}


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the program's process group (the program was its leader); without killpg
    (Windows), kill the program itself."""
    if hasattr(os, "killpg"):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            pass                                # group already gone
        except OSError:
            pass
    if proc.poll() is None:
        try:
            proc.kill()
        except OSError:
            pass


#: name -> class; ``[answer] generator`` must be one of these.
GENERATORS = {"extractive": ExtractiveGenerator, "command": CommandGenerator}


def get_generator(config_or_name: Any, index: Any = None) -> Generator:
    """The generator for a config dict (``[answer] generator``, ``generator_command``,
    ``generator_timeout``) or a bare name (``"extractive"`` uses the default config; a
    bare ``"command"`` is an error because it has no command to run)."""
    from ..config import DEFAULTS
    import copy
    if isinstance(config_or_name, str):
        config = copy.deepcopy(DEFAULTS)
        config["answer"]["generator"] = config_or_name
    elif isinstance(config_or_name, dict):
        config = config_or_name
    else:
        raise MiniRagError("get_generator needs a config or a generator name, got %r" % (config_or_name,))
    answer = dict(DEFAULTS["answer"])
    answer.update(config.get("answer", {}))
    name = answer["generator"]
    if name not in GENERATORS:
        close = difflib.get_close_matches(name, sorted(GENERATORS), n=1)
        raise MiniRagError("[answer] generator: unknown generator %r (known: %s)%s"
                           % (name, ", ".join(sorted(GENERATORS)),
                              "; did you mean %r?" % close[0] if close else ""))
    if name == "command":
        if not answer["generator_command"]:
            raise MiniRagError("[answer] generator_command must name the program to run "
                               "when generator = \"command\", got []")
        return CommandGenerator(answer["generator_command"], answer["generator_timeout"])
    return ExtractiveGenerator(index, config)


def generate_answer(generator: Generator, question: str, facts: List[Fact],
                    context: Dict[str, Any], max_sentences: int = 6) -> Tuple[Answer, List[str]]:
    """Run ``generator`` and validate its output against ``facts`` (phase B).

    Returns ``(answer, errors)``: the validated :class:`Answer` and the validator's
    messages.  A generator's own refusal (``"refused": true`` with ``reasons``, as the
    extractive one writes) is kept: the answer is refused with those reasons even if rows
    were sent.  No facts -> refused ``no_evidence`` without calling the generator.
    MiniRagError from the generator propagates.
    """
    if not facts:
        return Answer(sentences=[], confidence="Low", refused=True, reasons=["no_evidence"]), []
    payload = generator.generate(question, facts, context)
    self_refused = isinstance(payload, dict) and payload.get("refused") is True
    if self_refused:
        answer = Answer(sentences=[], confidence="Low", refused=True)
        errors: List[str] = []
    else:
        answer, errors = validate_synthesis(payload, facts, max_sentences)
    if isinstance(payload, dict):
        reasons = payload.get("reasons")
        if self_refused and isinstance(reasons, list):
            answer.reasons = [str(r) for r in reasons] or ["no_valid_sentence"]
        elif self_refused:
            answer.reasons = ["no_valid_sentence"]
        detail = payload.get("detail")
        if isinstance(detail, dict):
            answer.detail = detail
    answer.detail = dict(answer.detail)
    answer.detail["generator"] = generator.name
    return answer, errors
