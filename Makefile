# Two commands do everything on a fresh clone (no install step):
#   make eval   build the index if stale, run both gold sets, score them against gates.toml
#   make test   the unit tests (stdlib unittest)
PYTHON ?= python3
CANDIDATE ?= configs/candidate_min_similarity.toml

.PHONY: eval test check-gold gold-perturb index bench bench-scorer bench-retrieval bench-squad bench-embed compare clean

eval:
	@$(PYTHON) -m mini_rag eval

test:
	@$(PYTHON) tests/run.py

check-gold:
	@$(PYTHON) -m mini_rag check-gold gold/gold.jsonl gold/gold_perturb.jsonl --source gold/gold.jsonl

gold-perturb:
	@$(PYTHON) -m mini_rag perturb gold/gold.jsonl --out gold/gold_perturb.jsonl \
		--paraphrases gold/paraphrases.policies.jsonl gold/paraphrases.regulatory.jsonl

index:
	@$(PYTHON) -m mini_rag index

compare:
	@$(PYTHON) -m mini_rag compare --candidate $(CANDIDATE)

bench: bench-scorer bench-retrieval bench-squad

bench-scorer:
	@$(PYTHON) bench/bench_scorer.py

bench-retrieval:
	@$(PYTHON) bench/bench_retrieval.py

bench-squad:
	@$(PYTHON) bench/bench_squad.py

# Dense / hybrid retrieval with all-MiniLM-L6-v2 (needs numpy and runs/wheels/*.whl, else skips);
# slow: the dense indexes are cached in runs/embed/.  Rewrites the figures in docs/embeddings.md.
bench-embed:
	@$(PYTHON) bench/bench_embed.py --verify --docs docs/embeddings.md

clean:
	rm -rf runs/*.json runs/*.jsonl runs/*.md runs/*.gz runs/bench
