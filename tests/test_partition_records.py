"""Metadata format 2's store: each partition's record in its own partition
parameters, written by the extension's switch in the call that moves or adds
the partition, and read back by its `spark_bucketing_records` table function.
Against a real Spark session and its Hive metastore (Derby)."""

from __future__ import annotations

import json

import pytest

from harness.dbt_project import failure_text
from harness.spark import extension_on, sql_string
from spark_bucketing import contracts
from spark_bucketing.metadata import SparkClient, read_table_metadata
from tests.support.incremental import (
    Expected,
    declared,
    failed_run,
    old_or_new_rows,
    partition_layout_problems,
    run_model,
    step,
    table_rows,
)

RECORD_KEY = contracts.PARTITION_RECORD_KEY


def _switch(spark, table: str, moves: list, table_properties: dict | None = None) -> list[tuple]:
    payload = {"moves": moves, "table_properties": table_properties or {}}
    sql = f"{contracts.SWITCH_STATEMENT} {table} locations {sql_string(json.dumps(payload))}"
    rows = spark.sql(sql).collect()
    # No "end" in the payload: the switch ends no commit.
    assert not [r for r in rows if r.ended]
    return [(r.previous_location, r.previous_record) for r in rows]


def _records(spark, table: str) -> dict[str, str | None]:
    rows = spark.sql(f"select path, record from {contracts.PARTITION_RECORDS_FUNCTION}('{table}')").collect()
    return {r.path: r.record for r in rows}


def _parameters(spark, table: str, spec: dict[str, str]) -> dict[str, str]:
    """A partition's parameters as the metastore holds them (through Spark's
    external catalog: DESCRIBE prints them as a map no parser can split)."""
    jvm = spark._jvm
    db, name = table.split(".")
    partition = (
        spark._jsparkSession.sharedState()
        .externalCatalog()
        .getPartition(db, name, jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(spec))
    )
    return dict(jvm.scala.jdk.javaapi.CollectionConverters.asJava(partition.parameters()))


def test_the_switch_keeps_records_in_partition_parameters(spark, tmp_path):
    """Moving a partition with a record stores the record in the partition's
    parameters (Spark's own statistics kept), returns the record it had;
    a move without a record leaves the parameters alone; a new partition is
    created with its record and the table's storage format; the table
    properties given are set; the records function names each partition as
    SHOW PARTITIONS does, awkward values included."""
    spark.sql("create database if not exists records")
    table = "records.t"
    spark.sql(f"create table {table} (v int, `Day` string) using parquet partitioned by (`Day`)")
    awkward = "a b/c'd=e%f"
    spark.sql(f"insert into {table} values (1, 'x'), (2, {sql_string(awkward)})")
    spark.sql(f"analyze table {table} partition (`Day`) compute statistics")
    listed = [r[0] for r in spark.sql(f"show partitions {table}").collect()]
    assert _records(spark, table) == dict.fromkeys(listed)
    stats_before = {k: v for k, v in _parameters(spark, table, {"day": "x"}).items() if k.startswith("spark.sql")}

    folders = {}
    for name, v in (("x2", 10), ("new", 30), ("awk2", 20)):
        folders[name] = tmp_path / name
        spark.range(1).selectExpr(f"cast({v} as int) as v").write.parquet(str(folders[name]))
    first = {"hash": "spark", "buckets": 4, "path": "Day=x"}
    returned = _switch(
        spark,
        table,
        [
            {"spec": {"day": "x"}, "location": f"file:{folders['x2']}", "record": json.dumps(first)},
            {"spec": {"day": "y"}, "location": f"file:{folders['new']}", "record": '{"new": 1}', "create": True},
        ],
        {contracts.FORMAT_VERSION_KEY: "2"},
    )
    assert returned == [(returned[0][0], None), (None, None)] and returned[0][0]
    params = _parameters(spark, table, {"day": "x"})
    assert json.loads(params[RECORD_KEY]) == first
    assert {k: v for k, v in params.items() if k.startswith("spark.sql")} == stats_before
    assert spark.sql(f"show tblproperties {table} ('{contracts.FORMAT_VERSION_KEY}')").collect()[0][1] == "2"
    assert sorted((r.v, r.Day) for r in spark.sql(f"select * from {table}").collect()) == [
        (2, awkward),
        (10, "x"),
        (30, "y"),
    ]

    # The awkward partition without a record: its parameters stay as they
    # were (but the time of the last change, which the metastore sets).
    awkward_spec = {"day": awkward}

    def kept(params: dict) -> dict:
        return {k: v for k, v in params.items() if k != "transient_lastDdlTime"}

    before = kept(_parameters(spark, table, awkward_spec))
    _switch(spark, table, [{"spec": {"Day": awkward}, "location": f"file:{folders['awk2']}"}])
    assert kept(_parameters(spark, table, awkward_spec)) == before and before
    listed = [r[0] for r in spark.sql(f"show partitions {table}").collect()]
    records = _records(spark, table)
    assert sorted(records) == sorted(listed) and len(listed) == 3
    (awkward_path,) = set(listed) - {"Day=x", "Day=y"}
    assert {p: json.loads(r) if r else None for p, r in records.items()} == {
        "Day=x": first,
        "Day=y": {"new": 1},
        awkward_path: None,
    }

    # A second move returns the record it replaces.
    second = dict(first, buckets=8)
    returned = _switch(
        spark, table, [{"spec": {"day": "x"}, "location": f"file:{folders['x2']}", "record": json.dumps(second)}]
    )
    assert json.loads(returned[0][1]) == first
    assert json.loads(_records(spark, table)["Day=x"]) == second


