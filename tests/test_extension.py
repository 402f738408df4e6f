"""The session extension (sparkbucketing.BucketingExtensions): Hive-hash
tables this package built are read bucketed, so joins, aggregations and
windows on their bucket columns need no Exchange; a plain or Spark-hash side
is shuffled by Hive's hash (never the other way round); every answer equals
the answer of a plan with bucketing off. The package's own runs keep working
with it on."""

from __future__ import annotations

import os
import random
import re

import pytest

from spark_bucketing.checker import Catalog, EngineSettings, analyze_sql
from spark_bucketing.checker.relations import relation_from_live
from spark_bucketing.checker.verify import session_conf, verify
from spark_bucketing.extension import EXTENSION_CLASS, SWITCH
from spark_bucketing.metadata import SparkClient
from tests.support.dbt_project import failure_text
from tests.support.spark import extension_on

ROWS = "range(0, {n}, 1, 5)"
# Keys with NULLs and repeats; a string key; a day partition.
FACT = (
    "select case when id % 17 = 0 then null else cast(id % {keys} as int) end as k, concat('s', id % 7) as s,"
    " cast(id % 3 as string) as p, id as v from range(0, {n}, 1, 5)"
)
TABLES = {
    "h8": (FACT.format(keys=300, n=6000), {"bucket_hash": "hive", "buckets": 8, "partition_by": "p"}),
    "h8b": (FACT.format(keys=500, n=3000), {"bucket_hash": "hive", "buckets": 8}),
    "h8o": (
        FACT.format(keys=400, n=2000),
        {"bucket_hash": "hive", "buckets": 8, "file_format": "orc", "sorted_by": "v"},
    ),
    "h4": (FACT.format(keys=200, n=2000), {"bucket_hash": "hive", "buckets": 4}),
    "hks": (FACT.format(keys=250, n=2000), {"bucket_hash": "hive", "buckets": 8, "clustered_by": ["k", "s"]}),
    "s8": (FACT.format(keys=350, n=3000), {"bucket_hash": "spark", "buckets": 8}),
}
PLAIN = FACT.format(keys=450, n=2500)


@pytest.fixture(scope="module")
def tables(spark, dbt_project):
    for name, (sql, config) in TABLES.items():
        dbt_project.write_model(name, sql, {"materialized": "bucketed_table", "clustered_by": "k", **config})
    dbt_project.write_model("plain", PLAIN, {"materialized": "table", "file_format": "parquet"})
    with extension_on(spark):
        dbt_project.run()
    return dbt_project.schema


def exchanges(spark, sql: str) -> int:
    """Exchange nodes (a reused one counts) in the plan Spark runs; adaptive
    execution off, so the plan is final before it runs."""
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        plan = spark.sql(sql)._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    return sum(bool(re.match(r"^[\s:+-]*(\*\(\d+\) )?(Reused)?Exchange\b", line)) for line in plan.splitlines())


def rows(spark, sql: str) -> list:
    return sorted((tuple(r) for r in spark.sql(sql).collect()), key=repr)


def reference_rows(spark, sql: str) -> list:
    """The answer with the extension off and bucketing off: every side shuffled by Spark."""
    spark.conf.set("spark.sql.sources.bucketing.enabled", "false")
    try:
        with extension_on(spark, False):
            return rows(spark, sql)
    finally:
        spark.conf.unset("spark.sql.sources.bucketing.enabled")


# (query, Exchanges with the extension on, Exchanges with it off). {t} is the schema.
PLANS = {
    "hive join hive, same count": ("select a.v, b.v from {t}.h8 a join {t}.h8b b on a.k = b.k", 0, 2),
    "hive join hive, parquet and orc": ("select a.v, b.v from {t}.h8 a join {t}.h8o b on a.k = b.k", 0, 2),
    "group by the bucket column": ("select k, count(*), sum(v) from {t}.h8 group by k", 0, 1),
    "window by the bucket column": ("select k, v, row_number() over (partition by k order by v) from {t}.h8o", 0, 1),
    "two bucket columns": ("select a.v, b.v from {t}.hks a join {t}.hks b on a.k = b.k and a.s = b.s", 0, 2),
    "hive join plain: plain side shuffled": ("select a.v, b.v from {t}.h8 a join {t}.plain b on a.k = b.k", 1, 2),
    "hive join spark hash: one side shuffled": ("select a.v, b.v from {t}.h8 a join {t}.s8 b on a.k = b.k", 1, 1),
    "three-way join, one plain side": (
        "select a.v, c.v from {t}.h8 a join {t}.h8b b on a.k = b.k left join {t}.plain c on b.k = c.k",
        1,
        3,
    ),
    "partition filter": ("select a.v, b.v from {t}.h8 a join {t}.h8b b on a.k = b.k where a.p = '1'", 0, 2),
    "join on a non-bucket column": ("select a.v, b.v from {t}.h8 a join {t}.h8b b on a.v = b.v", 2, 2),
}


