"""Constants of the contracts (seed 002's refusal token, exit codes, input limits) and the error class."""
from __future__ import annotations

import re

# --------------------------------------------------------------------------- constants

REFUSAL = "not in context"            # seed 002's refusal token (compared after strip + lower)
DEFAULT_GATES = "precision=0.80,chr=0.75,under=0.05,over=0.10"   # seed 002's suggested gates
DEFAULT_GATES_FILE = "gates.toml"
MAX_ERRORS = 20                       # bad lines listed one by one, the rest only counted
MAX_CITATIONS = 5                     # seed 000: an answer cites at most five chunks
DECISIONS = ("ANSWER", "ABSTAIN", "CLARIFY", "BLOCK")
Z95 = 1.959963984540054               # two-sided 95% normal quantile
NO_CATEGORY = "(none)"
SCHEMA = "score_eval/1"
DESCRIPTION = "score_eval.py: score a RAG system's traces against a gold set and enforce committed gates."
__version__ = "0.1.0"                 # also in every JSON report ("version"); pyproject.toml has the same
# Gate tiers (seed 004's layered gates): only "block" gates set the exit status; "warn" gates
# are listed first in every output (they are the failures a passing run would hide);
# "monitor" gates only report their value.
TIERS = ("block", "warn", "monitor")
_TIER_ORDER = {"warn": 0, "block": 1, "monitor": 2}

# Limits on untrusted input (README "Limits and exit codes"); each breach is a path:line: error, exit 2.
MAX_LINE_BYTES = 16 * 1024 * 1024     # one input line (a JSONL row, a TREC line); --max-line-bytes
MAX_JSON_DEPTH = 64                   # nesting of arrays/objects in one JSON row
MAX_NUMBER_CHARS = 100                # digits of one integer in JSON or TOML (Python's int limit is 4300)
MAX_K = 10000                         # largest rank cutoff for --k and metric names
TMP_SUFFIX = ".ragtmp"                # temp files of an atomic write: .<name>.<pid>.<random>.ragtmp
EXIT_PASS, EXIT_GATE, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
MAX_INPUT_BYTES = 4 << 30              # one input file or stdin, in bytes; --max-input-bytes
MAX_INPUT_LINES = 10_000_000          # one input file, in lines; --max-input-lines
MAX_STDIN_LINES = 1_000_000           # stdin, in lines (an endless generator stops sooner); --max-input-lines
MAX_BAD_LINES = 10_000                # reading stops after this many bad lines in one run
MAX_CATEGORIES = 1_000                # distinct values of the --by field
MAX_SMALL_FILE_BYTES = 1 << 20        # a gates file (TOML), read whole
_LIMITS = {"line_bytes": MAX_LINE_BYTES, "input_bytes": MAX_INPUT_BYTES,
           "input_lines": MAX_INPUT_LINES, "stdin_lines": MAX_STDIN_LINES}   # this run's values (from the options)
_GROUNDING = {"mode": "strict"}            # this run's [scorer] grounding (the failure label follows it)

_TOKEN_RX = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")
# _TOKEN_RX on a lower-cased ASCII text without the regex engine (tokens, unsupported_tokens):
# its words are the runs of a-z (every other byte to a space), its numbers are in the runs of
# digits, "." and "," (a run of digits alone is one number; other runs go to _NUMBER_RX).
_LETTER_BYTES = bytes(c if 97 <= c <= 122 else 32 for c in range(256))
_NUMBER_BYTES = bytes(c if 48 <= c <= 57 or c in b".," else 32 for c in range(256))
_NUMBER_RX = re.compile(r"\d+(?:[.,]\d+)*")


class ScoreError(ValueError):
    """Bad input; ``str(err)`` is the whole message (one or more ``path:line: ...`` lines)."""
