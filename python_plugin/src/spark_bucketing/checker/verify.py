"""Ground truth from Spark: the physical plan of a query (`EXPLAIN` over any
connection), and per finding what it shows: an Exchange under each join side
and aggregation, a Sort under each sort-merge join side, the buckets each
file scan selects."""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass

from spark_bucketing.checker.engines import SPARK_VERSION
from spark_bucketing.checker.model import Finding
from spark_bucketing.checker.plan_text import (
    Node,
    bracket_groups,
    key_names,
    parse_plan,
    scan_table,
    selected_buckets,
    split_top,
)
from spark_bucketing.contracts import SORT_ORDERING_SETTING
from spark_bucketing.extension import SWITCH

JOINS = ("SortMergeJoin", "ShuffledHashJoin", "BroadcastHashJoin", "BroadcastNestedLoopJoin")
AGGREGATES = ("HashAggregate", "SortAggregate", "ObjectHashAggregate")
# Operators that pass rows through without a distribution requirement of their own.
TRANSPARENT = {"Project", "Filter", "Sort", "ColumnarToRow", "RowToColumnar", "CollectLimit", "LocalLimit"}
EXCHANGES = {"Exchange", "ReusedExchange"}
# Dynamic partition pruning's subqueries under a scan (SubqueryAdaptiveBroadcast ... the other side's plan).
PRUNING_SUBQUERIES = {"SubqueryAdaptiveBroadcast", "SubqueryBroadcast", "ReusedSubquery"}
SORT_ORDERING = SORT_ORDERING_SETTING


class PlanError(Exception):
    """Spark could not plan the query (EXPLAIN gave its error)."""


@dataclass
class PlanNode:
    kind: str  # join | aggregate | window
    keys: list[list[str]]  # per side (joins: [left, right]; others: [keys])
    shuffles: list[bool]
    sorts: list[bool]  # per side: a Sort between the operator and its input
    operator: str
    used: bool = False


def _below(node: Node) -> tuple[bool, bool]:
    """(an Exchange, a Sort) between an operator and its input: looking down
    through pass-through operators only, so that an aggregation's or another
    join's own shuffle is not counted against this one."""
    sort = False
    while True:
        if node.name in EXCHANGES:
            return True, sort
        sort = sort or node.name == "Sort"
        if node.name not in TRANSPARENT or len(node.children) != 1:
            return False, sort
        node = node.children[0]


def plan_nodes(root: Node) -> list[PlanNode]:
    """Joins, aggregations and windows of a plan, lowest first."""
    out: list[PlanNode] = []

    def walk(node: Node):
        kids = node.children
        if node.name in PRUNING_SUBQUERIES:
            return  # a copy of another side's plan, for its keys: not an operator of the query's own
        if node.name in AGGREGATES and kids:
            # A final aggregate: the partial one below it groups by the same keys.
            below = kids[0]
            while below.name not in AGGREGATES and len(below.children) == 1:
                below = below.children[0]
            partial = below.name in AGGREGATES and _partial_of(below.text, node.text)
            for k in below.children if partial else kids:
                walk(k)
            groups = bracket_groups(node.text)
            keys = key_names(groups[0]) if groups and node.text.startswith(("(keys=", "(key=")) else []
            if keys:
                shuffle, sort = _below(kids[0])
                out.append(PlanNode("aggregate", [keys], [shuffle], [sort], node.name))
            return
        for k in kids:
            walk(k)
        if node.name in JOINS and len(kids) == 2:
            groups = bracket_groups(node.text) if node.name != "BroadcastNestedLoopJoin" else []
            keys = [key_names(groups[0]), key_names(groups[1])] if len(groups) >= 2 else [[], []]
            sides = [_below(kids[0]), _below(kids[1])]
            out.append(PlanNode("join", keys, [s[0] for s in sides], [s[1] for s in sides], node.name))
        elif node.name == "Window" and kids:
            groups = bracket_groups(node.text)
            shuffle, sort = _below(kids[0])
            keys = key_names(groups[1]) if len(groups) > 1 else []
            out.append(PlanNode("window", [keys], [shuffle], [sort], "Window"))

    walk(root)
    return out


def _partial_of(below: str, above: str) -> bool:
    """Whether the aggregate `below` is the partial step of `above` (its
    functions partial_ or merge_ of the same ones, or neither has any) rather
    than an aggregation of its own (DISTINCT under a GROUP BY's count)."""
    low, high = _function_names(below), _function_names(above)
    if not low or not high:
        return not low and not high
    return all(f.startswith(("partial_", "merge_")) for f in low)


