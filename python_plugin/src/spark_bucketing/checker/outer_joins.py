"""The join kinds Spark plans for a block's joins. Its optimizer turns an
outer join into a narrower one where a predicate above it rejects the rows
that the join pads with NULLs (EliminateOuterJoin): a WHERE comparison on a
column of the padded side, or the equality of a later inner join (Spark
infers `isnotnull` of its keys and pushes it down). A full join so narrowed
keeps the partitioning of the side that is kept, which decides whether the
next join shuffles.

The model walks a block's joins from the last to the first, as Spark pushes
filters down a left-deep tree: predicates on the earlier relations pass a
join when that join keeps its left side (inner, left outer), and a join's
own ON condition reaches its left side when the join is inner or right
outer."""

from __future__ import annotations

from sqlglot import exp

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like)
# Expressions that are NULL when an input is NULL (Spark's NullIntolerant).
_PROPAGATING = (exp.Cast, exp.Paren, exp.Neg, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)


def written_kind(join: exp.Join) -> str:
    """inner, left, right, full, semi or anti, as the query writes it."""
    kind = (join.args.get("kind") or "").lower()
    if kind in ("semi", "anti"):
        return kind
    return (join.args.get("side") or kind or "inner").lower()


def planned_join_kinds(select: exp.Select, first_alias: str, by_joins: bool = True) -> list[str]:
    """The kind Spark plans for each of `select`'s joins, in their order
    (`first_alias`: the FROM clause's relation). Without `by_joins`, the
    kinds as Spark infers filters across them: narrowed by the WHERE clause
    only (a later join's equality narrows a join through the `isnotnull`
    that inference itself adds, after it)."""
    joins = select.args.get("joins") or []
    kinds = [written_kind(j) for j in joins]
    rights = [j.this.alias_or_name for j in joins]
    where = select.args.get("where")
    rejected = rejected_aliases(where.this) if where is not None else set()
    for i in range(len(joins) - 1, -1, -1):
        left = {first_alias, *rights[:i]}
        kinds[i] = _narrowed(kinds[i], bool(rejected & left), rights[i] in rejected)
        below = rejected & left if kinds[i] in ("inner", "left", "semi", "anti") else set()
        on = joins[i].args.get("on")
        if by_joins and on is not None and kinds[i] in ("inner", "right"):
            below |= rejected_aliases(on) & left
        rejected = below
    return kinds


def _narrowed(kind: str, left_rejected: bool, right_rejected: bool) -> str:
    if kind == "full":
        if left_rejected and right_rejected:
            return "inner"
        if left_rejected:
            return "left"
        if right_rejected:
            return "right"
    if (kind == "left" and right_rejected) or (kind == "right" and left_rejected):
        return "inner"
    return kind


def rejected_aliases(condition: exp.Expression) -> set[str]:
    """The relations whose all-NULL rows `condition` (a conjunction) rejects:
    the aliases of columns under comparisons, IN lists and IS NOT NULL that
    propagate NULLs. Others (OR, COALESCE, IS NULL, <=>) reject none."""
    aliases: set[str] = set()
    for pred in condition.flatten() if isinstance(condition, exp.And) else [condition]:
        while isinstance(pred, exp.Paren):
            pred = pred.this
        if isinstance(pred, exp.Not):
            inner = pred.this
            while isinstance(inner, exp.Paren):
                inner = inner.this
            if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
                aliases |= _propagating(inner.this)
            elif isinstance(inner, _COMPARISONS):
                aliases |= _propagating(inner.left) | _propagating(inner.right)
        elif isinstance(pred, _COMPARISONS):
            aliases |= _propagating(pred.left) | _propagating(pred.right)
        elif isinstance(pred, exp.In) and pred.args.get("query") is None:
            aliases |= _propagating(pred.this)
        elif isinstance(pred, exp.Between):
            aliases |= _propagating(pred.this)
    return aliases


def _propagating(e: exp.Expression) -> set[str]:
    """The aliases of the columns in `e` if `e` is NULL whenever one of them
    is; else none (a qualified column only: unqualified ones name no side)."""
    if isinstance(e, exp.Column):
        return {e.table} if e.table else set()
    if isinstance(e, exp.Literal):
        return set()
    if isinstance(e, _PROPAGATING):  # sqlglot reads Spark's CAST as TryCast, a Cast too
        out: set[str] = set()
        for child in e.iter_expressions():
            out |= _propagating(child)
        return out
    return set()
