"""Stock dbt-spark `table` + clustered_by/buckets against `bucketed_table`, side
by side in one Spark session: files written, write time, a downstream join and
a full-scan aggregation.

    .venv/bin/python benchmarks/bench_write.py [--rows 2000000] [--tasks 12] [--buckets 16] [--days 4]

Prints a table; the figures in the README come from this script.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from spark_bucketing.files import data_files  # noqa: E402
from tests.support.dbt_project import DbtProject, failure_text  # noqa: E402
from tests.support.spark import make_session, table_location  # noqa: E402

FACT = """
select id as order_id,
       cast(pmod(hash(id, 17), {users}) as int) as user_id,
       date_add(date'2024-01-01', cast(id % {days} as int)) as order_date,
       cast(id % 1000 as double) / 10 as amount,
       concat('sku-', id % 5000) as sku
from range(0, {rows}, 1, {tasks})
"""
DIM = "select cast(id as int) as user_id, concat('user-', id) as user_name from range(0, {users}, 1, {tasks})"

VARIANTS = {
    "stock table": {"materialized": "table", "file_format": "parquet"},
    "bucketed_table (spark hash)": {"materialized": "bucketed_table", "bucket_hash": "spark"},
    "bucketed_table (hive hash)": {"materialized": "bucketed_table", "bucket_hash": "hive"},
}


def timed(fn, repeat: int = 1) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--buckets", type=int, default=16)
    parser.add_argument("--days", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3, help="query runs per measurement (median)")
    args = parser.parse_args()
    users = max(args.rows // 20, 1000)

    base = Path(tempfile.mkdtemp(prefix="sb-bench-"))
    spark = make_session(base, **{"spark.sql.shuffle.partitions": "16"})
    project = DbtProject(base / "project", schema="bench", package_dir=REPO_ROOT)
    project.setup()
    spark.sql("create database if not exists bench")

    results = []
    for i, (label, materialization) in enumerate(VARIANTS.items()):
        common = {**materialization, "clustered_by": ["user_id"], "buckets": args.buckets}
        fact, dim = f"fact_{i}", f"dim_{i}"
        project.write_model(
            fact,
            FACT.format(users=users, days=args.days, rows=args.rows, tasks=args.tasks),
            {**common, "partition_by": ["order_date"]},
        )
        project.write_model(dim, DIM.format(users=users, tasks=args.tasks), common)
        run = project.run(fact, dim)
        assert run.success, failure_text(run)
        write_s = {r.node.name: r.execution_time for r in run.result.results}[fact]
        files = data_files(table_location(spark, f"bench.{fact}"))
        join_sql = (
            f"select count(*), sum(f.amount) from bench.{fact} f join bench.{dim} d on f.user_id = d.user_id "
            "where d.user_name like 'user-1%'"
        )
        agg_sql = f"select order_date, count(*), sum(amount), count(distinct sku) from bench.{fact} group by order_date"
        join_s = timed(lambda: spark.sql(join_sql).collect(), args.repeat)  # noqa: B023
        agg_s = timed(lambda: spark.sql(agg_sql).collect(), args.repeat)  # noqa: B023
        plan = spark.sql(join_sql)._jdf.queryExecution().executedPlan().toString()
        results.append((label, len(files), write_s, join_s, agg_s, plan.count("Exchange hashpartitioning")))

    print(
        f"\n{args.rows:,} rows, {args.tasks} input tasks, {args.buckets} buckets, {args.days} daily partitions, "
        f"dimension {users:,} rows; local[2]; broadcast joins off; query times are medians of {args.repeat}\n"
    )
    header = f"{'materialization':30} {'files':>6} {'write s':>8} {'join s':>7} {'agg s':>7} {'join shuffles':>18}"
    print(header)
    print("-" * len(header))
    for label, files, write_s, join_s, agg_s, exchanges in results:
        print(f"{label:30} {files:>6} {write_s:>8.1f} {join_s:>7.2f} {agg_s:>7.2f} {exchanges:>14}")
    stock = results[0]
    for label, files, write_s, join_s, agg_s, _ in results[1:]:
        print(
            f"\n{label} vs stock: files x{files / stock[1]:.3f}, write x{write_s / stock[2]:.2f}, "
            f"join x{join_s / stock[3]:.2f}, aggregation x{agg_s / stock[4]:.2f}"
        )
    spark.stop()
    shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