def _function_names(text: str) -> list[str]:
    at = text.find("functions=[")
    if at < 0:
        return []
    depth, end = 0, at + len("functions=")
    for end in range(at + len("functions="), len(text)):
        depth += {"[": 1, "]": -1}.get(text[end], 0)
        if depth == 0:
            break
    # Each function's own name, not those of its arguments' (partial_sum(length(w)) is a partial step).
    parts = split_top(text[at + len("functions=[") : end])
    return [m.group(0) for part in parts if (m := re.match(r"[A-Za-z_]+", part))]


def scans(root: Node) -> list[tuple[str, tuple[int, int] | None]]:
    """Per file scan in plan order: the table, and (buckets read, buckets)
    when bucketed (a foreign table's from the extension's node above its scan)."""
    found: list[tuple[str, tuple[int, int] | None]] = []

    def visit(node: Node) -> None:
        if node.name == "ForeignBucketedScan":
            found.extend((t, selected_buckets(node)) for c in node.children if (t := scan_table(c)))
            return
        if t := scan_table(node):
            found.append((t, selected_buckets(node)))
        for c in node.children:
            visit(c)

    visit(root)
    return found


def session_values(client, keys) -> dict[str, str]:
    """The connection's session's values of `keys` that are set; SPARK_VERSION, its Spark's version."""
    values = {}
    for key in keys:
        if key == SPARK_VERSION:
            values[key] = str(client.query("select version()")[0][0]).split()[0]
            continue
        rows = client.query(f"SET {key}")
        value = rows[0][1] if rows else None
        if value not in (None, "<undefined>"):
            values[key] = value
    return values


@contextmanager
def session_conf(client, conf: dict[str, str]):
    """Settings on the connection's session for a block, put back after.
    Over Thrift and in dbt's connection they belong to that session only."""
    current = session_values(client, conf)
    # Only the settings the session does not have already: each SET is a round trip (over Thrift, a statement).
    previous = {key: current.get(key) for key, value in conf.items() if current.get(key) != value}
    try:
        for key in previous:
            client.query(f"SET {key}={conf[key]}")
        yield
    finally:
        for key, value in previous.items():
            client.query(f"SET {key}={value}" if value is not None else f"RESET {key}")


def explain(client, sql: str, conf: dict[str, str]) -> Node:
    """The physical plan under `conf`: with adaptive execution on, the plan
    it starts from (Exchanges placed, the extension's coalesced bucket reads
    among them), which later re-planning changes only as the data's sizes decide (a broadcast)."""
    with session_conf(client, conf):
        text = client.query(f"EXPLAIN {sql}")[0][0]
    if "== Physical Plan ==" not in text:
        # EXPLAIN answers a query it cannot plan with a line of text and no cause; analysing it says why.
        raise PlanError(_why_unplanned(client, sql) or " ".join(text.split())[:500])
    return parse_plan(text)


def _why_unplanned(client, sql: str) -> str | None:
    try:
        client.query(f"DESCRIBE QUERY {sql}")
    except Exception as exc:  # noqa: BLE001 - the analyser's error is the answer
        # dbt's errors open with their kind ("Runtime Error"), Spark's cause on the lines after.
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        lines = [line for line in lines if line not in ("Runtime Error", "Database Error")]
        return lines[0][:500] if lines else type(exc).__name__
    return None


def plan_settings(conf: dict[str, str]) -> dict[str, str]:
    """The settings a model runs with that can be put on a running session:
    SQL settings and the extension's switch. The extension itself (a static
    setting) is the server's; the switch says whether it is used."""
    settable = [k for k in conf if (k.startswith("spark.sql.") and k != "spark.sql.extensions") or k == SWITCH]
    return {k: conf[k] for k in settable}


def verify(client, sql: str, findings: list[Finding], conf: dict[str, str] | None = None) -> list[dict]:
    """Per finding: the plan's answer, under the settings the model runs with,
    and whether the static verdict matched."""
    return plan_answers(client, sql, findings, conf).results


@dataclass
class PlanAnswers:
    """Per finding, the plan's answer; and what the plan has that no finding
    stands for: operators (`{"kind", "keys", "shuffles"}`) and scans that read
    some of their buckets (`{"kind": "lookup", "relation", "buckets_read", "buckets"}`)."""

    results: list[dict]
    leftover: list[dict]


def plan_answers(
    client, sql: str, findings: list[Finding], conf: dict[str, str] | None = None, every_scan: bool = False
) -> PlanAnswers:
    """verify()'s answers, and the plan's leftovers (the pruned scans among
    them only with `every_scan`, which plans once more when no finding is a lookup)."""
    with session_conf(client, plan_settings(conf or {})):
        return _verify(client, sql, findings, every_scan)


