"""The session extension (sparkbucketing.BucketingExtensions): Hive-hash
tables this package built are read bucketed, so joins, aggregations and
windows on their bucket columns need no Exchange; a plain or Spark-hash side
is shuffled by Hive's hash (never the other way round); every answer equals
the answer of a plan with bucketing off. The package's own runs keep working
with it on."""

from __future__ import annotations

import json
import os
import random

import pytest

from harness.dbt_project import failure_text, with_vars
from harness.spark import extension_on, session_settings
from spark_bucketing import hashing, plans
from spark_bucketing.checker import Catalog, EngineSettings, analyze_sql
from spark_bucketing.checker.engines import SPARK_VERSION
from spark_bucketing.checker.relations import relation_from_live
from spark_bucketing.checker.verify import session_conf, verify
from spark_bucketing.contracts import CLONE_RATIO_SETTING, MERGED_FILES_SETTING, SUPERSET_KEYS_SWITCH
from spark_bucketing.extension import EXTENSION_CLASS, SWITCH
from spark_bucketing.metadata import SparkClient
from tests.support.extension_tables import EVOLVING as EVOLVING_TABLES
from tests.support.extension_tables import TABLES, build_tables, reference_rows, rows, sorted_rows
from tests.support.random_queries import (
    EVOLVING_SCAN,
    HIVE_V2_SCAN,
    kept_union,
    random_query,
)


@pytest.fixture(scope="module")
def tables(spark, dbt_project):
    return build_tables(spark, dbt_project)


def exchanges(spark, sql: str, adaptive: bool = False, **conf: str) -> int:
    """Exchange nodes (a reused one counts) in the plan Spark runs: adaptive
    execution off, so the plan is final before it runs, or on, the plan it
    starts from (before any stage runs)."""
    return plans.exchanges(
        plans.executed_plan(spark, sql, **{"spark.sql.adaptive.enabled": str(adaptive).lower(), **conf})
    )


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
    assert_plans(spark, template.format(t=tables), on, off)


def assert_plans(spark, sql: str, on: int, off: int) -> None:
    """`sql` plans `on` Exchanges with the extension on, `off` with it off,
    and answers as the plan with bucketing off."""
    with extension_on(spark):
        assert exchanges(spark, sql) == on
        got = rows(spark, sql)
    with extension_on(spark, False):
        assert exchanges(spark, sql) == off
    assert got == reference_rows(spark, sql)


# Evolving tables (extension_tables.EVOLVING): days -01 and -02 on 8 buckets,
# -03 on 16. (query, Exchanges on, Exchanges off).
ONE_SPEC = "{a}.day <= '2024-01-02'"
EVOLVING = {
    "evolving hive: days on one spec": (
        "select a.id, b.v from {t}.evh a join {t}.h8b b on a.k = b.k where " + ONE_SPEC.format(a="a"),
        0,
        2,
    ),
    "evolving spark: days on one spec": (
        "select a.id, b.v from {t}.evs a join {t}.s8 b on a.k = b.k where " + ONE_SPEC.format(a="a"),
        0,
        1,
    ),
    "evolving spark: the 16-bucket day with itself": (
        "select a.id, b.id from {t}.evs a join {t}.evs b on a.k = b.k"
        " where a.day = '2024-01-03' and b.day = '2024-01-03'",
        0,
        2,
    ),
    "evolving spark: group by on one day": (
        "select k, count(*), sum(id) from {t}.evs where day = '2024-01-03' group by k",
        0,
        1,
    ),
    "evolving hive, records in partitions: days on one spec": (
        "select a.id, b.v from {t}.evhp a join {t}.h8b b on a.k = b.k where " + ONE_SPEC.format(a="a"),
        0,
        2,
    ),
    "evolving hive, records in partitions: days that disagree, read unbucketed": (
        "select a.id, b.v from {t}.evhp a join {t}.h8b b on a.k = b.k",
        1,
        2,
    ),
    "evolving hive: days that disagree, read unbucketed": (
        "select a.id, b.v from {t}.evh a join {t}.h8b b on a.k = b.k",
        1,
        2,
    ),
    "evolving hive v2: days on one spec": (
        "select a.id, b.v from {t}.evv a join {t}.v8b b on a.k = b.k where " + ONE_SPEC.format(a="a"),
        0,
        2,
    ),
    "evolving hive v2: the 16-bucket day with itself": (
        "select a.id, b.id from {t}.evv a join {t}.evv b on a.k = b.k"
        " where a.day = '2024-01-03' and b.day = '2024-01-03'",
        0,
        2,
    ),
    "evolving hive v2 and evolving hive v1: the hashes differ": (
        "select a.id, b.id from {t}.evv a join {t}.evh b on a.k = b.k where "
        + ONE_SPEC.format(a="a")
        + " and "
        + ONE_SPEC.format(a="b"),
        1,
        2,
    ),
    "evolving hive and evolving spark: the hashes differ": (
        "select a.id, b.id from {t}.evh a join {t}.evs b on a.k = b.k where "
        + ONE_SPEC.format(a="a")
        + " and "
        + ONE_SPEC.format(a="b"),
        1,
        2,
    ),
}


@pytest.mark.parametrize("case", list(EVOLVING))
def test_evolving_tables_read_by_the_spec_the_selected_partitions_share(spark, tables, case):
    template, on, off = EVOLVING[case]
    assert_plans(spark, template.format(t=tables), on, off)


