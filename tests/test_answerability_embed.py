"""Issue 24 item 5: the embedding features of the answerability model.

``cos`` and ``chunk_cos`` are checked against the tiny random BERT of test_embed (written
as safetensors by the test) and its reference forward pass (explicit loops over heads and
tokens); the "with embeddings" model file's checks, the fallback to the lexical model, the
fit's cosine cache and the bench's comparison table need no numpy.  Tests that need numpy
skip with a message when it is absent."""
import contextlib
import copy
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from mini_rag.answer import answerability as am  # noqa: E402
from mini_rag.errors import MiniRagError  # noqa: E402
from mini_rag.search.retrieve import Retriever  # noqa: E402
from mini_rag.answer.synthesize import Answer  # noqa: E402
from tests.test_answerability import _setup  # noqa: E402  (the three-document fixture)

try:
    import numpy as np
except ImportError:
    np = None
NEEDS_NUMPY = unittest.skipIf(np is None, "numpy not installed: embedding feature tests skipped")
QUESTION = "Is parking free?"
ASKED = "Where do visitors sign in?"      # gamma#p0 (two sentences) and alpha#p1: three candidates
REFUSED = Answer(sentences=[], refused=True)


def _lexical_only(ranker_weights, gate_bias, features=am.FEATURES, embed=None, threshold=0.5):
    ranker = {k: 0.0 for k in features if k != "bias"}
    ranker.update(ranker_weights)
    gate = {k: 0.0 for k in features + ("share", "rmargin")}
    gate["bias"] = gate_bias
    return am.Model(ranker, gate, threshold, 0.99, features, embed)


