"""Appends that add files (max_files_per_bucket above 1, the session
extension): an append adds one file per bucket to each existing partition it
touches, in the partition's own folder, instead of rewriting it; the records
count the files and rows; the layout test accepts up to the configured files
per bucket; past it the append rewrites the partition, one file per bucket
again (the compaction). A run that dies while its switch moves the files is
completed by the next run: nothing lost, nothing twice."""

from __future__ import annotations

import json
import re

import pytest

from harness.dbt_project import failure_text, node_messages
from harness.spark import extension_on, table_location

SQL = """
select cast(id as int) as k, concat('{tag}-', id) as v, date_add(date'2024-01-01', cast(id % {days} as int)) as day
from range({start}, {end})
"""


def _config(family: str, max_files: int = 3, records: str = "table_properties") -> dict:
    return {
        "materialized": "bucketed_incremental",
        "incremental_strategy": "append",
        "clustered_by": ["k"],
        "buckets": 4,
        "partition_by": ["day"],
        "bucket_hash": family,
        "max_files_per_bucket": max_files,
        "bucket_records": records,
    }


def _write(project, name, family, tag, start, end, days=1, max_files=3, records="table_properties"):
    project.write_model(name, SQL.format(tag=tag, start=start, end=end, days=days), _config(family, max_files, records))


def _record(spark, table, path="day=2024-01-01"):
    """The partition's record: in the table's properties (format 1), or in the partition's parameters (format 2)."""
    shown = {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}
    if shown.get("spark_bucketing.format_version") == "2":
        (record,) = [
            r.record for r in spark.sql(f"select * from spark_bucketing_records('{table}')").collect() if r.path == path
        ]
        return json.loads(record)
    return json.loads(shown[f"spark_bucketing.partition.{path}"])


def _folder_files(spark, table, day="2024-01-01"):
    rows = spark.sql(f"select distinct input_file_name() as f from {table} where day = date'{day}'").collect()
    return sorted(r.f for r in rows)


def _layout_ok(project, name):
    result = project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
    assert result.success, failure_text(result)


def _rows(spark, table):
    return sorted(tuple(r) for r in spark.sql(f"select k, v, cast(day as string) from {table}").collect())


@pytest.mark.parametrize(
    "family, records",
    [
        ("spark", "table_properties"),
        ("hive", "table_properties"),
        ("spark", "partition_parameters"),
        ("hive", "partition_parameters"),
    ],
)
def test_appends_add_files_up_to_the_limit_then_compact(spark, dbt_project, family, records):
    """In both formats of records: an append reads the touched partitions'
    folders (and format 2's records, in partition parameters) in one
    statement, and its switch sets their records."""
    name = f"adds_{family}_{records}"
    table = f"{dbt_project.schema}.{name}"
    with extension_on(spark):
        _write(dbt_project, name, family, "a", 0, 40, records=records)
        dbt_project.run(name)
        first = _record(spark, table)
        assert first["files"] == 4 and "appended" not in first and first["max_files_per_bucket"] == 3
        expected = _rows(spark, table)

        # Two appends add a file per bucket each, in the partition's own folder.
        for i, tag in enumerate(["b", "c"], start=1):
            _write(dbt_project, name, family, tag, 40 * i, 40 * (i + 1), records=records)
            before = _folder_files(spark, table)
            statements: list[str] = []
            assert dbt_project.dbt("run", "--select", name, statements=statements).success
            # The touched day's folder (and format 2's record) alone, read by the write's own statement (its
            # check's rows carry them: `records of`), never the whole listing nor a DESCRIBE per partition; once,
            # as no other run committed between the plan and the commit.
            assert not [s for s in statements if "spark_bucketing_records(" in s]
            carried = [s for s in statements if _is_write(s) and re.search(rf"\brecords of \S*{name}\b", s)]
            assert len(carried) == 1 and _writes(statements) == 1, statements
            assert not [s for s in statements if " partition (" in s.lower() and "describe" in s.lower()]
            expected = sorted(expected + [(k, f"{tag}-{k}", "2024-01-01") for k in range(40 * i, 40 * (i + 1))])
            assert _rows(spark, table) == expected
            rec = _record(spark, table)
            assert rec["location"] == first["location"]
            assert (rec["files"], rec["rows"], rec["appended"]) == (4 * (i + 1), 40 * (i + 1), i)
            after = _folder_files(spark, table)
            assert set(before) < set(after) and len(after) == 4 * (i + 1)
            _layout_ok(dbt_project, name)
        # A grouping on the bucket column reads three files a bucket: the same answer as unbucketed.
        grouped = spark.sql(f"select k, count(*) from {table} group by k").collect()
        assert sorted(tuple(r) for r in grouped) == [(k, 1) for k in range(120)]

        # The third append would make 4 files a bucket: the partition is rewritten, one file per bucket.
        _write(dbt_project, name, family, "d", 120, 160, records=records)
        dbt_project.run(name)
        expected = sorted(expected + [(k, f"d-{k}", "2024-01-01") for k in range(120, 160)])
        assert _rows(spark, table) == expected
        rec = _record(spark, table)
        assert (rec["files"], rec["rows"], rec.get("appended", 0)) == (4, 160, 0)
        assert rec["location"] != first["location"]
        _layout_ok(dbt_project, name)


