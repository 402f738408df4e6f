"""Pass 1: the partitioning each scan of a base relation gives its block: the
table's bucket spec when the engine reads it bucketed (for an evolving table
with the extension, the spec the partitions it reads share), or why not."""

from __future__ import annotations

from sqlglot import exp

from spark_bucketing.checker import engines as E
from spark_bucketing.checker.blocks import Block, Query, Source, conjuncts
from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.model import Output, Part
from spark_bucketing.checker.ordering import scan_order
from spark_bucketing.checker.partitions_read import partitions_read, shared_spec
from spark_bucketing.checker.relations import Catalog, RelationInfo, normalize_name
from spark_bucketing.metadata import PartitionRecord


def scan_outputs(
    query: Query, catalog: Catalog, settings: EngineSettings, filters: dict[int, list[exp.Expression]]
) -> dict[int, Output]:
    """{id() of a table node: what its scan outputs}, for every base relation every block reads.
    `filters`: per scan, the conjuncts that reach it (lookups.py); a scan not in it, its block's WHERE."""
    return {
        id(source.table): scan_output(source, block, catalog, settings, filters.get(id(source.table)))
        for block in query.blocks
        for source in block.sources.values()
        if source.table is not None
    }


def scan_output(
    source: Source, block: Block, catalog: Catalog, settings: EngineSettings, filters: list | None = None
) -> Output:
    name = source.name
    info = catalog.get(name)
    if info is None or info.unknown:
        reason = info.unknown if info else E.UNKNOWN_RELATION
        types = dict(info.columns) if info else {}
        return Output(
            relation=normalize_name(name),
            types=types,
            base={c: (info.name, c) for c in types},
            reasons=[reason],
            unknown=True,
        )
    types = dict(info.columns)
    base = {c: (info.name, c) for c in types}
    alias = source.table.alias_or_name
    # The block's own WHERE too: the conjuncts lookups.py leaves out (a scalar subquery's) still prune.
    where = block.node.args.get("where") if isinstance(block.node, exp.Select) else None
    own = conjuncts(where.this if where is not None else None)
    known = {f.sql() for f in filters or []}
    read, exact = partitions_read(info, alias, [*(filters or []), *(f for f in own if f.sql() not in known)])
    shared = None
    if info.bucket is None and info.partitions and settings.engine == "spark" and settings.extension:
        # The extension reads a table declared unbucketed by the spec its selected partitions share.
        shared = shared_spec(read)
    spec = info.bucket or shared
    key_types = [types.get(c.lower()) for c in spec.clustered_by] if spec else []
    ok, reasons = E.usable_spec(spec, key_types, settings, info.built_by_package)
    if shared is None:
        reasons = list(reasons) + _evolution_reasons(info, read)
    part = None
    if ok:
        order, files = scan_order(info, spec, read, alias, exact)
        part = Part(
            options=[tuple((alias, c.lower()) for c in spec.clustered_by)],
            num=spec.buckets,
            bucketed=True,
            spec=spec,
            sorted=order,
            sorted_files=files,
            hash=spec.family,
            scan=True,
            package=info.built_by_package,
        )
    return Output(relation=info.name, part=part, types=types, base=base, reasons=reasons, bucketed=ok)


def _evolution_reasons(info: RelationInfo, read: list[PartitionRecord]) -> list[str]:
    """Why an evolving table is read unbucketed: the partitions `read` disagree, or the declaration does."""
    if not info.evolving:
        return []
    return [E.MIXED_PARTITION_SPECS] if len({p.spec.key() for p in read}) > 1 else [E.EVOLVING_TABLE]
