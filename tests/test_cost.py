"""Cost follows the work: an incremental run reads and states only what it
writes, whatever the table's size; the package changes no session setting,
so models running at the same time (dbt threads share one Spark session)
cannot observe it; a spec is only declared over partitions whose files still
match their records."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.dbt_project import failure_text
from harness.spark import extension_on
from spark_bucketing import contracts
from spark_bucketing.files import input_file_path
from tests.support.incremental import (
    MODEL_SQL,
    Expected,
    declared,
    partition_layout_problems,
    run_statements,
    statement_body,
    step,
    table_rows,
    write_check,
)


def _files_of_day(spark, table: str, day: str) -> list[Path]:
    rows = spark.sql(f"select distinct input_file_name() as f from {table} where day = date'{day}'").collect()
    return [input_file_path(r.f) for r in rows]


def _shape(statements: list[str]) -> list[str]:
    """Each statement's first words: what kind of work it is (a run's own names, which carry its id, masked)."""
    return [RUN_NAMES.sub("<run>", " ".join(statement_body(s).split()[:3]).lower()) for s in statements]


#: The parts of an entry's name that name its run: a side entry's `_<run id>`, a lock entry's `<kind>_<epoch>_<run id>`.
RUN_NAMES = re.compile(r"(c|t[0-9]+)_[0-9]+_r[0-9]+_[0-9a-f]{12}|r[0-9]+_[0-9a-f]{12}")


@pytest.mark.parametrize("strategy", ["insert_overwrite", "append"])
def test_one_day_run_reads_and_states_only_what_it_writes(spark, dbt_project, strategy):
    expected = Expected()
    name = f"cost_{strategy}"
    base = {"strategy": strategy, "rows": 40}
    table = step(spark, dbt_project, name, expected, {**base, "days": [0, 1, 2]})

    def one_day(day: int | list[int], tag: int) -> list[str]:
        vars_ = {**base, "days": day if isinstance(day, list) else [day], "tag": tag}
        statements = run_statements(dbt_project, name, vars_)
        expected.apply(spark, vars_)
        return statements

    small_new, small_existing = one_day(10, 1), one_day(2, 2)

    # Grow the table, then make an untouched partition unreadable: a run that
    # read it (data or footers) would fail.
    step(spark, dbt_project, name, expected, {**base, "days": list(range(3, 24))})
    (victim,) = _files_of_day(spark, table, "2024-01-01")[:1]
    original = victim.read_bytes()
    victim.write_bytes(b"not a data file")
    try:
        big_new, big_existing = one_day(30, 3), one_day(23, 4)
    finally:
        victim.write_bytes(original)

    # The same statements, whatever the table's size: none per untouched partition.
    assert _shape(big_new) == _shape(small_new)
    assert _shape(big_existing) == _shape(small_existing)
    assert table_rows(spark, table) == expected.rows()
    assert partition_layout_problems(spark, table) == []
    # Bounded: the one partition's metadata is recorded in one statement.
    assert sum("set tblproperties" in s.lower() for s in big_new) == 1
    # The day's few rows were written by one task (file names carry the
    # task's number): AQE coalesced the routed shuffle to the data's size.
    day_files = _files_of_day(spark, table, "2024-01-24")
    assert len(day_files) > 1
    assert len({f.name.split("-")[1] for f in day_files}) == 1

    # A backfill of 15 existing and 15 new partitions: one switch for each
    # existing one and one LOAD DATA that writes its bucket spec back (Spark
    # SQL alone: macros/steps/bucket_specs.sql), the new ones added in one
    # statement, the metadata in one statement (and the partitions whose spec
    # is written back in one before the switch, unset after), the run's empty
    # folder made in two, every replaced folder deleted in one batch (three
    # statements).
    backfill = one_day(list(range(5, 20)) + list(range(40, 55)), 5)
    assert sum(bool(re.search(r"partition \(`day` = '[^']*'\) set location", s)) for s in backfill) == 15
    loads = [s for s in backfill if statement_body(s).lower().startswith("load data inpath")]
    assert len(loads) == 15 and len({statement_body(s).split()[3] for s in loads}) == 1  # one empty folder
    (added,) = [statement_body(s) for s in backfill if re.match(r"alter table \S+ add partition", statement_body(s))]
    assert added.count("partition (`day`") == 15
    assert sum(bool(re.search(r"\bset tblproperties", s.lower())) for s in backfill) == 2
    assert sum("unset tblproperties" in s.lower() for s in backfill) == 1
    assert sum("__dbt_scratch" in statement_body(s) for s in backfill) == 5
    assert table_rows(spark, table) == expected.rows()
    result = dbt_project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
    assert result.success, failure_text(result)


def test_a_spec_is_declared_only_over_files_that_match_their_records(spark, dbt_project):
    """Files written into a partition behind the package's back keep the table
    declared unbucketed when every record agrees, until the partition is rewritten."""
    expected = Expected()
    name = "cost_tamper"
    spark_hash = {"bucket_hash": "spark", "rows": 60}
    table = step(spark, dbt_project, name, expected, {**spark_hash, "days": [0, 1]})
    evolve = {**spark_hash, "buckets": 16, "on_change": "evolve"}
    step(spark, dbt_project, name, expected, {**evolve, "days": [1, 2], "tag": 1})
    assert declared(spark, table) is None

    # A plain INSERT INTO adds unbucketed files to day=2024-01-02.
    spark.sql(f"insert into {table} partition (day = date'2024-01-02') select 999, 'tampered', 999")
    expected.days[1][(999, "tampered", 999)] += 1

    # Every record now says 16 buckets, but day=2024-01-02's files do not match its record.
    step(spark, dbt_project, name, expected, {**evolve, "days": [0], "tag": 2}, layout=False)
    assert declared(spark, table) is None
    result = dbt_project.test_model(name, "spark_bucketing.bucket_metadata")
    assert not result.success
    assert "day=2024-01-02" in result.result.results[0].node.compiled_code

    # Rewriting the partition brings it back in line: the spec is declared.
    step(spark, dbt_project, name, expected, {**evolve, "days": [1], "tag": 3})
    assert declared(spark, table) == {"hash": "spark", "clustered_by": ["k"], "buckets": 16, "sorted_by": ["id"]}
    result = dbt_project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
    assert result.success, failure_text(result)


STOCK_SQL = """
{{ config(materialized='incremental', incremental_strategy='insert_overwrite', partition_by=['day'],
          file_format='parquet') }}
