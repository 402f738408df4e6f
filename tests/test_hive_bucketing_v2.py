"""Hive bucketing v2 (`bucket_hash='hive', bucketing_version=2`, Hive 3's
default): the hash against the vectors Trino publishes (computed there by
both Trino's and Hive's code), Hive's own Murmur3 class as the oracle of
ours, and tables built by the materializations on real Spark and dbt, every
row in the file of its v2 bucket."""

from __future__ import annotations

import datetime as dt
import random
import struct

import pytest

from harness.dbt_project import failure_text
from harness.spark import data_files, describe, table_location
from spark_bucketing import hashing
from spark_bucketing.checker import Catalog, EngineSettings, analyze_sql
from spark_bucketing.checker.relations import RelationInfo, spec_from_config
from spark_bucketing.cli import main
from spark_bucketing.contracts import HIVE_HASH_V2_FUNCTION as V2_FN
from spark_bucketing.extension import EXTENSION_CLASS
from spark_bucketing.metadata import BucketSpec
from tests.support.incremental import die_then_finish
from tests.support.layout import check_layout, table_layout_problems

# From Trino's TestHiveBucketing.testHashingCompare (the v2 column): each
# value's bucket hash code, asserted there against Trino's HiveBucketingV2
# and against Hive's own ObjectInspectorUtils.
TRINO_V2_VECTORS = [
    ("string", "Trino rocks", -399107423),
    ("boolean", None, 0),
    ("boolean", True, 1),
    ("boolean", False, 0),
    ("tinyint", None, 0),
    ("tinyint", 5, 5),
    ("tinyint", -128, -128),
    ("tinyint", 127, 127),
    ("smallint", None, 0),
    ("smallint", 300, 2107031704),
    ("smallint", -32768, 1342976838),
    ("smallint", 32767, -684075052),
    ("int", None, 0),
    ("int", 300_000, -678663480),
    ("int", -2147483648, 1194881028),
    ("int", 2147483647, 1133859967),
    ("bigint", None, 0),
    ("bigint", 300_000_000_000, -888935297),
    ("bigint", -9223372036854775808, 1728983947),
    ("bigint", 9223372036854775807, -536577852),
    ("float", None, 0),
    ("float", 12.34, -381747602),
    ("float", -3.4028234663852886e38, 470252243),
    ("float", 1.401298464324817e-45, 1206721797),
    ("float", float("inf"), -292175804),
    ("float", float("-inf"), -1433270801),
    ("float", float("nan"), -480354314),
    ("double", None, 0),
    ("double", 12.34, -2070733568),
    ("double", -1.7976931348623157e308, 14392725),
    ("double", 5e-324, -8838199),
    ("double", float("inf"), 1614292060),
    ("double", float("-inf"), 141388605),
    ("double", float("nan"), 1138026565),
    ("string", None, 0),
    ("string", "", -965378730),
    ("string", "test string", -138301454),
    ("string", "\u5f3a\u5927\u7684Trino\u5f15\u64ce", 1784416344),
    ("string", "\U00020ffc\U00020ffd\U00020ffe\U00020fff", -697348811),
    ("date", None, 0),
    ("date", dt.date(1970, 1, 1), 1362653161),
    ("date", dt.date(2015, 11, 19), 8542395),
    ("date", dt.date(1950, 11, 19), -431619185),
]


def _sql_literal(type_name: str, value) -> str:
    if value is None:
        return f"cast(null as {type_name})"
    if type_name in ("float", "double"):
        text = (
            "NaN" if value != value else {float("inf"): "Infinity", float("-inf"): "-Infinity"}.get(value, repr(value))
        )
        return f"cast('{text}' as {type_name})"
    if type_name == "string":
        return "'" + value.replace("'", "''") + "'"
    if type_name == "date":
        return f"date'{value.isoformat()}'"
    if type_name == "boolean":
        return "true" if value else "false"
    return f"cast({value} as {type_name})"


