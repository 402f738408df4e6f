"""The extension's batched switch: with the session extension loaded and on,
a run moves all the partitions it replaces in one statement (one metastore
call, one transaction); a failure before it, inside it or after it leaves
every partition on its old rows or its new ones. With the extension off, the
per-partition path (tests/test_cost.py counts its statements)."""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

import pytest

from harness.dbt_project import failure_text, node_messages
from harness.spark import extension_on, local_path, sql_string, table_location
from spark_bucketing import contracts
from spark_bucketing.files import input_file_path
from tests.support.incremental import (
    Expected,
    commit_end,
    die_then_finish,
    partition_layout_problems,
    run_model,
    run_statements,
    statement_body,
    statement_payload,
    step,
    table_rows,
)


def _locations(spark, table: str) -> dict[str, str]:
    """Each partition's location, from the catalog."""
    out = {}
    for row in spark.sql(f"show partitions {table}").collect():
        pairs = (part.split("=", 1) for part in row[0].split("/"))
        spec = ", ".join(f"{k} = {sql_string(unquote(v))}" for k, v in pairs)
        rows = spark.sql(f"describe table extended {table} partition ({spec})").collect()
        out[row[0]] = next(r.data_type for r in rows if r.col_name == "Location")
    return out


def test_a_backfill_switches_every_replaced_partition_in_one_statement(spark, dbt_project):
    expected = Expected()
    name = "batched_backfill"
    base = {"strategy": "insert_overwrite", "rows": 30}
    with extension_on(spark):
        table = step(spark, dbt_project, name, expected, {**base, "days": list(range(6))})
        old_folders = _locations(spark, table)
        vars_ = {**base, "days": [1, 2, 3, 4, 8, 9], "tag": 1}
        statements = [statement_body(s) for s in run_statements(dbt_project, name, vars_)]
        expected.apply(spark, vars_)
    # One statement records the two new partitions, moves the four replaced
    # ones, adds the two new ones and then records the four (format 1's
    # records in the table's properties): no partition is listed without a
    # record, or recorded before it points at the files its record describes.
    (batch,) = [s for s in statements if s.lower().startswith(contracts.SWITCH_STATEMENT)]
    payload = statement_payload(batch)
    moved = [m for m in payload["moves"] if not m["create"]]
    added = [m for m in payload["moves"] if m["create"]]
    assert sorted(m["spec"]["day"] for m in moved) == [f"2024-01-0{d}" for d in (2, 3, 4, 5)]
    assert sorted(m["spec"]["day"] for m in added) == ["2024-01-09", "2024-01-10"]
    assert all("/_bucketing/" in m["location"] for m in payload["moves"])

    def recorded(props: dict) -> list[str]:
        return sorted(k.removeprefix(contracts.PARTITION_KEY_PREFIX + "day=") for k in props)

    assert recorded(payload["table_properties"]) == ["2024-01-09", "2024-01-10"]
    after = {k: v for k, v in payload["table_properties_after"].items() if k.startswith(contracts.PARTITION_KEY_PREFIX)}
    assert recorded(after) == [f"2024-01-0{d}" for d in (2, 3, 4, 5)]
    assert not [s for s in statements if re.search(r"\) set location ", s)]
    assert not [s for s in statements if re.match(r"alter table \S+ (add partition|set tblproperties)", s)]
    # The four replaced folders are deleted by the statement that ends the commit, not the scratch table's three:
    # the switch itself, since they were the folders the partitions' records named.
    ended, ending = commit_end(statements)
    assert ended == batch and len(ending["delete"]) == 4 and ending["release_lock"]
    assert not [s for s in statements if s.lower().startswith(contracts.CLEAN_STATEMENT)]
    assert not [s for s in statements if s.lower().startswith("drop view")]
    assert not [s for s in statements if "__dbt_scratch" in s]
    replaced = [local_path(loc) for day, loc in old_folders.items() if day[-2:] in ("02", "03", "04", "05")]
    assert len(replaced) == 4 and not [p for p in replaced if p.exists()]
    assert [p for day, p in old_folders.items() if day[-2:] in ("01", "06")]
    assert all(local_path(loc).exists() for day, loc in old_folders.items() if day[-2:] in ("01", "06"))
    assert table_rows(spark, table) == expected.rows()
    assert partition_layout_problems(spark, table) == []
    # Each switched partition reads from the folder the run wrote.
    locations = _locations(spark, table)
    run_folders = {loc.rsplit("/", 1)[0] for day, loc in locations.items() if day[-2:] in ("02", "03", "04", "05")}
    assert len(run_folders) == 1 and "/_bucketing/" in run_folders.pop()
    result = dbt_project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
    assert result.success, failure_text(result)


