"""The one walk over a qualified query's scopes (sqlglot's Scope tree): its
query blocks as named records, each with the FROM items it reads. The
checker's passes (scans.py, flow.py, lookups.py) read these records and never
walk the scopes themselves."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, build_scope


@dataclass
class Source:
    """A FROM or JOIN item of a block: a base relation or another block."""

    alias: str
    node: exp.Expression  # as the block names it (a table, a subquery, a CTE reference)
    table: exp.Table | None = None
    block: Block | None = None
    # The right side of a SEMI/ANTI join: sqlglot leaves it out of the
    # block's selected sources, and Spark pushes no filter into it.
    semi: bool = False

    @property
    def name(self) -> str | None:
        """A base relation's name as written (db.table)."""
        if self.table is None:
            return None
        return ".".join(p for p in (self.table.args.get("db") and self.table.db, self.table.name) if p)


@dataclass(eq=False)
class Block:
    """One SELECT or set operation (UNION, INTERSECT, EXCEPT)."""

    node: exp.Expression
    sources: dict[str, Source] = field(default_factory=dict)
    branches: list[Block] = field(default_factory=list)  # a set operation's inputs
    subqueries: dict[int, Block] = field(default_factory=dict)  # by id() of the subquery's SELECT
    readers: int = 0  # how many FROM items read this block

    @property
    def select(self) -> exp.Select | None:
        return self.node if isinstance(self.node, exp.Select) else None

    def subquery(self, select: exp.Expression) -> Block | None:
        return self.subqueries.get(id(select))

    def output_names(self) -> list[str] | None:
        """The block's output column names (a set operation's: its first branch's); None for a SELECT *."""
        block = self
        while block.select is None and block.branches:
            block = block.branches[0]
        if block.select is None or any(isinstance(p, exp.Star) for p in block.select.expressions):
            return None
        return [p.alias_or_name.lower() for p in block.select.expressions]


@dataclass
class Query:
    root: Block
    blocks: list[Block]  # every block, each after the blocks it reads


def walk(qualified: exp.Expression) -> Query | None:
    root = build_scope(qualified)
    if root is None:
        return None
    scopes = list(root.traverse())  # sqlglot yields a scope after the scopes it contains
    blocks = {id(s): Block(node=s.expression) for s in scopes}
    readers: Counter = Counter()
    for scope in scopes:
        block = blocks[id(scope)]
        block.branches = [blocks[id(s)] for s in scope.set_operation_scopes]
        block.subqueries = {id(s.expression): blocks[id(s)] for s in scope.subquery_scopes}
        for alias, (node, source) in scope.selected_sources.items():
            block.sources[alias] = _source(alias, node, source, blocks)
            if isinstance(source, Scope):
                readers[id(source)] += 1
        for alias, node in _semi_join_sides(scope).items():
            if alias not in block.sources:
                block.sources[alias] = _source(alias, node, scope.sources.get(alias, node), blocks, semi=True)
    for scope in scopes:
        blocks[id(scope)].readers = readers[id(scope)]
    return Query(root=blocks[id(root)], blocks=[blocks[id(s)] for s in scopes])


def _source(alias: str, node, source, blocks: dict, semi: bool = False) -> Source:
    if isinstance(source, Scope):
        return Source(alias, node, block=blocks[id(source)], semi=semi)
    return Source(alias, node, table=source if isinstance(source, exp.Table) else None, semi=semi)


def _semi_join_sides(scope: Scope) -> dict[str, exp.Expression]:
    if not isinstance(scope.expression, exp.Select):
        return {}
    joins = scope.expression.args.get("joins") or []
    return {j.this.alias_or_name: j.this for j in joins if (j.args.get("kind") or "").lower() in ("semi", "anti")}


def conjuncts(e: exp.Expression | None) -> list[exp.Expression]:
    """The ANDed conditions of `e` (a WHERE's or an ON's condition), parentheses opened; none for None."""
    if e is None:
        return []
    e = e.unnest() if isinstance(e, exp.Paren) else e
    if isinstance(e, exp.And):
        return [c for part in e.flatten() for c in conjuncts(part)]
    return [e]
