"""What a block gives the blocks that read it: its partitioning in the names
it selects, and per column its type, its base column and what it went through."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from spark_bucketing.checker import engines as E
from spark_bucketing.checker.keytypes import arithmetic_type
from spark_bucketing.checker.model import ColId, Output, Part
from spark_bucketing.checker.partitioning import renamed_order


def project(select: exp.Select, sources: dict[str, Output], part: Part | None, single: bool, unknown: bool) -> Output:
    """A block's output: its partitioning in the names it selects, and per
    column its type, its base column and what it went through."""
    types: dict[str, str | None] = {}
    base: dict[str, tuple[str | None, str]] = {}
    notes: dict[str, list[str]] = {}
    rename: dict[ColId, str] = {}
    grouped = select.args.get("group") is not None
    only = next(iter(sources)) if len(sources) == 1 else None
    for proj in select.expressions:
        name = proj.alias_or_name.lower()
        inner = proj.unalias()
        if isinstance(inner, exp.Column) and (inner.table or only):
            cid = (inner.table or only, inner.name.lower())
            src = sources.get(inner.table)
            types[name] = src.types.get(cid[1]) if src else None
            base[name] = src.base.get(cid[1], (None, cid[1])) if src else (None, cid[1])
            if src and cid[1] in src.notes:
                notes[name] = src.notes[cid[1]]
            rename.setdefault(cid, name)
        else:
            col = inner.find(exp.Column)
            src = sources.get(col.table or only) if col is not None else None
            if col is not None:
                base[name] = src.base.get(col.name.lower(), (None, col.name)) if src else (None, col.name)
            if inner.find(exp.AggFunc) is not None or grouped:
                notes[name] = [E.AGGREGATE]
            elif isinstance(inner, exp.Cast):
                notes[name] = [E.KEY_CAST]
            else:
                notes[name] = [E.KEY_EXPRESSION]
            if isinstance(inner, exp.Cast):
                types[name] = inner.to.sql("spark").lower()
            else:
                column = inner.find(exp.Column)
                types[name] = arithmetic_type(inner, src.types.get(column.name.lower()) if src and column else None)
    out_part = None
    reasons: list[str] = []
    if part is not None:
        options = [tuple(rename[c] for c in opt) for opt in part.options if all(c in rename for c in opt)]
        if options:
            out_part = replace(part, options=options, sorted=renamed_order(part.sorted, rename))
    relation = None
    if single and len(sources) == 1:
        only_source = next(iter(sources.values()))
        relation = only_source.relation
        reasons = list(only_source.reasons)
    if out_part is None and not reasons:
        reasons = [E.NOT_BUCKETED]
    return Output(
        relation=relation,
        part=out_part,
        types=types,
        base=base,
        notes=notes,
        reasons=reasons,
        bucketed=bool(out_part and out_part.bucketed),
        unknown=unknown,
    )
