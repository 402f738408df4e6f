"""Hourly appends into one day partition, side by side with stock dbt-spark:
24 `append` runs, each adding an hour's rows to the same day (its first
builds the table), on one Spark Thrift Server (a long-lived Spark, as a
shared cluster serves dbt; the session extension loaded). Sides:

- ours, `max_files_per_bucket=24`: each append adds a file per bucket to
  the day's folder (the extension's switch moves them in and records them);
- the same with `bucket_records='partition_parameters'` (metadata format 2:
  the records in the partitions, read for the touched day alone);
- the first with the macro cache turned off (`SPARK_BUCKETING_MACRO_CACHE=off`):
  dbt compiles every macro again in each run (the other sides of ours load
  the macros earlier runs compiled, as a user's runs do by default);
- ours, `max_files_per_bucket=1` (the default): each append rewrites the day
  with its old rows, one file per bucket;
- stock `incremental` with `append` (`clustered_by`, `buckets`, Parquet):
  Spark's INSERT INTO adds files.

Every run is a `dbt run` of its own; for each hour the sides run in turn,
the order alternating from hour to hour. The whole series runs twice (fresh
tables, the order reversed) and each side keeps its best total of dbt's
model time over the 23 appends, with the total time of those 23 `dbt run`
processes (what an hourly job waits for: Python's start, dbt's parse, the
run). Then the day's files are counted, the
sides' rows compared (count and checksum), and ours with added files
compacted (`--vars '{spark_bucketing_compact: true}'`), timed.

    .venv/bin/python benchmarks/bench_appends.py [--per-hour 83334] [--buckets 16] [--hours 24] [--microbatch]

`--microbatch`: the same hours as dbt's hourly microbatch batches (`dbt run
--event-time-start/--event-time-end`, one batch a run) from a source table
of the day's rows with `event_time`: ours adding files (each batch into a
day that holds only earlier hours) and ours rewriting the day, against
stock's append of the same hour (stock's own microbatch replaces the whole
day with each hour, so it cannot load a day hour by hour). Stock's model is
in a project of its own on the same server: the project that routes
`incremental` to the package (docs/incremental.md, Microbatch) would route
stock's bucketed model too.

Prints the figures docs/benchmarks.md reports.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

from bench_scale import Counted, project_on_thrift_server  # noqa: E402

from harness.dbt_process import DbtProcessProject  # noqa: E402
from harness.dbt_project import ROUTING  # noqa: E402
from spark_bucketing import extension, macro_cache  # noqa: E402
from spark_bucketing.files import data_files  # noqa: E402

HOURLY = """
select cast(pmod(hash(id), 50000) as int) as k, concat('v', id) as payload, date'2024-01-01' as day
from range({{{{ var('hour', 0) }}}} * {per_hour}, ({{{{ var('hour', 0) }}}} + 1) * {per_hour}, 1, 1)
"""
COMMON = "incremental_strategy='append', partition_by=['day'], clustered_by=['k'], buckets={buckets}"
SIDES = {
    "ours, adds files": (
        "ap_adds",
        "materialized='bucketed_incremental', bucket_hash='spark', max_files_per_bucket=24",
    ),
    "ours, adds, format 2": (
        "ap_pp_adds",
        "materialized='bucketed_incremental', bucket_hash='spark', max_files_per_bucket=24, "
        "bucket_records='partition_parameters'",
    ),
    "ours, adds, no cache": (
        "ap_adds_uncached",
        "materialized='bucketed_incremental', bucket_hash='spark', max_files_per_bucket=24",
    ),
    "ours, rewrites": ("ap_rewrites", "materialized='bucketed_incremental', bucket_hash='spark'"),
    "stock append": ("ap_stock", "materialized='incremental', file_format='parquet'"),
}
# Their runs compile every macro anew: the macro cache (spark_bucketing.macro_cache), on by default where the
# package is installed, turned off; stock dbt-spark has no such cache.
UNCACHED_SIDES = ("ours, adds, no cache", "stock append")


def run_side(counted: Counted, cached: bool, *args: str) -> dict:
    """One `dbt run`, with the benchmark's macro cache or without any."""
    cache = os.environ[macro_cache.ENV]
    os.environ[macro_cache.ENV] = cache if cached else macro_cache.OFF
    try:
        return counted.run(*args)
    finally:
        os.environ[macro_cache.ENV] = cache


