"""Point lookups on bucketed tables (bucket pruning): per scan of a bucketed
table that a filter touches on its bucket column, how many of its N buckets
Spark reads, or why it reads them all.

Spark's rule (FileSourceStrategy): a table bucketed by exactly one column;
the filters that reach the scan, as the optimizer leaves them: `=`, `<=>`,
`IN` of literals, `IS NULL`, and AND (intersection) / OR (union) of them;
anything else on any column selects every bucket. The filters that reach a
scan are the block's own WHERE, those pushed down from the blocks that read it,
ON conditions pushed into a join side, and copies inferred through join
equalities (`a.k = b.k AND a.k = 5` filters b on 5 too)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from spark_bucketing.checker.blocks import Block, Query, conjuncts
from spark_bucketing.checker.bucket_selection import judge_lookup
from spark_bucketing.checker.column_types import (
    source_types,
    unwrapped_cast_columns,
    widened_columns,
    widened_union_columns,
)
from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.groupings import block_windows
from spark_bucketing.checker.join_keys import same_column
from spark_bucketing.checker.keytypes import NUMERIC_ORDER, norm_type, wider
from spark_bucketing.checker.literals import (
    literal_value,
)
from spark_bucketing.checker.model import Finding
from spark_bucketing.checker.needed import needed_outputs, window_used
from spark_bucketing.checker.never_true import contradictory, never_true_filter, past_range
from spark_bucketing.checker.outer_joins import planned_join_kinds, written_kind
from spark_bucketing.checker.relations import Catalog


@dataclass
class ScanLookups:
    """Per scan (the id() of its table node): its lookup finding, and a filter
    no row of it passes; the blocks (id()) where a literal filter meets a
    join equality of a string and a number (`crossed_types`), whose joins
    Spark plans in ways not modelled (flow.py marks them unknown); the UNION
    blocks' columns whose branches differ in type (`widened`: (id(), name))."""

    findings: dict[int, Finding] = field(default_factory=dict)
    never_true: dict[int, exp.Expression] = field(default_factory=dict)
    # Per scan (id() of its table node): the conjuncts that reach it, its partition filters among them.
    scan_filters: dict[int, list[exp.Expression]] = field(default_factory=dict)
    # (id() of a block, alias of a derived source) that a never-true filter above it empties.
    emptied_sources: set[tuple[int, str]] = field(default_factory=set)
    crossed_types: set[int] = field(default_factory=set)
    widened: set[tuple[int, str]] = field(default_factory=set)


# Where Spark's optimizer is not consistent enough to model, the lookups the filter reaches are unknown.
UNSURE_ACROSS_TYPES = (
    "a filter carried to this scan across a join equality of two key types: Spark carries such filters "
    "through some operators and not others, so whether it reads fewer buckets is not known before it plans: "
    "the verdict is unknown"
)
UNSURE_NULL_IN = (
    "an IN list holding NULL above a full outer join (as written): whether Spark keeps NULL's bucket "
    "depends on how it rewrites the join: the verdict is unknown"
)


