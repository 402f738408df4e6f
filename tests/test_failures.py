"""A failed run never loses the previous table, and bad configs fail before
anything is written, with a message that says what to change."""

from __future__ import annotations

import pytest

from harness.dbt_project import DbtProject, node_messages
from harness.spark import describe, extension_on, table_location
from spark_bucketing import contracts
from tests.support.incremental import statement_body, write_check
from tests.support.layout import check_layout

pytestmark = pytest.mark.fast  # the fast tier: `bash scripts/test --fast` (docs/development.md)

GOOD_SQL = "select cast(id as int) as k, cast(id % 3 as string) as p, id as v from range(0, 1000, 1, 4)"
GOOD = {"materialized": "bucketed_table", "clustered_by": "k", "buckets": 8, "partition_by": "p"}


def _exists(spark, schema, name):
    """Whether the entry exists; a side entry's `name` (`<alias>__dbt_incr`) matches any run's (`<name>_<run>`)."""
    if spark.catalog.tableExists(f"{schema}.{name}"):
        return True
    return "__dbt_" in name and bool(spark.sql(f"show tables in {schema} like '{name}_r*'").collect())


def test_runtime_failure_keeps_previous_table_and_rows(spark, dbt_project):
    schema = dbt_project.schema
    dbt_project.write_model("keeper", GOOD_SQL, GOOD)
    dbt_project.run("keeper")
    before = sorted(spark.table(f"{schema}.keeper").collect())

    failing = GOOD_SQL.replace(
        "id as v", "case when id = 777 then cast(raise_error('boom at row 777') as bigint) else id end as v"
    )
    dbt_project.write_model("keeper", failing, GOOD)
    log: list[str] = []
    result = dbt_project.run("keeper", expect_ok=False, log=log)
    assert not result.success
    assert "boom at row 777" in node_messages(result)["keeper"]
    # Its side entry goes at the end of the failed run, once: the package's end of run, which the plugin runs
    # (the project has no hook; tests/test_concurrent_runs.py's has the README's former one).
    dropped = [
        m for m in log if m.startswith("spark_bucketing: dropping ") and "left by a run of model.sb_it.keeper" in m
    ]
    assert len(dropped) == 1, dropped
    assert spark.sql(f"show tables in {schema} like 'keeper__dbt_*'").collect() == []

    assert sorted(spark.table(f"{schema}.keeper").collect()) == before
    report = check_layout(spark, f"{schema}.keeper")
    assert report.max_files_per_bucket == 1 and report.misplaced_rows == 0 and report.rows == 1000

    # The next good run cleans up what the failed one left and replaces the table.
    dbt_project.write_model("keeper", GOOD_SQL.replace("1000", "1500"), GOOD)
    dbt_project.run("keeper")
    assert spark.table(f"{schema}.keeper").count() == 1500
    assert not _exists(spark, schema, "keeper__dbt_tmp")
    assert not _exists(spark, schema, "keeper__dbt_backup")


def test_rebuild_replaces_rows_and_spec(spark, dbt_project):
    schema = dbt_project.schema
    dbt_project.write_model("respec", GOOD_SQL, GOOD)
    dbt_project.run("respec")
    dbt_project.write_model("respec", GOOD_SQL, {**GOOD, "buckets": 5, "bucket_hash": "spark", "file_format": "orc"})
    dbt_project.run("respec")
    desc = describe(spark, f"{schema}.respec")
    assert desc["Num Buckets"] == "5" and desc["Provider"] == "orc"
    report = check_layout(spark, f"{schema}.respec")
    assert report.max_files_per_bucket == 1 and report.misplaced_rows == 0 and report.rows == 1000


