"""When a sort-merge join can skip its Sort: Spark returns a bucketed scan's
rows in `sorted_by` order only with
`spark.sql.legacy.bucketedTableScan.outputOrdering=true` (or, for the
package's tables, the session extension) and when every selected bucket is
one file, which the package's metadata can tell."""

from __future__ import annotations

from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.model import Part
from spark_bucketing.checker.relations import RelationInfo
from spark_bucketing.contracts import SORT_ORDERING_SETTING
from spark_bucketing.metadata import BucketSpec, PartitionRecord

SETTING = SORT_ORDERING_SETTING


def scan_order(
    info: RelationInfo, spec: BucketSpec, read: list[PartitionRecord], alias: str, exact: bool = True
) -> tuple[tuple | None, int]:
    """The (alias, column) order each bucket's files hold rows in (() for
    none, None when the files are not known: no partition records, or the
    partitions read not known, `exact` false), and how many files a bucket
    spans: one per selected partition."""
    if not info.partitions or (info.partition_by and spec.sorted_by and not exact):
        return None, 1
    if not spec.sorted_by:
        return (), 1
    records = read if info.partition_by else info.partitions
    order = tuple((alias, c.lower()) for c in spec.sorted_by)
    if not records:
        # No partition read: no bucket holds a file, and the scan states the order.
        return (order, 0) if info.partition_by else ((), 1)
    if any(r.spec.key() != spec.key() or r.files > spec.buckets for r in records):
        return (), 1
    return order, len(records)


def required_order(part: Part, keys: list) -> tuple:
    """The order a sort-merge join asks of a side: its keys, put in the
    partitioning's column order when they are exactly those columns."""
    for opt in part.options:
        if set(opt) == set(keys) and len(opt) == len(keys):
            return tuple(opt)
    return tuple(keys)


def sort_state(part: Part | None, keys: list, shuffled: bool, settings: EngineSettings, num: int) -> str | None:
    """Whether a sort-merge join side joined in `num` partitions needs its
    Sort: "needed", "skipped", "skippable" (a setting would skip it), or None
    when the files are not known."""
    if shuffled:
        return "needed"
    if part is None or part.sorted is None:
        return None
    required = required_order(part, keys)
    if part.sorted[: len(required)] != required or part.num > num:
        # Read in fewer tasks than buckets (coalesced), a task holds several sorted buckets. Read in
        # more (the extension's cloned read), a task holds part of one bucket, in its order.
        return "needed"
    # The extension states the order of a package table's scan (SortedBuckets), under adaptive execution,
    # and merges a bucket's files (one per partition) up to its limit.
    by_extension = settings.extension and settings.adaptive and part.package
    if part.sorted_files > 1:
        return "skipped" if by_extension and part.sorted_files <= settings.max_merged_files else "needed"
    return "skipped" if settings.sorted_scan_output or by_extension else "skippable"
