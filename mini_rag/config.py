"""One configuration for every retrieval and answering setting.

The defaults below are the QA contract's (seed 001) where it sets a value, and are
committed verbatim in ``configs/default.toml`` (a test keeps the two equal).  Another
file given with ``--config FILE`` overrides any subset of them::

    [retrieval]
    min_similarity = 0.15

Rules: a section or key that is not below is an error that names the closest known one;
a value must have the type of its default (an int is accepted where a float is expected),
a number must be inside its range (:data:`RANGES`), a choice one of :data:`CHOICES`, a path
or the refusal token not empty, list items not empty (:func:`check_setting`); each error
names the file and the key (exit 2); paths are relative to the working directory.  The ``[expansion.NAME]`` tables are query
expansion rules, each ``match = "phrase"`` and ``add = ["phrase", ...]``.

Python 3.11+ reads TOML with ``tomllib``; 3.9 and 3.10 use the small reader of the
documented TOML subset in ``score_eval.py`` (the scorer's, so both read one dialect).
"""
from __future__ import annotations

import copy
import datetime
import difflib
import math
import os
import re
import sys
from typing import Any, Dict, Optional, Tuple

from .errors import MiniRagError
from .fileio import escape_controls, read_limited, scorer

DEFAULT_CONFIG_PATH = os.path.join("configs", "default.toml")
#: ``as_of`` when no document of the corpus has a date: nothing is ever older than it.
NO_DATE_AS_OF = "0001-01-01"