BAD_CONFIGS = {
    "no_clustered_by": ({"clustered_by": None}, "config 'clustered_by': is missing or empty"),
    "empty_clustered_by": ({"clustered_by": []}, "config 'clustered_by': is missing or empty"),
    "no_buckets": ({"buckets": None}, "config 'buckets': is missing"),
    "string_buckets": ({"buckets": "16"}, "config 'buckets': must be an integer, got the string '16'"),
    "negative_retention": (
        {"replaced_folders_retention": -1},
        "config 'replaced_folders_retention': expected a whole number of seconds (0 or more), got -1",
    ),
    "float_buckets": ({"buckets": 2.5}, "config 'buckets': must be an integer, got 2.5"),
    "zero_buckets": ({"buckets": 0}, "config 'buckets': must be between 1 and 100000, got 0"),
    "huge_buckets": ({"buckets": 100001}, "must be between 1 and 100000, got 100001"),
    "unknown_bucket_column": (
        {"clustered_by": ["k", "nope"]},
        "config 'clustered_by': column 'nope' is not produced by the model's query",
    ),
    "unknown_sort_column": ({"sorted_by": "nope"}, "config 'sorted_by': column 'nope' is not produced"),
    "unknown_partition_column": ({"partition_by": ["nope"]}, "config 'partition_by': column 'nope' is not produced"),
    "bucket_column_is_partition": (
        {"clustered_by": ["k", "p"]},
        "config 'clustered_by': column 'p' is also in partition_by",
    ),
    "sort_column_is_partition": ({"sorted_by": ["P"]}, "config 'sorted_by': column 'p' is also in partition_by"),
    "delta_format": (
        {"file_format": "delta"},
        "config 'file_format': bucketed tables support 'parquet' or 'orc', got 'delta'",
    ),
    "bad_hash": ({"bucket_hash": "murmur"}, "config 'bucket_hash': must be 'hive' or 'spark', got 'murmur'"),
    "bad_verify_layout": ({"verify_layout": "all"}, "config 'verify_layout': must be true, 'rows' or false, got all"),
    "duplicate_bucket_column": ({"clustered_by": ["k", "K"]}, "config 'clustered_by': column 'K' is listed twice"),
    "timestamp_hive_key": (
        {"clustered_by": "ts"},
        "column 'ts' has type timestamp, which Spark does not hash the way Hive does",
    ),
    "decimal_hive_key": ({"clustered_by": "amount"}, "cast(amount as bigint)"),
    # Another tool's name of a required config: the error names the key the model set (issue 82).
    "cluster_by_instead": (
        {"clustered_by": None, "cluster_by": "k"},
        "config 'clustered_by': is missing or empty (the model sets 'cluster_by', which this package does not read)."
        " Fix: rename 'cluster_by' to clustered_by",
    ),
    "num_buckets_instead": (
        {"buckets": None, "num_buckets": 8},
        "config 'buckets': is missing (the model sets 'num_buckets', which this package does not read)."
        " Fix: rename 'num_buckets' to buckets",
    ),
}
BAD_SQL = (
    "select cast(id as int) as k, cast(id % 3 as string) as p, id as v, timestamp'2024-01-01 00:00:00' as ts, "
    "cast(id as decimal(10,2)) as amount from range(0, 100)"
)


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_bad_config_fails_before_anything_is_written(spark, dbt_project, name):
    schema = dbt_project.schema
    override, message = BAD_CONFIGS[name]
    config = {**GOOD, **override}
    config = {k: v for k, v in config.items() if v is not None}
    dbt_project.write_model(name, BAD_SQL, config)
    log = dbt_project.root / "logs" / "dbt.log"
    log.unlink(missing_ok=True)
    result = dbt_project.run(name, expect_ok=False)
    text = node_messages(result)[name]
    assert message in text
    assert f"model 'model.sb_it.{name}'" in text and "Fix: " in text
    assert not _exists(spark, schema, name)
    assert not _exists(spark, schema, f"{name}__dbt_tmp")
    statements = log.read_text().lower()
    assert "create table" not in statements and "insert overwrite" not in statements
    dbt_project.remove_model(name)


def test_a_misspelt_config_is_named_with_the_config_it_means(spark, dbt_project):
    """dbt keeps a config no materialization reads without a word: `sort_by` built the table unsorted, `OK`
    (issue 82). Each misspelt bucketing config gets a warning naming the config it most likely means."""
    config = {**GOOD, "sort_by": ["v"], "bucket": 8, "bucketed_by": "k", "on_buckets_change": "rebuild"}
    config["clustered_by"] = "missing_col"  # fails before anything is written: the warnings come first
    dbt_project.write_model("misspelt", BAD_SQL, config)
    log: list[str] = []
    result = dbt_project.run("misspelt", expect_ok=False, log=log)
    assert "column 'missing_col' is not produced" in node_messages(result)["misspelt"]
    warnings = [m for m in log if "is not a config of bucketed_table and is ignored" in m]
    assert len(warnings) == 4, warnings
    for written, meant in (
        ("sort_by", "sorted_by"),
        ("bucket", "buckets"),
        ("bucketed_by", "clustered_by"),
        ("on_buckets_change", "on_bucket_change"),
    ):
        assert any(f"config '{written}' is not a config" in w and f"Did you mean '{meant}'?" in w for w in warnings)
    dbt_project.remove_model("misspelt")


def test_bad_config_keeps_existing_table(spark, dbt_project):
    schema = dbt_project.schema
    dbt_project.write_model("guarded", GOOD_SQL, GOOD)
    dbt_project.run("guarded")
    dbt_project.write_model("guarded", GOOD_SQL, {**GOOD, "clustered_by": "missing_col"})
    result = dbt_project.run("guarded", expect_ok=False)
    assert "column 'missing_col' is not produced" in node_messages(result)["guarded"]
    assert spark.table(f"{schema}.guarded").count() == 1000


