"""dbt's own is_incremental() in a bucketed_incremental model: a run whose
model got the wrong answer (dbt's macro answers only for
materialized='incremental') stops before it writes anything and says the one
step that fixes it; with that step (a project macro returning
spark_bucketing.is_incremental()) the model written the dbt way holds each
row once after two appends, as stock dbt-spark's incremental does, and the
stock model keeps dbt's answer."""

from __future__ import annotations

import pytest

from harness.dbt_project import IS_INCREMENTAL, node_messages

pytestmark = pytest.mark.fast  # the fast tier: `bash scripts/test --fast` (docs/development.md)

MODEL = """
{{{{ config({config}) }}}}
select id as k, date_add(date'2024-01-01', cast(id div 1000 as int)) as day
from range(0, {{{{ var('upto', 2000) }}}})
{{% if is_incremental() %}}
where date_add(date'2024-01-01', cast(id div 1000 as int)) > (select max(day) from {{{{ this }}}})
{{% endif %}}
"""
OURS = (
    "materialized='bucketed_incremental', incremental_strategy='append', clustered_by=['k'], buckets=4, "
    "partition_by=['day'], bucket_hash='spark'"
)
STOCK = "materialized='incremental', incremental_strategy='append', file_format='parquet', partition_by=['day']"


def _counts(spark, table):
    row = spark.sql(f"select count(*) as n, count(distinct k) as keys from {table}").first()
    return row.n, row.keys


def test_dbt_is_incremental_gets_the_runs_answer_or_the_run_stops(spark, dbt_project):
    schema = dbt_project.schema
    for name, config in (("plain_ours", OURS), ("plain_stock", STOCK)):
        dbt_project.write_file(f"models/{name}.sql", MODEL.format(config=config))
    dbt_project.run("plain_ours", "plain_stock", extra=("--vars", "{upto: 2000}"))
    assert _counts(spark, f"{schema}.plain_ours") == (2000, 2000)

    # Without the project's macro, dbt's is_incremental() says false on the second run: it stops, nothing written.
    result = dbt_project.run("plain_ours", expect_ok=False, extra=("--vars", "{upto: 4000}"))
    message = node_messages(result)["plain_ours"]
    assert "calls dbt's is_incremental(), which answered false where this run is incremental" in message
    assert "Nothing was written" in message and "return(spark_bucketing.is_incremental())" in message
    assert _counts(spark, f"{schema}.plain_ours") == (2000, 2000)

    # The one step: the project's own is_incremental() returns the package's, which gives dbt's answer elsewhere.
    dbt_project.write_file("macros/is_incremental.sql", IS_INCREMENTAL)
    dbt_project.run("plain_ours", "plain_stock", extra=("--vars", "{upto: 4000}"))
    assert _counts(spark, f"{schema}.plain_ours") == (4000, 4000)
    assert _counts(spark, f"{schema}.plain_stock") == (4000, 4000)
    # A full refresh: is_incremental() is false and the run rebuilds from every row.
    dbt_project.run("plain_ours", extra=("--vars", "{upto: 3000}", "--full-refresh"))
    assert _counts(spark, f"{schema}.plain_ours") == (3000, 3000)