SWITCH_STEPS = ["before_switch", "inside_switch", "mid_switch", "before_cleanup"]
V2 = {"bucket_hash": "hive", "bucketing_version": 2}
FAMILIES = {"spark": {"bucket_hash": "spark"}, "hive": {"bucket_hash": "hive"}, "hive_v2": V2}


@pytest.mark.parametrize(
    ("family", "fail_at"),
    [(family, fail_at) for family in ("spark", "hive") for fail_at in SWITCH_STEPS]
    # Hive v2's run differs from the others only in its write: the steps on each side of it.
    + [("hive_v2", "before_switch"), ("hive_v2", "inside_switch")],
)
def test_a_failure_around_the_batched_switch_loses_nothing(spark, dbt_project, fail_at, family):
    """Injected before the batch, inside it (every partition moved or added,
    their records not yet written), right after it, and before the cleanup:
    every partition holds its old or its new rows, in the buckets of its
    family (Hive v2's checked by the Python twin of its hash), and the next
    run finishes. No hash family has a side entry: the run's partitions are
    in its folders only (untracked)."""
    first = {"days": [0, 1, 2], **FAMILIES[family]}
    then = {"days": [1, 2, 3], "tag": 1, **FAMILIES[family]}
    with extension_on(spark):
        die_then_finish(spark, dbt_project, f"batched_{fail_at}_{family}", first, then, fail_at)


def _published_from_one_folder(statements: list[str]) -> None:
    """A run's statements (lower case) write its partitions with one folder
    statement and switch them with one statement, with no side entry: no
    statement touches `<alias>__dbt_incr` but the drop of a dead run's."""
    assert len([s for s in statements if s.startswith(contracts.WRITE_FOLDER_STATEMENT)]) == 1
    assert not [s for s in statements if "__dbt_incr" in s and not s.startswith("drop table if exists")]
    assert len([s for s in statements if s.startswith(contracts.SWITCH_STATEMENT)]) == 1


def test_with_the_extension_a_hive_v2_run_writes_only_its_folder(spark, dbt_project):
    """A Hive v2 run with the extension on publishes as the other families
    do: the extension's folder write (rows placed by its v2 hash), no side
    entry over the folder and no partitions recovered into one, a check from
    the footers that reads no row again (the writer's hash is the one that
    defines a v2 bucket here), and one switch. The rows land in the buckets
    the Python twin of Hive's v2 hash gives them."""
    expected = Expected()
    name = "v2_folder_only"
    base = {"strategy": "insert_overwrite", "rows": 30, **V2}
    with extension_on(spark):
        table = step(spark, dbt_project, name, expected, {**base, "days": [0, 1, 2]})
        vars_ = {**base, "days": [1, 2, 3], "tag": 1}
        statements = [statement_body(s).lower() for s in run_statements(dbt_project, name, vars_)]
        expected.apply(spark, vars_)
    _published_from_one_folder(statements)
    assert not [s for s in statements if "recover partitions" in s]
    assert not [s for s in statements if s.startswith("select") and f"{contracts.HIVE_HASH_V2_FUNCTION}(" in s]
    assert table_rows(spark, table) == expected.rows()
    assert partition_layout_problems(spark, table) == []
    result = dbt_project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
    assert result.success, failure_text(result)


