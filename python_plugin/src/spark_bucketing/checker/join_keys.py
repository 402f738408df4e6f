"""Join and grouping keys: the equality pairs between two sides, a key as a
column id or an expression, its type, and whether a partitioning satisfies it."""

from __future__ import annotations

from sqlglot import exp

from spark_bucketing.checker.model import ColId, Output, Part


def equi_pairs(on: exp.Expression | None, left_aliases: set[str], right_alias: str) -> list[tuple]:
    """(left key, right key) pairs of the equality conjuncts between the two
    sides; a key is (alias, column) for a plain column, else the expression."""
    if on is None:
        return []
    pairs = []
    for cond in on.flatten() if isinstance(on, exp.And) else [on]:
        if not isinstance(cond, exp.EQ | exp.NullSafeEQ):
            continue
        a, b = cond.left, cond.right
        ta, tb = _tables(a), _tables(b)
        if ta and ta <= left_aliases and tb == {right_alias}:
            pairs.append((key_of(a), key_of(b)))
        elif tb and tb <= left_aliases and ta == {right_alias}:
            pairs.append((key_of(b), key_of(a)))
    return pairs


def _tables(e: exp.Expression) -> set[str]:
    return {c.table for c in e.find_all(exp.Column) if c.table}


def same_column(col: exp.Column, e: exp.Expression) -> bool:
    """`e` is the column `col` names: the same name, and the same table where both name one."""
    if not isinstance(e, exp.Column) or e.name.lower() != col.name.lower():
        return False
    return not (e.table and col.table) or e.table == col.table


def key_of(e: exp.Expression, only_source: str | None = None):
    """(alias, column) for a plain column, else the expression itself. Without a
    schema, sqlglot leaves columns unqualified: they belong to the block's only source."""
    if isinstance(e, exp.Column) and (e.table or only_source):
        return (e.table or only_source, e.name.lower())
    return e


def _type_of(key: ColId, sources: dict[str, Output]) -> str | None:
    src = sources.get(key[0])
    return src.types.get(key[1]) if src else None


def key_type(key, sources: dict[str, Output]) -> str | None:
    """A join key's type: a column's, or a CAST's target; None when unknown."""
    if isinstance(key, tuple):
        return _type_of(key, sources)
    if isinstance(key, exp.Cast):
        return key.to.sql("spark").lower()
    return None


def satisfies(part: Part | None, keys: list, require_all: bool) -> tuple | None:
    """Positions (in the join key list) of the partitioning's columns when
    the partitioning satisfies a clustered distribution on `keys`."""
    if part is None:
        return None
    for opt in part.options:
        if not all(c in keys for c in opt):
            continue
        pos = tuple(keys.index(c) for c in opt)
        if require_all and sorted(pos) != list(range(len(keys))):
            continue
        return pos
    return None
