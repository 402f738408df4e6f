"""Foreign Hive tables of every bucket column type Spark can bucket on, per
Hive bucketing version, their rows placed by Hive's own hash: v1 by Hive's
GenericUDFHash (Hive's ObjectInspectorUtils, the jars PySpark ships), v2 by
the extension's port of Hive 3's Murmur3 (tests/test_hive_bucketing_v2.py
holds it to Hive's Murmur3 class) where it hashes the type. On boundary
values (pre-1970 timestamps with fractions, decimals of several precisions
and scales, -0.0 and NaN, the integers' ends, multi-byte strings, NULLs,
two columns), with `foreignTables` on: a table of a type the extension
hashes as Hive does is read bucketed and verified (every row checked
against its file's bucket), pruned and joined without a shuffle; any other
is read unbucketed, as stock Spark reads it, its plan saying why. Every
answer equals the one with bucketing off."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.spark import extension_on, session_settings, table_location
from spark_bucketing import contracts, plans
from spark_bucketing.checker import Catalog, EngineSettings, analyze_sql
from spark_bucketing.checker.relations import relation_from_live
from spark_bucketing.checker.verify import verify
from spark_bucketing.extension import EXTENSION_CLASS
from spark_bucketing.metadata import SparkClient

BUCKETS = 8
FOREIGN_ON = {contracts.FOREIGN_TABLES_SWITCH: "true", contracts.FOREIGN_TABLES_VERIFY: "true"}

# type -> (SQL literals of its boundary values, read bucketed by version 1, by version 2)
TYPES: dict[str, tuple[list[str], bool, bool]] = {
    "tinyint": (["-128", "-1", "0", "1", "127"], True, True),
    "smallint": (["-32768", "-1", "0", "1", "32767"], True, True),
    "int": (["-2147483648", "-1", "0", "1", "2147483647", "-40", "77"], True, True),
    "bigint": (
        ["-9223372036854775808", "-1", "0", "1", "9223372036854775807", "6000000014", "-4294967296"],
        True,
        True,
    ),
    "boolean": (["true", "false"], True, True),
    "date": (
        ["date'1969-12-31'", "date'1970-01-01'", "date'1582-10-04'", "date'2024-02-29'", "date'9999-12-31'"],
        True,
        True,
    ),
    "float": (
        ["float('-0.0')", "float('0.0')", "float('NaN')", "float('Infinity')", "float('-1.5')", "float('3.4e38')"],
        True,
        False,
    ),
    "double": (
        ["double('-0.0')", "double('0.0')", "double('NaN')", "double('-Infinity')", "double('1e-300')"],
        True,
        False,
    ),
    "string": (["''", "'a'", "'abc'", "'é'", "'日本語'", "'a b '"], True, True),
    "decimal(10,2)": (["-0.01", "0", "1.10", "99999999.99", "-99999999.99", "0.5"], True, False),
    "decimal(38,10)": (["-0.0000000001", "0", "12345678901234567890.1234567890", "1", "-1.5"], True, False),
    "decimal(5,0)": (["-99999", "0", "1", "99999"], True, False),
    "timestamp": (
        [
            "timestamp'1969-12-31 23:59:59.5'",
            "timestamp'1954-07-04 12:00:00.123456'",
            "timestamp'1969-12-31 23:59:59.999999'",
            "timestamp'1970-01-01 00:00:00'",
            "timestamp'2024-01-01 10:00:00.000001'",
            "timestamp'1500-01-01 00:00:00.5'",
        ],
        True,
        False,
    ),
    "char(5)": (["'ab'", "''", "'abcde'"], False, False),
    "varchar(10)": (["'ab'", "''", "'ab  '"], False, False),
    "binary": (["X'00'", "X''", "X'C3A9'"], False, False),
}
# Two bucket columns: (types, rows of literals).
PAIRS = {
    "int, string": (["int", "string"], [["-1", "'a'"], ["0", "''"], ["2147483647", "'é'"], ["7", "'x'"]]),
    "timestamp, decimal(10,2)": (
        ["timestamp", "decimal(10,2)"],
        [["timestamp'1969-12-31 23:59:59.5'", "-0.01"], ["timestamp'1970-01-01 00:00:00'", "1.10"]],
    ),
}


def _name(types: list[str], version: int) -> str:
    label = "_".join("".join(c for c in t if c.isalnum()) for t in types)
    return f"k_{label}_v{version}"


def _source_sql(types: list[str], rows: list[list[str]]) -> str:
    """Each row of literals 3 times, plus a row of NULLs, as columns k0.. of `types` and a value v."""
    selects = []
    for i, row in enumerate([*rows, ["null"] * len(types)]):
        cols = ", ".join(f"cast({lit} as {t}) as k{j}" for j, (lit, t) in enumerate(zip(row, types, strict=True)))
        selects.append(f"select {cols}, cast({i} * 10 + copy as bigint) as v from range(3) as r(copy)")
    return " union all ".join(selects)


def _hive_bucket(types: list[str], version: int) -> str:
    """The bucket Hive gives a row: v1 by Hive's own GenericUDFHash; v2 by Hive 3's Murmur3 (the extension's port),
    or, for a type it does not hash, by v1's (such a table is read unbucketed: its placement is not read)."""
    keys = ", ".join(f"k{j}" for j in range(len(types)))
    v2 = version == 2 and all(TYPES.get(t, ([], True, True))[2] for t in types)
    fn = contracts.HIVE_HASH_V2_FUNCTION if v2 else contracts.HIVE_HASH_FUNCTION
    return f"(({fn}({keys}) & 2147483647) % {BUCKETS})"


def _foreign_table(spark, schema: str, base: Path, types: list[str], rows: list[list[str]], version: int) -> str:
    """A Hive table declared over files Hive would have written: one per bucket, named as Hive names them; and a
    plain table of the same rows (joined with it: shuffled into Hive's placement)."""
    name = _name(types, version)
    folder, staging = base / name, base / f"{name}__staging"
    spark.sql(f"create table {schema}.{name}_plain using parquet as select * from ({_source_sql(types, rows)})")
    # Hashed as read from a table: Spark hands Hive's function a literal of some types (a date) otherwise than a
    # column's value.
    spark.table(f"{schema}.{name}_plain").selectExpr("*", f"{_hive_bucket(types, version)} as b").repartition(
        1
    ).write.partitionBy("b").parquet(str(staging))
    folder.mkdir(parents=True)
    for part in staging.glob("b=*"):
        (data,) = part.glob("*.parquet")
        shutil.move(data, folder / f"{int(part.name[2:]):06d}_0")
    shutil.rmtree(staging)
    columns = ", ".join(f"k{j} {t}" for j, t in enumerate(types))
    keys = ", ".join(f"k{j}" for j in range(len(types)))
    spark.sql(
        f"create table {schema}.{name} ({columns}, v bigint) clustered by ({keys}) into {BUCKETS} buckets"
        f" stored as parquet location '{folder}' tblproperties ('bucketing_version' = '{version}')"
    )
    return name


CASES = [
    ([t], [[v] for v in values], version, bucketed[version - 1])
    for t, (values, *bucketed) in TYPES.items()
    for version in (1, 2)
]
CASES += [
    (types, rows, version, all(TYPES[t][version] for t in types))
    for types, rows in PAIRS.values()
    for version in (1, 2)
]


@pytest.fixture(scope="module")
def foreign(spark, tmp_path_factory):
    schema = "t_foreign_key_types"
    spark.sql(f"create database if not exists {schema}")
    base = tmp_path_factory.mktemp("foreign_key_types")
    names = {
        _name(types, version): _foreign_table(spark, schema, base, types, rows, version)
        for types, rows, version, _ in CASES
    }
    yield schema, names
    spark.sql(f"drop database {schema} cascade")


def _answer(spark, sql: str, bucketing: bool) -> list[tuple]:
    conf = {**FOREIGN_ON, "spark.sql.sources.bucketing.enabled": str(bucketing).lower()}
    with extension_on(spark), session_settings(spark, conf):
        return sorted((tuple(str(x) for x in r) for r in spark.sql(sql).collect()), key=repr)


def _plan(spark, sql: str) -> str:
    with extension_on(spark), session_settings(spark, FOREIGN_ON):
        return plans.executed_plan(spark, sql, **{"spark.sql.adaptive.enabled": "false"})


@pytest.mark.parametrize(
    ("types", "rows", "version", "bucketed"),
    CASES,
    ids=[f"{', '.join(t)} v{v}" for t, _, v, _ in CASES],
)
def test_a_foreign_table_is_read_as_hive_placed_it_or_unbucketed(spark, foreign, types, rows, version, bucketed):
    schema, _ = foreign
    table = f"{schema}.{_name(types, version)}"
    keys = [f"k{j}" for j in range(len(types))]
    on = " and ".join(f"a.{k} <=> b.{k}" for k in keys)
    # The join's equal keys (NULL keys meet nothing), one lookup per row of values and the NULL one.
    queries = {
        "scan": f"select * from {table}",
        "join": f"select a.v, b.v from {table} a join {table}_plain b on "
        + " and ".join(f"a.{k} = b.{k}" for k in keys),
        "null-safe join": f"select a.v, b.v from {table} a join {table}_plain b on {on}",
        "aggregate": f"select {', '.join(keys)}, count(*), sum(v) from {table} group by {', '.join(keys)}",
    }
    for i, row in enumerate([*rows, ["null"] * len(types)]):
        queries[f"lookup {i}"] = f"select v from {table} where " + " and ".join(
            f"{k} <=> cast({lit} as {t})" for k, lit, t in zip(keys, row, types, strict=True)
        )
    for label, sql in queries.items():
        expected = _answer(spark, sql, bucketing=False)
        assert expected, (label, sql)
        # Verified: every row of the table read is checked against its file's bucket.
        assert _answer(spark, sql, bucketing=True) == expected, (label, sql)

    join_plan = _plan(spark, queries["join"])
    lookup_plan = _plan(spark, queries["lookup 0"])
    floating = any(t in ("float", "double") for t in types)
    if bucketed:
        assert "ForeignBucketedScan" in join_plan and "verified" in join_plan, join_plan
        # Only the plain side is shuffled, into Hive's placement; Spark joins floating-point keys normalized
        # (-0.0 as 0.0, one NaN), which no table's placement is, and selects no buckets by them (BucketPruning).
        assert plans.exchanges(join_plan) == (2 if floating else 1), join_plan
        selected = BUCKETS if floating else 1
        assert f"SelectedBucketsCount: {selected} out of {BUCKETS}" in lookup_plan, lookup_plan
    else:
        assert "ForeignBucketedScan" not in join_plan
        assert f"ReadUnbucketed spark_catalog.{table}: bucket column k0 is a" in join_plan, join_plan
        assert plans.exchanges(join_plan) == 2, join_plan


def test_bucketing_off_reads_foreign_tables_unbucketed(spark, foreign):
    schema, _ = foreign
    table = f"{schema}.{_name(['int'], 1)}"
    sql = f"select a.v, b.v from {table} a join {table}_plain b on a.k0 = b.k0"
    assert "ForeignBucketedScan" in _plan(spark, sql)
    with session_settings(spark, {"spark.sql.sources.bucketing.enabled": "false"}):
        plan = _plan(spark, sql)
    assert "ForeignBucketedScan" not in plan and plans.exchanges(plan) == 2, plan


def test_a_foreign_scan_reports_what_it_read(spark, foreign):
    schema, _ = foreign
    table = f"{schema}.{_name(['int'], 1)}"
    with extension_on(spark), session_settings(spark, {**FOREIGN_ON, "spark.sql.adaptive.enabled": "false"}):
        df = spark.sql(f"select v from {table} where k0 = 1")
        assert len(df.collect()) == 3
        plan = df._jdf.queryExecution().executedPlan()
    nodes = [plan]
    while nodes and "ForeignBucketedScan" not in nodes[0].nodeName():
        node = nodes.pop(0)
        nodes.extend(node.children().apply(i) for i in range(node.children().size()))
    assert nodes, plan.toString()
    metrics = nodes[0].metrics()
    value = {name: metrics.apply(name).value() for name in ("numOutputRows", "numFiles", "filesSize")}
    files = [p for p in table_location(spark, table).iterdir() if not p.name.startswith(".")]
    assert value["numOutputRows"] == 3
    # The lookup reads the one file of its bucket, of the table's several.
    assert value["numFiles"] == 1 and len(files) > 1
    assert value["filesSize"] > 0


def test_a_misplaced_row_is_named_by_its_sql_literal(spark, foreign, tmp_path):
    schema, _ = foreign
    source = table_location(spark, f"{schema}.{_name(['timestamp'], 1)}")
    folder = tmp_path / "misplaced"
    shutil.copytree(source, folder)
    first, second = sorted(p for p in folder.iterdir() if not p.name.startswith("."))[:2]
    first.rename(folder / "swap")
    second.rename(first)
    (folder / "swap").rename(second)
    spark.sql(
        f"create table {schema}.misplaced (k0 timestamp, v bigint) clustered by (k0) into {BUCKETS} buckets"
        f" stored as parquet location '{folder}'"
    )
    # The setting says trust the writer; a timestamp table is verified all the same.
    conf = {**FOREIGN_ON, contracts.FOREIGN_TABLES_VERIFY: "false"}
    with extension_on(spark), session_settings(spark, conf), pytest.raises(Exception) as failed:
        spark.sql(f"select k0, v from {schema}.misplaced").collect()
    assert "is not bucketed as it declares" in str(failed.value)
    assert "k0=TIMESTAMP '" in str(failed.value), str(failed.value)


def test_the_checker_says_why_a_foreign_table_is_read_unbucketed(spark, foreign):
    schema, _ = foreign
    client = SparkClient(spark)
    conf = {
        "spark.sql.shuffle.partitions": spark.conf.get("spark.sql.shuffle.partitions"),
        "spark.sql.extensions": EXTENSION_CLASS,
        contracts.FOREIGN_TABLES_SWITCH: "true",
    }
    for types, version, readable in ((["timestamp"], 1, True), (["decimal(10,2)"], 2, False), (["char(5)"], 1, False)):
        table = f"{schema}.{_name(types, version)}"
        catalog = Catalog()
        for name in (table, f"{table}_plain"):
            catalog.add(relation_from_live(client, name))
        sql = f"select a.v from {table} a join {table}_plain b on a.k0 = b.k0"
        with extension_on(spark), session_settings(spark, FOREIGN_ON):
            findings = analyze_sql(sql, catalog, EngineSettings("spark", conf))
            results = verify(client, sql, findings)
        (join,) = [f for f in findings if f.kind == "join"]
        report = [(s.relation, s.shuffle, s.reasons) for s in join.sides]
        assert all(r["matched"] for r in results), (sql, report)
        foreign_side = join.sides[0]
        assert foreign_side.shuffle != readable, report
        if not readable:
            assert foreign_side.reasons == ["HIVE_KEY_TYPE_READ_UNBUCKETED"], report
            assert any("does not hash as Hive does" in t for t in join.suggestions), join.suggestions