def test_with_the_extension_a_run_writes_a_folder_with_no_catalog_entry(spark, dbt_project):
    """A Spark-hash run with the extension writes its partitions into its
    folder with no side table: nothing is created in the catalog and no
    partition added to the metastore before the switch. A run stopped before
    the switch shows that state (the folder holds exactly the run's
    partitions); the next run replaces and adds partitions, and the table
    holds exactly the expected rows. An append's staged rows are kept in
    their folders only (untracked)."""
    expected = Expected()
    name = "untracked_side"
    base = {"strategy": "insert_overwrite", "rows": 30, "bucket_hash": "spark"}
    side = f"{dbt_project.schema}.{name}__dbt_incr"
    with extension_on(spark):
        table = step(spark, dbt_project, name, expected, {**base, "days": list(range(6))})
        vars_ = {**base, "days": [1, 2, 3, 4, 8, 9], "tag": 1}
        before = {t.name for t in spark.catalog.listTables(dbt_project.schema)}
        result = run_model(dbt_project, name, vars_, expect_ok=False, fail_at="before_switch")
        assert "injected failure at step 'before_switch'" in failure_text(result) + str(node_messages(result))
        assert {t.name for t in spark.catalog.listTables(dbt_project.schema)} == before
        assert not spark.catalog.tableExists(side)
        runs = list((table_location(spark, table) / "_bucketing").iterdir())
        assert len(runs) == 1
        folders = sorted(p.name for p in runs[0].iterdir() if p.is_dir())
        assert folders == [f"day=2024-01-{d + 1:02d}" for d in (1, 2, 3, 4, 8, 9)]
        assert table_rows(spark, table) == expected.rows()  # nothing published yet
        statements = [statement_body(s) for s in run_statements(dbt_project, name, vars_)]
        expected.apply(spark, vars_)
    lowered = [s.lower() for s in statements]
    _published_from_one_folder(lowered)
    assert not [s for s in lowered if s.startswith("show partitions") and "__dbt_incr" in s]
    assert table_rows(spark, table) == expected.rows()
    assert partition_layout_problems(spark, table) == []
    assert not spark.catalog.tableExists(side)
    # An append stages the new rows in a folder of its own too, read through the extension.
    vars_ = {**base, "strategy": "append", "days": [9, 10], "tag": 2}
    with extension_on(spark):
        statements = [statement_body(s).lower() for s in run_statements(dbt_project, name, vars_)]
        expected.apply(spark, vars_)
    assert not [s for s in statements if f"{name}__dbt_new" in s or f"{name}__dbt_incr" in s]
    assert len([s for s in statements if s.startswith(contracts.WRITE_FOLDER_STATEMENT)]) == 2
    assert [s for s in statements if f"{contracts.FOLDER_READ_FUNCTION}(" in s]
    assert table_rows(spark, table) == expected.rows()
    assert partition_layout_problems(spark, table) == []
    result = dbt_project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
    assert result.success, failure_text(result)


def _folder_sql(folder: dict) -> str:
    return sql_string(json.dumps(folder))


def test_the_folder_listing_finds_the_partitions_a_scan_reads(spark, tmp_path):
    """A written folder's partitions, as the footer function lists them, are
    the partitions a scan of it through the folder function reads: a
    partition column whose name starts with `_` counts; a folder holding
    only `_SUCCESS` or a file still being copied does not. A description of
    a format other than Parquet or ORC is refused, and nothing written."""
    folder = {
        "location": f"{tmp_path}/u",
        "format": "parquet",
        "columns": [["v", "int"], ["_src", "string"]],
        "partition_by": ["_src"],
    }
    with extension_on(spark):
        spark.sql(
            f"{contracts.WRITE_FOLDER_STATEMENT} {_folder_sql(folder)} as select * from values (1, 'a'), (2, 'b')"
        )
        for name, file in (("_src=c", "_SUCCESS"), ("_src=d", "part-0.parquet._COPYING_")):
            (tmp_path / "u" / name).mkdir()
            (tmp_path / "u" / name / file).write_text("")
        files = spark.sql(f"select * from {contracts.TABLE_FILES_FUNCTION}({_folder_sql(folder)})").collect()
        scanned = spark.sql(f"select distinct `_src` from {contracts.FOLDER_READ_FUNCTION}({_folder_sql(folder)})")
        scanned = sorted(r._src for r in scanned.collect())
        # A description of another format is refused by the folder statement and both functions.
        csv = _folder_sql({**folder, "location": f"{tmp_path}/csv", "format": "CSV"})
        for sql in (
            f"select * from {contracts.TABLE_FILES_FUNCTION}({csv})",
            f"select * from {contracts.FOLDER_READ_FUNCTION}({csv})",
            f"{contracts.WRITE_FOLDER_STATEMENT} {csv} as select 1, 'a'",
        ):
            with pytest.raises(Exception, match="Parquet or ORC files, not 'csv'"):
                spark.sql(sql).collect()
    assert not (tmp_path / "csv").exists()
    assert sorted({r.partition_values[0] for r in files}) == ["a", "b"]
    assert sorted({r.file.rsplit("/", 2)[1] for r in files}) == ["_src=a", "_src=b"]
    assert scanned == ["a", "b"]


def _two_buckets_by_p(location: str) -> dict:
    """A folder of (k int, p string), partitioned by p, 2 buckets by k."""
    return {
        "location": location,
        "format": "parquet",
        "columns": [["k", "int"], ["p", "string"]],
        "partition_by": ["p"],
        "clustered_by": ["k"],
        "buckets": 2,
    }


