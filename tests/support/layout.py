"""An independent check of a bucketed table's files, in Python: lists the
files on disk and recomputes every row's bucket with spark_bucketing.hashing."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_bucketing import hashing
from spark_bucketing.files import bucket_of, data_files, input_file_path, local_path
from spark_bucketing.metadata import SparkClient, read_table_metadata


@dataclass
class LayoutReport:
    files: int = 0
    rows: int = 0
    partitions: int = 0
    files_per_bucket: dict = field(default_factory=dict)  # (partition dir, bucket) -> files
    misplaced_rows: int = 0
    unsorted_rows: int = 0
    bad_names: list = field(default_factory=list)

    @property
    def max_files_per_bucket(self) -> int:
        return max(self.files_per_bucket.values(), default=0)


def _sort_key(values):
    # Spark's ascending order with NULLs first.
    return tuple((v is not None, v) for v in values)


def check_layout(spark: SparkSession, table: str) -> LayoutReport:
    """Checks a table's files against the spec its catalog entry declares."""
    meta = read_table_metadata(SparkClient(spark), table)
    spec = meta.declared
    return check_files(
        spark,
        location=local_path(meta.location),
        file_format=meta.file_format,
        keys=list(spec.clustered_by),
        num_buckets=spec.buckets,
        family=spec.hash,
        sort_cols=list(spec.sorted_by),
        types={f.name: f.dataType.simpleString() for f in spark.table(table).schema.fields},
        version=spec.version,
    )


def check_files(
    spark: SparkSession,
    location: Path,
    file_format: str,
    keys: list[str],
    num_buckets: int,
    family: str,
    sort_cols: list[str],
    types: dict[str, str],
    version: int = 1,
) -> LayoutReport:
    """Checks the files under `location` against a bucket spec, without the catalog."""
    report = LayoutReport()
    files = data_files(location)
    report.files = len(files)
    counts: dict = defaultdict(int)
    for f in files:
        bucket = bucket_of(f.name)
        if bucket is None or bucket >= num_buckets:
            report.bad_names.append(str(f))
            continue
        counts[(str(f.parent.relative_to(location)), bucket)] += 1
    report.files_per_bucket = dict(counts)
    report.partitions = len({d for d, _ in counts})

    if not files:
        return report
    df = (
        spark.read.format(file_format)
        .load(str(location))
        .select(
            F.input_file_name().alias("__file"),
            F.input_file_block_start().alias("__block"),
            F.monotonically_increasing_id().alias("__pos"),
            *keys,
            *sort_cols,
        )
    )
    by_file: dict = defaultdict(list)
    for r in df.collect():
        by_file[r["__file"]].append(r)
    key_types = [types[k] for k in keys]
    for path, rows in by_file.items():
        file_bucket = bucket_of(local_path(path).name)
        rows.sort(key=lambda r: (r["__block"], r["__pos"]))
        previous = None
        for r in rows:
            report.rows += 1
            if hashing.bucket_id([r[k] for k in keys], key_types, num_buckets, family, version) != file_bucket:
                report.misplaced_rows += 1
            if sort_cols:
                current = _sort_key([r[c] for c in sort_cols])
                if previous is not None and current < previous:
                    report.unsorted_rows += 1
                previous = current
    return report


def table_layout_problems(spark: SparkSession, table: str) -> list[str]:
    """Every file of a table, read through its catalog entry (so partitions
    anywhere, as bucketed_incremental places them), against the recorded spec
    of its partition: bucket id in the name, every row's bucket, one file per
    (folder, bucket). Bucketed reads are off so that no file is skipped."""
    meta = read_table_metadata(SparkClient(spark), table)
    records = {p.path: p for p in meta.partitions}
    types = {f.name.lower(): f.dataType.simpleString() for f in spark.table(table).schema.fields}
    spark.conf.set("spark.sql.sources.bucketing.enabled", "false")
    try:
        rows = spark.table(table).withColumn("__file", F.input_file_name()).collect()
    finally:
        spark.conf.unset("spark.sql.sources.bucketing.enabled")
    problems, files = [], defaultdict(set)
    for r in rows:
        values = r.asDict()
        path = input_file_path(values.pop("__file"))
        record = next((rec for p, rec in records.items() if str(path.parent).endswith("/" + p) or p == ""), None)
        if record is None:
            problems.append(f"no record for {path.parent}")
            continue
        spec = record.spec
        lowered = {k.lower(): v for k, v in values.items()}
        keys = [c.lower() for c in spec.clustered_by]
        bucket = hashing.bucket_id(
            [lowered[k] for k in keys], [types[k] for k in keys], spec.buckets, spec.hash, spec.version
        )
        if bucket != bucket_of(path.name):
            problems.append(f"row in the wrong file {path}")
        files[(path.parent, bucket_of(path.name))].add(path)
    problems += [f"{len(v)} files for bucket {b} in {d}" for (d, b), v in files.items() if len(v) > 1]
    return sorted(set(problems))