def lookup_findings(query: Query, catalog: Catalog, settings: EngineSettings) -> ScanLookups:
    """Pass 1: per scan of a bucketed table, the filters that reach it and the
    buckets they select; per scan of any known table, whether a filter that
    reaches it is never true (never_true_filter). For Trino only the latter."""
    out = ScanLookups()
    # Per block: the filters on its output columns (unqualified) pushed into it by its readers, each with
    # why it is not sure to reach a scan (or None) and whether no relation is planned empty on it (`beyond`).
    pushed: dict[int, list[Pushed]] = {}
    needed = needed_outputs(query)
    memo: dict[int, dict] = {}  # per block, its output columns' types (output_types)
    below = _constraints_from_below(query)
    for block in reversed(query.blocks):  # readers before the blocks they read
        select = block.select
        if select is None:
            _into_branches(block, pushed.get(id(block), []), pushed)
            out.widened |= {(id(block), name) for name in widened_columns(block, catalog, memo)}
            continue
        where, on_inner, on_outer = _block_filters(select)
        why: dict[str, str] = {}  # a filter's SQL: why a lookup it reaches is unknown
        beyond: set[str] = set()  # filters no relation is planned empty on (see _inferred)
        from_above = []
        for item in pushed.get(id(block), []):
            for f in _substituted([item.filter], select):
                from_above.append(f)
                if item.unsure is not None:
                    why[f.sql()] = item.unsure
                if item.beyond:
                    beyond.add(f.sql())
        inferable = where + from_above
        filters = inferable + on_inner + on_outer
        types = source_types(block, catalog, memo)
        lossy = widened_union_columns(block, catalog, memo) | unwrapped_cast_columns(block, catalog, memo)
        if any(written_kind(j) == "full" for j in select.args.get("joins") or []):
            why.update((f.sql(), UNSURE_NULL_IN) for f in inferable if _in_with_null(f))
        # What the sources' own filters hold their columns to crosses the joins too (Spark's constraints
        # come up from below); those filters are in place already, only what they infer is new.
        sourced = [
            _qualified(f, alias)
            for alias, source in block.sources.items()
            if source.block is not None and not source.semi
            for f in below.get(id(source.block), [])
        ]
        for found, crossed in (
            _inferred(inferable + sourced, select, types, outer_too=True, unsure=why, beyond=beyond, lossy=lossy),
            _inferred(on_inner, select, types, outer_too=False, unsure=why, beyond=beyond, lossy=lossy),
        ):
            filters += found
            if crossed:
                out.crossed_types.add(id(block))
        for alias, source in block.sources.items():
            if source.semi:
                continue
            mine = [f for f in filters if _aliases(f) == {alias}]
            if source.table is not None:
                info = catalog.get(source.name)
                out.scan_filters[id(source.table)] = mine
                sure = [f for f in mine if f.sql() not in beyond]
                never = [f for f in sure if info is not None and never_true_filter(f, info.columns)]
                if info is not None and not never and contradictory(sure, info.columns):
                    never = sure
                if never:
                    out.never_true[id(source.table)] = never[0]
                judged = info and not info.unknown and settings.engine == "spark"  # Trino's are not modelled
                finding = judge_lookup(info, mine, settings, source.node) if judged else None
                reason = next((why[f.sql()] for f in mine if f.sql() in why), None)
                if finding and reason is not None:
                    finding.unknown, finding.buckets_read, finding.suggestions = True, None, [reason]
                if finding:
                    out.findings[id(source.table)] = finding
            elif source.block is not None and source.block.readers == 1:
                passing = _passing_columns(source.block, needed.get(id(source.block), EVERY))
                pushed.setdefault(id(source.block), []).extend(
                    Pushed(_unqualified(f), why.get(f.sql()), f.sql() in beyond)
                    for f in mine
                    if passing is EVERY or _names(f) <= passing
                )
                # A never-true filter that stays above the block (a window's other column): the optimizer
                # plans this source as an empty relation, the block's operators gone.
                kept = [f for f in mine if passing is not EVERY and not _names(f) <= passing]
                if any(never_true_filter(f, types.get(alias, {})) and f.sql() not in beyond for f in kept):
                    out.emptied_sources.add((id(block), alias))
    if settings.engine != "spark":
        # Trino too reads nothing for a filter no row passes (folded to false); the rest is Spark's planning.
        return ScanLookups(never_true=out.never_true, emptied_sources=out.emptied_sources)
    return out


@dataclass
class Pushed:
    """A filter a reader pushes into a block (see lookup_findings)."""

    filter: exp.Expression
    unsure: str | None = None
    beyond: bool = False


def _in_with_null(f: exp.Expression) -> bool:
    return isinstance(f, exp.In) and any(isinstance(v, exp.Null) for v in f.expressions)


EVERY = None  # a filter on any output column passes


def _passing_columns(block: Block, want: set[str] | None) -> set[str] | None:
    """The output columns of `block` a filter above it may name and still be
    pushed below it (PushPredicateThroughNonJoin): any, through a plain
    SELECT, a DISTINCT or a set operation (into each branch); the grouping
    columns, through a GROUP BY; the columns every window partitions by,
    through windows (those whose values a reader uses, `want`: Spark drops
    the others). None through a LIMIT or QUALIFY."""
    select = block.select
    if select is None:
        return EVERY if isinstance(block.node, exp.Union) else set()
    if any(select.args.get(k) for k in ("limit", "offset", "qualify")):
        return set()
    plain = {p.alias_or_name.lower(): p.unalias() for p in select.expressions if isinstance(p.unalias(), exp.Column)}
    passing = EVERY
    group = select.args.get("group")
    if group is not None:
        passing = {name for name, col in plain.items() if any(same_column(col, g) for g in group.expressions)}
    for window in block_windows(select):
        if not window_used(window, select, want):
            continue
        keys = window.args.get("partition_by") or []
        names = {name for name, col in plain.items() if any(same_column(col, k) for k in keys)}
        passing = names if passing is EVERY else passing & names
    return passing