def test_the_folder_write_runs_its_then_query_on_the_folder_it_wrote(spark, tmp_path):
    """`write folder .. then '<query>' as <query>` writes the folder, then
    plans and runs the `then` query, and returns its rows: a footer listing
    of the folder sees the files the write made (planned before the write,
    it would see none), as the same query run on its own afterwards does."""
    folder = _two_buckets_by_p(f"{tmp_path}/w")
    listing = f"select file, rows from {contracts.TABLE_FILES_FUNCTION}({_folder_sql(folder)})"
    rows = "select * from values (1, 'a'), (2, 'a'), (3, 'b')"
    with extension_on(spark):
        write = f"{contracts.WRITE_FOLDER_STATEMENT} {_folder_sql(folder)} then {sql_string(listing)} as {rows}"
        returned = spark.sql(write)
        assert returned.columns == ["file", "rows"]
        returned = sorted(tuple(r) for r in returned.collect())
        after = sorted(tuple(r) for r in spark.sql(listing).collect())
    assert returned == after and sum(n for _, n in returned) == 3
    assert len({f.rsplit("/", 2)[1] for f, _ in returned}) == 2
    # The same query on another folder (its columns planned once for both): that folder's rows.
    other = {**folder, "location": f"{tmp_path}/w2"}
    listing2 = f"select file, rows from {contracts.TABLE_FILES_FUNCTION}({_folder_sql(other)})"
    with extension_on(spark):
        write = f"{contracts.WRITE_FOLDER_STATEMENT} {_folder_sql(other)} then {sql_string(listing2)}"
        returned2 = sorted(tuple(r) for r in spark.sql(f"{write} as {rows} where col1 > 1").collect())
    assert sum(n for _, n in returned2) == 2 and all("/w2/" in f for f, _ in returned2)


def test_the_folder_write_carries_the_records_of_the_partitions_it_wrote(spark, tmp_path):
    """`.. then '<query>' records of <table> as <query>`: each row of the
    `then` query also carries the record and folder of the table's
    partition of its `__sb_path`, as the records function reads them (a
    value Spark's folder names escape included); NULL for a partition the
    table does not list."""
    spark.sql("create database if not exists batched")
    table = "batched.carried_records"
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} (k int, p string) using parquet partitioned by (p) location '{tmp_path}/t'")
    spark.sql(f"insert into {table} values (1, 'a b/c'), (2, 'x')")
    folder = _two_buckets_by_p(f"{tmp_path}/w")
    # A partition's folder name from a file's URI, as the package's check derives it (macros/catalog/files.sql).
    paths = (
        "select __sb_path, sum(rows) as n from (select regexp_extract(url_decode(replace(file, '+', '%2B')), "
        f"'([^/]+)/[^/]*$', 1) as __sb_path, rows from {contracts.TABLE_FILES_FUNCTION}({_folder_sql(folder)})) "
        "group by __sb_path"
    )
    rows = "select * from values (1, 'a b/c'), (3, 'a b/c'), (2, 'x'), (4, 'new')"
    with extension_on(spark):
        write = f"{contracts.WRITE_FOLDER_STATEMENT} {_folder_sql(folder)} then {sql_string(paths)} records of {table}"
        returned = spark.sql(f"{write} as {rows}")
        assert returned.columns == ["__sb_path", "n", "__sb_record", "__sb_location"]
        got = {r["__sb_path"]: (r["n"], r["__sb_record"], r["__sb_location"]) for r in returned.collect()}
        listed = {
            r.path: (r.record, r.location)
            for r in spark.sql(f"select * from {contracts.PARTITION_RECORDS_FUNCTION}('{table}')").collect()
        }
    assert sorted(listed) == ["p=a b%2Fc", "p=x"]
    assert got == {
        "p=a b%2Fc": (2, *listed["p=a b%2Fc"]),
        "p=x": (1, *listed["p=x"]),
        "p=new": (1, None, None),
    }
    assert all(location for _, location in listed.values())


def test_the_folder_function_reads_partition_values_with_their_declared_types(spark, tmp_path):
    """The folder function reads a partition value as its declared type,
    not as Spark would infer it from the folder name: a string '01' stays
    '01', NULL stays NULL, a date is a date."""
    folder = {
        "location": f"{tmp_path}/t",
        "format": "parquet",
        "columns": [["k", "int"], ["p", "string"], ["d", "date"]],
        "partition_by": ["p", "d"],
    }
    rows = "select * from values (1, '01', date'2024-01-02'), (2, null, date'2024-01-03'), (3, 'a/b', date'2024-01-02')"
    with extension_on(spark):
        spark.sql(f"{contracts.WRITE_FOLDER_STATEMENT} {_folder_sql(folder)} as {rows}")
        read = spark.sql(f"select * from {contracts.FOLDER_READ_FUNCTION}({_folder_sql(folder)})")
        assert read.schema.simpleString() == "struct<k:int,p:string,d:date>"
        got = sorted(tuple(r) for r in read.collect())
    assert got == sorted(tuple(r) for r in spark.sql(rows).collect())


