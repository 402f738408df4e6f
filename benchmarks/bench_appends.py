"""Hourly appends into one day partition, side by side with stock dbt-spark:
24 `append` runs, each adding an hour's rows to the same day (its first
builds the table), on one Spark Thrift Server (a long-lived Spark, as a
shared cluster serves dbt; the session extension loaded). Sides:

- ours, `max_files_per_bucket=24`: each append adds a file per bucket to
  the day's folder (the extension's switch moves them in and records them);
- ours, `max_files_per_bucket=1` (the default): each append rewrites the day
  with its old rows, one file per bucket;
- stock `incremental` with `append` (`clustered_by`, `buckets`, Parquet):
  Spark's INSERT INTO adds files.

Every run is a `dbt run` of its own; for each hour the sides run in turn,
the order alternating from hour to hour. The whole series runs twice (fresh
tables, the order reversed) and each side keeps its best total of dbt's
model time over the 23 appends. Then the day's files are counted, the
sides' rows compared (count and checksum), and ours with added files
compacted (`--vars '{spark_bucketing_compact: true}'`), timed.

    .venv/bin/python benchmarks/bench_appends.py [--per-hour 83334] [--buckets 16] [--hours 24]

Prints the figures docs/benchmarks.md reports.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

from bench_scale import Counted, project_on_thrift_server  # noqa: E402

from spark_bucketing import extension  # noqa: E402
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
    "ours, rewrites": ("ap_rewrites", "materialized='bucketed_incremental', bucket_hash='spark'"),
    "stock append": ("ap_stock", "materialized='incremental', file_format='parquet'"),
}


def day_files(counted: Counted, model: str) -> int:
    """Data files in the day partition's folder the table points at (ours: its one folder; stock: the table's)."""
    db = counted.project.root / "thrift-server" / "warehouse" / f"{counted.project.schema}.db"
    found = [f for f in db.glob(f"{model}*/**/day=2024-01-01") if f.is_dir()]
    return max((len(data_files(f)) for f in found), default=0)


def series(counted: Counted, hours: int, reverse: bool) -> dict:
    """One series: every side's table built from hour 0, then hours 1.. appended, sides in turn."""
    names = list(SIDES) if not reverse else list(reversed(SIDES))
    totals = {name: 0.0 for name in SIDES}
    for hour in range(hours):
        order = names if hour % 2 == 0 else list(reversed(names))
        for name in order:
            model = SIDES[name][0]
            extra = ("--full-refresh",) if hour == 0 else ()
            r = counted.run("--select", model, "--vars", json.dumps({"hour": hour}), *extra)
            if hour > 0:
                totals[name] += r["model"]
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-hour", type=int, default=83334)
    parser.add_argument("--buckets", type=int, default=16)
    parser.add_argument("--hours", type=int, default=24)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="sb-bench-appends-"))
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
                best[name] = min(best.get(name, total), total)
        print(
            f"\n{args.hours - 1} appends of {args.per_hour:,} rows into one day partition ({args.buckets} buckets; "
            "the day ends with {:,} rows), each its own `dbt run` on one Spark Thrift Server, the extension loaded; "
            "best of two series".format(args.per_hour * args.hours)
        )
        print(f"{'side':<20} {'model s, all appends':>22} {'vs stock':>9} {'files in the day':>17}")
        for name, (model, _) in SIDES.items():
            ratio = best[name] / best["stock append"]
            print(f"{name:<20} {best[name]:>22.1f} {ratio:>8.2f}x {day_files(counted, model):>17}")
        sums = []
        for model, _ in SIDES.values():
            counted.project.dbt(
                "show",
                "--inline",
                f"select count(*) as n, sum(hash(k, payload)) as s from {{{{ ref('{model}') }}}}",
                "--output",
                "json",
            )
            out = counted.project.output
            sums.append(json.loads(out[out.index('{\n  "show"') :].split("\n}\n", 1)[0] + "\n}")["show"][0])
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
