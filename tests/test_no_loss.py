"""No silent loss: bucket_metadata names the partitions of a damaged table;
mixed-case columns work with both hash families; large bucket counts write
one file per bucket."""

from __future__ import annotations

import re
import shutil
from collections import Counter

import pytest

from harness.dbt_process import DbtProcessProject
from harness.dbt_project import failure_text
from harness.spark import TEST_JVM_FLAGS, table_location
from spark_bucketing import hashing
from spark_bucketing.files import data_files, input_file_path
from tests.support.layout import table_layout_problems

DAMAGED = ("dmg_missing", "dmg_empty", "dmg_file", "dmg_run")


@pytest.fixture(scope="module")
def sound_tables(dbt_project):
    """The tables the damage tests damage, each its own, built together (one
    `dbt run` builds all four, a second rewrites them, one `dbt test` passes
    bucket_metadata on each before any damage)."""
    for name in DAMAGED:
        dbt_project.write_model(
            name,
            "select id as k, date_add(date'2024-01-01', cast(id div 20 as int)) as day from range(0, 80, 1, 2)",
            {"materialized": "bucketed_incremental", "clustered_by": ["k"], "buckets": 2, "partition_by": ["day"]},
        )
        dbt_project.write_file(
            f"models/{name}.yml",
            f"version: 2\nmodels:\n  - name: {name}\n    data_tests: [spark_bucketing.bucket_metadata]\n",
        )
    dbt_project.run(*DAMAGED)
    dbt_project.run(*DAMAGED)  # partitions now live in _bucketing/<run>/
    result = dbt_project.dbt("test", "--select", *DAMAGED)
    assert result.success, failure_text(result)
    assert len(result.result.results) == len(DAMAGED)
    return {name: f"{dbt_project.schema}.{name}" for name in DAMAGED}


def _partition_folder(spark, table, day):
    files = spark.sql(f"select distinct input_file_name() as f from {table} where day = date'{day}'").collect()
    return input_file_path(files[0].f).parent


def _metadata_problems(dbt_project, name) -> str:
    result = dbt_project.dbt("test", "--select", name)
    assert not result.success
    (test_result,) = result.result.results
    return test_result.node.compiled_code


def test_bucket_metadata_names_a_partition_pointed_at_a_missing_folder(spark, dbt_project, sound_tables):
    table = sound_tables["dmg_missing"]
    spark.sql(f"alter table {table} partition (day='2024-01-02') set location '/nonexistent/sb/day=2024-01-02'")
    problems = _metadata_problems(dbt_project, "dmg_missing")
    assert "day=2024-01-02" in problems and "holds no rows (folder missing or empty)" in problems
    assert "day=2024-01-01" not in problems


def test_bucket_metadata_names_an_emptied_partition(spark, dbt_project, sound_tables):
    table = sound_tables["dmg_empty"]
    folder = _partition_folder(spark, table, "2024-01-03")
    for f in data_files(folder):
        f.unlink()
    spark.sql(f"refresh table {table}")
    problems = _metadata_problems(dbt_project, "dmg_empty")
    assert "day=2024-01-03" in problems and "holds no rows (folder missing or empty)" in problems


def test_bucket_metadata_names_a_partition_that_lost_a_file(spark, dbt_project, sound_tables):
    table = sound_tables["dmg_file"]
    folder = _partition_folder(spark, table, "2024-01-04")
    data_files(folder)[0].unlink()
    spark.sql(f"refresh table {table}")
    problems = _metadata_problems(dbt_project, "dmg_file")
    assert "day=2024-01-04" in problems and "recorded 2 files and 20 rows, found 1 files" in problems
    assert "rows missing" in problems