@pytest.mark.parametrize("file_format", ["parquet", "orc"])
def test_the_footer_listing_is_what_a_scan_counts(spark, tmp_path, file_format):
    """The extension's table function (the check's rows per file of a
    bucketed folder) gives, file for file, the URI, partition values and
    rows a scan of a table over the folder counting rows per
    input_file_name() gives: for string values Spark's folder names escape,
    NULL, dates, timestamps and numbers."""
    spark.sql("create database if not exists batched")
    table = f"batched.footers_{file_format}"
    spark.sql(
        f"create table {table} (v bigint, s string, d date, ts timestamp, n int) using {file_format} "
        f"partitioned by (s, d, ts, n) location '{tmp_path}/f'"
    )
    values = ["a/b", "x=y", "50%", "a%2Fb", " lead", "é ü", "q?#*[]", None]
    with extension_on(spark):
        spark.createDataFrame(
            [(i, values[i % len(values)], i % 3) for i in range(200)], "v bigint, s string, k int"
        ).selectExpr(
            "v",
            "s",
            "date_add(date'2024-02-28', k) as d",
            "timestamp'2024-01-01 10:30:00' + make_interval(0, 0, 0, 0, k) as ts",
            "case when k = 2 then null else k - 1 end as n",
        ).repartition(3).write.insertInto(table)
        spark.sql(f"refresh table {table}")
        folder = {
            "location": f"{tmp_path}/f",
            "format": file_format,
            "columns": [["v", "bigint"], ["s", "string"], ["d", "date"], ["ts", "timestamp"], ["n", "int"]],
            "partition_by": ["S", "d", "ts", "n"],
        }
        function = f"{contracts.TABLE_FILES_FUNCTION}({sql_string(json.dumps(folder))})"
        listed = spark.sql(f"select file, partition_values, rows from {function}").collect()
        # Analyzed and run in the driver: no Spark job.
        plan = spark.sql(f"select * from {function}")._jdf.queryExecution()
        assert "LocalTableScan" in plan.executedPlan().toString()
    scanned = spark.sql(
        "select input_file_name() as file, array(cast(s as string), cast(d as string), cast(ts as string), "
        f"cast(n as string)) as partition_values, count(*) as rows from {table} group by all"
    ).collect()
    assert len(listed) >= 8 * 3
    assert sorted(map(tuple, listed)) == sorted(map(tuple, scanned))
    assert sum(r.rows for r in listed) == 200


def _rows_sql(v_type: str) -> str:
    """600 rows over 3 days: int keys with negatives, a sort column out of order."""
    return (
        f"select cast(id % 50 - 20 as int) as k, cast(id as {v_type}) as v, cast(id * 7919 % 601 as string) as s, "
        "date_add(date'2024-01-01', cast(id % 3 as int)) as d from range(0, 600, 1, 3)"
    )


def _bucket_files(spark, root, file_format: str) -> dict:
    """{(partition folder, bucket in the name): [rows of the file, in file order]}."""
    out = {}
    for path in sorted(p for p in root.glob("d=*/*part-*") if not p.name.startswith(".")):
        got = spark.read.format(file_format).load(str(path)).collect()
        out[(path.parent.name, int(re.search(r"_(\d+)\.c\d+", path.name).group(1)))] = [tuple(r) for r in got]
    return out


def _written_like_inserted(spark, tmp_path, table: str, file_format: str, rows: str, bucket: str, folder: dict) -> str:
    """Routes `rows` by (d, `bucket`), inserts them into `table` (its folder
    tmp_path/t) and writes them into the folder `folder` describes
    (tmp_path/f) with the extension's statement (behind a comment, as dbt
    sends it), and checks the two give the same files: one per (partition,
    bucket) with the same bucket in its name, the same rows in each, each
    sorted by s. Returns the folder statement."""
    view = table.replace(".", "_") + "_rows"
    routed = f"select k, v, s, d from (select /*+ REPARTITION(d, b) */ *, {bucket} as b from ({rows}) r) x"
    spark.sql(f"create or replace temporary view {view} as {routed}")
    spark.sql(f"insert into {table} partition (d) select * from {view}")
    write = f"{contracts.WRITE_FOLDER_STATEMENT} {_folder_sql(folder)} as select * from {view}"
    with extension_on(spark):
        spark.sql(f"/* dbt's comment */ {write}")
    written = _bucket_files(spark, tmp_path / "f", file_format)
    inserted = _bucket_files(spark, tmp_path / "t", file_format)
    assert len(written) == 3 * 4
    assert {key: sorted(r) for key, r in written.items()} == {key: sorted(r) for key, r in inserted.items()}
    for key, got in written.items():
        assert [r[2] for r in got] == sorted(r[2] for r in got), key
    return write


