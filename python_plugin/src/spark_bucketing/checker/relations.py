"""What the checker knows about relations: columns, types, bucket specs and
per-partition specs, from the dbt manifest or from a live Spark catalog."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from spark_bucketing.checker.engines import UNKNOWN_BUCKETING, UNKNOWN_RELATION
from spark_bucketing.metadata import BucketSpec, PartitionRecord, SqlClient, read_table_metadata


def normalize_name(name: str) -> str:
    """`schema`.`table` / schema.table / spark_catalog.schema.table -> schema.table (lower case)."""
    parts = [p.strip().strip("`").strip('"').lower() for p in name.split(".") if p.strip()]
    if len(parts) == 3 and parts[0] == "spark_catalog":
        parts = parts[1:]
    return ".".join(parts)


@dataclass
class RelationInfo:
    name: str  # schema.table
    columns: dict[str, str | None] = field(default_factory=dict)  # lower-case name -> Spark type (None: unknown)
    bucket: BucketSpec | None = None  # the spec the catalog declares
    partition_by: list[str] = field(default_factory=list)
    partitions: list[PartitionRecord] = field(default_factory=list)  # recorded per-partition specs
    latest: BucketSpec | None = None  # the spec of the latest write (bucketed_incremental)
    built_by_package: bool = False  # a bucketed_table / bucketed_incremental model (the extension reads only these)
    complete: bool = False  # every column is known (catalog.json or live), not just those schema.yml lists
    # Set when nothing states the relation's bucketing (a reason code): the
    # checker then answers unknown, never "not bucketed".
    unknown: str | None = None
    # The spec the project declares for it (a model's config, a source's meta.spark_bucketing), whatever the
    # catalog now says: an evolved table, or one another tool rewrote, is declared bucketed and read unbucketed.
    declared: BucketSpec | None = None

    @property
    def evolving(self) -> bool:
        return len({p.spec for p in self.partitions}) > 1


class Catalog:
    def __init__(self, relations: dict[str, RelationInfo] | None = None):
        self.relations: dict[str, RelationInfo] = relations or {}

    def get(self, name: str) -> RelationInfo | None:
        key = normalize_name(name)
        if key in self.relations:
            return self.relations[key]
        # An unqualified reference: unique match on the table name.
        matches = [r for k, r in self.relations.items() if k.split(".")[-1] == key.split(".")[-1]]
        return matches[0] if len(matches) == 1 else None

    def add(self, info: RelationInfo) -> None:
        self.relations[normalize_name(info.name)] = info

    def sqlglot_schema(self) -> dict:
        schema: dict = {}
        for key, info in self.relations.items():
            if not info.columns or not info.complete:
                continue  # a partial column list would make sqlglot reject the other columns
            parts = key.split(".")
            target = schema
            for p in parts[:-1]:
                target = target.setdefault(p, {})
            target[parts[-1]] = {c: (t or "string") for c, t in info.columns.items()}
        return schema


def _as_list(value) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def spec_from_config(config: dict) -> BucketSpec | None:
    """The bucket spec a model's config gives its table, as Spark will declare it."""
    materialized = config.get("materialized")
    clustered_by = _as_list(config.get("clustered_by"))
    buckets = config.get("buckets")
    if not clustered_by or not isinstance(buckets, int):
        return None
    if materialized in ("bucketed_table", "bucketed_incremental"):
        family = config.get("bucket_hash") or "hive"
    elif materialized in ("table", "incremental") and (config.get("file_format") or "parquet") in ("parquet", "orc"):
        family = "spark"  # dbt-spark's stock CLUSTERED BY: a datasource table, Spark's hash
    else:
        return None
    version = config.get("bucketing_version") if family == "hive" else 1
    return BucketSpec(
        family, tuple(clustered_by), buckets, tuple(_as_list(config.get("sorted_by"))), 2 if version == 2 else 1
    )


def routes_incremental(manifest: dict) -> bool:
    """The project routes dbt-spark's `incremental` materialization to the package (docs/incremental.md,
    "Microbatch"), which builds its models with `buckets` as `bucketed_incremental` (is_bucketed_incremental):
    a project macro materialization_incremental_spark that calls the package's."""
    return any(
        m.get("name") in ("materialization_incremental_spark", "materialization_incremental_default")
        and "spark_bucketing.incremental_materialization" in (m.get("macro_sql") or "")
        for m in (manifest.get("macros") or {}).values()
    )