def test_a_run_after_damage_does_not_hide_it(spark, dbt_project, sound_tables):
    """An incremental run that does not touch the damaged partition keeps its
    record, so bucket_metadata still reports the loss."""
    table = sound_tables["dmg_run"]
    folder = _partition_folder(spark, table, "2024-01-02")
    shutil.rmtree(folder)
    spark.sql(f"refresh table {table}")
    dbt_project.write_model(
        "dmg_run",
        "select id as k, date'2024-01-05' as day from range(0, 10)",
        {"materialized": "bucketed_incremental", "clustered_by": ["k"], "buckets": 2, "partition_by": ["day"]},
    )
    dbt_project.run("dmg_run")
    problems = _metadata_problems(dbt_project, "dmg_run")
    assert "day=2024-01-02" in problems and "holds no rows (folder missing or empty)" in problems


@pytest.mark.parametrize("bucket_hash", ["hive", "spark"])
@pytest.mark.parametrize("strategy", ["insert_overwrite", "append"])
def test_mixed_case_columns(spark, dbt_project, bucket_hash, strategy):
    """Configs name the columns in another case than the query; both hash families, two runs."""
    name = f"mixed_{bucket_hash}_{strategy}"
    dbt_project.write_model(
        name,
        "select id as CustomerId, id * 7 % 13 as SortKey, cast(id % 3 as string) as RegionCode, 'x' as Payload "
        "from range(0, 60, 1, 4)",
        {
            "materialized": "bucketed_incremental",
            "clustered_by": ["customerID"],
            "sorted_by": ["SORTKEY"],
            "partition_by": ["regioncode"],
            "buckets": 4,
            "bucket_hash": bucket_hash,
            "incremental_strategy": strategy,
        },
    )
    table = f"{dbt_project.schema}.{name}"
    dbt_project.run(name)
    dbt_project.run(name)
    assert spark.table(table).count() == (120 if strategy == "append" else 60)
    assert table_layout_problems(spark, table) == []
    result = dbt_project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
    assert result.success, failure_text(result)
    if bucket_hash == "spark":  # a datasource table keeps the query's spelling
        assert [c.name for c in spark.table(table).schema] == ["CustomerId", "SortKey", "Payload", "RegionCode"]


def test_large_bucket_counts_keep_one_file_per_bucket(spark, dbt_project):
    name = "many_buckets"
    dbt_project.write_model(
        name,
        "select id as k, cast(id % 2 as string) as p from range(0, 1000, 1, 4)",
        {
            "materialized": "bucketed_table",
            "clustered_by": ["k"],
            "buckets": 100000,
            "partition_by": ["p"],
            "bucket_hash": "spark",
        },
    )
    dbt_project.run(name)
    table = f"{dbt_project.schema}.{name}"
    files = data_files(table_location(spark, table))
    pairs = {(k % 2, hashing.bucket_id([k], ["bigint"], 100000, "spark")) for k in range(1000)}
    assert len(files) == len(pairs)
    assert table_layout_problems(spark, table) == []
    tasks = Counter(f.name.split("-")[1] for f in files)
    assert len(tasks) <= 4  # the write ran on the module's shuffle partitions, not 100,000 tasks


def test_successful_runs_log_no_errors(tmp_path):
    """With Spark's own log configuration, as users run it: a first build, a
    rebuild and incremental runs print no ERROR line (the metastore logs one
    for every folder it is asked to delete that does not exist)."""
    project = DbtProcessProject(tmp_path / "p", quiet_logs=False, jvm_flags=TEST_JVM_FLAGS, one_process=True)
    partitioned = {"clustered_by": ["k"], "buckets": 4, "partition_by": ["p"]}
    sql = "select id as k, cast(id % 3 as int) as p from range(0, 100, 1, 2)"
    project.write_model("full", sql, {"materialized": "bucketed_table", **partitioned})
    project.write_model(
        "incr", sql, {"materialized": "bucketed_incremental", "incremental_strategy": "append", **partitioned}
    )
    # Both runs in one process and JVM: its log lines are the runs' output.
    outputs = []
    try:
        for _ in range(2):
            project.dbt("run")
            outputs.append(project.output)
            errors = [line for line in project.output.splitlines() if re.search(r"\bERROR \S+:", line)]
            assert errors == [], "\n".join(errors)
    finally:
        project.close()
    assert all("PASS=2" in out for out in outputs), outputs
    assert " WARN " in "".join(outputs)  # Spark logs with its own configuration
