"""Stage 5, answering (seed 001): hits -> facts (phase A) -> kept facts (B) -> answer (C).

One module per step, in pipeline order:

=================  ============================================================
module             what it does
=================  ============================================================
``facts``          phase A: retrieval hits -> facts
``relevance``      phase B: noise, relevance, de-duplication; the question's terms and bridges
``synthesize``     phase C: extractive answer sentences, confidence
``answerability``  fitted ranker + gate over candidate sentences
                   (``mini_rag/data/answerability.json``)
``generator``      the pluggable phase C generator (extractive, external command)
``validate``       the QA contract's two validators for external JSON
=================  ============================================================

Import a module by its full path (``from mini_rag.answer.facts import ...``);
this package re-exports nothing.
"""
