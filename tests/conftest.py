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


# Seconds per test file, from `scripts/test --durations=0` (four workers on
# two cores, 2026-11-24). pytest-xdist hands out whole files (--dist loadfile)
# in collection order (--no-loadscope-reorder: without it, xdist sorts files
# by their number of tests and the long randomized files, which hold few
# tests, started last). Longest first, so that no long file starts last.
FILE_WEIGHTS = {
    "test_merge_randomized.py": 650,
    "test_incremental.py": 590,
    "test_partition_values.py": 590,
    "test_randomized_evolution.py": 570,
    "test_incremental_failures.py": 530,
    "test_no_loss_nondeterministic.py": 510,
    "test_cost.py": 500,
    "test_no_loss.py": 470,
    "test_extension.py": 470,
    "test_merge.py": 400,
    "test_thrift.py": 310,
    "test_extension_randomized.py": 280,
    "test_bucketed_table.py": 250,
    "test_checker_corpus.py": 220,
    "test_demo.py": 140,
    "test_failures.py": 130,
    "test_batched_switch.py": 120,
    "test_clean_install.py": 105,
    "test_configs.py": 85,
    "test_hashing.py": 80,
    "test_checker_cli.py": 55,
    "test_joins.py": 45,
    "test_layout_test.py": 40,
}


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: -FILE_WEIGHTS.get(item.path.name, 0))
