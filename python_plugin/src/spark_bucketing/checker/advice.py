"""Advice that needs what the catalog and the project say of a relation, applied to a query's findings
after the analysis: an evolved table's repair instead of "materialize it bucketed", bucket columns that are
not partition columns, and, for an unknown verdict, which relation or column is unknown and what supplies it."""

from __future__ import annotations

from spark_bucketing.checker import engines as E
from spark_bucketing.checker.model import Finding
from spark_bucketing.checker.relations import Catalog
from spark_bucketing.checker.suggestions import not_bucketed_text

GUESS = "a relation or column is unknown to the catalog; the verdict is a guess"


def refine(findings: list[Finding], catalog: Catalog) -> None:
    for f in findings:
        for side in f.sides:
            info = catalog.get(side.relation) if side.relation else None
            if info is None or E.NOT_BUCKETED not in side.reasons:
                continue
            # suggestions.py's NOT_BUCKETED text, with or without its count.
            made = not_bucketed_text(side.relation, side.keys, None)
            old = next((s for s in f.suggestions if s.startswith(made)), None)
            if old is None:
                continue
            if info.declared is not None and info.bucket is None:
                new = (
                    f"{side.relation} is declared {info.declared.describe()} by the project, but the catalog reads it"
                    " unbucketed: its partitions do not all hold one spec (after on_bucket_change='evolve'), or"
                    " another tool rewrote it. Rewrite every partition once: `dbt run --select"
                    f" {side.relation.split('.')[-1]} --full-refresh`, or one run with on_bucket_change='rebuild'"
                )
            else:
                partition = {p.lower() for p in info.partition_by}
                keys = [k for k in side.keys if k.lower() not in partition]
                new = old.replace(made, not_bucketed_text(side.relation, keys, None), 1) if keys else None
                if new and len(keys) < len(side.keys):
                    dropped = ", ".join(sorted(partition & {k.lower() for k in side.keys}))
                    new += f" (not its partition columns {dropped}: a partition column cannot be a bucket column;"
                    new += " the join reads matching partitions)"
            f.suggestions = [new if s == old else s for s in f.suggestions if s != old or new]
        if f.unknown:
            _say_what_is_unknown(f, catalog)


def _say_what_is_unknown(f: Finding, catalog: Catalog) -> None:
    """Replaces the generic guess with the relations and columns the catalog lacks, and what supplies them."""
    said = []
    for side in f.sides:
        if not side.relation:
            continue
        info = catalog.get(side.relation)
        if info is None:
            continue  # UNKNOWN_RELATION's own suggestion names it
        missing = [k for k in side.local_keys or side.keys if not info.columns.get(k.lower())]
        if missing:
            said.append(
                f"the type of {', '.join(missing)} in {side.relation} is not known: give each a data_type in"
                " its schema.yml, run `dbt docs generate` (the checker reads target/catalog.json), or use"
                " --catalog live"
            )
    if said:
        f.suggestions = [s for s in f.suggestions if s != GUESS] + [s for s in said if s not in f.suggestions]
