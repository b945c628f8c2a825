# neve — two commands on a fresh machine:  make demo   and   make test
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed
# Iceberg-Java 1.10.2 as a test engine (tests/javaengine): PySpark 3.5 in its own venv.
JAVA_VENV  ?= .venv-java
JAVA_STAMP := $(JAVA_VENV)/.installed
JAVA_JARS  := /usr/share/java/jarjar.jar /usr/share/java/sqlite-jdbc.jar /usr/share/java/postgresql.jar \
              /usr/share/java/httpclient5.jar /usr/share/java/httpcore5.jar
JAVA_SRC   := $(wildcard tests/javaengine/java/org/apache/hc/*/http/*/*.java tests/javaengine/java/org/apache/hc/*/http/*/*/*.java)
# pypaimon as a reference for the merge engines (tests/paimonengine): it pins pyarrow<20.
PAIMON_VENV  ?= .venv-paimon
PAIMON_STAMP := $(PAIMON_VENV)/.installed
# DuckDB 1.5 with its iceberg extension as a reference reader (tests/duckdbengine): the
# extensions on PyPI need DuckDB 1.5.x, older than neve's own.
DUCKDB_VENV  ?= .venv-duckdb
DUCKDB_STAMP := $(DUCKDB_VENV)/.installed
# moto's S3 server as the test suite's object store (tests/s3server): its own venv, so
# that its pins (boto3, werkzeug, ...) never meet neve's.
MOTO_VENV  ?= .venv-moto
MOTO_STAMP := $(MOTO_VENV)/.installed
# pylance (Lance's Python package) as the reference of random access (tests/lanceengine,
# benchmarks/bench_take.py): its own venv, like the other reference engines.
LANCE_VENV  ?= .venv-lance
LANCE_STAMP := $(LANCE_VENV)/.installed

# Where the environment sets PYTHONDONTWRITEBYTECODE (this project's machines do),
# Python compiles every neve module again in each new process: about a second per
# process, and the tests, the demo and the benchmarks start hundreds of them.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test test-long lint typecheck bench bench-full setup java java-engine paimon-engine duckdb-engine s3-server lance-engine clean

setup: $(STAMP) java java-engine paimon-engine duckdb-engine s3-server lance-engine

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

# The Iceberg-Java test engine: Debian's jarjar, JDBC drivers (SQLite, PostgreSQL) and
# HttpClient 5, PySpark 3.5 with the Iceberg 1.10.2 Spark runtime
# (snowpark-connect-deps-iceberg 1.0.3) in $(JAVA_VENV), and the relocated Jackson and
# HttpClient classes that runtime jar lacks (two classes of ours compiled with javac, so
# the JDK is needed). Built once (a stamp file); nothing is downloaded when tests run.
java-engine: $(JAVA_STAMP)

$(JAVA_STAMP): tests/javaengine/build.py $(JAVA_SRC) | java
	@missing=; for jar in $(JAVA_JARS); do test -f $$jar || missing=1; done; \
	command -v javac >/dev/null 2>&1 || missing=1; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian's jarjar, JDBC drivers, HttpClient 5 and the JDK for the Iceberg-Java test engine"; \
	  apt-get update -q && apt-get install -y -q \
	    libjarjar-java libxerial-sqlite-jdbc-java libpostgresql-jdbc-java \
	    libhttpclient5-java libhttpcore5-java openjdk-17-jdk-headless; fi
	@test -x $(JAVA_VENV)/bin/python || python3 -m venv $(JAVA_VENV) || { \
	  echo "python3 -m venv failed; installing python3-venv"; \
	  apt-get update -q && apt-get install -y -q python3-venv && python3 -m venv $(JAVA_VENV); }
	$(JAVA_VENV)/bin/pip install -q --upgrade pip
	$(JAVA_VENV)/bin/pip install -q 'pyspark>=3.5,<3.6' 'snowpark-connect-deps-iceberg==1.0.3'
	$(JAVA_VENV)/bin/python tests/javaengine/build.py
	@touch $(JAVA_STAMP)

paimon-engine: $(PAIMON_STAMP)

$(PAIMON_STAMP): tests/paimonengine/__init__.py
	@test -x $(PAIMON_VENV)/bin/python || python3 -m venv $(PAIMON_VENV) || { \
	  echo "python3 -m venv failed; installing python3-venv"; \
	  apt-get update -q && apt-get install -y -q python3-venv && python3 -m venv $(PAIMON_VENV); }
	$(PAIMON_VENV)/bin/pip install -q --upgrade pip
	$(PAIMON_VENV)/bin/pip install -q 'pypaimon==2.1.0'
	@touch $(PAIMON_STAMP)

duckdb-engine: $(DUCKDB_STAMP)

$(DUCKDB_STAMP): tests/duckdbengine/__init__.py
	@test -x $(DUCKDB_VENV)/bin/python || python3 -m venv $(DUCKDB_VENV) || { \
	  echo "python3 -m venv failed; installing python3-venv"; \
	  apt-get update -q && apt-get install -y -q python3-venv && python3 -m venv $(DUCKDB_VENV); }
	$(DUCKDB_VENV)/bin/pip install -q --upgrade pip
	$(DUCKDB_VENV)/bin/pip install -q 'duckdb==1.5.5' 'duckdb-extension-iceberg==1.5.5' \
	  'duckdb-extension-avro==1.5.5' 'duckdb-extension-httpfs==1.5.5' pytz
	@touch $(DUCKDB_STAMP)

s3-server: $(MOTO_STAMP)

$(MOTO_STAMP): tests/s3server/__init__.py
	@test -x $(MOTO_VENV)/bin/python || python3 -m venv $(MOTO_VENV) || { \
	  echo "python3 -m venv failed; installing python3-venv"; \
	  apt-get update -q && apt-get install -y -q python3-venv && python3 -m venv $(MOTO_VENV); }
	$(MOTO_VENV)/bin/pip install -q --upgrade pip
	$(MOTO_VENV)/bin/pip install -q 'moto[server]>=5.2.5,<5.3'
	@touch $(MOTO_STAMP)

lance-engine: $(LANCE_STAMP)

$(LANCE_STAMP): tests/lanceengine/__init__.py
	@test -x $(LANCE_VENV)/bin/python || python3 -m venv $(LANCE_VENV) || { \
	  echo "python3 -m venv failed; installing python3-venv"; \
	  apt-get update -q && apt-get install -y -q python3-venv && python3 -m venv $(LANCE_VENV); }
	$(LANCE_VENV)/bin/pip install -q --upgrade pip
	$(LANCE_VENV)/bin/pip install -q 'pylance==14.0.2'
	@touch $(LANCE_STAMP)

# The demo registers its catalog as 'demo' in ~/.config/neve/config.yaml, so that
# `.venv/bin/neve tables tpch` finds it afterwards (docs/CLI.md).
demo: setup
	$(VENV)/bin/neve demo

# PYTEST_ARGS: more pytest options, e.g. make test PYTEST_ARGS=--durations=30
test: setup lint typecheck
	$(PY) -m pytest -q -n 2 -m "not long" $(PYTEST_ARGS)

# The property-based tests (differential scans, model-based table tests, concurrency)
# with thousands of examples each, and the tests marked long (the benchmark scripts
# that start Spark or Iceberg-Java sessions, run at small scale); not run by CI.
test-long: setup
	NEVE_LONG=1 $(PY) -m pytest -q -n 2 -m "property or long" $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# The benchmarks (benchmarks/README.md): each runs neve and its reference alternately,
# RUNS times each, and prints medians, the median ratio and its spread, and the load.
# `make bench` runs every script at small scale (--quick) for a quick read;
# `make bench-full` (or `make bench SCALE=full`) at full scale, which takes hours.
SCALE ?= quick
RUNS  ?= 5
BENCHMARKS := bench_commits bench_scan bench_spark bench_merge bench_maintenance \
  bench_changelog bench_scale bench_take bench_object_store bench_rest bench_stream_upsert
bench: setup
	@for b in $(BENCHMARKS); do \
	  echo "== benchmarks/$$b.py $(if $(filter full,$(SCALE)),,--quick) --runs $(RUNS)"; \
	  $(PY) benchmarks/$$b.py $(if $(filter full,$(SCALE)),,--quick) --runs $(RUNS) || exit 1; \
	done

bench-full:
	$(MAKE) bench SCALE=full

clean:
	rm -rf $(VENV) $(JAVA_VENV) $(PAIMON_VENV) $(DUCKDB_VENV) $(MOTO_VENV) $(LANCE_VENV) .pytest_cache .mypy_cache .ruff_cache .demo
