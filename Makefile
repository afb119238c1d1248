# Two commands do everything on a fresh clone (no install step):
#   make eval   build the index if stale, run both gold sets, score them against gates.toml
#   make test   the fast unit tests (stdlib unittest; make test-all: every test, as CI runs them)
PYTHON ?= python3
CANDIDATE ?= configs/candidate_min_similarity.toml

.PHONY: eval validate test test-all single-file metric-tables check-gold gold-perturb index bench bench-scorer bench-retrieval bench-squad bench-answer bench-serve bench-scale bench-embed bench-answer-correct example-dask serve fit compare clean bench-refusal eval-seed bench-doctree bench-grounding fit-grounding fit-refusal bench-scorer-llm bench-badinputs bench-ratios bench-trec mutate bench-answer-speed check-fits bench-calibrate bench-calibrate-windows bench-independence

eval:
	@$(PYTHON) -m mini_rag eval

# The seed's worked example (examples/seed/: its committed trace), scored against [seed] of gates.toml;
# written to runs/seed/, apart from make eval's runs/report.*.
eval-seed:
	@$(PYTHON) -m mini_rag eval --dataset seed

test:
	@$(PYTHON) tests/run.py

# Every verdict (refusal, grounding, answer correctness) against people's labels on every shared
# labelled set of ../shared/data, fit and held-out halves, next to the baselines and the published
# figures, in one table from one run; rewrites docs/validation.md's table (skips without the data).
validate:
	@$(PYTHON) bench/validate.py --docs docs/validation.md

# Every test: the fast suite and the slow tier of tests/slow.txt (figures recomputed from
# ../shared/data, peers, kills, regex timing, whole-pipeline runs).  .ci/run runs this.
test-all:
	@$(PYTHON) tests/run.py --all

# score_eval.py, the one file users copy, is built from the scorer's package referee/ (edit the
# modules, then run this and commit both; tests/test_single_file.py fails on a stale file).
single-file:
	@$(PYTHON) tools/build_single_file.py

# The metric table of README.md and docs/design.md, from the registry (referee/registry.py).
metric-tables:
	@$(PYTHON) tools/metric_tables.py

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

# The refusal reader against the hand labels (fit and dev halves of real LLM responses from
# ../shared/data) and the written multilingual / safety set, next to baselines; rows per second.
bench-refusal:
	@$(PYTHON) bench/bench_refusal.py --rate

bench-scorer:
	@$(PYTHON) bench/bench_scorer.py

# score_eval.py's rows/s per core on LLM-style rows (prose, inline citations, prose refusals) next
# to seed-contract rows, same run; rewrites its section of docs/performance.md.
bench-scorer-llm:
	@$(PYTHON) bench/bench_scorer_llm.py --docs docs/performance.md
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
bench-answer-correct:
	@$(PYTHON) bench/bench_answer_correct.py --ablate --docs docs/answer_correctness.md

bench-answer:
	@$(PYTHON) bench/bench_answer.py --sets gold,squad,cnli --halves held --ablate --docs

# Issue 43: the operating point calibrated on 50 questions drawn from each FIT half (five seeded draws),
# as `python3 -m mini_rag calibrate` chooses it, then the HELD-OUT half answered at it, next to the default
# and naive; the rules, the lexical model and (with numpy and the MiniLM wheel) the model with embeddings.
# Slow the first time (pipeline rows cached in runs/bench/calibrate/).
bench-calibrate:
	@$(PYTHON) bench/bench_calibrate.py

# Issue 43 item 1: where a threshold can land inside naive's box on each half, and where
# calibration's objectives put it (the model, with and without MiniLM; rows cached as above).
bench-calibrate-windows:
	@$(PYTHON) bench/calibrate_windows.py

# Issue 43 item 2: ContractNLI's held-out questions answered with one index per contract and with one
# index over all the held-out contracts; how many decisions differ, and each arrangement's figures.
bench-independence:
	@$(PYTHON) bench/bench_index_independence.py

# Answering p50/p95 per question (wall and CPU) on gold and the SQuAD held-out half, lexical and
# with embeddings (numpy + MiniLM, when present); BASE=<rev> also runs that commit back to back
# and fails (exit 1) unless every trace is byte-identical (issue 32).
BASE ?=
bench-answer-speed:
	@$(PYTHON) bench/bench_answer_speed.py $(if $(BASE),--base $(BASE),)

