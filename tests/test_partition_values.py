"""Partition values of any string survive every strategy and every number of
runs: a property test over awkward values (the characters Spark escapes in
folder names, non-ASCII, spaces at the ends, values that differ only in
case), compared after every run with an independent Python model of the rows.

Replay a run with SB_SEED=<seed> (printed at the start of each test)."""

from __future__ import annotations

import datetime as dt
import os
import random
from collections import Counter
from pathlib import Path

import pytest

from harness.dbt_project import failure_text, with_vars
from harness.spark import extension_on
from spark_bucketing import contracts
from spark_bucketing.files import local_path
from spark_bucketing.metadata import SparkClient, partition_records, read_table_metadata

AWKWARD_PIECES = [
    " ", "/", "=", ":", "%", "'", "\\", "#", "?", "[", "]", "*", "&", "+", "ü", "ß", "東京", "%2F", "%20", ",", "\"",
]  # fmt: skip
DAYS = [dt.date(2024, 1, 1), dt.date(2024, 2, 29)]
MODEL = "select k, v, p, n, d from {{ var('source') }}"


def awkward_values(rng: random.Random, count: int) -> list[str]:
    """Distinct strings a user could put in a partition column."""
    values: list[str] = []
    while len(values) < count:
        kind = rng.randrange(6)
        word = "".join(rng.choice("abcXYZ") for _ in range(rng.randint(1, 4)))
        if kind == 0:
            value = word + rng.choice(AWKWARD_PIECES) + word
        elif kind == 1:
            value = "".join(rng.choice(AWKWARD_PIECES + [word]) for _ in range(rng.randint(2, 6)))
        elif kind == 2:
            value = rng.choice([" ", "  "]) + word + rng.choice(["", " "])
        elif kind == 3 and values:
            value = rng.choice(values).swapcase()
        elif kind == 4:
            value = (word + rng.choice(AWKWARD_PIECES)) * rng.randint(6, 15)
        else:
            value = word
        if value.strip() and value not in values:
            values.append(value)
    return values


def seeded_rng(request) -> random.Random:
    seed = int(os.environ.get("SB_SEED", random.randrange(1_000_000)))
    print(f"\n{request.node.name}: SB_SEED={seed}")
    return random.Random(seed)


def write_source(spark, table: str, rows: list[tuple]) -> None:
    df = spark.createDataFrame(rows, "k int, v string, p string, n int, d date")
    df.write.mode("overwrite").saveAsTable(table)


def table_rows(spark, table: str) -> Counter:
    return Counter(tuple(r) for r in spark.sql(f"select k, v, p, n, d from {table}").collect())


def random_rows(rng: random.Random, run: int, partitions: list[tuple]) -> list[tuple]:
    rows = []
    for i in range(rng.randint(20, 60)):
        p, n, d = rng.choice(partitions)
        rows.append((rng.randrange(50), f"r{run}-{i}", p, n, d))
    return rows


STRATEGIES = ["table", "insert_overwrite", "static", "append"]


# (strategy, bucket_hash, extension, bucket_records): every strategy in both
# families with the extension off; with it on, both families' runs that
# publish partitions, which then write them into folders with no catalog
# entry; and every strategy with the records in partition parameters
# (metadata format 2, which needs the extension), the families alternating.
TABLE, PARTITIONS = "table_properties", "partition_parameters"
CASES = (
    [(s, h, False, TABLE) for s in STRATEGIES for h in ("hive", "spark")]
    + [(s, h, True, TABLE) for s in STRATEGIES if s != "table" for h in ("hive", "spark")]
    + [(s, h, True, PARTITIONS) for s, h in zip(STRATEGIES, ("hive", "spark", "hive", "spark"), strict=True)]
)


