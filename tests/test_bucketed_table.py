"""The bucketed_table materialization on real Spark and real dbt: every layout
scenario the product promises, checked on disk in Python (files per bucket,
every row's bucket recomputed, sort order) and by the package's own
bucket_layout test."""

from __future__ import annotations

from collections import Counter

import pytest

from harness.dbt_project import failure_text
from harness.spark import describe
from spark_bucketing import hashing
from tests.support.layout import check_layout

# 12 input tasks everywhere: range(start, end, step, numPartitions).
TASKS = 12
MODELS = {
    "unpart_hive_parquet": (
        f"select cast(id as int) as user_id, concat('name-', id) as name from range(0, 5000, 1, {TASKS})",
        {"clustered_by": "user_id", "buckets": 7},
    ),
    "unpart_spark_orc": (
        f"select id as user_id, id * 2 as score from range(0, 5000, 1, {TASKS})",
        {"clustered_by": ["user_id"], "buckets": 7, "bucket_hash": "spark", "file_format": "orc"},
    ),
    "dynamic_part_hive_sorted": (
        f"""select cast(id % 997 as int) as user_id, date_add(date'2024-01-01', cast(id % 5 as int)) as order_date,
                  cast(id * 37 % 1000 as double) as amount, cast(id as bigint) as order_id
           from range(0, 20000, 1, {TASKS})""",
        {"clustered_by": "user_id", "buckets": 16, "partition_by": ["order_date"], "sorted_by": ["amount", "order_id"]},
    ),
    "static_part_spark_orc_sorted": (
        f"""select 'eu' as region, cast(id % 101 as int) as account_id, concat('e', id % 13) as event
           from range(0, 6000, 1, {TASKS})""",
        {
            "clustered_by": "account_id",
            "buckets": 8,
            "partition_by": "region",
            "sorted_by": "event",
            "bucket_hash": "spark",
            "file_format": "orc",
        },
    ),
    "multi_key_hive": (
        f"""select concat('c', id % 53) as country, id % 31 as store_id,
                  case when id % 3 = 0 then 'a' else 'b' end as part,
                  id as sale_id from range(0, 8000, 1, {TASKS})""",
        {"clustered_by": ["country", "store_id"], "buckets": 8, "partition_by": ["part"], "sorted_by": ["sale_id"]},
    ),
    "multi_key_spark": (
        f"""select concat('c', id % 53) as country, id % 31 as store_id, id as sale_id
           from range(0, 8000, 1, {TASKS})""",
        {"clustered_by": ["country", "store_id"], "buckets": 8, "bucket_hash": "spark", "sorted_by": ["sale_id"]},
    ),
    "null_keys_hive": (
        f"""select case when id % 3 = 0 then null else cast(id % 50 as int) end as k,
                  case when id % 7 = 0 then null else concat('s', id) end as s
           from range(0, 3000, 1, {TASKS})""",
        {"clustered_by": ["k", "s"], "buckets": 7, "sorted_by": ["s"]},
    ),
    "null_keys_spark": (
        f"""select case when id % 3 = 0 then null else cast(id % 50 as int) end as k, id as v
           from range(0, 3000, 1, {TASKS})""",
        {"clustered_by": "k", "buckets": 7, "bucket_hash": "spark", "sorted_by": ["v"]},
    ),
    "skewed_hive": (
        f"""select case when id % 10 < 9 then 1 else cast(id as int) end as k, cast(id % 2 as string) as p, id as v
           from range(0, 30000, 1, {TASKS})""",
        {"clustered_by": "k", "buckets": 16, "partition_by": "p", "sorted_by": ["v"]},
    ),
    "buckets_512_spark_part": (
        f"""select id as k, cast(id % 2 as int) as p from range(0, 4000, 1, {TASKS})""",
        {"clustered_by": "k", "buckets": 512, "bucket_hash": "spark", "partition_by": "p"},
    ),
    "buckets_512_hive": (
        f"""select cast(id as int) as k, concat('x', id) as v from range(0, 4000, 1, {TASKS})""",
        {"clustered_by": "k", "buckets": 512},
    ),
    "more_buckets_than_rows": (
        f"""select cast(id as int) as k from range(0, 10, 1, {TASKS})""",
        {"clustered_by": "k", "buckets": 64},
    ),
    "all_types_hive": (
        f"""select cast(id % 100 as tinyint) as t, cast(id as smallint) as sm, id as b, id % 2 = 0 as flag,
                  date_add(date'1965-06-01', cast(id % 3000 as int)) as d, cast(id / 7 as float) as f,
                  cast(id / 3 as double) as dbl, concat('ü', id) as s
           from range(0, 3000, 1, {TASKS})""",
        {"clustered_by": ["t", "sm", "b", "flag", "d", "f", "dbl", "s"], "buckets": 13},
    ),
    "empty_result": (
        "select cast(id as int) as k, 'x' as p from range(0, 0)",
        {"clustered_by": "k", "buckets": 4, "partition_by": "p"},
    ),
}
SESSION = {
    "spark.sql.shuffle.partitions": "3",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    "spark.sql.files.maxRecordsPerFile": "10",
}


