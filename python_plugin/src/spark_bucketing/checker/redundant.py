"""Aggregations Spark's optimizer removes (RemoveRedundantAggregates): a
GROUP BY or DISTINCT whose only reader is another that groups by some of its
grouping columns and counts no duplicates (`SELECT DISTINCT a.k FROM (SELECT
DISTINCT k, w ...) a`). The lower one is not planned; the upper one groups
its input directly."""

from __future__ import annotations

from sqlglot import exp

from spark_bucketing.checker.blocks import Block, Query
from spark_bucketing.checker.groupings import block_windows

# Aggregate functions a duplicate row does not change (EliminateDistinct.isDuplicateAgnostic); any of DISTINCT
# arguments (`count(distinct w)`) neither.
_DUPLICATE_AGNOSTIC = (exp.Max, exp.Min, exp.ArrayUniqueAgg, exp.First, exp.Last)


def redundant_aggregates(query: Query) -> set[int]:
    """id() of each block whose aggregation the plan drops."""
    out = set()
    for upper in query.blocks:
        lower = _removable_lower(upper)
        if lower is not None:
            out.add(id(lower))
    return out


def _groups(select: exp.Select | None) -> bool:
    return select is not None and (select.args.get("group") is not None or bool(select.args.get("distinct")))


def _aggregates(select: exp.Select | None) -> bool:
    """A global aggregate (`select count(distinct k) from ...`): aggregate functions of its own, no GROUP BY."""
    return select is not None and any(a.parent_select is select for a in select.find_all(exp.AggFunc))


def _removable_lower(upper: Block) -> Block | None:
    select = upper.select
    if not (_groups(select) or _aggregates(select)):
        return None
    if select.args.get("joins") or len(upper.sources) != 1 or block_windows(select):
        return None
    (source,) = upper.sources.values()
    lower = source.block
    if lower is None or lower.readers != 1 or not _groups(lower.select):
        return None
    inner = lower.select
    if any(inner.args.get(k) for k in ("having", "limit", "offset", "qualify", "order")) or block_windows(inner):
        return None
    grouped = {
        p.alias_or_name.lower()
        for p in inner.expressions
        if not isinstance(p, exp.Star) and p.find(exp.AggFunc) is None
    }
    for agg in select.find_all(exp.AggFunc):
        agnostic = isinstance(agg, _DUPLICATE_AGNOSTIC) or isinstance(agg.this, exp.Distinct)
        if agg.parent_select is select and not agnostic:
            return None
    used = {c.name.lower() for c in select.find_all(exp.Column) if c.parent_select is select}
    if any(isinstance(p, exp.Star) for p in select.expressions) or not used <= grouped:
        return None
    return lower
