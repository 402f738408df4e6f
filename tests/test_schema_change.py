"""dbt's incremental contract on bucketed_incremental, side by side with
stock dbt-spark's `incremental` on the same models: on_schema_change with
dbt's four values (the table's columns change in the catalog only: old
partitions keep their files and read a new column as NULL), the changes
that need a full refresh failing before anything is written, model
contracts checked before anything is written on both materializations
(dbt's own error) with their not_null and check constraints enforced, and
`dbt build --empty` with the package's tests attached."""

from __future__ import annotations

import pytest

from harness.dbt_project import failure_text, node_messages

OURS = (
    "materialized='bucketed_incremental', incremental_strategy='{strategy}', clustered_by=['k'], buckets=4, "
    "partition_by=['day'], bucket_hash='{hash}', file_format='{fmt}', on_schema_change='{osc}'"
)
STOCK = (
    "materialized='incremental', incremental_strategy='{strategy}', file_format='{fmt}', partition_by=['day'], "
    "on_schema_change='{osc}'"
)
TESTS = "spark_bucketing.bucket_layout, spark_bucketing.bucket_metadata"


def _model(config: str, columns: str, first_day: int, days: int = 1) -> str:
    """200 rows a day over `days` days from `first_day`, with the select list `columns` (k, day and more)."""
    return (
        "{{ config(" + config + ") }}\n"
        f"select {columns} from (select cast(id % 200 as int) as k, id as n,"
        f" date_add(date'2024-01-01', cast({first_day} + id div 200 as int)) as day from range(0, {200 * days}))"
    )


def _columns(spark, table: str) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in spark.table(table).schema.fields}


def _rows(spark, table: str, columns: str, tail: str = "") -> list[tuple]:
    return sorted((tuple(r) for r in spark.sql(f"select {columns} from {table} {tail}").collect()), key=repr)


def _write_pair(project, name: str, columns: str, first_day: int, days: int = 1, **fmt) -> None:
    project.write_file(f"models/{name}_ours.sql", _model(OURS.format(**fmt), columns, first_day, days))
    project.write_file(f"models/{name}_stock.sql", _model(STOCK.format(**fmt), columns, first_day, days))


V1 = "k, cast(n as string) as v, day"
V2 = "k, cast(n as string) as v, n * 2 as extra, day"


