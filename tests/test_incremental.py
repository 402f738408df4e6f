"""bucketed_incremental: insert_overwrite (dynamic and static) and append keep
one file per bucket per partition, failed runs lose nothing, and bucket spec
changes follow on_bucket_change; the catalog never declares a spec that a
partition breaks."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import pytest

from harness.dbt_project import failure_text, node_messages
from harness.spark import extension_on
from spark_bucketing import cli, plans
from tests.support.incremental import (
    Expected,
    declared,
    metadata,
    partition_rows,
    run_model,
    step,
    table_rows,
)


def _dbt_tests(project, name):
    result = project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
    assert result.success, failure_text(result)
    return result


def test_insert_overwrite_and_append_keep_one_file_per_bucket(spark, dbt_project):
    expected = Expected()
    name = "inc_basic"
    for vars_ in (
        {"days": [0, 1, 2]},
        {"days": [2, 3], "tag": 1},
        {"days": [3, 4], "strategy": "append", "tag": 2},
        {"days": [0], "strategy": "append", "tag": 3},
    ):
        table = step(spark, dbt_project, name, expected, vars_)
    meta = metadata(spark, table)
    assert sorted(meta) == [f"day=2024-01-0{d}" for d in range(1, 6)]
    assert meta["day=2024-01-04"]["rows"] == 400 and meta["day=2024-01-04"]["files"] == 8
    assert declared(spark, table)["buckets"] == 8
    _dbt_tests(dbt_project, name)


def test_static_insert_overwrite_replaces_exactly_the_listed_partitions(spark, dbt_project):
    expected = Expected()
    name = "inc_static"
    step(spark, dbt_project, name, expected, {"days": [0, 1, 2]})
    # Day 2 is listed but gets no rows: it is emptied; day 0 is not listed: kept.
    vars_ = {"days": [1], "partitions": ["2024-01-02", "2024-01-03"], "tag": 1}
    table = step(spark, dbt_project, name, expected, vars_)
    assert sorted(partition_rows(spark, table)) == [0, 1]
    assert sorted(metadata(spark, table)) == ["day=2024-01-01", "day=2024-01-02"]
    # A row outside the listed partitions fails the run and changes nothing.
    before = table_rows(spark, table)
    result = run_model(dbt_project, name, {"days": [0, 1], "partitions": ["2024-01-02"], "tag": 2}, expect_ok=False)
    assert "returned a row outside its static partitions" in node_messages(result)[name]
    assert table_rows(spark, table) == before
    _dbt_tests(dbt_project, name)


@pytest.mark.parametrize("strategy", ["insert_overwrite", "append"])
def test_unpartitioned_tables_are_rewritten_whole(spark, dbt_project, strategy):
    expected = Expected()
    name = f"inc_unpart_{strategy}"
    base = {"partition_by": [], "strategy": strategy}
    step(spark, dbt_project, name, expected, {**base, "days": [0, 1]})
    table = step(spark, dbt_project, name, expected, {**base, "days": [1, 2], "tag": 1})
    if strategy == "insert_overwrite":
        # Unpartitioned: the new rows replace the table.
        assert sorted(partition_rows(spark, table)) == [1, 2]
    _dbt_tests(dbt_project, name)


def test_session_settings_do_not_leak(spark, dbt_project):
    settings = {"spark.sql.sources.partitionOverwriteMode": "DYNAMIC", "spark.sql.files.maxRecordsPerFile": "7"}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        expected = Expected()
        name = "inc_settings"
        step(spark, dbt_project, name, expected, {"days": [0, 1]})
        step(spark, dbt_project, name, expected, {"days": [1, 2], "buckets": 4, "on_change": "evolve"})
        assert {k: spark.conf.get(k) for k in settings} == settings
        assert spark.conf.get("spark.sql.sources.bucketing.enabled") == "true"
    finally:
        for key in settings:
            spark.conf.unset(key)


def test_on_bucket_change_fail_stops_before_writing(spark, dbt_project):
    expected = Expected()
    name = "inc_change_fail"
    table = step(spark, dbt_project, name, expected, {"days": [0, 1]})
    before = table_rows(spark, table)
    result = run_model(dbt_project, name, {"days": [1, 2], "buckets": 16}, expect_ok=False)
    message = node_messages(result)[name]
    assert "the bucket spec changed from 8 buckets on (k), hive hash, sorted by (id) to 16 buckets" in message
    assert "on_bucket_change='rebuild'" in message and "on_bucket_change='evolve'" in message
    assert table_rows(spark, table) == before
    assert declared(spark, table)["buckets"] == 8


def test_on_bucket_change_rebuild_rewrites_every_partition(spark, dbt_project):
    expected = Expected()
    name = "inc_rebuild"
    step(spark, dbt_project, name, expected, {"days": [0, 1, 2]})
    vars_ = {"days": [2, 3], "buckets": 5, "bucket_hash": "spark", "on_change": "rebuild", "tag": 1}
    table = step(spark, dbt_project, name, expected, vars_)
    assert declared(spark, table) == {"hash": "spark", "clustered_by": ["k"], "buckets": 5, "sorted_by": ["id"]}
    assert {(m["hash"], m["buckets"]) for m in metadata(spark, table).values()} == {("spark", 5)}
    _dbt_tests(dbt_project, name)


def _join_exchanges(spark, sql):
    return plans.exchanges(plans.executed_plan(spark, sql), "hashpartitioning")


def test_evolve_declares_unbucketed_until_partitions_agree_then_bucket_joins_return(spark, dbt_project):
    schema = dbt_project.schema
    dbt_project.write_model(
        "dim16",
        "select cast(id as int) as k, concat('name-', id) as name from range(0, 300)",
        {"materialized": "bucketed_table", "clustered_by": "k", "buckets": 16, "bucket_hash": "spark"},
    )
    dbt_project.run("dim16")
    expected = Expected()
    name = "inc_evolve"
    spark_hash = {"bucket_hash": "spark"}
    table = step(spark, dbt_project, name, expected, {**spark_hash, "days": [0, 1, 2]})
    evolve = {**spark_hash, "buckets": 16, "on_change": "evolve"}
    step(spark, dbt_project, name, expected, {**evolve, "days": [3, 4], "tag": 1})
    assert declared(spark, table) is None
    assert {m["buckets"] for m in metadata(spark, table).values()} == {8, 16}
    join = f"select count(*) from {table} e join {schema}.dim16 d on e.k = d.k"
    assert _join_exchanges(spark, join) == 1  # the unbucketed side is shuffled
    _dbt_tests(dbt_project, name)

    # Backfill the old partitions with the new spec: the table converges.
    step(spark, dbt_project, name, expected, {**evolve, "days": [0, 1, 2], "tag": 2})
    assert declared(spark, table) == {"hash": "spark", "clustered_by": ["k"], "buckets": 16, "sorted_by": ["id"]}
    assert _join_exchanges(spark, join) == 0
    assert spark.sql(join).first()[0] == sum(expected.rows().values())
    _dbt_tests(dbt_project, name)


def test_dropping_the_old_partitions_converges_the_table(spark, dbt_project):
    expected = Expected()
    name = "inc_drop"
    table = step(spark, dbt_project, name, expected, {"days": [0, 1]})
    evolve = {"buckets": 32, "on_change": "evolve"}
    step(spark, dbt_project, name, expected, {**evolve, "days": [2], "tag": 1})
    assert declared(spark, table) is None
    spark.sql(f"alter table {table} drop partition (day = '2024-01-01')")
    spark.sql(f"alter table {table} drop partition (day = '2024-01-02')")
    expected.days.pop(0)
    expected.days.pop(1)
    step(spark, dbt_project, name, expected, {**evolve, "days": [3], "tag": 2})
    assert declared(spark, table)["buckets"] == 32
    assert sorted(metadata(spark, table)) == ["day=2024-01-03", "day=2024-01-04"]
    _dbt_tests(dbt_project, name)


@pytest.mark.parametrize("extension", [False, True], ids=["stock", "extension"])
def test_an_evolved_table_warns_until_rebuild_repairs_it(spark, dbt_project, extension):
    """After `evolve` the table is declared unbucketed: the run says so, with the command that repairs it
    (with the session extension too, whose switch ends the commit itself); `rebuild` on the same spec then
    rewrites every partition with it (it changed nothing, silently: issue 82)."""
    with extension_on(spark, extension):
        _evolve_then_rebuild(spark, dbt_project, f"inc_repair_{'ext' if extension else 'stock'}")


def _evolve_then_rebuild(spark, dbt_project, name):
    expected = Expected()
    table = step(spark, dbt_project, name, expected, {"days": [0, 1]})
    log = dbt_project.root / "logs" / "dbt.log"
    log.unlink(missing_ok=True)
    evolve = {"days": [2], "buckets": 16, "on_change": "evolve", "tag": 1}
    step(spark, dbt_project, name, expected, evolve)
    assert declared(spark, table) is None
    text = log.read_text()
    assert f"{table} is declared unbucketed: its partitions do not all hold one bucket spec" in text
    assert "Fix: rewrite every partition with 16 buckets on (k), hive hash, sorted by (id) once:" in text
    assert f"`dbt run --select {name} --full-refresh`, or one run with on_bucket_change='rebuild'" in text
    log.unlink()
    step(spark, dbt_project, name, expected, {**evolve, "days": [3], "on_change": "rebuild", "tag": 2})
    assert declared(spark, table) == {"hash": "hive", "clustered_by": ["k"], "buckets": 16, "sorted_by": ["id"]}
    assert {m["buckets"] for m in metadata(spark, table).values()} == {16}
    text = log.read_text()
    assert "on_bucket_change='rebuild' rewrites every partition with 16 buckets" in text
    assert "is declared unbucketed:" not in text


def test_evolve_warns_when_counts_are_not_power_of_two_multiples(spark, dbt_project):
    expected = Expected()
    name = "inc_warn"
    step(spark, dbt_project, name, expected, {"days": [0]})
    log = dbt_project.root / "logs" / "dbt.log"
    log.unlink(missing_ok=True)
    step(spark, dbt_project, name, expected, {"days": [1], "buckets": 12, "on_change": "evolve"})
    assert "bucket count 8 -> 12 is not a power-of-two multiple" in log.read_text()
    log.unlink()
    step(spark, dbt_project, name, expected, {"days": [2], "buckets": 48, "on_change": "evolve"})
    assert "power-of-two" not in log.read_text()


def test_metadata_macro_run_operation_and_cli(spark, dbt_project):
    expected = Expected()
    name = "inc_meta"
    table = step(spark, dbt_project, name, expected, {"days": [0, 1]})
    step(spark, dbt_project, name, expected, {"days": [2], "buckets": 16, "on_change": "evolve"})

    dbt_project.write_model(
        "meta_view",
        f"select * from ({{{{ spark_bucketing.bucket_metadata(ref('{name}')) }}}})",
        {"materialized": "table"},
    )
    dbt_project.run("meta_view", extra=("--vars", json.dumps({"days": [2], "buckets": 16, "on_change": "evolve"})))
    rows = {r["partition"]: r for r in spark.table(f"{dbt_project.schema}.meta_view").collect()}
    assert {p: (r.buckets, r.files, r.row_count) for p, r in rows.items()} == {
        "day=2024-01-01": (8, 8, 200),
        "day=2024-01-02": (8, 8, 200),
        "day=2024-01-03": (16, 16, 200),
    }

    op = dbt_project.dbt(
        "run-operation", "spark_bucketing.show_bucket_metadata", "--args", json.dumps({"relation_name": table})
    )
    assert op.success

    # No --thrift/--state-dir: the project's own dbt target.
    target = ["--project-dir", str(dbt_project.root), "--profiles-dir", str(dbt_project.root)]
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["partitions", table, *target]) == 0
    text = out.getvalue()
    assert "catalog declares: unbucketed" in text
    assert "latest write:     16 buckets on (k), hive hash, sorted by (id)" in text
    assert "* day=2024-01-01" in text and "  day=2024-01-03" in text

    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["partitions", table, *target, "--format", "json"]) == 0
    data = json.loads(out.getvalue())
    assert data["declared"] is None and len(data["partitions"]) == 3


def test_bucket_metadata_test_catches_tampering(spark, dbt_project):
    expected = Expected()
    name = "inc_tamper"
    table = step(spark, dbt_project, name, expected, {"days": [0, 1]})
    key = "spark_bucketing.partition.day=2024-01-01"
    original = {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}[key]
    record = json.loads(original)
    record["buckets"] = 4
    spark.sql(f"alter table {table} set tblproperties ('{key}' = '{json.dumps(record)}')")
    result = dbt_project.test_model(name, "spark_bucketing.bucket_metadata")
    assert not result.success
    (test_result,) = result.result.results
    compiled = test_result.node.compiled_code
    assert (
        "catalog declares 8 buckets on (k), hive hash, sorted by (id) but the partition was written with 4 buckets"
        in compiled
    )
    assert "bucket id 7 >= bucket count 4" in compiled
    # A record that is not JSON stops the next run before anything is
    # written, with a message naming the property.
    before = table_rows(spark, table)
    spark.sql(f"alter table {table} set tblproperties ('{key}' = 'not json')")
    result = run_model(dbt_project, name, {"days": [1], "tag": 1}, expect_ok=False)
    assert f"the table property {key} of {table} is not a JSON record: not json" in failure_text(result)
    assert table_rows(spark, table) == before
    # A record without its path (as records were written before they carried
    # one) is the record of the partition its key names.
    pathless = {k: v for k, v in json.loads(original).items() if k != "path"}
    spark.sql(f"alter table {table} set tblproperties ('{key}' = '{json.dumps(pathless)}')")
    _dbt_tests(dbt_project, name)
