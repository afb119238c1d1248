"""The configuration of one command run: config file, ``--corpus``, ``--index``, and the
corpus-neutral defaults a newcomer's own documents get (issue 19).

=====================================  ====================================================
function                               what it does
=====================================  ====================================================
``resolve(config, corpus, index)``     the config dict for a command; says on stderr which
                                       default file it read, and when the corpus-neutral
                                       defaults apply
=====================================  ====================================================

Below the commands, so that the stages and ``make eval`` reach them without importing
``commands/``: ``config.resolve_as_of(config, index)`` (an empty ``[guards] as_of`` becomes
the newest document date of the index, said on stderr; ``config.NO_DATE_AS_OF`` when none
has one) and ``pipeline.open_pipeline(config)`` (the index opened, rebuilt when stale,
``as_of`` resolved, the Pipeline on top).

Rules, in this order:

1. ``--config FILE`` is read when given.  Without it, ``configs/default.toml`` is read when
   it exists and the corpus is the committed one (``gold/corpus``), and stderr says so.
2. ``--corpus DIR`` other than the committed corpus, without ``--config``: the built-in
   defaults with the domain-dependent settings of :data:`NEUTRAL`: ``as_of`` empty (the
   newest document date of the corpus), no freshness windows (0 = off) and no risk
   keywords, said on stderr.  ``configs/default.toml`` keeps the committed corpus's values
   (as_of 2026-11-01, 365/730 days, its risk keywords), so ``make eval`` is unchanged.  A
   ``--config`` file is a deliberate configuration: it is laid over the built-in defaults
   (the committed corpus's values) as before, and may set ``as_of = ""`` itself.
3. ``--index FILE`` sets ``[index] path``; a corpus of one's own without ``--index`` gets
   ``runs/index-<12 hex of sha256(absolute corpus path)>.json.gz``, so it never rebuilds
   over the committed corpus's index.

>>> sorted(NEUTRAL)
['guards', 'risk']
"""
from __future__ import annotations

import hashlib
import os
import sys
from typing import Any, Dict, Optional

from ..config import DEFAULT_CONFIG_PATH, DEFAULTS, merge, read_toml
from ..fileio import escape_controls

__all__ = ["NEUTRAL", "resolve", "own_index_path", "same_path", "corpus_digest"]

#: Settings that belong to a corpus's domain; off (or derived) for a corpus of one's own.
NEUTRAL: Dict[str, Dict[str, Any]] = {
    "guards": {"as_of": "", "freshness_days_high_risk": 0, "freshness_days": 0},
    "risk": {"high": [], "medium": []},
}


def _note(text: str, quiet: bool = False) -> None:
    if not quiet:
        print("mini_rag: %s" % escape_controls(text), file=sys.stderr)


def same_path(a: str, b: str) -> bool:
    """Whether two paths name the same file (absolute, case-normalized)."""
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def corpus_digest(corpus: str) -> str:
    """sha256 (hex) of the corpus's absolute path: what tells two corpora's files apart."""
    return hashlib.sha256(os.path.abspath(corpus).encode("utf-8", "surrogateescape")).hexdigest()


def own_index_path(corpus: str) -> str:
    """The default index file of a corpus other than the committed one."""
    return os.path.join("runs", "index-%s.json.gz" % corpus_digest(corpus)[:12])


def resolve(config_path: Optional[str], corpus: Optional[str] = None, index: Optional[str] = None,
            quiet: bool = False) -> Dict[str, Any]:
    """The full config for one command (see the module docstring for the rules)."""
    committed = DEFAULTS["corpus"]["path"]
    implicit = config_path is None and (corpus is None or same_path(corpus, committed)) \
        and os.path.exists(DEFAULT_CONFIG_PATH)
    if implicit:
        config_path = DEFAULT_CONFIG_PATH
        _note("using the config %s (--config FILE to choose another)" % config_path, quiet)
    raw = read_toml(config_path) if config_path else {}
    file_corpus = raw.get("corpus", {}).get("path") if isinstance(raw.get("corpus"), dict) else None
    path = corpus or (file_corpus if isinstance(file_corpus, str) else None) or committed
    own = not same_path(path, committed)
    base = merge(DEFAULTS, NEUTRAL, "corpus-neutral defaults") if own and not config_path else DEFAULTS
    config = merge(base, raw, config_path) if config_path else merge(base, {}, "defaults")
    config["corpus"]["path"] = path
    if index:
        config["index"]["path"] = index
    elif own and not (isinstance(raw.get("index"), dict) and "path" in raw["index"]):
        config["index"]["path"] = own_index_path(path)
    if own and config_path is None:
        _note("corpus %s: corpus-neutral defaults (as_of = its newest document date, no freshness "
              "windows, no risk keywords; --config FILE sets them); index %s"
              % (path, config["index"]["path"]), quiet)
    return config