# Every setting, grouped by the stage that reads it.  Types are taken from these values.
DEFAULTS: Dict[str, Dict[str, Any]] = {
    "corpus": {
        "path": "gold/corpus",
        "max_chunk_chars": 0,            # 0: one chunk per paragraph (the seeds' rule)
    },
    "analysis": {
        "stopwords": "english",          # "english" | "none"
        "stemmer": "english",            # "english" (Snowball 3.1 Porter2) | "none"
    },
    "index": {
        "path": "runs/index.json.gz",
        "k1": 1.5,
        "b": 0.75,
    },
    "retrieval": {
        "scoring": "bm25",               # ranking function: "bm25" | "tfidf"
        "top_k": 8,
        "max_context_chunks": 6,
        "min_similarity": 0.20,
        "use_mmr": True,
        "mmr_lambda": 0.60,
        "fallback_min_similarity": 0.18,
        "fallback_only_if_empty": True,
        "authority_scope": "MIXED",      # MIXED (all) or one authority, e.g. FDA, EMA, ICH, SOPS
        "typo_correction": True,         # unknown query terms -> nearest vocabulary term (retrieve.py)
        "derivation_weight": 0.5,        # a query term's verb/noun variant (derive.py) counts at this share; 0: off
        "synonym_weight": 0.5,           # a query term's synonym (synonyms.py) counts at this share; 0: off
        "pruning": True,                 # exact pruned top-k (MaxScore) on large queries; same ranking either way
        "numpy": False,                  # score with numpy when it imports (optional); same ranking either way
        # embed/hybrid.py: "bm25" (default, no numpy) | "dense" | "hybrid" (needs numpy and [embed] model)
        "mode": "bm25",
        "fusion": "rrf",                 # hybrid: "rrf" (reciprocal rank) | "convex" (min-max, fusion_alpha)
        "rrf_k": 60,
        "fusion_alpha": 0.5,             # BM25's weight in convex fusion and in the hybrid similarity
        "fusion_depth": 100,             # each run's top N fused
    },
    # Dense embeddings (mini_rag/embed/, docs/embeddings.md); read only when mode is not "bm25".
    "embed": {
        "model": "",                     # folder or .whl of all-MiniLM-L6-v2; --embed-model and MINI_RAG_EMBED_MODEL override
        "sha256": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",  # of model.safetensors; "": unchecked (warning)
        "max_seq_length": 256,           # word pieces per chunk, [CLS] and [SEP] included
        "batch_size": 8,                 # texts encoded together (8 ran faster per token than 32)
        "index_path": "",                # "": the [index] path with .json.gz replaced by .dense
    },
    # [expansion.NAME] tables: match = "continuous processing", add = ["...", "..."]
    "expansion": {
        "continuous_processing": {
            "match": "continuous processing",
            "add": ["continuous manufacturing", "ICH Q13"],
        },
    },
    "answer": {
        "refusal": "not in context",     # seed 002's token; the QA contract's is "Not found in provided PDFs"
        "max_sentences": 6,
        "strip_framing": True,           # drop greetings, thanks and asides before answering, see framing.py
        "scenario_split": True,          # a scenario question is also retrieved as its ask + situation terms, framing.py
        # generator.py: which phase C generator runs ("extractive" | "command")
        "generator": "extractive",
        "generator_command": [],         # argv of the "command" generator (JSON in on stdin, out on stdout)
        "generator_timeout": 30.0,       # seconds before the command generator is killed
        # relevance.py (phase B)
        "min_fact_overlap": 0.15,        # IDF-weighted share of question terms a fact must contain
        "derivations": True,             # bridge verb/noun stems (retain ~ retention), see derive.py
        "abbreviations": True,           # bridge the corpus's defined abbreviations (CCB ~ Change Control Board), see abbrev.py
        "definitions": True,             # bridge the corpus's glossary terms and their definitions' words, see glossary.py
        "examples": True,                # bridge the examples a corpus lists to their class ("components, such as a password"), see glossary.py
        "synonyms": True,                # bridge plain-language synonyms (keep ~ retain), see synonyms.py
        "quantities": True,              # bridge one length of time in other units (a fortnight ~ 14 days), see synonyms.quantity_bridges
        "asked_value": True,             # rule 3b of synthesize.py: the asked kind of value near the question's focus (asked.py)
        "answerability": False,          # the fitted model chooses the sentence and whether to ship (answerability.py; off: see docs/answering.md)
        "answerability_threshold": -1.0,        # the lexical model ships at P >= this; -1: its fitted threshold (calibrate sets it)
        "answerability_embed_threshold": -1.0,  # the same for the model with embeddings; -1: its fitted threshold
        "synonym_groups": [],            # more groups, each "word, word, phrase" (synonyms.py format)
        "wordnet": "",                   # WordNet's folder, or "auto" ($MINI_RAG_WORDNET, else /usr/share/wordnet if there); "": off (query/wordnet.py)
        "wordnet_senses": 1,             # ... a word's first senses whose synonyms bridge it
        "wordnet_tagged": True,          # ... only senses seen in WordNet's sense-tagged texts
        "wordnet_derived": False,        # ... also the derivationally related forms of the word's sense
        "wordnet_mutual": True,          # ... only words whose own first senses hold that sense too
        "dedup_jaccard": 0.9,            # word-set Jaccard at which two facts are near-identical
        # "document": a question scoped to one document weighs terms by general English and that
        # document's own idf (indexing/background.py), the same whatever else the index holds
        # (issue 43); "index": by the index's idf, as every unscoped question does
        "term_weights": "document",
        # synthesize.py (phase C), rules in its docstring
        "key_idf_ratio": 0.6,            # key terms: idf >= this * the question's largest idf
        "min_key_coverage": 0.7,         # IDF-weighted share of key terms the evidence chunk must contain
        "min_key_coverage_typed": 0.7,   # ... or this, when one of its sentences states the asked value type and holds this share of K itself
        "min_question_share": 0.3,       # ... and of all the question's terms (unknown ones included)
        "scope_relative": True,          # a question scoped to one document (doc_scope): its coverage is also judged against the other documents' best (rule 2b)
        "scope_min_key_coverage": 0.5,   # ... the scoped document must still hold this share of K
        "min_score": 0.3,                # best sentence score below this -> refuse (below_threshold)
        "weight_coverage": 0.55,         # sentence score = weighted sum of these four parts
        "weight_type": 0.2,
        "weight_proximity": 0.1,
        "weight_retrieval": 0.15,
        "extra_sentence_margin": 0.15,   # a 2nd/3rd sentence must score within this of the best
        "max_extra_sentences": 2,
        "confidence_high": 0.7,          # High: best score >= this and margin >= confidence_margin
        "confidence_medium": 0.45,       # Medium: best score >= this; Low otherwise
        "confidence_margin": 0.1,
    },
    "guards": {
        "as_of": "2026-11-01",           # freshness is measured against this date, never today
        "max_citations": 5,
        "min_chunks": 1,                 # fewer accepted hits -> ABSTAIN (see guards.py: 1, not seed 000's 2)
        "freshness_days_high_risk": 365, # effective date older than this -> stale (high risk)
        "freshness_days": 730,           # ... (medium risk; low risk never abstains)
        "conflict_min_shared_terms": 2,  # topic terms two sides must share to be "the same subject"
        "conflict_min_agreement": 0.67,  # Jaccard of the question terms two sides contain (rule 2c)
        "variant_min_overlap": 0.5,      # share of question terms a unit needs for the variant rule
        "parallel_min_similarity": 0.5,  # difflib ratio at which two units of one document are the same sentence
        "conflict_min_subject": 0.5,     # idf share of the question both sides' chunks must hold (conflicts rule 2f)
        "conflicts_with_superseded": True,   # a declared-superseded version still conflicts (seed 000; rule 5b)
    },
    # Risk classes: keyword phrases matched on analyzed question terms (decision_policy.md).
    "risk": {
        "high": ["policy", "legal", "compliance", "security", "personal data", "PII", "SSN", "SSNs",
                 "encryption", "refund", "chargeback", "pricing", "price", "limit", "retention", "retain",
                 "deletion", "delete", "GDPR", "HIPAA", "SOC2"],
        "medium": ["rate limit", "SLA", "uptime", "quota"],
    },
    # Ambiguity (CLARIFY) cues, see guards.check_ambiguity.
    "clarify": {
        "vague_referents": ["it", "its", "that", "this", "these", "those", "they", "them", "their"],
        "vague_max_terms": 2,
        "dimension_values": ["free", "starter", "basic", "pro", "professional", "premium",
                             "enterprise", "EU", "EEA", "US", "UK", "APAC", "EMEA",
                             "United States", "European Union", "United Kingdom"],
        "dimension_nouns": ["plan", "tier", "edition", "region", "package", "market"],
        "possessives": ["our", "my", "your"],
    },
    # Where the [answer] operating point came from: empty, or the record `calibrate` writes
    # (mini_rag/calibration.py; read by eval, which says which operating point it used).
    "calibration": {},
}