def test_the_layout_test_allows_the_recorded_files_per_bucket_and_no_more(spark, dbt_project):
    name = "adds_limit"
    table = f"{dbt_project.schema}.{name}"
    with extension_on(spark):
        _write(dbt_project, name, "spark", "a", 0, 40, max_files=2)
        dbt_project.run(name)
        _write(dbt_project, name, "spark", "b", 40, 80, max_files=2)
        dbt_project.run(name)
        assert _record(spark, table)["files"] == 8
        _layout_ok(dbt_project, name)
        # A third file in a bucket, behind the package's back: the test names it.
        files = _folder_files(spark, table)
        src = files[0].removeprefix("file:")
        dst = src.replace("part-", "part-9")
        with open(src, "rb") as f_in, open(dst, "wb") as f_out:
            f_out.write(f_in.read())
        spark.sql(f"refresh table {table}")
        result = dbt_project.test_model(name, "spark_bucketing.bucket_layout")
        assert not result.success
        assert "3 files for bucket" in result.result.results[0].node.compiled_code or "3 files for bucket" in str(
            result.result.results[0].message
        )


def test_adding_files_needs_the_extension(spark, dbt_project):
    name = "adds_no_ext"
    with extension_on(spark):
        _write(dbt_project, name, "spark", "a", 0, 40)
        dbt_project.run(name)
    with extension_on(spark, False):
        _write(dbt_project, name, "spark", "b", 40, 80)
        result = dbt_project.run(name, expect_ok=False)
    message = node_messages(result)[name]
    assert "config 'max_files_per_bucket'" in message and "need the session extension" in message


@pytest.mark.parametrize("records", ["table_properties", "partition_parameters"])
@pytest.mark.parametrize("step", ["after_write", "before_switch", "inside_switch", "before_cleanup"])
def test_an_append_that_dies_at_a_step_loses_nothing(spark, dbt_project, step, records):
    """'inside_switch' stops the switch after its files moved, before their
    records (format 1) or before the step that follows them (format 2, whose
    records are set with the partitions): the next run completes that append
    first."""
    name = f"adds_dies_{step}_{records}"
    table = f"{dbt_project.schema}.{name}"
    with extension_on(spark):
        _write(dbt_project, name, "spark", "a", 0, 40, records=records)
        dbt_project.run(name)
        before = _rows(spark, table)
        _write(dbt_project, name, "spark", "b", 40, 80, records=records)
        dbt_project.run(name, expect_ok=False, fail_at=step)
        with_b = sorted(before + [(k, f"b-{k}", "2024-01-01") for k in range(40, 80)])
        assert _rows(spark, table) in (before, with_b)
        landed = _rows(spark, table) == with_b
        pending = [
            r.key
            for r in spark.sql(f"show tblproperties {table}").collect()
            if r.key.startswith("spark_bucketing.adding.")
        ]
        if step == "inside_switch":
            # The files moved, and the run's payload is left for the next run to complete the append with
            # (format 1's records not written yet; format 2's set with the partitions).
            assert landed and len(pending) == 1
            assert _record(spark, table)["files"] == (4 if records == "table_properties" else 8)
        else:
            assert not pending

        _write(dbt_project, name, "spark", "c", 80, 120, records=records)
        dbt_project.run(name)
        shown = {r.key for r in spark.sql(f"show tblproperties {table}").collect()}
        assert not [k for k in shown if k.startswith("spark_bucketing.adding.")]
        expected = sorted((with_b if landed else before) + [(k, f"c-{k}", "2024-01-01") for k in range(80, 120)])
        assert _rows(spark, table) == expected
        rec = _record(spark, table)
        assert rec["rows"] == len(expected) and rec["files"] == 4 * (rec["appended"] + 1)
        _layout_ok(dbt_project, name)