@pytest.mark.parametrize("field", ["location", "files"])
def test_a_record_that_does_not_describe_the_files_is_not_trusted(spark, tables, field):
    """A partition's record counts only for the folder and the file count it
    names (a write switches a partition's folder before it records it): else
    the table is read unbucketed, as stock Spark reads it."""
    sql = EVOLVING["evolving spark: days on one spec"][0].format(t=tables)
    key = "spark_bucketing.partition.day=2024-01-01"
    (record,) = [r.value for r in spark.sql(f"show tblproperties {tables}.evs ('{key}')").collect()]
    stale = json.loads(record)
    stale[field] = stale[field] + "/elsewhere" if field == "location" else stale[field] + 1
    try:
        spark.sql(f"alter table {tables}.evs set tblproperties ('{key}' = '{json.dumps(stale)}')")
        with extension_on(spark):
            assert exchanges(spark, sql) == 1
            got = rows(spark, sql)
    finally:
        spark.sql(f"alter table {tables}.evs set tblproperties ('{key}' = '{record}')")
    with extension_on(spark):
        assert exchanges(spark, sql) == 0
    assert got == reference_rows(spark, sql)


RATIO = "spark.sql.bucketing.coalesceBucketsInJoin.maxBucketRatio"
# Bucket counts with a common divisor g: with adaptive execution (Spark's
# default) the extension reads both sides in g tasks. (query, settings,
# Exchanges on, Exchanges off), adaptive execution on unless the settings say.
COALESCED = {
    "hive 8 and hive 4": ("select a.v, b.v from {t}.h8 a join {t}.h4 b on a.k = b.k", {}, 0, 2),
    "hive 6 and hive 8: gcd 2": ("select a.v, b.v from {t}.h6 a join {t}.h8b b on a.k = b.k", {}, 0, 2),
    "spark 8 and spark 4": ("select a.v, b.v from {t}.s8 a join {t}.s4 b on a.k = b.k", {}, 0, 1),
    "three-way: hive 8, 4 and 8": (
        "select a.v, c.v from {t}.h8 a join {t}.h4 b on a.k = b.k join {t}.h8b c on b.k = c.k",
        {},
        1,
        3,
    ),
    # A full join's output is placed by neither side's keys: the third table's join shuffles it.
    "three-way outer: hive 6, 8 and 4": (
        "select a.v, c.v from {t}.h6 a full join {t}.h8b b on a.k = b.k left join {t}.h4 c on a.k = c.k",
        {},
        1,
        4,
    ),
    # Joined on more than the bucket keys with the superset rule off, Spark
    # still shuffles both sides (and so the third join's): an Exchange lands
    # right above the scan the rule coalesced, which must keep its logical
    # link for adaptive execution (found by the randomized test, SB_SEED=190617783).
    "spark 8 and 4 on more than the bucket keys, then a plain table": (
        "select count(*), sum(hash(x.k, y.k, x.v, y.v)) from {t}.s8 x full join {t}.s4 y"
        " on x.k = y.k and x.s = y.s join {t}.plain z on y.k = z.k",
        {SUPERSET_KEYS_SWITCH: "false"},
        5,
        5,
    ),
    "hive 8 and spark 4: the hashes differ": ("select a.v, b.v from {t}.h8 a join {t}.s4 b on a.k = b.k", {}, 1, 1),
    # Past the ratio, with cloning off (CLONED has it on): the smaller side is shuffled.
    "ratio past the limit": (
        "select a.v, b.v from {t}.h8 a join {t}.h4 b on a.k = b.k",
        {RATIO: "1", CLONE_RATIO_SETTING: "1"},
        1,
        2,
    ),
    "adaptive execution off": (
        "select a.v, b.v from {t}.h8 a join {t}.h4 b on a.k = b.k",
        {"spark.sql.adaptive.enabled": "false"},
        1,
        2,
    ),
}


