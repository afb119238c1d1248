"""Stage 7, evaluation: ``make eval``, gold-set tooling (the trace row: ``mini_rag/trace.py``).

One module per step, in pipeline order:

=============  ============================================================
module         what it does
=============  ============================================================
``evaluate``   ``make eval`` / ``make compare``: gold sets -> traces -> scores -> report
``goldcheck``  check gold files against the gold contract and the corpus they cite
``perturb``    derive a perturbation gold set from any gold file
=============  ============================================================

Import a module by its full path (``from mini_rag.eval.evaluate import ...``);
this package re-exports nothing.
"""