def test_a_record_longer_than_a_parameter_value_is_split_and_read_whole(spark, tmp_path):
    """A Hive 2.3 metastore holds a partition parameter's value in 4,000
    characters: a longer record is stored in parts and read back whole, and
    a shorter one replacing it leaves no part behind."""
    spark.sql("create database if not exists records")
    table = "records.long"
    spark.sql(f"create table {table} (v int, day string) using parquet partitioned by (day)")
    spark.sql(f"insert into {table} values (1, 'a')")
    folder = tmp_path / "f"
    spark.range(1).selectExpr("cast(id as int) as v").write.parquet(str(folder))
    # 9,000 characters, with a character outside the BMP (a surrogate pair) across the first boundary.
    long_record = json.dumps({"values": {"day": "x" * 3985 + "\U0001f600" + "y" * 5000}}, ensure_ascii=False)
    assert len(long_record) > 2 * 4000
    _switch(spark, table, [{"spec": {"day": "a"}, "location": f"file:{folder}", "record": long_record}])
    assert _records(spark, table) == {"day=a": long_record}
    params = _parameters(spark, table, {"day": "a"})
    assert RECORD_KEY not in params and params[f"{RECORD_KEY}.numParts"] == "3"
    returned = _switch(spark, table, [{"spec": {"day": "a"}, "location": f"file:{folder}", "record": "{}"}])
    assert returned[0][1] == long_record
    params = _parameters(spark, table, {"day": "a"})
    assert params[RECORD_KEY] == "{}" and not [k for k in params if k.startswith(RECORD_KEY + ".")]


def _props(spark, table: str) -> dict[str, str]:
    return {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}


def _summary(spark, table: str) -> dict:
    """{(buckets, hash): count} of the table's format-2 summary."""
    summary = json.loads(_props(spark, table)[contracts.SUMMARY_KEY])
    return {
        (e["spec"]["buckets"], e["spec"]["hash"]) if e["spec"] else ("none", "none"): e["count"]
        for e in summary["specs"].values()
    }