@pytest.mark.parametrize(
    "step, records",
    [(step, "table_properties") for step in (None, "after_write", "before_switch", "inside_switch", "before_cleanup")]
    + [(None, "partition_parameters"), ("mid_switch", "partition_parameters")],
)
def test_a_compaction_rewrites_the_partitions_with_added_files(spark, dbt_project, step, records):
    """dbt run with the variable spark_bucketing_compact: the partitions that
    took added files are rewritten one file per bucket, under the atomic
    switch (a compaction that dies at a step leaves the rows as they were),
    and a partition with one file per bucket is left alone. In format 2 the
    compaction finds them in one listing of the partitions' records."""
    name = f"compacted_{step or 'ok'}_{records}"
    table = f"{dbt_project.schema}.{name}"
    with extension_on(spark):
        _write(dbt_project, name, "spark", "a", 0, 80, days=2, records=records)
        dbt_project.run(name)
        _write(dbt_project, name, "spark", "b", 80, 120, records=records)  # day 1 only
        dbt_project.run(name)
        untouched = _record(spark, table, "day=2024-01-02")
        assert _record(spark, table)["appended"] == 1
        rows = _rows(spark, table)
        compact = ("--vars", "{spark_bucketing_compact: true}")
        if step is not None:
            dbt_project.run(name, expect_ok=False, extra=compact, fail_at=step)
            assert _rows(spark, table) == rows
        dbt_project.run(name, extra=compact)
        assert _rows(spark, table) == rows
        rec = _record(spark, table)
        assert (rec["files"], rec["rows"], rec.get("appended", 0)) == (4, 80, 0)
        assert _record(spark, table, "day=2024-01-02")["location"] == untouched["location"]
        _layout_ok(dbt_project, name)
        # Nothing left to compact: the run writes nothing.
        commit = {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}["spark_bucketing.commit"]
        dbt_project.run(name, extra=compact)
        assert {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}[
            "spark_bucketing.commit"
        ] == commit


def test_an_append_after_a_switch_that_died_rewrites_the_partition(spark, dbt_project):
    """A rewrite that died inside its switch left the day in its new folder
    with the old folder's record: the next append does not add files beside
    a record that describes another folder; it rewrites the day."""
    name = "adds_after_dead_switch"
    table = f"{dbt_project.schema}.{name}"
    with extension_on(spark):
        _write(dbt_project, name, "spark", "a", 0, 40)
        dbt_project.run(name)
        _write(dbt_project, name, "spark", "b", 40, 80, max_files=1)
        dbt_project.run(name, expect_ok=False, fail_at="inside_switch")
        stale = _record(spark, table)
        folder = _folder_files(spark, table)[0].rsplit("/", 1)[0]
        assert not folder.endswith(stale["location"].removeprefix("file://").removeprefix("file:"))
        _write(dbt_project, name, "spark", "c", 80, 120)
        dbt_project.run(name)
        rec = _record(spark, table)
        assert rec.get("appended", 0) == 0 and (rec["files"], rec["rows"]) == (4, 120)
        assert _rows(spark, table) == sorted(
            (k, f"{t}-{k}", "2024-01-01")
            for t, r in (("a", range(0, 40)), ("b", range(40, 80)), ("c", range(80, 120)))
            for k in r
        )
        _layout_ok(dbt_project, name)


