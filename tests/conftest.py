"""Shared fixtures: one Spark session per test worker (Hive support, temporary
warehouse and metastore), and throwaway dbt projects that install this package
and run in-process against that same session."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.dbt_project import DbtProject
from tests.support.spark import make_session

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


# The suite runs on pytest-xdist with --dist loadgroup. A file whose tests
# share a costly module fixture (a built corpus, a Thrift Server) runs whole
# on one worker; the tests of the files below need only their own models and
# are handed out one by one (each worker has its own metastore, so the same
# schema on two workers does not collide).
SPLIT_FILES = {
    "test_configs.py",
    "test_cost.py",
    "test_demo.py",
    "test_incremental.py",
    "test_merge.py",
    "test_no_loss.py",
    "test_package_install.py",
    "test_partition_values.py",
    "test_plan_text.py",
    "test_randomized_evolution.py",
}

# Rough seconds per unit handed out (a whole file, or one test of a split
# file; scripts/test --durations=80). Units go out in collection order, so the
# longest go first: started last, one would keep a worker busy alone.
UNIT_WEIGHTS = {
    "test_merge.py::test_randomized_change_feed_matches_a_python_model": 400,
    "test_thrift.py": 440,
    "test_randomized_evolution.py::test_randomized_incremental_runs_answer_like_unbucketed_reads": 300,
    "test_bucketed_table.py": 300,
    "test_checker_corpus.py": 290,
    "test_failures.py": 240,
    "test_clean_install.py": 190,
    "test_incremental.py::test_insert_overwrite_and_append_keep_one_file_per_bucket": 150,
    "test_no_loss.py::test_successful_runs_log_no_errors": 150,
    "test_cost.py::test_one_day_run_reads_and_states_only_what_it_writes": 140,
    "test_incremental.py::test_evolve_declares_unbucketed_until_partitions_agree_then_bucket_joins_return": 110,
    "test_joins.py": 100,
    "test_checker_cli.py": 100,
    "test_demo.py::test_demo_runs_twice_with_one_file_per_bucket": 70,
}


def unit_weight(item) -> int:
    name = item.path.name
    if name not in SPLIT_FILES:
        return UNIT_WEIGHTS.get(name, 0)
    return UNIT_WEIGHTS.get(f"{name}::{item.originalname}", 0)


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name not in SPLIT_FILES:
            item.add_marker(pytest.mark.xdist_group(item.path.name))
    items.sort(key=lambda item: -unit_weight(item))
