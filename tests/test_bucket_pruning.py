"""Bucket pruning with the session extension, for every hash family (Hive
v1, Hive v2, Spark): which buckets a scan selects for each predicate shape
(checked against the Python hash, spark_bucketing.hashing, the other
source of truth for a bucket id), and a randomized test of point lookups
over tables of every key type the families bucket by, one and two bucket
columns, NULL and negative keys, whose answers equal those of a plan with
bucketing and the extension off."""

from __future__ import annotations

import datetime as dt
import os
import random
import re
from decimal import Decimal

import pytest

from harness.spark import extension_on, session_settings
from spark_bucketing import hashing, plans
from tests.support.extension_tables import reference_rows, rows, sorted_rows

# Every column a table below buckets by: NULLs, negatives, repeats.
SOURCE = (
    "select case when id % 9 = 0 then null else cast(id % 300 - 150 as int) end as k,"
    " case when id % 13 = 0 then null else cast(id % 37 - 18 as tinyint) end as i8,"
    " case when id % 11 = 0 then null else (id % 101 - 50) * 100000000007 end as i64,"
    " case when id % 17 = 0 then null else concat('s', id % 29) end as s,"
    " case when id % 19 = 0 then null else date_add(date'2024-01-01', cast(id % 23 - 5 as int)) end as d,"
    " case when id % 7 = 0 then null else cast(id % 53 - 26 as smallint) end as i16,"
    " case when id % 5 = 0 then null else id % 3 = 0 end as b,"
    " case when id % 8 = 0 then null else cast((id % 71 - 35) / 4 as decimal(10, 2)) end as dec,"
    " case when id % 10 = 0 then null else timestamp_seconds(1700000000 + id % 41 * 3600) end as ts,"
    " cast(id % 3 as string) as p, id as v from range(0, 3000, 1, 4)"
)
FAMILIES = {
    "h1": {"bucket_hash": "hive"},
    "h2": {"bucket_hash": "hive", "bucketing_version": 2},
    "sp": {"bucket_hash": "spark"},
}
# Table suffix -> (bucket columns, buckets, extra config).
SHAPES = {
    "k": (["k"], 16, {"partition_by": "p"}),
    "a": (["i8", "i64"], 8, {}),
    "b": (["s", "d"], 8, {}),
    "c": (["i16", "b"], 8, {}),
}
# Spark's hash is defined for every type; Hive's (as the package writes it) not for decimals or timestamps.
SPARK_ONLY = {"e": (["dec", "ts"], 8, {})}
TYPES = {
    "k": "int",
    "i8": "tinyint",
    "i64": "bigint",
    "s": "string",
    "d": "date",
    "i16": "smallint",
    "b": "boolean",
    "dec": "decimal(10,2)",
    "ts": "timestamp",
}
SELECTED = re.compile(r"SelectedBucketsCount: (\d+) out of (\d+)")
# Spark reads a scan no operator needs bucketed as a plain scan, still pruned by its buckets (the files of
# other buckets are skipped) but without the count in the plan: keep such scans bucketed to see it.
SHOW_COUNT = {"spark.sql.sources.bucketing.autoBucketedScan.enabled": "false"}
UNWRAP_CASTS = "org.apache.spark.sql.catalyst.optimizer.UnwrapCastInBinaryComparison"


def table_specs() -> dict[str, tuple[str, list[str], int]]:
    """Table name -> (family, bucket columns, buckets)."""
    specs = {}
    for family in FAMILIES:
        shapes = {**SHAPES, **(SPARK_ONLY if family == "sp" else {})}
        for suffix, (columns, buckets, _) in shapes.items():
            specs[f"{family}_{suffix}"] = (family, columns, buckets)
    return specs


@pytest.fixture(scope="module")
def tables(spark, dbt_project):
    for name, (family, columns, buckets) in table_specs().items():
        extra = {**SHAPES, **SPARK_ONLY}[name.split("_")[1]][2]
        config = {
            "materialized": "bucketed_table",
            "clustered_by": columns,
            "buckets": buckets,
            **FAMILIES[family],
            **extra,
        }
        dbt_project.write_model(name, SOURCE, config)
    with extension_on(spark):
        result = dbt_project.run()
    assert result.success
    return dbt_project.schema


def selected(plan: str) -> tuple[int, int] | None:
    m = SELECTED.search(plan)
    return (int(m.group(1)), int(m.group(2))) if m else None