def _is_write(statement: str) -> bool:
    """Whether a statement writes rows: the extension's folder writes (a staging write included)."""
    return " ".join(statement.split("*/", 1)[-1].split()).lower().startswith("spark_bucketing write folder")


def _writes(statements: list[str]) -> int:
    return sum(map(_is_write, statements))


def test_an_append_that_adds_files_writes_its_rows_once(spark, dbt_project):
    """An append whose partitions each take the new files beside their own,
    or are new, writes the model's rows once, as the table's buckets: the
    files added to day 1 and day 2's new partition come from one write. The
    new partition takes later appends' files too, and compacts."""
    name = "adds_once"
    table = f"{dbt_project.schema}.{name}"
    with extension_on(spark):
        _write(dbt_project, name, "hive", "a", 0, 40)
        dbt_project.run(name)
        statements: list[str] = []
        _write(dbt_project, name, "hive", "b", 40, 120, days=2)  # day 1 takes files; day 2 is new
        assert dbt_project.dbt("run", "--select", name, statements=statements).success
        assert _writes(statements) == 1
        # Which written days the table lists came with the write's check: no listing of the table's partitions.
        assert not [b for b in _bodies(statements) if b.startswith("show partitions")], statements
        expected = sorted(
            [(k, f"a-{k}", "2024-01-01") for k in range(0, 40)]
            + [(k, f"b-{k}", f"2024-01-0{1 + k % 2}") for k in range(40, 120)]
        )
        assert _rows(spark, table) == expected
        # Hive's hash of an int is the int: day 1's new keys (even) fall in buckets 0 and 2, day 2's in 1 and 3.
        day1, day2 = _record(spark, table), _record(spark, table, "day=2024-01-02")
        assert (day1["files"], day1["rows"], day1["appended"]) == (6, 80, 1)
        assert len(_folder_files(spark, table)) == 6
        assert (day2["files"], day2["rows"], day2.get("appended", 0)) == (2, 40, 0)
        _layout_ok(dbt_project, name)

        statements.clear()
        _write(dbt_project, name, "hive", "c", 120, 160, days=2)
        runs = table_location(spark, table) / "_bucketing"
        folders = sorted(runs.iterdir())
        assert dbt_project.dbt("run", "--select", name, statements=statements).success
        assert _writes(statements) == 1
        # Every file moved into its partition's folder: the run's folder is gone.
        assert sorted(runs.iterdir()) == folders
        expected = sorted(expected + [(k, f"c-{k}", f"2024-01-0{1 + k % 2}") for k in range(120, 160)])
        assert _rows(spark, table) == expected
        day2_after = _record(spark, table, "day=2024-01-02")
        assert day2_after["location"] == day2["location"] and day2_after["appended"] == 1
        _layout_ok(dbt_project, name)

        dbt_project.run(name, extra=("--vars", "{spark_bucketing_compact: true}"))
        assert _rows(spark, table) == expected
        assert [_record(spark, table, f"day=2024-01-0{d}")["files"] for d in (1, 2)] == [4, 2]
        _layout_ok(dbt_project, name)


def test_a_table_cached_in_the_session_shows_the_added_files(spark, dbt_project):
    """A table cached with CACHE TABLE is recached by the switch that adds files to it (its REFRESH TABLE): a read
    of the cached table after the append shows the appended rows. A switch that dropped the session's cached
    relation before that refresh left the cached rows stale."""
    name = "adds_cached"
    table = f"{dbt_project.schema}.{name}"
    with extension_on(spark):
        _write(dbt_project, name, "spark", "a", 0, 40)
        dbt_project.run(name)
        spark.sql(f"cache table {table}")
        try:
            assert spark.sql(f"select count(*) from {table}").first()[0] == 40
            _write(dbt_project, name, "spark", "b", 40, 80)
            dbt_project.run(name)
            assert _record(spark, table)["appended"] == 1
            assert spark.catalog.isCached(table)
            assert _rows(spark, table) == sorted(
                [(k, f"a-{k}", "2024-01-01") for k in range(40)] + [(k, f"b-{k}", "2024-01-01") for k in range(40, 80)]
            )
        finally:
            spark.sql(f"uncache table if exists {table}")


