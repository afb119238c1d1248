"""The fitted data files are what their own commands produce (``make check-fits``), checked in
CI where ``../shared/data`` is present: a change to retrieval or answering that moves the
candidates the models were fitted on shows here, not months later (the answerability model
had drifted from its command twice in one session, silently).

``bench/fit_answerability.py --check`` refits the lexical answerability model on the SQuAD 2.0
and ContractNLI fit halves and compares it with ``mini_rag/data/answerability.json``;
``bench/fit_asked_value.py --check`` does the same for ``mini_rag/data/asked_value.json``.  The
MiniLM model (``--embed``) needs the wheel and is left to ``make check-fits``; the grounding and
refusal fits are checked in tests/test_grounding.py and tests/test_score_eval_refusal.py.  About
25 s of CPU, once per CI run."""
import contextlib
import io
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from tests.lanes import once_per_ci  # noqa: E402

import answer_data  # noqa: E402

HAVE_DATA = all(os.path.isfile(p) for p in (answer_data.SQUAD, answer_data.CNLI_CORPUS, answer_data.CNLI_GOLD))


@once_per_ci
@unittest.skipUnless(HAVE_DATA, "the SQuAD 2.0 / ContractNLI data of %s is absent" % answer_data.DATA)
class FitsReproduce(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_answerability_model(self):
        import fit_answerability as F
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            status = F.main(["--check", "--out", self.tmp])
        self.assertIn("identical to", out.getvalue())
        self.assertEqual(status, 0)

    def test_asked_value_model(self):
        import fit_asked_value as F
        err = io.StringIO()
        saved = F.OUT
        F.OUT = self.tmp
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                status = F.main(["--check"])
        finally:
            F.OUT = saved
        self.assertIn("fit_asked_value: identical", err.getvalue())
        self.assertEqual(status, 0)


if __name__ == "__main__":
    unittest.main()