@pytest.mark.parametrize(("type_name", "value", "expected"), TRINO_V2_VECTORS)
def test_python_twin_matches_trinos_published_v2_hashes(type_name, value, expected):
    assert hashing.hive_hash([value], [type_name], version=2) == expected
    # Hive's bucket: the hash's sign bit dropped, then the remainder.
    assert hashing.bucket_id([value], [type_name], 997, "hive", 2) == (expected & 0x7FFFFFFF) % 997


def test_the_extensions_function_matches_trinos_published_v2_hashes(spark):
    select = ", ".join(f"{V2_FN}({_sql_literal(t, v)})" for t, v, _ in TRINO_V2_VECTORS)
    got = list(spark.sql(f"select {select}").first())
    assert got == [expected for _, _, expected in TRINO_V2_VECTORS]


def test_python_murmur3_matches_hives_own_class(spark):
    """Hive's Murmur3.hash32 (hive-storage-api, the class Hive and Trino call)
    as the oracle: random bytes of every length mod 4, tails of bytes >= 0x80
    (which Hive widens as signed bytes)."""
    murmur3 = spark.sparkContext._jvm.org.apache.hive.common.util.Murmur3
    rng = random.Random(20261126)
    for _ in range(400):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 19)))
        assert hashing.hive_murmur3(data) == murmur3.hash32(bytearray(data), len(data), 104729), data.hex()


def test_the_extensions_function_matches_python_on_random_rows(spark):
    """Every supported type, NULLs, negative and edge values, several columns
    at once: the function Spark computes equals the Python twin."""
    rng = random.Random(7)
    types = ["tinyint", "smallint", "int", "bigint", "string", "boolean", "date", "float", "double"]

    def value(t):
        if rng.random() < 0.15:
            return None
        return {
            "tinyint": lambda: rng.randint(-128, 127),
            "smallint": lambda: rng.randint(-32768, 32767),
            "int": lambda: rng.randint(-(2**31), 2**31 - 1),
            "bigint": lambda: rng.randint(-(2**63), 2**63 - 1),
            "string": lambda: "".join(rng.choice("ab\u00e9\u4e2d\U0001f600'") for _ in range(rng.randint(0, 9))),
            "boolean": lambda: rng.random() < 0.5,
            "date": lambda: dt.date(1900, 1, 1) + dt.timedelta(days=rng.randint(0, 80000)),
            # Representable as a float exactly, so Spark's literal is this value.
            "float": lambda: struct.unpack(">f", struct.pack(">f", rng.uniform(-1e6, 1e6)))[0],
            "double": lambda: rng.choice([0.0, -0.0, rng.uniform(-1e300, 1e300), rng.random()]),
        }[t]()

    rows = []
    for _ in range(60):
        cols = rng.sample(types, rng.randint(1, 4))
        rows.append((cols, [value(t) for t in cols]))
    select = ", ".join(
        f"{V2_FN}({', '.join(_sql_literal(t, v) for t, v in zip(cols, vals, strict=True))})" for cols, vals in rows
    )
    got = list(spark.sql(f"select {select}").first())
    assert got == [hashing.hive_hash(vals, cols, version=2) for cols, vals in rows]


def test_v2_hashes_the_two_zeros_apart(spark):
    """Why the extension reads a v2 table bucketed on a float or double
    unbucketed: Spark's joins and aggregations take -0.0 and 0.0 as one key,
    v2 puts them in different buckets (v1 puts both in bucket 0)."""
    for t in ("float", "double"):
        zero, minus = spark.sql(f"select {V2_FN}(cast('0.0' as {t})), {V2_FN}(cast('-0.0' as {t}))").first()
        assert (zero & 0x7FFFFFFF) % 8 != (minus & 0x7FFFFFFF) % 8
        assert hashing.bucket_id([0.0], [t], 8, "hive", 1) == hashing.bucket_id([-0.0], [t], 8, "hive", 1) == 0


def test_the_function_refuses_a_type_hive_v2_is_not_defined_for(spark):
    with pytest.raises(Exception, match=f"{V2_FN} cannot hash") as e:
        spark.sql(f"select {V2_FN}(timestamp'2024-01-01 00:00:00')").collect()
    assert "tinyint, smallint, int, bigint, string, boolean, date, float, double" in str(e.value)


