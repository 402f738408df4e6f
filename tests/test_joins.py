"""Tables built with bucket_hash='spark' join on their bucket key without a
shuffle; Hive-hash tables are read by Spark as unbucketed (they shuffle)."""

from __future__ import annotations

import pytest

from spark_bucketing import plans

pytestmark = pytest.mark.fast  # the fast tier: `bash scripts/test --fast` (docs/development.md)


def _exchanges_under_join(spark, sql: str) -> int:
    plan = plans.executed_plan(spark, sql)
    assert "SortMergeJoin" in plan or "ShuffledHashJoin" in plan, plan
    return plan.count("Exchange")


@pytest.fixture(scope="module")
def tables(spark, dbt_project):
    users = "select cast(id as int) as user_id, concat('u', id) as name from range(0, 2000, 1, 5)"
    orders = (
        "select cast(id % 2000 as int) as user_id, id as order_id, cast(id % 4 as string) as p "
        "from range(0, 20000, 1, 7)"
    )
    for family in ("spark", "hive"):
        dbt_project.write_model(
            f"users_{family}",
            users,
            {"materialized": "bucketed_table", "clustered_by": "user_id", "buckets": 8, "bucket_hash": family},
        )
        dbt_project.write_model(
            f"orders_{family}",
            orders,
            {
                "materialized": "bucketed_table",
                "clustered_by": "user_id",
                "buckets": 8,
                "bucket_hash": family,
                "partition_by": "p",
                "sorted_by": "order_id",
            },
        )
    dbt_project.run()
    return dbt_project.schema


def test_spark_hash_tables_join_without_exchange(spark, tables):
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    sql = f"select u.name, o.order_id from {tables}.users_spark u join {tables}.orders_spark o on u.user_id = o.user_id"
    assert _exchanges_under_join(spark, sql) == 0
    assert spark.sql(sql).count() == 20000
    # The same join with bucketing disabled gives the same answer (and shuffles).
    spark.conf.set("spark.sql.sources.bucketing.enabled", "false")
    try:
        assert _exchanges_under_join(spark, sql) == 2
        assert spark.sql(sql).count() == 20000
    finally:
        spark.conf.unset("spark.sql.sources.bucketing.enabled")


def test_spark_hash_aggregation_on_bucket_key_needs_no_exchange(spark, tables):
    plan = plans.executed_plan(spark, f"select user_id, count(*) from {tables}.orders_spark group by user_id")
    assert "Exchange" not in plan


def test_hive_hash_tables_shuffle_in_spark(spark, tables):
    sql = f"select u.name, o.order_id from {tables}.users_hive u join {tables}.orders_hive o on u.user_id = o.user_id"
    assert _exchanges_under_join(spark, sql) == 2
    assert spark.sql(sql).count() == 20000