_RULE_KEYS = {"match": "", "add": [""]}

# Ranges of numeric settings (inclusive).  Every other number must be finite and at most
# NUMBER_BOUND in size: NaN or inf silently changes every score (k1 = nan indexes to NaN).
NUMBER_BOUND = 1e9
# Shares, weights and similarities: from 0 to 1.
_SHARES = {
    "index": "b",
    "retrieval": "min_similarity mmr_lambda fallback_min_similarity derivation_weight synonym_weight fusion_alpha",
    "answer": "min_fact_overlap dedup_jaccard key_idf_ratio min_key_coverage min_key_coverage_typed "
              "min_question_share scope_min_key_coverage weight_coverage weight_type weight_proximity weight_retrieval "
              "confidence_high confidence_medium confidence_margin min_score extra_sentence_margin",
    "guards": "conflict_min_agreement variant_min_overlap parallel_min_similarity conflict_min_subject",
}
RANGES: Dict[Tuple[str, str], Tuple[float, float]] = {
    (section, key): (0.0, 1.0) for section, keys in _SHARES.items() for key in keys.split()}
RANGES.update({
    ("corpus", "max_chunk_chars"): (0, 10_000_000),
    ("index", "k1"): (0.0, 1000.0),
    ("retrieval", "top_k"): (1, 10_000),
    ("retrieval", "max_context_chunks"): (1, 10_000),
    ("retrieval", "rrf_k"): (0, 1_000_000),
    ("retrieval", "fusion_depth"): (1, 1_000_000),
    ("embed", "max_seq_length"): (0, 512),        # 0: the model's own; 1 is refused below
    ("embed", "batch_size"): (1, 4096),
    ("answer", "max_sentences"): (1, 1000),
    ("answer", "generator_timeout"): (0.001, 86400.0),
    ("answer", "max_extra_sentences"): (0, 1000),
    ("answer", "wordnet_senses"): (1, 100),
    ("guards", "max_citations"): (1, 1000),
    ("guards", "min_chunks"): (0, 10_000),
    ("guards", "freshness_days_high_risk"): (0, 1_000_000),
    ("guards", "freshness_days"): (0, 1_000_000),
    ("guards", "conflict_min_shared_terms"): (0, 1000),
    ("answer", "answerability_threshold"): (-1.0, 1.0),
    ("answer", "answerability_embed_threshold"): (-1.0, 1.0),
    ("clarify", "vague_max_terms"): (0, 1000),
})


