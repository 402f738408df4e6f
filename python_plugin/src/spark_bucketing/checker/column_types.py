"""The types of a query block's columns as the lookup pass (lookups.py) needs them:
per source, its output columns' types down to a base table; the UNION
columns whose branches differ in type, and the columns a subquery casts up
(filters on them cross no join equality)."""

from __future__ import annotations

from sqlglot import exp

from spark_bucketing.checker.blocks import Block
from spark_bucketing.checker.keytypes import arithmetic_type, norm_type, union_types
from spark_bucketing.checker.literals import INTEGRAL
from spark_bucketing.checker.relations import Catalog


def widened_union_columns(block: Block, catalog: Catalog, memo: dict) -> set[tuple[str, str]]:
    """(alias, column) of the block's UNION sources whose branches differ in
    that column's type. Spark infers a filter across a join equality from the
    constraints a relation guarantees, and a UNION guarantees those its
    branches share: the branch Spark casts to the wider type states its filter
    on the cast (or on its own column, the cast unwrapped), so the union
    states none, and a filter on that column reaches the union's branches but
    not the other side of the join."""
    return {
        (alias, name)
        for alias, source in block.sources.items()
        if source.block is not None
        for name in widened_columns(source.block, catalog, memo)
    }


def unwrapped_cast_columns(block: Block, catalog: Catalog, memo: dict) -> set[tuple[str, str]]:
    """(alias, column) of the block's subquery sources that compute the
    column as a cast of an integral column up to a wider integral type. A
    filter on it is pushed into the subquery onto the cast, which the
    optimizer unwraps onto the column (UnwrapCastInBinaryComparison); the
    subquery's output then guarantees nothing of its own column (the
    constraint names the inner one), so the filter is not inferred across a
    join equality."""
    out = set()
    for alias, source in block.sources.items():
        sub = source.block
        if sub is None or sub.select is None:
            continue
        inner = source_types(sub, catalog, memo)
        only = next(iter(inner.values())) if len(inner) == 1 else {}
        for p in sub.select.expressions:
            e = p.unalias()
            if not (isinstance(e, exp.Cast) and isinstance(e.this, exp.Column)):
                continue
            col_type = inner.get(e.this.table, only).get(e.this.name.lower())
            if integral_up_cast(col_type, e.to.sql("spark"), strictly=True):
                out.add((alias, p.alias_or_name.lower()))
    return out


def integral_up_cast(col_type: str | None, to: str, strictly: bool = False) -> bool:
    """A cast of an integral `col_type` column to an integral type at least (`strictly`: more) as wide:
    one the optimizer unwraps in a comparison with a literal (UnwrapCastInBinaryComparison)."""
    if not col_type or norm_type(col_type) not in INTEGRAL or norm_type(to) not in INTEGRAL:
        return False
    low, high = INTEGRAL.index(norm_type(col_type)), INTEGRAL.index(norm_type(to))
    return low < high if strictly else low <= high


def widened_columns(union: Block, catalog: Catalog, memo: dict) -> set[str]:
    """The output columns of a UNION block whose branches differ in type (Spark casts some branches')."""
    if union.select is not None or not union.branches:
        return set()
    branches = [output_types(b, catalog, memo) for b in union.branches]
    columns = [list(b.values()) for b in branches]
    return {
        name
        for i, name in enumerate(branches[0])
        if len({norm_type(c[i]) if i < len(c) and c[i] else None for c in columns}) > 1
    }


def source_types(block: Block, catalog: Catalog, memo: dict) -> dict[str, dict[str, str | None]]:
    """Per source alias of `block`, its columns' types where they are plain
    columns or casts down to a base table (None where not known)."""
    out: dict[str, dict[str, str | None]] = {}
    for alias, source in block.sources.items():
        if source.table is not None:
            info = catalog.get(source.name)
            out[alias] = dict(info.columns) if info is not None else {}
        elif source.block is not None:
            out[alias] = output_types(source.block, catalog, memo)
    return out


def output_types(block: Block, catalog: Catalog, memo: dict) -> dict[str, str | None]:
    """A block's output columns' types where they are plain columns, casts or
    arithmetic on a column down to a base table (a set operation's: its
    first branch's); None where not known. `memo`: per block (id()), what
    this query's analysis computed already."""
    if id(block) not in memo:
        memo[id(block)] = _computed_output_types(block, catalog, memo)
    return memo[id(block)]


def _computed_output_types(block: Block, catalog: Catalog, memo: dict) -> dict[str, str | None]:
    if block.select is None:
        return union_types([output_types(b, catalog, memo) for b in block.branches])
    types: dict[str, str | None] = {}
    inner = source_types(block, catalog, memo)
    only = next(iter(inner.values())) if len(inner) == 1 else {}
    for p in block.select.expressions:
        e = p.unalias()
        if isinstance(e, exp.Cast):
            types[p.alias_or_name.lower()] = e.to.sql("spark").lower()
        elif isinstance(e, exp.Column):
            types[p.alias_or_name.lower()] = inner.get(e.table, only).get(e.name.lower())
        elif (column := e.find(exp.Column)) is not None:
            types[p.alias_or_name.lower()] = arithmetic_type(e, inner.get(column.table, only).get(column.name.lower()))
    return types
