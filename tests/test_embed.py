"""Dense embeddings (mini_rag/embed/): the WordPiece tokenizer against hand-derived ids, the
safetensors reader's checks, a tiny random BERT (2 layers, hidden 32, written here as
safetensors) against a reference forward pass with explicit loops over heads and tokens,
the dense index (incremental), fusion, and the command line's failures.  Tests that need
numpy skip with a message when it is absent; no test needs the real 91 MB model."""
import contextlib
import copy
import hashlib
import io
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile
import unittest
import zipfile
from pathlib import Path

from mini_rag.config import DEFAULTS
from mini_rag.embed import hybrid
from mini_rag.embed.safetensors import read_header
from mini_rag.embed.tokenizer import WordPiece, basic_tokenize
from mini_rag.errors import MiniRagError

ROOT = Path(__file__).resolve().parents[1]
try:
    import numpy as np
except ImportError:
    np = None
NEEDS_NUMPY = unittest.skipIf(np is None, "numpy not installed: dense embedding tests skipped")

# ---------------------------------------------------------------- tokenizer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",        # 0-4
         "the", "cafe", "un", "##aff", "##able",               # 5-9
         "!", ",", ".", "'", "s",                              # 10-14
         "世", "界", "hello", "world", "##s",                   # 15-19
         "run", "##ning", "a", "##b", "$",                     # 20-24
         "naive", "resume", "don", "t", "##e"]                 # 25-29


class Tokenizer(unittest.TestCase):
    def setUp(self):
        self.tok = WordPiece(VOCAB)

    def test_hand_derived_ids(self):
        cases = [
            ("Unaffable café!", [2, 7, 8, 9, 6, 10, 3]),             # pieces, accent stripped, "!" split
            ("Héllo, 世界.", [2, 17, 11, 15, 16, 12, 3]),             # CJK: one word per ideograph
            ("runnings", [2, 20, 21, 19, 3]),                        # run ##ning ##s
            ("RUNNING", [2, 20, 21, 3]),                             # lower-cased
            ("xyz hello", [2, 1, 17, 3]),                            # no piece fits: [UNK]
            ("runx", [2, 1, 3]),                                     # a word is [UNK] as a whole
            ("NAÏVE Résumé", [2, 25, 26, 3]),                        # accents on capitals
            ("don't", [2, 27, 13, 28, 3]),                           # ASCII apostrophe splits
            ("the\x00\tcafe\u00a0the\u200b", [2, 5, 6, 5, 3]),       # NUL dropped, NBSP is space, ZWSP (Cf) dropped
            ("the\u2014cafe", [2, 5, 1, 6, 3]),                      # em dash (Pd): its own word, unknown
            ("$5", [2, 24, 1, 3]),                                   # "$" is ASCII punctuation (Sc too)
            ("", [2, 3]),
            ("a" + "b" * 99, [2, 22] + [23] * 99 + [3]),             # 100 characters: pieces
            ("a" + "b" * 100, [2, 1, 3]),                            # 101 characters: [UNK]
        ]
        for text, ids in cases:
            with self.subTest(text=text[:20]):
                self.assertEqual(self.tok.encode(text, max_length=512), ids)

    def test_truncation_keeps_cls_and_sep(self):
        self.assertEqual(self.tok.encode("the cafe the cafe", max_length=4), [2, 5, 6, 3])
        self.assertEqual(self.tok.encode("the cafe", max_length=2), [2, 3])
        with self.assertRaisesRegex(MiniRagError, "max_seq_length must be >= 2"):
            self.tok.encode("the", max_length=1)

    def test_basic_tokenizer(self):
        self.assertEqual(basic_tokenize("Ångström's  (test)"), ["angstrom", "'", "s", "(", "test", ")"])
        self.assertEqual(basic_tokenize("Ångström", lowercase=False), ["Ångström"])
        self.assertEqual(basic_tokenize("東京タワー"), ["東", "京", "タワー"])   # kana is not CJK-split

    def test_vocab_needs_special_tokens(self):
        with self.assertRaisesRegex(MiniRagError, r"no \[UNK\] token"):
            WordPiece(["[PAD]", "[CLS]", "[SEP]", "a"])
        self.assertEqual(WordPiece.from_text("\n".join(VOCAB) + "\n").vocab["##e"], 29)


# ---------------------------------------------------------------- safetensors

