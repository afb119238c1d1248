"""mini_rag: a pure-Python retrieval-augmented QA system that writes scoreable traces.

Stages, one subpackage each in pipeline order (text -> index -> question -> retrieval ->
phases A, B, C -> guards and decision -> trace row), passing plain records
(``records.py``) that serialize to JSON.  Each subpackage's ``__init__.py`` says what
each of its modules does.

===============  ============================================================
folder / module  stage
===============  ============================================================
``text/``        Stage 1, text: corpus files -> documents -> chunks, and any text -> index and
                 query terms.  Modules: ``corpus``, ``analysis``, ``stem``
``indexing/``    Stage 2, indexing: the inverted index built from the chunks, and its file
                 format.  Modules: ``index``, ``store``
``query/``       Stage 3, the question: its framing, and bridges from its words to the corpus's
                 words.  Modules: ``framing``, ``derive``, ``abbrev``, ``synonyms``,
                 ``glossary`` (the one analysis of the question: ``question`` below)
``search/``      Stage 4, retrieval: ranked search over the index (dense and hybrid:
                 ``mini_rag/embed/``).  Modules: ``retrieve``
``answer/``      Stage 5, answering (seed 001): hits -> facts (phase A) -> kept facts (B) ->
                 answer (C).  Modules: ``facts``, ``relevance``, ``synthesize``, ``values``,
                 ``asked``, ``answerability``, ``generator``, ``validate``
``guard/``       Stage 6, guards and decision: checks on an answer, then ANSWER / ABSTAIN /
                 CLARIFY / BLOCK.  Modules: ``conflicts``, ``guards``, ``decision``
``eval/``        Stage 7, evaluation: ``make eval``, gold-set tooling.  Modules: ``evaluate``,
                 ``goldcheck``, ``perturb``
``commands/``    Around the stages: the command line (``python -m mini_rag``) and the HTTP API.
                 Modules: ``cli``, ``cmd_retrieval``, ``cmd_answer``, ``cmd_gold``, ``serve``,
                 ``runconfig``
``embed/``       optional dense embeddings (numpy): MiniLM encoder, dense and hybrid ranking
``data/``        the fitted answerability model (``answerability.json``)
``errors``       ``MiniRagError``, the one exception class
``records``      the plain records passed between the stages (JSON both ways)
``config``       one configuration for every setting (``configs/default.toml``); ``as_of``
                 resolved from the index
``fileio``       reading untrusted files within limits; atomic writes (the scorer's)
``progress``     progress on stderr for long work (index, run, eval, benchmarks)
``question``     the one analysis of the question, read by every later stage (built from
                 the readers of ``answer/`` and ``guard/``, so it sits above them)
``pipeline``     question -> trace row, wiring the stages in order; ``open_pipeline``
``trace``        the trace row that ``score_eval.py`` reads (seed 002)
===============  ============================================================

Imports go one way only, down this order (a module imports from its own stage or an
earlier one), with no import circle, function-level imports included
(``tests/test_stage_order.py``): ``errors``, ``records``, ``fileio``, ``config``,
``progress`` -> ``text/`` -> ``query/`` -> ``indexing/`` -> ``embed/`` (dense vectors over
the index, read by search and answering) -> ``search/`` -> ``answer/`` -> ``guard/`` ->
``question``, ``pipeline``, ``trace`` -> ``eval/`` -> ``commands/``.  ``query/`` and
``indexing/`` import nothing of each other.

Run ``python -m mini_rag --help`` for the command line.
"""

__version__ = "0.1.0"