def _names(f: exp.Expression) -> set[str]:
    return {c.name.lower() for c in f.find_all(exp.Column)}


def _into_branches(block: Block, filters: list[Pushed], pushed: dict) -> None:
    """A set operation's filters, on its output columns, renamed to each
    branch's column at the same position (a UNION's branches read them)."""
    if not filters or not isinstance(block.node, exp.Union) or not block.branches:
        return
    first = block.branches[0]
    while first.select is None and first.branches:
        first = first.branches[0]
    if first.select is None:
        return
    positions = {p.alias_or_name.lower(): i for i, p in enumerate(first.select.expressions)}
    for branch in block.branches:
        names = branch.output_names()
        for item in filters:
            if not _names(item.filter) <= set(positions) or names is None:
                continue
            copy = item.filter.copy()
            for c in copy.find_all(exp.Column):
                c.set("this", exp.to_identifier(names[positions[c.name.lower()]]))
            pushed.setdefault(id(branch), []).append(Pushed(copy, item.unsure, item.beyond))


# ---- which filters reach which scan ----------------------------------------------------


def _aliases(e: exp.Expression) -> set[str]:
    if e.find(exp.Select) is not None:
        return set()  # a subquery in the filter: not a scan filter
    return {c.table for c in e.find_all(exp.Column)}


def _planned_joins(select: exp.Select, by_joins: bool = True) -> list[tuple[exp.Join, str]]:
    """The block's joins with the kinds Spark plans them as (outer_joins.py; `by_joins`: see there)."""
    joins = select.args.get("joins") or []
    from_expr = select.args.get("from_") or select.args.get("from")
    if not joins or from_expr is None:
        return []
    return list(zip(joins, planned_join_kinds(select, from_expr.this.alias_or_name, by_joins), strict=True))


def _block_filters(select: exp.Select) -> tuple[list, list, list]:
    """WHERE conjuncts, and the ON conjuncts Spark pushes into one join side:
    any of an inner (or semi) join's, those on the right side of a LEFT JOIN
    and on the left side of a RIGHT JOIN."""
    where = select.args.get("where")
    joins = _planned_joins(select)
    found = [c for c in conjuncts(where.this if where else None) if not _null_test_on_outer(c, joins)]
    inner, outer = [], []
    for join, kind in joins:
        right = join.this.alias_or_name
        for c in conjuncts(join.args.get("on")):
            aliases = _aliases(c)
            if len(aliases) != 1:
                continue
            if kind in ("inner", "semi", "anti"):
                inner.append(c)
            elif (kind == "left" and aliases == {right}) or (kind == "right" and aliases != {right}):
                outer.append(c)
    return found, inner, outer


def _null_test_on_outer(cond: exp.Expression, joins: list[tuple[exp.Join, str]]) -> bool:
    """`x IS NULL` on the nullable side of an outer join tests the join's
    missing rows, not the scan's: it stays above the join."""
    outer = {j.this.alias_or_name for j, kind in joins if kind in ("left", "full")}
    return isinstance(cond, exp.Is) and bool(_aliases(cond) & outer)