@pytest.mark.parametrize("osc", ["ignore", "fail", "append_new_columns", "sync_all_columns"])
def test_a_new_column_is_handled_as_stock_incremental_handles_it(spark, dbt_project, osc):
    schema, name = dbt_project.schema, f"osc_{osc}"
    fmt = {"strategy": "insert_overwrite", "hash": "spark", "fmt": "parquet", "osc": osc}
    _write_pair(dbt_project, name, V1, 0, days=2, **fmt)
    dbt_project.run(f"{name}_ours", f"{name}_stock")
    before = _rows(spark, f"{schema}.{name}_ours", "*")
    # The model gains a column and writes day 2 (new) and day 1 (replaced).
    _write_pair(dbt_project, name, V2, 1, days=2, **fmt)
    result = dbt_project.run(f"{name}_ours", f"{name}_stock", expect_ok=False)
    messages = node_messages(result)
    if osc == "fail":
        for side in ("ours", "stock"):
            assert (
                "The source and target schemas on this incremental model are out of sync" in messages[f"{name}_{side}"]
            )
        assert _rows(spark, f"{schema}.{name}_ours", "*") == before
        return
    assert result.success, failure_text(result)
    ours, stock = f"{schema}.{name}_ours", f"{schema}.{name}_stock"
    assert _columns(spark, ours) == _columns(spark, stock)
    assert _rows(spark, ours, "*") == _rows(spark, stock, "*")
    if osc == "ignore":
        assert "extra" not in _columns(spark, ours)
    else:
        # Day 0 kept its old files: the new column reads NULL there; the written days hold it.
        assert [c for _, c in _rows(spark, ours, "day, count(extra)", "group by day")] == [0, 200, 200]
    out = dbt_project.test_model(f"{name}_ours", *TESTS.split(", "))
    assert out.success, failure_text(out)


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_sync_all_columns_drops_and_widens_in_the_catalog_only(spark, dbt_project, fmt):
    """Stock dbt-spark refuses to drop a column ('Apache Spark does not support dropping columns from tables')
    and Spark to retype one; ours re-declares the table over the same files: the old partitions read back."""
    schema, name = dbt_project.schema, f"sync_{fmt}"
    config = OURS.format(strategy="append", hash="hive", fmt=fmt, osc="sync_all_columns")
    dbt_project.write_file(f"models/{name}.sql", _model(config, "k, cast(n as int) as n, 'x' as v, day", 0, days=2))
    dbt_project.run(name)
    files_before = set(
        spark.sql(f"select input_file_name() from {schema}.{name} where day = date'2024-01-01'").collect()
    )
    # v dropped, n widened to bigint, w added; day 2 appended.
    dbt_project.write_file(f"models/{name}.sql", _model(config, "k, n, n + 1 as w, day", 2))
    if fmt == "parquet" and int(spark.version.split(".")[0]) < 4:
        # Spark 3.5 reads no Parquet column as a wider type: refused before anything is written.
        result = dbt_project.run(name, expect_ok=False)
        assert "Spark 3.5 reads no Parquet column as a wider type" in node_messages(result)[name], node_messages(result)
        assert "column 'n' changed type from int to bigint" in node_messages(result)[name]
        assert _columns(spark, f"{schema}.{name}") == {"k": "int", "n": "int", "v": "string", "day": "date"}
        assert [r[1:] for r in _rows(spark, f"{schema}.{name}", "day, count(*)", "group by day")] == [(200,), (200,)]
        return
    dbt_project.run(name)
    assert _columns(spark, f"{schema}.{name}") == {"k": "int", "n": "bigint", "w": "bigint", "day": "date"}
    assert [r[1:] for r in _rows(spark, f"{schema}.{name}", "day, count(*), count(w), sum(n)", "group by day")] == [
        (200, 0, sum(range(200))),
        (200, 0, sum(range(200, 400))),
        (200, 200, sum(range(200))),
    ]
    # The old partition's files were not rewritten.
    files_after = set(
        spark.sql(f"select input_file_name() from {schema}.{name} where day = date'2024-01-01'").collect()
    )
    assert files_after == files_before
    out = dbt_project.test_model(name, *TESTS.split(", "))
    assert out.success, failure_text(out)


@pytest.mark.parametrize(
    "osc, columns, expected",
    [
        ("sync_all_columns", "cast(k as bigint) as k, n, day", "column 'k' changed type from int to bigint"),
        ("append_new_columns", "cast(k as bigint) as k, n, day", "it is a bucket, sort or partition column"),
        ("sync_all_columns", "k, cast(n as string) as n, day", "cannot be read back as"),
        ("ignore", "k, day", "no longer returns the table's columns n"),
    ],
)
def test_a_change_that_needs_a_rebuild_fails_before_anything_is_written(spark, dbt_project, osc, columns, expected):
    schema, name = dbt_project.schema, "osc_refused"
    config = OURS.format(strategy="insert_overwrite", hash="spark", fmt="parquet", osc=osc)
    dbt_project.write_file(f"models/{name}.sql", _model(config, "k, n, day", 0))
    dbt_project.run(name, extra=("--full-refresh",))
    before = _rows(spark, f"{schema}.{name}", "*")
    dbt_project.write_file(f"models/{name}.sql", _model(config, columns, 0))
    message = node_messages(dbt_project.run(name, expect_ok=False))[name]
    assert expected in message and "on_schema_change" in message, message
    assert _rows(spark, f"{schema}.{name}", "*") == before