# Join keys that contain both sides' bucket columns: two package tables read
# bucketed and co-partitioned keep both sides (SupersetKeyJoins, adaptive
# execution); stock Spark shuffles both by all the keys. (query, settings,
# (Exchanges, Sorts) on, (Exchanges, Sorts) off).
SUPERSET = {
    "hive 8 and hive 8 on k and s": (
        "select a.v, b.v from {t}.h8 a join {t}.h8b b on a.k = b.k and a.s = b.s",
        {},
        (0, 2),
        (2, 2),
    ),
    "spark 8 with itself on k and v": (
        "select a.s, b.s from {t}.s8 a join {t}.s8 b on a.v = b.v and a.k = b.k",
        {},
        (0, 2),
        (2, 2),
    ),
    "two bucket columns and one more": (
        "select a.v, b.v from {t}.hks a join {t}.hks b on a.k = b.k and a.s = b.s and a.p = b.p",
        {},
        (0, 2),
        (2, 2),
    ),
    "full join on k and s": (
        "select a.v, b.v from {t}.h8 a full join {t}.h8o b on a.k = b.k and a.s = b.s",
        {},
        (0, 2),
        (2, 2),
    ),
    "left anti join on k and s": (
        "select a.v from {t}.h8o a left anti join {t}.h8b b on a.k = b.k and a.s = b.s",
        {},
        (0, 2),
        (2, 2),
    ),
    # The join's output stays placed by k: the aggregation on k needs no Exchange either.
    "group by k over the join": (
        "select a.k, count(*) from {t}.h8 a join {t}.h8b b on a.k = b.k and a.s = b.s group by a.k",
        {},
        (0, 2),
        (3, 2),
    ),
    "spark 8 and 4 on k and s: coalesced, then kept": (
        "select a.v, b.v from {t}.s8 a join {t}.s4 b on a.k = b.k and a.s = b.s",
        {},
        (0, 2),
        (2, 2),
    ),
    "evolving spark, days on one spec, with spark 8": (
        "select a.id, b.v from {t}.evs a join {t}.s8 b on a.k = b.k and a.payload = b.s where "
        + ONE_SPEC.format(a="a"),
        {},
        (0, 2),
        (2, 2),
    ),
    # Only two package tables: a plain side, or a side of the other hash, shuffles as in stock Spark.
    "hive 8 and a plain table": (
        "select a.v, b.v from {t}.h8 a join {t}.plain b on a.k = b.k and a.s = b.s",
        {},
        (2, 2),
        (2, 2),
    ),
    "hive 8 and spark 8": (
        "select a.v, b.v from {t}.h8 a join {t}.s8 b on a.k = b.k and a.s = b.s",
        {},
        (2, 2),
        (2, 2),
    ),
    "switched off": (
        "select a.v, b.v from {t}.h8 a join {t}.h8b b on a.k = b.k and a.s = b.s",
        {SUPERSET_KEYS_SWITCH: "false"},
        (2, 2),
        (2, 2),
    ),
    "adaptive execution off": (
        "select a.v, b.v from {t}.h8 a join {t}.h8b b on a.k = b.k and a.s = b.s",
        {"spark.sql.adaptive.enabled": "false"},
        (2, 2),
        (2, 2),
    ),
}


# UNION ALL of package tables with one placement, grouped or joined on the
# bucket column (BucketedUnions; Hive's placement compares semantically).
# (query, settings, (Exchanges, Sorts) on, (Exchanges, Sorts) off).
UNION_OF = "(select k, v from %s union all select k, v from %s) u"
EVS_ONE_SPEC = "(select k, id as v from {t}.evs where " + ONE_SPEC.format(a="evs") + ")"
UNIONS = {
    "hive 8 and hive 8, group by k": (
        "select k, count(*) from " + UNION_OF % ("{t}.h8", "{t}.h8b") + " group by k",
        {},
        (0, 0),
        (1, 0),
    ),
    "hive 8 and hive 8, joined with hive 8 on k": (
        "select u.k, count(*) from " + UNION_OF % ("{t}.h8", "{t}.h8b") + " join {t}.h8o o on u.k = o.k group by u.k",
        {},
        (0, 2),
        (2, 2),
    ),
    "hive, adaptive execution off": (
        "select k, count(*) from " + UNION_OF % ("{t}.h8", "{t}.h8b") + " group by k",
        {"spark.sql.adaptive.enabled": "false"},
        (0, 0),
        (1, 0),
    ),
    # Spark compares its own placements with the columns' qualifiers: a projection of a partitioned table first.
    "spark: an evolving table's days on one spec and spark 8, group by k": (
        "select k, count(*) from " + UNION_OF % (EVS_ONE_SPEC, "{t}.s8") + " group by k",
        {},
        (0, 0),
        (1, 0),
    ),
    "spark: the same, joined with spark 8 on k": (
        "select u.k, u.v, s.v from " + UNION_OF % ("{t}.s8", EVS_ONE_SPEC) + " join {t}.s8 s on u.k = s.k",
        {},
        (0, 2),
        (1, 2),
    ),
    "spark, adaptive execution off": (
        "select k, count(*) from " + UNION_OF % (EVS_ONE_SPEC, "{t}.s8") + " group by k",
        {"spark.sql.adaptive.enabled": "false"},
        (1, 0),
        (1, 0),
    ),
    "hive 8 and hive 4: two counts": (
        "select k, count(*) from " + UNION_OF % ("{t}.h8", "{t}.h4") + " group by k",
        {},
        (1, 0),
        (1, 0),
    ),
    "hive 8 and spark 8: two hashes": (
        "select k, count(*) from " + UNION_OF % ("{t}.h8", "{t}.s8") + " group by k",
        {},
        (1, 0),
        (1, 0),
    ),
    "the bucket column at another position": (
        "select a, count(*) from (select k as a, cast(v as int) as b from {t}.h8"
        " union all select cast(v as int), k from {t}.h8b) u group by a",
        {},
        (1, 0),
        (1, 0),
    ),
}


