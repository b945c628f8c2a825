# neve — two commands on a fresh machine:  make demo   and   make test
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

.PHONY: demo test test-long lint typecheck bench setup java clean

setup: $(STAMP) java

$(STAMP): pyproject.toml
	@command -v python3 >/dev/null || { echo "python3 is required"; exit 1; }
	@test -x $(PY) || python3 -m venv $(VENV) || { \
	  echo "python3 -m venv failed; installing python3-venv"; \
	  apt-get update -q && apt-get install -y -q python3-venv && python3 -m venv $(VENV); }
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[test]'
	@touch $(STAMP)

# Spark needs Java 17: install it with apt-get when `java` is missing.
java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "java not found: installing openjdk-17-jre-headless"; \
	  apt-get update -q && apt-get install -y -q openjdk-17-jre-headless; }

demo: setup
	$(PY) -m neve.demo

test: setup lint typecheck
	$(PY) -m pytest -q -n 2

# The property-based tests (differential scans, model-based table tests, concurrency)
# with thousands of examples each; not run by CI.
test-long: setup
	NEVE_LONG=1 $(PY) -m pytest -q -n 2 -m property

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy

bench: setup
	$(PY) benchmarks/bench_commits.py
	$(PY) benchmarks/bench_scan.py
	$(PY) benchmarks/bench_spark.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .demo
