"""The demo pipeline: builds the package's own models on an embedded Spark with
a persistent metastore and warehouse, runs `dbt test`, and reports each
bucketed table's files."""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

from spark_bucketing import extension, plans
from spark_bucketing.files import bucket_of, local_path
from spark_bucketing.metadata import SparkClient, read_table_metadata
from spark_bucketing.sparksession import QUIET_LOG4J


def files_per_bucket_in_catalog(spark, table: str) -> Counter:
    """(partition folder, bucket id) -> files, over the files the catalog's
    partitions point at (incremental partitions live in their own folders)."""
    spark.conf.set("spark.sql.sources.bucketing.enabled", "false")
    try:
        files = [r.f for r in spark.sql(f"select distinct input_file_name() as f from {table}").collect()]
    finally:
        spark.conf.unset("spark.sql.sources.bucketing.enabled")
    return Counter((str(local_path(f).parent), bucket_of(local_path(f).name)) for f in files)


def report(spark, schema: str) -> list[dict]:
    """One row per bucketed table of `schema`: spec, partitions, files per bucket."""
    rows = []
    for t in spark.sql(f"show tables in {schema}").collect():
        if t.isTemporary:
            continue
        table = f"{schema}.{t.tableName}"
        meta = read_table_metadata(SparkClient(spark), table)
        if meta.declared is None:
            continue
        counts = files_per_bucket_in_catalog(spark, table)
        rows.append(
            {
                "table": table,
                "hash": meta.declared.hash,
                "buckets": meta.declared.buckets,
                "partitions": len({d for d, _ in counts}),
                "files": sum(counts.values()),
                "max_files_per_bucket": max(counts.values(), default=0),
                "rows": spark.table(table).count(),
                "location": str(local_path(meta.location)),
            }
        )
    return rows


def print_report(rows: list[dict]) -> None:
    header = f"{'table':38} {'hash':5} {'buckets':>7} {'partitions':>10} {'files':>6} {'files/bucket':>12} {'rows':>9}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['table']:38} {r['hash']:5} {r['buckets']:>7} {r['partitions']:>10} {r['files']:>6} "
            f"{'max ' + str(r['max_files_per_bucket']):>12} {r['rows']:>9}"
        )
    print()
    for r in rows:
        print(f"  {r['table']}: {r['location']}")


def exchanges(spark, sql: str) -> int:
    return plans.exchanges(plans.executed_plan(spark, sql))


# Lines of the same order (products bought together): a self-join of the
# Hive-hash table on its bucket column.
BOUGHT_TOGETHER = (
    "select a.sku, b.sku from bucketing_demo.order_lines a"
    " join bucketing_demo.order_lines b on a.order_id = b.order_id and a.line_no < b.line_no"
)


def print_extension_join(spark) -> None:
    """The same Hive-hash join with the session extension on and off (when the session loaded it)."""
    if extension.EXTENSION_CLASS not in (spark.conf.get("spark.sql.extensions", "") or ""):
        print("order_lines JOIN order_lines on order_id (Hive hash): the session extension is not loaded")
        return
    before = spark.conf.get(extension.SWITCH, "true")
    try:
        counts = {}
        for on in ("true", "false"):
            spark.conf.set(extension.SWITCH, on)
            counts[on] = exchanges(spark, BOUGHT_TOGETHER)
    finally:
        spark.conf.set(extension.SWITCH, before)
    print(
        f"order_lines JOIN order_lines on order_id (Hive hash): {counts['true']} shuffle exchanges with the "
        f"session extension on, {counts['false']} with it off"
    )


def run_demo(
    project_dir: Path, state_dir: Path, dbt_args: list[str] | None = None, target_dir: str | None = None
) -> int:
    """Returns the exit code; `dbt_args` go to every dbt command (the tests
    pass smaller data through --vars and their own --target-path)."""
    from dbt.cli.main import dbtRunner
    from pyspark.sql import SparkSession

    from spark_bucketing.sparksession import quiet_pyspark_logs

    state_dir.mkdir(parents=True, exist_ok=True)
    os.environ["SPARK_BUCKETING_DEMO_DIR"] = str(state_dir.resolve())
    os.environ.setdefault("SPARK_BUCKETING_LOG4J", str(QUIET_LOG4J))
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    quiet_pyspark_logs()
    where = ["--project-dir", str(project_dir), "--profiles-dir", str(project_dir)]
    runner = dbtRunner()
    # deps (which takes no --vars or --target-path): the demo installs the package from this repository, as a
    # user's project does; compile: the checker reads compiled models.
    for command in (["deps", "--quiet"], ["run"], ["test"], ["compile", "--quiet"]):
        result = runner.invoke([*command, *where, *([] if command[0] == "deps" else dbt_args or [])])
        if not result.success:
            print(f"\ndemo: `dbt {command[0]}` failed; see the messages above.", file=sys.stderr)
            return 1

    # dbt ran Spark in this process: look at what it built with the same session.
    spark = SparkSession.builder.getOrCreate()
    rows = report(spark, "bucketing_demo")
    print("\nBucketed tables built by the demo (metastore and warehouse in " + str(state_dir) + "):\n")
    print_report(rows)
    broken = [r["table"] for r in rows if r["max_files_per_bucket"] != 1]
    if broken:
        print(f"\ndemo: more than one file per bucket in {', '.join(broken)}", file=sys.stderr)
        return 1
    users_orders = "select * from bucketing_demo.users u join bucketing_demo.orders o on u.user_id = o.user_id"
    print(
        f"\nusers JOIN orders on user_id: {exchanges(spark, users_orders)} shuffle exchanges in Spark's physical plan"
    )
    print_extension_join(spark)

    # The bucket-join checker on the demo's own models, verified against Spark's plans.
    from spark_bucketing.checker.project import format_text, run_check

    client = SparkClient(spark)
    checked = run_check(
        project_dir,
        compile=False,
        catalog_mode="live",
        client=client,
        verify_with=client,
        target_dir=target_dir,
    )
    print("\nspark-bucketing check --catalog live --verify on the demo models:\n")
    print(format_text(checked))
    disagreements = [v for m in checked.models for v in m.verification or [] if v["matched"] is False]
    if disagreements:
        print(f"\ndemo: {len(disagreements)} static verdicts disagree with Spark's plans", file=sys.stderr)
        return 1
    return 0
