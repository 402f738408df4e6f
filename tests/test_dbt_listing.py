"""dbt-spark's listing of a schema while other runs create and drop entries in
it (spark_bucketing.dbt_listing): Spark lists the names, then describes each,
and a table dropped between the two fails the statement, which dbt-spark
answers as an empty schema; the package's dbt plugin lists again. Which
errors it lists again after, on Spark's own texts. (The race itself showed in
tests/test_concurrent_runs.py's parallel backfill through a metastore
service; 300 listings of this worker's embedded catalog while a thread made
and dropped 485 views never hit it, so it is not provoked here.)"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from spark_bucketing import dbt_listing
from spark_bucketing.dbt_listing import vanished_table

pytestmark = pytest.mark.fast  # the fast tier: `bash scripts/test --fast` (docs/development.md)


def test_the_errors_it_lists_again_after_are_a_vanished_table_of_the_schema(spark, dbt_project):
    def error(sql: str) -> str:
        try:
            spark.sql(sql).collect()
        except Exception as e:  # noqa: BLE001 (the message is what is asserted)
            return str(e)
        raise AssertionError(f"{sql} did not fail")

    schema = dbt_project.schema
    gone = error(f"describe table extended {schema}.no_such_table")
    assert vanished_table(gone, schema) and vanished_table(gone, schema.upper())
    assert not vanished_table(gone, "another_schema")
    # Named with its catalog, as the listing's error names it.
    assert vanished_table(error(f"describe table extended spark_catalog.{schema}.no_such_table"), schema)
    # A schema that does not exist is dbt-spark's to answer (an empty list), at once.
    assert not vanished_table(error("show table extended in no_such_schema like '*'"), "no_such_schema")


def test_a_schema_that_does_not_exist_is_listed_once(spark, dbt_project):
    """`dbt compile` of a model whose schema is not created yet: dbt-spark's listing fails with
    SCHEMA_NOT_FOUND, which it answers with an empty list; the plugin sends the statement once (it sent it
    again when the error was not a vanished table)."""
    dbt_project.write_model("not_yet", "select 1 as id", {"materialized": "table", "schema": "not_yet_made"})
    try:
        statements: list[str] = []
        result = dbt_project.dbt("compile", "--select", "not_yet", statements=statements)
        assert result.success, result.exception
        listings = [s for s in statements if "show table extended in" in s.lower()]
        assert listings, statements
        assert len(listings) == len(set(listings)), listings
        assert any("not_yet_made" in s for s in listings), listings
    finally:
        dbt_project.remove_model("not_yet")


class _Adapter:
    """What dbt-spark's listing calls on its adapter, with the listing macro answered by `answers` in turn
    (each an error text or rows); every call counted."""

    def __init__(self, answers: list, delay: float = 0.0) -> None:
        from dbt.adapters.spark.impl import SparkAdapter

        self.answers, self.delay, self.sent = answers, delay, 0
        self._build_spark_relation_list = lambda row_list, relation_info_func: list(row_list)
        self._get_relation_information = SparkAdapter._get_relation_information

    def execute_macro(self, name: str, kwargs: dict) -> list:
        from dbt_common.exceptions import DbtRuntimeError

        self.sent += 1
        time.sleep(self.delay)
        answer = self.answers[min(self.sent, len(self.answers)) - 1]
        if isinstance(answer, str):
            raise DbtRuntimeError(answer)
        return answer


def test_retries_of_a_vanished_table_are_bounded_in_count_and_time(spark, dbt_project, monkeypatch):
    from dbt.adapters.spark.impl import SparkAdapter
    from dbt_common.exceptions import DbtRuntimeError

    dbt_listing.install()  # as dbt's start of a command does; once per process
    listing = SparkAdapter.list_relations_without_caching
    schema = dbt_project.schema
    relation = SimpleNamespace(schema=schema)
    gone = _spark_error(spark, f"describe table extended {schema}.no_such_table")
    missing_schema = _spark_error(spark, "show table extended in no_such_schema like '*'")

    # A vanished table, then the listing: two statements, the second's rows.
    adapter = _Adapter([gone, ["row"]])
    assert listing(adapter, relation) == ["row"] and adapter.sent == 2
    # Always vanished: ATTEMPTS statements, then dbt-spark's own answer to that error (an empty list).
    adapter = _Adapter([gone])
    assert listing(adapter, relation) == [] and adapter.sent == dbt_listing.ATTEMPTS
    # Slow listings: no attempt starts past the deadline.
    monkeypatch.setattr(dbt_listing, "DEADLINE_SECONDS", 0.05)
    adapter = _Adapter([gone], delay=0.04)
    assert listing(adapter, relation) == [] and adapter.sent == 2
    # Any other error is sent once: a schema that does not exist (dbt-spark's empty list) ...
    adapter = _Adapter([missing_schema, ["row"]])
    assert listing(adapter, SimpleNamespace(schema="no_such_schema")) == [] and adapter.sent == 1
    # ... and an error dbt-spark raises, raised as it is.
    adapter = _Adapter(["[PARSE_SYNTAX_ERROR] somewhere", ["row"]])
    with pytest.raises(DbtRuntimeError, match="PARSE_SYNTAX_ERROR"):
        listing(adapter, relation)
    assert adapter.sent == 1


def _spark_error(spark, sql: str) -> str:
    try:
        spark.sql(sql).collect()
    except Exception as e:  # noqa: BLE001 (the message is what is used)
        return str(e)
    raise AssertionError(f"{sql} did not fail")
