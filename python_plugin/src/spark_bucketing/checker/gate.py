"""Which shuffles `check --fail-on shuffle` and rule SB01 report: one rule for both.

A join that shuffles is a lost bucket join when both its sides are bucketed, by what the engine reads or by
what the project declares (a model's config, a source's meta: an evolved table, or one another tool
rewrote, reads unbucketed and still counts), and the engine reads at least one side's hash family bucketed
(Spark its own hash, Hive's with the session extension; Trino Hive's). Two Hive-hash tables joined in Spark
without the extension shuffle by design (their buckets are for Hive and Trino): not a lost bucket join."""

from __future__ import annotations

from spark_bucketing.checker.engines import EngineSettings, reads_hash
from spark_bucketing.checker.model import Finding
from spark_bucketing.checker.relations import Catalog
from spark_bucketing.metadata import BucketSpec


def declared_spec(relation: str | None, catalog: Catalog) -> BucketSpec | None:
    info = catalog.get(relation) if relation else None
    if info is None:
        return None
    return info.declared or info.bucket


def lost_bucket_join(finding: Finding, catalog: Catalog, settings: EngineSettings) -> bool:
    """Whether `finding` is a join between bucketed relations that shuffles (the module's rule)."""
    if finding.kind != "join" or len(finding.sides) != 2 or finding.unknown or finding.shuffle_free:
        return False
    if finding.between_bucketed:
        return True
    specs = [None if s.bucketed else declared_spec(s.relation, catalog) for s in finding.sides]
    if not all(s.bucketed or spec is not None for s, spec in zip(finding.sides, specs, strict=True)):
        return False
    return any(s.bucketed or reads_hash(spec, settings) for s, spec in zip(finding.sides, specs, strict=True))