# Tables: NULL and negative keys, several partitions, a string key with
# non-ASCII values, two bucket columns, ORC, sorted files.
V2 = {"bucket_hash": "hive", "bucketing_version": 2}
MODELS = {
    "v2_part_sorted": (
        """select case when id % 13 = 0 then null else cast(id % 300 as int) - 150 end as k,
                  concat('s', id % 17) as s, date_add(date'2024-01-01', cast(id % 4 as int)) as day, id as v
           from range(0, 6000, 1, 6)""",
        {**V2, "clustered_by": "k", "buckets": 8, "partition_by": "day", "sorted_by": ["s", "v"]},
    ),
    "v2_two_keys_orc": (
        """select concat(case when id % 2 = 0 then 'é' else 'x' end, id % 41) as name, id % 29 - 14 as n, id as v
           from range(0, 4000, 1, 6)""",
        {**V2, "clustered_by": ["name", "n"], "buckets": 5, "file_format": "orc"},
    ),
    "v2_types": (
        """select cast(id % 120 - 60 as tinyint) as t, cast(id % 700 as smallint) as sm, id % 2 = 0 as b,
                  date_add(date'2020-01-01', cast(id % 50 as int)) as d, cast(id % 90 as double) / 4 as x, id as v
           from range(0, 3000, 1, 6)""",
        {**V2, "clustered_by": ["t", "sm", "b", "d", "x"], "buckets": 16},
    ),
}


@pytest.fixture(scope="module")
def built(spark, dbt_project):
    for name, (sql, config) in MODELS.items():
        dbt_project.write_model(name, sql, {"materialized": "bucketed_table", **config})
    run = dbt_project.run(*MODELS)
    tests = "[spark_bucketing.bucket_layout, spark_bucketing.bucket_metadata]"
    for name in MODELS:
        dbt_project.write_file(
            f"models/{name}.yml", f"version: 2\nmodels:\n  - name: {name}\n    data_tests: {tests}\n"
        )
    test = dbt_project.dbt("test", "--select", *MODELS)
    return run, test


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_row_is_in_the_file_of_its_v2_bucket(spark, dbt_project, built, name):
    sql, config = MODELS[name]
    table = f"{dbt_project.schema}.{name}"
    report = check_layout(spark, table)
    assert report.files > 0 and report.bad_names == []
    assert report.max_files_per_bucket == 1
    assert report.misplaced_rows == 0 and report.unsorted_rows == 0
    assert report.rows == spark.sql(f"select count(*) from ({sql})").first()[0]
    # Hive's names, which Hive 3 and Trino read a bucket's number from.
    files = data_files(table_location(spark, table))
    assert all(f.name[:8] == f"{int(f.name[:5]):05d}_0_" for f in files)
    # The files hold the table's columns, not the bucket id the write placed them by.
    file_format = config.get("file_format", "parquet")
    assert sorted(spark.read.format(file_format).load([str(f) for f in files]).columns) == sorted(
        c for c in spark.table(table).columns if c not in [config.get("partition_by")]
    )


def test_the_v2_placement_is_not_v1s(spark, dbt_project, built):
    """The check above could fail: v1 puts most of these rows elsewhere."""
    keys = [r.k for r in spark.table(f"{dbt_project.schema}.v2_part_sorted").select("k").distinct().collect()]
    moved = [
        k
        for k in keys
        if hashing.bucket_id([k], ["int"], 8, "hive", 1) != hashing.bucket_id([k], ["int"], 8, "hive", 2)
    ]
    assert len(moved) > len(keys) // 2


def test_tables_declare_bucketing_version_2(spark, dbt_project, built):
    for name in MODELS:
        rows = describe(spark, f"{dbt_project.schema}.{name}")
        assert rows["Provider"] == "hive", name
        assert "bucketing_version=2" in rows["Table Properties"], name


def test_the_packages_own_tests_pass_on_v2_tables(built):
    run, test = built
    assert run.success
    assert test.success, failure_text(test)
    assert len(test.result.results) == 2 * len(MODELS)