# Package tables sorted by the bucket column (SortedBuckets): a sort-merge
# join skips the Sort of a side whose every selected bucket is one file.
# (query, settings, (Exchanges, Sorts) on, (Exchanges, Sorts) off).
ONE_DAY = " where a.p = '1' and b.p = '1'"
# Merging a bucket's sorted files, off by default.
MERGE_ON = {MERGED_FILES_SETTING: "16"}
SORTED = {
    "hive sorted, one partition each side": (
        "select a.v, b.v from {t}.h8s a join {t}.h8s b on a.k = b.k" + ONE_DAY,
        {},
        (0, 0),
        (2, 2),
    ),
    # Three partitions: each bucket is three sorted files. Merging them is off by default (the Sort measured
    # faster); on, each task reads its bucket's files side by side and merges them.
    "hive sorted, every partition: several files a bucket": (
        "select a.v, b.v from {t}.h8s a join {t}.h8s b on a.k = b.k",
        {},
        (0, 2),
        (2, 2),
    ),
    "hive sorted, every partition, merged": (
        "select a.v, b.v from {t}.h8s a join {t}.h8s b on a.k = b.k",
        MERGE_ON,
        (0, 0),
        (2, 2),
    ),
    "hive sorted, more files a bucket than the merge takes": (
        "select a.v, b.v from {t}.h8s a full join {t}.h8s b on a.k = b.k",
        {MERGED_FILES_SETTING: "2"},
        (0, 2),
        (2, 2),
    ),
    "hive sorted, two partitions each side, a left join, merged": (
        "select a.v, b.v from {t}.h8s a left join {t}.h8s b on a.k = b.k where a.p <> '1' and b.p <> '2'",
        MERGE_ON,
        (0, 0),
        (2, 2),
    ),
    # input_file_name() names the file a task opened last: with a bucket's files read side by side, not merged.
    "hive sorted, every partition, the file names asked": (
        "select a.v, b.f from {t}.h8s a join (select k, input_file_name() as f from {t}.h8s) b on a.k = b.k",
        MERGE_ON,
        (0, 2),
        (2, 2),
    ),
    "hive sorted by (k, v), joined on both": (
        "select a.s, b.s from {t}.h8s a join {t}.h8s b on a.k = b.k and a.v = b.v" + ONE_DAY,
        {},
        (0, 0),
        (2, 2),
    ),
    "spark sorted with itself, a full join": (
        "select a.v, b.v from {t}.s8s a full join {t}.s8s b on a.k = b.k",
        {},
        (0, 0),
        (0, 2),
    ),
    "spark sorted and spark unsorted": (
        "select a.v, b.v from {t}.s8s a join {t}.s8 b on a.k = b.k",
        {},
        (0, 1),
        (0, 2),
    ),
    "spark sorted 8 and spark 4: coalesced, so sorted again": (
        "select a.v, b.v from {t}.s8s a join {t}.s4 b on a.k = b.k",
        {},
        (0, 2),
        (1, 2),
    ),
    "sorted on another column": ("select a.s, b.s from {t}.h8o a join {t}.h8o b on a.k = b.k", {}, (0, 2), (2, 2)),
    "adaptive execution off": (
        "select a.v, b.v from {t}.s8s a join {t}.s8s b on a.k = b.k",
        {"spark.sql.adaptive.enabled": "false"},
        (0, 2),
        (0, 2),
    ),
}


@pytest.mark.parametrize("case", list(SORTED))
def test_sorted_package_tables_skip_the_sort(spark, tables, case):
    assert_exchanges_and_sorts(spark, tables, *SORTED[case])


def test_a_buckets_files_are_merged_only_where_an_order_is_asked(spark, tables):
    """A merge gives up the scan's columnar batches: a plain read or a hash
    aggregation of a sorted table across partitions reads it as stock Spark does."""
    with extension_on(spark):
        scan = plans.executed_plan(spark, f"select k, v from {tables}.h8s", **MERGE_ON)
        grouped = plans.executed_plan(spark, f"select k, count(*) from {tables}.h8s group by k", **MERGE_ON)
        joined = plans.executed_plan(
            spark, f"select a.v from {tables}.h8s a join {tables}.h8s b on a.k = b.k", **MERGE_ON
        )
    assert "MergedSortedBuckets" not in scan and "MergedSortedBuckets" not in grouped, (scan, grouped)
    assert joined.count("MergedSortedBuckets") == 2, joined


def assert_exchanges_and_sorts(spark, tables: str, template: str, conf: dict, on: tuple, off: tuple) -> None:
    """`sql` plans (Exchanges, Sorts) `on` with the extension on and `off`
    with it off, adaptive execution on unless `conf` says, and answers (with
    `conf` set) as the plan with bucketing off."""
    sql = template.format(t=tables)
    conf = {"spark.sql.adaptive.enabled": "true", **conf}
    with extension_on(spark):
        plan = plans.executed_plan(spark, sql, **conf)
        assert (plans.exchanges(plan), plans.sorts(plan)) == on, plan
        with session_settings(spark, conf):
            got = rows(spark, sql)
    with extension_on(spark, False):
        plan = plans.executed_plan(spark, sql, **conf)
        assert (plans.exchanges(plan), plans.sorts(plan)) == off, plan
    assert got == reference_rows(spark, sql)


