"""score_eval.py: score a RAG system's traces against a gold set and enforce committed gates.

One standard-library file; copy it into any repository.  It reads a gold JSONL and a trace
JSONL (seed 002's contracts), computes every metric in the registry below, checks them
against the gates of one dataset section of ``gates.toml`` (or a ``--gates`` string), prints
one JSON object on stdout and exits

    0  every gate passed,
    1  a gate failed,
    2  usage or input error (each bad line reported as ``path:line: what is wrong, got <value>``).

Usage (seed 002's command works unchanged)::

    python score_eval.py --gold G --trace T --k 5 --gates precision=0.80,chr=0.75,under=0.05,over=0.10
    python score_eval.py --gold G --trace T --dataset baseline --gates-file gates.toml \\
        --k 1,5,10 --out R.json --markdown R.md --items I.jsonl [--baseline OLD.json]
    python score_eval.py --qrels QRELS --run RUN --k 5,10 --gates nDCG@10=0.3   # TREC files
    python score_eval.py --qrels QRELS --run RUN --format trec -m map -m ndcg_cut.10 -q   # as trec_eval
    python score_eval.py --gold G --trace T --gates "precision=0.8,warn:pass_rate=0.97,monitor:nDCG@10" \
        --weights '{"faithfulness": 0.4}' --html R.html --junit R.xml --csv I.csv --metrics-csv M.csv
    python score_eval.py calibrate --human H.jsonl --auto A.jsonl [--field NAME] [--bins 0.5]
    python score_eval.py merge-html OUT.html A.html B.html

Gates have tiers (``block`` sets the exit status, ``warn`` and ``monitor`` only report); a
weighted scorecard over seed 004's stages (``STAGES``) gives a run and each item an overall score.
    python score_eval.py --trace T --chunks C --gates answer_relevance=0.5   # no gold: reference-free
    python score_eval.py --gold G --trace SHARD1 --k 1,5 --partial P1.json      # one shard ...
    python score_eval.py merge P1.json P2.json --trace T --gates-file gates.toml  # ... the report

Pipeline, top to bottom: constants and the error class -> metric registry -> TOML subset
reader and gates config -> line readers (records with line numbers) -> per-item judging
(no I/O) -> aggregation (rates, Wilson intervals, categories, failure modes) -> gates and
regressions against a baseline report -> output (JSON, Markdown, items JSONL) -> main().

Python API (stable): ``main(argv=None) -> int`` and ``parse_toml(text, path) -> dict``.

>>> parse_toml('[baseline]\\nprecision = { min = 0.8 }\\n')
{'baseline': {'precision': {'min': 0.8}}}
"""
from __future__ import annotations

from .base import DESCRIPTION, EXIT_GATE, EXIT_INPUT, EXIT_INTERNAL, EXIT_PASS, REFUSAL, ScoreError, __version__
from .cli import internal_error, main
from .inputs import JsonLimit, iter_lines, json_row, open_input
from .outputs import (check_outputs, has_surrogate, pid_alive, remove_output, terminal_safe, write_manifest,
                      write_output, write_output_with)
from .tomlsub import parse_toml

__all__ = ["DESCRIPTION", "EXIT_GATE", "EXIT_INPUT", "EXIT_INTERNAL", "EXIT_PASS", "REFUSAL", "ScoreError",
           "__version__", "internal_error", "main", "JsonLimit", "iter_lines", "json_row", "open_input",
           "check_outputs", "has_surrogate", "pid_alive", "remove_output", "terminal_safe", "write_manifest",
           "write_output", "write_output_with", "parse_toml"]
