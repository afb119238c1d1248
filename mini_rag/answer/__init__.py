"""Stage 5, answering (seed 001): hits -> facts (phase A) -> kept facts (B) -> answer (C).

One module per step, in pipeline order:

=================  ============================================================
module             what it does
=================  ============================================================
``facts``          phase A: retrieval hits -> facts
``relevance``      phase B: noise, relevance, de-duplication; the question's terms and bridges
``synthesize``     phase C: extractive answer sentences, confidence
``values``         the value patterns (number, amount, duration, date, ...) phase C and
                   ``asked`` read
``asked``          the kind of value a question asks for, and whether a sentence states
                   one near the question's focus
``answerability``  fitted ranker + gate over candidate sentences
                   (``mini_rag/data/answerability.json``)
``generator``      the pluggable phase C generator (extractive, external command)
``validate``       the QA contract's two validators for external JSON
=================  ============================================================

Import a module by its full path (``from mini_rag.answer.facts import ...``);
this package re-exports nothing.
"""