# Bucket counts past the coalescing ratio, one a multiple of the other (4 or 8
# and 64): the extension reads the smaller side once per bucket of the larger
# and keeps the rows of that bucket (CloneBucketsInJoins); stock Spark
# shuffles the smaller side (both, for Hive-hash tables it reads unbucketed).
# s64 and s8s are sorted by k; the others are not. (query, settings,
# (Exchanges, Sorts) on, (Exchanges, Sorts) off).
CLONED = {
    "hive 64 and hive 4": ("select a.v, b.v from {t}.h64 a join {t}.h4 b on a.k = b.k", {}, (0, 2), (2, 2)),
    # Each row of the smaller side is read in one task only: the outer side's unmatched rows appear once.
    "hive 8 left join hive 64: the smaller side preserved": (
        "select a.v, b.v from {t}.h8b a left join {t}.h64 b on a.k = b.k",
        {},
        (0, 2),
        (2, 2),
    ),
    "spark 64 full join spark 4": (
        "select a.v, b.v from {t}.s64 a full join {t}.s4 b on a.k = b.k",
        {},
        (0, 1),
        (1, 2),
    ),
    "spark 4 right join spark 64": (
        "select a.v, b.v from {t}.s4 a right join {t}.s64 b on a.k = b.k",
        {},
        (0, 1),
        (1, 2),
    ),
    "spark 4 left anti join spark 64": (
        "select a.v from {t}.s4 a left anti join {t}.s64 b on a.k = b.k",
        {},
        (0, 1),
        (1, 2),
    ),
    "spark 4 left semi join spark 64": (
        "select a.v from {t}.s4 a left semi join {t}.s64 b on a.k = b.k",
        {},
        (0, 1),
        (1, 2),
    ),
    # Both sorted by k, each bucket one file: the cloned side keeps its order, so neither sorts.
    "spark 8 sorted and spark 64 sorted: no Sort": (
        "select a.v, b.v from {t}.s8s a join {t}.s64 b on a.k = b.k",
        {},
        (0, 0),
        (1, 2),
    ),
    # The cloned read filters rows where Parquet's reader gives no column batches.
    "rows, not column batches (Parquet's vectorized reader off)": (
        "select a.v, b.v from {t}.s64 a full join {t}.s4 b on a.k = b.k",
        {"spark.sql.parquet.enableVectorizedReader": "false"},
        (0, 1),
        (1, 2),
    ),
    "a shuffled hash join builds on the cloned side": (
        "select /*+ shuffle_hash(b) */ a.v, b.v from {t}.s64 a join {t}.s4 b on a.k = b.k",
        {},
        (0, 0),
        (1, 0),
    ),
    "joined on k and s: cloned, then kept": (
        "select a.v, b.v from {t}.s64 a join {t}.s4 b on a.k = b.k and a.s = b.s",
        {},
        (0, 2),
        (2, 2),
    ),
    # The join's output is placed by Hive's hash into 64: the third table (8 buckets) is shuffled into it.
    "three-way: hive 64, 4 and 8": (
        "select a.v, c.v from {t}.h64 a join {t}.h4 b on a.k = b.k join {t}.h8b c on b.k = c.k",
        {},
        (1, 3),
        (3, 3),
    ),
    "hive 64 and spark 4: the hashes differ": (
        "select a.v, b.v from {t}.h64 a join {t}.s4 b on a.k = b.k",
        {},
        (1, 2),
        (1, 2),
    ),
    "ratio past spark_bucketing.extension.maxCloneRatio": (
        "select a.v, b.v from {t}.s64 a join {t}.s8 b on a.k = b.k",
        {CLONE_RATIO_SETTING: "4"},
        (1, 1),
        (1, 2),
    ),
    "adaptive execution off": (
        "select a.v, b.v from {t}.s64 a join {t}.s4 b on a.k = b.k",
        {"spark.sql.adaptive.enabled": "false"},
        (1, 2),
        (1, 2),
    ),
}


@pytest.mark.parametrize("case", list(CLONED))
def test_bucket_counts_past_the_coalescing_ratio(spark, tables, case):
    assert_exchanges_and_sorts(spark, tables, *CLONED[case])


# Hive bucketing v2 tables (bucketing_version=2, written by the extension):
# read bucketed by v2's placement, never joined with v1's or Spark's without
# a shuffle. (query, settings, (Exchanges, Sorts) on, (Exchanges, Sorts) off).
HIVE_V2 = {
    # v8 is sorted by k in three partitions (merged, where merging is on); v8b is not sorted.
    "v2 join v2": ("select a.v, b.v from {t}.v8 a join {t}.v8b b on a.k = b.k", {}, (0, 2), (2, 2)),
    "v2 full join v2, merged": (
        "select a.v, b.v from {t}.v8 a full join {t}.v8b b on a.k = b.k",
        MERGE_ON,
        (0, 1),
        (2, 2),
    ),
    "v2 one partition each side, sorted by k": (
        "select a.v, b.v from {t}.v8 a join {t}.v8 b on a.k = b.k" + ONE_DAY,
        {},
        (0, 0),
        (2, 2),
    ),
    "v2 group by the bucket column": ("select k, count(*), sum(v) from {t}.v8b group by k", {}, (0, 0), (1, 0)),
    "v2 join plain: the plain side shuffled by v2": (
        "select a.v, b.v from {t}.v8b a left join {t}.plain b on a.k = b.k",
        {},
        (1, 2),
        (2, 2),
    ),
    "v2 join v1, same count: the hashes differ": (
        "select a.v, b.v from {t}.v8b a join {t}.h8b b on a.k = b.k",
        {},
        (1, 2),
        (2, 2),
    ),
    "v2 join spark hash, same count": ("select a.v, b.v from {t}.v8b a join {t}.s8 b on a.k = b.k", {}, (1, 2), (1, 2)),
    "v2 8 and v2 4: coalesced": ("select a.v, b.v from {t}.v8b a join {t}.v4 b on a.k = b.k", {}, (0, 2), (2, 2)),
    "v2 4 right join v2 32: cloned": (
        "select a.v, b.v from {t}.v4 a right join {t}.v32 b on a.k = b.k",
        {},
        (0, 2),
        (2, 2),
    ),
    "v2 union v2, grouped": (
        "select k, count(*) from " + UNION_OF % ("{t}.v8", "{t}.v8b") + " group by k",
        {},
        (0, 0),
        (1, 0),
    ),
    "v2 on k and s: superset kept": (
        "select a.v, b.v from {t}.v8 a join {t}.v8b b on a.k = b.k and a.s = b.s",
        {},
        (0, 2),
        (2, 2),
    ),
    # -0.0 and 0.0 are one key to Spark's join and two buckets to v2: read unbucketed, as stock Spark reads it.
    "v2 on a double key: read unbucketed": (
        "select a.v, b.v from {t}.v8d a join {t}.v8d b on a.k = b.k",
        {},
        (2, 2),
        (2, 2),
    ),
}


