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
old, and the next listing sees the schema as it is. It lists at most
ATTEMPTS times, and starts no attempt DEADLINE_SECONDS after the first
began. Each attempt sends the statement once: the outcome of the last one
(rows, or any other error, or the vanished table once the attempts are
spent) is handed to dbt-spark's own code as the answer to its statement, so
dbt-spark reads rows and answers errors as it always does (an empty list for
a schema that does not exist), without sending the statement again. A
project that has the package without this Python package installed keeps
dbt-spark's behaviour: the run fails safely and says rerunning is safe."""

from __future__ import annotations

import re
import time
from typing import Any

ATTEMPTS = 5
DEADLINE_SECONDS = 30.0
# `catalog`.`schema`.`table` or `schema`.`table`.
_NOT_FOUND = re.compile(
    r"\[TABLE_OR_VIEW_NOT_FOUND\] The table or view (?:`[^`]*`\.)?`(?P<schema>[^`]*)`\.`[^`]*` cannot"
)


def vanished_table(message: str, schema: str) -> bool:
    """Whether `message` is Spark's error for a table of `schema` that was gone when the listing described it."""
    found = _NOT_FOUND.search(message)
    return found is not None and found["schema"].lower() == schema.lower()


class _Answered:
    """The adapter, whose listing macro is answered by what was already sent: dbt-spark's
    list_relations_without_caching runs on it as on the adapter, every other call the adapter's."""

    def __init__(self, adapter: Any, macro_name: str, outcome: Any) -> None:
        self._adapter, self._macro_name, self._outcome = adapter, macro_name, outcome

    def execute_macro(self, macro_name: str, *args: Any, **kwargs: Any) -> Any:
        if macro_name != self._macro_name:
            return self._adapter.execute_macro(macro_name, *args, **kwargs)
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        return self._outcome

    def __getattr__(self, name: str) -> Any:
        return getattr(self._adapter, name)


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
        kwargs = {"schema_relation": schema_relation}
        deadline = time.monotonic() + DEADLINE_SECONDS
        attempt = 1
        while True:
            try:
                outcome: Any = self.execute_macro(LIST_RELATIONS_MACRO_NAME, kwargs=kwargs)
            except DbtRuntimeError as e:
                outcome = e
                retry = vanished_table(str(getattr(e, "msg", e)), str(schema_relation.schema))
                if retry and attempt < ATTEMPTS and time.monotonic() < deadline:
                    attempt += 1
                    continue
            return stock(_Answered(self, LIST_RELATIONS_MACRO_NAME, outcome), schema_relation)

    list_relations_without_caching.spark_bucketing = True  # type: ignore[attr-defined]
    list_relations_without_caching.__wrapped__ = stock  # type: ignore[attr-defined]
    SparkAdapter.list_relations_without_caching = list_relations_without_caching  # type: ignore[method-assign]


def uninstall() -> None:
    """dbt-spark's own listing again (a process that runs dbt without the package's plugin)."""
    try:
        from dbt.adapters.spark.impl import SparkAdapter
    except ImportError:
        return
    method = SparkAdapter.list_relations_without_caching
    SparkAdapter.list_relations_without_caching = getattr(method, "__wrapped__", method)  # type: ignore[method-assign]