def _folder(tmp_path, file_format: str, partition_by: str, clustered_by: str, sorted_by: str, **more) -> dict:
    """The description of tmp_path/f: the columns of _rows_sql, 4 buckets."""
    return {
        "location": f"{tmp_path}/f",
        "format": file_format,
        "columns": [["k", "int"], ["v", "bigint"], ["s", "string"], ["d", "date"]],
        "partition_by": [partition_by],
        "clustered_by": [clustered_by],
        "sorted_by": [sorted_by],
        "buckets": 4,
        **more,
    }


@pytest.mark.parametrize("file_format", ["parquet", "orc"])
def test_the_folder_write_writes_what_an_insert_into_the_bucketed_table_writes(spark, tmp_path, file_format):
    """The extension's folder write gives the files an INSERT INTO a bucketed
    table of the same description gives: one file per (partition, bucket)
    with the same bucket in its name, the same rows in each, each sorted by
    sorted_by. It takes the query's columns by position as an INSERT does
    (casting an int to the folder's bigint), finds columns in any case,
    and refuses a folder that exists, leaving it as it was."""
    spark.sql("create database if not exists batched")
    table = f"batched.written_{file_format}"
    spark.sql(
        f"create table {table} (k int, v bigint, s string, d date) using {file_format} options (maxRecordsPerFile '0') "
        f"partitioned by (d) clustered by (k) sorted by (s) into 4 buckets location '{tmp_path}/t'"
    )
    folder = _folder(tmp_path, file_format, "D", "K", "S")
    write = _written_like_inserted(spark, tmp_path, table, file_format, _rows_sql("int"), "pmod(hash(k), 4)", folder)
    written = _bucket_files(spark, tmp_path / "f", file_format)
    assert spark.read.format(file_format).load(f"{tmp_path}/f").schema["v"].dataType.simpleString() == "bigint"
    with extension_on(spark), pytest.raises(Exception, match="PATH_ALREADY_EXISTS"):
        spark.sql(write)
    assert _bucket_files(spark, tmp_path / "f", file_format) == written


@pytest.mark.parametrize("file_format", ["parquet", "orc"])
def test_a_hive_v1_folder_write_writes_what_an_insert_into_the_hive_table_writes(spark, tmp_path, file_format):
    """A folder described with Hive's bucketing version 1 is written as
    Spark's insert into a bucketed Hive table of that description writes it:
    the same files under Hive's names (`0000b_0_part-..._0000b.c000`, the
    names Hive and Trino read the bucket from), the same rows in each, each
    sorted by sorted_by."""
    spark.sql("create database if not exists batched")
    spark.sql(
        "create or replace temporary function spark_bucketing_hive_hash"
        " as 'org.apache.hadoop.hive.ql.udf.generic.GenericUDFHash'"
    )
    table = f"batched.hive_written_{file_format}"
    spark.sql(
        f"create table {table} (k int, v bigint, s string) partitioned by (d date) clustered by (k) sorted by (s)"
        f" into 4 buckets stored as {file_format} location '{tmp_path}/t'"
    )
    spark.sql(f"alter table {table} set serdeproperties ('maxRecordsPerFile' = '0')")
    rows = _rows_sql("bigint")
    bucket = "((spark_bucketing_hive_hash(k) & 2147483647) % 4)"
    folder = _folder(tmp_path, file_format, "d", "k", "s", bucketing_version=1)
    _written_like_inserted(spark, tmp_path, table, file_format, rows, bucket, folder)
    names = [p.name for p in (tmp_path / "f").glob("d=*/*part-*") if not p.name.startswith(".")]
    assert names and all(re.match(r"^(\d{5})_0_part-.*_\1\.c000", n) for n in names), names
    # Every row is in the file of the bucket Hive's own function gives it.
    hive_bucket = {
        r.k: r.b for r in spark.sql(f"select k, {bucket} as b from (select distinct k from ({rows}))").collect()
    }
    for key, got in _bucket_files(spark, tmp_path / "f", file_format).items():
        assert {hive_bucket[r[0]] for r in got} == {key[1]}, key


def _statement_sql(statement: str, table: str, payload: list | dict) -> str:
    """One of the extension's statements, its JSON payload as an escaped SQL string."""
    return f"{statement} {table} locations {sql_string(json.dumps(payload))}"