def _overriding_project(tmp_path_factory, dbt_project, name: str, macros: str) -> DbtProject:
    """A project on the test schema whose `macros` override the package's
    (through adapter.dispatch: its own namespace is searched first)."""
    project = DbtProject(
        tmp_path_factory.mktemp(name),
        schema=dbt_project.schema,
        package_dir=dbt_project.package_dir,
        name=name,
        project_overrides={
            "dispatch": [{"macro_namespace": "spark_bucketing", "search_order": [name, "spark_bucketing"]}]
        },
    )
    project.setup()
    project.write_file("macros/overrides.sql", macros)
    return project


@pytest.fixture(scope="module")
def broken_writer_project(spark, tmp_path_factory, dbt_project):
    """A project that overrides the package's distribution macro (through
    adapter.dispatch) with one that does not distribute: its writes break the
    layout, which the materialization must catch before the swap."""
    return _overriding_project(
        tmp_path_factory,
        dbt_project,
        "sb_broken",
        """
        {% macro spark__distributed_select_sql(spec, columns, sql) -%}
          select /*+ REPARTITION(3) */ * from ({{ sql }}) as s
        {%- endmacro %}
        """,
    )


@pytest.mark.parametrize("family", ["hive", "spark"])
def test_layout_check_rejects_a_broken_write_and_keeps_the_old_table(spark, dbt_project, broken_writer_project, family):
    """Both the check that recomputes each row's bucket (Hive hash) and the
    structural one (Spark hash: check_recomputes_buckets) find the extra files."""
    schema = dbt_project.schema
    name = f"checked_{family}"
    unpartitioned = {"materialized": "bucketed_table", "clustered_by": "k", "buckets": 8, "bucket_hash": family}
    dbt_project.write_model(name, GOOD_SQL, unpartitioned)
    dbt_project.run(name)
    before = sorted(spark.table(f"{schema}.{name}").collect())

    broken_writer_project.write_model(name, GOOD_SQL.replace("1000", "3000"), unpartitioned)
    result = broken_writer_project.run(name, expect_ok=False)
    message = node_messages(result)[name]
    assert "broke its bucket layout" in message and "3 files for bucket" in message
    assert sorted(spark.table(f"{schema}.{name}").collect()) == before
    assert not _exists(spark, schema, f"{name}__dbt_tmp")


# The partition column last: the broken writer inserts the model's columns as they are.
PARTITIONED_SQL = "select cast(id as int) as k, id as v, cast(id % 3 as string) as p from range(0, 1000, 1, 4)"


def _built_incremental(spark, dbt_project, name: str, family: str, strategy: str) -> tuple[dict, list]:
    """A bucketed_incremental table of PARTITIONED_SQL built by one good run: its config and rows."""
    config = {
        "materialized": "bucketed_incremental",
        "clustered_by": "k",
        "buckets": 8,
        "partition_by": "p",
        "bucket_hash": family,
        "incremental_strategy": strategy,
    }
    dbt_project.write_model(name, PARTITIONED_SQL, config)
    dbt_project.run(name)
    return config, sorted(spark.table(f"{dbt_project.schema}.{name}").collect())


def _run_folders_with_files(spark, table: str) -> list:
    """The folders under the table's `_bucketing/` (the runs' own) that hold data files."""
    runs = table_location(spark, table) / "_bucketing"
    return [p for p in runs.iterdir() if list(p.rglob("*.parquet"))] if runs.exists() else []


@pytest.mark.parametrize("family", ["hive", "spark"])
def test_with_the_extension_the_check_rejects_a_broken_write_of_a_bucketed_folder(
    spark, dbt_project, broken_writer_project, family
):
    """With the session extension, an incremental run of either hash family
    writes its partitions into a folder with no catalog entry, and the check
    takes each file's rows from its footer: it still finds the extra files of
    a writer that does not distribute, and the run publishes nothing and
    leaves no side entry and no written folder."""
    schema = dbt_project.schema
    name = f"untracked_checked_{family}"
    config, before = _built_incremental(spark, dbt_project, name, family, "insert_overwrite")

    broken_writer_project.write_model(name, PARTITIONED_SQL.replace("1000", "3000"), config)
    statements: list[str] = []
    with extension_on(spark):
        result = broken_writer_project.dbt("run", "--select", name, statements=statements)
    message = node_messages(result)[name]
    assert "broke its bucket layout" in message and "3 files for bucket" in message
    assert [s for s in statements if contracts.WRITE_FOLDER_STATEMENT in s.lower()]
    # The check took each file's rows from its footer, through the extension.
    check, _ = write_check([statement_body(s) for s in statements])
    assert f"{contracts.TABLE_FILES_FUNCTION}(" in check and "input_file_name()" not in check
    assert sorted(spark.table(f"{schema}.{name}").collect()) == before
    assert not _exists(spark, schema, f"{name}__dbt_incr")
    assert not _run_folders_with_files(spark, f"{schema}.{name}")