select id as k, concat('s{{ var("tag", 0) }}-', id) as payload, date_add(date'2024-01-01', d) as day
from range(0, 50) cross join (select explode(array({{ var('days', [0]) | join(', ') }})) as d)
"""


def test_models_running_at_the_same_time_see_no_setting_and_lose_no_partition(spark, dbt_project):
    """dbt threads share one Spark session (method: session). Stock dbt-spark
    insert_overwrite models set partitionOverwriteMode=DYNAMIC and rely on it;
    bucketed models run beside them, repeatedly."""
    strategies = {"conc_overwrite": "insert_overwrite", "conc_append": "append"}
    for name, strategy in strategies.items():
        sql = MODEL_SQL.replace("var('strategy', 'insert_overwrite')", repr(strategy))
        (dbt_project.root / "models" / f"{name}.sql").write_text(sql)
    stock = ["conc_stock_a", "conc_stock_b"]
    for name in stock:
        dbt_project.write_model(name, STOCK_SQL)
    settings = {"spark.sql.files.maxRecordsPerFile": "0", "spark.sql.sources.bucketing.enabled": "true"}
    expected = {name: Expected() for name in strategies}
    stock_days: set[int] = set()
    for run, days in enumerate([[0, 1, 2, 3], [2, 4], [3, 5, 6], [0, 6, 7]]):
        vars_ = {"days": days, "tag": run, "rows": 60}
        statements: list[str] = []
        args = ["run", "--threads", "4", "--select", *strategies, *stock, "--vars", json.dumps(vars_)]
        result = dbt_project.dbt(*args, statements=statements)
        assert result.success, failure_text(result)
        # The bucketed models read settings (`set <key>`) but never change one.
        ours = [s for s in statements if any(f'.{name}"' in s for name in strategies)]
        assert ours and not [s for s in ours if re.match(r"(set\s+\S+\s*=|reset\b)", statement_body(s), re.I)]
        stock_days.update(days)
        for name, strategy in strategies.items():
            expected[name].apply(spark, {**vars_, "strategy": strategy})
            assert table_rows(spark, f"{dbt_project.schema}.{name}") == expected[name].rows(), (run, name)
        for name in stock:
            got = spark.sql(f"select distinct datediff(day, date'2024-01-01') as d from {dbt_project.schema}.{name}")
            assert {r.d for r in got.collect()} == stock_days, (run, name)
        assert {k: spark.conf.get(k) for k in settings} == settings
    for name in strategies:
        assert partition_layout_problems(spark, f"{dbt_project.schema}.{name}") == []


@pytest.mark.parametrize(
    "family, verify, recomputes",
    [("spark", True, False), ("spark", "rows", True), ("hive", True, True)],
    ids=["spark hash: structure", "spark hash, verify_layout=rows", "hive hash"],
)
def test_the_write_check_reads_data_only_where_it_recomputes_buckets(spark, dbt_project, family, verify, recomputes):
    """Spark's writer computes each row's bucket, names its file by it and
    sorts the file: for the Spark hash the check of a write lists the files
    (names, one per bucket, rows) and reads no data column; with
    verify_layout='rows', and for the Hive hash (Spark's Hive hash against
    Hive's own function), it recomputes every row's bucket and checks the
    sort."""
    expected = Expected()
    name = f"check_reads_{family}_{verify}".lower()
    table = f"{dbt_project.schema}.{name}"
    # The table's first build: its write is checked by the same macro
    # (verify_write) as an incremental run's.
    vars_ = {"bucket_hash": family, "verify_layout": verify, "days": [0, 1]}
    statements = [statement_body(s) for s in run_statements(dbt_project, name, vars_)]
    expected.apply(spark, vars_)
    (check,) = [s for s in statements if "__sb_file_bucket" in s]
    assert ("pmod(hash(`k`)" in check or "spark_bucketing_hive_hash(`k`)" in check) == recomputes
    assert ("lag(__sb_sort_0)" in check) == recomputes
    assert "`id`" not in check or recomputes
    assert table_rows(spark, table) == expected.rows()
    assert partition_layout_problems(spark, table) == []


@pytest.mark.parametrize("verify, recomputes", [(True, False), ("rows", True)], ids=["structure", "verify_layout=rows"])
def test_with_the_extension_a_hive_folder_write_is_checked_from_its_footers(spark, dbt_project, verify, recomputes):
    """With the session extension a Hive-hash run writes its partitions into
    a folder whose rows were each checked against Hive's own hash as they
    were written: the check after the write lists the folder and reads its
    footers (no data column, no Spark job). verify_layout='rows' still reads
    every written row again, through the folder's table function, and
    recomputes its bucket and checks the sort."""
    expected = Expected()
    name = f"hive_folder_check_{verify}".lower()
    table = f"{dbt_project.schema}.{name}"
    base = {"bucket_hash": "hive", "verify_layout": verify}
    with extension_on(spark):
        step(spark, dbt_project, name, expected, {**base, "days": [0, 1]})
        vars_ = {**base, "days": [1, 2], "tag": 1}
        statements = [statement_body(s) for s in run_statements(dbt_project, name, vars_)]
        expected.apply(spark, vars_)
    (write,) = [s for s in statements if s.lower().startswith(contracts.WRITE_FOLDER_STATEMENT)]
    assert f"{contracts.HIVE_WRITER_HASH_FUNCTION}(`k`)" in write and "spark_bucketing_hive_hash(`k`)" in write
    check, rides = write_check(statements)
    # A check from the footers goes in the write's statement: one round trip.
    assert rides != recomputes
    assert (f"{contracts.TABLE_FILES_FUNCTION}(" in check) != recomputes
    assert (f"{contracts.FOLDER_READ_FUNCTION}(" in check) == recomputes
    assert ("spark_bucketing_hive_hash(`k`)" in check) == recomputes
    assert ("lag(__sb_sort_0)" in check) == recomputes
    assert not [s for s in statements if f"{name}__dbt_incr" in s and not s.lower().startswith("drop table")]
    assert table_rows(spark, table) == expected.rows()
    assert partition_layout_problems(spark, table) == []