@pytest.mark.parametrize("case", list(HIVE_V2))
def test_hive_bucketing_v2_tables(spark, tables, case):
    template, conf, on, off = HIVE_V2[case]
    assert_exchanges_and_sorts(spark, tables, template, conf, on_this_spark(spark, case, on), off)


def test_a_v2_table_places_the_other_side_by_v2(spark, tables):
    sql = f"select a.v, b.v from {tables}.v8b a join {tables}.plain b on a.k = b.k"
    with extension_on(spark):
        plan = plans.executed_plan(spark, sql, **{"spark.sql.adaptive.enabled": "false"})
    assert "Exchange hivehashv2partitioning(k#" in plan and ", 8)" in plan, plan


def test_a_join_shuffled_anyway_reads_the_smaller_side_once(spark, tables):
    """Joined on more than the bucket columns with the superset rule off,
    Spark shuffles both sides: cloning the smaller one first would read it 16
    times for nothing, so the plan has no cloned read."""
    sql = CLONED["joined on k and s: cloned, then kept"][0].format(t=tables)
    with extension_on(spark):
        assert "ClonedBuckets 64" in plans.executed_plan(spark, sql)
        plan = plans.executed_plan(spark, sql, **{SUPERSET_KEYS_SWITCH: "false"})
    assert plans.exchanges(plan) == 2 and "ClonedBuckets" not in plan, plan


def unions_keep_placement(spark) -> bool:
    """Spark 4.1+ keeps a union's placement where its children share one (spark.sql.unionOutputPartitioning),
    which BucketedUnions builds on; before 4.1 a union's placement is unknown, so the extension keeps none
    (docs/extension.md, "Spark versions")."""
    return EngineSettings("spark", {SPARK_VERSION: spark.version}).union_output_partitioning


def on_this_spark(spark, case: str, on: tuple) -> tuple:
    """A case's (Exchanges, Sorts) with the extension on, on this Spark: where the extension keeps a union's
    placement (UNION_KEPT), a Spark before 4.1 shuffles the union once more (measured on 4.0.5)."""
    return on if case not in UNION_KEPT or unions_keep_placement(spark) else (on[0] + 1, on[1])


# The union cases whose placement the extension keeps on Spark 4.1+.
UNION_KEPT = {
    "hive 8 and hive 8, group by k",
    "hive 8 and hive 8, joined with hive 8 on k",
    "hive, adaptive execution off",
    "spark: an evolving table's days on one spec and spark 8, group by k",
    "spark: the same, joined with spark 8 on k",
    "v2 union v2, grouped",
}


@pytest.mark.parametrize("case", list(UNIONS))
def test_unions_of_package_tables_keep_their_placement(spark, tables, case):
    template, conf, on, off = UNIONS[case]
    assert_exchanges_and_sorts(spark, tables, template, conf, on_this_spark(spark, case, on), off)


@pytest.mark.parametrize("case", list(COALESCED))
def test_bucket_counts_with_a_common_divisor(spark, tables, case):
    assert_adaptive_plans(spark, tables, *COALESCED[case])


@pytest.mark.parametrize("case", list(SUPERSET))
def test_joins_on_more_than_the_bucket_columns(spark, tables, case):
    assert_exchanges_and_sorts(spark, tables, *SUPERSET[case])


def assert_adaptive_plans(spark, tables: str, template: str, conf: dict, on: int, off: int) -> None:
    """As assert_plans, with adaptive execution on unless `conf` says, and
    `conf` set while each plan is made."""
    sql = template.format(t=tables)
    conf = {"adaptive": conf.get("spark.sql.adaptive.enabled", "true") == "true", **conf}
    conf.pop("spark.sql.adaptive.enabled", None)
    with extension_on(spark):
        assert exchanges(spark, sql, **conf) == on
        got = rows(spark, sql)
    with extension_on(spark, False):
        assert exchanges(spark, sql, **conf) == off
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
    "lookup on two hive bucket columns": ("select * from {t}.hks where k = 7 and s = 's3'", {}),
    "lookup on one of two bucket columns": ("select * from {t}.hks where k = 7", {}),
    "lookup, or of keys, hive v2": ("select * from {t}.v8b where k = 7 or k in (1, -2) or k is null", {}),
    "lookup, literal first, spark hash": ("select * from {t}.s8 where 7 = k", {}),
    "lookup, or with another column": ("select * from {t}.h8b where k = 7 or v = 3", {}),
    "keys a superset of the bucket columns": (
        "select a.v, b.v from {t}.h8 a join {t}.h8b b on a.k = b.k and a.s = b.s",
        {},
    ),
    "superset, require-all off": (
        "select a.v, b.v from {t}.h8 a join {t}.h8b b on a.k = b.k and a.s = b.s",
        {"spark.sql.requireAllClusterKeysForCoPartition": "false"},
    ),
}


