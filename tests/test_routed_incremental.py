"""A routed `materialized='incremental'` model with `buckets` keeps dbt-spark's
semantics (dbt-tests-adapter's expectations, beside stock where stock can run
the same model): with no `incremental_strategy` it appends, as stock's
default does, rather than replacing rows; `predicates` is read as dbt reads
`incremental_predicates`; a merge without a unique_key inserts every row, a
key listed twice counts once, and a key the query lacks fails the first run
that merges, not the first build (dbt-tests-adapter's
BaseIncrementalUniqueKey)."""

from __future__ import annotations

import pytest

from harness.dbt_project import IS_INCREMENTAL, ROUTING, node_messages

pytestmark = pytest.mark.fast  # the fast tier: `bash scripts/test --fast` (docs/development.md)

BUCKETS = "clustered_by=['id'], buckets=4, bucket_hash='spark'"
# dbt-tests-adapter's BaseIncremental: the first run takes ids 1-10, the second the ids above the table's.
APPENDED = """
{{{{ config(materialized='incremental', {config}) }}}}
select cast(id as int) as id, concat('row ', id) as name from range(1, {{{{ var('upto', 11) }}}})
{{% if is_incremental() %}} where id > (select max(id) from {{{{ this }}}}) {{% endif %}}
"""
# dbt-tests-adapter's BaseIncrementalPredicates, as a merge: the new row of id 2 matches nothing (id != 2).
PREDICATES = """
{{{{ config(materialized='incremental', incremental_strategy='merge', unique_key='id', {config}) }}}}
{{% if not is_incremental() %}}
select 1 as id, 'hello' as msg, 'blue' as color union all select 2, 'goodbye', 'red'
{{% else %}}
select 1 as id, 'hey' as msg, 'blue' as color union all select 2, 'yo', 'green' union all select 3, 'anyway', 'purple'
{{% endif %}}
"""


@pytest.fixture(scope="module")
def project(dbt_project):
    dbt_project.write_file("macros/incremental.sql", ROUTING)
    return dbt_project


def _rows(spark, table):
    return sorted(tuple(r) for r in spark.sql(f"select * from {table}").collect())


def test_without_a_strategy_a_routed_model_appends_as_stock_does(spark, project):
    schema = project.schema
    project.write_file("models/inc_ours.sql", APPENDED.format(config=BUCKETS))
    project.write_file("models/inc_stock.sql", APPENDED.format(config="file_format='parquet'"))
    project.run("inc_ours", "inc_stock", extra=("--vars", "{upto: 11}"))
    project.run("inc_ours", "inc_stock", extra=("--vars", "{upto: 21}"))
    stock = _rows(spark, f"{schema}.inc_stock")
    assert stock == [(i, f"row {i}") for i in range(1, 21)]
    assert _rows(spark, f"{schema}.inc_ours") == stock
    # bucketed_incremental's own default is unchanged: it replaces the (only) partition, the whole table.
    project.write_file(
        "models/inc_bucketed.sql", APPENDED.format(config=BUCKETS).replace("'incremental'", "'bucketed_incremental'")
    )
    project.write_file("macros/is_incremental.sql", IS_INCREMENTAL)
    project.run("inc_bucketed", extra=("--vars", "{upto: 11}"))
    project.run("inc_bucketed", extra=("--vars", "{upto: 21}"))
    assert _rows(spark, f"{schema}.inc_bucketed") == [(i, f"row {i}") for i in range(11, 21)]


@pytest.mark.parametrize("name", ["predicates", "incremental_predicates"])
def test_predicates_limit_a_merge_under_either_of_dbts_names(spark, project, name):
    model = f"pred_{name}"
    project.write_file(
        f"models/{model}.sql", PREDICATES.format(config=f"{BUCKETS}, {name}=['dbt_internal_dest.id != 2']")
    )
    project.run(model, extra=("--full-refresh",))
    project.run(model)
    assert _rows(spark, f"{project.schema}.{model}") == [
        (1, "hey", "blue"),
        (2, "goodbye", "red"),
        (2, "yo", "green"),
        (3, "anyway", "purple"),
    ]


# dbt-tests-adapter's BaseIncrementalUniqueKey, as merges: ids 1-4, then 3-6 with new names.
KEYED = """
{{{{ config(materialized='incremental', incremental_strategy='merge', {config}) }}}}
select cast(id as int) as id, concat('v{{{{ var('version', 1) }}}}-', id) as name
from range({{{{ var('start', 1) }}}}, {{{{ var('start', 1) }}}} + 4)
"""


@pytest.mark.parametrize("key", ["[]", "None", "''"], ids=["empty list", "none", "empty string"])
def test_a_merge_without_a_unique_key_inserts_every_row(spark, project, key):
    model = "nokey_" + {"[]": "list", "None": "none", "''": "str"}[key]
    project.write_file(f"models/{model}.sql", KEYED.format(config=f"{BUCKETS}, unique_key={key}"))
    project.run(model, extra=("--full-refresh",))
    project.run(model, extra=("--vars", "{start: 3, version: 2}"))
    assert _rows(spark, f"{project.schema}.{model}") == sorted(
        [(i, f"v1-{i}") for i in range(1, 5)] + [(i, f"v2-{i}") for i in range(3, 7)]
    )


def test_a_key_listed_twice_counts_once_and_an_unknown_key_fails_the_first_merge(spark, project):
    project.write_file("models/twice.sql", KEYED.format(config=f"{BUCKETS}, unique_key=['id', 'ID']"))
    project.run("twice", extra=("--full-refresh",))
    project.run("twice", extra=("--vars", "{start: 3, version: 2}"))
    assert _rows(spark, f"{project.schema}.twice") == [(1, "v1-1"), (2, "v1-2")] + [(i, f"v2-{i}") for i in range(3, 7)]

    project.write_file("models/unknown.sql", KEYED.format(config=f"{BUCKETS}, unique_key=['thisisnotacolumn']"))
    project.run("unknown", extra=("--full-refresh",))
    result = project.run("unknown", expect_ok=False, extra=("--vars", "{start: 3, version: 2}"))
    assert "thisisnotacolumn" in node_messages(result)["unknown"]
    assert _rows(spark, f"{project.schema}.unknown") == [(i, f"v1-{i}") for i in range(1, 5)]
