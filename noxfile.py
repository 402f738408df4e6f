"""The supported-versions matrix (issue 67): each cell a virtualenv of its own with one PySpark and one
dbt-core/dbt-spark, the package installed as a user installs it, and the matrix's tests run against
that Spark. Not part of `.ci/run`, which runs the whole suite on the pinned cell (requirements.lock).

    bash scripts/matrix                                       # every cell
    bash scripts/matrix -s "matrix(spark=4.0.5, dbt=1.11)"      # one cell
    bash scripts/matrix -l                                    # the cells
    bash scripts/matrix -s install                            # each cell's clean `pip install` only

Each cell compiles the session extension against its PySpark (`spark-bucketing extension`); the tests
then run on that Spark (harness/spark.py builds and loads the jar for the installed PySpark)."""

from __future__ import annotations

import os
import random

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

# dbt-core and dbt-spark, by minor version: the newest patch of each, pinned.
DBT = {
    "1.11": ("dbt-core==1.11.16", "dbt-spark[session]==1.11.0"),
    "1.10": ("dbt-core==1.10.23", "dbt-spark[session]==1.10.3"),
}
# PySpark 3.5 to 4.3, the newest patch of each line, with dbt 1.11; 3.5 and 4.3 with dbt 1.10 too.
CELLS = [
    *[(spark, "1.11") for spark in ("3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")],
    *[(spark, "1.10") for spark in ("3.5.9", "4.3.0")],
]
# What a cell proves: the write paths (bucketed_table; insert_overwrite, append, merge, microbatch; a
# schema change; bucket-count evolution in test_incremental.py), the layout and metadata tests, the
# checker's verdicts against this Spark's plans (the corpus, --verify, the randomized queries), the
# extension's plans and randomized answers against bucketing off, and a concurrent pair of runs.
TESTS = [
    "tests/test_bucketed_table.py",
    "tests/test_incremental.py",
    "tests/test_merge.py",
    "tests/test_microbatch.py",
    "tests/test_schema_change.py",
    "tests/test_layout_test.py",
    "tests/test_checker_corpus.py",
    "tests/test_checker_randomized.py",
    "tests/test_extension.py",
    "tests/test_spark_versions.py",
    # Two dbt processes racing on one table (a microbatch backfill's windows), on a metastore service.
    "tests/test_concurrent_runs.py::test_a_parallel_microbatch_backfill_lands_every_batch",
]
PYTEST = ("python", "-m", "pytest", "-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider", "--durations=5")
# The same tools as the pinned cell (requirements.lock).
TOOLS = ("pytest==9.2.0", "pytest-xdist==3.8.0", "PyHive[hive_pure_sasl]==0.7.0", "sqlglot==30.30.0")


@nox.session(python="3.11")
@nox.parametrize("spark,dbt", CELLS, ids=[f"spark={s}, dbt={d}" for s, d in CELLS])
def matrix(session: nox.Session, spark: str, dbt: str) -> None:
    session.install(f"pyspark=={spark}", *DBT[dbt], *TOOLS)
    session.install("-e", "python_plugin[dbt-templater]")
    session.run("spark-bucketing", "extension", "--quiet")
    # One seed for the cell's randomized tests, in nox's own log (pytest shows a passing test's print
    # only on failure); SB_SEED=<seed> bash scripts/matrix -s <cell> replays the cell.
    seed = os.environ.get("SB_SEED") or str(random.randrange(1 << 30))
    session.log(f"the randomized tests' seed: SB_SEED={seed}")
    env = {"DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "SB_SEED": seed}
    session.run(*PYTEST, *TESTS, *session.posargs, env=env)


# What a user's `pip install` does to an environment that holds one PySpark and one dbt: the package
# built and installed as a wheel (not editable) into a fresh virtualenv, its dependencies consistent
# (`pip check`), the PySpark and dbt-core already there kept, the extension built from the wheel's own
# Scala sources. The matrix's cells install the package editable so that the tests run this tree.
KEPT = """
import importlib.metadata as m, sys
spark, dbt = sys.argv[1:]
found = {name: m.version(name) for name in ("pyspark", "dbt-core", "dbt-spark", "spark-bucketing")}
print(found)
assert found["pyspark"] == spark, f"pip replaced PySpark {spark}: {found}"
for name in ("dbt-core", "dbt-spark"):
    assert found[name].startswith(dbt + "."), f"pip replaced {name} {dbt}: {found}"
"""


@nox.session(python="3.11", reuse_venv=False)
@nox.parametrize("spark,dbt", CELLS, ids=[f"spark={s}, dbt={d}" for s, d in CELLS])
def install(session: nox.Session, spark: str, dbt: str) -> None:
    session.install(f"pyspark=={spark}", *DBT[dbt])
    session.install("./python_plugin[spark]")
    session.run("python", "-m", "pip", "check")
    session.run("python", "-c", KEPT, spark, dbt)
    # A cache of its own, so the jar is compiled here from the installed sources, not found built.
    session.run("spark-bucketing", "extension", "--quiet", env={"XDG_CACHE_HOME": session.create_tmp()})
