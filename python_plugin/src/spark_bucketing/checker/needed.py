"""Which of a block's output columns the query uses. Spark's optimizer drops
a window whose results nothing reads (ColumnPruning): a window in a
subquery the outer query takes only other columns of is not in the plan, and
neither is its shuffle."""

from __future__ import annotations

from sqlglot import exp

from spark_bucketing.checker.blocks import Block, Query

ALL = None  # every output column is used


def needed_outputs(query: Query) -> dict[int, set[str] | None]:
    """id(block) -> the names of its output columns that its readers use
    (ALL for the query's result, a set operation's branches and subqueries
    in expressions). Readers come before what they read (Query.blocks
    reversed), so a block's entry is complete when it is reached."""
    needed: dict[int, set[str] | None] = {}

    def mark(block: Block, columns: set[str] | None) -> None:
        if id(block) in needed and needed[id(block)] is ALL:
            return
        needed[id(block)] = ALL if columns is ALL else needed.get(id(block), set()) | columns

    for block in reversed(query.blocks):
        want = needed.get(id(block), ALL)
        for other in [*block.branches, *block.subqueries.values()]:
            mark(other, ALL)
        select = block.select
        if select is None:
            continue
        used = _references(select, want, list(block.sources))
        for alias, source in block.sources.items():
            if source.block is not None:
                mark(source.block, used.get(alias, set()))
    return needed


def window_used(window: exp.Window, select: exp.Select, want: set[str] | None) -> bool:
    """Whether the plan keeps `window`: its value is an output column a
    reader uses, or it is used in the block itself (ORDER BY, QUALIFY, inside
    another expression), which the model does not follow."""
    if want is ALL or select.args.get("distinct"):
        return True
    projection = window.parent
    if not isinstance(projection, exp.Alias) or projection.parent is not select:
        return True
    return projection.alias_or_name.lower() in want


def _references(select: exp.Select, want: set[str] | None, aliases: list[str]) -> dict[str, set[str] | None]:
    """Per source alias, the columns of it the block reads to produce `want`."""
    exprs: list[exp.Expression] = [
        p
        for p in select.expressions
        if want is ALL or select.args.get("distinct") or p.alias_or_name.lower() in want or isinstance(p, exp.Star)
    ]
    exprs += [select.args[k] for k in ("where", "group", "having", "order", "qualify") if select.args.get(k)]
    exprs += [j.args[k] for j in select.args.get("joins") or [] for k in ("on", "using") if j.args.get(k)]
    used: dict[str, set[str] | None] = {a: set() for a in aliases}

    def add(alias_list, name: str | None) -> None:
        for a in alias_list:
            if a not in used or used[a] is ALL:
                continue
            if name is None:
                used[a] = ALL
            else:
                used[a].add(name)

    for e in exprs:
        for star in e.find_all(exp.Star):
            if star.parent is select:  # SELECT *
                add(aliases, None)
            elif isinstance(star.parent, exp.Column) and star.parent.parent is select:  # SELECT t.*
                add([star.parent.table], None)
        for col in e.find_all(exp.Column):
            if isinstance(col.this, exp.Star):
                continue
            add([col.table] if col.table else aliases, col.name.lower())
    return used
