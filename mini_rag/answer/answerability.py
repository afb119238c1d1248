"""Calibrated answerability: which sentence to ship, and whether to ship at all (issue 17).

Phase C's rules choose sentences; this stage weighs them against every other sentence of
the best retrieved chunks with a small set of general evidence features, combined by a
logistic model whose weights were fitted on external data (never on ``gold/``):

================  ==========================================================================
feature           what it measures (question terms: ``Retrieval.query_terms``, the question
                  analyzed once, typo-corrected)
================  ==========================================================================
``cov``           share of the distinct question terms the sentence holds
``wcov``          the same, IDF-weighted; a term the corpus never uses counts as missing
                  at the largest IDF there is
``chunk_wcov``    ``wcov`` over the whole chunk
``rare``          the question's rarest term is in the sentence
``absent``        IDF share of question terms absent from the whole corpus
``sim``           the chunk's retrieval similarity (0..1)
``top``           the chunk is the first hit
``margin``        first hit's similarity minus the second's
``typed``         the sentence states a value of the type the question asks for
                  (``synthesize.value_match``); 1 when the question asks for no type
``novel``         share of the sentence's terms that are not the question's (an answer adds
                  something)
``prox``          matched question terms / the token span holding them
``short``         the sentence has fewer than 8 terms
``miss_chunk``    share of the distinct question terms the chunk lacks
``names_missing`` a capitalized word or number of the question (not its first word) that
                  the chunk does not hold, case-folded (a swapped name or figure)
``negation``      the question says not/never/no and the sentence does not, or the reverse
``bigram``        share of the question's adjacent term pairs found adjacent in the sentence
``miss_idf``      the largest IDF among question terms the chunk lacks, over the largest
                  IDF of the question (0 when the chunk holds them all)
``miss_idf_sent`` the same for the sentence
``rules``         phase C's rules chose this sentence
``rules_refused`` phase C's rules refused the question
================  ==========================================================================

With embeddings (issue 24: numpy importable and an ``[embed] model`` configured, see
``mini_rag/embed/``) two more features, :data:`EMBED_FEATURES`, come from the project's
MiniLM encoder (``Encoder.cosine_scores``: unit vectors, cosines rounded to 6 places; each
text is encoded once per process, all of a question's texts in one batched call):

================  ==========================================================================
``cos``           cosine of the question with the sentence
``chunk_cos``     cosine of the question with the whole chunk (its first ``max_seq_length``
                  word pieces)
================  ==========================================================================

They are read by a second fitted model, ``mini_rag/data/answerability_embed.json``
(``bench/fit_answerability.py --embed``), which records the sha256 and ``max_seq_length``
of the encoder it was fitted with; :func:`decide` uses it only when the configured
encoder is that one, else the lexical model (one warning line).  Without embeddings
nothing here imports numpy and the lexical model decides.

Two fitted stages, both in the standard library:

1. **Ranker** (a conditional logit): ``score = r . x`` over FEATURES (no bias); the
   candidate with the largest score is the answer sentence (ties: the earlier one).
2. **Gate** (a logistic regression): ``P(correct) = 1 / (1 + exp(-(g . x')))``, where ``x'``
   is the chosen candidate's features plus ``share`` (its softmax share of the ranker's
   scores) and ``rmargin`` (its score minus the runner-up's, capped at 5, over 5).  The
   answer ships when ``P >= threshold``, else the question is refused
   (``below_answerability``); ``P >= high`` is High confidence, else Medium.

When the chosen sentence is one of phase C's, phase C's whole answer ships (it may join
several sentences).  The weights, the threshold and the command, data and sha256 that
produced them are in ``mini_rag/data/answerability.json`` (``make fit``,
``bench/fit_answerability.py``).
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import MiniRagError
from ..records import Retrieval
from .synthesize import Answer, AnswerSentence, echo_words, question_type, split_sentences, value_match

__all__ = ["FEATURES", "GATE_FEATURES", "EMBED_FEATURES", "Candidate", "Model", "candidates", "load_model",
           "decide", "embed_scorer", "MODEL_PATH", "EMBED_MODEL_PATH", "THRESHOLD_KEYS", "threshold_of",
           "deciding_model"]

FEATURES = ("bias", "cov", "wcov", "chunk_wcov", "rare", "absent", "sim", "top", "margin", "typed",
            "novel", "prox", "short", "miss_chunk", "names_missing", "negation", "bigram",
            "miss_idf", "miss_idf_sent", "rules", "rules_refused")
_WORDS = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")
_NEGATIONS = frozenset(("not", "never", "no", "nor", "cannot", "n't", "without", "none"))
MODEL_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "answerability.json")
MODEL_FORMAT = 2
#: The "with embeddings" model: FEATURES + EMBED_FEATURES, same format.
EMBED_MODEL_PATH = os.path.join(os.path.dirname(MODEL_PATH), "answerability_embed.json")
EMBED_FEATURES = ("cos", "chunk_cos")
#: Sentences of this many best hits are candidates.
CANDIDATE_HITS = 3


@dataclass
class Candidate:
    chunk_id: str
    doc_id: str
    page: int
    sentence: str
    features: Dict[str, float]


GATE_FEATURES = FEATURES + ("share", "rmargin")


def _sigmoid(z: float) -> float:
    if z < -60.0:
        return 0.0
    return 1.0 / (1.0 + math.exp(-z))


@dataclass
class Model:
    ranker: Dict[str, float]
    gate: Dict[str, float]
    threshold: float
    high: float
    #: The candidate features the model reads (FEATURES, or FEATURES + EMBED_FEATURES).
    features: Tuple[str, ...] = FEATURES
    #: With embeddings: {"model_sha256", "max_seq_length"} of the encoder it was fitted with.
    embed: Optional[Dict[str, Any]] = None

    @property
    def gate_features(self) -> Tuple[str, ...]:
        return self.features + ("share", "rmargin")

    def rank_score(self, feats: Dict[str, float]) -> float:
        return math.fsum(self.ranker.get(k, 0.0) * feats[k] for k in self.features)

    def choose(self, feats: Sequence[Dict[str, float]]):
        """(index of the best candidate, its gate features), or (None, None) when empty."""
        if not feats:
            return None, None
        zs = [self.rank_score(f) for f in feats]
        best = max(range(len(zs)), key=lambda i: (zs[i], -i))
        top = zs[best]
        total = math.fsum(math.exp(z - top) for z in zs)
        runner_up = max((z for i, z in enumerate(zs) if i != best), default=top - 5.0)
        g = dict(feats[best])
        g["share"] = 1.0 / total
        g["rmargin"] = min(top - runner_up, 5.0) / 5.0
        return best, g

    def prob(self, gate_feats: Dict[str, float]) -> float:
        return _sigmoid(math.fsum(self.gate.get(k, 0.0) * gate_feats[k] for k in self.gate_features))


_MODELS: Dict[str, Model] = {}


def _weights(doc: Dict[str, Any], key: str, names: Sequence[str]) -> Dict[str, float]:
    w = doc[key]
    if not isinstance(w, dict) or set(w) != set(names) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in w.values()):
        raise ValueError("%s must give a finite number for each of %s" % (key, ", ".join(names)))
    return {k: float(w[k]) for k in names}


def load_model(path: str = MODEL_PATH) -> Model:
    """The fitted model (read once per path); a bad file is a MiniRagError naming it."""
    m = _MODELS.get(path)
    if m is not None:
        return m
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        if not isinstance(doc, dict) or doc.get("format") != MODEL_FORMAT:
            raise ValueError("format must be %d" % MODEL_FORMAT)
        embed = _embed_section(doc)
        features = FEATURES + (EMBED_FEATURES if embed else ())
        ranker = _weights(doc, "ranker", [f for f in features if f != "bias"])
        gate = _weights(doc, "gate", features + ("share", "rmargin"))
        t, high = float(doc["threshold"]), float(doc["high"])
        if not (0.0 <= t <= 1.0 and 0.0 <= high <= 1.0):
            raise ValueError("threshold and high must be in [0, 1]")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MiniRagError("%s: not an answerability model: %s" % (path, exc)) from None
    m = _MODELS[path] = Model(ranker, gate, t, high, features, embed)
    return m


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _embed_section(doc: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """A model's ``embed`` section, checked ({"features", "model_sha256", "max_seq_length"}),
    or None for a lexical model."""
    e = doc.get("embed")
    if e is None:
        return None
    if not isinstance(e, dict) or e.get("features") != list(EMBED_FEATURES):
        raise ValueError("embed.features must be %s" % json.dumps(list(EMBED_FEATURES)))
    sha, seq = e.get("model_sha256"), e.get("max_seq_length")
    if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
        raise ValueError("embed.model_sha256 must be 64 lower-case hex digits")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 2:
        raise ValueError("embed.max_seq_length must be an integer >= 2")
    return {"model_sha256": sha, "max_seq_length": seq}


Cosine = Callable[[str, Sequence[str]], List[float]]


def embed_scorer(config: Optional[Dict[str, Any]]):
    """The configured encoder (its ``cosine_scores(question, texts)`` gives ``cos`` and
    ``chunk_cos``), or None when ``config`` sets no embedding model or numpy is not
    installed; numpy is imported only in the first case."""
    if not config:
        return None
    from .. import embed
    if not embed.available(config):
        return None
    from ..embed.hybrid import get_encoder
    return get_encoder(config)


_WARNED: List[str] = []


def _matches(model: Model, encoder: Any) -> bool:
    """The encoder is the one the embedding model was fitted with (else one warning line)."""
    want = model.embed or {}
    if (encoder.sha256, encoder.max_seq_length) == (want.get("model_sha256"), want.get("max_seq_length")):
        return True
    if not _WARNED:
        _WARNED.append(encoder.sha256)
        print("mini_rag: warning: answerability: the embedding model (sha256 %s, max_seq_length %d) is not the "
              "one %s was fitted with; the lexical model decides" % (
                  encoder.sha256, encoder.max_seq_length, os.path.basename(EMBED_MODEL_PATH)), file=sys.stderr)
    return False


def _idf_table(index: Any, terms: Sequence[str]) -> Dict[str, float]:
    n = index.num_searchable
    top = math.log(1.0 + (n + 0.5) / 0.5)          # bm25 idf of a term no chunk holds
    out = {}
    for t in terms:
        df = index.doc_freq(t)
        out[t] = top if df == 0 else math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    return out


def _share(idf: Dict[str, float], have: Any, total: float) -> float:
    return math.fsum(v for t, v in idf.items() if t in have) / total if total > 0 else 0.0


def _prox(q: frozenset, toks: Sequence[str]) -> float:
    pos = [i for i, t in enumerate(toks) if t in q]
    if not pos:
        return 0.0
    matched = len({toks[i] for i in pos})
    return matched / (pos[-1] - pos[0] + 1)


def _marked_words(question: str) -> List[str]:
    """Capitalized words and numbers of the question past its first word, case-folded."""
    words = _WORDS.findall(question)
    return sorted({w.casefold() for w in words[1:] if w[0].isupper() or w[0].isdigit()})


def _negated(text: str) -> bool:
    low = text.casefold()
    return any(w in _NEGATIONS for w in _WORDS.findall(low)) or "n't" in low


def _bigrams(toks: Sequence[str]) -> set:
    return set(zip(toks, toks[1:]))


def candidates(question: str, retrieval: Retrieval, answer: Answer, index: Any,
               analyzer: Any, cosine: Optional[Cosine] = None, qa: Any = None) -> List[Candidate]:
    """Every sentence of the first ``CANDIDATE_HITS`` hits, with its features; with
    ``cosine`` (``cosine(question, texts) -> [cosine per text]``, e.g. an encoder's
    ``cosine_scores``) also :data:`EMBED_FEATURES`; ``qa`` (the question's
    ``question.QuestionAnalysis``) gives the question's type, echo words, capitalized
    words, negation and terms instead of reading ``question`` again."""
    hits = retrieval.hits[:CANDIDATE_HITS]
    q_terms = list(dict.fromkeys(retrieval.query_terms))
    if not hits or not q_terms:
        return []
    q = frozenset(q_terms)
    idf = _idf_table(index, q_terms)
    total = math.fsum(idf.values())
    rarest = max(q_terms, key=lambda t: (idf[t], t))
    absent = math.fsum(v for t, v in idf.items() if index.doc_freq(t) == 0) / total if total else 0.0
    margin = hits[0].similarity - hits[1].similarity if len(hits) > 1 else hits[0].similarity
    kind = question_type(question) if qa is None else qa.question_type
    echo = echo_words(question) if qa is None else qa.echo
    chosen = set()
    if not answer.refused:
        for s in answer.sentences:
            chosen.add(s.chunk_id)
            chosen.update("%s\0%s" % (s.chunk_id, part) for part in split_sentences(s.sentence))
    refused = 1.0 if answer.refused or not answer.sentences else 0.0
    marked = _marked_words(question) if qa is None else qa.marked
    q_neg = _negated(question) if qa is None else qa.negated
    q_pairs = _bigrams(analyzer.analyze(question) if qa is None else qa.analyzed)
    out = []
    for rank, h in enumerate(hits):
        chunk_terms = frozenset(analyzer.analyze(h.text))
        chunk_wcov = _share(idf, chunk_terms, total)
        miss_chunk = len(q - chunk_terms) / len(q)
        chunk_words = {w.casefold() for w in _WORDS.findall(h.text)}
        names_missing = 1.0 if any(w not in chunk_words for w in marked) else 0.0
        miss_idf = max((idf[t] for t in q - chunk_terms), default=0.0) / idf[rarest]
        for sent in split_sentences(h.text):
            toks = analyzer.analyze(sent)
            st = frozenset(toks)
            if not st:
                continue
            feats = {
                "bias": 1.0,
                "cov": len(q & st) / len(q),
                "wcov": _share(idf, st, total),
                "chunk_wcov": chunk_wcov,
                "rare": 1.0 if rarest in st else 0.0,
                "absent": absent,
                "sim": float(h.similarity),
                "top": 1.0 if rank == 0 else 0.0,
                "margin": float(margin),
                "typed": float(value_match(kind, sent, echo)),
                "novel": len(st - q) / len(st),
                "prox": _prox(q, toks),
                "short": 1.0 if len(toks) < 8 else 0.0,
                "miss_chunk": miss_chunk,
                "names_missing": names_missing,
                "negation": 1.0 if q_neg != _negated(sent) else 0.0,
                "bigram": len(q_pairs & _bigrams(toks)) / len(q_pairs) if q_pairs else 0.0,
                "miss_idf": miss_idf,
                "miss_idf_sent": max((idf[t] for t in q - st), default=0.0) / idf[rarest],
                "rules": 1.0 if "%s\0%s" % (h.chunk_id, sent) in chosen else 0.0,
                "rules_refused": refused,
            }
            out.append(Candidate(h.chunk_id, h.doc_id, int(h.page), sent, feats))
    if cosine is not None and out:
        _add_cosines(question, hits, out, cosine)
    return out


def _add_cosines(question: str, hits: Sequence[Any], cands: List[Candidate], cosine: Cosine) -> None:
    """``cos`` and ``chunk_cos`` of every candidate: one call for the question's distinct
    sentences and chunks."""
    chunk_text = {h.chunk_id: h.text for h in hits}
    texts = list(dict.fromkeys([c.sentence for c in cands] + [chunk_text[c.chunk_id] for c in cands]))
    sims = dict(zip(texts, cosine(question, texts)))
    for c in cands:
        c.features["cos"] = float(sims[c.sentence])
        c.features["chunk_cos"] = float(sims[chunk_text[c.chunk_id]])


#: The ``[answer]`` key that overrides each model's fitted threshold (-1: the file's own).
THRESHOLD_KEYS = {"model": "answerability_threshold", "model+embed": "answerability_embed_threshold"}


def threshold_of(model: Model, config: Optional[Dict[str, Any]]) -> float:
    """The threshold ``model`` ships at: ``[answer] answerability_threshold`` (the lexical
    model) or ``answerability_embed_threshold`` (the model with embeddings) when it is 0 or
    more (``calibrate`` writes it), else the threshold fitted into the model's file."""
    key = THRESHOLD_KEYS["model+embed" if model.embed is not None else "model"]
    value = float(((config or {}).get("answer") or {}).get(key, -1.0))
    return value if value >= 0.0 else model.threshold