def test_an_append_past_the_limit_in_one_partition_rewrites_only_that_one(spark, dbt_project):
    """Day 1 is at its limit, day 2 has room: the model's rows, written once
    as buckets, are the staged rows of a second write that rewrites day 1
    with its old rows and adds day 2's new files."""
    name = "adds_mixed"
    table = f"{dbt_project.schema}.{name}"
    with extension_on(spark):
        _write(dbt_project, name, "spark", "a", 0, 80, days=2, max_files=2)
        dbt_project.run(name)
        _write(dbt_project, name, "spark", "b", 80, 120, days=1, max_files=2)  # day 1: 2 files a bucket now
        dbt_project.run(name)
        day2 = _record(spark, table, "day=2024-01-02")
        statements: list[str] = []
        _write(dbt_project, name, "spark", "c", 120, 160, days=2, max_files=2)
        assert dbt_project.dbt("run", "--select", name, statements=statements).success
        assert _writes(statements) == 2
        expected = sorted(
            [(k, f"a-{k}", f"2024-01-0{1 + k % 2}") for k in range(0, 80)]
            + [(k, f"b-{k}", "2024-01-01") for k in range(80, 120)]
            + [(k, f"c-{k}", f"2024-01-0{1 + k % 2}") for k in range(120, 160)]
        )
        assert _rows(spark, table) == expected
        day1 = _record(spark, table)
        assert (day1["files"], day1["rows"], day1.get("appended", 0)) == (4, 100, 0)
        day2_after = _record(spark, table, "day=2024-01-02")
        assert (day2_after["files"], day2_after["rows"], day2_after["appended"]) == (8, 60, 1)
        assert day2_after["location"] == day2["location"]
        _layout_ok(dbt_project, name)


def _bodies(statements: list[str]) -> list[str]:
    return [" ".join(s.split("*/", 1)[-1].split()).lower() for s in statements]


def test_an_uncontended_append_takes_the_commit_lock_in_its_switch(spark, dbt_project):
    """With no other run about, an append that adds files switches in one
    statement that takes the commit lock itself (no mark of its own). Where
    another entry stands beside the table, or the table's partitions are not
    those its records name (one added behind the package's back), that
    switch declines, changing nothing, and the run takes the lock as every
    run does: its rows land once either way."""
    name = "adds_own_lock"
    table = f"{dbt_project.schema}.{name}"
    mark = "spark_bucketing mark lock"
    with extension_on(spark):
        # Two days: the switch compares the listing of more than one partition with the records.
        _write(dbt_project, name, "spark", "a", 0, 80, days=2)
        dbt_project.run(name)
        expected = _rows(spark, table)

        def append(tag, start):
            statements: list[str] = []
            _write(dbt_project, name, "spark", tag, start, start + 40)
            assert dbt_project.dbt("run", "--select", name, statements=statements).success
            nonlocal expected
            expected = sorted(expected + [(k, f"{tag}-{k}", "2024-01-01") for k in range(start, start + 40)])
            assert _rows(spark, table) == expected
            bodies = _bodies(statements)
            switches = [b for b in bodies if b.startswith("spark_bucketing switch partitions")]
            assert len(switches) >= 1 and '"lock": {"mark"' in switches[0]
            return bodies, switches

        bodies, switches = append("b", 80)
        assert not [b for b in bodies if b.startswith(mark)] and len(switches) == 1
        assert (_record(spark, table)["files"], _record(spark, table)["appended"]) == (8, 1)

        # Another entry beside the table: the switch declines; the run marks itself, then switches.
        spark.sql(f"create view {table}__dbt_other as select 1 as held")
        try:
            bodies, switches = append("c", 120)
        finally:
            spark.sql(f"drop view {table}__dbt_other")
        assert len([b for b in bodies if b.startswith(mark)]) == 1 and len(switches) == 2
        assert '"lock"' not in switches[1]
        assert (_record(spark, table)["files"], _record(spark, table)["appended"]) == (12, 2)
        _layout_ok(dbt_project, name)
        assert not [r for r in spark.sql(f"show tables in {dbt_project.schema} like '{name}__dbt_lock*'").collect()]

        # A partition with no record, added behind the package's back: declined again.
        spark.sql(f"alter table {table} add partition (day = date'2024-02-01')")
        _write(dbt_project, name, "spark", "d", 160, 200, max_files=5)
        statements: list[str] = []
        assert dbt_project.dbt("run", "--select", name, statements=statements).success
        bodies = _bodies(statements)
        switches = [b for b in bodies if b.startswith("spark_bucketing switch partitions")]
        assert len([b for b in bodies if b.startswith(mark)]) == 1 and '"lock": {"mark"' in switches[0]
        expected = sorted(expected + [(k, f"d-{k}", "2024-01-01") for k in range(160, 200)])
        assert _rows(spark, table) == expected


