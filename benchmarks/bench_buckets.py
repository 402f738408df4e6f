"""Large bucket counts: a bucketed_table build with 100,000 buckets on 1,000
rows and with 20,000 buckets on 100,000 rows, each against the same build with
16 buckets on the same data. Every build is a `dbt run` of its own (cold JVM
included), the order alternates, and each side keeps its best of two.

    .venv/bin/python benchmarks/bench_buckets.py

Prints the figures docs/benchmarks.md reports.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.dbt_process import DbtProcessProject, best_of_two_alternating  # noqa: E402
from spark_bucketing.files import data_files  # noqa: E402

SQL = "select id as k, concat('v', id) as v{day} from range(0, {rows}, 1, 4)"
DAY = ", date_add(date'2024-01-01', cast(id % 2 as int)) as day"
CASES = [(1_000, 100_000), (100_000, 20_000)]


def files_of(project: DbtProcessProject, model: str) -> int:
    db = project.root / "state" / "warehouse" / f"{project.schema}.db"
    return sum(len(data_files(folder)) for folder in (db / model, db / f"{model}__dbt_alt") if folder.is_dir())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, default=None, help="folder for the projects (default: a temporary one)")
    args = parser.parse_args()
    base = args.base or Path(tempfile.mkdtemp(prefix="sb-bench-buckets-"))

    print(f"{'rows':>8} {'partitions':>10} {'buckets':>8} {'files':>7} {'build s':>8} {'vs 16 buckets':>14}")
    for rows, buckets in CASES:
        for partitioned in (False, True):
            project = DbtProcessProject(base / f"r{rows}_b{buckets}_p{int(partitioned)}")
            config = {"materialized": "bucketed_table", "clustered_by": ["k"], "bucket_hash": "spark"}
            if partitioned:
                config["partition_by"] = ["day"]
            sql = SQL.format(rows=rows, day=DAY if partitioned else "")
            project.write_model("small", sql, {**config, "buckets": 16})
            project.write_model("large", sql, {**config, "buckets": buckets})
            small, large = best_of_two_alternating(
                lambda p=project: p.dbt("run", "--select", "small"),
                lambda p=project: p.dbt("run", "--select", "large"),
            )
            parts = 2 if partitioned else 1
            print(f"{rows:>8} {parts:>10} {16:>8} {files_of(project, 'small'):>7} {small:>8.1f} {'':>14}")
            ratio = f"{large / small:.2f}x"
            print(f"{rows:>8} {parts:>10} {buckets:>8} {files_of(project, 'large'):>7} {large:>8.1f} {ratio:>14}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