@pytest.mark.parametrize("on", [True, False], ids=["extension on", "extension off"])
def test_the_checker_models_the_extension(spark, tables, on):
    """`spark-bucketing check --extension` (or the extension in the session's
    spark.sql.extensions) agrees with the plans, side by side, operator by operator."""
    client = SparkClient(spark)
    catalog = Catalog()
    for name in [*TABLES, *EVOLVING_TABLES, "plain"]:
        catalog.add(relation_from_live(client, f"{tables}.{name}"))
    # As the session has them: the extension loaded, switched off for the "off" side; its Spark's version.
    conf = {
        "spark.sql.shuffle.partitions": spark.conf.get("spark.sql.shuffle.partitions"),
        SPARK_VERSION: spark.version,
    }
    conf["spark.sql.extensions"] = EXTENSION_CLASS
    if not on:
        conf[SWITCH] = "false"
    cases = {
        **{k: (q, {}) for k, (q, _, _) in PLANS.items()},
        **{k: (q, {}) for k, (q, _, _) in EVOLVING.items()},
        **{k: (q, c) for k, (q, c, _, _) in COALESCED.items()},
        **{k: (q, c) for k, (q, c, _, _) in SUPERSET.items()},
        **{k: (q, c) for k, (q, c, _, _) in UNIONS.items()},
        **{k: (q, c) for k, (q, c, _, _) in SORTED.items()},
        **{k: (q, c) for k, (q, c, _, _) in CLONED.items()},
        **{k: (q, c) for k, (q, c, _, _) in HIVE_V2.items()},
        **CHECKER_EXTRA,
    }
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
            if lookups and case == "lookup on a hive table":
                # The extension prunes a Hive-hash table by Hive's hash; stock Spark reads it unbucketed.
                assert (lookups[0].buckets_read, lookups[0].sides[0].reasons) == (
                    (1, []) if on else (8, ["HIVE_HASH_NOT_USED_BY_SPARK"])
                )
    assert judged >= len(cases)


def test_the_other_side_is_shuffled_by_hives_hash(spark, tables):
    sql = f"select a.v, b.v from {tables}.h8 a join {tables}.plain b on a.k = b.k"
    with extension_on(spark):
        plan = plans.executed_plan(spark, sql, **{"spark.sql.adaptive.enabled": "false"})
    assert "Exchange hivehashpartitioning(k#" in plan and ", 8)" in plan, plan
    assert "HiveHashBucketedScan" in plan


def test_a_filter_on_the_bucket_column_selects_hives_buckets(spark, tables):
    """The extension prunes a Hive-hash table by Hive's hash of the filter's
    values, NULL in Hive's bucket 0 (Spark's own pruning, by its hash, lost
    the NULL keys: found by the randomized test); tests/test_bucket_pruning.py
    covers every shape and family."""
    sql = (
        f"select count(*) from {tables}.h8o x left anti join {tables}.hks y on x.k = y.k and x.s = y.s"
        " where x.k in (3, 5, 7) or x.k is null"
    )
    with extension_on(spark):
        plan = plans.executed_plan(spark, sql)
        got = rows(spark, sql)
    buckets = {hashing.bucket_id([k], ["int"], 8, "hive") for k in (3, 5, 7, None)}
    assert f"SelectedBucketsCount: {len(buckets)} out of 8" in plan and len(buckets) < 8, plan
    assert got == reference_rows(spark, sql) and got[0][0] > 0


def test_the_parser_passes_spark_sql_through(spark):
    """The extension's parser (BucketingParser, a proxy of Spark's parser interface) answers the package's
    statements and leaves the rest to Spark's: a query with named parameters (Spark's parser entry point for
    them where the version has one), a syntax error raised as Spark's own ParseException (not wrapped by
    the proxy), expressions and types parsed as before."""
    from pyspark.errors import ParseException

    assert spark.sql("select :v + 1 as x, :s as s", args={"v": 41, "s": "a"}).collect() == [(42, "a")]
    assert spark.sql("select ? * 2 as x", args=[21]).collect() == [(42,)]
    with pytest.raises(ParseException, match="PARSE_SYNTAX_ERROR"):
        spark.sql("selec 1")
    assert spark.sql("select cast('7' as decimal(4, 1)) as d").schema.simpleString() == "struct<d:decimal(4,1)>"
    # A package statement that does not parse says so, with the cause (not the proxy's
    # UndeclaredThrowableException, as a checked exception of the JSON parser would be).
    with pytest.raises(Exception, match="spark_bucketing: cannot parse the statement: Unrecognized token 'not'") as e:
        spark.sql("spark_bucketing write folder 'not json' as select 1")
    assert "UndeclaredThrowableException" not in str(e.value)


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
        plan = plans.executed_plan(spark, sql)
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
        with extension_on(spark):
            for start in (0, 100):
                dbt_project.write_model(f"{name}_{strategy}", with_vars(sql, start=start), config)
                result = dbt_project.run(f"{name}_{strategy}")
                assert result.success, failure_text(result)
            result = dbt_project.test_model(
                f"{name}_{strategy}", "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata"
            )
            assert result.success, failure_text(result)
        count = spark.sql(f"select count(*) from {tables}.{name}_{strategy}").first()[0]
        # The second run's rows touch every partition: insert_overwrite replaces them, append adds, merge upserts.
        assert count == {"insert_overwrite": 200, "append": 400, "merge": 300}[strategy]