@pytest.mark.parametrize("case", list(PLANS))
def test_plans_with_the_extension_on_and_off(spark, tables, case):
    template, on, off = PLANS[case]
    sql = template.format(t=tables)
    with extension_on(spark):
        assert exchanges(spark, sql) == on
        got = rows(spark, sql)
    with extension_on(spark, False):
        assert exchanges(spark, sql) == off
    assert got == reference_rows(spark, sql)


# Checker cases beyond PLANS: (query, Spark settings).
CHECKER_EXTRA = {
    "hive 8 vs hive 4, coalescing on": (
        "select a.v, b.v from {t}.h8 a join {t}.h4 b on a.k = b.k",
        {"spark.sql.bucketing.coalesceBucketsInJoin.enabled": "true"},
    ),
    "spark hash joined with hive": ("select a.v, b.v from {t}.s8 a join {t}.h8b b on a.k = b.k", {}),
    "aggregate of a hive join": (
        "select a.k, count(*) from {t}.h8 a join {t}.plain b on a.k = b.k group by a.k",
        {},
    ),
    "lookup on a hive table": ("select * from {t}.h8b where k = 7", {}),
}


@pytest.mark.parametrize("on", [True, False], ids=["extension on", "extension off"])
def test_the_checker_models_the_extension(spark, tables, on):
    """`spark-bucketing check --extension` (or the extension in the session's
    spark.sql.extensions) agrees with the plans, side by side, operator by operator."""
    client = SparkClient(spark)
    catalog = Catalog()
    for name in [*TABLES, "plain"]:
        catalog.add(relation_from_live(client, f"{tables}.{name}"))
    # As the session has them: the extension loaded, switched off for the "off" side.
    conf = {"spark.sql.shuffle.partitions": spark.conf.get("spark.sql.shuffle.partitions")}
    conf["spark.sql.extensions"] = EXTENSION_CLASS
    if not on:
        conf[SWITCH] = "false"
    cases = {**{k: (q, {}) for k, (q, _, _) in PLANS.items()}, **CHECKER_EXTRA}
    judged = 0
    with extension_on(spark, on):
        for case, (template, extra) in cases.items():
            sql = template.format(t=tables)
            findings = analyze_sql(sql, catalog, EngineSettings("spark", {**conf, **extra}))
            with session_conf(client, extra):
                results = verify(client, sql, findings)
            report = [
                (f.kind, [(s.relation, s.shuffle, s.reasons) for s in f.sides], r)
                for f, r in zip(findings, results, strict=True)
            ]
            assert findings and all(r["matched"] for r in results), (case, report)
            judged += len(findings)
            lookups = [f for f in findings if f.kind == "lookup"]
            if lookups:
                # The extension reads every bucket of a Hive-hash table for a filter; stock Spark too (unbucketed).
                assert lookups[0].buckets_read == 8 and lookups[0].sides[0].reasons == (
                    ["HIVE_HASH_NOT_PRUNED_BY_SPARK"] if on else ["HIVE_HASH_NOT_USED_BY_SPARK"]
                )
    assert judged >= len(cases)


def test_the_other_side_is_shuffled_by_hives_hash(spark, tables):
    sql = f"select a.v, b.v from {tables}.h8 a join {tables}.plain b on a.k = b.k"
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        with extension_on(spark):
            plan = spark.sql(sql)._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    assert "Exchange hivehashpartitioning(k#" in plan and ", 8)" in plan, plan
    assert "HiveHashBucketedScan" in plan


def test_a_filter_on_the_bucket_column_reads_every_bucket(spark, tables):
    """Spark prunes buckets by its own hash of the filter's values, which picks
    the wrong buckets of a Hive-hash table (found by the randomized test: the
    NULL keys, in Hive's bucket 0, were lost)."""
    sql = (
        f"select count(*) from {tables}.h8o x left anti join {tables}.hks y on x.k = y.k and x.s = y.s"
        " where x.k in (3, 5, 7) or x.k is null"
    )
    with extension_on(spark):
        plan = spark.sql(sql)._jdf.queryExecution().executedPlan().toString()
        got = rows(spark, sql)
    assert "SelectedBucketsCount: 8 out of 8" in plan, plan
    assert got == reference_rows(spark, sql) and got[0][0] > 0


