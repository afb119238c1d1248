# Two commands do everything on a fresh clone (no install step):
#   make eval   build the index if stale, run both gold sets, score them against gates.toml
#   make test   the unit tests (stdlib unittest)
PYTHON ?= python3
CANDIDATE ?= configs/candidate_min_similarity.toml

.PHONY: eval test check-gold gold-perturb index bench bench-ratios bench-trec mutate bench-scorer bench-retrieval bench-squad bench-answer bench-serve bench-scale bench-embed example-dask serve fit compare clean

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

bench: bench-retrieval bench-squad bench-serve bench-ratios

# issue 32's ratios in one table from one run (CPU time, load average): the scorer vs seed 002's
# reference at 300k and 1M rows with and without gates.toml, TREC mode vs pytrec_eval (venv)
bench-ratios:
	@$(PYTHON) bench/bench_ratios.py

bench-scorer:
	@$(PYTHON) bench/bench_scorer.py

bench-trec:
	@$(PYTHON) bench/bench_trec.py

# Mutation check of score_eval.py's metric code (slow: the score_eval tests once per mutant)
mutate:
	@$(PYTHON) bench/mutate.py

bench-retrieval:
	@$(PYTHON) bench/bench_retrieval.py

bench-squad:
	@$(PYTHON) bench/bench_squad.py

# mini_rag, mini_rag + the answerability model and the naive baseline on the gold sets and
# the external held-out halves, with the ablation table; rewrites docs/answering.md's figures.
bench-answer:
	@$(PYTHON) bench/bench_answer.py --sets gold,squad,cnli --halves held --ablate --docs

# Refit mini_rag/data/answerability.json on the external fit halves (byte-identical output),
# then answerability_embed.json with the MiniLM features (skipped without numpy or the model;
# slow: the cosines are cached in runs/fit/).
fit:
	@$(PYTHON) bench/fit_answerability.py
	@$(PYTHON) bench/fit_answerability.py --embed

bench-serve:
	@$(PYTHON) bench/bench_serve.py

serve:
	@$(PYTHON) -m mini_rag serve

# 100k and 1M synthetic chunks vs bm25s, collections' QPS, sharded scoring; writes docs/performance.md
bench-scale:
	@$(PYTHON) bench/bench_scale.py

# score_eval.py --partial shards as Dask tasks on a 2-process LocalCluster, merged, checked
# byte-identical to one run.  Dask goes into a throwaway virtualenv (runs/venv-dask, pip from
# PyPI), never into the project.
DASK_VENV = runs/venv-dask
DASK_PINS = dask==2026.8.0 distributed==2026.8.0
example-dask:
	@test -x $(DASK_VENV)/bin/python || $(PYTHON) -m venv $(DASK_VENV)
	@$(DASK_VENV)/bin/python -c "import dask.distributed" 2>/dev/null || \
		$(DASK_VENV)/bin/python -m pip install --quiet --disable-pip-version-check $(DASK_PINS)
	@$(DASK_VENV)/bin/python examples/dask_score.py

# Dense / hybrid retrieval with all-MiniLM-L6-v2 (needs numpy and runs/wheels/*.whl, else skips);
# slow: the dense indexes are cached in runs/embed/.  Rewrites the figures in docs/embeddings.md.
bench-embed:
	@$(PYTHON) bench/bench_embed.py --verify --docs docs/embeddings.md

clean:
	rm -rf runs/*.json runs/*.jsonl runs/*.md runs/*.gz runs/bench
	find . -path ./.git -prune -o -name '.*.ragtmp' -type f -exec rm -f {} +