@NEEDS_NUMPY
class EmbedFeatures(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from tests.test_embed import tiny_weights, write_tiny_model
        cls.tmp = tempfile.TemporaryDirectory()
        folder = os.path.join(cls.tmp.name, "model")
        cls.weights = tiny_weights()
        cls.sha = write_tiny_model(folder, cls.weights)
        cls.cfg, cls.index = _setup()
        cls.cfg["embed"].update(model=folder, sha256=cls.sha, max_seq_length=24)
        cls.r = Retriever(cls.index, cls.cfg)
        with contextlib.redirect_stderr(io.StringIO()):       # "not the pinned model" warning
            cls.encoder = am.embed_scorer(cls.cfg)
        cls.retrieval = cls.r.retrieve(ASKED)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def reference_cosine(self, a, b):
        from tests.test_embed import reference_vector
        va = reference_vector(self.weights, self.encoder.token_ids(a))
        vb = reference_vector(self.weights, self.encoder.token_ids(b))
        return float(va @ vb)

    def test_cosines_match_the_reference_forward_pass(self):
        cands = am.candidates(ASKED, self.retrieval, REFUSED, self.index, self.index.analyzer,
                              cosine=self.encoder.cosine_scores)
        chunk_text = {h.chunk_id: h.text for h in self.retrieval.hits}
        self.assertGreater(len(cands), 2)
        for c in cands:
            with self.subTest(sentence=c.sentence):
                self.assertEqual(set(c.features), set(am.FEATURES + am.EMBED_FEATURES))
                self.assertAlmostEqual(c.features["cos"], self.reference_cosine(ASKED, c.sentence), delta=2e-6)
                self.assertAlmostEqual(c.features["chunk_cos"],
                                       self.reference_cosine(ASKED, chunk_text[c.chunk_id]), delta=2e-6)
        # the lexical features are the same as without embeddings
        plain = am.candidates(ASKED, self.retrieval, REFUSED, self.index, self.index.analyzer)
        self.assertEqual([{k: c.features[k] for k in am.FEATURES} for c in cands], [c.features for c in plain])

    def test_one_call_per_question_with_each_text_once(self):
        calls = []

        def cosine(question, texts):
            calls.append((question, list(texts)))
            return [0.5] * len(texts)
        cands = am.candidates(ASKED, self.retrieval, REFUSED, self.index, self.index.analyzer, cosine=cosine)
        self.assertEqual(len(calls), 1)
        question, texts = calls[0]
        self.assertEqual(question, ASKED)
        self.assertEqual(len(texts), len(set(texts)))
        hits = self.retrieval.hits[:am.CANDIDATE_HITS]
        self.assertEqual(set(texts), {c.sentence for c in cands} | {h.text for h in hits})

    def test_decide_ranks_by_cosine_with_an_embedding_model(self):
        # The ranker reads only cos, the gate ships everything: the sentence of largest
        # (reference) cosine with the question ships.
        m = _lexical_only({"cos": 5.0}, 3.0, am.FEATURES + am.EMBED_FEATURES,
                          {"model_sha256": self.sha, "max_seq_length": 24})
        got = am.decide(ASKED, self.retrieval, REFUSED, self.index, self.index.analyzer, model=m, config=self.cfg)
        plain = am.candidates(ASKED, self.retrieval, REFUSED, self.index, self.index.analyzer)
        best = max(plain, key=lambda c: self.reference_cosine(ASKED, c.sentence))
        self.assertFalse(got.refused)
        self.assertEqual(got.sentences[0].sentence, best.sentence)
        with self.assertRaisesRegex(MiniRagError, "reads embedding features"):
            am.decide(ASKED, self.retrieval, REFUSED, self.index, self.index.analyzer, model=m, config=None)

    def test_a_trace_row_does_not_depend_on_the_questions_before_it(self):
        # Issue 32 / hard rule 4: a question's row (and every vector behind it) is the same
        # asked alone, first, or after other questions; the committed embedding model
        # decides (its encoder check patched to accept the tiny BERT).
        from mini_rag.pipeline import Pipeline
        questions = [ASKED, QUESTION, "When does the cafe open?", "How many days of annual leave?",
                     "Where do visitors sign in and is parking free?"]
        cfg = copy.deepcopy(self.cfg)
        cfg["answer"]["answerability"] = True
        pipe = Pipeline(cfg, retriever=Retriever(self.index, cfg))
        memo = self.encoder._cache

        def ask(order):
            memo.clear()
            rows = {q: json.dumps(pipe.answer(q, qid="q").row, sort_keys=True) for q in order}
            return rows, {t: v.tolist() for t, v in memo.items()}
        with mock.patch.object(am, "_matches", return_value=True):
            encoded = 0
            for q in questions:
                alone, vecs = ask([q])
                encoded += q in vecs                                # the answer half ran
                for order in ([q] + [x for x in questions if x != q], [x for x in questions if x != q] + [q],
                              list(reversed(questions)) + [q]):
                    with self.subTest(question=q, order=order.index(q)):
                        rows, after = ask(order)
                        self.assertEqual(rows[q], alone[q])
                        self.assertEqual({t: after[t] for t in vecs}, vecs)   # bit for bit
            self.assertGreaterEqual(encoded, 3)
        memo.clear()

    def test_another_encoder_falls_back_to_the_lexical_model(self):
        # The committed embedding model was fitted with all-MiniLM-L6-v2, not the tiny BERT.
        am._WARNED.clear()
        log = io.StringIO()
        with contextlib.redirect_stderr(log):
            got = am.decide(ASKED, self.retrieval, REFUSED, self.index, self.index.analyzer, config=self.cfg)
            again = am.decide(ASKED, self.retrieval, REFUSED, self.index, self.index.analyzer, config=self.cfg)
        lexical = am.decide(ASKED, self.retrieval, REFUSED, self.index, self.index.analyzer)
        self.assertEqual(got.to_json(), lexical.to_json())
        self.assertEqual(again.to_json(), lexical.to_json())
        self.assertEqual(log.getvalue().count("the lexical model decides"), 1)     # warned once
        self.assertIn(self.sha, log.getvalue())


class EmbedModelFile(unittest.TestCase):
    def test_committed_models(self):
        from mini_rag.embed.model import PINNED_SHA256
        m = am.load_model(am.EMBED_MODEL_PATH)
        self.assertEqual(m.features, am.FEATURES + am.EMBED_FEATURES)
        self.assertEqual(set(m.ranker), set(m.features) - {"bias"})
        self.assertEqual(set(m.gate), set(m.features) | {"share", "rmargin"})
        self.assertEqual(m.embed, {"model_sha256": PINNED_SHA256, "max_seq_length": 256})
        self.assertTrue(0.0 < m.threshold < 1.0)
        lexical = am.load_model()
        self.assertEqual((lexical.features, lexical.embed), (am.FEATURES, None))

    def test_bad_embed_sections_are_named(self):
        with open(am.EMBED_MODEL_PATH, encoding="utf-8") as fh:
            good = json.load(fh)

        def without_cos(doc):
            del doc["ranker"]["cos"]
        cases = [
            (lambda d: d["embed"].update(features=["cos"]), 'embed.features must be \\["cos", "chunk_cos"\\]'),
            (lambda d: d["embed"].update(model_sha256="ABC"), "embed.model_sha256 must be 64"),
            (lambda d: d["embed"].update(max_seq_length=True), "embed.max_seq_length must be an integer"),
            (lambda d: d.update(embed=[]), "embed.features"),
            (without_cos, "ranker must give a finite number for each of .*cos, chunk_cos"),
            (lambda d: d["gate"].update(chunk_cos=float("nan")), "gate must give a finite number"),
        ]
        with tempfile.TemporaryDirectory() as tmp:
            for i, (change, message) in enumerate(cases):
                doc = copy.deepcopy(good)
                change(doc)
                path = os.path.join(tmp, "m%d.json" % i)
                with open(path, "w", encoding="utf-8") as fh:
                    json.dump(doc, fh)
                with self.subTest(message=message):
                    with self.assertRaisesRegex(MiniRagError, "^%s: not an answerability model: %s" % (
                            re.escape(path), message)):
                        am.load_model(path)

    def test_without_numpy_or_model_the_lexical_model_decides(self):
        cfg, index = _setup()
        retrieval = Retriever(index, cfg).retrieve(QUESTION)
        lexical = am.decide(QUESTION, retrieval, REFUSED, index, index.analyzer).to_json()
        real_find_spec = __import__("importlib.util").util.find_spec
        cfg["embed"]["model"] = os.path.join(ROOT, "no-such-model")      # never opened
        with mock.patch.dict(os.environ, {"MINI_RAG_EMBED_MODEL": ""}):
            with mock.patch("importlib.util.find_spec",
                            lambda name, *a: None if name == "numpy" else real_find_spec(name, *a)):
                self.assertIsNone(am.embed_scorer(cfg))
                got = am.decide(QUESTION, retrieval, REFUSED, index, index.analyzer, config=cfg)
            self.assertEqual(got.to_json(), lexical)
            cfg["embed"]["model"] = ""
            self.assertIsNone(am.embed_scorer(cfg))
            self.assertIsNone(am.embed_scorer(None))

    def test_answerability_without_an_embedding_model_imports_no_numpy(self):
        code = ("import sys; sys.path.insert(0, %r); sys.path.insert(0, %r)\n"
                "from tests.test_answerability import _setup\n"
                "from mini_rag.pipeline import Pipeline\n"
                "cfg, index = _setup(); cfg['answer']['answerability'] = True\n"
                "from mini_rag.search.retrieve import Retriever\n"
                "row = Pipeline(cfg, retriever=Retriever(index, cfg)).answer(%r).row\n"
                "print(row['answer_json']['citations'], 'numpy' in sys.modules)\n" % (ROOT, os.path.join(ROOT, "bench"),
                                                                                     QUESTION))
        env = dict(os.environ)
        env.pop("MINI_RAG_EMBED_MODEL", None)
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(out.stdout.rstrip().endswith("False"), out.stdout)


class FitWithEmbeddings(unittest.TestCase):
    def test_ranker_weight_on_cos(self):
        # Correct candidates have cos 1 in 3 questions of 4: P(good) = 3/4 -> weight log 3.
        import fit_answerability as F
        names = am.FEATURES + am.EMBED_FEATURES
        one = dict.fromkeys(names, 0.0)
        good, bad = dict(one, cos=1.0), dict(one)
        rows = [{"answerable": True, "items": [(good, 1), (bad, 0)]}] * 3 + \
               [{"answerable": True, "items": [(good, 0), (bad, 1)]}]
        w = F.rank_fit([rows], 0.0, names=names)
        self.assertEqual(set(w), set(names) - {"bias"})
        self.assertAlmostEqual(w["cos"], math.log(3.0), places=6)
        self.assertAlmostEqual(w["chunk_cos"], 0.0, places=9)

    def test_cosine_cache(self):
        import fit_answerability as F

        class Counting:
            sha256, max_seq_length = "ab" * 32, 16

            def __init__(self):
                self.calls = []

            def cosine_scores(self, question, texts):
                self.calls.append(list(texts))
                return [round(len(t) / 10.0, 6) for t in texts]
        with tempfile.TemporaryDirectory() as tmp:
            enc = Counting()
            cache = F.CosineCache(enc, tmp, reuse=False)
            self.assertEqual(cache("q", ["abc", "de"]), [0.3, 0.2])
            self.assertEqual(cache("q", ["de", "fghij"]), [0.2, 0.5])
            self.assertEqual(cache("other q", ["de"]), [0.2])
            self.assertEqual(enc.calls, [["abc", "de"], ["fghij"], ["de"]])    # only texts not seen with q
            cache.save()
            self.assertEqual(os.path.basename(cache.path), "cosines.%s.16.json.gz" % ("ab" * 8))
            again = Counting()
            self.assertEqual(F.CosineCache(again, tmp, reuse=True)("q", ["fghij", "abc"]), [0.5, 0.3])
            self.assertEqual(again.calls, [])
            fresh = Counting()
            F.CosineCache(fresh, tmp, reuse=False)("q", ["abc"])
            self.assertEqual(fresh.calls, [["abc"]])

    def test_embed_fit_skips_without_model(self):
        import fit_answerability as F
        log = io.StringIO()
        with mock.patch("bench_embed.find_model", lambda arg: ""), contextlib.redirect_stderr(log):
            self.assertEqual(F.main(["--embed", "--check"]), 0)
        self.assertRegex(log.getvalue(), r"^fit: --embed skipped: (numpy is not installed|no embedding model)")


class BenchTable(unittest.TestCase):
    def test_versus_table(self):
        import bench_answer as B

        def m(p, u, o, ms):
            return {"precision": p, "under_refusal": u, "over_refusal": o, "p50_ms": ms}
        results = {"squad-held": {"mini_rag+model": m(0.46, 0.43, 0.51, 34.0), B.EMBED_SYSTEM: m(0.50, 0.40, 0.51, 90.5)},
                   "cnli-held": {"mini_rag+model": m(0.61, 0.16, 0.63, 18.0), B.EMBED_SYSTEM: m(0.62, 0.17, 0.50, 40.0)},
                   "gold-baseline": {"mini_rag+model": m(0.9, 0.1, 0.1, 9.0)}}
        self.assertTrue(B.dominates(results["squad-held"][B.EMBED_SYSTEM], results["squad-held"]["mini_rag+model"]))
        self.assertFalse(B.dominates(results["cnli-held"][B.EMBED_SYSTEM], results["cnli-held"]["mini_rag+model"]))
        self.assertFalse(B.dominates(m(0.46, 0.4, 0.4, 0), m(0.46, 0.43, 0.51, 0)))      # precision must rise
        text = B.embed_versus(results)
        self.assertIn("| squad-held | change | +0.040 | -0.030 | +0.000 | +56.5 |", text)
        self.assertIn("| cnli-held | change | +0.010 | +0.010 | -0.130 | +22.0 |", text)
        self.assertIn("- squad-held: higher precision with neither refusal error higher: **yes**", text)
        self.assertIn("- cnli-held: higher precision with neither refusal error higher: **no**", text)
        self.assertNotIn("gold-baseline", text)
        self.assertEqual(B.embed_versus({"squad-held": {"mini_rag+model": m(0.4, 0.4, 0.4, 1.0)}}), "")


if __name__ == "__main__":
    unittest.main()