def deciding_model(config: Optional[Dict[str, Any]]) -> str:
    """Which fitted model :func:`decide` reads under ``config``: ``"model+embed"`` when an
    embedding model is configured (numpy installed) and is the encoder the embedding model
    was fitted with, else ``"model"`` (the lexical one).  Loads the encoder when configured."""
    encoder = embed_scorer(config)
    if encoder is not None and _matches(load_model(EMBED_MODEL_PATH), encoder):
        return "model+embed"
    return "model"


def decide(question: str, retrieval: Retrieval, answer: Answer, index: Any, analyzer: Any,
           model: Optional[Model] = None, config: Optional[Dict[str, Any]] = None,
           qa: Any = None) -> Answer:
    """The answer to ship: phase C's, one better-supported sentence, or a refusal.

    Without ``model``: the embedding model when ``config`` configures embeddings (numpy
    installed, ``[embed] model`` / ``$MINI_RAG_EMBED_MODEL`` / ``--embed-model``) and its
    encoder is the one the model was fitted with, else the lexical model."""
    encoder = None
    if model is None:
        encoder = embed_scorer(config)
        if encoder is not None:
            model = load_model(EMBED_MODEL_PATH)
            if not _matches(model, encoder):
                model, encoder = None, None
        model = model or load_model()
    elif model.embed is not None:
        encoder = embed_scorer(config)
        if encoder is None:
            raise MiniRagError("answerability: this model reads embedding features; configure an embedding "
                               "model ([embed] model) and install numpy")
    cands = candidates(question, retrieval, answer, index, analyzer,
                       cosine=encoder.cosine_scores if encoder is not None else None, qa=qa)
    i, gate_feats = model.choose([c.features for c in cands])
    p = model.prob(gate_feats) if i is not None else 0.0
    detail = dict(answer.detail)
    detail["answerability"] = round(p, 4) if i is not None else None
    if i is None or p < threshold_of(model, config):
        return Answer(sentences=[], confidence="Low", refused=True, reasons=["below_answerability"],
                      detail=detail)
    best = cands[i]
    confidence = "High" if p >= model.high else "Medium"
    if best.features["rules"] and not answer.refused:
        return Answer(sentences=list(answer.sentences), confidence=confidence, refused=False,
                      reasons=[], detail=detail)
    sent = AnswerSentence(sentence=best.sentence, pdf=best.doc_id, page=best.page, chunk_id=best.chunk_id)
    return Answer(sentences=[sent], confidence=confidence, refused=False, reasons=[], detail=detail)
