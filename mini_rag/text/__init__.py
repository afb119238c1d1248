"""Stage 1, text: corpus files -> documents -> chunks, and any text -> index and query terms.

One module per step, in pipeline order:

============  ============================================================
module        what it does
============  ============================================================
``corpus``    text files / BEIR JSONL -> documents -> chunks, the units answers cite
``analysis``  tokenizer, stopwords, ``Analyzer``: the one place text becomes terms
``stem``      the Snowball English (Porter2) stemmer
============  ============================================================

Import a module by its full path (``from mini_rag.text.corpus import ...``);
this package re-exports nothing.
"""