MB_SOURCE = """
{{{{ config(materialized='table', file_format='parquet', event_time='ts') }}}}
select cast(pmod(hash(id), 50000) as int) as k, concat('v', id) as payload,
       timestamp'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id * 3600.0 / {per_hour}) as ts
from range(0, {rows}, 1, 4)
"""
MB_ROWS = "select k, payload, ts, cast(ts as date) as day from {source}"
MB_CONFIG = (
    "materialized='incremental', incremental_strategy='microbatch', event_time='ts', batch_size='hour', "
    "begin='2024-01-01', partition_by=['day'], clustered_by=['k'], buckets={buckets}, bucket_hash='spark'"
)
MB_STOCK_FILTER = """
where ts >= timestamp'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, {{ var('hour', 0) }})
  and ts < timestamp'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, {{ var('hour', 0) }} + 1)
"""
MB_SIDES = {
    "ours, batches add files": ("mb_adds", ", max_files_per_bucket=24"),
    "ours, batches rewrite": ("mb_rewrites", ""),
}


def hour_window(hour: int) -> tuple[str, ...]:
    start = datetime.datetime(2024, 1, 1) + datetime.timedelta(hours=hour)
    end = start + datetime.timedelta(hours=1)
    return ("--event-time-start", start.isoformat(), "--event-time-end", end.isoformat())


def day_files(counted: Counted, model: str) -> int:
    """Data files in the day partition's folder the table points at (ours: its one folder; stock: the table's)."""
    db = counted.project.root / "thrift-server" / "warehouse" / f"{counted.project.schema}.db"
    # The table's folder, or a folder of its own run beside it (<model>__...), not another model's (ap_adds_uncached).
    found = [f for pattern in (model, f"{model}__*") for f in db.glob(f"{pattern}/**/day=2024-01-01") if f.is_dir()]
    return max((len(data_files(f)) for f in found), default=0)


def series(counted: Counted, hours: int, reverse: bool) -> dict:
    """One series: every side's table built from hour 0, then hours 1.. appended, sides in turn.
    Returns each side's totals over hours 1..: {"model": dbt's model time, "s": the `dbt run` processes' time}."""
    names = list(SIDES) if not reverse else list(reversed(SIDES))
    totals = {name: {"model": 0.0, "s": 0.0} for name in SIDES}
    for hour in range(hours):
        order = names if hour % 2 == 0 else list(reversed(names))
        for name in order:
            model = SIDES[name][0]
            extra = ("--full-refresh",) if hour == 0 else ()
            r = run_side(
                counted, name not in UNCACHED_SIDES, "--select", model, "--vars", json.dumps({"hour": hour}), *extra
            )
            if hour > 0:
                for key in totals[name]:
                    totals[name][key] += r[key]
    return totals


def microbatch_series(ours: Counted, stock: Counted, hours: int, reverse: bool) -> dict:
    """One series of the microbatch sides: each table built from hour 0, then hours 1.. loaded, sides in turn."""
    runs = {name: (ours, model, True) for name, (model, _) in MB_SIDES.items()} | {
        "stock append": (stock, "ap_stock", False)
    }
    names = list(runs) if not reverse else list(reversed(runs))
    totals = {name: 0.0 for name in runs}
    for hour in range(hours):
        for name in names if hour % 2 == 0 else list(reversed(names)):
            counted, model, batch = runs[name]
            window = hour_window(hour) if batch else ("--vars", json.dumps({"hour": hour}))
            r = run_side(counted, batch, "--select", model, *window, *(("--full-refresh",) if hour == 0 else ()))
            if hour > 0:
                totals[name] += r["model"]
    return totals


def checksums(counted: Counted, models: list[str]) -> list[dict]:
    """Each model's rows: a count and an order-free checksum, one `dbt show` each."""
    sums = []
    for model in models:
        counted.project.dbt(
            "show",
            "--inline",
            f"select count(*) as n, sum(hash(k, payload)) as s from {counted.project.schema}.{model}",
            "--output",
            "json",
        )
        out = counted.project.output
        sums.append(json.loads(out[out.index('{\n  "show"') :].split("\n}\n", 1)[0] + "\n}")["show"][0])
    return sums