def test_incremental_runs_keep_the_v2_placement(spark, dbt_project):
    """insert_overwrite, append and merge into a v2 table: every partition's
    rows in their v2 buckets, and the records say version 2."""
    sql = """select cast(id % 97 as int) - 20 as k, concat('p', id) as payload, id,
                    date_add(date'2024-01-01', cast(id % 2 as int) + {{ var('day', 0) }}) as day
             from range({{ var('day', 0) }} * 1000, {{ var('day', 0) }} * 1000 + 1200, 1, 3)"""
    base = {**V2, "materialized": "bucketed_incremental", "clustered_by": "k", "buckets": 4, "partition_by": "day"}
    for strategy, extra in (("insert_overwrite", {}), ("append", {}), ("merge", {"unique_key": ["id", "day"]})):
        name = f"v2_incr_{strategy}"
        dbt_project.write_model(name, sql, {**base, "incremental_strategy": strategy, **extra})
        for day in (0, 1, 2):
            dbt_project.run(name, extra=("--vars", f"{{day: {day}}}"))
        table = f"{dbt_project.schema}.{name}"
        assert table_layout_problems(spark, table) == [], strategy
        assert spark.sql(f"select count(distinct day) from {table}").first()[0] == 4
        props = dict(spark.sql(f"show tblproperties {table}").collect())
        assert props["bucketing_version"] == "2"
        records = [v for k, v in props.items() if k.startswith("spark_bucketing.partition.")]
        assert records and all('"bucketing_version": 2' in r for r in records), records


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"bucketing_version": 3}, "config 'bucketing_version': must be 1 or 2, got 3"),
        ({"bucketing_version": "2"}, "config 'bucketing_version': must be 1 or 2, got the string '2'"),
        (
            {"bucketing_version": 2, "bucket_hash": "spark"},
            "config 'bucketing_version': is a version of Hive's hash, but bucket_hash is 'spark'",
        ),
    ],
)
def test_bad_bucketing_version_fails_before_anything_is_written(spark, dbt_project, config, message):
    name = "v2_bad_config"
    dbt_project.write_model(
        name, "select 1 as k", {"materialized": "bucketed_table", "clustered_by": "k", "buckets": 4, **config}
    )
    result = dbt_project.run(name, expect_ok=False)
    dbt_project.remove_model(name)
    assert not result.success
    assert message in failure_text(result)
    assert not spark.catalog.tableExists(f"{dbt_project.schema}.{name}")


def test_evolve_cannot_change_the_bucketing_version(spark, dbt_project):
    name = "v2_evolve"
    sql = "select cast(id as int) as k, date'2024-01-01' as day from range(0, 100)"
    config = {"materialized": "bucketed_incremental", "clustered_by": "k", "buckets": 4, "partition_by": "day"}
    dbt_project.write_model(name, sql, config)
    dbt_project.run(name)
    dbt_project.write_model(name, sql, {**config, **V2, "on_bucket_change": "evolve"})
    result = dbt_project.run(name, expect_ok=False)
    assert "'evolve' cannot change bucketing_version from 1 to 2" in failure_text(result)
    props = dict(spark.sql(f"show tblproperties {dbt_project.schema}.{name}").collect())
    assert props["bucketing_version"] == "1"
    dbt_project.write_model(name, sql, {**config, **V2, "on_bucket_change": "rebuild"})
    dbt_project.run(name)
    assert table_layout_problems(spark, f"{dbt_project.schema}.{name}") == []
    props = dict(spark.sql(f"show tblproperties {dbt_project.schema}.{name}").collect())
    assert props["bucketing_version"] == "2"


def _v2_catalog() -> Catalog:
    catalog = Catalog()
    cols = {"k": "int", "v": "bigint"}
    for name, version, key_type in (("v2a", 2, "int"), ("v2b", 2, "int"), ("v1", 1, "int"), ("v2d", 2, "double")):
        spec = BucketSpec("hive", ("k",), 8, (), version)
        catalog.add(RelationInfo(f"db.{name}", {**cols, "k": key_type}, spec, built_by_package=True, complete=True))
    return catalog


