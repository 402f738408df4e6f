"""Hive tables this package did not write, read bucketed by the session
extension with `spark_bucketing.extension.foreignTables` on: written by
stock Spark's Hive insert (several files per bucket, Hive-style names), with
Hive's names (`000003_0`, `000003_0_copy_1`, empty buckets), with Trino's
names, and Hive's bucketing v2. Joins with package tables plan without an
Exchange; answers equal those with bucketing off; a row in another
bucket's file fails the query, naming the file; names that do not parse
read unbucketed, as stock Spark reads them."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from harness.spark import extension_on, session_settings
from spark_bucketing import contracts, hashing, plans
from spark_bucketing.checker import Catalog, EngineSettings, analyze_sql
from spark_bucketing.checker.relations import relation_from_live
from spark_bucketing.checker.verify import verify
from spark_bucketing.extension import EXTENSION_CLASS
from spark_bucketing.metadata import SparkClient
from tests.support.extension_tables import reference_rows, rows, sorted_rows

FACT = (
    "select case when id % 17 = 0 then null else cast(id % {keys} as int) - 40 end as k,"
    " concat('s', id % 7) as s, cast(id % 3 as string) as p, id as v from range(0, {n}, 1, 3)"
)
FOREIGN_ON = {contracts.FOREIGN_TABLES_SWITCH: "true"}
# Foreign table -> (buckets, hash version); built in `tables` below.
FOREIGN = {"f_spark": (8, 1), "f_hive": (16, 1), "f_trino": (8, 1), "f_v2": (8, 2), "f_orc": (4, 1)}
PACKAGE = {"pk8": (8, 1), "pk4": (4, 1), "pv8": (8, 2)}


def _stock_hive_table(spark, schema: str, name: str, folder: Path, buckets: int, sql: str, extra: str = "") -> None:
    """A Hive table written by stock Spark's Hive insert: Hive's v1 hash, Hive-style names, a file per bucket per
    task and insert."""
    spark.sql(
        f"create table {schema}.{name} (k int, s string, v bigint) {extra} clustered by (k) into {buckets} buckets"
        f" stored as {'orc' if name.endswith('orc') else 'parquet'} location '{folder}'"
    )
    for part in sql:
        spark.sql(f"insert into {schema}.{name} {part}")


def _files_by_bucket(folder: Path) -> dict[int, list[Path]]:
    found: dict[int, list[Path]] = {}
    for f in sorted(folder.rglob("*")):
        if f.is_file() and not f.name.startswith((".", "_")):
            found.setdefault(int(f.name.split("_")[0]), []).append(f)
    return found


def _rename(folder: Path, name) -> None:
    """Each data file renamed to `name(bucket, i)` (i: its index among its bucket's files)."""
    for bucket, files in _files_by_bucket(folder).items():
        for i, f in enumerate(files):
            f.rename(f.with_name(name(bucket, i)))
    for crc in folder.rglob(".*.crc"):
        crc.unlink()


@pytest.fixture(scope="module")
def tables(spark, dbt_project, tmp_path_factory):
    schema = dbt_project.schema
    configs = {"materialized": "bucketed_table", "clustered_by": "k", "bucket_hash": "hive"}
    dbt_project.write_model("pk8", FACT.format(keys=300, n=3000), {**configs, "buckets": 8, "partition_by": "p"})
    dbt_project.write_model("pk4", FACT.format(keys=200, n=1500), {**configs, "buckets": 4})
    dbt_project.write_model("pv8", FACT.format(keys=250, n=2000), {**configs, "buckets": 8, "bucketing_version": 2})
    with extension_on(spark):
        assert dbt_project.run().success
    base = tmp_path_factory.mktemp("foreign")
    rows_of = "select k, s, v from ({}) f"
    # Stock Spark's Hive insert, partitioned, two inserts: several files per bucket per partition.
    spark.sql(
        f"create table {schema}.f_spark (k int, s string, v bigint) partitioned by (p string)"
        f" clustered by (k) into 8 buckets stored as parquet location '{base / 'f_spark'}'"
    )
    for n, keys in ((2400, 260), (900, 90)):
        spark.sql(
            f"insert into {schema}.f_spark partition (p) select k, s, v, p from ({FACT.format(keys=keys, n=n)}) f"
        )
    # Hive's names, 16 buckets over 9 keys (empty buckets), a second file of a bucket as _copy_1.
    _stock_hive_table(spark, schema, "f_hive", base / "f_hive", 16, [rows_of.format(FACT.format(keys=9, n=700))] * 2)
    _rename(base / "f_hive", lambda b, i: f"{b:06d}_0" + (f"_copy_{i}" if i else ""))
    # Trino's names: <bucket>_0_<query id>_<uuid>.
    _stock_hive_table(spark, schema, "f_trino", base / "f_trino", 8, [rows_of.format(FACT.format(keys=120, n=1600))])
    _rename(base / "f_trino", lambda b, i: f"{b:06d}_0_20261127_101010_{i:05d}_abcde_{uuid.uuid4()}")
    _stock_hive_table(spark, schema, "f_orc", base / "f_orc", 4, [rows_of.format(FACT.format(keys=150, n=1200))] * 2)
    # Hive's v2 written by the extension's v2 writer into a folder a plain Hive table is then declared over.
    folder = {
        "location": str(base / "f_v2"),
        "format": "parquet",
        "columns": [["k", "int"], ["s", "string"], ["v", "bigint"]],
        "clustered_by": ["k"],
        "buckets": 8,
        "bucketing_version": 2,
    }
    with extension_on(spark):
        spark.sql(
            f"{contracts.WRITE_FOLDER_STATEMENT} '{json.dumps(folder)}' as "
            + rows_of.format(FACT.format(keys=250, n=2000))
        )
    spark.sql(
        f"create table {schema}.f_v2 (k int, s string, v bigint) clustered by (k) into 8 buckets stored as parquet"
        f" location '{base / 'f_v2'}' tblproperties ('bucketing_version' = '2')"
    )
    for name in FOREIGN:
        spark.sql(f"refresh table {schema}.{name}")
    return schema, base


def _plan(spark, sql: str, foreign: bool, extension: bool = True, adaptive: bool = True) -> str:
    conf = {**FOREIGN_ON} if foreign else {}
    with extension_on(spark, extension), session_settings(spark, conf):
        return plans.executed_plan(spark, sql, **{"spark.sql.adaptive.enabled": str(adaptive).lower()})


# (query, Exchanges: foreign tables on, extension on with them off, extension off)
JOINS = {
    "stock spark's insert joins a package table": (
        "select a.v, b.v from {t}.f_spark a join {t}.pk8 b on a.k = b.k",
        0,
        1,
        2,
    ),
    "hive's names, 16 buckets coalesced with 8": (
        "select a.v, b.v from {t}.f_hive a join {t}.pk8 b on a.k = b.k",
        0,
        1,
        2,
    ),
    "trino's names joined with stock spark's": (
        "select a.v, b.v from {t}.f_trino a join {t}.f_spark b on a.k = b.k",
        0,
        2,
        2,
    ),
    "hive v2 with a package v2 table": ("select a.v, b.v from {t}.f_v2 a join {t}.pv8 b on a.k = b.k", 0, 1, 2),
    "v1 against v2: one side shuffled": ("select a.v, b.v from {t}.f_spark a join {t}.pv8 b on a.k = b.k", 1, 1, 2),
    "orc, 4 buckets with 8: both read in 4 tasks": (
        "select a.v, b.v from {t}.pk8 a join {t}.f_orc b on a.k = b.k",
        0,
        1,
        2,
    ),
    "group by the bucket column": ("select k, count(*), sum(v) from {t}.f_trino group by k", 0, 1, 1),
}


@pytest.mark.parametrize("case", list(JOINS))
def test_joins_of_foreign_and_package_tables(spark, tables, case):
    schema, _ = tables
    template, on, ext_only, off = JOINS[case]
    sql = template.format(t=schema)
    counts = (
        plans.exchanges(_plan(spark, sql, foreign=True)),
        plans.exchanges(_plan(spark, sql, foreign=False)),
        plans.exchanges(_plan(spark, sql, foreign=False, extension=False)),
    )
    plan = _plan(spark, sql, foreign=True)
    assert counts == (on, ext_only, off), plan
    if "coalesced" in case:
        assert "16 buckets (coalesced to 8)" in plan, plan
    with extension_on(spark), session_settings(spark, FOREIGN_ON):
        assert rows(spark, sql) == reference_rows(spark, sql)


def test_a_foreign_side_is_cloned_past_the_coalescing_ratio(spark, tables):
    """With coalescing held to a ratio of 1, a foreign table of 4 buckets joined
    with a package table of 8 is read once per bucket of the larger (cloned)."""
    schema, _ = tables
    sql = f"select a.v, b.v from {schema}.pk8 a join {schema}.f_orc b on a.k = b.k"
    ratio = {"spark.sql.bucketing.coalesceBucketsInJoin.maxBucketRatio": "1"}
    with session_settings(spark, ratio):
        plan = _plan(spark, sql, foreign=True)
        assert plans.exchanges(plan) == 0 and "ClonedBuckets 8" in plan, plan
        with extension_on(spark), session_settings(spark, FOREIGN_ON):
            assert rows(spark, sql) == reference_rows(spark, sql)


def test_a_foreign_lookup_reads_the_buckets_of_its_values(spark, tables):
    schema, _ = tables
    sql = f"select v from {schema}.f_spark where k in (7, -3) or k is null"
    plan = _plan(spark, sql, foreign=True)
    buckets = {hashing.bucket_id([k], ["int"], 8, "hive") for k in (7, -3, None)}
    assert f"SelectedBucketsCount: {len(buckets)} out of 8" in plan, plan
    with extension_on(spark), session_settings(spark, FOREIGN_ON):
        got = rows(spark, sql)
    assert got == reference_rows(spark, sql) and got


def test_foreign_tables_are_read_as_stock_spark_reads_them_unless_asked(spark, tables):
    schema, _ = tables
    sql = f"select k, count(*) from {schema}.f_spark group by k"
    assert "ForeignBucketedScan" not in _plan(spark, sql, foreign=False)
    assert "ForeignBucketedScan" in _plan(spark, sql, foreign=True)


def test_names_that_do_not_parse_read_unbucketed(spark, tables, tmp_path):
    schema, _ = tables
    folder = tmp_path / "unnamed"
    _stock_hive_table(spark, schema, "f_unnamed", folder, 8, ["select cast(id as int), 's', id from range(40)"])
    _rename(folder, lambda b, i: f"part-{b:05d}-{i}.parquet")
    spark.sql(f"refresh table {schema}.f_unnamed")
    sql = f"select a.k, count(*) from {schema}.f_unnamed a join {schema}.pk8 b on a.k = b.k group by a.k"
    plan = _plan(spark, sql, foreign=True)
    assert "ForeignBucketedScan" not in plan and plans.exchanges(plan) == 1, plan
    with extension_on(spark), session_settings(spark, FOREIGN_ON):
        assert rows(spark, sql) == reference_rows(spark, sql)


def test_a_row_in_another_buckets_file_fails_the_query(spark, tables, tmp_path):
    """A tampered table: one row of bucket 5 put in a file named for bucket 3.
    Verified, the query fails naming the file and both buckets; trusted
    (verify off), it runs."""
    schema, _ = tables
    folder = tmp_path / "tampered"
    _stock_hive_table(spark, schema, "f_tampered", folder, 8, ["select cast(id % 40 as int), 's', id from range(400)"])
    _rename(folder, lambda b, i: f"{b:06d}_0" + (f"_copy_{i}" if i else ""))
    key = next(k for k in range(100) if hashing.bucket_id([k], ["int"], 8, "hive") == 5)
    stray = tmp_path / "stray"
    spark.sql(f"select cast({key} as int) as k, 's' as s, cast(-1 as bigint) as v").coalesce(1).write.parquet(
        str(stray)
    )
    (part,) = [f for f in stray.iterdir() if f.name.startswith("part-")]
    shutil.move(part, folder / "000003_0_copy_9")
    spark.sql(f"refresh table {schema}.f_tampered")
    sql = f"select k, count(*) from {schema}.f_tampered group by k"
    with extension_on(spark), session_settings(spark, FOREIGN_ON):
        with pytest.raises(Exception) as failed:
            spark.sql(sql).collect()
        with session_settings(spark, {contracts.FOREIGN_TABLES_VERIFY: "false"}):
            trusted = spark.sql(sql)
            assert "trusted" in trusted._jdf.queryExecution().executedPlan().toString()
            trusted.collect()
    message = str(failed.value)
    assert "000003_0_copy_9" in message and "is for bucket 3, but holds a row for bucket 5" in message, message
    assert f"k={key}" in message and contracts.FOREIGN_TABLES_SWITCH in message


def _random_query(rng: random.Random, t: str) -> str:
    names = [*FOREIGN, *PACKAGE]
    a = rng.choice(list(FOREIGN))
    b = rng.choice([n for n in names if n != a])
    where = rng.choice(
        [
            "",
            f"where x.k = {rng.randrange(-45, 260)}",
            f"where x.k in ({rng.randrange(-45, 260)}, {rng.randrange(-45, 10)}) or x.k is null",
            "where x.s <> 's3'",
            f"where x.v < {rng.randrange(3000)}",
        ]
    )
    kind = rng.choice(["join", "left join", "full join", "left semi join", "left anti join"])
    shape = rng.randrange(4)
    if shape == 0:
        return f"select k, count(*), sum(v) from {t}.{a} x {where} group by k"
    if shape == 1:
        return f"select x.k, x.v from {t}.{a} x {where}"
    cols = "x.k, x.v" if "semi" in kind or "anti" in kind else "x.k, y.k, x.v, y.v"
    body = f"from {t}.{a} x {kind} {t}.{b} y on x.k = y.k {where}"
    if shape == 2:
        return f"select count(*), sum(hash({cols})) {body}"
    return f"select x.k, count(*) {body} group by x.k"


def test_randomized_queries_over_foreign_tables(spark, tables):
    """120 random joins, aggregations and lookups over the foreign tables (and
    package ones), verified, answering as with bucketing and the extension
    off. Replay with SB_SEED=<seed printed> pytest tests/test_foreign_tables.py -k randomized."""
    schema, _ = tables
    seed = int(os.environ.get("SB_SEED", random.randrange(1 << 30)))
    print(f"SB_SEED={seed}")
    rng = random.Random(seed)
    bucketed = 0
    for i in range(120):
        sql = _random_query(rng, schema)
        with extension_on(spark), session_settings(spark, FOREIGN_ON):
            df = spark.sql(sql)
            plan = df._jdf.queryExecution().executedPlan().toString()
            got = sorted_rows(df)
        bucketed += "ForeignBucketedScan" in plan
        assert got == reference_rows(spark, sql), f"SB_SEED={seed}, query {i}: {sql}"
    assert bucketed >= 100, f"SB_SEED={seed}: {bucketed} queries read a foreign table bucketed"


def test_the_layout_test_and_files_command_read_hives_names(spark, tables, dbt_project, tmp_path):
    """Hive's names (`000003_0`, `_copy_N`) and Trino's are read as Hive reads
    them, each file in its own bucket (Spark's rule would put all in bucket 0):
    one file per bucket passes; more pass up to `max_files_per_bucket`."""
    schema, base = tables
    folder = tmp_path / "f_hive_one"
    _stock_hive_table(
        spark, schema, "f_hive_one", folder, 8, ["select cast(id % 100 as int), 's', id from range(0, 4000, 1, 1)"]
    )
    _rename(folder, lambda b, i: f"{b:06d}_0")
    spark.sql(f"refresh table {schema}.f_hive_one")
    most = max(len(files) for files in _files_by_bucket(base / "f_hive").values())
    assert most > 1
    dbt_project.write_file(
        "models/foreign_sources.yml",
        f"""version: 2
sources:
  - name: foreign
    schema: {schema}
    tables:
      - name: f_hive_one
        data_tests:
          - spark_bucketing.bucket_layout:
              name: hive_one_file_a_bucket
      - name: f_hive
        data_tests:
          - spark_bucketing.bucket_layout:
              name: hive_copies
          - spark_bucketing.bucket_layout:
              name: hive_copies_allowed
              arguments: {{max_files_per_bucket: {most}}}
      - name: f_trino
        data_tests:
          - spark_bucketing.bucket_layout:
              name: trino_names
              arguments: {{max_files_per_bucket: 3}}
""",
    )
    result = dbt_project.dbt("test", "--select", "source:foreign")
    outcome = {r.node.name: (str(r.status), r.message) for r in result.result.results}
    assert {name: status for name, (status, _) in outcome.items()} == {
        "hive_one_file_a_bucket": "pass",
        "hive_copies": "fail",
        "hive_copies_allowed": "pass",
        "trino_names": "pass",
    }, outcome
    failed = next(r for r in result.result.results if r.node.name == "hive_copies")
    assert "files for bucket" in failed.node.compiled_code and "no bucket id" not in failed.node.compiled_code
    cli = [sys.executable, "-m", "spark_bucketing.cli", "files"]
    hive = subprocess.run([*cli, "--hash", "hive", str(folder)], capture_output=True, text=True)
    assert hive.returncode == 0 and hive.stdout.count("1 file(s)") == 8, hive.stdout + hive.stderr
    spark_rule = subprocess.run([*cli, str(folder)], capture_output=True, text=True)
    assert spark_rule.returncode == 1 and "bucket 0\t8 file(s)" in spark_rule.stdout, spark_rule.stdout


@pytest.mark.parametrize("foreign", [True, False], ids=["foreign tables on", "foreign tables off"])
def test_the_checker_follows_the_setting(spark, tables, foreign):
    """The checker's verdicts (joins, aggregations, lookups) on foreign tables
    agree with the plans with the setting on and off, and its fix names the
    setting where it is off."""
    schema, _ = tables
    client = SparkClient(spark)
    catalog = Catalog()
    for name in [*FOREIGN, *PACKAGE]:
        catalog.add(relation_from_live(client, f"{schema}.{name}"))
    conf = {
        "spark.sql.shuffle.partitions": spark.conf.get("spark.sql.shuffle.partitions"),
        "spark.sql.extensions": EXTENSION_CLASS,
        contracts.FOREIGN_TABLES_SWITCH: str(foreign).lower(),
    }
    queries = [q for q, *_ in JOINS.values()] + [
        "select v from {t}.f_spark where k in (7, -3) or k is null",
        "select v from {t}.f_hive where k = 3",
    ]
    with extension_on(spark), session_settings(spark, {contracts.FOREIGN_TABLES_SWITCH: str(foreign).lower()}):
        for template in queries:
            sql = template.format(t=schema)
            findings = analyze_sql(sql, catalog, EngineSettings("spark", conf))
            results = verify(client, sql, findings)
            report = [
                (f.kind, [(s.relation, s.shuffle, s.reasons) for s in f.sides], r)
                for f, r in zip(findings, results, strict=True)
            ]
            assert findings and all(r["matched"] for r in results), (sql, report)
            if not foreign:
                texts = [t for f in findings for t in f.suggestions]
                assert any(contracts.FOREIGN_TABLES_SWITCH in t for t in texts), (sql, texts)