#: Settings that take one of a few values.  The modules that read them own the lists
#: (text/analysis.py, indexing/index.py SCORINGS, embed/hybrid.py MODES and FUSIONS,
#: answer/generator.py GENERATORS, indexing/background.py TERM_WEIGHTS); tests/test_config.py checks these equal them.
CHOICES: Dict[Tuple[str, str], Tuple[str, ...]] = {
    ("analysis", "stopwords"): ("english", "none"),
    ("analysis", "stemmer"): ("english", "none"),
    ("retrieval", "scoring"): ("bm25", "tfidf"),
    ("retrieval", "mode"): ("bm25", "dense", "hybrid"),
    ("retrieval", "fusion"): ("rrf", "convex"),
    ("answer", "generator"): ("command", "extractive"),
    ("answer", "term_weights"): ("index", "document"),
}
#: Strings that must hold something other than white space (a path, the refusal token).
NON_EMPTY = frozenset((("corpus", "path"), ("index", "path"), ("answer", "refusal")))
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def check_setting(where: str, section: str, key: str, value: Any) -> Any:
    """The rules a value's type and range do not say (issue 44: these used to exit 0 or to
    fail later without naming the file): a choice among :data:`CHOICES`, a non-empty path or
    token, list items that are not empty, ``[embed] sha256`` (64 hex digits or ""), ``[guards]
    as_of`` (a date YYYY-MM-DD or ""), ``[embed] max_seq_length`` (0 or from 2) and ``[answer]
    wordnet`` ("", "auto" or a folder holding a WordNet index file)."""
    choices = CHOICES.get((section, key))
    if choices is not None and value not in choices:
        same = [c for c in choices if c.casefold() == str(value).strip().casefold()]
        raise MiniRagError("%s must be one of %s, got %r%s" % (where, ", ".join(choices), value,
                                                               "; did you mean %r?" % same[0] if same
                                                               else _suggest(str(value), choices)))
    if (section, key) in NON_EMPTY and not value.strip():
        raise MiniRagError("%s must not be empty" % where)
    if isinstance(value, list):
        for i, item in enumerate(value):
            if not item.strip():
                raise MiniRagError("%s[%d] must not be empty, got %r" % (where, i, item))
    if (section, key) == ("embed", "sha256") and value and not _SHA256.fullmatch(value):
        raise MiniRagError("%s must be 64 hexadecimal digits (or \"\" to skip the check), got %r" % (where, value))
    if (section, key) == ("guards", "as_of") and value.strip() and not _is_date(value.strip()):
        raise MiniRagError("%s must be a date YYYY-MM-DD (or \"\": the newest document date), got %r"
                           % (where, value))
    if (section, key) == ("embed", "max_seq_length") and value == 1:
        raise MiniRagError("%s must be 0 (the model's) or from 2 to 512, got 1" % where)
    if (section, key) == ("answer", "wordnet") and value not in ("", "auto") and not any(
            os.path.isfile(os.path.join(value, "index." + pos)) for pos in ("noun", "verb", "adj", "adv")):
        raise MiniRagError("%s must be \"\", \"auto\" or a folder of WordNet's database (index.noun, "
                           "data.noun, ...), got %r" % (where, value))
    return value