def test_a_table_with_files_spark_did_not_name_is_read_unbucketed(spark, tables, tmp_path):
    """Hive and Trino name bucket files 000003_0; Spark would read them all as bucket 0."""
    schema = tables
    spark.sql(
        f"create table {schema}.foreign_named (k int, v bigint) clustered by (k) into 8 buckets stored as parquet"
        f" location '{tmp_path / 'foreign'}' tblproperties ('spark_bucketing.format_version' = '1')"
    )
    spark.sql(f"insert into {schema}.foreign_named select cast(id % 50 as int), id from range(100)")
    folder = tmp_path / "foreign"
    for f in folder.iterdir():
        if f.name.startswith("0000") and "_part-" in f.name:
            f.rename(folder / (f.name.split("_part-")[0] + "_0"))
    spark.sql(f"refresh table {schema}.foreign_named")
    sql = f"select a.k, count(*) from {schema}.foreign_named a join {schema}.h8b b on a.k = b.k group by a.k"
    with extension_on(spark):
        plan = spark.sql(sql)._jdf.queryExecution().executedPlan().toString()
        got = rows(spark, sql)
    assert "FileScan parquet " + f"spark_catalog.{schema}.foreign_named" in plan
    assert plan.count("HiveHashBucketedScan") == 1, plan  # only h8b
    assert got == reference_rows(spark, sql)


def test_package_runs_and_tests_work_with_the_extension_on(spark, tables, dbt_project):
    """Builds, incremental runs, merges and the package's dbt tests, all with the extension on."""
    name = "ext_incremental"
    sql = (
        "select cast(id as int) as k, cast(id % 4 as string) as p, concat('r{{ var(\"run\", 0) }}-', id) as v"
        " from range({{ var('start', 0) }}, {{ var('start', 0) }} + 200)"
    )
    for strategy in ("insert_overwrite", "append", "merge"):
        config = {
            "materialized": "bucketed_incremental",
            "clustered_by": "k",
            "buckets": 8,
            "bucket_hash": "hive",
            "partition_by": "p",
            "incremental_strategy": strategy,
            **({"unique_key": ["k", "p"]} if strategy == "merge" else {}),
        }
        dbt_project.write_model(f"{name}_{strategy}", sql, config)
        with extension_on(spark):
            for start in (0, 100):
                result = dbt_project.run(f"{name}_{strategy}", extra=("--vars", f"{{start: {start}}}"))
                assert result.success, failure_text(result)
            result = dbt_project.test_model(
                f"{name}_{strategy}", "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata"
            )
            assert result.success, failure_text(result)
        count = spark.sql(f"select count(*) from {tables}.{name}_{strategy}").first()[0]
        # The second run's rows touch every partition: insert_overwrite replaces them, append adds, merge upserts.
        assert count == {"insert_overwrite": 200, "append": 400, "merge": 300}[strategy]


def random_query(rng: random.Random, t: str) -> str:
    """A query over two or three of the tables: joins of every kind on bucket
    or other columns, filters on partitions and keys, aggregates, unions."""
    names = [*TABLES, "plain"]
    a, b, c = rng.sample(names, 3)
    on = rng.choice(["x.k = y.k", "x.k = y.k", "x.k = y.k", "x.k = y.k and x.s = y.s", "x.v = y.v"])
    kind = rng.choice(["join", "left join", "right join", "full join", "left semi join", "left anti join"])
    where = rng.choice(
        ["", "where x.k < 120", "where x.p = '1'", "where x.k in (3, 5, 7) or x.k is null", "where x.s <> 's3'"]
    )

    shape = rng.randrange(5)
    if kind in ("left semi join", "left anti join"):
        body = f"from {t}.{a} x {kind} {t}.{b} y on {on} {where}"
        cols = "x.k, x.v"
    else:
        body = f"from {t}.{a} x {kind} {t}.{b} y on {on}"
        if rng.random() < 0.4:
            body += f" {rng.choice(['join', 'left join', 'full join'])} {t}.{c} z on y.k = z.k"
        body += f" {where}"
        cols = "x.k, y.k, x.v, y.v"
    if shape == 0:  # every row, as a count and an order-free checksum
        return f"select count(*), sum(hash({cols})) {body}"
    if shape == 1:
        return f"select x.k, count(*), sum(x.v) {body} group by x.k"
    if shape == 2:
        return f"select count(*), count(distinct x.k) {body}"
    if shape == 3:
        return (
            f"select k, count(*), max(v) from (select k, v from {t}.{a} union all select k, v from {t}.{b}) u"
            f" where k is not null group by k"
        )
    return f"select k, v, rank() over (partition by k order by v) from {t}.{a} where k < 60"


def test_randomized_queries_answer_as_unbucketed_plans(spark, tables):
    seed = int(os.environ.get("SB_SEED", random.randrange(1 << 30)))
    print(f"SB_SEED={seed}")
    rng = random.Random(seed)
    for i in range(200):
        sql = random_query(rng, tables)
        with extension_on(spark):
            got = rows(spark, sql)
        assert got == reference_rows(spark, sql), f"SB_SEED={seed}, query {i}: {sql}"
