"""Stage 4, retrieval: ranked search over the index (dense and hybrid: ``mini_rag/embed/``).

One module per step, in pipeline order:

============  ============================================================
module        what it does
============  ============================================================
``retrieve``  BM25 / TF-IDF top-k, thresholds, fallback, expansion, MMR
============  ============================================================

Import a module by its full path (``from mini_rag.search.retrieve import ...``);
this package re-exports nothing.
"""
