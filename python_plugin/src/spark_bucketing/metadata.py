"""Reading a table's bucket spec and partition-level bucket metadata.

The one Python reader of the metadata format, written by the dbt macros in
macros/catalog/metadata.sql and macros/catalog/partition_records.sql and
documented in docs/metadata.md: table properties ``spark_bucketing.spec``
(latest spec), ``spark_bucketing.partition.<path>`` (version 1: one JSON
record per partition) and ``spark_bucketing.table`` (unpartitioned); in
version 2 each partition's record is in its own partition parameters, read
through the session extension's ``spark_bucketing_records`` table function.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Protocol

from spark_bucketing.contracts import (
    FORMAT_VERSION_KEY,
    PARTITION_KEY_PREFIX,
    PARTITION_RECORDS_FUNCTION,
    SPEC_KEY,
    TABLE_KEY,
)


class SqlClient(Protocol):
    def query(self, sql: str) -> list[tuple]: ...


@dataclass(frozen=True)
class BucketSpec:
    hash: str
    clustered_by: tuple[str, ...]
    buckets: int
    sorted_by: tuple[str, ...] = ()
    #: Hive's bucketing version (1 or 2) of a ``hive`` spec; 1 for ``spark``.
    version: int = 1

    @classmethod
    def from_record(cls, rec: dict) -> BucketSpec:
        return cls(
            rec["hash"],
            tuple(rec["clustered_by"]),
            int(rec["buckets"]),
            tuple(rec.get("sorted_by") or ()),
            int(rec.get("bucketing_version", 1)),
        )

    def to_record(self) -> dict:
        """The spec as the metadata records it (the inverse of from_record;
        the version only where it is 2, as the macros record it)."""
        rec = {
            "hash": self.hash,
            "clustered_by": list(self.clustered_by),
            "buckets": self.buckets,
            "sorted_by": list(self.sorted_by),
        }
        if self.version == 2:
            rec["bucketing_version"] = 2
        return rec

    def key(self) -> tuple:
        return (
            self.hash,
            self.version,
            tuple(c.lower() for c in self.clustered_by),
            self.buckets,
            tuple(c.lower() for c in self.sorted_by),
        )

    @property
    def family(self) -> str:
        """The hash that places rows: ``spark``, ``hive`` (v1) or ``hive v2``;
        two specs place a key alike only with the same family."""
        return "hive v2" if self.hash == "hive" and self.version == 2 else self.hash

    def describe(self) -> str:
        sort = f", sorted by ({', '.join(self.sorted_by)})" if self.sorted_by else ""
        return f"{self.buckets} buckets on ({', '.join(self.clustered_by)}), {self.family} hash{sort}"


@dataclass
class PartitionRecord:
    path: str
    spec: BucketSpec
    files: int
    rows: int
    location: str
    values: dict
    written_at: str
    merge: dict | None = None  # a merge's row accounting (merge_row_accounting)


@dataclass
class TableMetadata:
    table: str
    declared: BucketSpec | None
    partition_by: list[str]
    columns: dict[str, str]
    location: str | None
    file_format: str = "parquet"
    latest: BucketSpec | None = None
    partitions: list[PartitionRecord] = field(default_factory=list)
    built_by_package: bool = False  # the package's format marker is on the table

    @property
    def distinct_specs(self) -> set[BucketSpec]:
        return {p.spec for p in self.partitions}


def _columns(text: str | None) -> tuple[str, ...]:
    """DESCRIBE's "[`a`, `b`]" -> ('a', 'b'), as the strip_column_list macro reads it."""
    inner = (text or "").strip()
    if inner.startswith("["):
        inner = inner[1:-1]
    out = []
    for part in inner.split(","):
        name = part.strip()
        if len(name) >= 2 and name.startswith("`") and name.endswith("`"):
            name = name[1:-1].replace("``", "`")
        if name:
            out.append(name)
    return tuple(out)


def parse_describe(rows: list[tuple]) -> tuple[dict[str, str], list[str], dict[str, str]]:
    """DESCRIBE TABLE EXTENDED rows -> (columns, partition columns, details)."""
    columns: dict[str, str] = {}
    partition_by: list[str] = []
    details: dict[str, str] = {}
    section = "columns"
    for row in rows:
        key = (row[0] or "").strip()
        if key == "# Partition Information":
            section = "partitions"
        elif key.startswith("# Detailed Table Information"):
            section = "details"
        elif not key or key.startswith("#"):
            continue
        elif section == "columns":
            columns[key] = row[1]
        elif section == "partitions":
            partition_by.append(key)
        else:
            details[key] = row[1]
    return columns, partition_by, details


