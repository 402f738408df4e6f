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


# Seconds per test file, from `scripts/test --durations=60` (four workers on
# two cores, 2026-11-23). pytest-xdist hands out whole files (--dist loadfile)
# in collection order, so the longest go first: started last, one of them
# keeps a worker busy after the others are done. A file past ~15 minutes is
# split by theme (test_merge_randomized.py, test_extension_randomized.py, ...).
FILE_WEIGHTS = {
    "test_incremental_failures.py": 1000,
    "test_incremental.py": 1000,
    "test_merge_randomized.py": 930,
    "test_randomized_evolution.py": 870,
    "test_cost.py": 820,
    "test_extension_randomized.py": 800,
    "test_partition_values.py": 715,
    "test_no_loss_nondeterministic.py": 690,
    "test_extension.py": 600,
    "test_merge.py": 600,
    "test_bucketed_table.py": 450,
    "test_thrift.py": 440,
    "test_no_loss.py": 400,
    "test_checker_corpus.py": 300,
    "test_failures.py": 200,
    "test_clean_install.py": 135,
    "test_demo.py": 115,
}


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: -FILE_WEIGHTS.get(item.path.name, 0))
