"""A parallel backfill, side by side with stock dbt-spark: 28 days of an
existing daily table replaced by one `dbt run` against four `dbt run`s at
once (seven days each), on a Hive metastore service on Postgres (as teams
share a catalog), each run a process of its own (method: session, a JVM
each). Each side and mode runs twice, order alternated (A B, then B A), and
keeps its best wall time; statements are counted per run from dbt's log.
Both sides end with the same rows (a count and a checksum).

With --microbatch both sides are dbt microbatch models (`batch_size='day'`,
ours `materialized='incremental'` with `buckets`, routed to the package by
the project's macros/incremental.sql), and a run is a backfill window
(`--event-time-start`/`--event-time-end`) whose days dbt runs as batches,
one after another.

    .venv/bin/python benchmarks/bench_concurrent.py [--per-day 20000] [--buckets 8] [--days 28]
        [--processes 4] [--extension] [--hash spark] [--microbatch]

Prints the figures docs/benchmarks.md reports.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from harness.dbt_process import DBT, DbtProcessProject  # noqa: E402
from harness.dbt_project import ROUTING  # noqa: E402
from harness.metastore_service import MetastoreService  # noqa: E402
from spark_bucketing import extension  # noqa: E402

DAILY = """
select cast(pmod(hash(id, {{{{ var('tag', 0) }}}}), 5000) as int) as k, concat('v', id) as payload,
       date_add(date'2024-01-01', d) as day
from range(0, {per_day}, 1, 1)
cross join (select explode(sequence({{{{ var('first', 0) }}}}, {{{{ var('last', 0) }}}})) as d)
"""


SOURCE = """
{{{{ config(materialized='table', file_format='parquet', event_time='day') }}}}
select cast(pmod(hash(id), 5000) as int) as k, concat('v', id) as payload, date_add(date'2024-01-01', d) as day
from range(0, {per_day}, 1, 1) cross join (select explode(sequence(0, {last})) as d)
"""
BATCH = "select k, concat(payload, '-{{ var('tag', 0) }}') as payload, day from {{ ref('bf_src') }}"


def write_models(
    project: DbtProcessProject, per_day: int, buckets: int, family: str, microbatch: int | None = None
) -> dict[str, str]:
    """The two sides' models; `microbatch`: the days of their source (the models are dbt microbatch models)."""
    common = f"partition_by=['day'], clustered_by=['k'], buckets={buckets}, incremental_strategy='insert_overwrite'"
    ours = f"materialized='bucketed_incremental', bucket_hash='{family}'"
    body = DAILY.format(per_day=per_day)
    if microbatch is not None:
        common = (
            f"partition_by=['day'], clustered_by=['k'], buckets={buckets}, incremental_strategy='microbatch', "
            "event_time='day', batch_size='day', begin='2024-01-01'"
        )
        ours = f"materialized='incremental', bucket_hash='{family}'"
        body = BATCH
        (project.root / "macros").mkdir(exist_ok=True)
        (project.root / "macros" / "incremental.sql").write_text(ROUTING)
        (project.root / "models" / "bf_src.sql").write_text(SOURCE.format(per_day=per_day, last=microbatch - 1))
    configs = {"ours": ("bf_ours", ours), "stock": ("bf_stock", "materialized='incremental', file_format='parquet'")}
    for model, config in configs.values():
        (project.root / "models" / f"{model}.sql").write_text("{{ config(" + config + ", " + common + ") }}\n" + body)
    return {side: model for side, (model, _) in configs.items()}


def window(first: int, last: int) -> list[str]:
    """dbt's backfill window of days first..last (a microbatch run)."""
    day = datetime.date(2024, 1, 1)
    start, end = day + datetime.timedelta(days=first), day + datetime.timedelta(days=last + 1)
    return ["--event-time-start", start.isoformat(), "--event-time-end", end.isoformat()]