def declared_spec(details: dict[str, str]) -> BucketSpec | None:
    n = int(details.get("Num Buckets") or 0)
    if n <= 0:
        return None
    family = "hive" if (details.get("Provider") or "").lower() == "hive" else "spark"
    version = re.search(r"(?:^|[\[, ])bucketing_version=(\d+)", details.get("Table Properties") or "")
    return BucketSpec(
        family,
        _columns(details.get("Bucket Columns")),
        n,
        _columns(details.get("Sort Columns")),
        int(version.group(1)) if version and family == "hive" else 1,
    )


def read_table_metadata(client: SqlClient, table: str) -> TableMetadata:
    columns, partition_by, details = parse_describe(client.query(f"describe table extended {table}"))
    props = {k: v for k, v in client.query(f"show tblproperties {table}")}
    storage = " ".join(details.get(k) or "" for k in ("Provider", "Serde Library", "InputFormat")).lower()
    file_format = "orc" if "orc" in storage else "parquet"
    meta = TableMetadata(table, declared_spec(details), partition_by, columns, details.get("Location"), file_format)
    meta.built_by_package = FORMAT_VERSION_KEY in props
    if SPEC_KEY in props:
        meta.latest = BucketSpec.from_record(json.loads(props[SPEC_KEY]))
    if props.get(FORMAT_VERSION_KEY) == "2":
        meta.partitions = records_in_partitions(client, table)
    else:
        meta.partitions = partition_records(props)
    return meta


def _record(path: str, rec: dict) -> PartitionRecord:
    return PartitionRecord(
        path=path,
        spec=BucketSpec.from_record(rec),
        files=int(rec.get("files", 0)),
        rows=int(rec.get("rows", 0)),
        location=rec.get("location", ""),
        values=rec.get("values") or {},
        written_at=rec.get("written_at", ""),
        merge=rec.get("merge"),
    )


def partition_records(props: dict[str, str]) -> list[PartitionRecord]:
    """Format 1: the partition records among a table's properties (an
    unpartitioned table's one record has the path ''), sorted by property key."""
    out = []
    for key, value in sorted(props.items()):
        if key.startswith(PARTITION_KEY_PREFIX) or key == TABLE_KEY:
            rec = json.loads(value)
            out.append(_record(rec.get("path", key[len(PARTITION_KEY_PREFIX) :]) if key != TABLE_KEY else "", rec))
    return out


def records_in_partitions(client: SqlClient, table: str) -> list[PartitionRecord]:
    """Format 2: each partition's record from its partition parameters,
    through the session extension's table function (sorted by path)."""
    try:
        rows = client.query(f"select path, record from {PARTITION_RECORDS_FUNCTION}('{table}')")
    except Exception as e:
        raise RuntimeError(
            f"{table} keeps its partitions' records in partition parameters (bucket_records='partition_parameters'),"
            f" which only the session extension reads: load it in the Spark this reads through"
            f" (`spark-bucketing extension` prints the settings): {e}"
        ) from e
    return [_record(path, json.loads(value)) for path, value in sorted(rows) if value is not None]


class SparkClient:
    """Runs SQL in an embedded (or already running) SparkSession."""

    def __init__(self, spark):
        self.spark = spark

    @classmethod
    def local(cls, state_dir: str) -> SparkClient:
        from pathlib import Path

        from spark_bucketing.sparksession import local_session

        return cls(local_session(Path(state_dir)))

    def query(self, sql: str) -> list[tuple]:
        return [tuple(r) for r in self.spark.sql(sql).collect()]


class ThriftClient:
    """Runs SQL through a Spark Thrift Server (PyHive)."""

    def __init__(self, host: str, port: int):
        from pyhive import hive

        self.connection = hive.connect(host=host, port=port)

    def query(self, sql: str) -> list[tuple]:
        cursor = self.connection.cursor()
        cursor.execute(sql)
        return [tuple(r) for r in cursor.fetchall()]
