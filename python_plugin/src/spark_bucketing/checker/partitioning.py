"""The partitioning a query block's output keeps, carried from block to block."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from spark_bucketing.checker.blocks import Block, Query
from spark_bucketing.checker.engines import EngineSettings, power_of_two_multiple
from spark_bucketing.checker.keytypes import norm_type
from spark_bucketing.checker.model import Output, Part
from spark_bucketing.checker.outer_joins import planned_join_kinds, rejected_aliases


def unordered(part: Part | None) -> Part | None:
    """The partitioning after an operator that returns rows in no known order."""
    return None if part is None else replace(part, sorted=None)


def renamed_order(order: tuple | None, rename: dict) -> tuple | None:
    """A scan's row order through a projection: the prefix the projection keeps."""
    if order is None:
        return None
    kept = []
    for c in order:
        if c not in rename:
            break
        kept.append(rename[c])
    return tuple(kept)


def prefixed(part: Part | None, alias: str) -> Part | None:
    """A FROM item's partitioning, in the reading block's column ids."""
    if part is None:
        return None
    return replace(
        part,
        options=[tuple((alias, c) if isinstance(c, str) else c for c in opt) for opt in part.options],
        sorted=None if part.sorted is None else tuple((alias, c) if isinstance(c, str) else c for c in part.sorted),
    )


def kept_union_part(branches: list[Output], settings: EngineSettings) -> Part | None:
    """The placement a UNION ALL keeps with the session extension: every
    branch a bucketed scan of a table this package built, with one hash and
    count and the bucket columns at the same output positions (Spark 4.1+'s
    union partitioning; BucketedUnions restates a Spark-hash branch's
    placement, under adaptive execution). None otherwise (see
    stock_union_part)."""
    if not (branches and settings.extension and settings.union_output_partitioning):
        return None
    parts = _same_placement(branches)
    if parts is None or not all(p.package for p in parts):
        return None
    first = parts[0]
    if not first.hash.startswith("hive") and not settings.adaptive:
        return None
    names = list(branches[0].types)
    return Part(
        options=[tuple(names[names.index(c)] for c in first.options[0])],
        num=first.num,
        bucketed=True,
        spec=first.spec,
        hash=first.hash,
    )


def trino_union_part(branches: list[Output]) -> Part | None:
    """The placement Trino keeps for a UNION ALL whose branches are read bucketed alike by Hive's hash (one
    hash and bucket column positions, counts a power of two apart): its plans read them in one co-located
    fragment (Trino 476, tests/test_trino.py). None otherwise."""
    parts = _same_placement(branches, any_count=True)
    if parts is None or not all(p.hash.startswith("hive") for p in parts):
        return None
    # Read at the smallest count, as Trino reads a co-located fragment (counts a power of two apart).
    num = min(p.num for p in parts)
    if not all(power_of_two_multiple(p.num, num) for p in parts):
        return None
    first = parts[0]
    return Part(options=[first.options[0]], num=num, bucketed=True, spec=first.spec, hash=first.hash)


def stock_union_part(branches: list[Output], settings: EngineSettings, filtered: set[str] | None) -> Part | None:
    """The placement stock Spark 4.1+ keeps for a UNION ALL of bucketed scans
    on its own hash, with one count and the bucket columns at the same
    positions (`filtered`: the union's columns a filter from above is on, or
    ANY_COLUMN, filtered_unions: none kept then). What a reader's filter on
    those columns does to it: filtered_placement."""
    if filtered is ANY_COLUMN or not (branches and settings.union_output_partitioning):
        return None
    parts = _same_placement(branches)
    if parts is None or not all(p.hash == "spark" for p in parts):
        return None
    # A Spark-hash table this package built, read by the extension, keeps its placement in a union under
    # adaptive execution (BucketedUnions restates it), beside stock tables too (seen in Spark 4's plans).
    if any(p.package and settings.extension for p in parts) and not settings.adaptive:
        return None
    names = list(branches[0].types)
    first = parts[0]
    if not all(c in names for c in first.options[0]):
        return None
    return Part(options=[first.options[0]], num=first.num, bucketed=True, spec=first.spec, hash="spark")


# A reader's filter on a union's placement columns loses the placement in Spark's plans where the branches
# read their tables bare; beside a branch's own filter it was kept in one plan: not modelled, unknown.
UNION_FILTERED = (
    "a filter on the UNION's bucket columns from above it, beside a branch's own filter: whether Spark keeps "
    "the union's bucketing then is not modelled, so the verdict is unknown (--catalog live answers from the plan)"
)


def filtered_placement(part: Part | None, filtered: set[str] | None, union: Block) -> str | None:
    """What a reader's filter on a kept placement's (`part`) columns does to it: "lost" over bare branches,
    "unsure" where a branch filters its own rows, None where no such filter."""
    if part is None or filtered is ANY_COLUMN or not set(part.options[0]) & filtered:
        return None
    return "unsure" if any(_filters_itself(b) for b in union.branches) else "lost"


def _filters_itself(branch: Block) -> bool:
    if branch.select is None:
        return True
    if branch.select.args.get("where") is not None:
        return True
    return any(s.block is not None and _filters_itself(s.block) for s in branch.sources.values())


ANY_COLUMN = None  # filtered_unions: the placement is lost whatever its columns