def test_merges_into_an_evolving_table_with_the_extension_on(spark, tables, dbt_project):
    """A merge reads the partitions it touches, which the extension reads
    bucketed when they share a spec: with the table evolving (p=0 on 8
    buckets, p=100 on 16), merges re-bucket p=0 both ways and upsert its rows;
    the package's tests pass after each run."""
    name = "ext_evolving_merge"
    sql = (
        "select cast(id as int) as k, cast({{ var('start') }} as string) as p,"
        " concat('r{{ var(\"run\") }}-', id) as v from range({{ var('start') }}, {{ var('start') }} + 200)"
    )
    runs = [(0, 8, 1), (100, 16, 2), (0, 8, 3), (0, 16, 4)]  # (start, buckets, run)
    with extension_on(spark):
        for start, buckets, run in runs:
            config = {
                "materialized": "bucketed_incremental",
                "clustered_by": "k",
                "buckets": buckets,
                "bucket_hash": "hive",
                "partition_by": "p",
                "incremental_strategy": "merge",
                "unique_key": ["k", "p"],
                "on_bucket_change": "evolve",
            }
            dbt_project.write_model(name, with_vars(sql, start=start, run=run), config)
            result = dbt_project.run(name)
            assert result.success, failure_text(result)
            result = dbt_project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
            assert result.success, failure_text(result)
            merged = sql.replace("{{ var('start') }}", "0").replace('{{ var("run") }}', str(run))
            p0 = f"select k, p, v from {tables}.{name} where p = '0'"
            if start == 0:
                assert rows(spark, p0) == rows(spark, merged), run
    assert spark.sql(f"select count(*) from {tables}.{name}").first()[0] == 400
    # The last merge left both partitions on 16 buckets: the table converged and declares them.
    assert "Num Buckets" in {r.col_name for r in spark.sql(f"describe table extended {tables}.{name}").collect()}


def test_randomized_queries_answer_as_unbucketed_plans(spark, tables):
    """The extension against plans without it: 200 random queries
    (tests/support/random_queries.py) over Hive-hash (bucketing v1 and v2),
    Spark-hash, evolving and plain tables, negative keys included, each
    answering as the plan with bucketing and the extension off. Replay a
    failure with SB_SEED=<seed printed> pytest tests/test_extension.py -k randomized."""
    seed = int(os.environ.get("SB_SEED", random.randrange(1 << 30)))
    print(f"SB_SEED={seed}")
    rng = random.Random(seed)
    evolving_bucketed = kept = unions = cloned = v2 = merged = 0
    for i in range(200):
        sql = random_query(rng, tables)
        # Merging a bucket's sorted files is off by default (the Sort measured faster): on here, to check its answers.
        with extension_on(spark), session_settings(spark, {MERGED_FILES_SETTING: "16"}):
            # One plan for both: the plan the query starts from, then its answer.
            df = spark.sql(sql)
            executed = df._jdf.queryExecution().executedPlan()
            plan = executed.toString()
            unions += kept_union(executed)
            got = sorted_rows(df)
        evolving_bucketed += bool(EVOLVING_SCAN.search(plan))
        kept += "BucketsKeptForJoin" in plan
        cloned += "ClonedBuckets" in plan
        v2 += bool(HIVE_V2_SCAN.search(plan))
        merged += "MergedSortedBuckets" in plan
        assert got == reference_rows(spark, sql), f"SB_SEED={seed}, query {i}: {sql}"
    print(
        f"{evolving_bucketed} of 200 queries read an evolving table bucketed, {kept} kept a join on more keys,"
        f" {unions} kept a union's placement, {cloned} read a smaller side once per bucket of the larger,"
        f" {v2} read a Hive v2 table bucketed, {merged} merged a bucket's sorted files"
    )
    # A sorted table across partitions joined or aggregated on k (one pair in twelve from SORTED_PAIRS).
    assert merged >= 5, f"SB_SEED={seed}: {merged} queries merged a bucket's sorted files"
    # A v2 table among the sides (one pair in ten drawn from HIVE_V2_PAIRS), read bucketed.
    assert v2 >= 10, f"SB_SEED={seed}: {v2} queries read a Hive v2 table bucketed"
    # Counts past the coalescing ratio joined on the bucket columns: about one query in fifteen.
    assert cloned >= 5, f"SB_SEED={seed}: {cloned} queries joined counts past the coalescing ratio at the larger"
    # A union of two tables of one placement: about one query in twenty; none before Spark 4.1.
    if unions_keep_placement(spark):
        assert unions >= 3, f"SB_SEED={seed}: {unions} queries kept a union's placement"
    else:
        assert unions == 0, f"SB_SEED={seed}: {unions} queries kept a union's placement on Spark {spark.version}"
    # Joins on more than the bucket columns of two package tables: about one query in seven.
    assert kept >= 5, f"SB_SEED={seed}: {kept} queries kept both sides of a join on more than the bucket columns"
    # The draw reads an evolving table bucketed (its selected days on one spec) in about one query in twelve.
    assert evolving_bucketed >= 5, f"SB_SEED={seed}: {evolving_bucketed} queries read an evolving table bucketed"