def _inferred(
    filters: list[exp.Expression],
    select: exp.Select,
    types: dict,
    outer_too: bool,
    unsure: dict[str, str],
    beyond: set[str],
    lossy: set[tuple[str, str]],
) -> tuple[list[exp.Expression], bool]:
    """`a.k = b.k` with `a.k = 5` (or IN): the optimizer adds `b.k = 5`. A
    WHERE filter crosses a LEFT JOIN's equalities too (on the right side it
    turns the join inner); an inner ON filter crosses inner equalities only.
    Not an equality of two types (Spark compares a cast, `types`: per alias,
    its columns' types), except onto the side Spark casts. Returns the
    inferred filters and whether a literal filter met an equality of a
    string and a number. `unsure` (a filter's SQL: why) gains the filters
    Spark does not consistently carry to a scan: those inferred across two
    types onto a subquery or across an outer join's equality, those
    inferred on from a cast side, and those inferred from an unsure one.
    `beyond` gains those inferred onto a cast side across an outer join's
    equality, and on from any cast side (Spark may not have them: no
    relation is planned empty on them). A filter of the block on a `lossy`
    column (widened_union_columns, unwrapped_cast_columns) crosses no equality."""
    joins = _planned_joins(select)
    if any(kind == "full" for _, kind in joins):
        return [], False
    equal = []
    for join, kind in joins:
        if kind != "inner" and not outer_too:
            continue
        for c in conjuncts(join.args.get("on")):
            if isinstance(c, exp.EQ) and isinstance(c.left, exp.Column) and isinstance(c.right, exp.Column):
                equal.append((c.left, c.right, kind))
    # The padded side of an outer join: a filter inferred onto it stays below the join (the join's output
    # does not carry it), so it is not carried on to a third relation. Outer as inference sees it: a join
    # narrowed only by a later join's equality is still outer then.
    early = _planned_joins(select, by_joins=False)
    padded = {j.this.alias_or_name for j, kind in early if kind in ("left", "full")}
    padded |= {j.parent_select.args["from_"].this.alias_or_name for j, kind in early if kind in ("right", "full")}
    tables = _table_aliases(select)
    out: list[exp.Expression] = []
    crossed = False
    cast_side: set[str] = set()
    seen = {f.sql() for f in filters}
    frontier = list(filters)
    while frontier:  # a.k = 5, a.k = b.k, b.k = c.k: c.k = 5 too
        found = []
        for f in frontier:
            col = f.this if isinstance(f, (exp.EQ, exp.In, *_RANGES)) else None
            if not isinstance(col, exp.Column) or not _literals(f):
                continue
            if col.table in padded and f not in filters:
                continue
            if f in filters and (col.table, col.name.lower()) in lossy:
                continue
            for a, b, kind in equal:
                for src, dst in ((a, b), (b, a)):
                    if _same(src, col) and src.table != dst.table and not _numeric_pair(src, dst, types):
                        # A string against a number: Spark compares casts, and infers through them what the
                        # model does not.
                        crossed = True
                    if _same(src, col) and src.table != dst.table and _crosses(src, dst, types):
                        copy = f.copy()
                        copy.set("this", dst.copy())
                        if copy.sql() not in seen:
                            seen.add(copy.sql())
                            found.append(copy)
                            if f.sql() in cast_side or f.sql() in beyond:
                                # On from the cast side: Spark carries it further in some plans, not in others.
                                beyond.add(copy.sql())
                                unsure[copy.sql()] = unsure.get(f.sql(), UNSURE_ACROSS_TYPES)
                            elif f.sql() in unsure:
                                unsure[copy.sql()] = unsure[f.sql()]
                            elif not _same_type(src, dst, types):
                                cast_side.add(copy.sql())
                                if past_range(copy, types[dst.table][dst.name.lower()]):
                                    # Spark may plan the cast side empty and drop the joins it
                                    # empties: their verdicts are unknown.
                                    crossed = True
                                if kind != "inner":
                                    # Across an outer join's equality of two types Spark does not always
                                    # infer it: no relation is planned empty on it, and its lookups are unknown.
                                    beyond.add(copy.sql())
                                    unsure[copy.sql()] = UNSURE_ACROSS_TYPES
                                # Onto a cast of a table's column Spark prunes; into a subquery, not always.
                                if f not in filters or dst.table not in tables:
                                    unsure[copy.sql()] = UNSURE_ACROSS_TYPES
        out += found
        frontier = found
    return out, crossed


def _table_aliases(select: exp.Select) -> set[str]:
    """The aliases of a block's FROM and JOIN relations that are tables (not subqueries)."""
    from_expr = select.args.get("from_") or select.args.get("from")
    relations = ([from_expr.this] if from_expr is not None else []) + [j.this for j in select.args.get("joins") or []]
    return {r.alias_or_name for r in relations if isinstance(r, exp.Table)}