def _routed_query(statements: list[str]) -> str:
    """The query of the run's folder write: the model's rows as the macros route them to the writer's tasks."""
    (write,) = filter(_is_write, statements)
    return write[re.search(r"(?:'|records of \S+) as\n", write).end() :]


def _exchanges(spark, query: str) -> list[str]:
    df = spark.sql(query)
    df.collect()  # the final plan: what adaptive execution ran
    plan = df._jdf.queryExecution().executedPlan().toString()
    return [line.strip() for line in plan.split("== Initial Plan ==")[0].splitlines() if "Exchange" in line]


@pytest.mark.parametrize("splits", [1, 3])
def test_an_append_from_one_task_is_written_without_the_routing_shuffle(spark, dbt_project, splits):
    """The rows of a small one-split source (an hour's rows) are in one
    task: the extension drops the shuffle that routes each (partition,
    bucket) to one task (OneTaskRoutes), and the writer still writes one
    file per bucket. A source of three splits, or of one split larger than
    adaptive execution's task, is routed as before."""
    name = f"one_task_{splits}"
    table = f"{dbt_project.schema}.{name}"
    sql = SQL.format(tag="{tag}", start=0, end=400, days=2).replace("range(0, 400)", f"range(0, 400, 1, {splits})")
    with extension_on(spark):
        dbt_project.write_model(name, sql.replace("{tag}", "a"), _config("spark"))
        dbt_project.run(name)
        statements: list[str] = []
        dbt_project.write_model(name, sql.replace("{tag}", "b"), _config("spark"))
        assert dbt_project.dbt("run", "--select", name, statements=statements).success
        exchanges = _exchanges(spark, _routed_query(statements))
        if splits == 1:
            assert exchanges == []
            # More rows in one split than adaptive execution puts in one task: routed, as any input of many tasks.
            big = _routed_query(statements).replace("range(0, 400, 1, 1)", "range(0, 100000000, 1, 1)")
            plan = spark.sql(big)._jdf.queryExecution().executedPlan().toString()
            assert "REPARTITION_BY_COL" in plan
        else:
            assert len(exchanges) == 1 and "REPARTITION_BY_COL" in exchanges[0]
        # Each day took one more file per bucket: 2 per bucket, 4 buckets.
        assert [_record(spark, table, f"day=2024-01-0{d}")["files"] for d in (1, 2)] == [8, 8]
        assert len(_folder_files(spark, table)) == 8
        assert _rows(spark, table) == sorted(
            (k, f"{tag}-{k}", f"2024-01-0{1 + k % 2}") for tag in "ab" for k in range(400)
        )
        _layout_ok(dbt_project, name)
    with extension_on(spark, False):
        assert len(_exchanges(spark, _routed_query(statements))) == 1
