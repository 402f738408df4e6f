"""Shared fixtures: one Spark session per test worker (Hive support, temporary
warehouse and metastore), and throwaway dbt projects that install this package
and run in-process against that same session."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from harness.dbt_project import DbtProject
from harness.metastore_service import MetastoreService
from harness.spark import make_session

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
    project = DbtProject(tmp_path_factory.mktemp("dbt"), schema=schema, package_dir=REPO_ROOT)
    project.setup()
    spark.sql(f"create database if not exists {schema}")
    yield project
    spark.sql(f"drop database if exists {schema} cascade")


def pytest_configure(config):
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")


# Seconds per test file, from a fresh clone's `scripts/test --durations=0`
# (four workers on two cores, 2026-11-25, commit cd1799e). pytest-xdist hands
# out whole files (--dist loadfile) in collection order
# (--no-loadscope-reorder: without it, xdist sorts files by their number of
# tests and the long randomized files, which hold few tests, started last).
# Longest first, so that no long file starts last.
FILE_WEIGHTS = {
    "test_randomized_evolution.py": 462,
    "test_merge_randomized.py": 446,
    "test_no_loss.py": 294,
    "test_incremental.py": 274,
    "test_cost.py": 273,
    "test_partition_values.py": 259,
    "test_extension.py": 220,
    "test_extension_randomized.py": 219,
    "test_incremental_failures.py": 216,
    "test_merge.py": 214,
    "test_thrift.py": 201,
    "test_clean_install.py": 170,
    "test_bucketed_table.py": 167,
    "test_no_loss_nondeterministic.py": 132,
    "test_demo.py": 125,
    "test_shared_metastore.py": 110,  # not in that run; 55 s alone
    "test_batched_switch.py": 93,
    "test_hashing.py": 55,
    "test_failures.py": 43,
    "test_checker_corpus.py": 42,
    "test_checker_cli.py": 27,
    "test_joins.py": 18,
    "test_configs.py": 17,
    "test_layout_test.py": 13,
}


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: -FILE_WEIGHTS.get(item.path.name, 0))
