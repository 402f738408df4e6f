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
from spark_bucketing import macro_cache

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def spark_dirs():
    base = Path(tempfile.mkdtemp(prefix="sb-tests-"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def spark(spark_dirs):
    session = make_session(spark_dirs)
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


_MACRO_CACHE_MADE: list[Path] = []


def pytest_configure(config):
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
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


# Seconds per test file, from a fresh clone's `scripts/test --junitxml`
# (four workers on two cores, 2026-11-27, commit f1095f8; test_extension.py
# and test_thrift.py since absorbed test_extension_randomized.py and
# test_shared_metastore.py, sharing their tables and their metastore service,
# cluster and Thrift Server: the sums less what they no longer build twice).
# pytest-xdist hands out whole files (--dist loadfile) in collection order
# (--no-loadscope-reorder: without it, xdist sorts files by their number of
# tests and the long randomized files, which hold few tests, started last).
# Longest first, so that no long file starts last.
FILE_WEIGHTS = {
    "test_extension.py": 781,
    "test_partition_values.py": 418,
    "test_concurrent_runs.py": 600,
    "test_randomized_evolution.py": 397,
    "test_hive_bucketing_v2.py": 322,
    "test_merge_randomized.py": 291,
    "test_batched_switch.py": 286,
    "test_cost.py": 268,
    "test_clean_install.py": 260,
    "test_no_loss.py": 255,
    "test_partition_records.py": 236,
    "test_incremental.py": 230,
    "test_thrift.py": 226,
    "test_incremental_failures.py": 207,
    "test_merge.py": 163,
    "test_bucketed_table.py": 138,
    "test_checker_corpus.py": 122,
    "test_no_loss_nondeterministic.py": 109,
    "test_demo.py": 98,
    "test_failures.py": 80,
    "test_is_incremental.py": 40,
    "test_routed_incremental.py": 45,
    "test_foreign_key_types.py": 75,
    "test_dbt_adapter_suite.py": 300,
    "test_microbatch.py": 75,
    "test_append_files.py": 290,
    "test_bucket_pruning.py": 90,
    "test_schema_change.py": 185,
    "test_commit_lock.py": 30,
    "test_retention.py": 30,
    "test_hashing.py": 44,
    "test_configs.py": 30,
    "test_checker_cli.py": 24,
    "test_joins.py": 11,
    "test_layout_test.py": 9,
    "test_package_install.py": 6,
}


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: -FILE_WEIGHTS.get(item.path.name, 0))