def filtered_unions(query: Query) -> dict[int, set[str] | None]:
    """Per UNION ALL block a filter from above reaches: the union's columns
    it filters, or ANY_COLUMN. Spark's plans keep a union's placement where
    its branches filter their own rows, and where a reader's filter is on
    other columns than the placement's or is an IN list of literals; they
    lose it where a reader's WHERE, or the `isnotnull` a join infers for a
    side it does not preserve, filters the placement's columns through the
    union; and where a branch is no single table's read (_bare) or a reader
    reads a column a branch renames."""
    out: dict[int, set[str] | None] = {}

    def add(block: Block, columns: set[str] | None) -> None:
        if id(block) in out and out[id(block)] is ANY_COLUMN:
            return
        out[id(block)] = ANY_COLUMN if columns is ANY_COLUMN else (out.get(id(block)) or set()) | columns

    for block in query.blocks:
        select = block.select
        if select is None:
            if not all(_bare(b) for b in block.branches):
                add(block, ANY_COLUMN)
            continue
        from_expr = select.args.get("from_") or select.args.get("from")
        if from_expr is None:
            continue
        first = from_expr.this.alias_or_name
        joins = select.args.get("joins") or []
        # The joins' kinds as Spark infers `isnotnull` across them: a join a later join's equality
        # narrows to inner is still outer there, and its preserved union takes no filter.
        kinds = planned_join_kinds(select, first, by_joins=False)
        where = select.args.get("where")
        for alias, source in block.sources.items():
            if source.block is None or not isinstance(source.block.node, exp.Union):
                continue
            filtered = _not_null_filtered(where.this, alias) if where is not None else set()
            filtered |= _filtered_join_side(alias, first, joins, kinds)
            if _renamed_column_read(select, alias, source.block):
                add(source.block, ANY_COLUMN)
            elif filtered:
                add(source.block, filtered)
    return out


def _not_null_filtered(where: exp.Expression, alias: str) -> set[str]:
    """The columns of `alias` a WHERE clause puts a filter on that Spark
    turns into `isnotnull` in each UNION branch (a null-intolerant predicate:
    a comparison, IS NOT NULL, anything not known otherwise). An IN list of
    literals infers none."""
    out: set[str] = set()
    for pred in where.flatten() if isinstance(where, exp.And) else [where]:
        while isinstance(pred, exp.Paren):
            pred = pred.this
        columns = {c.name.lower() for c in pred.find_all(exp.Column) if c.table == alias}
        literal_list = isinstance(pred, exp.In) and not pred.args.get("query")
        if columns and not (literal_list and isinstance(pred.this, exp.Column)):
            out |= columns
    return out


def _renamed_column_read(select: exp.Select, alias: str, union: Block) -> bool:
    """Whether `select` reads a column a UNION branch renames (`v AS w`):
    the branch keeps its projection, which loses the union's partitioning
    (a renamed column the query does not read is pruned with its projection)."""
    renamed = set()
    for branch in union.branches:
        if branch.select is None:
            return True
        for e in branch.select.expressions:
            kept_name = isinstance(e.this, exp.Column) and e.this.name.lower() == e.alias_or_name.lower()
            if isinstance(e, exp.Alias) and not kept_name:
                renamed.add(e.alias.lower())
    if not renamed:
        return False
    if any(isinstance(e, exp.Star) or isinstance(e.this, exp.Star) for e in select.expressions):
        return True
    return any(c.table == alias and c.name.lower() in renamed for c in select.find_all(exp.Column))


def _bare(branch: Block) -> bool:
    """A branch that reads one table, through projections and its own filters
    (which keep the union's placement in Spark's plans), no join."""
    select = branch.select
    if select is None or len(branch.sources) != 1 or select.args.get("joins"):
        return False
    (source,) = branch.sources.values()
    return source.block is None or _bare(source.block)


def _filtered_join_side(alias: str, first: str, joins: list, kinds: list[str]) -> set[str]:
    """The columns of `alias` a join infers `isnotnull` for: its columns in
    the join's condition, on a side the join does not preserve."""
    out: set[str] = set()
    for i, (join, kind) in enumerate(zip(joins, kinds, strict=True)):
        on = join.args.get("on")
        if on is None or alias not in rejected_aliases(on):
            continue
        right = join.this.alias_or_name
        left_aliases = {first, *(j.this.alias_or_name for j in joins[:i])}
        rejected = (alias == right and kind in ("inner", "semi", "anti", "left")) or (
            alias in left_aliases and kind in ("inner", "semi", "right")
        )
        if rejected:
            out |= {c.name.lower() for c in on.find_all(exp.Column) if c.table == alias}
    return out


def _same_placement(branches: list[Output], any_count: bool = False) -> list[Part] | None:
    """The branches' partitionings when each is a bucketed scan's (read
    through projections, or a GROUP BY, DISTINCT or window that did not
    shuffle it, which state their input's) and all share one hash, count
    (unless `any_count`) and bucket column positions; None otherwise. A
    join's output states either side's (two options), which no union keeps."""
    parts = [b.part for b in branches]
    if not all(p is not None and p.bucketed and len(p.options) == 1 for p in parts):
        return None
    names = [list(b.types) for b in branches]
    if not all(all(c in n for c in p.options[0]) for p, n in zip(parts, names, strict=True)):
        return None
    positions = [tuple(n.index(c) for c in p.options[0]) for p, n in zip(parts, names, strict=True)]
    if len(set(positions)) > 1 or len({(0 if any_count else p.num, p.hash) for p in parts}) > 1:
        return None
    # A branch whose key Spark widens to the others' type is read through a cast: not the scan's placement.
    pairs = zip(branches, parts, strict=True)
    key_types = {tuple(norm_type(b.types.get(c) or "") for c in p.options[0]) for b, p in pairs}
    return parts if len(key_types) == 1 else None
