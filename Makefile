# Two entry points: `make demo` (the main job) and `make test` (the fast test set: every test
# not marked `heavy`). `make test-heavy` runs the heavy ones, `make test-all` both (CI runs both).
# Each creates .venv and installs what it needs on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-heavy test-all lint bench bench-quick clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The demo keeps its store and embedding cache inside this checkout, so two checkouts never mix.
demo: export ARCHIVIST_HOME = $(CURDIR)/.demo
demo: $(STAMP)
	$(BIN)/archivist index samples --kb samples
	$(BIN)/archivist search "How are tenants kept apart?" --kb samples -k 3

# Test files are spread over worker processes whole (`loadfile`): a file's session servers
# and its shared setup stay in one process. One worker more than there are cores: a worker
# spends about a third of its time waiting on the servers and subprocesses it started.
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
# The tests' temporary files (stores, databases, uploads) go in a fresh directory under the
# system's temporary folder, removed when the run ends. Not /dev/shm: there every file the
# stores map or preallocate is held in memory, and at the run's peak that memory and the
# servers' own left the machine none. TEST_TMP=dir puts them elsewhere.
TEST_TMP ?= $(or $(TMPDIR),/tmp)
in_test_tmp = dir=$$(mktemp -d -p $(TEST_TMP) archivist-tests.XXXXXX) \
	&& TMPDIR=$$dir $(1); status=$$?; rm -rf "$$dir"; exit $$status

test: $(STAMP)
	$(call in_test_tmp,$(BIN)/pytest -m "not heavy" -n $(PYTEST_WORKERS) --dist loadfile)

test-heavy: $(STAMP)
	$(call in_test_tmp,$(BIN)/pytest -m heavy)

test-all: test test-heavy

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m benchmarks suite

bench-quick: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m benchmarks suite --quick

clean:
	rm -rf $(VENV) .demo .pytest_cache .mypy_cache .ruff_cache