def test_a_batch_that_fails_inside_the_metastore_moves_no_partition(spark, tmp_path):
    """The metastore applies the batch in one transaction: a partition it
    cannot store (a location longer than its column) makes the whole call
    fail, and the partition before it in the batch keeps its old folder. So
    does a partition the table does not have (found before the call)."""
    spark.sql("create database if not exists batched")
    spark.sql("create table batched.t (v int, day string) using parquet partitioned by (day)")
    spark.sql("insert into batched.t values (1, 'a'), (2, 'b')")
    before = _locations(spark, "batched.t")
    fresh = tmp_path / "fresh"
    spark.range(1).selectExpr("cast(id + 10 as int) as v").write.parquet(str(fresh))
    too_long = f"file:{tmp_path}/{'x' * 5000}"
    for moves, error in (
        (
            [{"spec": {"day": "a"}, "location": f"file:{fresh}"}, {"spec": {"day": "b"}, "location": too_long}],
            "Unable to alter partition",
        ),
        (
            [{"spec": {"day": "a"}, "location": f"file:{fresh}"}, {"spec": {"day": "zz"}, "location": f"file:{fresh}"}],
            "PARTITIONS_NOT_FOUND",
        ),
    ):
        with extension_on(spark), pytest.raises(Exception, match=error):
            spark.sql(_statement_sql(contracts.SWITCH_STATEMENT, "batched.t", moves))
        assert _locations(spark, "batched.t") == before
        assert sorted(r.v for r in spark.sql("select v from batched.t").collect()) == [1, 2]
    with extension_on(spark):
        move = {"spec": {"DAY": "a"}, "location": f"file:{fresh}"}
        spark.sql(_statement_sql(contracts.SWITCH_STATEMENT, "batched.t", [move]))
    # A folder outside the table's folder: refused, and nothing deleted (the
    # folder inside the table's, listed first, included).
    inside = local_path(before["day=a"])
    with extension_on(spark), pytest.raises(Exception, match="is not inside"):
        ending = {"delete": [before["day=a"], f"file:{fresh}"]}
        spark.sql(_statement_sql(contracts.CLEAN_STATEMENT, "batched.t", ending))
    assert inside.is_dir() and fresh.is_dir()
    # The column's name in any case; the partition now reads the new folder.
    assert sorted(r.v for r in spark.sql("select v from batched.t").collect()) == [2, 10]


def _switch_with_end(spark, table: str, day: str, location: str, end: dict):
    """The switch of one partition to `location`, with the end of the commit `end` (and the lock's entry)."""
    payload = {"moves": [{"spec": {"day": day}, "location": location}], "end": end}
    return spark.sql(_statement_sql(contracts.SWITCH_STATEMENT, table, payload)).collect()