@pytest.mark.parametrize("extension", [True, False], ids=["extension", "no extension"])
def test_a_rejected_append_deletes_its_staged_rows_too(spark, dbt_project, broken_writer_project, extension):
    """An append stages the model's rows (a folder of the run's under the table's `_bucketing/`, or a side
    table) before it writes them with the old rows: a write the check rejects says its files are deleted, and
    the staged rows go with them, not after leftover_grace_period."""
    schema = dbt_project.schema
    name = f"rejected_append_{'ext' if extension else 'plain'}"
    config, before = _built_incremental(spark, dbt_project, name, "spark", "append")

    broken_writer_project.write_model(name, PARTITIONED_SQL.replace("0, 1000", "1000, 3000"), config)
    with extension_on(spark, extension):
        result = broken_writer_project.run(name, expect_ok=False)
    message = node_messages(result)[name]
    assert "broke its bucket layout" in message, message
    assert sorted(spark.table(f"{schema}.{name}").collect()) == before
    assert not _exists(spark, schema, f"{name}__dbt_new") and not _exists(spark, schema, f"{name}__dbt_incr")
    left = _run_folders_with_files(spark, f"{schema}.{name}")
    assert not left, left


@pytest.fixture(scope="module")
def disagreeing_hash_project(spark, tmp_path_factory, dbt_project):
    """A project whose Hive hash (bucket_id_expr, through adapter.dispatch)
    is not Hive's: abs() of the key, which agrees with Hive's hash of an int
    on keys >= 0 only."""
    return _overriding_project(
        tmp_path_factory,
        dbt_project,
        "sb_disagreeing",
        """
        {% macro spark__bucket_id_expr(columns, buckets, bucket_hash, bucketing_version=1) %}
          {%- if bucket_hash == 'hive' -%}
            ((abs({{ spark_bucketing.quoted(columns) | join(', ') }}) & 2147483647) % {{ buckets }})
          {%- else -%}
            {{ spark_bucketing.default__bucket_id_expr(columns, buckets, bucket_hash, bucketing_version) }}
          {%- endif -%}
        {% endmacro %}
        """,
    )


def test_with_the_extension_a_hive_write_checks_every_row_against_hives_hash(
    spark, dbt_project, disagreeing_hash_project
):
    """A Hive-hash run through the extension's folder write checks, row by
    row as it writes, that Spark's Hive writer puts each row in the bucket
    Hive's own hash function gives it (the check that would otherwise read
    the written rows again). A hash function that disagrees on some rows
    fails the write with the row's key and both buckets, and nothing is
    published; rows on which they agree are written and pass."""
    schema = dbt_project.schema
    name = "hive_rows_checked"
    config = {
        "materialized": "bucketed_incremental",
        "clustered_by": "k",
        "buckets": 8,
        "partition_by": "p",
        "bucket_hash": "hive",
        "incremental_strategy": "insert_overwrite",
    }
    sql = "select cast(id as int) - {low} as k, id as v, cast(id % 3 as string) as p from range(0, 300, 1, 2)"
    dbt_project.write_model(name, sql.format(low=0), config)
    dbt_project.run(name)
    before = sorted(spark.table(f"{schema}.{name}").collect())

    # Keys >= 0: abs() is Hive's hash there, so the run passes the row check.
    disagreeing_hash_project.write_model(name, sql.format(low=0).replace("id as v", "id + 1 as v"), config)
    statements: list[str] = []
    with extension_on(spark):
        disagreeing_hash_project.dbt("run", "--select", name, statements=statements)
    (write,) = [s for s in statements if contracts.WRITE_FOLDER_STATEMENT in s.lower()]
    assert f"{contracts.HIVE_WRITER_HASH_FUNCTION}(" in write and "raise_error(" in write
    assert not [s for s in statements if f"{name}__dbt_incr" in s and "drop table" not in s.lower()]
    after = sorted(spark.table(f"{schema}.{name}").collect())
    assert [r.v for r in after] == [r.v + 1 for r in before]
    assert check_layout(spark, f"{schema}.{name}").misplaced_rows == 0

    # Negative keys: abs() places them elsewhere than Spark's Hive writer does.
    disagreeing_hash_project.write_model(name, sql.format(low=150), config)
    with extension_on(spark):
        result = disagreeing_hash_project.dbt("run", "--select", name)
    message = node_messages(result)[name]
    assert f"model.sb_disagreeing.{name}: a row with (k) = (-" in message
    assert "by Hive's own hash but Spark's Hive writer would put it in bucket" in message
    assert sorted(spark.table(f"{schema}.{name}").collect()) == after
    assert not _exists(spark, schema, f"{name}__dbt_incr")