def ids(spark, family: str, columns: list[str], buckets: int, rows_of_values: list[tuple]) -> set[int]:
    """The buckets of these value combinations by the Python hash, or, for a
    type it does not hash (decimal), by Spark's own `hash`, the function of
    Spark's bucket ids."""
    hash_family, version = ("spark", 1) if family == "sp" else ("hive", 2 if family == "h2" else 1)
    types = [TYPES[c] for c in columns]
    try:
        return {hashing.bucket_id(list(values), types, buckets, hash_family, version) for values in rows_of_values}
    except hashing.UnsupportedTypeError:
        assert family == "sp"
        literals = [
            ", ".join(f"cast({_literal(v, c)} as {TYPES[c]})" for v, c in zip(values, columns, strict=True))
            for values in rows_of_values
        ]
        return {spark.sql(f"select pmod(hash({lits}), {buckets})").first()[0] for lits in literals}


# (table, filter, the value combinations it selects; None: every bucket)
CASES = {
    "=": ("{f}_k", "k = 42", [(42,)]),
    "literal first": ("{f}_k", "42 = k", [(42,)]),
    "in": ("{f}_k", "k in (-7, 3, 120)", [(-7,), (3,), (120,)]),
    "<=>": ("{f}_k", "k <=> -150", [(-150,)]),
    "is null": ("{f}_k", "k is null", [(None,)]),
    "<=> null": ("{f}_k", "k <=> null", [(None,)]),
    "or": ("{f}_k", "k = 1 or k in (2, 3) or k is null", [(1,), (2,), (3,), (None,)]),
    "and another column": ("{f}_k", "k = 5 and v > 100", [(5,)]),
    "partition and key": ("{f}_k", "p = '1' and k = 5", [(5,)]),
    "bigint literal on an int": ("{f}_k", "k = cast(5 as bigint)", [(5,)]),
    "or another column": ("{f}_k", "k = 5 or v = 3", None),
    "range": ("{f}_k", "k between 1 and 3", None),
    "two columns": ("{f}_a", "i8 = -3 and i64 = 500000000035", [(-3, 500000000035)]),
    "two columns, in": ("{f}_a", "i8 in (1, 2) and i64 = 0", [(1, 0), (2, 0)]),
    "two columns, one given": ("{f}_a", "i8 = 1", None),
    "two columns, or of pairs": (
        "{f}_b",
        "(s = 's3' and d = date'2024-01-02') or (s is null and d = date'2023-12-30')",
        [("s3", dt.date(2024, 1, 2)), (None, dt.date(2023, 12, 30))],
    ),
    "smallint and boolean": ("{f}_c", "i16 = -26 and b", [(-26, True)]),
    "boolean negated": ("{f}_c", "i16 in (-26, 0) and not b", [(-26, False), (0, False)]),
    "decimal and timestamp": (
        "sp_e",
        "dec = 1.25 and ts = timestamp'2023-11-14 22:13:20'",
        [(Decimal("1.25"), dt.datetime(2023, 11, 14, 22, 13, 20))],
    ),
}


@pytest.mark.parametrize(
    "family, case",
    # A case on a named table (sp_e: decimal and timestamp, which only Spark's hash writes) runs on its family.
    [(f, c) for c, (table, _, _) in CASES.items() for f in FAMILIES if "{f}" in table or table.startswith(f)],
)
def test_selected_buckets(spark, tables, family, case):
    """The buckets a scan selects with the extension on are those the Python
    hash gives the filter's values, and the answer is the unbucketed one.
    With it off, Spark reads a Hive-hash table unbucketed (every file) and
    prunes a Spark-hash table only by `column = literal` on one column."""
    table, where, values = CASES[case]
    name = table.format(f=family)
    _, columns, buckets = table_specs()[name]
    sql = f"select v from {tables}.{name} where {where}"
    # Without the optimizer's unwrapping of casts, the bigint case compares cast(k as bigint) with 5.
    conf = {**SHOW_COUNT, **({"spark.sql.optimizer.excludedRules": UNWRAP_CASTS} if "bigint literal" in case else {})}
    with extension_on(spark), session_settings(spark, conf):
        on = plans.executed_plan(spark, sql)
        got = rows(spark, sql)
    if values is None:  # every bucket: read bucketed, or not (a scan that does not read every bucket column)
        assert selected(on) in (None, (buckets, buckets)), on
    else:
        assert selected(on) == (len(ids(spark, family, columns, buckets, values)), buckets), on
    assert got == reference_rows(spark, sql)
    with session_settings(spark, SHOW_COUNT):
        off = plans.executed_plan(spark, sql)
    if family != "sp":
        assert selected(off) is None, off  # read unbucketed: every file
    elif len(columns) == 1 and case not in ("literal first", "or another column", "range"):
        assert selected(off) == selected(on), off  # Spark's own pruning agrees
    else:  # Spark prunes one column, by `column = literal` in that order: never fewer buckets than here
        assert selected(off) in (None, (buckets, buckets)), off


