"""dbt-spark lists a schema at the start of a run with `SHOW TABLE EXTENDED
IN <schema> LIKE '*'`: Spark lists the names, then describes each. A table
another run drops between the two (a run's lock view, its side tables) fails
the whole statement with TABLE_OR_VIEW_NOT_FOUND, and dbt-spark answers that
error as if the schema did not exist: an empty list. The run then takes
every table of the schema for missing: `is_incremental()` is false and the
package's run builds the model from scratch, then refuses to publish over the
table it finds ("another run created ... Rerunning is safe"). Runs of one
schema at once (a parallel backfill) failed that way once in a few tries.

The plugin (dbt_spark_bucketing) lists again where the error names a table
of the schema, not the schema: the names the first attempt saw are a moment
old, and the next listing sees the schema as it is (up to ATTEMPTS). Any
other error, and the last attempt, take dbt-spark's own path; a listing that
succeeds is read as dbt-spark reads it. A project that has the package
without this Python package installed keeps dbt-spark's behaviour: the run
fails safely and says rerunning is safe."""

from __future__ import annotations

import re
from typing import Any

ATTEMPTS = 5
# `catalog`.`schema`.`table` or `schema`.`table`.
_NOT_FOUND = re.compile(
    r"\[TABLE_OR_VIEW_NOT_FOUND\] The table or view (?:`[^`]*`\.)?`(?P<schema>[^`]*)`\.`[^`]*` cannot"
)


def vanished_table(message: str, schema: str) -> bool:
    """Whether `message` is Spark's error for a table of `schema` that was gone when the listing described it."""
    found = _NOT_FOUND.search(message)
    return found is not None and found["schema"].lower() == schema.lower()


def install() -> None:
    """Lists a schema again where a table vanished while dbt-spark listed it; once per process."""
    try:
        from dbt.adapters.spark.impl import LIST_RELATIONS_MACRO_NAME, SparkAdapter
        from dbt_common.exceptions import DbtRuntimeError
    except ImportError:  # dbt without the spark adapter: nothing to mend
        return
    stock = SparkAdapter.list_relations_without_caching
    if getattr(stock, "spark_bucketing", False):
        return

    def list_relations_without_caching(self: Any, schema_relation: Any) -> list:
        for _ in range(ATTEMPTS - 1):
            try:
                rows = self.execute_macro(LIST_RELATIONS_MACRO_NAME, kwargs={"schema_relation": schema_relation})
            except DbtRuntimeError as e:
                if vanished_table(str(getattr(e, "msg", e)), str(schema_relation.schema)):
                    continue
                break
            # What dbt-spark makes of a listing that succeeds.
            return self._build_spark_relation_list(row_list=rows, relation_info_func=self._get_relation_information)
        # Another error, or the last attempt: dbt-spark's own answers to its errors.
        return stock(self, schema_relation)

    list_relations_without_caching.spark_bucketing = True  # type: ignore[attr-defined]
    SparkAdapter.list_relations_without_caching = list_relations_without_caching  # type: ignore[method-assign]