def catalog_from_manifest_file(manifest_path: Path) -> Catalog:
    """Models (and sources) from a dbt manifest file, wherever it sits;
    column types from schema.yml data_type and, when a catalog.json sits
    beside it (`dbt docs generate`), from there."""
    manifest = json.loads(manifest_path.read_text())
    catalog_json = {}
    catalog_path = manifest_path.parent / "catalog.json"
    if catalog_path.exists():
        data = json.loads(catalog_path.read_text())
        catalog_json = {**data.get("nodes", {}), **data.get("sources", {})}
    catalog = Catalog()
    routed = routes_incremental(manifest)
    for unique_id, node in {**manifest.get("nodes", {}), **manifest.get("sources", {})}.items():
        if node.get("resource_type") not in ("model", "source", "seed", "snapshot"):
            continue
        relation = node.get("relation_name")
        if not relation:
            continue
        columns = {c.lower(): (col.get("data_type") or None) for c, col in (node.get("columns") or {}).items()}
        documented = catalog_json.get(unique_id, {}).get("columns") or {}
        for c, col in documented.items():
            columns[c.lower()] = col.get("type") or columns.get(c.lower())
        config = node.get("config") or {}
        if routed and config.get("materialized") == "incremental" and config.get("buckets") is not None:
            config = {**config, "materialized": "bucketed_incremental"}
        meta_spec = (node.get("meta") or config.get("meta") or {}).get("spark_bucketing")
        bucket = BucketSpec.from_record(meta_spec) if meta_spec else spec_from_config(config)
        partition_by = [p.lower() for p in _as_list(config.get("partition_by"))]
        # A model's config says how it is built; a source's bucketing is known only from its meta.
        unstated = node.get("resource_type") == "source" and not meta_spec
        materialized = str(config.get("materialized"))
        catalog.add(
            RelationInfo(
                normalize_name(relation),
                columns,
                bucket,
                partition_by,
                built_by_package=materialized in ("bucketed_table", "bucketed_incremental"),
                complete=bool(documented),
                unknown=UNKNOWN_BUCKETING if unstated else None,
                declared=bucket,
            )
        )
    return catalog


def relation_from_live(client: SqlClient, name: str) -> RelationInfo:
    """The relation as the live catalog has it; one it cannot read is unknown."""
    try:
        meta = read_table_metadata(client, name)
    except Exception as exc:
        # Only "no such table" makes a relation unknown; any other failure
        # (connection, permissions) is the user's to see.
        if "TABLE_OR_VIEW_NOT_FOUND" in str(exc) or "not found" in str(exc).lower():
            return RelationInfo(normalize_name(name), unknown=UNKNOWN_RELATION)
        raise

    columns = {c.lower(): t for c, t in meta.columns.items()}
    return RelationInfo(
        normalize_name(name),
        columns,
        meta.declared,
        [p.lower() for p in meta.partition_by],
        meta.partitions,
        meta.latest,
        built_by_package=meta.built_by_package,
        complete=True,
    )


def _spec_json(spec: BucketSpec | None) -> dict | None:
    return spec.to_record() if spec else None


def catalog_to_json(catalog: Catalog) -> dict:
    """A catalog as plain JSON, as the checker reads it: a frozen catalog.
    Partition records keep what the checker uses (spec, files, values, path),
    not where or when they were written."""
    out = {}
    for key, info in sorted(catalog.relations.items()):
        out[key] = {
            "columns": info.columns,
            "bucket": _spec_json(info.bucket),
            "partition_by": info.partition_by,
            "partitions": [
                {"path": p.path, "spec": _spec_json(p.spec), "files": p.files, "rows": p.rows, "values": p.values}
                for p in sorted(info.partitions, key=lambda p: p.path)
            ],
            "latest": _spec_json(info.latest),
            "built_by_package": info.built_by_package,
            "complete": info.complete,
            "unknown": info.unknown,
            "declared": _spec_json(info.declared),
        }
    return out


def catalog_from_json(data: dict) -> Catalog:
    """The catalog catalog_to_json wrote."""

    def spec(d: dict | None) -> BucketSpec | None:
        return BucketSpec.from_record(d) if d else None

    catalog = Catalog()
    for key, r in data.items():
        catalog.add(
            RelationInfo(
                key,
                dict(r["columns"]),
                spec(r["bucket"]),
                list(r["partition_by"]),
                [
                    PartitionRecord(p["path"], spec(p["spec"]), p["files"], p["rows"], "", dict(p["values"]), "")
                    for p in r["partitions"]
                ],
                spec(r["latest"]),
                built_by_package=r["built_by_package"],
                complete=r["complete"],
                unknown=r["unknown"],
                declared=spec(r.get("declared")),
            )
        )
    return catalog