@pytest.mark.parametrize(("strategy", "bucket_hash", "extension", "records"), CASES)
def test_awkward_partition_values_survive_every_strategy(
    spark, dbt_project, request, strategy, bucket_hash, extension, records
):
    rng = seeded_rng(request)
    name = f"pv_{strategy}_{bucket_hash}{'_ext' if extension else ''}{'_parts' if records == PARTITIONS else ''}"
    source = f"{dbt_project.schema}.src_{name}"
    universe = [(p, n, d) for p in awkward_values(rng, 6) for n in (-1, 7) for d in DAYS]
    expected: dict[tuple, Counter] = {}
    for run in range(4):
        config = {
            "materialized": "bucketed_table" if strategy == "table" else "bucketed_incremental",
            "clustered_by": ["k"],
            "buckets": 4,
            "partition_by": ["p", "n", "d"],
            "bucket_hash": bucket_hash,
            "bucket_records": records,
        }
        touched = rng.sample(universe, rng.randint(1, 6))
        if strategy == "static":
            listed = rng.sample(universe, rng.randint(1, 4))
            config["partitions"] = [{"p": p, "n": n, "d": d.isoformat()} for p, n, d in listed]
            touched = listed[: rng.randint(0, len(listed))] or listed[:1]
        elif strategy in ("insert_overwrite", "append"):
            config["incremental_strategy"] = strategy
        rows = random_rows(rng, run, touched)
        write_source(spark, source, rows)
        dbt_project.write_model(name, with_vars(MODEL, source=source), config)
        with extension_on(spark, extension):
            result = dbt_project.run(name, expect_ok=False)
        assert result.success, f"run {run}: {failure_text(result)}"

        new: dict[tuple, Counter] = {}
        for r in rows:
            new.setdefault(r[2:], Counter())[r] += 1
        if strategy == "table" or run == 0:
            expected = new
        elif strategy == "append":
            for part, c in new.items():
                expected.setdefault(part, Counter()).update(c)
        else:
            replaced = listed if strategy == "static" else list(new)
            for part in replaced:
                expected.pop(part, None)
            expected.update(new)
        want = Counter()
        for c in expected.values():
            want.update(c)
        assert table_rows(spark, f"{dbt_project.schema}.{name}") == want, f"run {run}"

    result = dbt_project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
    assert result.success, failure_text(result)
    assert_readers_agree(spark, f"{dbt_project.schema}.{name}", records == PARTITIONS)


def assert_readers_agree(spark, table: str, in_partitions: bool = False) -> None:
    """The Python and Scala readers of the metadata format read the records
    the macros wrote (md5 keys for long paths, escaped folder names; in
    format 2 the partitions' parameters): one record per partition the
    catalog lists, with the same files and spec."""
    props = {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}
    assert props[contracts.FORMAT_VERSION_KEY] == ("2" if in_partitions else "1")
    records = read_table_metadata(SparkClient(spark), table).partitions if in_partitions else partition_records(props)
    assert {r.path for r in records} == {r.partition for r in spark.sql(f"show partitions {table}").collect()}
    state = spark._jsparkSession.sessionState()
    catalog_table = state.catalog().getTableMetadata(state.sqlParser().parseTableIdentifier(table))
    reader = spark._jvm.sparkbucketing.PartitionRecords
    scala = reader.inPartitions(spark._jsparkSession, catalog_table) if in_partitions else reader.of(catalog_table)
    read = [scala.apply(i) for i in range(scala.size())]
    assert sorted((r.files(), r.hash(), r.spec().numBuckets()) for r in read) == sorted(
        (r.files, r.spec.hash, r.spec.buckets) for r in records
    )


def test_folder_of_a_file_is_the_folder_spark_wrote(spark, dbt_project):
    """file_dir_expr (the package's one reading of a file's folder) against
    the folders on disk and the partitions SHOW PARTITIONS lists."""
    values = awkward_values(random.Random(7), 12) + ["a+b", "a%20b", "%2F", "Zürich", " lead", "trail "]
    table = f"{dbt_project.schema}.dirs_src"
    spark.createDataFrame([(i, v) for i, v in enumerate(values)], "k int, p string").write.mode(
        "overwrite"
    ).partitionBy("p").saveAsTable(table)
    dbt_project.write_model(
        "dirs",
        "select p, {{ spark_bucketing.file_dir_expr() }} as dir, "
        "{{ spark_bucketing.partition_path_expr(spark_bucketing.file_dir_expr(), 1) }} as path from " + table,
        {"materialized": "view"},
    )
    dbt_project.run("dirs")
    listed = {r[0] for r in spark.sql(f"show partitions {table}").collect()}
    rows = spark.sql(f"select * from {dbt_project.schema}.dirs").collect()
    assert sorted(r.p for r in rows) == sorted(values)
    for r in rows:
        folder = local_path(r.dir)
        assert folder.is_dir(), (r.p, r.dir)
        assert any(f.suffix == ".parquet" for f in folder.iterdir()), (r.p, r.dir)
        assert r.path == folder.name and r.path in listed, (r.p, r.path)
    assert Path(local_path(rows[0].dir)).parent == Path(local_path(rows[1].dir)).parent
