"""Stage 6, guards and decision: checks on an answer, then ANSWER / ABSTAIN / CLARIFY / BLOCK.

One module per step, in pipeline order:

=============  ============================================================
module         what it does
=============  ============================================================
``conflicts``  polarity and numeric conflicts between documents
``guards``     citations, conflicts, freshness, risk, ambiguity
``decision``   ANSWER / ABSTAIN / CLARIFY / BLOCK by seed 000's precedence
=============  ============================================================

Import a module by its full path (``from mini_rag.guard.conflicts import ...``);
this package re-exports nothing.
"""
