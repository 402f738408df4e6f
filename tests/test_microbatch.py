"""incremental_strategy='microbatch' on bucketed tables, beside stock
dbt-spark's microbatch on the same models: dbt's batches (begin,
--event-time-start/--event-time-end, lookback, dbt retry of a failed
batch), each replacing exactly the rows of its event-time range, also an
hourly batch in a daily partition (where stock's replaces the whole day),
one file per bucket and the records kept, nothing lost when a batch dies at
any step. dbt makes batches only for materialized='incremental': the
project routes it to the package with one file (ROUTING)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from harness.dbt_project import ROUTING, failure_text, node_messages
from harness.spark import extension_on

# 20 rows an hour from 2026-01-01 00:00 UTC, for 5 days; `v` names the source's version.
SOURCE = """
{{{{ config(materialized='table', file_format='parquet', event_time='ts') }}}}
select cast(id % 50 as int) as k, concat('v{version}-', id) as v, timestamp_seconds(1767225600 + id * 180) as ts
from range(0, 2400)
"""
MODEL = """
select k, v, ts, cast(ts as date) as day from {{ ref('mb_src') }}
where cast(ts as date) <> date'{{ env_var('SB_MB_FAIL_DAY', '1900-01-01') }}'
   or raise_error('injected batch failure') is null
"""
BUCKETED = "clustered_by=['k'], buckets=4, bucket_hash='spark', partition_by=['day']"
STOCK = "file_format='parquet', partition_by=['day']"


def _config(batch_size: str, extra: str) -> str:
    return (
        "{{ config(materialized='incremental', incremental_strategy='microbatch', event_time='ts', "
        f"batch_size='{batch_size}', begin='2026-01-01', {extra}) }}}}\n"
    )


def _rows(spark, table, where="true"):
    return sorted(tuple(r) for r in spark.sql(f"select k, v, cast(ts as string) from {table} where {where}").collect())


def _files(spark, table):
    return spark.sql(f"select count(*) from (select distinct input_file_name() as f from {table})").first()[0]


def _expected(spark, schema, versions):
    """The source's rows for each [start, end) in `versions` (hours from 2026-01-01), of that version."""
    out = []
    for (start, end), version in versions.items():
        for r in spark.sql(
            f"select k, v, cast(ts as string) from {schema}.mb_src "
            f"where ts >= timestamp'2026-01-01 00:00:00' + make_interval(0, 0, 0, 0, {start}) "
            f"and ts < timestamp'2026-01-01 00:00:00' + make_interval(0, 0, 0, 0, {end})"
        ).collect():
            out.append((r[0], r[1].replace(r[1].split("-")[0], f"v{version}"), r[2]))
    return sorted(out)


def _commit(spark, table):
    shown = {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}
    return int(shown["spark_bucketing.commit"])


def _window(start: str, end: str) -> tuple[str, ...]:
    return ("--event-time-start", start, "--event-time-end", end)


def _batches(result, name):
    run = next(r for r in result.result.results if r.node.name == name)
    return len(run.batch_results.successful), len(run.batch_results.failed)


@pytest.fixture(scope="module")
def project(dbt_project):
    dbt_project.write_file("macros/incremental.sql", ROUTING)
    dbt_project.write_file("models/mb_src.sql", SOURCE.format(version=1))
    for name, batch_size, extra in (
        ("mb_daily", "day", BUCKETED),
        ("mb_daily_stock", "day", STOCK),
        ("mb_hourly", "hour", BUCKETED),
        ("mb_hourly_stock", "hour", STOCK),
    ):
        dbt_project.write_file(f"models/{name}.sql", _config(batch_size, extra) + MODEL)
    dbt_project.run("mb_src")
    return dbt_project


def _set_source(project, version):
    project.write_file("models/mb_src.sql", SOURCE.format(version=version))
    project.run("mb_src")


def _layout_ok(project, name):
    result = project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
    assert result.success, failure_text(result)