def safetensors_bytes(tensors, pad_to=8):
    """The test's own writer: {name: (dtype, shape, raw bytes)} -> file bytes."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % pad_to)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def f32(values):
    return struct.pack("<%df" % len(values), *values)


class SafetensorsReader(unittest.TestCase):
    def test_header_is_read(self):
        data = safetensors_bytes({"a": ("F32", (2, 2), f32([1, 2, 3, 4])), "b": ("I64", (1,), struct.pack("<q", 7))})
        header, start = read_header(data, "t.safetensors")
        self.assertEqual(header["a"], ("F32", (2, 2), 0, 16))
        self.assertEqual(header["b"], ("I64", (1,), 16, 24))
        self.assertEqual(start, len(data) - 24)

    def test_bad_files_are_named(self):
        good = safetensors_bytes({"a": ("F32", (2,), f32([1, 2]))})
        n = struct.unpack("<Q", good[:8])[0]

        def with_header(h, body=f32([1, 2])):
            raw = json.dumps(h).encode()
            return struct.pack("<Q", len(raw)) + raw + body
        cases = [
            (b"abc", "not a safetensors file"),
            (struct.pack("<Q", 10 ** 12) + good[8:], "header length .* does not fit"),
            (struct.pack("<Q", n) + b"\xff" * n + good[8 + n:], "not UTF-8 JSON"),
            (with_header([1, 2]), "must be a JSON object"),
            (with_header({"a": {"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}}), "unknown dtype 'F33'"),
            (with_header({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}), "shape must be"),
            (with_header({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}), "8 bytes for shape"),
            (with_header({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}}), "within the 8 data bytes"),
            (with_header({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                          "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, f32([1])),
             "gap or overlap"),
            (with_header({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}), "gap or overlap"),
            (with_header({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}), "4 data bytes after"),
        ]
        for data, message in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(MiniRagError, "^t.st: .*" + message):
                    read_header(data, "t.st")

    @NEEDS_NUMPY
    def test_load_values(self):
        from mini_rag.embed.safetensors import load
        data = safetensors_bytes({"w": ("F32", (2, 3), f32([1, 2, 3, 4, 5, 6])), "e": ("F32", (0,), b"")})
        arrays = load(data, "t")
        self.assertEqual(arrays["w"].tolist(), [[1, 2, 3], [4, 5, 6]])
        self.assertEqual(arrays["e"].shape, (0,))


# ---------------------------------------------------------------- a tiny BERT

HIDDEN, HEADS, LAYERS, INTER, MAX_POS = 32, 4, 2, 64, 40


def tiny_vocab():
    letters = "abcdefghijklmnopqrstuvwxyz"
    pairs = [x + y for x in "aeiorstn" for y in "aeiorstn"]
    return (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(letters) + ["##" + c for c in letters]
            + list("0123456789") + list(".,!?'-()") + pairs + ["##" + p for p in pairs]
            + ["the", "refund", "policy", "days", "leave", "annual", "data", "retention"])


def tiny_weights(seed=7):
    """{name: list of floats, shape}: a random BERT with the tensor names of all-MiniLM-L6-v2."""
    rng = random.Random(seed)
    vocab = len(tiny_vocab())

    def rand(*shape, scale=0.3):
        n = 1
        for d in shape:
            n *= d
        return ([rng.gauss(0.0, scale) for _ in range(n)], shape)
    w = {"embeddings.word_embeddings.weight": rand(vocab, HIDDEN),
         "embeddings.position_embeddings.weight": rand(MAX_POS, HIDDEN),
         "embeddings.token_type_embeddings.weight": rand(2, HIDDEN),
         "embeddings.LayerNorm.weight": ([1.0 + rng.gauss(0, 0.1) for _ in range(HIDDEN)], (HIDDEN,)),
         "embeddings.LayerNorm.bias": rand(HIDDEN, scale=0.1)}
    for i in range(LAYERS):
        p = "encoder.layer.%d." % i
        for n in ("query", "key", "value"):
            w[p + "attention.self.%s.weight" % n] = rand(HIDDEN, HIDDEN)
            w[p + "attention.self.%s.bias" % n] = rand(HIDDEN, scale=0.1)
        w[p + "attention.output.dense.weight"] = rand(HIDDEN, HIDDEN)
        w[p + "attention.output.dense.bias"] = rand(HIDDEN, scale=0.1)
        w[p + "intermediate.dense.weight"] = rand(INTER, HIDDEN)
        w[p + "intermediate.dense.bias"] = rand(INTER, scale=0.1)
        w[p + "output.dense.weight"] = rand(HIDDEN, INTER)
        w[p + "output.dense.bias"] = rand(HIDDEN, scale=0.1)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + ln + ".weight"] = ([1.0 + rng.gauss(0, 0.1) for _ in range(HIDDEN)], (HIDDEN,))
            w[p + ln + ".bias"] = rand(HIDDEN, scale=0.1)
    w["pooler.dense.weight"] = rand(HIDDEN, HIDDEN)         # present in BERT files, unused
    return w


def write_tiny_model(folder, weights):
    os.makedirs(os.path.join(folder, "1_Pooling"), exist_ok=True)
    tensors = {n: ("F32", shape, f32(vals)) for n, (vals, shape) in weights.items()}
    tensors["embeddings.position_ids"] = ("I64", (1, MAX_POS), struct.pack("<%dq" % MAX_POS, *range(MAX_POS)))
    data = safetensors_bytes(tensors)
    with open(os.path.join(folder, "model.safetensors"), "wb") as fh:
        fh.write(data)
    with open(os.path.join(folder, "vocab.txt"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(tiny_vocab()) + "\n")
    with open(os.path.join(folder, "config.json"), "w") as fh:
        json.dump({"model_type": "bert", "hidden_size": HIDDEN, "num_attention_heads": HEADS,
                   "num_hidden_layers": LAYERS, "intermediate_size": INTER, "hidden_act": "gelu",
                   "layer_norm_eps": 1e-12, "max_position_embeddings": MAX_POS,
                   "vocab_size": len(tiny_vocab()), "type_vocab_size": 2}, fh)
    with open(os.path.join(folder, "sentence_bert_config.json"), "w") as fh:
        json.dump({"max_seq_length": 24, "do_lower_case": False}, fh)
    with open(os.path.join(folder, "1_Pooling", "config.json"), "w") as fh:
        json.dump({"word_embedding_dimension": HIDDEN, "pooling_mode_mean_tokens": True}, fh)
    return hashlib.sha256(data).hexdigest()


def reference_vector(weights, ids):
    """BERT forward pass for one text, float64, one token and one head at a time."""
    W = {n: np.array(v, dtype=np.float64).reshape(s) for n, (v, s) in weights.items()}
    T, d = len(ids), HIDDEN // HEADS

    def ln(v, name):
        mu = sum(v) / len(v)
        var = sum((x - mu) ** 2 for x in v) / len(v)
        return np.array([(x - mu) / math.sqrt(var + 1e-12) for x in v]) * W[name + ".weight"] + W[name + ".bias"]

    def lin(v, name):
        return W[name + ".weight"] @ v + W[name + ".bias"]
    x = [ln(W["embeddings.word_embeddings.weight"][t] + W["embeddings.position_embeddings.weight"][i]
            + W["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm") for i, t in enumerate(ids)]
    for layer in range(LAYERS):
        p = "encoder.layer.%d." % layer
        q = [lin(v, p + "attention.self.query") for v in x]
        k = [lin(v, p + "attention.self.key") for v in x]
        v_ = [lin(v, p + "attention.self.value") for v in x]
        out = []
        for i in range(T):
            ctx = []
            for h in range(HEADS):
                s = slice(h * d, (h + 1) * d)
                scores = [float(q[i][s] @ k[j][s]) / math.sqrt(d) for j in range(T)]
                top = max(scores)
                e = [math.exp(c - top) for c in scores]
                z = sum(e)
                ctx.append(sum((e[j] / z) * v_[j][s] for j in range(T)))
            a = ln(lin(np.concatenate(ctx), p + "attention.output.dense") + x[i], p + "attention.output.LayerNorm")
            inner = lin(a, p + "intermediate.dense")
            inner = np.array([0.5 * u * (1.0 + math.erf(u / math.sqrt(2.0))) for u in inner])
            out.append(ln(lin(inner, p + "output.dense") + a, p + "output.LayerNorm"))
        x = out
    mean = sum(x) / T
    return mean / math.sqrt(float(mean @ mean))


@NEEDS_NUMPY
class TinyBert(unittest.TestCase):
    TEXTS = ["the refund policy", "Annual leave: 25 days!", "", "data retention (seven years) is the rule",
             "zzz qqq", "x" * 120, "the " * 40]

    @classmethod
    def setUpClass(cls):
        from mini_rag.embed.model import load_encoder
        cls.tmp = tempfile.TemporaryDirectory()
        cls.folder = os.path.join(cls.tmp.name, "model")
        cls.weights = tiny_weights()
        cls.sha = write_tiny_model(cls.folder, cls.weights)
        cls.encoder = load_encoder(cls.folder, cls.sha, log=io.StringIO())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_matches_reference_forward_pass(self):
        vecs = self.encoder.encode(self.TEXTS, batch_size=3)
        self.assertEqual(vecs.shape, (len(self.TEXTS), HIDDEN))
        self.assertEqual(self.encoder.max_seq_length, 24)            # from sentence_bert_config.json
        for text, vec in zip(self.TEXTS, vecs):
            with self.subTest(text=text[:20]):
                ids = self.encoder.token_ids(text)
                self.assertLessEqual(len(ids), 24)
                ref = reference_vector(self.weights, ids)
                self.assertLess(float(np.abs(vec - ref).max()), 2e-6)
                self.assertAlmostEqual(float(vec @ vec), 1.0, places=5)

    def test_batch_and_padding_do_not_change_a_vector(self):
        alone = self.encoder.encode(["the refund policy"])[0]
        for size in (1, 2, 7):
            mixed = self.encoder.encode(self.TEXTS, batch_size=size)[0]
            self.assertLess(float(np.abs(alone - mixed).max()), 1e-6)

    def test_a_vector_is_a_function_of_its_text_alone(self):
        # Issue 32: encode(texts) equals the texts encoded one by one, bit for bit, whatever
        # the batch size and the company (same-length texts share a batch, others never do).
        texts = self.TEXTS + ["the refund rule", "annual leave policy", "the cafe", "zzz", "the cafe",
                              "data retention", "the rule"]
        alone = [self.encoder.encode([t])[0].tolist() for t in texts]
        lengths = [len(self.encoder.token_ids(t)) for t in texts]
        self.assertLess(len(set(lengths)), len(texts))          # some batches hold several texts
        for size in (1, 2, 3, 8):
            with self.subTest(batch_size=size):
                self.assertEqual(self.encoder.encode(texts, batch_size=size).tolist(), alone)
        self.assertEqual(self.encoder.encode(list(reversed(texts))).tolist(), list(reversed(alone)))

    def test_memo_is_bounded_and_does_not_change_results(self):
        from mini_rag.embed.model import CACHE_LIMIT
        self.assertEqual(CACHE_LIMIT, 20000)
        enc = self.encoder
        enc._cache.clear()
        texts = ["the refund policy", "the cafe", "zzz qqq", "annual leave"]
        fresh = enc.encode(texts).tolist()
        got = enc.encode_cached(texts[:2], limit=3).tolist()
        self.assertEqual(got, fresh[:2])
        self.assertEqual(list(enc._cache), texts[:2])
        got = enc.encode_cached([texts[1], texts[2], texts[3], texts[1]], limit=3).tolist()
        self.assertEqual(got, [fresh[1], fresh[2], fresh[3], fresh[1]])
        self.assertEqual(list(enc._cache), texts[1:])            # the oldest dropped, 3 kept
        calls = []
        real = enc.encode
        enc.encode = lambda ts, *a, **k: calls.append(list(ts)) or real(ts, *a, **k)
        try:
            self.assertEqual(enc.encode_cached(texts, limit=3).tolist(), fresh)
        finally:
            del enc.encode
        self.assertEqual(calls, [[texts[0]]])                     # only the text not in the memo
        enc._cache.clear()

    def test_cosine_scores(self):
        vecs = self.encoder.encode(self.TEXTS[:3])
        got = self.encoder.cosine_scores(self.TEXTS[0], self.TEXTS[1:3])
        self.assertEqual(got, [round(float(vecs[0] @ vecs[i]), 6) for i in (1, 2)])
        self.assertEqual(got[0], round(got[0], 6))
        self.assertEqual(self.encoder.cosine_scores("x", []), [])

    def test_wheel_reads_like_the_folder(self):
        whl = os.path.join(self.tmp.name, "tiny-0.1-py3-none-any.whl")
        with zipfile.ZipFile(whl, "w") as zf:
            for root, _, names in os.walk(self.folder):
                for n in names:
                    full = os.path.join(root, n)
                    zf.write(full, "pkg/model/" + os.path.relpath(full, self.folder).replace(os.sep, "/"))
        from mini_rag.embed.model import load_encoder
        enc = load_encoder(whl, self.sha, log=io.StringIO())
        self.assertEqual(enc.encode(self.TEXTS[:2]).tolist(), self.encoder.encode(self.TEXTS[:2]).tolist())

    def test_sha256_is_checked(self):
        from mini_rag.embed.model import load_encoder, PINNED_SHA256
        with self.assertRaisesRegex(MiniRagError, "sha256 is %s, expected %s" % (self.sha, PINNED_SHA256)):
            load_encoder(self.folder, PINNED_SHA256)
        log = io.StringIO()
        load_encoder(self.folder, "", log=log)
        self.assertIn("not verified", log.getvalue())
        log = io.StringIO()
        load_encoder(self.folder, self.sha, log=log)
        self.assertIn("not the pinned all-MiniLM-L6-v2", log.getvalue())

    def test_bad_model_folders(self):
        from mini_rag.embed.model import load_encoder
        cases = [("", "no embedding model given"), (os.path.join(self.tmp.name, "nope"), "no such file or folder"),
                 (self.tmp.name + "/empty", "no model.safetensors")]
        os.makedirs(self.tmp.name + "/empty", exist_ok=True)
        for path, message in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(MiniRagError, message):
                    load_encoder(path, "")
        broken = os.path.join(self.tmp.name, "broken")
        os.makedirs(broken, exist_ok=True)
        with open(os.path.join(broken, "model.safetensors"), "wb") as fh:
            fh.write(b"\x00" * 4)
        with self.assertRaisesRegex(MiniRagError, "vocab.txt is missing"):
            load_encoder(broken, "")


# ---------------------------------------------------------------- dense index and retrieval

def tiny_config(tmp, folder, sha, **retrieval):
    cfg = copy.deepcopy(DEFAULTS)
    cfg["corpus"]["path"] = os.path.join(tmp, "corpus")
    cfg["index"]["path"] = os.path.join(tmp, "index.json.gz")
    cfg["embed"].update(model=folder, sha256=sha, max_seq_length=32)
    cfg["retrieval"].update(retrieval)
    cfg["expansion"] = {}
    return cfg


DOCS = {"refunds.md": "# Refunds\n\nA refund is paid within 14 days.\n\nThe refund policy covers annual plans.\n",
        "leave.md": "# Annual leave\n\nStaff get 25 days of annual leave.\n\nLeave rolls over for one year.\n",
        "data.md": "# Data retention\n\nCustomer data is kept for seven years.\n"}


@NEEDS_NUMPY
class DenseRetrieval(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.folder = os.path.join(cls.tmp.name, "model")
        cls.sha = write_tiny_model(cls.folder, tiny_weights())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def corpus(self, tmp, docs):
        os.makedirs(os.path.join(tmp, "corpus"), exist_ok=True)
        for name, text in docs.items():
            with open(os.path.join(tmp, "corpus", name), "w") as fh:
                fh.write(text)

    def test_dense_index_is_incremental_and_checked(self):
        from mini_rag.embed.dense import dense_path, read_dense
        from mini_rag.search.retrieve import open_retriever
        with tempfile.TemporaryDirectory() as tmp:
            self.corpus(tmp, DOCS)
            cfg = tiny_config(tmp, self.folder, self.sha, mode="dense")
            log = io.StringIO()
            with contextlib.redirect_stderr(log):
                r = open_retriever(cfg)
            path = dense_path(cfg)
            self.assertEqual(path, os.path.join(tmp, "index.dense"))
            searchable = [c for c in r.index.chunks if not c.is_heading]
            self.assertEqual(r.fusion.dense.encoded, len(searchable))
            manifest, matrix = read_dense(path)
            self.assertEqual((manifest["rows"], manifest["dim"], manifest["model_sha256"], manifest["max_seq_length"]),
                             (len(searchable), HIDDEN, self.sha, 32))
            # One changed paragraph: one chunk encoded, the others reused.
            self.corpus(tmp, dict(DOCS, **{"data.md": "# Data retention\n\nCustomer data is kept for ten years.\n"}))
            with contextlib.redirect_stderr(log):
                r2 = open_retriever(cfg)
            self.assertEqual(r2.fusion.dense.encoded, 1)
            self.assertIn("encoding 1 new or changed chunks", log.getvalue())
            enc = r2.fusion.encoder
            from mini_rag.indexing.index import indexed_text
            for pos, c in enumerate(r2.index.chunks):
                row = r2.fusion.dense.row_of[pos]
                if c.is_heading:
                    self.assertEqual(row, -1)
                else:
                    self.assertLess(float(np.abs(r2.fusion.dense.matrix[row] - enc.encode([indexed_text(c)])[0]).max()), 1e-6)
            # A damaged file is reported and rebuilt, never used.
            with open(path, "r+b") as fh:
                fh.seek(-4, os.SEEK_END)
                fh.write(b"\x00\x00\x00\x00")
            log = io.StringIO()
            with contextlib.redirect_stderr(log):
                r3 = open_retriever(cfg)
            self.assertIn("does not match its body_sha256", log.getvalue())
            self.assertEqual(r3.fusion.dense.encoded, len(searchable))
            # Another max_seq_length: everything is encoded again.
            cfg["embed"]["max_seq_length"] = 16
            with contextlib.redirect_stderr(io.StringIO()):
                r4 = open_retriever(cfg)
            self.assertEqual(r4.fusion.dense.encoded, len(searchable))

    def test_interrupted_encode_resumes_from_its_checkpoint(self):
        from mini_rag.embed import dense as D
        from mini_rag.embed.hybrid import get_encoder
        from mini_rag.indexing.index import build_from_config
        with tempfile.TemporaryDirectory() as tmp:
            self.corpus(tmp, DOCS)
            cfg = tiny_config(tmp, self.folder, self.sha)
            index = build_from_config(cfg)
            encoder = get_encoder(cfg, io.StringIO())
            real = encoder.encode
            calls = []

            def failing(texts, **kw):
                calls.append(len(texts))
                if len(calls) == 3:
                    raise KeyboardInterrupt
                return real(texts, **kw)
            saved = (D.CHECKPOINT_TEXTS, D.CHECKPOINT_SECONDS)
            D.CHECKPOINT_TEXTS, D.CHECKPOINT_SECONDS = 2, 0.0
            try:
                encoder.encode = failing
                with self.assertRaises(KeyboardInterrupt):
                    D.build_or_load(index, encoder, os.path.join(tmp, "d.dense"), log=io.StringIO())
                manifest, _ = D.read_dense(os.path.join(tmp, "d.dense"))
                self.assertEqual(manifest["rows"], 4)          # two slices of 2 were saved
                encoder.encode = real
                dense = D.build_or_load(index, encoder, os.path.join(tmp, "d.dense"), log=io.StringIO())
            finally:
                D.CHECKPOINT_TEXTS, D.CHECKPOINT_SECONDS = saved
                encoder.encode = real
            self.assertEqual(dense.encoded, len(dense.keys) - 4)
            self.assertEqual(calls[:2], [2, 2])

    def test_index_command_builds_the_dense_index_and_cosine_scores(self):
        from mini_rag.commands.cli import main
        from mini_rag.embed import available, cosine_scores
        with tempfile.TemporaryDirectory() as tmp:
            self.corpus(tmp, DOCS)
            path = os.path.join(tmp, "c.toml")
            with open(path, "w") as fh:
                fh.write("[corpus]\npath = %s\n[index]\npath = %s\n[retrieval]\nmode = \"hybrid\"\n"
                         "[embed]\nsha256 = %s\nmax_seq_length = 32\n"
                         % tuple(json.dumps(v) for v in (os.path.join(tmp, "corpus"),
                                                         os.path.join(tmp, "i.json.gz"), self.sha)))
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(["index", "--config", path, "--embed-model", self.folder])
            self.assertEqual(rc, 0, err.getvalue())
            self.assertIn("%s: 5 vectors of 32 dimensions (5 encoded, 0 reused)" % os.path.join(tmp, "i.dense"),
                          out.getvalue())
            cfg = tiny_config(tmp, self.folder, self.sha)
            self.assertTrue(available(cfg))
            vecs = hybrid.get_encoder(cfg).encode(["leave", "annual leave", "data"])
            self.assertEqual(cosine_scores("leave", ["annual leave", "data"], cfg),
                             [round(float(vecs[0] @ vecs[i]), 6) for i in (1, 2)])

    def test_dense_and_hybrid_rankings(self):
        from mini_rag.indexing.index import indexed_text
        from mini_rag.search.retrieve import open_retriever
        q = "how long is customer data kept"
        with tempfile.TemporaryDirectory() as tmp:
            self.corpus(tmp, DOCS)
            cfg = tiny_config(tmp, self.folder, self.sha, mode="dense", use_mmr=False, min_similarity=0.0,
                              fallback_min_similarity=0.0)
            with contextlib.redirect_stderr(io.StringIO()):
                r = open_retriever(cfg)
            enc, idx = r.fusion.encoder, r.index
            qv = enc.encode([q])[0]
            cos = {p: round(float(enc.encode([indexed_text(c)])[0] @ qv), 6)
                   for p, c in enumerate(idx.chunks) if not c.is_heading}
            expected = sorted(cos, key=lambda p: (-cos[p], idx.chunks[p].chunk_id))
            hits = r.search(q, k=10)
            self.assertEqual([h.chunk_id for h in hits], [idx.chunks[p].chunk_id for p in expected])
            for h in hits:
                self.assertAlmostEqual(h.score, cos[idx.position(h.chunk_id)], places=5)
            sims = [h.similarity for h in hits]
            self.assertEqual(sims, sorted(sims, reverse=True))
            # Hybrid RRF: 1 / (60 + rank) summed over the BM25 run and the dense run.
            cfg["retrieval"]["mode"] = "hybrid"
            with contextlib.redirect_stderr(io.StringIO()):
                r = open_retriever(cfg)
            bm = r.rank_terms(idx.analyzer.analyze(q), 100)
            rrf = {}
            for rank, (p, _s, _sim) in enumerate(bm, 1):
                rrf[p] = rrf.get(p, 0.0) + 1.0 / (60 + rank)
            for rank, p in enumerate(expected, 1):
                rrf[p] = rrf.get(p, 0.0) + 1.0 / (60 + rank)
            order = sorted(rrf, key=lambda p: (-rrf[p], idx.chunks[p].chunk_id))
            hits = r.search(q, k=10)
            self.assertEqual([h.chunk_id for h in hits], [idx.chunks[p].chunk_id for p in order])
            self.assertEqual([h.score for h in hits], [rrf[p] for p in order])
            bm_sim = {p: sim for p, _s, sim in bm}
            own = [0.5 * bm_sim.get(p, 0.0) + 0.5 * max(0.0, cos[p]) for p in order]
            self.assertEqual([h.similarity for h in hits], [max(own[i:]) for i in range(len(own))])
            # The QA contract flow runs on the fused ranking.
            result = r.retrieve(q)
            self.assertEqual([h.chunk_id for h in result.candidates],
                             [idx.chunks[p].chunk_id for p in order[:cfg["retrieval"]["top_k"]]])


class Fusion(unittest.TestCase):
    def test_rrf_by_hand(self):
        got = hybrid.fuse_rrf([[(0, 9.0), (1, 5.0)], [(1, 0.8), (2, 0.7)]], [0, 1, 2], 60)
        self.assertEqual(got, [(1, 1 / 62 + 1 / 61), (0, 1 / 61), (2, 1 / 62)])

    def test_rrf_ties_by_chunk_order(self):
        # Chunks 0 and 1 both at rank 1 of one run: tie broken by tie rank (1 before 0 here).
        got = hybrid.fuse_rrf([[(0, 1.0)], [(1, 1.0)]], [5, 2], 60)
        self.assertEqual([p for p, _ in got], [1, 0])

    def test_convex_by_hand(self):
        bm = [(0, 10.0), (1, 6.0), (2, 2.0)]
        de = [(2, 0.9), (3, 0.6), (0, 0.3)]
        got = dict(hybrid.fuse_convex(bm, de, [0, 1, 2, 3], 0.25))
        self.assertEqual(got, {0: 0.25 * 1.0 + 0.75 * 0.0, 1: 0.25 * 0.5, 2: 0.25 * 0.0 + 0.75 * 1.0,
                               3: 0.75 * (0.6 - 0.3) / (0.9 - 0.3)})
        self.assertEqual(hybrid.fuse_convex([(4, 2.0), (5, 2.0)], [], [0] * 6, 0.5), [(4, 0.5), (5, 0.5)])

    def test_lift(self):
        self.assertEqual(hybrid.lift([0.3, 0.5, 0.1, 0.2]), [0.5, 0.5, 0.2, 0.2])
        self.assertEqual(hybrid.lift([]), [])

    def test_settings_are_checked(self):
        cases = [({"mode": "bm52"}, "mode must be one of bm25, dense, hybrid, got 'bm52'"),
                 ({"mode": "hybrid", "fusion": "max"}, "fusion must be one of rrf, convex"),
                 ({"mode": "hybrid", "fusion_alpha": 1.5}, "fusion_alpha must be from 0 to 1")]
        for retrieval, message in cases:
            cfg = copy.deepcopy(DEFAULTS)
            cfg["retrieval"].update(retrieval)
            with self.subTest(message=message):
                with self.assertRaisesRegex(MiniRagError, message):
                    hybrid.check_settings(cfg)

    def test_model_path_order(self):
        cfg = copy.deepcopy(DEFAULTS)
        cfg["embed"]["model"] = "from-config"
        old = os.environ.pop(hybrid.ENV_MODEL, None)
        try:
            self.assertEqual(hybrid.model_path(cfg), "from-config")
            os.environ[hybrid.ENV_MODEL] = "from-env"
            self.assertEqual(hybrid.model_path(cfg), "from-env")
            with hybrid.cli_model("from-cli"):
                self.assertEqual(hybrid.model_path(cfg), "from-cli")
            self.assertEqual(hybrid.model_path(cfg), "from-env")
        finally:
            os.environ.pop(hybrid.ENV_MODEL, None)
            if old is not None:
                os.environ[hybrid.ENV_MODEL] = old


# ---------------------------------------------------------------- command line

class CommandLine(unittest.TestCase):
    def run_cli(self, args, tmp, prelude="", env=None):
        code = ("import sys; sys.path.insert(0, %r); %s\nfrom mini_rag.commands.cli import main\nrc = main(%r)\n"
                "print('numpy imported:', 'numpy' in sys.modules)\nsys.exit(rc)" % (str(ROOT), prelude, args))
        environ = {k: v for k, v in os.environ.items() if k != hybrid.ENV_MODEL}
        environ.update(env or {})
        return subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, env=environ)

    def write_config(self, tmp, **retrieval):
        path = os.path.join(tmp, "c.toml")
        with open(path, "w") as fh:
            fh.write("[index]\npath = %s\n[retrieval]\n" % json.dumps(os.path.join(tmp, "i.json.gz")))
            for k, v in retrieval.items():
                fh.write("%s = %s\n" % (k, json.dumps(v)))
        return path

    def test_default_search_imports_no_numpy(self):
        with tempfile.TemporaryDirectory() as tmp:
            p = self.run_cli(["search", "refund", "--k", "1", "--config", self.write_config(tmp)], tmp)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(p.stdout.endswith("numpy imported: False\n"), p.stdout[-200:])

    def test_missing_model_is_one_line_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = self.write_config(tmp, mode="hybrid")
            cases = [([], {}, "no embedding model given: use --embed-model PATH"),
                     (["--embed-model", os.path.join(tmp, "nope.whl")], {},
                      "embedding model %s: no such file or folder" % os.path.join(tmp, "nope.whl")),
                     ([], {hybrid.ENV_MODEL: os.path.join(tmp, "env.whl")},
                      "embedding model %s: no such file or folder" % os.path.join(tmp, "env.whl"))]
            for extra, env, message in cases:
                with self.subTest(message=message):
                    p = self.run_cli(["search", "refund", "--config", cfg] + extra, tmp, env=env)
                    if np is None:
                        message = "dense retrieval needs numpy"
                    self.assertEqual(p.returncode, 2, p.stderr)
                    self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                    self.assertIn(message, p.stderr)

    def test_missing_numpy_is_one_line_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = self.write_config(tmp, mode="dense")
            p = self.run_cli(["search", "refund", "--config", cfg, "--embed-model", tmp], tmp,
                             prelude="sys.modules['numpy'] = None")
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(p.stderr, "mini_rag: dense retrieval needs numpy, which is not installed "
                                       "(pip install numpy); [retrieval] mode = \"bm25\" needs nothing\n")

    def test_bad_mode_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            p = self.run_cli(["search", "refund", "--config", self.write_config(tmp, mode="vector")], tmp)
            self.assertEqual(p.returncode, 2)
            self.assertIn("[retrieval] mode must be one of bm25, dense, hybrid, got 'vector'", p.stderr)


if __name__ == "__main__":
    unittest.main()