def test_a_table_keeps_its_records_in_partition_parameters_through_its_runs(spark, dbt_project):
    """bucket_records='partition_parameters': the first build, incremental
    runs, a bucket-count evolution and its convergence keep every record in
    its partition (none in the table's properties) and the summary's counts
    right; the package's tests pass at every step; moving to table
    properties and back carries every record."""
    expected = Expected()
    name = "records_runs"
    base = {"bucket_records": "partition_parameters", "rows": 40}
    with extension_on(spark):
        table = step(spark, dbt_project, name, expected, {**base, "days": [0, 1, 2]})
        props = _props(spark, table)
        assert props[contracts.FORMAT_VERSION_KEY] == "2"
        assert not [k for k in props if k.startswith(contracts.PARTITION_KEY_PREFIX)]
        assert _summary(spark, table) == {(8, "hive"): 3}
        assert sorted(_records(spark, table)) == [f"day=2024-01-0{d}" for d in (1, 2, 3)]

        step(spark, dbt_project, name, expected, {**base, "days": [2, 3], "tag": 1})
        assert _summary(spark, table) == {(8, "hive"): 4}
        assert declared(spark, table) == {"hash": "hive", "clustered_by": ["k"], "buckets": 8, "sorted_by": ["id"]}
        result = dbt_project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
        assert result.success, failure_text(result)

        evolve = {**base, "buckets": 16, "on_change": "evolve"}
        step(spark, dbt_project, name, expected, {**evolve, "days": [3, 4], "tag": 2})
        assert _summary(spark, table) == {(8, "hive"): 3, (16, "hive"): 2}
        assert declared(spark, table) is None
        result = dbt_project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
        assert result.success, failure_text(result)
        step(spark, dbt_project, name, expected, {**evolve, "days": [0, 1, 2], "tag": 3})
        assert _summary(spark, table) == {(16, "hive"): 5}
        assert declared(spark, table)["buckets"] == 16

        records = {p: json.loads(r) for p, r in _records(spark, table).items()}
        step(
            spark, dbt_project, name, expected, {**evolve, "bucket_records": "table_properties", "days": [4], "tag": 4}
        )
        props = _props(spark, table)
        assert props[contracts.FORMAT_VERSION_KEY] == "1" and contracts.SUMMARY_KEY not in props
        in_props = {r.path: r for r in read_table_metadata(SparkClient(spark), table).partitions}
        assert sorted(in_props) == sorted(records)
        assert {p: r.location for p, r in in_props.items() if p != "day=2024-01-05"} == {
            p: r["location"] for p, r in records.items() if p != "day=2024-01-05"
        }
        result = dbt_project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
        assert result.success, failure_text(result)

        step(spark, dbt_project, name, expected, {**evolve, "days": [5], "tag": 5})
        assert _summary(spark, table) == {(16, "hive"): 6}
        assert not [k for k in _props(spark, table) if k.startswith(contracts.PARTITION_KEY_PREFIX)]
        assert declared(spark, table)["buckets"] == 16
        result = dbt_project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
        assert result.success, failure_text(result)

        # A summary that miscounts the listed partitions' records: the test says so.
        summary = json.loads(_props(spark, table)[contracts.SUMMARY_KEY])
        (entry,) = summary["specs"].values()
        entry["count"] = 5
        spark.sql(
            f"alter table {table} set tblproperties ('{contracts.SUMMARY_KEY}' = {sql_string(json.dumps(summary))})"
        )
        result = dbt_project.test_model(name, "spark_bucketing.bucket_metadata")
        assert not result.success
        (test_result,) = result.result.results
        assert "counts 5 partitions with" in test_result.node.compiled_code
        assert "where the records hold 6" in test_result.node.compiled_code
        spark.sql(f"alter table {table} unset tblproperties ('{contracts.SUMMARY_KEY}')")
        step(spark, dbt_project, name, expected, {**evolve, "days": [5], "tag": 6})
        assert _summary(spark, table) == {(16, "hive"): 6}
        result = dbt_project.test_model(name, "spark_bucketing.bucket_metadata")
        assert result.success, failure_text(result)