def _numeric_pair(a: exp.Column, b: exp.Column, types: dict) -> bool:
    """Whether `a = b` compares one type, or two numeric types (whose casts the model follows)."""
    if _same_type(a, b, types):
        return True
    at, bt = (norm_type(types[x.table][x.name.lower()]) for x in (a, b))
    return at in NUMERIC_ORDER and bt in NUMERIC_ORDER


def _same_type(src: exp.Column, dst: exp.Column, types: dict) -> bool:
    st, dt = (types.get(x.table, {}).get(x.name.lower()) for x in (src, dst))
    return not (st and dt) or norm_type(st) == norm_type(dt)


def _crosses(src: exp.Column, dst: exp.Column, types: dict) -> bool:
    """Whether a filter on `src` is inferred onto `dst` across `src = dst`:
    with one type, or when Spark casts `dst` to `src`'s wider type (it
    rewrites the other constraints of the uncast column onto the cast one,
    never the other way)."""
    if _same_type(src, dst, types):
        return True
    st, dt = (types[x.table][x.name.lower()] for x in (src, dst))
    both = norm_type(st) in NUMERIC_ORDER and norm_type(dt) in NUMERIC_ORDER
    return both and wider(st, dt) == "left"


# Comparisons of a column with literals that cross join equalities as `=` and IN do (Spark infers every
# constraint through them): a range on one side's day filters the other's days too.
_RANGES = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)


def _literals(f: exp.Expression) -> bool:
    if isinstance(f, exp.Between):
        values = [f.args.get("low"), f.args.get("high")]
    else:
        values = f.expressions if isinstance(f, exp.In) else [f.expression]
    return bool(values) and all(v is not None and literal_value(v) is not None for v in values)


def _same(a: exp.Column, b: exp.Column) -> bool:
    return a.table == b.table and a.name.lower() == b.name.lower()


def _unqualified(f: exp.Expression) -> exp.Expression:
    copy = f.copy()
    for c in copy.find_all(exp.Column):
        c.set("table", None)
    return copy


def _constraints_from_below(query: Query) -> dict[int, list[exp.Expression]]:
    """Per block: the literal comparisons (=, IN, ranges) its rows hold on its
    output columns (unqualified), from its own WHERE and from its sources'
    through plain projections, as Spark's constraints propagate upward."""
    out: dict[int, list[exp.Expression]] = {}
    for block in query.blocks:  # the blocks read before their readers
        select = block.select
        if select is None or any(select.args.get(k) for k in ("limit", "offset")):
            continue
        single = next(iter(block.sources)) if len(block.sources) == 1 else None
        held = [
            c
            for c in conjuncts(select.args["where"].this if select.args.get("where") else None)
            if isinstance(c, (exp.EQ, exp.In, *_RANGES)) and isinstance(c.this, exp.Column) and _literals(c)
        ]
        for alias, source in block.sources.items():
            if source.block is not None and not source.semi:
                held += [_qualified(f, alias) for f in out.get(id(source.block), [])]
        outputs: dict[tuple[str, str], str] = {}
        for p in select.expressions:
            e = p.unalias()
            if isinstance(e, exp.Column):
                outputs[(e.table or single or "", e.name.lower())] = p.alias_or_name.lower()
        mine = []
        for f in held:
            name = outputs.get((f.this.table or single or "", f.this.name.lower()))
            if name is not None:
                copy = f.copy()
                copy.set("this", exp.column(name))
                mine.append(copy)
        out[id(block)] = mine
    return out


def _qualified(f: exp.Expression, alias: str) -> exp.Expression:
    copy = f.copy()
    copy.set("this", exp.column(copy.this.name, table=alias))
    return copy


def _substituted(filters: list[exp.Expression], select: exp.Select) -> list[exp.Expression]:
    """Filters on a block's output columns, rewritten onto the expressions the block computes them with."""
    projections = {p.alias_or_name.lower(): p.unalias() for p in select.expressions}
    out = []
    for f in filters:
        copy = f.copy()
        columns = list(copy.find_all(exp.Column))
        if not all(c.name.lower() in projections for c in columns):
            continue
        for c in columns:
            replacement = projections[c.name.lower()].copy()
            if c is copy:
                copy = replacement
            else:
                c.replace(replacement)
        out.append(copy)
    return out
