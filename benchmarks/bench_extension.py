"""The session extension at work: one join + aggregation of two Hive-hash
tables on their bucket column, with the extension on and off, side by side
with the same query over two Spark-hash tables (what stock Spark reads
bucketed), and the extension joining a Hive-hash table of half the bucket
count (read in that many tasks, no shuffle).

The tables: 8,000,000 and 4,000,000 rows, 16 buckets on `k` (2,000,000 keys),
Parquet, built once by the package (untimed). Each side is a `table` model
over the join, a `dbt run` of its own (cold JVM included) with the extension
loaded and Spark's default broadcast threshold; the "off" side switches the
extension off in a pre-hook. Sides alternate (A B C, then C B A), best of two
each. Each run's SQL statements, Spark jobs, and the Exchanges of the join's
plan (from Spark's event log) are counted.

    .venv/bin/python benchmarks/bench_extension.py [--rows 8000000] [--buckets 16]

With --sorted: two Spark-hash tables of 16,000,000 and 8,000,000 rows sorted
by `k` (no partitions, so each bucket is one sorted file), the same join
with the extension on (its sort-merge join skips both Sorts) and off (stock
Spark sorts both sides), broadcast off:

    .venv/bin/python benchmarks/bench_extension.py --sorted [--rows 16000000]

With --sorted --partitions N: the same tables in N partitions, so each
bucket is N sorted files: merged by the extension in each task (no Sort),
against the extension with merging off (maxMergedFiles 1: both sides
sorted) and off:

    .venv/bin/python benchmarks/bench_extension.py --sorted --partitions 4

With --cloned: a Spark-hash table of 16,000,000 rows in 64 buckets joined
with one of 4,000,000 rows in 4 (--small-buckets 8 for 8), both sorted by
`k`, past the coalescing ratio: read cloned (the smaller side once per
bucket of the larger, filtered to it; no Exchange, no Sort), with the
extension on and cloning off (the smaller side shuffled into 64 and sorted;
the larger side's Sort skipped), and stock Spark (the smaller side shuffled,
both sorted). Broadcast off:

    .venv/bin/python benchmarks/bench_extension.py --cloned [--rows 16000000] [--small-buckets 4] [--unsorted]

(--unsorted: neither table sorted, so every side sorts both.)

With --lookup: a point lookup (`k = <a key>`, its rows into a table) on a
Hive-hash table of 8,000,000 rows in 64 buckets built by the package:
pruned by the extension (one bucket's file read) against the extension
off (stock Spark reads a Hive-hash table unbucketed: every file):

    .venv/bin/python benchmarks/bench_extension.py --lookup [--rows 8000000]

With --foreign: a Hive table of 8,000,000 rows in 16 buckets written by
stock Spark's Hive insert (Hive's hash, Hive-style names, a file per bucket
per task: the package did not write it) joined on k with a package
Hive-hash table of 4,000,000 rows in 16 buckets: read bucketed with
spark_bucketing.extension.foreignTables (each row verified, and trusted),
against the extension with that setting off (the foreign side shuffled)
and stock Spark (both shuffled). Broadcast off:

    .venv/bin/python benchmarks/bench_extension.py --foreign [--rows 8000000]

Prints the figures docs/benchmarks.md reports.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_scale import Counted, best_alternating, event_log_files, project_with_events, same_rows  # noqa: E402

from spark_bucketing import contracts, extension  # noqa: E402

TABLE = """
select cast(pmod(hash(id, {seed}), {keys}) as int) as k, id as v, cast(id % 997 as double) as w
from range(0, {rows}, 1, 8)
"""
# TABLE in `parts` partitions (p).
PARTITIONED_TABLE = """
select cast(pmod(hash(id, {seed}), {keys}) as int) as k, id as v, cast(id % 997 as double) as w, id % {parts} as p
from range(0, {rows}, 1, 8)
"""
JOIN = """
select a.k, count(*) as n, sum(a.w * b.w) as s
from {{{{ ref('{a}') }}}} a join {{{{ ref('{b}') }}}} b on a.k = b.k
group by a.k
"""
OFF = "SET " + extension.SWITCH + "=false"
CLONE_ON = "SET " + contracts.CLONE_RATIO_SETTING + "=16"
CLONE_OFF = "SET " + contracts.CLONE_RATIO_SETTING + "=1"
# side: (model, the two tables it joins, hooks)
SIDES = {
    "Hive hash, extension on": ("join_hive_on", "big_hive", "half_hive", {}),
    "Hive hash, extension off": ("join_hive_off", "big_hive", "half_hive", {"pre_hook": OFF}),
    "Spark hash (stock Spark)": ("join_spark", "big_spark", "half_spark", {}),
    "Hive hash N x N/2, ext. on": ("join_hive_halved", "big_hive", "halfb_hive", {}),
}
CLONED_SIDES = {
    "cloned (maxCloneRatio 16)": ("join_cloned", "big_64", "small_few", {"pre_hook": CLONE_ON}),
    "shuffled, extension on": ("join_cloned_shuffled", "big_64", "small_few", {"pre_hook": CLONE_OFF}),
    "stock (extension off)": ("join_cloned_stock", "big_64", "small_few", {"pre_hook": OFF}),
}
SORTED_SIDES = {
    "sorted, extension on": ("join_sorted_on", "big_sorted", "half_sorted", {}),
    "sorted, extension off": ("join_sorted_off", "big_sorted", "half_sorted", {"pre_hook": OFF}),
}
MERGED_SIDES = {
    "merged (extension on)": ("join_merged", "big_sorted", "half_sorted", {}),
    "sorted, extension on, merging off": (
        "join_merged_off",
        "big_sorted",
        "half_sorted",
        {"pre_hook": "SET " + contracts.MERGED_FILES_SETTING + "=1"},
    ),
    "extension off": ("join_merged_stock", "big_sorted", "half_sorted", {"pre_hook": OFF}),
}
LOOKUP = "select * from {{{{ ref('{t}') }}}} where k = {key}"
LOOKUP_SIDES = {
    "pruned (extension on)": ("lookup_pruned", {}),
    "every file (extension off)": ("lookup_stock", {"pre_hook": OFF}),
}
FOREIGN_ON = "SET " + contracts.FOREIGN_TABLES_SWITCH + "=true"
FOREIGN_JOIN = """
select a.k, count(*) as n, sum(a.w * b.w) as s
from {{{{ target.schema }}}}.foreign_hive a join {{{{ ref('{b}') }}}} b on a.k = b.k
group by a.k
"""
FOREIGN_SIDES = {
    "foreign tables on, verified": ("join_foreign_verified", {"pre_hook": FOREIGN_ON}),
    "foreign tables on, trusted": (
        "join_foreign_trusted",
        {"pre_hook": [FOREIGN_ON, "SET " + contracts.FOREIGN_TABLES_VERIFY + "=false"]},
    ),
    "extension on, foreign tables off": ("join_foreign_off", {}),
    "stock Spark (extension off)": ("join_foreign_stock", {"pre_hook": OFF}),
}
SELECTED_BUCKETS = re.compile(r"SelectedBucketsCount: (\d+) out of (\d+)")
EXCHANGE_LINE = re.compile(r"^[\s:+-]*(\*\(\d+\) )?Exchange\b", re.M)
# The event log's plan is EXPLAIN FORMATTED: "+- * Sort (4)".
SORT_LINE = re.compile(r"^[\s:+-]*(\* )?Sort \(\d+\)", re.M)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows", type=int, default=None, help="the bigger table's rows (8,000,000; --sorted 16,000,000)"
    )
    parser.add_argument("--sorted", action="store_true", help="the sorted join, Sort skipped against Sort kept")
    parser.add_argument("--cloned", action="store_true", help="64 buckets joined with 4 or 8: cloned vs shuffled")
    parser.add_argument("--lookup", action="store_true", help="a point lookup on 64 Hive-hash buckets: pruned or not")
    parser.add_argument("--foreign", action="store_true", help="a join of a foreign Hive table with a package table")
    parser.add_argument("--small-buckets", type=int, default=4, help="--cloned: the smaller table's buckets")
    parser.add_argument("--unsorted", action="store_true", help="--cloned: tables not sorted by k")
    parser.add_argument("--partitions", type=int, default=1, help="--sorted: each table's partitions")
    parser.add_argument("--buckets", type=int, default=16)
    parser.add_argument("--base", type=Path, default=None, help="folder for the project (default: a temporary one)")
    args = parser.parse_args()
    args.rows = args.rows or (16_000_000 if args.sorted or args.cloned else 8_000_000)
    counted = project_with_events(
        (args.base or Path(tempfile.mkdtemp(prefix="sb-bench-extension-"))) / "extension",
        **extension.spark_settings(extension.build_jar()),
        **{"spark.sql.autoBroadcastJoinThreshold": "-1" if args.sorted or args.cloned or args.foreign else "10485760"},
    )
    keys = args.rows // 4
    if args.sorted:
        return sorted_join(counted, args.rows, keys, args.buckets, args.partitions)
    if args.cloned:
        return cloned_join(counted, args.rows, keys, args.small_buckets, not args.unsorted)
    if args.lookup:
        return lookup(counted, args.rows, keys)
    if args.foreign:
        return foreign_join(counted, args.rows, keys, args.buckets)
    # name: (family, rows, seed, buckets); halfb_hive holds half_hive's rows in half the buckets.
    tables = {
        f"{name}_{family}": (family, rows, seed, args.buckets)
        for family in ("hive", "spark")
        for name, rows, seed in (("big", args.rows, 1), ("half", args.rows // 2, 2))
    }
    tables["halfb_hive"] = ("hive", args.rows // 2, 2, args.buckets // 2)
    models = table_models(
        keys, {name: (rows, seed, {"buckets": b, "bucket_hash": f}) for name, (f, rows, seed, b) in tables.items()}
    )
    best = join_sides(counted, models, SIDES, "s")
    stock = best["Spark hash (stock Spark)"]["s"]
    print(
        f"\nJoin + aggregation on the bucket column: {args.rows:,} x {args.rows // 2:,} rows,"
        f" {keys:,} keys, {args.buckets} buckets, Parquet"
    )
    print(f"{'side':<28} {'s':>7} {'vs Spark hash':>14} {'exchanges':>10} {'stmts':>6} {'jobs':>5}")
    for side, r in best.items():
        print(
            f"{side:<28} {r['s']:>7.1f} {r['s'] / stock:>13.2f}x {r['exchanges']:>10}"
            f" {r['statements']:>6} {r['jobs']:>5}"
        )
    return 0


def sorted_join(counted: Counted, rows: int, keys: int, buckets: int, partitions: int) -> int:
    config = {"sorted_by": "k", "buckets": buckets, "bucket_hash": "spark"}
    tables = {"big_sorted": (rows, 1, config), "half_sorted": (rows // 2, 2, config)}
    if partitions > 1:
        config = {**config, "partition_by": "p"}
        models = {
            name: (PARTITIONED_TABLE.format(rows=n, keys=keys, seed=seed, parts=partitions), config)
            for name, (n, seed, _) in tables.items()
        }
        best = join_sides(counted, models, MERGED_SIDES, "model")
    else:
        best = join_sides(counted, table_models(keys, tables), SORTED_SIDES, "model")
    print(
        f"\nSort-merge join + aggregation on k: {rows:,} x {rows // 2:,} rows sorted by k,"
        f" {keys:,} keys, {buckets} buckets, {partitions} partition(s): {partitions} file(s) a bucket"
    )
    print_model_times(best, "extension off" if partitions > 1 else "sorted, extension off", "vs stock")
    return 0


def cloned_join(counted: Counted, rows: int, keys: int, small_buckets: int, sort: bool) -> int:
    config = {"bucket_hash": "spark", **({"sorted_by": "k"} if sort else {})}
    models = table_models(
        keys,
        {
            "big_64": (rows, 1, {"buckets": 64, **config}),
            "small_few": (rows // 4, 2, {"buckets": small_buckets, **config}),
        },
    )
    best = join_sides(counted, models, CLONED_SIDES, "model")
    print(
        f"\nJoin + aggregation on k: {rows:,} rows in 64 buckets x {rows // 4:,} rows in {small_buckets},"
        f" {'both sorted by k' if sort else 'not sorted'}, {keys:,} keys, Spark hash"
    )
    print_model_times(best, "stock (extension off)", "vs stock")
    return 0


def lookup(counted: Counted, rows: int, keys: int) -> int:
    project = counted.project
    project.write_model(
        "lookup_64",
        TABLE.format(rows=rows, keys=keys, seed=1),
        {"materialized": "bucketed_table", "clustered_by": "k", "buckets": 64, "bucket_hash": "hive"},
    )
    for model, hooks in LOOKUP_SIDES.values():
        project.write_model(model, LOOKUP.format(t="lookup_64", key=keys // 3), {"materialized": "table", **hooks})
    project.dbt("run", "--select", "lookup_64")
    sides = {side: scan_runner(counted, model) for side, (model, _) in LOOKUP_SIDES.items()}
    best = best_alternating(sides, "model")
    same_rows(project, [model for model, _ in LOOKUP_SIDES.values()], "k, v, w")
    print(f"\nPoint lookup k = {keys // 3} on {rows:,} rows, {keys:,} keys, 64 buckets, Hive hash (v1), Parquet")
    print("model s: dbt's time for the model (a table of the lookup's rows); wall s: the whole `dbt run` process")
    print(f"{'side':<28} {'model s':>8} {'wall s':>7} {'buckets read':>13}")
    for side, r in best.items():
        print(f"{side:<28} {r['model']:>8.2f} {r['s']:>7.1f} {r['buckets']:>13}")
    return 0


def foreign_join(counted: Counted, rows: int, keys: int, buckets: int) -> int:
    """The foreign table is written by stock Spark's Hive insert in a pre-hook of a setup model (untimed)."""
    project = counted.project
    create = (
        "create table {{ target.schema }}.foreign_hive (k int, v bigint, w double)"
        f" clustered by (k) into {buckets} buckets stored as parquet"
    )
    insert = "insert into {{ target.schema }}.foreign_hive " + TABLE.format(rows=rows, keys=keys, seed=1)
    drop = "drop table if exists {{ target.schema }}.foreign_hive"
    project.write_model(
        "foreign_setup", "select 1 as done", {"materialized": "view", "pre_hook": [drop, create, insert]}
    )
    project.write_model(
        "half_package",
        TABLE.format(rows=rows // 2, keys=keys, seed=2),
        {"materialized": "bucketed_table", "clustered_by": "k", "buckets": buckets, "bucket_hash": "hive"},
    )
    for model, hooks in FOREIGN_SIDES.values():
        project.write_model(model, FOREIGN_JOIN.format(b="half_package"), {"materialized": "table", **hooks})
    project.dbt("run", "--select", "foreign_setup", "half_package")
    best = best_alternating({side: runner(counted, model) for side, (model, _) in FOREIGN_SIDES.items()}, "model")
    same_rows(project, [model for model, _ in FOREIGN_SIDES.values()], "k, n, s")
    print(
        f"\nJoin + aggregation on k: a foreign Hive table ({rows:,} rows, stock Spark's Hive insert) x a package"
        f" table ({rows // 2:,} rows), {buckets} buckets each, Hive hash, {keys:,} keys"
    )
    print_model_times(best, "stock Spark (extension off)", "vs stock")
    return 0


def scan_runner(counted: Counted, model: str):
    def run():
        before = set(counted.events.iterdir())
        result = counted.run("--select", model)
        result["buckets"] = scan_buckets(set(counted.events.iterdir()) - before)
        return result

    return run


def scan_buckets(event_logs: set[Path]) -> str:
    """The buckets the run's scan selected ("1 of 64"), or "every file" for an unbucketed scan."""
    for log in event_log_files(event_logs):
        for line in log.read_text(errors="replace").splitlines():
            if 'SparkListenerSQLExecutionStart"' in line and "FileScan" in line:
                m = SELECTED_BUCKETS.search(json.loads(line).get("physicalPlanDescription", ""))
                return f"{m.group(1)} of {m.group(2)}" if m else "every file"
    return "?"


def table_models(keys: int, tables: dict[str, tuple[int, int, dict]]) -> dict[str, tuple[str, dict]]:
    """{name: (rows, seed, config)} as join_sides' tables: TABLE's query over `keys` keys, and the config."""
    return {
        name: (TABLE.format(rows=rows, keys=keys, seed=seed), config) for name, (rows, seed, config) in tables.items()
    }


def print_model_times(best: dict, baseline: str, versus: str) -> None:
    """Each side's model and wall times, its model time against `baseline`'s, and its join plan's counts."""
    base = best[baseline]["model"]
    width = max(len(side) for side in best) + 2
    print("model s: dbt's time for the model; wall s: the whole `dbt run` process, JVM start included")
    print(f"{'side':<{width}} {'model s':>8} {versus:>13} {'wall s':>7} {'exchanges':>10} {'sorts':>6} {'jobs':>5}")
    for side, r in best.items():
        print(
            f"{side:<{width}} {r['model']:>8.1f} {r['model'] / base:>12.2f}x {r['s']:>7.1f} {r['exchanges']:>10}"
            f" {r['sorts']:>6} {r['jobs']:>5}"
        )


def join_sides(counted: Counted, tables: dict[str, tuple[str, dict]], sides: dict, key: str) -> dict:
    """Builds `tables` ({name: (query, config)}, bucketed on k) once, untimed;
    then each side's join model, alternated, best of two by `key`. The sides
    must end with the same rows."""
    project = counted.project
    for name, (sql, config) in tables.items():
        project.write_model(name, sql, {"materialized": "bucketed_table", "clustered_by": "k", **config})
    for model, a, b, hooks in sides.values():
        project.write_model(model, JOIN.format(a=a, b=b), {"materialized": "table", **hooks})
    project.dbt("run", "--select", *tables)
    best = best_alternating({side: runner(counted, model) for side, (model, *_) in sides.items()}, key)
    same_rows(project, [model for model, *_ in sides.values()], "k, n, s")
    return best


def runner(counted: Counted, model: str):
    def run():
        before = set(counted.events.iterdir())
        result = counted.run("--select", model)
        result["exchanges"], result["sorts"] = join_plan_counts(set(counted.events.iterdir()) - before)
        return result

    return run


def join_plan_counts(event_logs: set[Path]) -> tuple[int, int]:
    """(Exchanges, Sorts) in the plan of the run's statement that joins (the widest one)."""
    most = (0, 0)
    for log in event_log_files(event_logs):
        for line in log.read_text(errors="replace").splitlines():
            if 'SparkListenerSQLExecutionStart"' not in line:
                continue
            plan = json.loads(line).get("physicalPlanDescription", "")
            tree = plan.split("== Physical Plan ==", 1)[-1].split("\n\n", 1)[0]
            if "Join" in tree:
                most = max(most, (len(EXCHANGE_LINE.findall(tree)), len(SORT_LINE.findall(tree))))
    return most


if __name__ == "__main__":
    raise SystemExit(main())
