"""A change batch merged into a big bucketed table, side by side with the
stock dbt-spark ways of doing it on Parquet: an `insert_overwrite` model that
rebuilds the touched partitions with a full outer join of table and delta,
and a full rebuild (a `table` model over the source and the delta).

The table: 5,000,000 rows over 30 daily partitions, 16 buckets on `id`. The
delta: 1% of the rows, unique_key (id, day): 40,000 updates spread over the
last 3 days (then over all 30, as a change feed of old rows touches most
partitions) and 10,000 inserts into the last day. Each timed run starts from
the same table (rebuilt first, untimed), is a `dbt run` of its own (cold JVM
included), the sides' order alternates and each keeps its best of two. Each
run's SQL statements and Spark jobs are counted.

`--scales 1 2 4` repeats the case on tables 2 and 4 times as large (rows and
days; the same delta, so the same partitions change) and prints the curve.
`--no-reset` builds each size's tables once instead of before every timed
run: merging the same delta again reads and writes the same partitions, the
same rows (the first run's inserts are updates in the second), so the timed
work is the same, and the largest sizes fit in an afternoon.

    .venv/bin/python benchmarks/bench_merge.py [--rows 5000000] [--days 30] [--delta-rows N] [--spans 3]
        [--scales 1 2 4] [--no-reset]

Prints the figures docs/benchmarks.md reports.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import best_alternating, project_with_events, same_rows  # noqa: E402

BASE = """
select id, concat('p', id) as payload, cast(id % 1000 as double) as amount,
       date_add(date'2024-01-01', cast(id % {days} as int)) as day
from range(0, {rows}, 1, 12)
"""
# Updates of existing keys in the last `span` days, then inserts of new keys into the last day.
DELTA = """
select cast({days} * id + {days} - {span} + id % {span} as bigint) as id, concat('u', id) as payload,
       cast(-1 as double) as amount, date_add(date'2024-01-01', cast({days} - {span} + id % {span} as int)) as day
from range(0, {updates}, 1, 2)
union all
select {rows} + id as id, concat('n', id) as payload, cast(1 as double) as amount,
       date_add(date'2024-01-01', {days} - 1) as day
