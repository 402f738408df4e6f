"""`check --catalog local`: Spark's plans without the warehouse. A local
session (PySpark, a metastore in a temporary folder) declares each relation
the models read as the manifest, catalog.json and `meta` describe it (its
columns and types, partition columns, bucket spec and hash family, the
package's mark on the tables it builds), holding no data, and plans each
compiled model as `--catalog live` does."""

from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from spark_bucketing.checker.relations import Catalog, RelationInfo, normalize_name
from spark_bucketing.contracts import FORMAT_VERSION_KEY
from spark_bucketing.extension import SWITCH

# Sizes are not in the manifest: no join is broadcast for its size (as the static model assumes), only by a
# hint, unless --conf sets a threshold.
NO_SIZE_BROADCAST = {
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1",
}
# dbt-spark's ask of each connection, as the static model assumes offline.
DBT_SPARK = {"spark.sql.ansi.enabled": "false"}


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def why_not_declared(info: RelationInfo | None, name: str) -> str | None:
    """Why `name` cannot be declared (None: it can)."""
    if info is None:
        return f"{name} is not in the manifest"
    if not info.columns or any(t is None for t in info.columns.values()):
        unknown = sorted(c for c, t in info.columns.items() if t is None)
        what = f"the types of {', '.join(unknown)}" if unknown else "its columns"
        return (
            f"{name}: {what} are not known (run `dbt docs generate` for catalog.json, or give data_type in schema.yml)"
        )
    missing = [c for c in info.partition_by if c not in info.columns]
    if missing:
        return f"{name}: partition column {', '.join(missing)} is not among its columns"
    return None


def table_ddl(info: RelationInfo) -> str:
    """CREATE TABLE for `info`, as the package or dbt-spark builds it: a Spark-hash (or unbucketed)
    table as a data source table, a Hive-hash one as a Hive table with its bucketing version."""
    spec = info.bucket
    name = ".".join(map(_quoted, normalize_name(info.name).split(".")))
    hive = spec is not None and spec.hash == "hive"
    partitions = list(info.partition_by)
    columns = [(c, t) for c, t in info.columns.items() if not (hive and c in partitions)]
    body = ", ".join(f"{_quoted(c)} {t}" for c, t in columns)
    clauses = []
    if partitions:
        typed = [f"{_quoted(c)} {info.columns[c]}" if hive else _quoted(c) for c in partitions]
        clauses.append(f"partitioned by ({', '.join(typed)})")
    if spec is not None:
        clustered = f"clustered by ({', '.join(map(_quoted, spec.clustered_by))})"
        if spec.sorted_by:
            clustered += f" sorted by ({', '.join(map(_quoted, spec.sorted_by))})"
        clauses.append(f"{clustered} into {spec.buckets} buckets")
    properties = {}
    if info.built_by_package:
        properties[FORMAT_VERSION_KEY] = "1"
    if hive:
        properties["bucketing_version"] = str(spec.version)
    # A data source table's USING comes before its clauses, a Hive table's STORED AS after them.
    layout = [*clauses, "stored as parquet"] if hive else ["using parquet", *clauses]
    text = f"create table {name} ({body}) {' '.join(layout)}"
    if properties:
        text += " tblproperties (" + ", ".join(f"'{k}' = '{v}'" for k, v in properties.items()) + ")"
    return text


def declare(client, catalog: Catalog, names: set[str]) -> dict[str, str]:
    """Declares each of `names` the catalog describes fully on the local session; returns why each
    of the others could not be (a model reading one keeps its static verdicts, with that reason)."""
    refused = {}
    for name in sorted(names):
        info = catalog.get(name)
        why = why_not_declared(info, name)
        if why is not None:
            refused[normalize_name(name)] = why
            continue
        parts = normalize_name(info.name).split(".")
        if len(parts) > 1:
            client.query(f"create database if not exists {_quoted(parts[-2])}")
        client.query(table_ddl(info))
    return refused


@contextmanager
def local_planner(extension: bool):
    """A local session with no data, Spark's defaults but for NO_SIZE_BROADCAST and DBT_SPARK; the
    session extension loaded (and switched on) when the models run with it."""
    from spark_bucketing.checker.project import CheckError

    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise CheckError(
            "--catalog local plans with a local Spark: install PySpark (dbt-spark's session extra brings it)"
        ) from exc
    from pyspark.sql import SparkSession

    from spark_bucketing import extension as ext
    from spark_bucketing.metadata import SparkClient
    from spark_bucketing.sparksession import local_session

    if SparkSession.getActiveSession() is not None:
        # Its catalog is someone's: declaring tables there would replace theirs.
        raise CheckError("--catalog local starts a Spark of its own; this process runs one already")
    state = Path(tempfile.mkdtemp(prefix="spark-bucketing-local-"))
    conf = {**NO_SIZE_BROADCAST, **DBT_SPARK}
    if extension:
        conf.update(ext.spark_settings(ext.build_jar()))
        conf[SWITCH] = "true"
    session = local_session(state, **conf)
    try:
        yield SparkClient(session)
    finally:
        session.stop()
        shutil.rmtree(state, ignore_errors=True)
