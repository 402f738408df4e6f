"""The tables the extension tests read: Hive-hash tables this package built
(Parquet, ORC, partitioned, 4, 6, 8 and 64 buckets, two bucket columns,
sorted by the bucket column), Hive bucketing v2 tables (4, 8 and 32
buckets, one on a double key), Spark-hash tables (4, 8 and 64 buckets,
sorted and not), evolving tables of both hash families
and a plain one; and the answer of a query with bucketing and the extension
off, every side shuffled by Spark."""

from __future__ import annotations

from harness.spark import extension_on, session_settings
from tests.support.incremental import run_model

ROWS = "range(0, {n}, 1, 5)"
# Keys with NULLs, repeats and negative values; a string key; a day partition.
FACT = (
    "select case when id % 17 = 0 then null else cast(id % {keys} as int) - 40 end as k, concat('s', id % 7) as s,"
    " cast(id % 3 as string) as p, id as v from range(0, {n}, 1, 5)"
)
HIVE_V2 = {"bucket_hash": "hive", "bucketing_version": 2}
TABLES = {
    "h8": (FACT.format(keys=300, n=6000), {"bucket_hash": "hive", "buckets": 8, "partition_by": "p"}),
    "h8b": (FACT.format(keys=500, n=3000), {"bucket_hash": "hive", "buckets": 8}),
    "h8o": (
        FACT.format(keys=400, n=2000),
        {"bucket_hash": "hive", "buckets": 8, "file_format": "orc", "sorted_by": "v"},
    ),
    "h4": (FACT.format(keys=200, n=2000), {"bucket_hash": "hive", "buckets": 4}),
    "hks": (FACT.format(keys=250, n=2000), {"bucket_hash": "hive", "buckets": 8, "clustered_by": ["k", "s"]}),
    "h6": (FACT.format(keys=220, n=1800), {"bucket_hash": "hive", "buckets": 6}),
    "s8": (FACT.format(keys=350, n=3000), {"bucket_hash": "spark", "buckets": 8}),
    # Sorted by the bucket column: one partition of h8s, or s8s, is one sorted file per bucket.
    "h8s": (
        FACT.format(keys=300, n=3000),
        {"bucket_hash": "hive", "buckets": 8, "partition_by": "p", "sorted_by": ["k", "v"]},
    ),
    "s8s": (FACT.format(keys=350, n=2000), {"bucket_hash": "spark", "buckets": 8, "sorted_by": ["k"]}),
    "s4": (FACT.format(keys=150, n=1500), {"bucket_hash": "spark", "buckets": 4}),
    # 64 buckets: 16 and 8 times the 4- and 8-bucket tables' counts, past the coalescing ratio.
    "h64": (FACT.format(keys=600, n=6000), {"bucket_hash": "hive", "buckets": 64}),
    "s64": (FACT.format(keys=640, n=6000), {"bucket_hash": "spark", "buckets": 64, "sorted_by": ["k"]}),
    # Hive's bucketing v2 (the extension's write): partitioned and sorted, 8, 4 and 32 buckets.
    "v8": (FACT.format(keys=300, n=4000), {**HIVE_V2, "buckets": 8, "partition_by": "p", "sorted_by": ["k"]}),
    "v8b": (FACT.format(keys=500, n=2500), {**HIVE_V2, "buckets": 8}),
    "v4": (FACT.format(keys=200, n=1500), {**HIVE_V2, "buckets": 4}),
    "v32": (FACT.format(keys=600, n=4000), {**HIVE_V2, "buckets": 32}),
    # Bucketed on a double: v2 hashes -0.0 and 0.0 apart, so the extension reads it unbucketed.
    "v8d": (
        f"select cast(k as double) as k, s, p, v from ({FACT.format(keys=60, n=1200)}) f",
        {**HIVE_V2, "buckets": 8},
    ),
}
PLAIN = FACT.format(keys=450, n=2500)
# Evolving tables (tests/support/incremental.py's model: k int, payload, id,
# day): days 2024-01-01 and -02 written with 8 buckets on k, then -03 with 16,
# so the catalog declares them unbucketed. Name -> hash family.
EVOLVING = {"evh": "hive", "evs": "spark", "evhp": "hive", "evv": "hive"}
# Evolving tables whose records are in their partitions' parameters (metadata format 2).
IN_PARTITIONS = {"evhp"}
# Evolving tables of Hive's bucketing v2.
HIVE_V2_EVOLVING = {"evv"}
EVOLVING_RUNS = ({"days": [0, 1], "buckets": 8}, {"days": [2], "buckets": 16, "on_change": "evolve"})


def build_tables(spark, dbt_project) -> str:
    """Builds the tables (extension on) in the project's schema; returns the schema."""
    for name, (sql, config) in TABLES.items():
        dbt_project.write_model(name, sql, {"materialized": "bucketed_table", "clustered_by": "k", **config})
    dbt_project.write_model("plain", PLAIN, {"materialized": "table", "file_format": "parquet"})
    with extension_on(spark):
        dbt_project.run()
        for name, family in EVOLVING.items():
            for run in EVOLVING_RUNS:
                spec = {
                    "bucket_hash": family,
                    "bucketing_version": 2 if name in HIVE_V2_EVOLVING else 1,
                    "bucket_records": "partition_parameters" if name in IN_PARTITIONS else "table_properties",
                }
                run_model(dbt_project, name, {**spec, "rows": 400, **run})
    return dbt_project.schema


def rows(spark, sql: str) -> list:
    return sorted_rows(spark.sql(sql))


def sorted_rows(df) -> list:
    """A DataFrame's rows as tuples, in an order that does not depend on the plan."""
    return sorted((tuple(r) for r in df.collect()), key=repr)


def reference_rows(spark, sql: str) -> list:
    """The answer with the extension off and bucketing off: every side shuffled by Spark."""
    with session_settings(spark, {"spark.sql.sources.bucketing.enabled": "false"}), extension_on(spark, False):
        return rows(spark, sql)
