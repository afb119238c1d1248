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
``query/``       Stage 3, the question: its analysis, and bridges from its words to the corpus's
                 words.  Modules: ``question``, ``framing``, ``derive``, ``abbrev``,
                 ``synonyms``, ``glossary``
``search/``      Stage 4, retrieval: ranked search over the index (dense and hybrid:
                 ``mini_rag/embed/``).  Modules: ``retrieve``
``answer/``      Stage 5, answering (seed 001): hits -> facts (phase A) -> kept facts (B) ->
                 answer (C).  Modules: ``facts``, ``relevance``, ``synthesize``,
                 ``answerability``, ``generator``, ``validate``
``guard/``       Stage 6, guards and decision: checks on an answer, then ANSWER / ABSTAIN /
                 CLARIFY / BLOCK.  Modules: ``conflicts``, ``guards``, ``decision``
``eval/``        Stage 7, evaluation: the trace row the scorer reads, ``make eval``, gold-set
                 tooling.  Modules: ``trace``, ``evaluate``, ``goldcheck``, ``perturb``
``commands/``    Around the stages: the command line (``python -m mini_rag``) and the HTTP API.
                 Modules: ``cli``, ``cmd_retrieval``, ``cmd_answer``, ``cmd_gold``, ``serve``,
                 ``runconfig``, ``progress``
``embed/``       optional dense embeddings (numpy): MiniLM encoder, dense and hybrid ranking
``data/``        the fitted answerability model (``answerability.json``)
``errors``       ``MiniRagError``, the one exception class
``records``      the plain records passed between the stages (JSON both ways)
``config``       one configuration for every setting (``configs/default.toml``)
``fileio``       reading untrusted files within limits; atomic writes (the scorer's)
``pipeline``     question -> trace row, wiring the stages in order
===============  ============================================================

Run ``python -m mini_rag --help`` for the command line.
"""

__version__ = "0.1.0"
