"""Hourly-scale tables: what a table of 10,000 partitions costs against the
same table with 10, for a Hive-hash `bucketed_incremental` table with its
per-partition records (in the table's properties, and with
bucket_records='partition_parameters' in its partitions), and for stock
dbt-spark's incremental table beside them.

For each size: a one-day `insert_overwrite` run (dbt's model time, each run a
`dbt run` of its own, sides alternated, best of two), a one-partition query
and the planning of a one-partition self-join on the bucket key, each with
the session extension on and off, on both sides' tables (in a Spark process
of its own per table, sizes and sides alternated, twice; in it, after a
statement on no table, each probe five times in turns, the best kept), and
`dbt docs generate` on the project.

    .venv/bin/python benchmarks/bench_partitions.py [--sizes 10 10000] [--per-day 40] [--buckets 4]
        [--base DIR [--reuse]]

Prints the figures docs/benchmarks.md reports.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import best_alternating, project_with_events  # noqa: E402

DAILY = """
select cast(pmod(hash(id, {{{{ var('tag', 0) }}}}), 5000) as int) as k, concat('v', id) as payload,
       date_add(date'2000-01-01', d) as day
from range(0, {per_day}, 1, 1)
cross join (select explode(sequence({{{{ var('first', 0) }}}}, {{{{ var('last', 0) }}}})) as d)
"""
SIDES = {
    "bucketed_incremental hive": "bucketed",
    "... records in partitions": "inpart",
    "stock incremental": "stock",
}
STOCK = "stock incremental"
# Each side's configs beyond the common ones.
CONFIGS = {
    "bucketed": "materialized='bucketed_incremental', bucket_hash='hive'",
    "inpart": "materialized='bucketed_incremental', bucket_hash='hive', bucket_records='partition_parameters'",
    "stock": "materialized='incremental', file_format='parquet'",
}
PROBES = {
    "one-partition query": "select count(*), sum(hash(k, payload)) from {table} where day = date'{day}'",
    "planning": "explain select count(*) from {table} a join {table} b on a.k = b.k"
    " where a.day = date'{day}' and b.day = date'{day}'",
}


def probe(state: Path, table: str, day: str) -> dict:
    """In this process: each probe's time in a new Spark session with the
    extension loaded, and whether the planned self-join kept its Exchange."""
    from spark_bucketing import extension
    from spark_bucketing.sparksession import QUIET_LOG4J, local_session

    spark = local_session(
        state,
        QUIET_LOG4J,
        **extension.spark_settings(extension.build_jar()),
        **{"spark.sql.autoBroadcastJoinThreshold": "-1"},
    )
    # The session's own start (metastore connection, Hive client, the first
    # job's code) is not the table's cost: a statement on no table first.
    spark.sql("select count(*) from range(1000)").collect()
    out: dict = {}
    # Each probe with the extension on and off, five times in turns; the best of each.
    for on in ("true", "false") * 5:
        spark.conf.set(extension.SWITCH, on)
        for name, sql in PROBES.items():
            start = time.perf_counter()
            rows = spark.sql(sql.format(table=table, day=day)).collect()
            key = f"{name}, extension {'on' if on == 'true' else 'off'}"
            out[key] = min(out.get(key, float("inf")), time.perf_counter() - start)
            if name == "planning":
                out[f"hash Exchanges, extension {'on' if on == 'true' else 'off'}"] = rows[0][0].count(
                    "Exchange hashpartitioning"
                )
    spark.stop()
    return out


def run_probe(state: Path, table: str, day: str) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--probe", str(state), table, day], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"probe of {table} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def day_of(n: int) -> str:
    from datetime import date, timedelta

    return (date(2000, 1, 1) + timedelta(days=n)).isoformat()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 10_000])
    parser.add_argument("--per-day", type=int, default=40)
    parser.add_argument("--buckets", type=int, default=4)
    parser.add_argument("--base", type=Path, default=None, help="folder for the project (default: a temporary one)")
    parser.add_argument(
        "--reuse", action="store_true", help="keep an earlier run's tables in --base; build only those missing"
    )
    parser.add_argument("--probe", nargs=3, metavar=("STATE", "TABLE", "DAY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        state, table, day = args.probe
        print(json.dumps(probe(Path(state), table, day)))
        return 0

    from spark_bucketing import extension

    base = args.base or Path(tempfile.mkdtemp(prefix="bench-partitions-"))
    counted = project_with_events(base / "project", **extension.spark_settings(extension.build_jar()))
    project = counted.project
    common = (
        f"partition_by=['day'], clustered_by=['k'], buckets={args.buckets}, incremental_strategy='insert_overwrite'"
    )
    sql = DAILY.format(per_day=args.per_day)
    models = project.root / "models"
    for n in args.sizes:
        for prefix, configs in CONFIGS.items():
            (models / f"{prefix}_{n}.sql").write_text(f"{{{{ config({configs}, {common}) }}}}\n{sql}")

    def run(model: str, first: int, last: int, *extra: str):
        vars_ = json.dumps({"first": first, "last": last, "tag": first})
        return lambda: counted.run("--select", model, "--vars", vars_, *extra)

    print(
        f"\nTables of {', '.join(f'{n:,}' for n in args.sizes)} daily partitions, {args.per_day} rows a day,"
        f" {args.buckets} buckets, Hive hash (stock: the same configs), the session extension loaded"
    )
    warehouse = project.root / "state" / "warehouse" / f"{project.schema}.db"
    for n in args.sizes:
        for side, prefix in SIDES.items():
            if args.reuse and (warehouse / f"{prefix}_{n}").is_dir():
                continue
            r = run(f"{prefix}_{n}", 0, n - 1, "--full-refresh")()
            print(f"built {side} of {n:,} partitions: {r['model']:.1f} s, {r['statements']} stmts, {r['jobs']} jobs")

    runs = {}
    for n in args.sizes:
        best = best_alternating({side: run(f"{prefix}_{n}", n - 1, n - 1) for side, prefix in SIDES.items()}, "model")
        runs[n] = best
    # Each table's probes in a Spark process of its own; sizes and sides alternated.
    probes: dict = {(n, side): [] for n in args.sizes for side in SIDES}
    state = project.root / "state"
    for order in (args.sizes, list(reversed(args.sizes))):
        for n in order:
            for side, prefix in SIDES.items() if order is args.sizes else reversed(SIDES.items()):
                probes[n, side].append(run_probe(state, f"{project.schema}.{prefix}_{n}", day_of(n - 1)))

    smallest = min(args.sizes)
    print(f"{'partitions':>10} {'side':<26} {'one-day run s':>13} {'vs smallest':>11} {'stmts':>6} {'jobs':>5}")
    for n in args.sizes:
        for side in SIDES:
            r = runs[n][side]
            print(
                f"{n:>10,} {side:<26} {r['model']:>13.2f} {r['model'] / runs[smallest][side]['model']:>10.2f}x"
                f" {r['statements']:>6} {r['jobs']:>5}"
            )
    print(f"{'partitions':>10} {'side':<26} {'probe':<36} {'s':>6} {'vs smallest':>11} {'vs stock':>9}")
    for n in args.sizes:
        for side in SIDES:
            for name in probes[n, side][0]:
                best = min(p[name] for p in probes[n, side])
                if name.startswith("hash Exchanges"):
                    print(f"{n:>10,} {side:<26} {name:<36} {best:>6}")
                else:
                    first = min(p[name] for p in probes[smallest, side])
                    same_size_stock = min(p[name] for p in probes[n, STOCK])
                    print(
                        f"{n:>10,} {side:<26} {name:<36} {best:>6.2f} {best / first:>10.2f}x"
                        f" {best / same_size_stock:>8.2f}x"
                    )

    start = time.perf_counter()
    project.dbt("docs", "generate")
    catalog = json.loads((project.root / "target" / "catalog.json").read_text())
    listed = sorted(k.rsplit(".", 1)[-1] for k in catalog["nodes"])
    print(f"dbt docs generate: {time.perf_counter() - start:.1f} s (process), catalog lists {', '.join(listed)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