def test_daily_batches_backfill_and_replace_a_day_as_stock_does(spark, project):
    schema = project.schema
    # Four threads: stock's batches set partitionOverwriteMode=DYNAMIC on the one Spark session both models share
    # while ours write (the package changes no session setting and its writes do not depend on that one).
    result = project.run("mb_daily", "mb_daily_stock", extra=(*_window("2026-01-01", "2026-01-04"), "--threads", "4"))
    assert _batches(result, "mb_daily") == (3, 0)
    expected = _expected(spark, schema, {(0, 72): 1})
    assert _rows(spark, f"{schema}.mb_daily") == expected == _rows(spark, f"{schema}.mb_daily_stock")
    assert _files(spark, f"{schema}.mb_daily") == 3 * 4

    # A backfill of one day with the source changed: that day's rows replaced, the others kept.
    _set_source(project, 2)
    project.run("mb_daily", "mb_daily_stock", extra=_window("2026-01-02", "2026-01-03"))
    expected = _expected(spark, schema, {(0, 24): 1, (24, 48): 2, (48, 72): 1})
    assert _rows(spark, f"{schema}.mb_daily") == expected == _rows(spark, f"{schema}.mb_daily_stock")
    _layout_ok(project, "mb_daily")


def test_an_hourly_batch_replaces_its_hour_in_a_daily_partition(spark, project):
    """Stock's microbatch is insert_overwrite: an hourly batch replaces its
    whole day partition with the hour's rows. Ours replaces only the hour."""
    schema = project.schema
    _set_source(project, 1)
    result = project.run(
        "mb_hourly", "mb_hourly_stock", extra=(*_window("2026-01-01T00:00:00", "2026-01-01T04:00:00"), "--threads", "4")
    )
    assert _batches(result, "mb_hourly") == (4, 0)
    assert _rows(spark, f"{schema}.mb_hourly") == _expected(spark, schema, {(0, 4): 1})

    _set_source(project, 3)
    project.run("mb_hourly", "mb_hourly_stock", extra=_window("2026-01-01T02:00:00", "2026-01-01T03:00:00"))
    expected = _expected(spark, schema, {(0, 2): 1, (2, 3): 3, (3, 4): 1})
    assert _rows(spark, f"{schema}.mb_hourly") == expected
    # The documented difference: stock's day now holds the one hour.
    assert _rows(spark, f"{schema}.mb_hourly_stock") == _expected(spark, schema, {(2, 3): 3})
    assert _files(spark, f"{schema}.mb_hourly") == 4
    _layout_ok(project, "mb_hourly")


@pytest.mark.parametrize("step", ["after_write", "before_switch", "mid_switch", "before_cleanup"])
def test_a_batch_that_dies_at_a_step_loses_nothing(spark, project, step):
    schema = project.schema
    _set_source(project, 1)
    project.run("mb_daily", extra=(*_window("2026-01-01", "2026-01-04"), "--full-refresh"))
    before = _rows(spark, f"{schema}.mb_daily")
    _set_source(project, 4)
    after = _expected(spark, schema, {(0, 24): 1, (24, 48): 4, (48, 72): 1})

    result = project.run("mb_daily", expect_ok=False, extra=_window("2026-01-02", "2026-01-03"), fail_at=step)
    assert _batches(result, "mb_daily") == (0, 1)
    assert _rows(spark, f"{schema}.mb_daily") in (before, after)
    project.run("mb_daily", extra=_window("2026-01-02", "2026-01-03"))
    assert _rows(spark, f"{schema}.mb_daily") == after
    _layout_ok(project, "mb_daily")


def test_dbt_retry_runs_the_failed_batch_only(spark, project, monkeypatch):
    schema = project.schema
    _set_source(project, 1)
    project.run("mb_daily", extra=(*_window("2026-01-01", "2026-01-04"), "--full-refresh"))
    _set_source(project, 5)

    monkeypatch.setenv("SB_MB_FAIL_DAY", "2026-01-02")
    result = project.dbt("run", "--select", "mb_daily", *_window("2026-01-01", "2026-01-04"), "--write-json")
    assert not result.success
    assert _batches(result, "mb_daily") == (2, 1)
    assert _rows(spark, f"{schema}.mb_daily") == _expected(spark, schema, {(0, 24): 5, (24, 48): 1, (48, 72): 5})

    monkeypatch.delenv("SB_MB_FAIL_DAY")
    commits = _commit(spark, f"{schema}.mb_daily")
    retried = project.dbt("retry")
    assert retried.success, failure_text(retried)
    # dbt's result counts the first run's batches too; the table saw one commit: the failed batch's.
    assert _batches(retried, "mb_daily") == (3, 0)
    assert _commit(spark, f"{schema}.mb_daily") == commits + 1
    assert _rows(spark, f"{schema}.mb_daily") == _expected(spark, schema, {(0, 72): 5})
    _layout_ok(project, "mb_daily")


