"""Stage 2, indexing: the inverted index built from the chunks, and its file format.

One module per step, in pipeline order:

============  ============================================================
module        what it does
============  ============================================================
``index``     inverted index with per-posting weights, JSON manifest, ``build_or_load``
``store``     index format 3: binary sections behind the manifest, read on demand
``postings``  compressed postings blocks and chunk record blocks (encode, decode, check)
============  ============================================================

Import a module by its full path (``from mini_rag.indexing.index import ...``);
this package re-exports nothing.
"""