@pytest.fixture(scope="module")
def built(spark, dbt_project):
    for name, (sql, config) in MODELS.items():
        dbt_project.write_model(name, sql, {"materialized": "bucketed_table", **config})
    dbt_project.write_file(
        "models/schema.yml",
        "version: 2\nmodels:\n"
        + "".join(f"  - name: {name}\n    data_tests: [spark_bucketing.bucket_layout]\n" for name in MODELS),
    )
    before = {k: spark.conf.get(k) for k in SESSION}
    for key, value in SESSION.items():
        spark.conf.set(key, value)
    try:
        run = dbt_project.run()
        after = {k: spark.conf.get(k) for k in SESSION}
        test = dbt_project.dbt("test")
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)
    return run, after, test


def test_session_settings_are_restored_after_the_run(built):
    _, after, _ = built
    assert after == SESSION


def test_bucket_layout_dbt_tests_pass(built):
    _, _, test = built
    assert test.success, failure_text(test)
    assert len(test.result.results) == len(MODELS)


def _expected_buckets(spark, table, keys, family, buckets, partition_by):
    """(partition value, bucket) pairs the data must occupy, from Python hashing."""
    types = {f.name: f.dataType.simpleString() for f in spark.table(table).schema.fields}
    cols = keys + partition_by
    pairs = set()
    for r in spark.table(table).select(*cols).collect():
        bucket = hashing.bucket_id([r[k] for k in keys], [types[k] for k in keys], buckets, family)
        pairs.add((tuple(r[p] for p in partition_by), bucket))
    return pairs


@pytest.mark.parametrize("name", sorted(MODELS))
def test_one_file_per_bucket_and_no_misplaced_rows(spark, dbt_project, built, name):
    sql, config = MODELS[name]
    table = f"{dbt_project.schema}.{name}"
    report = check_layout(spark, table)
    keys = [config["clustered_by"]] if isinstance(config["clustered_by"], str) else config["clustered_by"]
    partition_by = config.get("partition_by", [])
    partition_by = [partition_by] if isinstance(partition_by, str) else partition_by
    expected = _expected_buckets(spark, table, keys, config.get("bucket_hash", "hive"), config["buckets"], partition_by)

    assert report.bad_names == []
    assert report.max_files_per_bucket <= 1
    # Exactly one file for each occupied (partition, bucket) and none for empty buckets.
    assert report.files == len(expected)
    assert report.misplaced_rows == 0
    assert report.unsorted_rows == 0
    assert report.rows == spark.sql(f"select count(*) from ({sql})").first()[0]


def test_sorted_models_really_had_work_to_sort(spark, dbt_project, built):
    """The sort check can fail: the input is not already in sorted_by order."""
    first = spark.sql(f"select amount from ({MODELS['dynamic_part_hive_sorted'][0]}) limit 50").collect()
    amounts = [r.amount for r in first]
    assert amounts != sorted(amounts)


def test_hive_tables_declare_a_hive_spec(spark, dbt_project, built):
    rows = describe(spark, f"{dbt_project.schema}.dynamic_part_hive_sorted")
    assert rows["Provider"] == "hive"
    assert rows["Num Buckets"] == "16"
    assert "bucketing_version=1" in rows["Table Properties"]
    assert "ParquetHiveSerDe" in rows["Serde Library"]
    ddl = spark.sql(f"show create table {dbt_project.schema}.dynamic_part_hive_sorted as serde").first()[0]
    assert "CLUSTERED BY (user_id)" in ddl and "SORTED BY (amount ASC, order_id ASC)" in ddl
    assert ddl.split("PARTITIONED BY (", 1)[1].split(")", 1)[0].split() == ["order_date", "DATE"]


def test_spark_tables_are_datasource_tables(spark, dbt_project, built):
    rows = describe(spark, f"{dbt_project.schema}.unpart_spark_orc")
    assert rows["Provider"] == "orc"
    assert rows["Num Buckets"] == "7"


def test_write_is_spread_over_tasks(spark, dbt_project, built):
    """An unpartitioned write spreads its buckets evenly over min(buckets,
    shuffle partitions) tasks (file names carry the task id): 7 buckets over
    this module's 3 shuffle partitions are 3 tasks of 3, 2 and 2 buckets."""
    import re

    from harness.spark import data_files, table_location

    buckets_per_task = Counter(
        re.search(r"part-(\d+)", f.name).group(1)
        for f in data_files(table_location(spark, f"{dbt_project.schema}.unpart_hive_parquet"))
    )
    assert sorted(buckets_per_task.values()) == [2, 2, 3]