@pytest.mark.parametrize(
    ("left", "right", "shuffle_free", "reasons"),
    [
        ("v2a", "v2b", True, []),
        ("v2a", "v1", False, ["BUCKET_HASH_DIFFERS"]),
        ("v2d", "v2d", False, ["HIVE_V2_FLOATING_POINT_KEY"] * 2),
    ],
)
def test_the_checker_models_v2_under_the_extension(left, right, shuffle_free, reasons):
    settings = EngineSettings("spark", {"spark.sql.extensions": EXTENSION_CLASS})
    sql = f"select a.v, b.v from db.{left} a join db.{right} b on a.k = b.k"
    (finding,) = analyze_sql(sql, _v2_catalog(), settings)
    assert finding.shuffle_free is shuffle_free
    assert sorted(r for s in finding.sides for r in s.reasons) == reasons


def test_the_checker_takes_v2_from_a_models_config():
    config = {"materialized": "bucketed_table", "clustered_by": "k", "buckets": 8, **V2}
    assert spec_from_config(config).family == "hive v2"
    assert spec_from_config({**config, "bucketing_version": None}).family == "hive"
    # Trino reads both versions bucketed, and never joins one with the other without a shuffle.
    trino = EngineSettings("trino", {})
    (same,) = analyze_sql("select a.v from db.v2a a join db.v2b b on a.k = b.k", _v2_catalog(), trino)
    (mixed,) = analyze_sql("select a.v from db.v2a a join db.v1 b on a.k = b.k", _v2_catalog(), trino)
    assert same.shuffle_free and not mixed.shuffle_free


def test_the_command_prints_a_v2_bucket(capsys):
    row = ["bucket-id", "Trino rocks", "--type", "string", "--buckets", "4"]
    assert main([*row, "--hash", "hive", "--bucketing-version", "2"]) == 0
    assert capsys.readouterr().out.strip() == str((-399107423 & 0x7FFFFFFF) % 4)
    with pytest.raises(SystemExit, match="add --hash hive"):
        main([*row, "--hash", "spark", "--bucketing-version", "2"])


V2_STEPS = ["v2_after_folder_write", "v2_after_create", "after_write", "before_switch", "mid_switch", "before_cleanup"]


@pytest.mark.parametrize("fail_at", V2_STEPS)
def test_a_v2_run_that_dies_at_a_step_loses_nothing(spark, dbt_project, fail_at):
    """An insert_overwrite run of a v2 table that dies at each step of its
    write (the extension's folder write, the side entry over it, its
    partitions) and of its publish: every partition holds its old or its new
    rows in their v2 buckets, and the next run finishes the work."""
    spec = {"bucket_hash": "hive", "bucketing_version": 2, "buckets": 4}
    first, then = {**spec, "days": [0, 1, 2]}, {**spec, "days": [1, 2, 3], "tag": 1}
    table = die_then_finish(spark, dbt_project, f"v2_inject_{fail_at}", first, then, fail_at)
    assert "bucketing_version=2" in describe(spark, table)["Table Properties"]


@pytest.mark.parametrize("fail_at", ["v2_after_folder_write", "v2_after_create", "before_swap"])
def test_a_v2_rebuild_that_dies_at_a_step_keeps_the_old_table(spark, dbt_project, fail_at):
    name = f"v2_replace_{fail_at}"
    config = {**V2, "materialized": "bucketed_table", "clustered_by": "k", "buckets": 4, "partition_by": "p"}
    sql = "select cast(id % 50 as int) - 9 as k, cast(id % 3 as string) as p, id + {n} as v from range(0, 900)"
    dbt_project.write_model(name, sql.format(n=0), config)
    dbt_project.run(name)
    table = f"{dbt_project.schema}.{name}"
    before = sorted(spark.table(table).collect())
    dbt_project.write_model(name, sql.format(n=10_000), config)
    result = dbt_project.run(name, expect_ok=False, fail_at=fail_at)
    assert f"injected failure at step '{fail_at}'" in failure_text(result)
    assert sorted(spark.table(table).collect()) == before
    assert table_layout_problems(spark, table) == []
    dbt_project.run(name)
    assert spark.sql(f"select min(v) from {table}").first()[0] == 10_000
    assert table_layout_problems(spark, table) == []
