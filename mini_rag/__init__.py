"""mini_rag: a pure-Python retrieval-augmented QA system that writes scoreable traces.

Stages, one module each, passing plain records (``records.py``) that serialize to JSON:

====================  =====================================================
module                stage
====================  =====================================================
``corpus``            text files / BEIR JSONL -> documents -> chunks
``analysis``          tokenizer, stopwords, Snowball English stemmer
``index``             inverted index with per-posting weights, JSON manifest
``store``             index format 2: binary sections behind the manifest, read on demand
``embed/``            optional dense embeddings (numpy): MiniLM encoder, hybrid ranking
``framing``           the question without greetings, thanks and asides
``question``          the question analyzed once (``QuestionAnalysis``): terms,
                      corrections, idf, answer type, qualifiers; every later stage reads it
``retrieve``          BM25 / TF-IDF top-k, thresholds, fallback, expansion, MMR
``facts``             phase A: retrieval hits -> facts
``relevance``         phase B: noise, relevance, de-duplication
``derive``            verb/noun stem variants (retain ~ retention), answering bridges
``abbrev``            abbreviations the corpus defines (CCB ~ Change Control Board)
``synonyms``          synonyms (keep ~ retain), kinds (card > payment method)
``glossary``          defined terms (chargeback ~ card dispute), scope statements
``synthesize``        phase C: extractive answer sentences, confidence
``answerability``     fitted ranker + gate over candidate sentences (``[answer]
                      answerability``, off by default; ``data/answerability.json``)
``validate``          the QA contract's two validators for external JSON
``generator``         the pluggable phase C generator (extractive, external command)
``conflicts``         polarity and numeric conflicts between documents
``guards``            citations, conflicts, freshness, risk, ambiguity
``decision``          ANSWER / ABSTAIN / CLARIFY / BLOCK by precedence
``trace``             the trace row that ``score_eval.py`` reads
``pipeline``          question -> trace row, wiring the stages
``serve``             seed 000's HTTP API over the pipeline
====================  =====================================================

Around them: ``cli`` / ``cmd_*`` (the command line), ``runconfig`` (corpus, index and
``as_of`` for a user's own documents), ``evaluate`` (``make eval``), ``goldcheck`` and
``perturb`` (gold sets), ``fileio`` and ``progress`` (I/O through the scorer's readers and
atomic writers, progress lines), ``config`` and ``errors``.

Run ``python -m mini_rag --help`` for the command line.
"""

__version__ = "0.1.0"