@pytest.mark.parametrize("step", ["after_schema_change", "redeclare_before_swap", "redeclare_mid_swap"])
def test_a_schema_change_interrupted_at_each_step_loses_nothing(spark, dbt_project, step):
    schema, name = dbt_project.schema, f"osc_fail_{step}"
    config = OURS.format(strategy="insert_overwrite", hash="spark", fmt="parquet", osc="sync_all_columns")
    dbt_project.write_file(f"models/{name}.sql", _model(config, "k, n, 'x' as v, day", 0, days=2))
    dbt_project.run(name)
    before = _rows(spark, f"{schema}.{name}", "k, n, day")
    # Day 1 again, with the same rows and a new column w in place of v.
    dbt_project.write_file(f"models/{name}.sql", _model(config, "k, n + 200 as n, n as w, day", 1))
    assert not dbt_project.run(name, expect_ok=False, fail_at=step).success
    # Between the swap's two renames the table is its backup (the next run renames it back).
    left = f"{schema}.{name}__dbt_backup" if step.endswith("mid_swap") else f"{schema}.{name}"
    assert _rows(spark, left, "k, n, day") == before
    # The rerun completes the change.
    dbt_project.run(name)
    assert set(_columns(spark, f"{schema}.{name}")) == {"k", "n", "w", "day"}
    assert _rows(spark, f"{schema}.{name}", "k, n, day") == before
    out = dbt_project.test_model(name, *TESTS.split(", "))
    assert out.success, failure_text(out)


def test_bad_on_schema_change_values_fail_before_anything_is_written(dbt_project):
    config = OURS.format(strategy="append", hash="spark", fmt="parquet", osc="add_columns")
    dbt_project.write_file("models/osc_bad.sql", _model(config, "k, day", 0))
    message = node_messages(dbt_project.run("osc_bad", expect_ok=False))["osc_bad"]
    assert "config 'on_schema_change': must be 'ignore', 'fail', 'append_new_columns' or 'sync_all_columns'" in message


CONTRACT_YML = """
version: 2
models:
  - name: {name}
    config:
      contract: {{enforced: true}}
    columns:
      - name: k
        data_type: {k_type}
        constraints: [{{type: not_null}}]
      - name: n
        data_type: bigint
        constraints: [{{type: check, expression: "n >= 0"}}]
      - name: day
        data_type: date
"""


@pytest.mark.parametrize("materialized", ["bucketed_table", "bucketed_incremental", "table"])
def test_an_enforced_contract_is_checked_before_anything_is_written(spark, dbt_project, materialized):
    schema, name = dbt_project.schema, f"contract_{materialized}"
    ours = materialized != "table"
    config = (
        f"materialized='{materialized}', clustered_by=['k'], buckets=4, partition_by=['day'], on_schema_change='fail'"
        if ours
        else "materialized='table', file_format='parquet', partition_by=['day']"
    )
    # The query's columns in another order than the contract's: the table takes the contract's.
    good = "select n, k, day from (select cast(id as int) as k, id as n, date'2024-01-01' as day from range(0, {rows}))"
    dbt_project.write_file(f"models/{name}.yml", CONTRACT_YML.format(name=name, k_type="int"))
    dbt_project.write_file(f"models/{name}.sql", "{{ config(" + config + ") }}\n" + good.format(rows=100))
    dbt_project.run(name)
    assert list(_columns(spark, f"{schema}.{name}")) == ["k", "n", "day"]
    before = _rows(spark, f"{schema}.{name}", "*")

    # A type the query does not give: dbt's own error, on ours and stock alike; the table is kept whole.
    dbt_project.write_file(f"models/{name}.yml", CONTRACT_YML.format(name=name, k_type="bigint"))
    dbt_project.write_file(f"models/{name}.sql", "{{ config(" + config + ") }}\n" + good.format(rows=300))
    message = node_messages(dbt_project.run(name, expect_ok=False))[name]
    assert "This model has an enforced contract that failed" in message, message
    if not ours:
        # Stock's table materialization drops the old table first (not Delta): it is gone.
        return
    assert _rows(spark, f"{schema}.{name}", "*") == before
    # A row that breaks a constraint fails the write; nothing is published.
    dbt_project.write_file(f"models/{name}.yml", CONTRACT_YML.format(name=name, k_type="int"))
    for broken, what in (
        ("if(id = 7, null, cast(id as int))", "the not_null constraint on column k"),
        ("cast(id as int)", "the check constraint (n >= 0) on column n"),
    ):
        sql = good.replace("cast(id as int) as k", f"{broken} as k").replace("id as n", "id - 150 as n")
        if "null" in broken:
            sql = sql.replace("id - 150 as n", "id as n")
        dbt_project.write_file(f"models/{name}.sql", "{{ config(" + config + ") }}\n" + sql.format(rows=300))
        message = node_messages(dbt_project.run(name, expect_ok=False))[name]
        assert f"a row breaks {what}" in message, message
        assert _rows(spark, f"{schema}.{name}", "*") == before


