"""An independent check of a bucketed table's files, in Python: lists the
files on disk and recomputes every row's bucket with spark_bucketing.hashing."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_bucketing import hashing
from tests.support.spark import BUCKET_IN_NAME, data_files, local_path, table_location


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
    desc = {r.col_name: r.data_type for r in spark.sql(f"describe table extended {table}").collect()}
    num_buckets = int(desc["Num Buckets"])
    strip = lambda s: [c.strip(" `") for c in s.strip("[]").split(",") if c.strip()]  # noqa: E731
    keys = strip(desc["Bucket Columns"])
    sort_cols = strip(desc.get("Sort Columns", "[]"))
    family = "hive" if desc["Provider"].lower() == "hive" else "spark"
    fmt = "orc" if "orc" in (desc.get("Serde Library", "") + desc["Provider"]).lower() else "parquet"
    types = {f.name: f.dataType.simpleString() for f in spark.table(table).schema.fields}
    location = table_location(spark, table)

    report = LayoutReport()
    files = data_files(location)
    report.files = len(files)
    counts: dict = defaultdict(int)
    for f in files:
        m = BUCKET_IN_NAME.match(f.name)
        if not m or int(m.group(1)) >= num_buckets:
            report.bad_names.append(str(f))
            continue
        counts[(str(f.parent.relative_to(location)), int(m.group(1)))] += 1
    report.files_per_bucket = dict(counts)
    report.partitions = len({d for d, _ in counts})

    if not files:
        return report
    df = spark.read.format(fmt).load(str(location)).select(
        F.input_file_name().alias("__file"),
        F.input_file_block_start().alias("__block"),
        F.monotonically_increasing_id().alias("__pos"),
        *keys,
        *sort_cols,
    )
    by_file: dict = defaultdict(list)
    for r in df.collect():
        by_file[r["__file"]].append(r)
    key_types = [types[k] for k in keys]
    for path, rows in by_file.items():
        file_bucket = int(BUCKET_IN_NAME.match(local_path(path).name).group(1))
        rows.sort(key=lambda r: (r["__block"], r["__pos"]))
        previous = None
        for r in rows:
            report.rows += 1
            if hashing.bucket_id([r[k] for k in keys], key_types, num_buckets, family) != file_bucket:
                report.misplaced_rows += 1
            if sort_cols:
                current = _sort_key([r[c] for c in sort_cols])
                if previous is not None and current < previous:
                    report.unsorted_rows += 1
                previous = current
    return report
