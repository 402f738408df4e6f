"""Ground truth from Spark: the physical plan of a query, and whether each
join side and each aggregation in it has a shuffle (an Exchange) under it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from spark_bucketing.checker.model import Finding

JOINS = ("SortMergeJoinExec", "ShuffledHashJoinExec", "BroadcastHashJoinExec", "BroadcastNestedLoopJoinExec")
AGGREGATES = ("HashAggregateExec", "SortAggregateExec", "ObjectHashAggregateExec")
NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)#\d+")


@dataclass
class PlanNode:
    kind: str  # join | aggregate | window
    keys: list[list[str]]  # per side (joins: [left, right]; others: [keys])
    shuffles: list[bool]
    used: bool = False


def _children(node) -> list:
    seq = node.children()
    return [seq.apply(i) for i in range(seq.size())]


def _names(exprs) -> list[str]:
    out = []
    for i in range(exprs.size()):
        found = NAME.findall(exprs.apply(i).toString())
        out.append(",".join(sorted({n.lower() for n in found})))
    return out


# Operators that pass rows through without a distribution requirement of their own.
TRANSPARENT = {
    "WholeStageCodegenExec",
    "InputAdapter",
    "ProjectExec",
    "FilterExec",
    "SortExec",
    "ColumnarToRowExec",
    "RowToColumnarExec",
    "CollectLimitExec",
    "LocalLimitExec",
}
EXCHANGES = {"ShuffleExchangeExec", "ReusedExchangeExec"}


def _shuffled_below(node) -> bool:
    """An Exchange between the operator and its input: looking down through
    pass-through operators only, so that an aggregation's or another join's
    own shuffle is not counted against this one."""
    while True:
        name = node.getClass().getSimpleName()
        if name in EXCHANGES:
            return True
        kids = _children(node)
        if name not in TRANSPARENT or len(kids) != 1:
            return False
        node = kids[0]


def plan_nodes(spark, sql: str) -> list[PlanNode]:
    """Joins, aggregations and windows of the query's physical plan, AQE off
    (it leaves bucketed joins alone) so that the plan is the static one."""
    previous = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        root = spark.sql(sql)._jdf.queryExecution().executedPlan()
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", previous)
    out: list[PlanNode] = []

    def walk(node):
        # Children first: the plan's lower operators are the query's earlier ones.
        name = node.getClass().getSimpleName()
        kids = _children(node)
        if name in AGGREGATES:
            # A final aggregate: the partial one below it groups by the same keys.
            below = kids[0]
            while below.getClass().getSimpleName() not in AGGREGATES and len(_children(below)) == 1:
                below = _children(below)[0]
            for k in _children(below) if below.getClass().getSimpleName() in AGGREGATES else kids:
                walk(k)
            keys = _names(node.groupingExpressions())
            if keys:
                out.append(PlanNode("aggregate", [keys], [_shuffled_below(kids[0])]))
            return
        for k in kids:
            walk(k)
        if name in JOINS and len(kids) == 2:
            out.append(
                PlanNode(
                    "join",
                    [_names(node.leftKeys()), _names(node.rightKeys())],
                    [_shuffled_below(kids[0]), _shuffled_below(kids[1])],
                )
            )
        elif name == "WindowExec":
            out.append(PlanNode("window", [_names(node.partitionSpec())], [_shuffled_below(kids[0])]))

    walk(root)
    return out


def verify(spark, sql: str, findings: list[Finding]) -> list[dict]:
    """Per finding: the plan's answer and whether the static verdict matched."""
    nodes = plan_nodes(spark, sql)
    results = []
    for f in findings:
        if f.kind == "query":
            results.append({"matched": None, "plan": None})
            continue
        kind = "aggregate" if f.kind in ("aggregate", "distinct") else f.kind
        want = [sorted(s.local_keys) for s in f.sides]
        node = next((n for n in nodes if not n.used and n.kind == kind and [sorted(k) for k in n.keys] == want), None)
        if node is None and kind == "join":
            node = next(
                (
                    n
                    for n in nodes
                    if not n.used and n.kind == kind and sorted(sum(n.keys, [])) == sorted(sum(want, []))
                ),
                None,
            )
        if node is None:
            results.append({"matched": False, "plan": "no operator with these keys in the plan"})
            continue
        node.used = True
        static = [s.shuffle for s in f.sides]
        results.append({"matched": static == node.shuffles, "plan": node.shuffles})
    return results