def microbatch(base: Path, server_conf: dict, per_hour: int, buckets: int, hours: int) -> None:
    ours, server = project_on_thrift_server(base / "ours", server_conf, None)
    try:
        stock = Counted(DbtProcessProject(base / "stock", thrift_port=server.port), ours.events)
        (ours.project.root / "macros").mkdir(exist_ok=True)
        (ours.project.root / "macros" / "incremental.sql").write_text(ROUTING)
        models = ours.project.root / "models"
        (models / "mb_src.sql").write_text(MB_SOURCE.format(per_hour=per_hour, rows=per_hour * hours))
        for model, extra in MB_SIDES.values():
            config = MB_CONFIG.format(buckets=buckets) + extra
            (models / f"{model}.sql").write_text(
                "{{ config(" + config + ") }}\n" + MB_ROWS.format(source="{{ ref('mb_src') }}")
            )
        (stock.project.root / "models" / "ap_stock.sql").write_text(
            "{{ config(materialized='incremental', file_format='parquet', "
            + COMMON.format(buckets=buckets)
            + ") }}\n"
            + MB_ROWS.format(source=f"{ours.project.schema}.mb_src")
            + MB_STOCK_FILTER
        )
        ours.project.dbt("run", "--select", "mb_src")
        best: dict = {}
        for reverse in (False, True):
            for name, total in microbatch_series(ours, stock, hours, reverse).items():
                best[name] = min(best.get(name, total), total)
        print(
            f"\n{hours - 1} hourly batches of {per_hour:,} rows into one day partition ({buckets} buckets), each its"
            " own `dbt run` on one Spark Thrift Server, the extension loaded; best of two series;"
            " stock: an append of the hour"
        )
        print(f"{'side':<24} {'model s, hours 1..':>20} {'vs stock':>9} {'files in the day':>17}")
        sides = {name: model for name, (model, _) in MB_SIDES.items()} | {"stock append": "ap_stock"}
        for name, model in sides.items():
            ratio = best[name] / best["stock append"]
            print(f"{name:<24} {best[name]:>20.1f} {ratio:>8.2f}x {day_files(ours, model):>17}")
        sums = checksums(ours, [m for m, _ in MB_SIDES.values()] + ["ap_stock"])
        print("rows, checksum: " + ", ".join(f"{s['n']:,} {s['s']}" for s in sums))
        if len({(s["n"], s["s"]) for s in sums}) != 1:
            raise SystemExit("the sides disagree")
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-hour", type=int, default=83334)
    parser.add_argument("--buckets", type=int, default=16)
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--microbatch", action="store_true", help="hourly microbatch batches (see above)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="sb-bench-appends-"))
    # The macro cache of every run of ours (and of the untimed ones), empty at the start: hour 0 fills it.
    os.environ[macro_cache.ENV] = str(base / "macro-cache")
    if args.microbatch:
        microbatch(base, extension.spark_settings(extension.build_jar()), args.per_hour, args.buckets, args.hours)
        return 0
    counted, server = project_on_thrift_server(base, extension.spark_settings(extension.build_jar()), None)
    try:
        for model, config in SIDES.values():
            (counted.project.root / "models" / f"{model}.sql").write_text(
                "{{ config("
                + config
                + ", "
                + COMMON.format(buckets=args.buckets)
                + ") }}\n"
                + HOURLY.format(per_hour=args.per_hour)
            )
        best: dict = {}
        for reverse in (False, True):
            for name, total in series(counted, args.hours, reverse).items():
                best[name] = min(best.get(name, total), total, key=lambda t: t["model"])
        print(
            f"\n{args.hours - 1} appends of {args.per_hour:,} rows into one day partition ({args.buckets} buckets; "
            "the day ends with {:,} rows), each its own `dbt run` on one Spark Thrift Server, the extension loaded; "
            "best of two series by model time; wall s: the `dbt run` processes (start, parse, the run)".format(
                args.per_hour * args.hours
            )
        )
        stock = best["stock append"]
        head = f"{'model s, all appends':>22} {'vs stock':>9} {'wall s':>8} {'vs stock':>9} {'files in the day':>17}"
        print(f"{'side':<24} {head}")
        for name, (model, _) in SIDES.items():
            ratio, wall = best[name]["model"] / stock["model"], best[name]["s"] / stock["s"]
            print(
                f"{name:<24} {best[name]['model']:>22.1f} {ratio:>8.2f}x {best[name]['s']:>8.1f} {wall:>8.2f}x"
                f" {day_files(counted, model):>17}"
            )
        sums = checksums(counted, [model for model, _ in SIDES.values()])
        print(
            "rows, checksum: "
            + ", ".join(f"{m} {s['n']:,} {s['s']}" for (m, _), s in zip(SIDES.values(), sums, strict=True))
        )
        if len({(s["n"], s["s"]) for s in sums}) != 1:
            raise SystemExit("the sides disagree")
        compacted = counted.run("--select", SIDES["ours, adds files"][0], "--vars", '{"spark_bucketing_compact": true}')
        print(
            f"compaction of the day ({args.per_hour * args.hours:,} rows, {args.hours} files a bucket -> 1): "
            f"{compacted['model']:.1f} s model time, {day_files(counted, SIDES['ours, adds files'][0])} files after"
        )
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
