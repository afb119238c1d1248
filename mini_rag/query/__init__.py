"""Stage 3, the question: its framing, and bridges from its words to the corpus's words.

One module per step, in pipeline order:

============  ============================================================
module        what it does
============  ============================================================
``framing``   the question without greetings, thanks and asides
``derive``    verb/noun stem variants (retain ~ retention)
``abbrev``    abbreviations the corpus defines (CCB ~ Change Control Board)
``synonyms``  synonyms (keep ~ retain), kinds (card > payment method), numbers, units
``glossary``  defined terms (chargeback ~ card dispute), scope statements
============  ============================================================

Import a module by its full path (``from mini_rag.query.framing import ...``);
this package re-exports nothing.
"""
