# Two commands for a newcomer: `make demo` and `make test`. Each installs what it needs.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: test test-faults test-conformance test-catalogs matrix lint demo docs bench java maven clean test-jars golden-4.4

$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "java not found: installing openjdk-17-jre-headless"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless; }

maven: java
	@command -v mvn >/dev/null 2>&1 || { \
	  echo "mvn not found: installing maven (it fetches the test jars)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven; }

# The suite in two pytest processes at once, as their work waits on different JVMs
# and processes: the tests that talk to delta-spark (tests/delta_spark, the interop
# matrix among them: one delta-spark server) with the example DAGs, the Airflow
# deployment and the S3A runs (spark-submit, Airflow's own processes, a Spark with
# hadoop-aws), and the rest, of about the same length. Each has its own
# AIRFLOW_HOME. The first's output follows the second's.
PYTEST := $(PY) -m pytest -q -p no:cacheprovider --durations=15
# A spark-submit of the tests lives seconds: with C1 alone (no C2 compiler) it spends about 40% less
# CPU, which the suite's two cores feel. The JVMs that serve a module or the session (Connect servers,
# the shared SparkSession) start without it (tests/spark_connect_server.py). Not for `make bench`.
TEST_JVM_OPTS := -XX:TieredStopAtLevel=1
test test-conformance test-faults matrix demo: export SPARK_SUBMIT_OPTS := $(TEST_JVM_OPTS)
FIRST  := tests/delta_spark tests/dags_examples tests/deployment tests/spark/runtime/test_hadoop_s3a.py
test: $(STAMP) java test-jars
	@log=$$(mktemp); \
	$(PYTEST) $(FIRST) >$$log 2>&1 & first=$$!; \
	$(PYTEST) $(addprefix --ignore=,$(FIRST)) tests; rest=$$?; \
	wait $$first; ours=$$?; \
	echo "--- $(FIRST) ---"; cat $$log; rm -f $$log; \
	test $$rest -eq 0 && test $$ours -eq 0

# The conformance suites in full, beyond the subsets `make test` runs for CI's time: every golden
# table changed (tests/golden_dml.py), every table property other engines set through every
# operation, and more generated hostile names.
test-conformance: $(STAMP) java test-jars
	GOLDEN_DML_ALL=1 DELTA_PROPERTIES_ALL=1 HOSTILE_NAMES_EXAMPLES=10 $(PY) -m pytest -q -p no:cacheprovider \
	  tests/spark/test_golden_dml.py tests/delta_spark/test_table_properties_interop.py tests/spark/test_hostile_names.py

# The stores-that-fail suites in full (tests/fault_proxy.py in front of moto and Azurite): S3 and
# Azure, a lost answer at every commit step with every ambiguous fault, 4 writers x 10 appends at 10%
# faults with three seeds (read by delta-rs and delta-spark), the operations through seeded faults
# (Spark's in arrow mode, and in hadoop mode through S3A and ABFS in Connect servers of their own), an operator's
# lost commit answer through spark-submit too, sensors and triggers through outages. `make test` runs
# a seeded subset of each, on S3 only.
FAULT_TESTS := tests/delta/transaction/test_commit_under_faults.py tests/delta/storage/test_retry.py \
               tests/delta/test_object_store_faults.py tests/operations/test_under_faults.py \
               tests/delta/watch/test_outage.py tests/sensors/test_delta_table_under_faults.py \
               tests/triggers/test_delta_table_under_faults.py tests/spark/test_operations_under_faults.py \
               tests/spark/runtime/test_hadoop_s3a_under_faults.py tests/spark/runtime/test_hadoop_abfs_under_faults.py \
               tests/operators/test_delta_under_faults.py \
               tests/delta_spark/test_appends_under_faults.py
test-faults: $(STAMP) java test-jars
	FAULTS_ALL=1 $(PY) -m pytest -q -p no:cacheprovider --durations=15 $(FAULT_TESTS)

# Tables by name (docs/catalogs.rst): the catalog tests alone, which `make test` runs too.
CATALOG_TESTS := tests/delta/catalog tests/hooks/test_delta_catalog.py tests/spark/test_cli_catalogs.py \
                 tests/operators/test_catalog_tables.py tests/delta_spark/test_catalog_entries.py
test-catalogs: $(STAMP) java test-jars
	$(PY) -m pytest -q -p no:cacheprovider --durations=15 $(CATALOG_TESTS)

# The interop matrix alone (docs/interop-matrix.rst): each operation on each table
# feature, against delta-spark. `make test` runs it too.
matrix: $(STAMP) java test-jars
	$(PY) -m pytest -q -p no:cacheprovider -m matrix tests/delta_spark

# Static checks: ruff (pyproject.toml), mypy (setup.cfg [mypy]) and the import
# contracts (setup.cfg [importlinter]: layers, no cycles).
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(VENV)/bin/lint-imports --no-cache

demo: $(STAMP) java
	bash dags_examples/run_demo.sh

docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -b html -q docs docs/_build/html

bench: $(STAMP) java test-jars
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .airflow docs/_build

# Jars for the tests and benchmarks only (delta-spark, hadoop-aws), from Maven
# Central into ~/.cache/airflow-delta-provider/jars; the fixtures fetch them on
# first use too. The product itself needs no jar.
test-jars: $(STAMP) maven
	$(PY) -m tests.jar_cache

# Rebuild tests/golden-4.4 (tables delta-spark writes, and its answers about
# them) with the delta-spark oracle; `make golden-4.4 NAMES="variant"` for some.
golden-4.4: test-jars java
	$(PY) -m tests.delta_spark.golden_4_4 $(NAMES)