def test_dbt_does_not_claim_the_packages_constraints_are_ignored(dbt_project):
    """dbt's parser warns that constraints "will be ignored" on any materialization but its own table and
    incremental; the package's enforce not_null and check (above), and its dbt plugin says so to the parser."""
    for materialized in ("bucketed_table", "bucketed_incremental"):
        name = f"claim_{materialized}"
        dbt_project.write_file(f"models/{name}.yml", CONTRACT_YML.format(name=name, k_type="int"))
        dbt_project.write_file(
            f"models/{name}.sql",
            f"{{{{ config(materialized='{materialized}', clustered_by=['k'], buckets=4, on_schema_change='fail') }}}}\n"
            "select cast(id as int) as k, id as n, date'2024-01-01' as day from range(0, 10)",
        )
    log: list[str] = []
    assert dbt_project.dbt("parse", "--no-partial-parse", log=log).success
    claims = [m for m in log if "Constraint types are not supported" in m]
    assert not claims, claims
    # dbt's own check still runs: its warning for a materialization that does not enforce constraints.
    dbt_project.write_file(
        "models/claim_view.sql", "{{ config(materialized='view') }}\nselect 1 as k, 2 as n, date'2024-01-01' as day"
    )
    dbt_project.write_file("models/claim_view.yml", CONTRACT_YML.format(name="claim_view", k_type="int"))
    log.clear()
    dbt_project.dbt("parse", "--no-partial-parse", log=log)
    assert [m for m in log if "not supported for view materializations" in m], log[-5:]
    for name in ("claim_bucketed_table", "claim_bucketed_incremental", "claim_view"):
        dbt_project.remove_model(name)
        (dbt_project.root / "models" / f"{name}.yml").unlink()


def test_a_contract_on_an_incremental_model_needs_append_or_fail(dbt_project):
    name = "contract_osc"
    dbt_project.write_file(f"models/{name}.yml", CONTRACT_YML.format(name=name, k_type="int"))
    dbt_project.write_file(
        f"models/{name}.sql",
        "{{ config(materialized='bucketed_incremental', clustered_by=['k'], buckets=4) }}\n"
        "select cast(id as int) as k, id as n, date'2024-01-01' as day from range(0, 10)",
    )
    message = node_messages(dbt_project.run(name, expect_ok=False))[name]
    assert "must set on_schema_change to 'append_new_columns' or 'fail'" in message, message