def test_the_switch_ends_the_commit_only_where_the_partitions_left_the_folders_expected(spark, tmp_path):
    """With "end", the switch runs the statement that ends the commit after
    its moves (the properties set, the run's folders deleted, the lock's entry
    dropped) where each moved partition was in its expected folder, spelled
    either way (`file:/..`, `file:///../`), and says so on every row; where
    one was elsewhere (a stale record) it moves the partitions and leaves the
    end to the run: nothing deleted, set or released. A folder to delete
    outside the table's refuses the whole statement before anything moves;
    the tests' injected failure between the two leaves the partitions moved,
    the folders there and the lock released."""
    table = "batched.ends"
    spark.sql("create database if not exists batched")
    spark.sql(f"create table {table} (v int, day string) using parquet partitioned by (day)")
    spark.sql(f"insert into {table} values (1, 'a'), (2, 'b')")
    root = table_location(spark, table)

    def run_folder(name: str, v: int) -> str:
        folder = root / "_bucketing" / name / "day=x"
        spark.range(1).selectExpr(f"cast({v} as int) as v").write.parquet(str(folder))
        return f"file:{folder}"

    def end(expect_left: list[str], delete: list[str], entry: str, **extra) -> dict:
        return {
            "expect_left": expect_left,
            "delete": delete,
            "release_lock": f"batched.{entry}",
            "keep": [],
            "table_properties": {"ended": entry},
            "unset_properties": [],
            "started_before": 0,
            **extra,
        }

    def props() -> dict:
        return {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}

    def entries() -> list[str]:
        return [r.tableName for r in spark.sql("show tables in batched like 'ends__dbt_lock_*'").collect()]

    with extension_on(spark):
        # Expected where the partition is: ended, the old folder (the run's to delete) gone, the entry dropped.
        old_a = _locations(spark, table)["day=a"]
        new_a = run_folder("r1_000000000001", 10)
        spark.sql("create view batched.ends__dbt_lock_c_1_r1_000000000001 as select 1 as held")
        spelled = "file://" + local_path(old_a).as_posix() + "/"
        rows = _switch_with_end(spark, table, "a", new_a, end([spelled], [old_a], "ends__dbt_lock_c_1_r1_000000000001"))
        assert [r.ended for r in rows] == [True] and local_path(rows[0].previous_location) == local_path(old_a)
        assert not local_path(old_a).exists() and props()["ended"] == "ends__dbt_lock_c_1_r1_000000000001"
        assert entries() == [] and _locations(spark, table)["day=a"].rstrip("/").endswith(new_a.split(":", 1)[1])

        # Expected elsewhere: moved, not ended; nothing deleted, set or released.
        old_b = _locations(spark, table)["day=b"]
        new_b = run_folder("r2_000000000002", 20)
        spark.sql("create view batched.ends__dbt_lock_c_2_r2_000000000002 as select 1 as held")
        rows = _switch_with_end(spark, table, "b", new_b, end([new_a], [old_b], "ends__dbt_lock_c_2_r2_000000000002"))
        assert [r.ended for r in rows] == [False] and local_path(old_b).exists()
        assert props()["ended"] == "ends__dbt_lock_c_1_r1_000000000001" and entries() == [
            "ends__dbt_lock_c_2_r2_000000000002"
        ]
        assert sorted(r.v for r in spark.sql(f"select v from {table}").collect()) == [10, 20]

        # A folder outside the table's: refused before anything moves (and the entry released, as on any failure).
        new_a2 = run_folder("r3_000000000003", 30)
        outside = tmp_path / "outside"
        outside.mkdir()
        with pytest.raises(Exception, match="is not inside"):
            _switch_with_end(
                spark, table, "a", new_a2, end([new_a], [f"file:{outside}"], "ends__dbt_lock_c_2_r2_000000000002")
            )
        assert outside.is_dir() and sorted(r.v for r in spark.sql(f"select v from {table}").collect()) == [10, 20]
        assert entries() == []

        # The injected failure between the switch and its end: moved, nothing deleted, the lock released.
        spark.sql("create view batched.ends__dbt_lock_c_4_r4_000000000004 as select 1 as held")
        with pytest.raises(Exception, match="injected failure at step 'before_cleanup'"):
            _switch_with_end(
                spark,
                table,
                "a",
                new_a2,
                end([new_a], [new_a], "ends__dbt_lock_c_4_r4_000000000004", fail_before_end=True),
            )
        assert local_path(new_a).exists() and entries() == []
        assert sorted(r.v for r in spark.sql(f"select v from {table}").collect()) == [20, 30]


@pytest.mark.parametrize("moved", [1, 2, 45], ids=["one", "a few, one by one", "all, in one listing"])
def test_the_switch_finds_each_partition_however_it_fetches_them(spark, tmp_path, moved):
    """The switch fetches a few partitions one by one and many (over 1/20 of
    the table's) in one listing: either way each moved partition is the one
    named, spelled in any case, with an awkward value, and returns its old
    folder; the others keep theirs."""
    table = f"batched.fetch_{moved}"
    spark.sql("create database if not exists batched")
    spark.sql(f"create table {table} (v int, `Part` string) using parquet partitioned by (`Part`)")
    values = [f"p {i:02d}/x'y" for i in range(45)]
    spark.createDataFrame([(i, v) for i, v in enumerate(values)], "v int, Part string").write.insertInto(table)

    def read() -> dict:
        """Each partition's row and the folder a scan read it from (one query, not a DESCRIBE each)."""
        rows = spark.sql(f"select `Part`, v, input_file_name() as f from {table}").collect()
        return {r.Part: (r.v, input_file_path(r.f).parent) for r in rows}

    before = read()
    moves, expected = [], {}
    for i in range(moved):
        folder = tmp_path / f"new{i}"
        spark.range(1).selectExpr(f"cast({100 + i} as int) as v").write.parquet(str(folder))
        moves.append({"spec": {"part": values[i]}, "location": f"file:{folder}"})
        expected[values[i]] = (100 + i, folder)
    with extension_on(spark):
        previous = [r[0] for r in spark.sql(_statement_sql(contracts.SWITCH_STATEMENT, table, moves)).collect()]
    assert [local_path(p) for p in previous] == [before[v][1] for v in values[:moved]]
    assert read() == {v: expected.get(v, before[v]) for v in values}