def start(
    project: DbtProcessProject, model: str, first: int, last: int, tag: int, folder: Path, microbatch: bool
) -> subprocess.Popen:
    """One `dbt run` of `model` over days first..last, in a process with its own target and log folder."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DBT_TARGET_PATH": str(folder),
        "DBT_LOG_PATH": str(folder),
    }
    vars_ = json.dumps({"tag": tag} if microbatch else {"first": first, "last": last, "tag": tag})
    cmd = [
        DBT,
        "run",
        "--select",
        model,
        "--vars",
        vars_,
        *(window(first, last) if microbatch else []),
        "--project-dir",
        str(project.root),
        "--profiles-dir",
        str(project.root),
    ]
    return subprocess.Popen(cmd, cwd=project.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def backfill(
    project: DbtProcessProject, model: str, days: int, processes: int, tag: int, base: Path, microbatch: bool
) -> dict:
    """Replaces days 0..days-1 with `processes` runs at once; wall time and each run's statements."""
    per = days // processes
    folders = [base / f"{model}-{tag}-{i}" for i in range(processes)]
    began = time.perf_counter()
    procs = [
        start(
            project, model, i * per, days - 1 if i == processes - 1 else (i + 1) * per - 1, tag, folders[i], microbatch
        )
        for i in range(processes)
    ]
    outputs = [p.communicate()[0] for p in procs]
    wall = time.perf_counter() - began
    for p, out in zip(procs, outputs, strict=True):
        if p.returncode != 0:
            raise SystemExit(f"a run of {model} failed:\n{out[-4000:]}")
    statements = [(f / "dbt.log").read_text(errors="replace").count("SQL status:") for f in folders]
    return {"s": wall, "statements": statements}


def checksum(project: DbtProcessProject, models: list[str]) -> list[tuple]:
    sql = " union all ".join(
        f"select '{m}' as t, count(*) as n, sum(hash(k, payload, day)) as s from {project.schema}.{m}" for m in models
    )
    project.dbt("show", "--inline", sql, "--output", "json", "--limit", str(len(models)))
    rows = json.loads(project.output[project.output.index('{\n  "show"') :].split("\n}\n", 1)[0] + "\n}")["show"]
    return [(r["t"], r["n"], r["s"]) for r in rows]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-day", type=int, default=20000)
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--days", type=int, default=28)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--hash", default="spark", choices=["spark", "hive"])
    parser.add_argument("--extension", action="store_true", help="load the session extension in every run")
    parser.add_argument("--microbatch", action="store_true", help="dbt microbatch models, a run a backfill window")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="sb-bench-concurrent-"))
    service = MetastoreService(base / "warehouse", jvm_flags="")
    service.start()
    try:
        conf = {**service.spark_conf(), "spark.sql.shuffle.partitions": "8"}
        if args.extension:
            conf.update(extension.spark_settings(extension.build_jar()))
        project = DbtProcessProject(base / "project", **conf)
        sides = write_models(project, args.per_day, args.buckets, args.hash, args.days if args.microbatch else None)
        if args.microbatch:
            project.dbt("run", "--select", "bf_src")
            for model in sides.values():
                project.dbt("run", "--select", model, *window(0, args.days - 1))
        else:
            for model in sides.values():
                project.dbt("run", "--select", model, "--vars", json.dumps({"first": 0, "last": args.days - 1}))
        strategy = "microbatch, daily batches" if args.microbatch else "insert_overwrite"
        print(
            f"\nBackfill of {args.days} existing days ({args.per_day:,} rows a day, {args.buckets} buckets, "
            f"{strategy}, {args.hash} hash{', session extension' if args.extension else ''}) on a Hive "
            "metastore service on Postgres; each run its own `dbt run` (a JVM each); best of two, order alternated"
        )
        print(f"{'side':<8} {'processes':>9} {'wall s':>8} {'statements per run':>30}")
        tag = 0
        results: dict = {}
        for processes in (1, args.processes):
            # Both sides write the same rows in a round (one tag), so the last round leaves equal tables.
            for order in (list(sides), list(reversed(sides))):
                tag += 1
                for side in order:
                    r = backfill(project, sides[side], args.days, processes, tag, base / "runs", args.microbatch)
                    best = results.get((side, processes))
                    if best is None or r["s"] < best["s"]:
                        results[(side, processes)] = r
            for side in sides:
                r = results[(side, processes)]
                print(f"{side:<8} {processes:>9} {r['s']:>8.1f} {', '.join(map(str, r['statements'])):>30}")
        sums = checksum(project, list(sides.values()))
        print("rows, checksum: " + ", ".join(f"{t} {n:,} {s}" for t, n, s in sums))
        if len({(n, s) for _, n, s in sums}) != 1:
            raise SystemExit("the sides disagree")
        for side in sides:
            one, many = results[(side, 1)]["s"], results[(side, args.processes)]["s"]
            print(f"{side}: {args.processes} processes at once take {many / one:.2f}x the time of one")
    finally:
        service.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