def test_build_empty_passes_with_the_package_tests_attached(spark, dbt_project):
    name = "empty_build"
    config = OURS.format(strategy="insert_overwrite", hash="hive", fmt="parquet", osc="ignore")
    # Under --empty dbt reads every ref as a subquery with no rows: the model's, and the tests' own.
    dbt_project.write_file("models/empty_src.sql", _model("materialized='table'", "k, n, day", 0))
    dbt_project.write_file(f"models/{name}.sql", "{{ config(" + config + ") }}\nselect * from {{ ref('empty_src') }}")
    dbt_project.write_file(f"models/{name}.yml", f"version: 2\nmodels:\n  - name: {name}\n    data_tests: [{TESTS}]\n")
    result = dbt_project.dbt("build", "--empty", "--select", f"+{name}")
    assert result.success, failure_text(result)
    assert sorted(str(r.status) for r in result.result.results) == ["pass", "pass", "success", "success"]
    assert spark.table(f"{dbt_project.schema}.{name}").count() == 0
    # Then a real build, and the tests read the real table.
    result = dbt_project.dbt("build", "--select", f"+{name}")
    assert result.success, failure_text(result)
    assert spark.table(f"{dbt_project.schema}.{name}").count() == 200


UNIT_MODEL = """
{{{{ config({config}) }}}}
select k, day from {{{{ ref('ut_src') }}}}
{{% if {check}() %}}
where day > (select max(day) from {{{{ this }}}})
{{% endif %}}
"""
UNIT_TESTS = """
unit_tests:
{tests}
"""
UNIT_TEST = """
  - name: {model}_{case}
    model: {model}
    {overrides}
    given:
      - input: ref('ut_src')
        rows:
          - {{k: 1, day: 2024-01-01}}
          - {{k: 2, day: 2024-01-02}}
          - {{k: 3, day: 2024-01-03}}
      - input: this
        rows:
          - {{k: 1, day: 2024-01-01}}
    expect:
      rows: {expect}
"""


def test_unit_tests_override_is_incremental_as_on_stock(spark, dbt_project):
    """dbt unit tests with `overrides: macros: {is_incremental: ..}` (and the full-refresh case, with none)
    on both materializations and stock's, whether the model calls dbt's is_incremental() or the package's."""
    dbt_project.write_file("models/ut_src.sql", "select cast(1 as int) as k, date'2024-01-01' as day")
    models = {
        "ut_ours_plain": ("materialized='bucketed_incremental', clustered_by=['k'], buckets=2", "is_incremental"),
        "ut_ours_pkg": (
            "materialized='bucketed_incremental', clustered_by=['k'], buckets=2",
            "spark_bucketing.is_incremental",
        ),
        "ut_table": ("materialized='bucketed_table', clustered_by=['k'], buckets=2", "spark_bucketing.is_incremental"),
        "ut_stock": ("materialized='incremental', file_format='parquet'", "is_incremental"),
    }
    tests = []
    for model, (config, check) in models.items():
        dbt_project.write_file(f"models/{model}.sql", UNIT_MODEL.format(config=config, check=check))
        every = "[{k: 1, day: 2024-01-01}, {k: 2, day: 2024-01-02}, {k: 3, day: 2024-01-03}]"
        newer = "[{k: 2, day: 2024-01-02}, {k: 3, day: 2024-01-03}]"
        cases = [("full", "overrides: {macros: {is_incremental: false}}", every)]
        if check.startswith("spark_bucketing"):
            # dbt demands the override where the model calls its is_incremental(); the package's answers false.
            cases.append(("none", "", every))
        if model != "ut_table":
            cases.append(("incremental", "overrides: {macros: {is_incremental: true}}", newer))
        for case, overrides, expect in cases:
            tests.append(UNIT_TEST.format(model=model, case=case, overrides=overrides, expect=expect))
    dbt_project.write_file("models/ut.yml", "version: 2\n" + UNIT_TESTS.format(tests="".join(tests)))
    # A unit test's `this` input takes its columns from the model's table, as on stock's.
    dbt_project.run("ut_src", *models)
    result = dbt_project.dbt("test", "--select", "test_type:unit")
    assert result.success, failure_text(result)
    assert len(result.result.results) == len(tests)