def test_begin_and_lookback_without_a_window(spark, project):
    """With no --event-time-start, dbt runs from `begin` on the first run and
    the last `lookback` batches and the current one afterwards."""
    schema = project.schema
    today = dt.datetime.now(dt.UTC).date()
    begin = today - dt.timedelta(days=3)
    project.write_file(
        "models/mb_recent_src.sql",
        "{{ config(materialized='table', file_format='parquet', event_time='ts') }}\n"
        "select cast(id % 7 as int) as k, concat('r-', id) as v,\n"
        f"timestamp'{begin} 00:00:00' + make_interval(0, 0, 0, 0, 0, cast(id as int)) as ts\n"
        "from range(0, 60 * 24 * 3)",
    )
    project.write_file(
        "models/mb_recent.sql",
        "{{ config(materialized='incremental', incremental_strategy='microbatch', event_time='ts', batch_size='day', "
        f"begin='{begin}', lookback=1, {BUCKETED}) }}}}\n"
        "select k, v, ts, cast(ts as date) as day from {{ ref('mb_recent_src') }}",
    )
    project.run("mb_recent_src")
    first = project.run("mb_recent")
    assert _batches(first, "mb_recent") == (4, 0)  # begin .. today
    assert spark.table(f"{schema}.mb_recent").count() == 60 * 24 * 3
    second = project.run("mb_recent")
    assert _batches(second, "mb_recent") == (2, 0)  # yesterday (lookback 1) and today
    assert spark.table(f"{schema}.mb_recent").count() == 60 * 24 * 3


def test_bad_microbatch_configs_fail_before_anything_is_written(spark, project):
    schema = project.schema
    # bucketed_incremental: dbt makes no batches for it.
    project.write_file(
        "models/mb_bad_mat.sql",
        "{{ config(materialized='bucketed_incremental', incremental_strategy='microbatch', event_time='ts', "
        f"{BUCKETED}) }}}}\n" + MODEL,
    )
    # A string partition column.
    project.write_file(
        "models/mb_bad_part.sql",
        _config("day", "clustered_by=['k'], buckets=4, partition_by=['day_s']")
        + "select k, v, ts, cast(cast(ts as date) as string) as day_s from {{ ref('mb_src') }}",
    )
    # Rows outside the batch: a query that does not filter by the batch.
    project.write_file(
        "models/mb_bad_rows.sql",
        _config("day", BUCKETED) + f"select k, v, ts, cast(ts as date) as day from {schema}.mb_src",
    )
    log: list[str] = []
    result = project.run(
        "mb_bad_mat", "mb_bad_part", "mb_bad_rows", expect_ok=False, extra=_window("2026-01-01", "2026-01-02"), log=log
    )
    assert not result.success
    # A microbatch model's result says ERROR; its batch's error is in dbt's log.
    messages = node_messages(result)["mb_bad_mat"] + "\n".join(log)
    assert "dbt makes batches only for materialized='incremental'" in messages
    assert "spark_bucketing.incremental_materialization()" in messages
    assert "config 'partition_by': 'day_s' is string" in messages
    assert "is not a row of the batch [2026-01-01" in messages and "nothing was published" in messages
    tables = {r.tableName for r in spark.sql(f"show tables in {schema}").collect()}
    assert not tables & {"mb_bad_mat", "mb_bad_part", "mb_bad_rows"}


ADDS = "clustered_by=['k'], buckets=4, bucket_hash='spark', partition_by=['day'], max_files_per_bucket=24"


def _day_record(spark, table, day="2026-01-01"):
    shown = {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}
    return json.loads(shown[f"spark_bucketing.partition.day={day}"])