def test_a_lookup_that_matches_no_value_of_the_column_selects_no_bucket(spark, tables):
    """A bigint literal past an int column's range (kept as a cast of the column) stands for no int."""
    sql = f"select v from {tables}.h1_k where k = 5000000000"
    unwrapped = {**SHOW_COUNT, "spark.sql.optimizer.excludedRules": UNWRAP_CASTS}
    with extension_on(spark), session_settings(spark, unwrapped):
        plan = plans.executed_plan(spark, sql)
        assert rows(spark, sql) == []
    assert selected(plan) == (0, 16), plan


def _literal(value, column: str, rng: random.Random | None = None) -> str:
    if value is None:
        return "null"
    t = TYPES[column]
    if t == "string":
        return f"'{value}'"
    if t == "date":
        return f"date'{value.isoformat()}'"
    if t == "timestamp":
        return f"timestamp'{value.isoformat(sep=' ')}'"
    if t == "boolean":
        return str(value).lower()
    if t in ("tinyint", "smallint") and rng is not None and rng.random() < 0.5:
        return f"cast({value} as {t})"
    return str(value)


def _term(rng: random.Random, column: str, values: list) -> str:
    """A condition on one bucket column that holds for the first of `values`."""
    value = values[0]
    if value is None:
        return rng.choice([f"{column} is null", f"{column} <=> null"])
    lit = _literal(value, column, rng)
    draw = rng.random()
    if draw < 0.4:
        return f"{column} = {lit}" if rng.random() < 0.7 else f"{lit} = {column}"
    if draw < 0.55:
        return f"{column} <=> {lit}"
    others = [_literal(v, column, rng) for v in values[1:] if v is not None]
    return f"{column} in ({', '.join([lit, *others])})"


def _lookup(rng: random.Random, t: str, name: str, columns: list[str], sample: list[dict]) -> str:
    """A point lookup on every bucket column (or, at times, fewer, or with an OR of another column)."""

    def conjunction() -> str:
        row = rng.choice(sample)
        terms = []
        for c in columns:
            if len(columns) > 1 and rng.random() < 0.08:
                continue  # one column of two: every bucket
            values = [row[c], *(rng.choice(sample)[c] for _ in range(rng.randrange(3)))]
            terms.append(_term(rng, c, values))
        return " and ".join(terms) or "true"

    where = conjunction()
    draw = rng.random()
    if draw < 0.25:
        where = f"({where}) or ({conjunction()})"
    elif draw < 0.35:
        where = f"({where}) and v % 3 = {rng.randrange(3)}"
    elif draw < 0.42:
        where = f"({where}) or v < {rng.randrange(100)}"
    elif draw < 0.5 and name.endswith("_k"):
        where = f"({where}) and p = '{rng.randrange(3)}'"
    return f"select v, {', '.join(columns)} from {t}.{name} where {where}"


def test_randomized_lookups_answer_as_unbucketed_plans(spark, tables):
    """300 random point lookups over every table (each family, each key type,
    one and two bucket columns): `=` either way round, `<=>`, `IN`, `IS NULL`,
    AND with other columns, OR of lookups and with other columns, NULL and
    negative keys; each answers as the plan with bucketing and the extension
    off. Replay with SB_SEED=<seed printed> pytest tests/test_bucket_pruning.py -k randomized."""
    seed = int(os.environ.get("SB_SEED", random.randrange(1 << 30)))
    print(f"SB_SEED={seed}")
    rng = random.Random(seed)
    specs = table_specs()
    samples = {
        name: [r.asDict() for r in spark.sql(f"select * from {tables}.{name} order by v limit 60").collect()]
        for name in specs
    }
    pruned = 0
    for i in range(300):
        name = rng.choice(sorted(specs))
        _, columns, buckets = specs[name]
        sql = _lookup(rng, tables, name, columns, samples[name])
        with extension_on(spark), session_settings(spark, SHOW_COUNT):
            df = spark.sql(sql)
            plan = df._jdf.queryExecution().executedPlan().toString()
            got = sorted_rows(df)
        count = selected(plan)
        pruned += count is not None and count[0] < count[1]
        assert got == reference_rows(spark, sql), f"SB_SEED={seed}, lookup {i}: {sql}\n{plan}"
    print(f"{pruned} of 300 lookups read fewer buckets than the table has")
    # About four draws in five constrain every bucket column with no OR of another column.
    assert pruned >= 180, f"SB_SEED={seed}: only {pruned} lookups were pruned"