from range(0, {inserts}, 1, 2)
"""
COMMON = "partition_by=['day'], clustered_by=['id'], buckets=16"
OURS = (
    "{{ config(materialized='bucketed_incremental', incremental_strategy='merge', unique_key=['id', 'day'], "
    "bucket_hash='spark', " + COMMON + ") }}\n"
    "-- depends_on: {{ ref('delta') }}\n"
    "select * from {{ ref('delta' if spark_bucketing.is_incremental() else 'base') }}\n"
)
STOCK = (
    "{{ config(materialized='incremental', incremental_strategy='insert_overwrite', file_format='parquet', "
    + COMMON
    + ") }}\n"
    "-- depends_on: {{ ref('delta') }}\n"
    "{% if is_incremental() %}\n"
    "with delta as (select * from {{ ref('delta') }}),\n"
    "     old as (select * from {{ this }} where day in (select distinct day from delta))\n"
    "select coalesce(d.id, o.id) as id,\n"
    "       case when d.id is not null then d.payload else o.payload end as payload,\n"
    "       case when d.id is not null then d.amount else o.amount end as amount,\n"
    "       coalesce(d.day, o.day) as day\n"
    "from old o full outer join delta d on o.id = d.id and o.day = d.day\n"
    "{% else %}\n"
    "select * from {{ ref('base') }}\n"
    "{% endif %}\n"
)
REBUILD = (
    "{{ config(materialized='table', file_format='parquet', " + COMMON + ") }}\n"
    "select coalesce(d.id, o.id) as id,\n"
    "       case when d.id is not null then d.payload else o.payload end as payload,\n"
    "       case when d.id is not null then d.amount else o.amount end as amount,\n"
    "       coalesce(d.day, o.day) as day\n"
    "from {{ ref('base') }} o full outer join {{ ref('delta') }} d on o.id = d.id and o.day = d.day\n"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument(
        "--delta-rows", type=int, default=None, help="changed rows (default: 1%% of --rows), 4/5 updates, 1/5 inserts"
    )
    parser.add_argument("--spans", type=int, nargs="+", default=None, help="days the updates span (default: 3 and all)")
    parser.add_argument("--scales", type=int, nargs="+", default=[1], help="table sizes: multiples of --rows, --days")
    parser.add_argument("--no-reset", action="store_true", help="build each size's tables once, not before each run")
    parser.add_argument("--base", type=Path, default=None, help="folder for the project (default: a temporary one)")
    args = parser.parse_args()
    delta_rows = args.delta_rows or args.rows // 100
    updates, inserts = delta_rows * 4 // 5, delta_rows // 5
    # Spark's default broadcast threshold, as a user's session has it: the
    # stock model's partition filter (`day in (select distinct day from delta)`)
    # is then a broadcast semi join, not a shuffle of the whole table.
    counted = project_with_events(
        (args.base or Path(tempfile.mkdtemp(prefix="sb-bench-merge-"))) / "merge",
        **{"spark.sql.autoBroadcastJoinThreshold": "10485760"},
    )
    project = counted.project
    models = project.root / "models"
    stock_table = "{{ config(materialized='table', file_format='parquet') }}\n"
    (models / "merged_ours.sql").write_text(OURS)
    (models / "merged_stock.sql").write_text(STOCK)
    (models / "rebuilt_stock.sql").write_text(REBUILD)
    curve = []
    for scale in args.scales:
        rows, days = args.rows * scale, args.days * scale
        (models / "base.sql").write_text(stock_table + BASE.format(rows=rows, days=days))
        for case, span in enumerate(args.spans or (3, days)):
            (models / "delta.sql").write_text(
                stock_table + DELTA.format(rows=rows, days=days, updates=updates, inserts=inserts, span=span)
            )
            project.dbt("run", "--select", "base", "delta")
            if args.no_reset:
                project.dbt("run", "--select", "merged_ours", "merged_stock", "--full-refresh")
            best = best_alternating(
                {
                    "bucketed_incremental merge": merge_run(counted, "merged_ours", reset=not args.no_reset),
                    "stock insert_overwrite": merge_run(counted, "merged_stock", reset=not args.no_reset),
                    "stock full rebuild": lambda: counted.run("--select", "rebuilt_stock"),
                },
                "model",
            )
            stock = best["stock insert_overwrite"]
            print(
                f"\nMerge: {delta_rows:,} changed rows ({updates:,} updates over the last {span} days,"
                f" {inserts:,} inserts) into {rows:,} rows over {days} daily partitions, 16 buckets"
            )
            print(f"{'side':<28} {'model s':>8} {'vs stock':>9} {'wall s':>7} {'vs stock':>9} {'stmts':>6} {'jobs':>5}")
            for side, r in best.items():
                print(
                    f"{side:<28} {r['model']:>8.1f} {r['model'] / stock['model']:>8.2f}x {r['s']:>7.1f}"
                    f" {r['s'] / stock['s']:>8.2f}x {r['statements']:>6} {r['jobs']:>5}"
                )
            same_rows(project, ["merged_ours", "merged_stock", "rebuilt_stock"], "id, payload, amount, day")
            curve.append((rows, days, case, span, best))
    if len(curve) > 1:
        print_curve(curve, delta_rows)
    return 0


def print_curve(curve: list, delta_rows: int) -> None:
    """Model time per table size, each against stock's at that size and against ours at the smallest."""
    print(f"\nThe curve: model s, {delta_rows:,} changed rows")
    print(
        f"{'rows':>12} {'days':>5} {'span':>5} {'ours':>7} {'stock':>7} {'rebuild':>8}"
        f" {'vs stock':>9} {'vs smallest':>12}"
    )
    # Keyed by the span's place in the list: the default second span, all
    # days, is a different number at each size.
    smallest: dict = {}
    for rows, days, case, span, best in curve:
        ours, stock = best["bucketed_incremental merge"]["model"], best["stock insert_overwrite"]["model"]
        smallest.setdefault(case, ours)
        print(
            f"{rows:>12,} {days:>5} {span:>5} {ours:>7.1f} {stock:>7.1f} {best['stock full rebuild']['model']:>8.1f}"
            f" {ours / stock:>8.2f}x {ours / smallest[case]:>11.2f}x"
        )


def merge_run(counted, model: str, reset: bool):
    """A timed merge run, after an untimed rebuild when `reset`: every timed run starts from the same table."""

    def run():
        if reset:
            counted.project.dbt("run", "--select", model, "--full-refresh")
        return counted.run("--select", model)

    return run


if __name__ == "__main__":
    raise SystemExit(main())