def test_hourly_batches_add_files_to_their_day_and_a_rerun_hour_rewrites_it(spark, project):
    """With max_files_per_bucket, an hourly batch whose day holds only
    earlier hours (its record's event_time_before) adds a file per bucket
    beside the day's own, reading no old row; a batch of an hour the day may
    hold already (a rerun, a lookback) rewrites the day, replacing exactly
    its hour. The answers equal the rewriting model's."""
    schema, table = project.schema, f"{project.schema}.mb_adds"
    project.write_file("models/mb_adds.sql", _config("hour", ADDS) + MODEL)
    _set_source(project, 1)
    with extension_on(spark):
        statements: list[str] = []
        result = project.dbt(
            "run",
            "--select",
            "mb_adds",
            *_window("2026-01-01T00:00:00", "2026-01-01T03:00:00"),
            "--full-refresh",
            statements=statements,
        )
        assert _batches(result, "mb_adds") == (3, 0)
        assert _rows(spark, table) == _expected(spark, schema, {(0, 3): 1})
        rec = _day_record(spark, table)
        # The first batch built the table; the next two added their files, reading no old row.
        assert (rec["appended"], rec["files"], rec["rows"]) == (2, 12, 60) and rec["files"] == _files(spark, table)
        assert rec["event_time_before"].startswith("2026-01-01 03:00:00")
        writes = [s for s in statements if "spark_bucketing write folder" in s]
        assert len(writes) == 2 and not [s for s in writes if f"from {table}" in s.lower()]
        _layout_ok(project, "mb_adds")

        # Hour 1 again, the source changed: the day is rewritten, its hour replaced, one file per bucket.
        _set_source(project, 2)
        project.run("mb_adds", extra=_window("2026-01-01T01:00:00", "2026-01-01T02:00:00"))
        assert _rows(spark, table) == _expected(spark, schema, {(0, 1): 1, (1, 2): 2, (2, 3): 1})
        rec = _day_record(spark, table)
        assert (rec.get("appended", 0), rec["files"]) == (0, 4) and rec["event_time_before"].startswith(
            "2026-01-01 03:00"
        )

        # Hour 3 adds files again; the next day is new, and its record bounded too.
        project.run("mb_adds", extra=_window("2026-01-01T03:00:00", "2026-01-02T01:00:00"))
        assert _rows(spark, table) == _expected(spark, schema, {(0, 1): 1, (1, 2): 2, (2, 3): 1, (3, 25): 2})
        assert _day_record(spark, table)["appended"] == 21
        assert _day_record(spark, table, "2026-01-02")["event_time_before"].startswith("2026-01-02 01:00")
        _layout_ok(project, "mb_adds")

        # A compaction keeps the bound (its rows do not change).
        project.run("mb_adds", extra=("--vars", "{spark_bucketing_compact: true}"))
        assert _day_record(spark, table)["event_time_before"].startswith("2026-01-02 00:00")
        expected = _expected(spark, schema, {(0, 1): 1, (1, 2): 2, (2, 3): 1, (3, 25): 2})
        assert _rows(spark, table) == expected

        # An append (another strategy, rows of unknown times) drops the bound: the next batch rewrites the day.
        project.write_file(
            "models/mb_adds.sql",
            "{{ config(materialized='incremental', incremental_strategy='append', " + ADDS + ") }}\n"
            "select 7 as k, 'late' as v, timestamp'2026-01-01 23:30:00' as ts, date'2026-01-01' as day",
        )
        project.run("mb_adds")
        assert "event_time_before" not in _day_record(spark, table)
        project.write_file("models/mb_adds.sql", _config("hour", ADDS) + MODEL)
        project.run("mb_adds", extra=_window("2026-01-01T23:00:00", "2026-01-02T00:00:00"))
        # The late row was in the hour the batch replaced.
        assert _rows(spark, table) == expected
        rec = _day_record(spark, table)
        assert (rec.get("appended", 0), rec["files"]) == (0, 4) and "event_time_before" not in rec


@pytest.mark.parametrize("step", ["after_write", "before_switch", "inside_switch", "before_cleanup"])
def test_a_batch_that_adds_files_and_dies_at_a_step_loses_nothing(spark, project, step):
    """'inside_switch' stops after the files moved, before their records: the
    rerun of the batch completes that append first, then replaces the hour."""
    schema, table = project.schema, f"{project.schema}.mb_adds_dies"
    project.write_file("models/mb_adds_dies.sql", _config("hour", ADDS) + MODEL)
    _set_source(project, 1)
    with extension_on(spark):
        project.run("mb_adds_dies", extra=(*_window("2026-01-01T00:00:00", "2026-01-01T02:00:00"), "--full-refresh"))
        before = _rows(spark, table)
        after = _expected(spark, schema, {(0, 3): 1})
        result = project.run(
            "mb_adds_dies", expect_ok=False, extra=_window("2026-01-01T02:00:00", "2026-01-01T03:00:00"), fail_at=step
        )
        assert _batches(result, "mb_adds_dies") == (0, 1)
        assert _rows(spark, table) in (before, after)
        landed = _rows(spark, table) == after
        project.run("mb_adds_dies", extra=_window("2026-01-01T02:00:00", "2026-01-01T03:00:00"))
        assert _rows(spark, table) == after
        rec = _day_record(spark, table)
        assert rec["rows"] == len(after) and rec["files"] == _files(spark, table)
        # A batch that landed bounded the day past the rerun's start: the rerun rewrote the day; else it added files.
        assert rec.get("appended", 0) == (0 if landed else 2)
        assert landed == (step in ("inside_switch", "before_cleanup"))
        _layout_ok(project, "mb_adds_dies")