def _verify(client, sql: str, findings: list[Finding], every_scan: bool) -> PlanAnswers:
    nodes = plan_nodes(explain(client, sql, {}))
    results = []
    for f in findings:
        if f.kind == "query":
            results.append({"matched": None, "plan": None})
        elif f.kind == "lookup":
            results.append(None)  # below, from one more plan
        else:
            results.append(_match_operator(f, nodes))
    found: list = []
    if every_scan or any(r is None for r in results):
        # Spark drops the bucketed read of a scan no join needs, and with it the
        # count it prints; the pruning itself stays. Keep the scans bucketed to see it.
        found = scans(explain(client, sql, {"spark.sql.sources.bucketing.autoBucketedScan.enabled": "false"}))
        # Counted findings first: an uncounted one (unknown) would otherwise take, of several
        # scans of one table, the scan that agrees with a counted one, and leave it another's.
        lookups = [i for i, r in enumerate(results) if r is None]
        for i in sorted(lookups, key=lambda i: findings[i].buckets_read is None):
            results[i] = _match_lookup(findings[i], found)
    if any(s.sort == "skippable" for f in findings for s in f.sides):
        # The checker says the Sort would go with the setting on: ask the plan.
        ordered = plan_nodes(explain(client, sql, {SORT_ORDERING: "true"}))
        for f, r in zip(findings, results, strict=True):
            if r.get("matched") and any(s.sort == "skippable" for s in f.sides):
                again = _match_operator(f, ordered, skippable_as_skipped=True)
                r["matched"] = bool(again["matched"])
    leftover = [{"kind": n.kind, "keys": n.keys, "shuffles": n.shuffles} for n in nodes if not n.used]
    leftover += [
        {"kind": "lookup", "relation": t, "buckets_read": sel[0], "buckets": sel[1]}
        for t, sel in found
        if sel and sel[0] < sel[1]
    ]
    return PlanAnswers(results, leftover)


def _match_operator(f: Finding, nodes: list[PlanNode], skippable_as_skipped: bool = False) -> dict:
    kind = "aggregate" if f.kind in ("aggregate", "distinct") else f.kind
    want = [sorted(s.local_keys) for s in f.sides]
    said = [s.shuffle for s in f.sides]
    free = [n for n in nodes if not n.used and n.kind == kind]
    node = next((n for n in free if [sorted(k) for k in n.keys] == want), None)
    if node is None and kind == "join":
        node = next((n for n in free if sorted(sum(n.keys, [])) == sorted(sum(want, []))), None)
    if node is None:
        # The plan names a key by the alias a projection gave it (DISTINCT k, v AS w groups by k, w), the
        # finding by its source column: a free operator of this kind with as many keys, one of them shared.
        # Of several (a subquery's DISTINCT copied into each branch of a UNION it filters), the one that
        # agrees first: each finding takes one, so a verdict that disagrees still meets a node that says so.
        shaped = [
            n
            for n in free
            if [len(k) for k in n.keys] == [len(k) for k in want]
            and any(set(a) & set(b) for a, b in zip(n.keys, want, strict=True))
        ]
        agreeing = [n for n in shaped if n.shuffles == said]
        node = (agreeing or shaped or [None])[0]
    if node is None:
        return {"matched": False, "plan": "no operator with these keys in the plan"}
    node.used = True
    matched = said == node.shuffles
    if not matched and node.operator.startswith("Broadcast"):
        # A broadcast by size or hint is not modelled (only NOT IN's, which always
        # is): the plan has no shuffle to compare the verdict with.
        return {"matched": None, "plan": "broadcast join"}
    if matched and kind == "join" and node.operator == "SortMergeJoin":
        for s, plan_sort in zip(f.sides, node.sorts, strict=True):
            if s.sort is None:
                continue
            skipped = s.sort == "skipped" or (skippable_as_skipped and s.sort == "skippable")
            matched = matched and skipped == (not plan_sort)
    result = {"matched": matched, "plan": node.shuffles}
    if kind == "join":
        result["plan_sorts"] = node.sorts
    return result


def _match_lookup(f: Finding, found: list) -> dict:
    relation = f.sides[0].relation
    same = [i for i, (t, _) in enumerate(found) if t == relation]
    # Several scans of one table (a self-join): pair the finding with the one that agrees, if any.
    agreeing = [i for i in same if (found[i][1][0] if found[i][1] else f.buckets) == f.buckets_read]
    i = (agreeing or same or [None])[0]
    if i is None:
        return {"matched": False, "plan": f"no scan of {relation} in the plan"}
    _, selected = found.pop(i)
    read = selected[0] if selected else f.buckets
    matched = None if f.buckets_read is None else read == f.buckets_read  # None: the checker could not count
    return {"matched": matched, "plan": {"buckets_read": read, "buckets": f.buckets}}
