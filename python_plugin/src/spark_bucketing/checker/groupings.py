"""A GROUP BY, DISTINCT or window PARTITION BY: whether its input's
partitioning already clusters it, and the partitioning it leaves."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlglot import exp

from spark_bucketing.checker import engines as E
from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.join_keys import key_of
from spark_bucketing.checker.keys import dedupe, describe_keys
from spark_bucketing.checker.lines import source_line
from spark_bucketing.checker.model import Finding, Output, Part, Side, settle
from spark_bucketing.checker.partitioning import unordered
from spark_bucketing.checker.suggestions import suggestions


@dataclass
class Grouping:
    kind: str  # aggregate | distinct | window
    node: exp.Expression  # where the finding points
    exprs: list[exp.Expression]  # the grouping keys
    # Whatever shuffles leaves its keys' partitioning (a window's operator states its input's, the Exchange's).
    changes_partitioning: bool = True
    # Over Spark's Expand of the rows (aggregates of several DISTINCT lists), or over what grouped them: it
    # shuffles whatever the input's partitioning. `grouping_id`: it groups the expanded rows, also by their gid.
    expanded: bool = False
    grouping_id: bool = False
    # Spark's first step of an aggregate of DISTINCT arguments, grouped by the keys and the arguments.
    distinct_step: bool = False


def block_groupings(select: exp.Select, windows: list[exp.Window]) -> list[Grouping]:
    """The block's GROUP BY or DISTINCT, then its `windows` (block_windows), in the order Spark plans them.
    An aggregate of one DISTINCT argument list (`count(distinct day)`) is two to Spark (AggUtils'
    planAggregateWithOneDistinct): one grouped by the GROUP BY's keys and those arguments, then the GROUP BY's."""
    out = []
    group = select.args.get("group")
    keys = list(group.expressions) if group is not None else []
    distinct = _distinct_arguments(select)
    if distinct is not None:
        node, arguments, lists = distinct
        out.append(
            Grouping("aggregate", node, keys + arguments, expanded=lists > 1, grouping_id=lists > 1, distinct_step=True)
        )
    if keys:
        out.append(Grouping("aggregate", group, keys, expanded=distinct is not None and distinct[2] > 1))
    elif select.args.get("distinct"):
        out.append(Grouping("distinct", select, [p.unalias() for p in select.expressions]))
    for window in windows:
        if window.args.get("partition_by"):
            out.append(Grouping("window", window, window.args["partition_by"]))
    return out


def _distinct_arguments(select: exp.Select) -> tuple[exp.Expression, list[exp.Expression], int] | None:
    """The block's DISTINCT aggregates: the first one (where the finding points), the columns of their argument
    lists (each once) and how many lists differ; None where there are none."""
    found = [
        d
        for d in select.find_all(exp.Distinct)
        if d is not select.args.get("distinct") and isinstance(d.parent, exp.AggFunc) and _in_block(d, select)
    ]
    if not found:
        return None
    arguments: dict[str, exp.Expression] = {}
    for d in found:
        for e in d.expressions:
            arguments.setdefault(e.sql("spark"), e)
    lists = {tuple(e.sql("spark") for e in d.expressions) for d in found}
    return found[0], list(arguments.values()), len(lists)


def block_windows(select: exp.Select) -> list[exp.Window]:
    return [w for w in select.find_all(exp.Window) if _in_block(w, select)]


def judge_grouping(
    g: Grouping, part: Part | None, sources: dict[str, Output], settings: EngineSettings
) -> tuple[Part | None, Finding]:
    only = next(iter(sources)) if len(sources) == 1 else None
    keys = [key_of(e, only) for e in g.exprs]
    plain = [k for k in keys if isinstance(k, tuple)]
    # Spark's Expand states no partitioning: what its rows are grouped by is shuffled, whatever the input's.
    # Spark groups rows placed by a subset of the keys where they are; Trino (476, tests/test_trino.py) exchanges
    # them unless the keys are exactly the bucket columns (its DISTINCT arguments' step aside: none there).
    superset = (
        settings.engine == "trino"
        and not g.distinct_step
        and part is not None
        and any(set(opt) < set(plain) for opt in part.options)
    )
    # Trino plans DISTINCT aggregates without Spark's Expand (a MarkDistinct per argument list).
    expanded = g.expanded and settings.engine != "trino"
    ok = not expanded and part is not None and not superset and any(set(opt) <= set(plain) for opt in part.options)
    aliases = sorted({k[0] for k in plain}) or list(sources)
    desc = describe_keys(aliases, keys, sources)
    reasons: list[str] = []
    if expanded:
        reasons = [E.DISTINCT_EXPAND]
        if g.grouping_id:  # named gid in the plan
            desc = replace(desc, local=[*desc.local, "gid"])
    elif not ok:
        if part is None:
            # What the keys went through (a cast, an expression) is an obstacle of its own: a table bucketed
            # on the column is read bucketed and still loses it there.
            through = [n for n in desc.notes if n in (E.KEY_CAST, E.KEY_EXPRESSION)]
            reasons = [n for n in desc.notes if n not in through] or ([] if through else [E.NOT_BUCKETED])
            reasons += through
        else:
            reasons = [E.KEYS_SUPERSET if superset else E.KEYS_NOT_BUCKET_COLUMNS]
        if len(plain) < len(keys):
            reasons.append(E.KEY_EXPRESSION)
    side = Side(
        relation=desc.relation,
        keys=desc.keys,
        bucketed=bool(part and part.bucketed),
        shuffle=not ok,
        reasons=dedupe(reasons),
        local_keys=desc.local,
    )
    finding = Finding(g.kind, source_line(g.node), [side], unknown=desc.unknown)
    finding.suggestions = suggestions(finding, settings, part, None)
    if ok:
        settle(part)
    if superset and len(plain) == len(keys):  # superset: Trino's, which has no Expand
        return replace(unordered(part), scan=False, pending=finding), finding
    if ok or not g.changes_partitioning:
        return unordered(part), finding
    if len(plain) != len(keys):
        return None, finding
    return Part(options=[tuple(plain)], num=settings.shuffle_partitions, bucketed=False), finding


def _in_block(node: exp.Expression, select: exp.Select) -> bool:
    parent = node.parent
    while parent is not None and not isinstance(parent, exp.Select):
        parent = parent.parent
    return parent is select
