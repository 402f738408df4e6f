"""What an engine will make of a table whatever the query: a warning per
relation, beside the findings, that changes no verdict."""

from __future__ import annotations

from dataclasses import dataclass

from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.relations import Catalog
from spark_bucketing.extension import EXTENSION_CLASS

# Documented with the reason codes (docs/checker.md, tests/test_docs.py).
PARTITIONS_UNBUCKETED = "PARTITIONS_UNBUCKETED_IN_METASTORE"


@dataclass(frozen=True)
class TableWarning:
    relation: str
    code: str
    text: str

    def to_json(self) -> dict:
        return {"relation": self.relation, "code": self.code, "text": self.text}


def table_warnings(catalog: Catalog, relations: set[str], settings: EngineSettings) -> list[TableWarning]:
    """Trino reads each partition by the bucket spec the metastore holds for that partition, and refuses a
    bucketed table any of whose partitions has none. Without the session extension, a run of a partitioned
    `bucketed_incremental` model that replaces a partition (a day run again, an append or merge into a day
    that has rows) points it at its new folder with ALTER TABLE .. SET LOCATION, which drops the partition's
    bucket spec (docs/trino.md): the model's table is refused from that run on. Neither the manifest nor
    Spark's catalog shows a partition's spec, so this is said of the configuration: a Hive-hash table of such
    a model, written by sessions that do not load the extension (as the live session, --conf or --extension
    tell it)."""
    if settings.engine != "trino" or settings.extension:
        return []
    out = []
    for name in sorted(relations):
        info = catalog.get(name)
        if info is None or not info.replaces_partitions or not info.bucket or info.bucket.hash != "hive":
            continue
        out.append(
            TableWarning(
                info.name,
                PARTITIONS_UNBUCKETED,
                f"Trino refuses {info.name} once a run replaces one of its partitions in a session without the "
                "session extension (the partition loses its bucket spec in the metastore): load the extension "
                f"where dbt runs (spark.sql.extensions={EXTENSION_CLASS}), then rebuild the table once with "
                "`dbt run --full-refresh`; if it is loaded there, say so with --extension",
            )
        )
    return out
