"""A GROUP BY, DISTINCT or window PARTITION BY: whether its input's
partitioning already clusters it, and the partitioning it leaves."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from spark_bucketing.checker import engines as E
from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.join_keys import key_of
from spark_bucketing.checker.keys import dedupe, describe_keys
from spark_bucketing.checker.lines import source_line
from spark_bucketing.checker.model import Finding, Output, Part, Side
from spark_bucketing.checker.partitioning import unordered
from spark_bucketing.checker.suggestions import suggestions


@dataclass
class Grouping:
    kind: str  # aggregate | distinct | window
    node: exp.Expression  # where the finding points
    exprs: list[exp.Expression]  # the grouping keys
    # Whatever shuffles leaves its keys' partitioning (a window's operator states its input's, the Exchange's).
    changes_partitioning: bool = True


def block_groupings(select: exp.Select, windows: list[exp.Window]) -> list[Grouping]:
    """The block's GROUP BY or DISTINCT, then its `windows` (block_windows), in the order Spark plans them."""
    out = []
    group = select.args.get("group")
    if group is not None and group.expressions:
        out.append(Grouping("aggregate", group, group.expressions))
    elif select.args.get("distinct"):
        out.append(Grouping("distinct", select, [p.unalias() for p in select.expressions]))
    for window in windows:
        if window.args.get("partition_by"):
            out.append(Grouping("window", window, window.args["partition_by"]))
    return out


def block_windows(select: exp.Select) -> list[exp.Window]:
    return [w for w in select.find_all(exp.Window) if _in_block(w, select)]


def judge_grouping(
    g: Grouping, part: Part | None, sources: dict[str, Output], settings: EngineSettings
) -> tuple[Part | None, Finding]:
    only = next(iter(sources)) if len(sources) == 1 else None
    keys = [key_of(e, only) for e in g.exprs]
    plain = [k for k in keys if isinstance(k, tuple)]
    ok = part is not None and any(set(opt) <= set(plain) for opt in part.options)
    aliases = sorted({k[0] for k in plain}) or list(sources)
    desc = describe_keys(aliases, keys, sources)
    reasons: list[str] = []
    if not ok:
        if part is None:
            reasons = [n for n in desc.notes if n not in (E.KEY_CAST, E.KEY_EXPRESSION)] or [E.NOT_BUCKETED]
        else:
            reasons = [E.KEYS_NOT_BUCKET_COLUMNS]
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