# Refit mini_rag/data/answerability.json on the external fit halves (byte-identical output),
# then answerability_embed.json with the MiniLM features (skipped without numpy or the model;
# slow: the cosines are cached in runs/fit/).
fit:
	@$(PYTHON) bench/fit_answerability.py
	@$(PYTHON) bench/fit_answerability.py --embed

# Every fitted file refitted from its data and compared byte for byte, nothing written (a few
# minutes; the embedding halves are skipped without numpy or the MiniLM model).  Run it after a
# change to answering or to the scorer's readers: a fitted file that no longer comes out of its
# own fit is a stale number in the tree.  (The lexical check runs the pipeline afresh and
# caches its results; the embedding check reuses them and the cached cosines.)
check-fits:
	@$(PYTHON) bench/fit_answerability.py --check
	@$(PYTHON) bench/fit_answerability.py --reuse --embed --check
	@$(PYTHON) bench/fit_asked_value.py --check
	@$(PYTHON) bench/fit_grounding.py --check
	@$(PYTHON) bench/fit_refusal.py --check

# 20 written questions (and 12 unanswerable ones on six of them) on each of eight documentation trees
# nobody here wrote, next to the naive baseline (pip's from Debian's /usr/share/doc/python3-pip/html, the
# others from their sdists, fetched once; bench/doctree/README.md).
bench-doctree:
	@$(PYTHON) bench/doctree/bench_doctree.py
# score_eval.py's grounding model (issues 29, 41): refit on the fit halves of FaithBench and RAGTruth
# (../shared/data/faithbench, ../shared/data/ragtruth_gen), rewriting bench/grounding_fit.json; copy its
# "model" into referee/grounding.py's GROUNDING_MODEL and run `make single-file`.
# `python3 bench/fit_grounding.py --check` refits and verifies both byte for byte.
fit-grounding:
	@$(PYTHON) bench/fit_grounding.py

# Refit score_eval.py's REFUSAL_MODEL on the fit halves of the labelled refusal sets (bench/labels/)
# and the written English rows; writes bench/refusal_fit.json and the REFUSAL_MODEL block of score_eval.py
# (byte-identical output; bench/fit_refusal.py --check verifies both).
fit-refusal:
	@$(PYTHON) bench/fit_refusal.py --embed

# Grounding against people's labels: FaithBench held-out and fit halves next to the 8 released
# detectors, the strict rule and flag-all; the meta filter on refchecker; rewrites docs/grounding.md's figures.
bench-grounding:
	@$(PYTHON) bench/bench_grounding.py --docs

bench-serve:
	@$(PYTHON) bench/bench_serve.py

# The generated bad-input suite (issue 33): 400+ cases, 0 data lost, 0 hangs, 0 exit 3;
# a sample of every kind runs in make test (tests/test_fuzz_inputs.py).
bench-badinputs:
	@$(PYTHON) bench/fuzz_inputs.py

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

# Everything make eval, make eval-seed, compare, the README's examples and own-corpus evals wrote:
# every file directly under runs/ (reports, traces, indexes, gate.*) but runs/.gitkeep, runs/bench,
# runs/compare, runs/seed, runs/own and every folder under runs/ an eval wrote (it holds manifest.json,
# report.json or gold_perturb.generated.jsonl: runs/<corpus>-<hash>/).  Downloads and caches stay:
# runs/wheels, runs/venv-*, runs/doctree, runs/embed, runs/fit, runs/.peers.
clean:
	find runs -mindepth 1 -maxdepth 1 -type f ! -name .gitkeep -exec rm -f {} +
	rm -rf runs/bench runs/compare runs/seed runs/own
	@for d in runs/*/; do \
		if [ -f "$${d}manifest.json" ] || [ -f "$${d}report.json" ] || [ -f "$${d}gold_perturb.generated.jsonl" ]; then \
			echo "rm -rf $$d"; rm -rf "$$d"; \
		fi; \
	done
	find . -path ./.git -prune -o -name '.sections.*.tmp' -type f -exec rm -f {} +
	@$(PYTHON) -c "import os, importlib.util as u; own = u.find_spec('referee') and __import__('referee.outputs', fromlist=['x']).own_temp_pid; [os.remove(os.path.join(d, n)) for d, _, fs in os.walk('.') if own and not d.startswith('./.git') for n in fs if own(n)]"

# Refit mini_rag/data/asked_value.json (issue 30: the asked value's window and guarded kinds) on
# the external fit halves and gold/gold.jsonl; --check compares without writing.
.PHONY: fit-asked-value
fit-asked-value:
	@$(PYTHON) bench/fit_asked_value.py
