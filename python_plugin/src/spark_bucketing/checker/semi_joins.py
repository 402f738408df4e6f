"""IN and EXISTS subqueries in a WHERE clause, as the semi and anti joins
Spark plans them as, and where it plans them. Spark's optimizer moves such a
join below the subquery it filters (PushDownLeftSemiAntiJoin): through
projections, below a GROUP BY or DISTINCT when the join compares grouping
columns, below windows that partition by the compared columns, and into
each branch of a UNION. A join moved below an aggregation is judged there,
on the aggregation's input, and the aggregation on the join's output."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from spark_bucketing.checker.blocks import Block, conjuncts
from spark_bucketing.checker.groupings import block_windows
from spark_bucketing.checker.join_keys import equi_pairs, key_of, same_column
from spark_bucketing.checker.lines import source_line
from spark_bucketing.checker.literals import literal_value
from spark_bucketing.checker.needed import ALL, window_used


@dataclass
class SemiJoin:
    kind: str  # semi | anti | null-aware anti (NOT IN)
    node: exp.Expression  # the IN or EXISTS, where the finding points
    right_alias: str
    right_keys: list  # the subquery's keys, in the order of the left keys given with the join
    right_block: Block  # the subquery (IN) or the block of its FROM item (EXISTS)
    right_from_item: bool  # EXISTS: the right side is the subquery's FROM item, not the subquery
    # Spark moves it where the model does not follow (into a UNION branch it cannot split).
    unknown: bool = False
    judged: int = 0  # in how many blocks so far (one per UNION branch it moves into)

    @property
    def line(self) -> int:
        return source_line(self.node)


def subquery_joins(where: exp.Expression, block: Block, aliases: list[str]) -> list[tuple[SemiJoin, list]]:
    """The WHERE clause's IN / [NOT] EXISTS subqueries Spark plans as joins,
    each with its left keys in `block` ((alias, column) or an expression)."""
    only = aliases[0] if len(aliases) == 1 else None
    out = []
    preds = where.flatten() if isinstance(where, exp.And) else [where]
    for n, pred in enumerate(preds):
        negated = isinstance(pred, exp.Not)
        inner = pred.this if negated else pred
        if isinstance(inner, exp.In) and isinstance(inner.args.get("query"), exp.Subquery):
            sub = inner.args["query"].this
            sub_block = block.subquery(sub)
            if sub_block is None or not isinstance(sub, exp.Select) or len(sub.expressions) != 1:
                continue
            alias = f"__sb_subquery_{n}"
            left = key_of(inner.this, only)
            right = (alias, sub.expressions[0].alias_or_name.lower())
            kind = "anti (null-aware)" if negated else "semi"
            out.append((SemiJoin(kind, inner, alias, [right], sub_block, False), [left]))
        elif isinstance(inner, exp.Exists) and isinstance(inner.this, exp.Select):
            sub = inner.this
            sub_block = block.subquery(sub)
            from_expr = sub.args.get("from_") or sub.args.get("from")
            if sub_block is None or from_expr is None or sub.args.get("joins") or sub.args.get("where") is None:
                continue
            alias = from_expr.this.alias_or_name
            if alias in aliases or alias not in sub_block.sources:
                continue
            # An outer column a filter fixes to a literal is put in the subquery as that literal
            # (ConstantPropagation, seen in Spark 4's plans): it is no key of the join.
            pairs = [
                (left, right)
                for left, right in equi_pairs(sub.args["where"].this, set(aliases), alias)
                if not (isinstance(left, tuple) and _fixed_by_literal(block, left[0], left[1]))
            ]
            if not pairs:
                continue
            semi = SemiJoin("anti" if negated else "semi", inner, alias, [r for _, r in pairs], sub_block, True)
            out.append((semi, [left for left, _ in pairs]))
    return out


def push_target(block: Block, column: str, needed: dict[int, set[str] | None]) -> list[tuple[Block, tuple]] | None:
    """Where a semi join on `block`'s output `column` is planned, if below
    `block` (which only the join's block reads): [(the block it is judged
    in, its left key there)], one per branch of a UNION; [] where it stays
    above `block`; None where the model cannot place it."""
    if not column:
        return []
    if isinstance(block.node, exp.Union):
        return _into_union(block, column, needed)
    select = block.select
    if select is None or any(select.args.get(k) for k in ("limit", "offset", "qualify")):
        return []
    projection = _projection(select, column)
    if not isinstance(projection, exp.Column):
        return []
    group = select.args.get("group")
    windows = [w for w in block_windows(select) if window_used(w, select, needed.get(id(block), ALL))]
    if group is not None and not any(same_column(projection, g) for g in group.expressions):
        return []
    if any(not any(same_column(projection, k) for k in w.args.get("partition_by") or []) for w in windows):
        return []
    sources = list(block.sources)
    key = key_of(projection, sources[0] if len(sources) == 1 else None)
    further = _below_single_source(block, key, needed)
    if further is None or further:
        return further
    if group is not None or select.args.get("distinct") or windows:
        return [(block, key)]
    return []  # a projection only: the join's place above or below it plans the same


def _below_single_source(block: Block, key, needed) -> list[tuple[Block, tuple]] | None:
    select = block.select
    if select.args.get("joins") or len(block.sources) != 1 or not isinstance(key, tuple):
        return []
    (source,) = block.sources.values()
    if source.block is None or source.block.readers != 1:
        return []
    return push_target(source.block, key[1], needed)


def _into_union(block: Block, column: str, needed) -> list[tuple[Block, tuple]] | None:
    if block.node.args.get("distinct") or not block.branches:
        return []
    names = [b.output_names() for b in block.branches]
    if any(n is None for n in names) or column not in names[0]:
        return None
    position = names[0].index(column)
    out = []
    for branch, branch_names in zip(block.branches, names, strict=True):
        name = branch_names[position]
        below = push_target(branch, name, needed)
        if below is None:
            return None
        if below:
            out += below
            continue
        select = branch.select
        projection = _projection(select, name) if select is not None else None
        if not isinstance(projection, exp.Column) or select.args.get("group") or select.args.get("distinct"):
            return None  # the join stays above this branch's own operators: not modelled
        sources = list(branch.sources)
        out.append((branch, key_of(projection, sources[0] if len(sources) == 1 else None)))
    return out


def _projection(select: exp.Select, column: str) -> exp.Expression | None:
    for p in select.expressions:
        if p.alias_or_name.lower() == column:
            return p.unalias()
    return None


def _fixed_by_literal(block: Block, alias: str, column: str) -> bool:
    """Whether a WHERE conjunct `column = literal` holds the block's source `alias`'s column to one value,
    in this block or in the blocks it reads the column from through plain projections."""
    select = block.select
    if select is None:
        return False
    where = select.args.get("where")
    qualifiers = (alias, "") if len(block.sources) == 1 else (alias,)
    for c in conjuncts(where.this if where is not None else None):
        if not isinstance(c, exp.EQ):
            continue
        for col, other in ((c.this, c.expression), (c.expression, c.this)):
            named = isinstance(col, exp.Column) and col.name.lower() == column and col.table in qualifiers
            if named and literal_value(other) not in (None, "NULL"):
                return True
    source = block.sources.get(alias)
    inner = source.block if source is not None else None
    if inner is None or inner.select is None or len(inner.sources) != 1:
        return False
    projected = next((p.unalias() for p in inner.select.expressions if p.alias_or_name.lower() == column), None)
    if not isinstance(projected, exp.Column):
        return False
    return _fixed_by_literal(inner, projected.table or next(iter(inner.sources)), projected.name.lower())