def _is_date(text: str) -> bool:
    if not _DATE.fullmatch(text):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def check_range(where: str, section: str, key: str, value: Any) -> Any:
    """A number setting must be finite and inside RANGES (else within +-NUMBER_BOUND)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    lo, hi = RANGES.get((section, key), (-NUMBER_BOUND, NUMBER_BOUND))
    if not (math.isfinite(value) and lo <= value <= hi):
        raise MiniRagError("%s must be a finite number from %s to %s, got %r" % (where, lo, hi, value))
    return value


def _suggest(name: str, known) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return "; did you mean %r?" % close[0] if close else ""


def read_toml(path: str) -> Dict[str, Any]:
    """Parse a TOML file into a dict (tomllib, or the scorer's subset reader before 3.11)."""
    data = read_limited(path, "config")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MiniRagError("%s: config is not UTF-8 text" % path) from None
    try:
        import tomllib  # Python 3.11+
    except ImportError:
        se = _scorer()
        try:
            return se.parse_toml(text, path)
        except se.ScoreError as exc:
            raise MiniRagError(str(exc)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MiniRagError("%s: invalid TOML: %s" % (path, exc)) from None
    except (ValueError, RecursionError) as exc:   # Python's int digit limit, arrays nested too deep
        raise MiniRagError("%s: invalid TOML: %s" % (path, str(exc)[:120] or type(exc).__name__)) from None


def _scorer():
    """The scorer's package (``referee``), for its TOML subset reader."""
    return scorer()


def _check_value(where: str, default: Any, value: Any) -> Any:
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, list):
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise MiniRagError("%s must be %s, got %r" % (where, _type_name(default), value))
    return value


def _type_name(default: Any) -> str:
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, float):
        return "a number"
    if isinstance(default, int):
        return "an integer"
    if isinstance(default, list):
        return "a list of strings"
    return "a string"


def merge(base: Dict[str, Any], override: Dict[str, Any], origin: str) -> Dict[str, Any]:
    """Validate ``override`` against DEFAULTS and lay it over ``base`` (a full config)."""
    out = copy.deepcopy(base)
    for section, table in override.items():
        if section not in DEFAULTS:
            raise MiniRagError("%s: unknown section [%s]%s" % (origin, section, _suggest(section, DEFAULTS)))
        if not isinstance(table, dict):
            raise MiniRagError("%s: [%s] must be a table, got %r" % (origin, section, table))
        if section == "calibration":
            from .calibration import check_record
            out["calibration"] = check_record(origin, table)
            continue
        if section == "expansion":
            for name, rule in table.items():
                where = "%s: [expansion.%s]" % (origin, name)
                if not isinstance(rule, dict):
                    raise MiniRagError("%s must be a table with match and add, got %r" % (where, rule))
                for key in rule:
                    if key not in _RULE_KEYS:
                        raise MiniRagError("%s: unknown key %r%s" % (where, key, _suggest(key, _RULE_KEYS)))
                if "match" not in rule or "add" not in rule:
                    raise MiniRagError("%s needs both match and add" % where)
                out["expansion"][name] = {k: _check_value("%s %s" % (where, k), _RULE_KEYS[k], rule[k])
                                          for k in ("match", "add")}
                if not out["expansion"][name]["match"].strip():
                    raise MiniRagError("%s match must not be empty" % where)
                check_setting("%s add" % where, "expansion", "add", out["expansion"][name]["add"])
            continue
        for key, value in table.items():
            if key not in DEFAULTS[section]:
                raise MiniRagError("%s: unknown key %r in [%s]%s"
                                   % (origin, key, section, _suggest(key, DEFAULTS[section])))
            where = "%s: [%s] %s" % (origin, section, key)
            value = check_range(where, section, key, _check_value(where, DEFAULTS[section][key], value))
            out[section][key] = check_setting(where, section, key, value)
    return out


def load_config(path: Optional[str] = None) -> Dict[str, Any]:
    """The defaults, overridden by ``path`` when given.  Returns a fresh nested dict."""
    config = copy.deepcopy(DEFAULTS)
    if path:
        config = merge(config, read_toml(path), path)
    return config


def resolve_as_of(config: Dict[str, Any], index: Any, quiet: bool = False) -> str:
    """Fill an empty ``[guards] as_of`` with the newest ``effective`` date among the
    index's chunks (``NO_DATE_AS_OF`` when none has one), said on stderr; returns the date
    used."""
    guards = config["guards"]
    if guards.get("as_of"):
        return guards["as_of"]
    dates = sorted(c.effective for c in getattr(index, "chunks", ()) if getattr(c, "effective", ""))
    if dates:
        guards["as_of"] = dates[-1]
        note = "as_of %s: the newest document date in the corpus ([guards] as_of to choose another)" % guards["as_of"]
    else:
        guards["as_of"] = NO_DATE_AS_OF
        note = "no document of the corpus has an effective date: freshness is not measured"
    if not quiet:
        print("mini_rag: %s" % escape_controls(note), file=sys.stderr)
    return guards["as_of"]
