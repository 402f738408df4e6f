"""Shared fixtures: one Spark session per test worker (Hive support, temporary
warehouse and metastore), and throwaway dbt projects that install this package
and run in-process against that same session."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from harness.dbt_project import DbtProject
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
    project = DbtProject(tmp_path_factory.mktemp("dbt"), schema=schema, package_dir=REPO_ROOT)
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


# Worker-seconds per test file (set-up, call and tear-down of its tests) of the last recorded whole run:
# `SB_RECORD_TIMINGS=1 bash scripts/test` writes them (docs/development.md). pytest-xdist hands out whole files
# (--dist loadfile) in collection order (--no-loadscope-reorder: without it, xdist sorts files by their number of
# tests and the long randomized files, which hold few tests, started last). Longest first, so that no long file
# starts last; a file not in the record (a new one) first of all, until it is.
TIMINGS = Path(__file__).with_name("file_timings.json")
RECORD_TIMINGS = "SB_RECORD_TIMINGS"
_SPENT: dict[str, float] = {}


def _recorded() -> dict[str, float]:
    try:
        return json.loads(TIMINGS.read_text())["worker_seconds"]
    except (OSError, ValueError, KeyError):
        return {}


#: The files whose tests start processes of their own: dbt processes (a JVM each), a Hive metastore service on
#: Postgres, a Thrift Server, Trino, Hive 4's hash, a clean virtualenv. Their tests are the `services` tier.
SERVICES = {
    "test_clean_install.py",
    "test_concurrent_runs.py",
    "test_demo.py",
    "test_foreign_tables.py",
    "test_hashing.py",
    "test_no_loss.py",
    "test_readme_project.py",
    "test_session_extension.py",
    "test_thrift.py",
    "test_trino.py",
}


def _tier(item: pytest.Item) -> str:
    """`services`, `spark` (the worker's Spark session, dbt in the test's process) or `unit` (no JVM)."""
    if item.path.name in SERVICES:
        return "services"
    return "spark" if {"spark", "dbt_project"} & set(getattr(item, "fixturenames", ())) else "unit"


def pytest_collection_modifyitems(items):
    recorded = _recorded()
    for item in items:
        item.add_marker(_tier(item))
    items.sort(key=lambda item: -recorded.get(item.path.name, float("inf")))


def pytest_runtest_logreport(report):
    # Called in the controller for every worker's report too: the controller sums them.
    name = report.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    _SPENT[name] = _SPENT.get(name, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get(RECORD_TIMINGS) != "1" or hasattr(session.config, "workerinput") or not _SPENT:
        return
    spent = _recorded() | {name: round(seconds) for name, seconds in _SPENT.items()}
    record = {"recorded": datetime.date.today().isoformat(), "worker_seconds": dict(sorted(spent.items()))}
    TIMINGS.write_text(json.dumps(record, indent=1) + "\n")
