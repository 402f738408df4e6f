"""Shared fixtures: one Spark session per test worker (Hive support, temporary
warehouse and metastore), and throwaway dbt projects that install this package
and run in-process against that same session."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from harness.dbt_project import RELEASE_LOCKS_HOOK, DbtProject
from harness.metastore_service import MetastoreService
from harness.spark import make_session
from spark_bucketing import macro_cache, session_extension

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def spark_dirs():
    base = Path(tempfile.mkdtemp(prefix="sb-tests-"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


# Hadoop's local filesystem writes a checksum file beside every file and, without Hadoop's native
# library, sets each file's and folder's permissions by starting a `chmod` process: about a tenth of
# a test JVM's CPU (test_append_files.py: 124 CPU-seconds with it, 110 without). The stores the
# package writes to (HDFS, object stores) write no checksum files; the demo, the clean install, the
# benchmarks and the tests' dbt processes keep Hadoop's default.
LOCAL_FILES = {"spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem"}


@pytest.fixture(scope="session")
def spark(spark_dirs):
    session = make_session(spark_dirs, **LOCAL_FILES)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def metastore(tmp_path_factory):
    """A Hive metastore service on Postgres of the test module's own."""
    service = MetastoreService(tmp_path_factory.mktemp("metastore") / "warehouse")
    service.start()
    yield service
    service.stop()


@pytest.fixture(scope="module")
def dbt_project(spark, tmp_path_factory, request):
    """A dbt project of its own per test module, with its own schema."""
    schema = "t_" + request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    # A module whose runs fail on errors a macro cannot catch while they hold the commit lock (a full
    # build's query) adds the package's end-of-run hook, as docs/incremental.md asks of a project.
    hooks = {"on-run-end": [RELEASE_LOCKS_HOOK]} if getattr(request.module, "RELEASE_LOCKS", False) else {}
    project = DbtProject(tmp_path_factory.mktemp("dbt"), schema=schema, package_dir=REPO_ROOT, project_overrides=hooks)
    project.setup()
    spark.sql(f"create database if not exists {schema}")
    yield project
    spark.sql(f"drop database if exists {schema} cascade")


def _schema_entries(spark, schema: str) -> tuple[set[str], set[str]]:
    """(tables, views) of `schema`, by name: listings that describe nothing."""
    views = {r.viewName for r in spark.sql(f"show views in {schema}").collect() if not r.isTemporary}
    tables = {r.tableName for r in spark.sql(f"show tables in {schema}").collect() if not r.isTemporary}
    return tables - views, views


@pytest.fixture(autouse=True)
def _tests_own_tables(request):
    """A test's tables and views go with it; what its module's fixtures built
    stays. dbt-spark describes every table of the schema at each invocation
    (`show table extended ... like '*'`): a worker JVM's CPU per listing
    0.08 s with 1 table, 0.27 s with 40, 0.55 s with 80, and a module's
    tests would otherwise each add theirs to every later run's listing."""
    if "dbt_project" not in request.fixturenames:
        yield
        return
    spark, schema = request.getfixturevalue("spark"), request.getfixturevalue("dbt_project").schema
    tables, views = _schema_entries(spark, schema)
    yield
    now_tables, now_views = _schema_entries(spark, schema)
    for view in sorted(now_views - views):
        spark.sql(f"drop view if exists {schema}.`{view}`")
    for table in sorted(now_tables - tables):
        spark.sql(f"drop table if exists {schema}.`{table}`")


_MACRO_CACHE_MADE: list[Path] = []


def pytest_configure(config):
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    # The dbt processes tests start load the session extension where their profile names it, as before the
    # plugin loaded it by default: each test states the session it runs in. The tests of the default
    # (test_session_extension.py, test_readme_project.py, test_demo.py) take the variable out.
    os.environ.setdefault(session_extension.ENV, session_extension.OFF)
    # dbt's runs, in this process and in the dbt processes tests start, keep their compiled macros as a user's
    # do (the cache is on by default), in a directory of this test run's: not the user's own cache directory.
    # Set before xdist starts its workers, which inherit it.
    if macro_cache.ENV not in os.environ:
        made = Path(tempfile.mkdtemp(prefix="sb-tests-macro-cache-"))
        _MACRO_CACHE_MADE.append(made)
        os.environ[macro_cache.ENV] = str(made)


def pytest_unconfigure(config):
    for made in _MACRO_CACHE_MADE:
        shutil.rmtree(made, ignore_errors=True)


# Worker-seconds per test file, the sum of `scripts/test --junitxml`'s
# set-up, call and tear-down times (four workers on two cores, 2026-12-01,
# commit aa18dce on a fresh clone: 9,190 worker-seconds on a machine 1.6x
# slower than the idle one of docs/development.md's issue-66 table).
# pytest-xdist hands out whole files (--dist loadfile) in collection order
# (--no-loadscope-reorder: without it, xdist sorts files by their number of
# tests and the long randomized files, which hold few tests, started last).
# Longest first, so that no long file starts last.
FILE_WEIGHTS = {
    "test_extension.py": 882,
    "test_clean_install.py": 800,  # 752, then the extension compiled and loaded by the installed plugin
    "test_append_files.py": 608,
    "test_concurrent_runs.py": 593,
    "test_partition_values.py": 527,
    "test_dbt_adapter_suite.py": 460,
    "test_randomized_evolution.py": 378,
    "test_merge_randomized.py": 375,
    "test_thrift.py": 349,
    "test_microbatch.py": 347,
    "test_no_loss.py": 336,
    "test_batched_switch.py": 286,
    "test_bucket_pruning.py": 281,
    "test_partition_records.py": 257,
    "test_schema_change.py": 252,
    "test_cost.py": 247,
    "test_incremental_failures.py": 238,
    "test_foreign_key_types.py": 230,
    "test_merge.py": 229,
    "test_hive_bucketing_v2.py": 223,
    "test_incremental.py": 215,
    "test_checker_corpus.py": 200,  # 170 before the materializations followed (31 s alone, 2026-12-05)
    # Not in that run (alone, 2026-12-05): dbt's generic adapter classes, three passes (120 s); the README's
    # project in a process of its own (40 s); a first day's commands in-process (25 s); SB01 on the corpus (11 s).
    "test_no_harm.py": 200,
    "test_readme_project.py": 70,
    # Four dbt processes at once, each its own JVM (issue 90; 98 s alone, 75 s in the suite, 2026-12-06).
    "test_session_extension.py": 150,
    "test_first_day.py": 45,
    "test_lint_parity.py": 20,
    # Not in that run: 300 generated queries planned, the daily tables built by dbt, the suggestions tried
    # (136 s alone before the suggestions' tests, 2026-12-05; they take 25 s and 21 s more).
    "test_checker_randomized.py": 200,
    "test_no_loss_nondeterministic.py": 134,
    "test_foreign_tables.py": 134,
    "test_bucketed_table.py": 119,
    "test_failures.py": 100,
    "test_demo.py": 98,
    "test_routed_incremental.py": 78,
    "test_commit_lock.py": 69,
    "test_hashing.py": 80,  # 47, then Hive 4's vectors through the macro: a dbt project of its own (38 s alone)
    # Trino and a metastore service, two dbt processes building 15 tables, ~340 Trino plans (135 s alone).
    "test_trino.py": 330,
    "test_is_incremental.py": 37,
    "test_retention.py": 35,
    "test_configs.py": 34,
    "test_checker_cli.py": 27,
    "test_layout_test.py": 23,
    "test_joins.py": 14,
}


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: -FILE_WEIGHTS.get(item.path.name, 0))
