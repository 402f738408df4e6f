"""The physical plan Spark runs for a query, its Exchange (shuffle) and Sort
nodes: the one way the demo, the tests and the benchmarks read a plan."""

from __future__ import annotations

import re

_EXCHANGE_NODE = re.compile(r"^[\s:+-]*(\*\(\d+\) )?(Reused)?Exchange\b")
_SORT_NODE = re.compile(r"^[\s:+-]*(\*\(\d+\) )?Sort \[")


def executed_plan(spark, sql: str, **conf: str) -> str:
    """The text of the physical plan of `sql`, planned with the session
    settings `conf` (set for the call, unset after). With adaptive execution
    on, the plan it starts from, before any stage runs."""
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        return spark.sql(sql)._jdf.queryExecution().executedPlan().toString()
    finally:
        for key in conf:
            spark.conf.unset(key)


def exchanges(plan: str, partitioning: str | None = None) -> int:
    """Exchange nodes in a plan's text, a reused one included; only those
    whose line names `partitioning` (e.g. 'hashpartitioning') when given."""
    return sum(
        bool(_EXCHANGE_NODE.match(line)) and (partitioning is None or partitioning in line)
        for line in plan.splitlines()
    )


def sorts(plan: str) -> int:
    """Sort nodes in a plan's text (not a SortMergeJoin's or a SortAggregate's name)."""
    return sum(bool(_SORT_NODE.match(line)) for line in plan.splitlines())