@pytest.mark.parametrize(
    ("fail_at", "was"),
    [
        ("before_switch", "partition_parameters"),
        ("mid_switch", "partition_parameters"),
        ("before_cleanup", "partition_parameters"),
        ("mid_switch", "table_properties"),
    ],
)
def test_a_failure_around_the_switch_leaves_records_that_the_next_run_trusts_only_when_right(
    spark, dbt_project, fail_at, was
):
    """Injected before the switch, after it (the summary left pending) and
    after the summary, and after the switch of a run that moves a format-1
    table to format 2: every partition holds its old or its new rows, each
    partition's record is the one its rows were written with (a table being
    moved stays in format 1 until its summary is written), and the next run,
    which writes another day and rebuilds a pending summary from the
    records, leaves the summary's counts and the declared spec right."""
    expected = Expected()
    name = f"records_{fail_at}_{was}"
    base = {"bucket_records": "partition_parameters", "rows": 30}
    with extension_on(spark):
        table = step(spark, dbt_project, name, expected, {**base, "bucket_records": was, "days": [0, 1, 2]})
        old = expected.copy()
        vars_ = {**base, "days": [1, 2, 3], "tag": 1, "buckets": 16, "on_change": "evolve"}
        new = expected.copy()
        new.apply(spark, vars_)
        failed_run(dbt_project, name, vars_, fail_at)
        now = old_or_new_rows(spark, table, old, new)
        problems = partition_layout_problems(spark, table)
        if was == "table_properties" and fail_at == "mid_switch":
            # Still in format 1, whose records in the table's properties are
            # those before the switch (as after a format-1 run that fails
            # there): the catalog must declare nothing the files break.
            assert not [p for p in problems if "catalog declares" in p]
        else:
            # The records moved with their partitions, in the same call.
            assert problems == []
        props = _props(spark, table)
        assert ("pending" in props.get(contracts.SUMMARY_KEY, "")) == (fail_at == "mid_switch")
        moved = was == "partition_parameters" or fail_at == "before_cleanup"
        assert props[contracts.FORMAT_VERSION_KEY] == ("2" if moved else "1")
        # The next run writes another day: what the failed run switched must be counted by what it holds.
        rewritten = {d for d in (1, 2, 3) if d in now and now[d] == new.nonempty().get(d)}
        after = Expected()
        for d, rows in now.items():
            after.days[d] = rows
        later = {**vars_, "days": [4], "tag": 2}
        after.apply(spark, later)
        run_model(dbt_project, name, later)
        assert table_rows(spark, table) == after.rows()
        assert partition_layout_problems(spark, table) == []
        counts = {(8, "hive"): len(set(now) - rewritten), (16, "hive"): len(rewritten) + 1}
        assert _summary(spark, table) == {k: n for k, n in counts.items() if n}
        assert not [k for k in _props(spark, table) if k.startswith(contracts.PARTITION_KEY_PREFIX)]
        assert declared(spark, table) is None
        result = dbt_project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
        assert result.success, failure_text(result)


def test_a_partition_changed_behind_the_package_is_found_by_the_next_run(spark, dbt_project):
    """The summary stands for the catalog's list it was made with: a
    partition added by hand (no record) and one dropped by hand, together
    leaving the count unchanged, change the list's digest, so the next run
    rebuilds the counts from the records and declares the table unbucketed
    while a partition has no record."""
    expected = Expected()
    name = "records_by_hand"
    base = {"bucket_records": "partition_parameters", "rows": 30}
    with extension_on(spark):
        table = step(spark, dbt_project, name, expected, {**base, "days": [0, 1, 2]})
        assert declared(spark, table) is not None
        spark.sql(f"alter table {table} drop partition (day = date'2024-01-01')")
        spark.sql(f"alter table {table} add partition (day = date'2024-02-01')")
        expected.days.pop(0)
        step(spark, dbt_project, name, expected, {**base, "days": [2], "tag": 1})
        assert _summary(spark, table) == {(8, "hive"): 2, ("none", "none"): 1}
        assert declared(spark, table) is None


@pytest.mark.parametrize("extension", [False, True])
def test_records_whose_keys_or_values_hold_url_are_read_back(spark, dbt_project, extension):
    """SHOW TBLPROPERTIES hides the value of a property whose key or value
    matches spark.sql.redaction.options.regex (default (?i)url): a table
    named hourly_... (its folder in every record) or a partition value
    holding "URL" would lose its records. Found by the microbatch tests; the
    records are written so that Spark shows them, with and without the
    extension's switch."""
    name = f"hourly_url_{'ext' if extension else 'plain'}"
    config = {
        "materialized": "bucketed_incremental",
        "clustered_by": ["k"],
        "buckets": 4,
        "partition_by": ["src"],
        "bucket_hash": "spark",
    }
    sql = "select cast(id as int) as k, case when id % 2 = 0 then 'curl' else 'URLs' end as src from range(0, {n})"
    with extension_on(spark, extension):
        dbt_project.write_model(name, sql.format(n=40), config)
        dbt_project.run(name)
        dbt_project.write_model(name, sql.format(n=60), config)
        dbt_project.run(name)
        table = f"{dbt_project.schema}.{name}"
        shown = dict((r.key, r.value) for r in spark.sql(f"show tblproperties {table}").collect())
        assert not [k for k, v in shown.items() if k.startswith("spark_bucketing.") and "redacted" in v]
        records = {r.path: r for r in read_table_metadata(SparkClient(spark), table).partitions}
        assert sorted(records) == ["src=URLs", "src=curl"]
        assert all(name in r.location for r in records.values())
        assert sum(r.rows for r in records.values()) == 60
        result = dbt_project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
        assert result.success, failure_text(result)
