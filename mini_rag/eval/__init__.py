"""Stage 7, evaluation: the trace row the scorer reads, ``make eval``, gold-set tooling.

One module per step, in pipeline order:

=============  ============================================================
module         what it does
=============  ============================================================
``trace``      the trace row that ``score_eval.py`` reads (seed 002)
``evaluate``   ``make eval`` / ``make compare``: gold sets -> traces -> scores -> report
``goldcheck``  check gold files against the gold contract and the corpus they cite
``perturb``    derive a perturbation gold set from any gold file
=============  ============================================================

Import a module by its full path (``from mini_rag.eval.trace import ...``);
this package re-exports nothing.
"""
